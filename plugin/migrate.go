package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"filippo.io/age"
	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/files"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/oci"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/resources"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/sign"
	"github.com/kubectl-assisted/kubectl-assisted/plugin/clierr"
	"github.com/kubectl-assisted/kubectl-assisted/plugin/option"
	"github.com/kubectl-assisted/kubectl-assisted/plugin/progress"
)

// DefaultMigrateNamespace is where the infrastructure operator runs
// assisted-service under the multicluster engine.
const DefaultMigrateNamespace = "multicluster-engine"

// MigrateOptions holds the inputs of `migrate`.
type MigrateOptions struct {
	To string

	// Source (node 0).
	Postgres         option.Postgres
	DBTables         dbTables
	DataDir          string
	Exclude          []string
	ManifestsDir     string
	Resources        string
	SourceKubeconfig string
	SourceNamespaces []string
	Live             bool

	// Keys.
	Recipients    []string
	RecipientFile []string
	Identity      string
	NoEncryption  bool

	// Target (cluster 0).
	TargetKubeconfig   string
	TargetContext      string
	Namespace          string
	TargetDB           string
	TargetDataDir      string
	ServiceURL         string
	NamespaceMapping   []string
	RestoreImage       string
	DatabaseImage      string
	StorageClass       string
	AgentServiceConfig string
	Force              bool
	Timeout            time.Duration

	// Switchover.
	ControllerNamespace string
	CACertPath          string
	ClusterID           string

	StateDir string
	SpoolDir string
	DryRun   bool
	Registry option.Registry
	Output   option.Output
	Terminal option.Terminal

	// Resolved by Complete.
	ref        oci.Reference
	recipients []age.Recipient
	direct     bool
	config     *rest.Config
	client     kubernetes.Interface
	sourceConn string
	asc        *agentServiceConfig
	state      *migrateState
	log        io.Writer
}

