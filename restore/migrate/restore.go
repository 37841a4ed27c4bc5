package migrate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"filippo.io/age"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/registry"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/sign"
	"github.com/kubectl-assisted/kubectl-assisted/restore"
	"github.com/kubectl-assisted/kubectl-assisted/restore/job"
)

// restoreStep restores the pushed bundle: directly (restore.Run in this
// process, with node 0's view of cluster 0's database and storage), or by
// applying the restore Job on cluster 0.
type restoreStep struct{}

func (restoreStep) name() string { return StepRestore }

func (restoreStep) run(ctx context.Context, m *migration) (string, error) {
	if m.o.Direct() {
		return restoreDirect(ctx, m)
	}
	return restoreJob(ctx, m)
}

// identityText returns the age identity that decrypts the bundle (the
// generated one, or the given file) and where it is; "" when unencrypted.
func identityText(o Options, st *State) (string, string, error) {
	if st.Recipient != "" {
		data, err := os.ReadFile(st.IdentityPath())
		return string(data), st.IdentityPath(), err
	}
	if o.IdentityFile != "" {
		data, err := os.ReadFile(o.IdentityFile)
		return string(data), o.IdentityFile, err
	}
	return "", "", nil
}

func restoreDirect(ctx context.Context, m *migration) (string, error) {
	o, st := m.o, m.state
	idText, idFile, err := identityText(o, st)
	if err != nil {
		return "", err
	}
	var ids []age.Identity
	if idText != "" {
		if ids, err = age.ParseIdentities(strings.NewReader(idText)); err != nil {
			// Never quote the file: it is a private key.
			return "", fmt.Errorf("identity %s: not an age identity file", idFile)
		}
	}
	// The run's own signing key signed the bundle: the restore accepts only
	// a bundle signed by it.
	signer, _, err := st.Signer()
	if err != nil {
		return "", err
	}
	ro := restore.Options{
		Ref: st.Pinned, Registry: o.Registry, Identities: ids, Signers: []sign.Key{signer},
		TargetDB: o.TargetDB, DataDir: o.TargetDataDir,
		Config: o.Config, Namespace: o.Namespace, NamespaceMapping: o.NamespaceMapping, ServiceURL: o.ServiceURL,
		ImageServiceURL: o.ImageServiceURL, OnEvent: m.restoreEvent,
	}
	finish := func() {}
	if o.NewProgress != nil {
		ro.Progress, finish = o.NewProgress()
	}
	res, err := o.Restorer.Restore(ctx, ro)
	finish()
	if err != nil {
		return "", err
	}
	ran := 0
	for _, p := range res.Phases {
		if p.Ran {
			ran++
		}
	}
	return fmt.Sprintf("restored directly into the target database and %s (%d phase(s) ran)", o.TargetDataDir, ran), nil
}

// jobArgs are the restore command's flags the Job adds to its own.
func jobArgs(o Options) []string {
	var args []string
	if o.ServiceURL != "" {
		args = append(args, "--service-url", o.ServiceURL)
	}
	if o.ImageServiceURL != "" {
		args = append(args, "--image-service-url", o.ImageServiceURL)
	}
	var mapping []string
	for k, v := range o.NamespaceMapping {
		mapping = append(mapping, k+"="+v)
	}
	sort.Strings(mapping)
	for _, kv := range mapping {
		args = append(args, "--namespace-mapping", kv)
	}
	if o.Registry.PlainHTTP {
		args = append(args, "--plain-http")
	}
	if o.Registry.InsecureSkipTLSVerify {
		args = append(args, "--registry-insecure-skip-tls-verify")
	}
	return args
}

