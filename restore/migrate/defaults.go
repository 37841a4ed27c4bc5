package migrate

import (
	"context"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/oci"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/sign"
	"github.com/kubectl-assisted/kubectl-assisted/restore"
)

// RegistryBundles is Bundles through bundle.Open and bundle.Create.
type RegistryBundles struct{ Registry oci.RegistryOptions }

// Check implements Bundles.
func (r RegistryBundles) Check(ctx context.Context, ref string, signer sign.Key) error {
	b, err := bundle.Open(ctx, ref, bundle.OpenOptions{Registry: r.Registry, Signers: []sign.Key{signer}})
	if err != nil {
		return err
	}
	return b.Close()
}

// Create implements Bundles.
func (r RegistryBundles) Create(ctx context.Context, ref string, o bundle.CreateOptions) (*bundle.Result, error) {
	return bundle.Create(ctx, ref, r.Registry, o)
}

// InProcessRestorer is restore.Run, in this process.
type InProcessRestorer struct{}

// Restore implements Restorer.
func (InProcessRestorer) Restore(ctx context.Context, o restore.Options) (*restore.Result, error) {
	return restore.Run(ctx, o)
}