// NewCmdMigrate builds `migrate`.
func NewCmdMigrate(env *Env) *cobra.Command {
	o := &MigrateOptions{}
	cmd := &cobra.Command{
		Use:   "migrate --to REF --target-kubeconfig FILE [-n NS] [--db URL | --db-env-file FILE] [--data-dir DIR] [--target-db URL --target-data-dir DIR]",
		Short: "Move node 0's assisted-service to cluster 0: bundle, push, restore, wait, hand over",
		Long: `Run on node 0 before it reboots into cluster 0. In order, each step
printed as it runs:

  1 preflight   node 0's assisted-service has stopped writing (no other session on
                its database; --live dumps from a snapshot and records the WAL
                position as a watermark instead), cluster 0 is reachable and has
                no AgentServiceConfig or running assisted-service (--force scales
                that Deployment to zero)
  2 bundle      bundle create + push to --to, encrypted; without --recipient a key
                pair is generated for the run and kept in --state-dir on node 0
  3 restore     directly into --target-db and --target-data-dir when node 0 can
                reach them (the same 'restore' command, run as a child process), or
                by applying a restore Job on cluster 0 (--restore-image; its PVCs
                sized like --agent-service-config; the identity goes into a Secret
                there, the only place it ever leaves node 0)
  4 wait        until cluster 0 holds the receipt of exactly this bundle
  5 service     only now: the AgentServiceConfig (--agent-service-config), so the
                operator starts assisted-service on the restored data
  6 switchover  the assisted-installer-controller follows the service to
                --service-url (token minted with cluster 0's new key)

Rerunning the same command continues where the last run stopped (the state is in
--state-dir). A failing step exits with 10 + its number: 11 preflight, 12 bundle,
13 restore, 14 wait, 15 service, 16 switchover; 2 is a usage error.`,
		Example: env.Example(`
  # Everything reachable from node 0: restore directly, then hand over
  %[1]s assisted migrate --to registry.example.com:5000/assisted/node0:v1 \
      --db-env-file /etc/assisted/assisted-service.env --data-dir /var/lib/assisted/data \
      --target-kubeconfig /etc/kubernetes/cluster0.kubeconfig -n multicluster-engine \
      --target-db postgres://admin@10.0.0.5:5432/installer --target-data-dir /mnt/assisted-data \
      --agent-service-config asc.yaml --service-url https://assisted-service-multicluster-engine.apps.c0.example.com

  # Restore with a Job on cluster 0
  %[1]s assisted migrate --to registry.example.com:5000/assisted/node0:v1 \
      --db-env-file /etc/assisted/assisted-service.env --target-kubeconfig cluster0.kubeconfig \
      --restore-image quay.io/example/kubectl-assisted:v0.1.0 --agent-service-config asc.yaml

  # Continue after a failure or a reboot of the shell: the same command again
  %[1]s assisted migrate --to registry.example.com:5000/assisted/node0:v1 ...`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Complete(cmd, env); err != nil {
				return err
			}
			return o.Run(cmd.Context(), env)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.To, "to", "", "Where to push the bundle: HOST[:PORT]/REPO[:TAG], oci:DIR[:TAG] or oci-archive:FILE[:TAG]")
	o.Postgres.AddFlags(fs, "source (node 0)")
	o.DBTables.AddFlags(fs)
	fs.StringVar(&o.DataDir, "data-dir", "/data", "Node 0's assisted-service file storage; empty leaves files out")
	fs.StringArrayVar(&o.Exclude, "exclude", nil, "Also leave out paths under --data-dir matching this pattern")
	fs.StringVar(&o.ManifestsDir, "manifests-dir", "", "The agent-based installer's manifests (e.g. /etc/assisted/manifests) as the resources layer")
	fs.StringVar(&o.Resources, "resources", resourcesNone, "Resources layer: none, or cluster (export the assisted CRs from node 0's API, --source-kubeconfig)")
	fs.StringVar(&o.SourceKubeconfig, "source-kubeconfig", "", "Node 0's kubeconfig, for --resources cluster")
	fs.StringSliceVar(&o.SourceNamespaces, "source-namespace", nil, "Namespaces to export with --resources cluster (default all)")
	fs.BoolVar(&o.Live, "live", false, "Dump while assisted-service still runs: from one snapshot, recording the WAL position as a write watermark")
	fs.StringArrayVar(&o.Recipients, "recipient", nil, "Encrypt to this age public key (repeatable); default: a key pair generated for this run")
	fs.StringArrayVar(&o.RecipientFile, "recipients-file", nil, "Encrypt to the age public keys in this file (repeatable)")
	fs.StringVar(&o.Identity, "identity", "", "Age identity file that decrypts the bundle (needed with --recipient)")
	fs.BoolVar(&o.NoEncryption, "no-encryption", false, "Write plaintext layers (only for oci: and oci-archive: targets on node 0's disk)")
	fs.StringVar(&o.TargetKubeconfig, "target-kubeconfig", "", "Cluster 0's kubeconfig (required)")
	fs.StringVar(&o.TargetContext, "target-context", "", "Context of --target-kubeconfig to use")
	fs.StringVarP(&o.Namespace, "namespace", "n", "", "Cluster 0's assisted-service namespace (default: the kubeconfig context's, else "+DefaultMigrateNamespace+")")
	fs.StringVar(&o.TargetDB, "target-db", "", "Cluster 0's assisted-service database, reachable from node 0: restore directly (with --target-data-dir)")
	fs.StringVar(&o.TargetDataDir, "target-data-dir", "", "Cluster 0's file storage (the assisted-service PVC), mounted on node 0: restore directly (with --target-db)")
	fs.StringVar(&o.ServiceURL, "service-url", "", "Cluster 0's assisted-service URL: status URLs are rewritten onto it and the controller is switched to it")
	fs.StringArrayVar(&o.NamespaceMapping, "namespace-mapping", nil, "Restore namespace OLD into NEW (repeatable)")
	fs.StringVar(&o.RestoreImage, "restore-image", "", "Image with kubectl-assisted for the restore Job (when restoring in cluster 0)")
	fs.StringVar(&o.DatabaseImage, "database-image", "", "PostgreSQL image of the restore Job (default: the operator's)")
	fs.StringVar(&o.StorageClass, "storage-class", "", "StorageClass of the PVCs the restore Job pre-creates (default: the cluster's)")
	fs.StringVar(&o.AgentServiceConfig, "agent-service-config", "", "AgentServiceConfig to create once the restore is complete (also sizes the Job's PVCs)")
	fs.BoolVar(&o.Force, "force", false, "Scale a running assisted-service Deployment on cluster 0 to zero instead of stopping")
	fs.DurationVar(&o.Timeout, "timeout", 60*time.Minute, "How long to wait for the restore's receipt")
	fs.StringVar(&o.ControllerNamespace, "controller-namespace", "", "Namespace of the assisted-installer-controller (default assisted-installer)")
	fs.StringVar(&o.CACertPath, "ca-cert-path", "", "Path, on cluster 0's hosts, of the CA of --service-url's certificate (for the controller)")
	fs.StringVar(&o.ClusterID, "cluster-id", "", "Cluster 0's id in the database (default: the only cluster of the bundle)")
	fs.StringVar(&o.StateDir, "state-dir", defaultStateDir(), "Where the run keeps its state and generated key (on node 0)")
	fs.StringVar(&o.SpoolDir, "spool-dir", "", "Keep the files layer's ciphertext here until the push succeeds, so a rerun after an interrupted push resumes it (about the size of --data-dir: on a live ISO give a disk); default: stream, and a rerun pushes again")
	fs.BoolVar(&o.DryRun, "dry-run", false, "Run the preflight checks and print the plan; change nothing (not even with --force) and write no state")
	o.Registry.AddFlags(fs)
	o.Output.AddFlags(fs)
	o.Terminal.AddFlags(fs)
	_ = cmd.MarkFlagRequired("to")
	_ = cmd.MarkFlagRequired("target-kubeconfig")
	return cmd
}

// Complete validates the flags; it touches nothing.
func (o *MigrateOptions) Complete(cmd *cobra.Command, env *Env) error {
	if err := o.Output.Validate(); err != nil {
		return usageErr(cmd, err)
	}
	ref, err := oci.ParseReference(o.To)
	if err != nil {
		return usageErr(cmd, err)
	}
	if ref.Digest != "" {
		return clierr.Usagef(cmd, "--to %s: give a tag, not a digest: migrate pushes a new bundle", o.To)
	}
	o.ref = ref
	if err := o.Postgres.Validate(); err != nil {
		return usageErr(cmd, err)
	}
	if (o.TargetDB == "") != (o.TargetDataDir == "") {
		return clierr.Usagef(cmd, "--target-db and --target-data-dir go together (restore directly); leave both out to restore with a Job on cluster 0")
	}
	o.direct = o.TargetDB != ""
	if !o.direct && o.RestoreImage == "" {
		return clierr.Usagef(cmd, "without --target-db/--target-data-dir the restore runs as a Job on cluster 0: give --restore-image (an image with kubectl-assisted, see restore/job/Containerfile)")
	}
	if !o.direct && o.AgentServiceConfig == "" {
		return clierr.Usagef(cmd, "the restore Job pre-creates the operator's PVCs with the AgentServiceConfig's sizes: give --agent-service-config FILE")
	}
	if o.AgentServiceConfig != "" {
		if o.asc, err = readAgentServiceConfig(o.AgentServiceConfig); err != nil {
			return usageErr(cmd, err)
		}
	}
	for _, m := range o.NamespaceMapping {
		if old, nw, ok := strings.Cut(m, "="); !ok || old == "" || nw == "" {
			return clierr.Usagef(cmd, "--namespace-mapping %q: want OLD=NEW", m)
		}
	}
	if o.recipients, err = readRecipients(o.Recipients, o.RecipientFile); err != nil {
		return usageErr(cmd, err)
	}
	switch {
	case o.NoEncryption && len(o.recipients) > 0:
		return clierr.Usagef(cmd, "--no-encryption conflicts with --recipient/--recipients-file")
	case o.NoEncryption && ref.Remote():
		return clierr.New(errors.New("refusing to push an unencrypted bundle to a registry: it holds pull secrets, the kubeadmin password and Secret data"),
			"Leave out --no-encryption: migrate generates a key pair for the run.", clierr.ExitUsage)
	case len(o.recipients) > 0 && o.Identity == "":
		return clierr.Usagef(cmd, "with --recipient/--recipients-file, give --identity FILE: the restore needs the matching private key")
	}
	switch o.Resources {
	case resourcesNone:
	case resourcesCluster:
		if o.ManifestsDir != "" {
			return clierr.Usagef(cmd, "--resources cluster and --manifests-dir both fill the resources layer: give one")
		}
		if o.SourceKubeconfig == "" {
			return clierr.Usagef(cmd, "--resources cluster exports from node 0's API: give --source-kubeconfig")
		}
	default:
		return clierr.Usagef(cmd, "--resources %q: want none or cluster", o.Resources)
	}
	if !o.Postgres.IsSet() && o.DataDir == "" && o.Resources == resourcesNone && o.ManifestsDir == "" {
		return clierr.Usagef(cmd, "nothing to migrate: give --db/--db-env-file, --data-dir, --manifests-dir or --resources cluster")
	}
	if o.Postgres.IsSet() {
		if o.sourceConn, err = o.Postgres.ConnString(); err != nil {
			return usageErr(cmd, err)
		}
	}
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: o.TargetKubeconfig},
		&clientcmd.ConfigOverrides{CurrentContext: o.TargetContext})
	if o.config, err = loader.ClientConfig(); err != nil {
		return clierr.New(fmt.Errorf("--target-kubeconfig: %w", err), "", clierr.ExitUsage)
	}
	if o.Namespace == "" {
		if ns, explicit, err := loader.Namespace(); err == nil && explicit {
			o.Namespace = ns
		} else {
			o.Namespace = DefaultMigrateNamespace
		}
	}
	if o.client, err = kubernetes.NewForConfig(o.config); err != nil {
		return err
	}
	o.log = env.Streams.ErrOut
	return nil
}

