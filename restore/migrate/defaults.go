package migrate

import (
	"context"
	"fmt"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/oci"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/selfimage"
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

// PushRestoreImage implements Bundles: the running binary as an image
// beside the bundle at pinned (REPO@DIGEST), a referrer of its manifest.
func (r RegistryBundles) PushRestoreImage(ctx context.Context, pinned, version string) (*selfimage.Image, error) {
	ref, err := oci.ParseReference(pinned)
	if err != nil {
		return nil, err
	}
	src, err := oci.NewSource(ctx, ref, r.Registry)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	subject, err := src.Resolve(ctx)
	if err != nil {
		return nil, fmt.Errorf("resolve the bundle %s: %w", pinned, err)
	}
	return selfimage.Push(ctx, ref, r.Registry, subject, selfimage.Options{Version: version})
}