// restoreJob applies the restore Job (and its PVCs, Secrets and RBAC) on
// cluster 0 with server-side apply. Without --restore-image the Job runs
// this very binary, pushed as an image beside the bundle.
func restoreJob(ctx context.Context, m *migration) (string, error) {
	o, st := m.o, m.state
	idText, _, err := identityText(o, st)
	if err != nil {
		return "", err
	}
	if idText == "" {
		return "", errors.New("the restore Job needs the age identity: this bundle is unencrypted, and the Job only restores encrypted bundles")
	}
	if m.operator == nil {
		return "", errors.New("the preflight did not find cluster 0's infrastructure operator")
	}
	_, signerPEM, err := st.Signer()
	if err != nil {
		return "", err
	}
	regAuth, err := registryAuthForHost(ctx, o.Registry.AuthFile, o.Ref.Registry)
	if err != nil {
		return "", err
	}
	var ca []byte
	if o.Registry.CAFile != "" {
		if ca, err = os.ReadFile(o.Registry.CAFile); err != nil {
			return "", fmt.Errorf("the registry's CA for the restore Job: %w", err)
		}
	}
	image, pushed := o.RestoreImage, ""
	if image == "" {
		img, err := o.Bundles.PushRestoreImage(ctx, st.Pinned, o.Version)
		if err != nil {
			return "", hinted(fmt.Errorf("store this kubectl-assisted as the restore Job's image beside the bundle: %w", err),
				"Give --restore-image with an image of kubectl-assisted that cluster 0 can pull (restore/job/Containerfile builds one).")
		}
		image = img.Ref
		verb := "pushed"
		if !img.Pushed {
			verb = "found"
		}
		pushed = fmt.Sprintf("; restore image %s %s beside the bundle (%s, %s)", img.Digest, verb, img.Platform, humanBytes(img.Size))
		m.note(StepRestore, "restore image %s %s beside the bundle", img.Ref, verb)
	}
	asc := o.AgentServiceConfig
	jo := job.Options{
		Namespace: o.Namespace, Ref: st.Pinned, Digest: st.Digest,
		RestoreImage: image, Operator: *m.operator, DatabaseImage: o.DatabaseImage, DatabaseMajor: m.databaseMajor,
		DatabaseStorage: asc.DatabaseStorage, FilesystemStorage: asc.FilesystemStorage,
		Identity: idText, Signer: signerPEM, RegistryAuth: regAuth, RegistryCA: ca, ExtraArgs: jobArgs(o),
	}
	objs, err := job.Objects(jo)
	if err != nil {
		return "", err
	}
	// The Job's PostgreSQL sidecar initialises the database with the postgres
	// Secret's credentials, which the operator then adopts: it must exist
	// first (an existing one wins).
	if err := o.Cluster.EnsurePostgresSecret(ctx, o.Namespace); err != nil {
		return "", fmt.Errorf("the postgres Secret for the restore Job: %w", err)
	}
	// A Job cannot be restarted: one that failed before goes first.
	if js, err := o.Cluster.JobState(ctx, o.Namespace, job.JobName(st.Digest)); err != nil {
		return "", err
	} else if js.Failed {
		if err := o.Cluster.DeleteJob(ctx, o.Namespace, job.JobName(st.Digest)); err != nil {
			return "", fmt.Errorf("replace the failed restore Job: %w", err)
		}
		m.note(StepRestore, "deleted the failed restore Job %s/%s to run it again", o.Namespace, job.JobName(st.Digest))
	}
	if err := o.Cluster.Apply(ctx, objs, ""); err != nil {
		return "", err
	}
	return fmt.Sprintf("applied Job %s/%s with PostgreSQL from %s (PVCs %s, %s)%s", o.Namespace, job.JobName(st.Digest),
		jo.SidecarImage(), asc.DatabaseSize.String(), asc.FilesystemSize.String(), pushed), nil
}

// registryAuthForHost is the pull secret of the restore Job: a docker
// config.json with only host's credential, found where every command finds
// registry credentials (bundle/registry's search order), so the Secret on
// cluster 0 holds no other registry's credentials; nil when there is none.
func registryAuthForHost(ctx context.Context, configFile, host string) ([]byte, error) {
	return registry.DockerConfigFor(ctx, configFile, host)
}

// sidecarImage is the PostgreSQL image the restore Job runs.
func (m *migration) sidecarImage() string {
	if m.o.DatabaseImage != "" {
		return m.o.DatabaseImage
	}
	if m.operator != nil {
		return m.operator.DatabaseImage
	}
	return "the operator's DATABASE_IMAGE"
}