// stepError carries the exit code of the step that failed.
func stepError(step string, err error) error {
	var ce *clierr.Error
	rec := ""
	if errors.As(err, &ce) {
		rec = ce.Recommendation
		if ce.Code == clierr.ExitUsage {
			return err
		}
	}
	if rec == "" {
		rec = "Fix the cause and run the same command again: it continues at this step."
	}
	return clierr.New(fmt.Errorf("step %d/%d %s: %w", stepNumber(step), len(migrateSteps), step, err), rec, clierr.ExitStepBase+stepNumber(step))
}

// MigrateResult is the -o json|yaml result of `migrate`.
type MigrateResult struct {
	APIVersion   string `json:"apiVersion"`
	Kind         string `json:"kind"`
	Reference    string `json:"reference"`
	Digest       string `json:"digest"`
	Namespace    string `json:"namespace"`
	RestoreMode  string `json:"restoreMode"`
	ServiceURL   string `json:"serviceURL,omitempty"`
	IdentityFile string `json:"identityFile,omitempty"`
	// SignerFile is the public key the bundle was signed and checked with;
	// Signer its fingerprint.
	SignerFile string              `json:"signerFile,omitempty"`
	Signer     string              `json:"signer,omitempty"`
	Watermark  *writeWatermark     `json:"watermark,omitempty"`
	Steps      []MigrateStepResult `json:"steps"`
	StateDir   string              `json:"stateDir"`
}

// MigrateStepResult is one step in the result.
type MigrateStepResult struct {
	Name            string  `json:"name"`
	State           string  `json:"state"`
	Ran             bool    `json:"ran"`
	Detail          string  `json:"detail,omitempty"`
	DurationSeconds float64 `json:"durationSeconds"`
}

// Run runs the steps that are not done yet.
func (o *MigrateOptions) Run(ctx context.Context, env *Env) error {
	if o.DryRun {
		return o.dryRun(ctx, env)
	}
	st, err := loadState(o.StateDir, o.ref.String(), o.config.Host, o.Namespace)
	if err != nil {
		return stepError(stepPreflight, err)
	}
	o.state = st
	res := &MigrateResult{APIVersion: ResultAPIVersion, Kind: "MigrateResult", Reference: o.ref.String(),
		Namespace: o.Namespace, RestoreMode: "job", StateDir: st.dir}
	if o.direct {
		res.RestoreMode = "direct"
	}
	steps := []struct {
		name string
		run  func(context.Context) (string, error)
	}{
		{stepPreflight, o.preflight},
		{stepBundle, o.bundle},
		{stepRestore, o.restore},
		{stepWait, o.wait},
		{stepService, o.service},
		{stepSwitchover, o.switchover},
	}
	for _, s := range steps {
		n := stepNumber(s.name)
		// Preflight always runs again: the world may have changed since.
		if s.name != stepPreflight && st.done(s.name) {
			rec := st.Steps[s.name]
			fmt.Fprintf(o.log, "[%d/%d] %s: already done (%s)\n", n, len(steps), s.name, rec.Detail)
			res.Steps = append(res.Steps, MigrateStepResult{Name: s.name, State: rec.State, Detail: rec.Detail,
				DurationSeconds: seconds(rec.FinishedAt.Sub(rec.StartedAt))})
			continue
		}
		fmt.Fprintf(o.log, "[%d/%d] %s ...\n", n, len(steps), s.name)
		start := time.Now().UTC()
		st.Steps[s.name] = &stepState{State: "running", StartedAt: start}
		if err := st.save(); err != nil {
			return stepError(s.name, fmt.Errorf("save state: %w", err))
		}
		detail, err := s.run(ctx)
		rec := st.Steps[s.name]
		rec.FinishedAt = time.Now().UTC()
		if err != nil {
			rec.State, rec.Detail = "failed", redactDSNs(err.Error(), o.sourceConn, o.TargetDB)
			_ = st.save()
			return stepError(s.name, err)
		}
		rec.State, rec.Detail = "done", detail
		if d, ok := strings.CutPrefix(detail, "skipped: "); ok {
			rec.State, rec.Detail, detail = "skipped", d, "skipped: "+d
		}
		if err := st.save(); err != nil {
			return stepError(s.name, fmt.Errorf("save state: %w", err))
		}
		fmt.Fprintf(o.log, "[%d/%d] %s: %s (%.1fs)\n", n, len(steps), s.name, detail, rec.FinishedAt.Sub(start).Seconds())
		res.Steps = append(res.Steps, MigrateStepResult{Name: s.name, State: rec.State, Ran: true, Detail: rec.Detail,
			DurationSeconds: seconds(rec.FinishedAt.Sub(start))})
	}
	res.Digest, res.ServiceURL, res.Watermark = st.Digest, o.ServiceURL, st.Watermark
	if st.Recipient != "" {
		res.IdentityFile = st.identityPath()
	}
	if k, _, err := st.signer(); err == nil {
		res.SignerFile, res.Signer = st.signerPath(), k.Fingerprint
	}
	if o.Output.Machine() {
		return o.Output.Print(env.Streams.Out, res)
	}
	fmt.Fprintf(env.Streams.Out, "Migrated to cluster 0 (namespace %s).\nBundle: %s@%s\n", o.Namespace, o.ref, st.Digest)
	if o.ServiceURL != "" {
		fmt.Fprintf(env.Streams.Out, "assisted-service on cluster 0: %s\n", o.ServiceURL)
	}
	fmt.Fprintf(env.Streams.Out, "Node 0 may reboot: cluster 0 holds the receipt of this bundle.\n")
	return nil
}

// bundle creates and pushes the bundle, or reuses the one a previous run
// pushed if the registry still has it.
func (o *MigrateOptions) bundle(ctx context.Context) (string, error) {
	st := o.state
	key, err := st.ensureSigningKey()
	if err != nil {
		return "", err
	}
	if st.Digest != "" {
		if signer, _, err := st.signer(); err == nil {
			if b, err := bundle.Open(ctx, st.Pinned, bundle.OpenOptions{Registry: registryOptions(o.Registry), Signers: []sign.Key{signer}}); err == nil {
				b.Close()
				return "reused " + st.Digest + " pushed (and signed) by an earlier run", nil
			}
		}
		fmt.Fprintf(o.log, "  the bundle of the earlier run (%s) is gone or not signed by this run's key: creating a new one\n", st.Digest)
		st.Digest, st.Pinned = "", ""
		st.resetFrom(stepRestore)
	}
	c := bundle.CreateOptions{Creator: "kubectl-assisted " + CurrentVersion().Version, Recipients: o.recipients, SigningKey: key}
	if len(o.recipients) == 0 && !o.NoEncryption {
		id, err := st.ensureIdentity()
		if err != nil {
			return "", err
		}
		st.Recipient = id.Recipient().String()
		c.Recipients = []age.Recipient{id.Recipient()}
	}
	if o.DataDir != "" {
		c.Files = &bundle.FilesOptions{Dir: o.DataDir, Exclude: append(append([]string{}, files.DefaultExcludes...), o.Exclude...)}
	}
	if c.Database, err = databaseSource(o.Postgres, o.DBTables, nil); err != nil {
		return "", err
	}
	switch {
	case o.ManifestsDir != "":
		c.Resources = &resources.DirSource{Dir: o.ManifestsDir}
	case o.Resources == resourcesCluster:
		if c.Resources, err = sourceClusterResources(o.SourceKubeconfig, o.SourceNamespaces); err != nil {
			return "", err
		}
	}
	if o.Live && c.Database != nil {
		wm, err := readWatermark(ctx, o.sourceConn)
		if err != nil {
			return "", err
		}
		st.Watermark = wm
	}
	if o.ref.Remote() && len(c.Recipients) > 0 {
		c.Spool.Dir = o.SpoolDir
	}
	var bars *progress.Bars
	if o.Terminal.ShowProgress(o.log, &o.Output) {
		bars = progress.New(o.log, progress.Options{})
		c.Progress = bars
	}
	res, err := bundle.Create(ctx, o.ref.String(), registryOptions(o.Registry), c)
	if bars != nil {
		bars.Wait()
	}
	if err != nil {
		return "", bundleError(err)
	}
	st.Digest = res.Digest
	st.Pinned = pinnedRef(o.ref, res.Digest)
	st.ClusterIDs = nil
	if src, ok := c.Database.(*pgSource); ok && len(src.clusterIDs) > 0 {
		st.ClusterIDs = src.clusterIDs
	} else if res.Metadata != nil {
		st.ClusterIDs = res.Metadata.Source.ClusterIDs
	}
	// A new bundle invalidates whatever a previous run restored from another one.
	st.resetFrom(stepRestore)
	var size int64
	for _, l := range res.Layers {
		size += l.Size
	}
	return fmt.Sprintf("pushed %s (%s in %d layers), signed by %s", res.Digest, humanBytes(size), len(res.Layers), res.Signer), nil
}

// pinnedRef names the bundle by digest where the transport allows it.
func pinnedRef(ref oci.Reference, dgst string) string {
	if !ref.Remote() {
		return ref.String()
	}
	r := ref
	r.Tag = ""
	r.Digest = digestOf(dgst)
	return r.String()
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// redactDSNs removes connection strings from a message kept in the state file.
func redactDSNs(msg string, dsns ...string) string {
	for _, d := range dsns {
		if d != "" {
			msg = strings.ReplaceAll(msg, d, option.Redact(d))
		}
	}
	return msg
}

// identityText returns the age identity that decrypts the bundle: the
// generated one, or --identity's file.
func (o *MigrateOptions) identityText() (string, string, error) {
	if o.state.Recipient != "" {
		data, err := os.ReadFile(o.state.identityPath())
		return string(data), o.state.identityPath(), err
	}
	if o.Identity != "" {
		data, err := os.ReadFile(o.Identity)
		return string(data), o.Identity, err
	}
	return "", "", nil
}

// MigratePlan is the -o json|yaml result of `migrate --dry-run`.
type MigratePlan struct {
	APIVersion  string   `json:"apiVersion"`
	Kind        string   `json:"kind"`
	Reference   string   `json:"reference"`
	Namespace   string   `json:"namespace"`
	RestoreMode string   `json:"restoreMode"`
	Preflight   string   `json:"preflight"`
	Steps       []string `json:"steps"`
}

// dryRun runs the preflight checks with nothing forced and says what a real
// run would do.
func (o *MigrateOptions) dryRun(ctx context.Context, env *Env) error {
	o.state = &migrateState{Steps: map[string]*stepState{}, dir: o.StateDir}
	o.Force = false
	fmt.Fprintf(o.log, "[1/%d] preflight (dry run) ...\n", len(migrateSteps))
	detail, err := o.preflight(ctx)
	if err != nil {
		return stepError(stepPreflight, err)
	}
	mode := "job"
	restore := fmt.Sprintf("apply a restore Job in %s running %s (PVCs %s and %s)", o.Namespace, o.RestoreImage, o.asc.DatabaseSize.String(), o.asc.FilesystemSize.String())
	if o.direct {
		mode, restore = "direct", "restore directly into --target-db and "+o.TargetDataDir+" (the restore command as a child process)"
	}
	keys := "a key pair generated for this run, kept in " + o.StateDir
	if len(o.recipients) > 0 {
		keys = fmt.Sprintf("%d given recipient(s)", len(o.recipients))
	} else if o.NoEncryption {
		keys = "no encryption"
	}
	var layers []string
	if o.Postgres.IsSet() {
		layers = append(layers, "database")
	}
	if o.DataDir != "" {
		layers = append(layers, "files from "+o.DataDir)
	}
	switch {
	case o.ManifestsDir != "":
		layers = append(layers, "manifests from "+o.ManifestsDir)
	case o.Resources == resourcesCluster:
		layers = append(layers, "resources from node 0's API")
	}
	service := "skip: no --agent-service-config"
	if o.asc != nil {
		service = "create the AgentServiceConfig from " + o.AgentServiceConfig + " once the receipt exists"
	}
	switchTo := "skip: no --service-url"
	if o.ServiceURL != "" {
		switchTo = "switch the assisted-installer-controller to " + o.ServiceURL
	}
	plan := &MigratePlan{APIVersion: ResultAPIVersion, Kind: "MigratePlan", Reference: o.ref.String(), Namespace: o.Namespace,
		RestoreMode: mode, Preflight: detail, Steps: []string{
			"preflight: " + detail,
			"bundle: " + strings.Join(layers, ", ") + " to " + o.ref.String() + ", encrypted to " + keys,
			"restore: " + restore,
			"wait: for the receipt of the pushed digest (timeout " + o.Timeout.String() + ")",
			"service: " + service,
			"switchover: " + switchTo,
		}}
	if o.Output.Machine() {
		return o.Output.Print(env.Streams.Out, plan)
	}
	fmt.Fprintln(env.Streams.Out, "Dry run: nothing was changed. A real run would:")
	for i, s := range plan.Steps {
		fmt.Fprintf(env.Streams.Out, "  %d. %s\n", i+1, s)
	}
	return nil
}
