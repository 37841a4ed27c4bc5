package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/oci"
	"github.com/kubectl-assisted/kubectl-assisted/plugin/clierr"
	"github.com/kubectl-assisted/kubectl-assisted/plugin/progress"
	"github.com/kubectl-assisted/kubectl-assisted/restore/migrate"
)

// DefaultMigrateNamespace is where the infrastructure operator runs
// assisted-service under the multicluster engine.
const DefaultMigrateNamespace = "multicluster-engine"

// MigrateOptions holds the inputs of `migrate`: the flags `bundle create`
// shares (bundleFlags), then node 0's API, the keys, cluster 0 and the run.
type MigrateOptions struct {
	cmdEnv
	noArgs
	bundleFlags
	atRebootFlags
	SourceKubeconfig string
	SourceNamespaces []string
	Live             bool
	Identity         string

	TargetKubeconfig    string
	TargetContext       string
	Namespace           string
	TargetDB            string
	TargetDataDir       string
	ServiceURL          string
	ImageServiceURL     string
	NamespaceMapping    []string
	RestoreImage        string
	DatabaseImage       string
	AgentServiceConfig  string
	Force               bool
	Timeout             time.Duration
	ControllerNamespace string
	CACertPath          string
	ClusterID           string
	StateDir            string
	DryRun              bool

	// Resolved by Complete.
	opts        migrate.Options
	out, errOut io.Writer
}

// NewCmdMigrate builds `migrate`.
func NewCmdMigrate(env *Env) *cobra.Command { return newCmdMigrate(env, &MigrateOptions{}) }

// newCmdMigrate builds `migrate` with its flags bound to o.
func newCmdMigrate(env *Env, o *MigrateOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "migrate --to REF --target-kubeconfig FILE [-n NS] [--db URL | --db-env-file FILE] [--data-dir DIR] [--target-db URL --target-data-dir DIR]",
		Short:   "Move node 0's assisted-service to cluster 0: bundle, push, restore, wait, hand over",
		Long:    migrateLong,
		Example: env.Example(migrateExample),
		Args:    cobra.NoArgs,
	}
	fs := cmd.Flags()
	o.bundleFlags.AddFlags(fs, "--source-kubeconfig and --source-namespace")
	fs.StringVar(&o.SourceKubeconfig, "source-kubeconfig", "", "Node 0's kubeconfig, for --resources cluster")
	fs.StringSliceVar(&o.SourceNamespaces, "source-namespace", nil, "Namespaces to export with --resources cluster (default all)")
	fs.BoolVar(&o.Live, "live", false, "Dump while assisted-service still runs: from one snapshot, recording the WAL position as a write watermark")
	fs.StringVar(&o.Identity, "identity", "", "Age identity file that decrypts the bundle (needed with --recipient); default: a key pair generated for this run")
	fs.StringVar(&o.TargetKubeconfig, "target-kubeconfig", "", "Cluster 0's kubeconfig (required)")
	fs.StringVar(&o.TargetContext, "target-context", "", "Context of --target-kubeconfig to use")
	fs.StringVarP(&o.Namespace, "namespace", "n", "", "Cluster 0's assisted-service namespace (default: the kubeconfig context's, else "+DefaultMigrateNamespace+")")
	fs.StringVar(&o.TargetDB, "target-db", "", "Cluster 0's assisted-service database, reachable from node 0: restore directly (with --target-data-dir)")
	fs.StringVar(&o.TargetDataDir, "target-data-dir", "", "Cluster 0's file storage (the assisted-service PVC), mounted on node 0: restore directly (with --target-db)")
	fs.StringVar(&o.ServiceURL, "service-url", "", "Cluster 0's assisted-service URL: status URLs are rewritten onto it and the controller is switched to it")
	fs.StringVar(&o.ImageServiceURL, "image-service-url", "", "Cluster 0's image service URL: BareMetalHost image URLs on node 0's image service are moved onto it (as restore --image-service-url)")
	fs.StringArrayVar(&o.NamespaceMapping, "namespace-mapping", nil, "Restore namespace OLD into NEW (OLD=NEW; repeatable or comma-separated)")
	fs.StringVar(&o.RestoreImage, "restore-image", "", "Image with kubectl-assisted for the restore Job (default: this binary, pushed as an image beside the bundle)")
	fs.StringVar(&o.DatabaseImage, "database-image", "", "PostgreSQL image of the restore Job (default: the infrastructure operator's DATABASE_IMAGE; must be of its major)")
	fs.StringVar(&o.AgentServiceConfig, "agent-service-config", "", "AgentServiceConfig to create once the restore is complete (the Job's PVCs get its storage specs)")
	fs.BoolVar(&o.Force, "force", false, "Scale a running assisted-service Deployment on cluster 0 to zero instead of stopping")
	fs.DurationVar(&o.Timeout, "timeout", 60*time.Minute, "How long to wait for the restore's receipt")
	fs.StringVar(&o.ControllerNamespace, "controller-namespace", "", "Namespace of the assisted-installer-controller (default assisted-installer)")
	fs.StringVar(&o.CACertPath, "ca-cert-path", "", "Path, on cluster 0's hosts, of the CA of --service-url's certificate (for the controller)")
	fs.StringVar(&o.ClusterID, "cluster-id", "", "Cluster 0's id in the database (default: the only cluster of the bundle)")
	fs.StringVar(&o.StateDir, "state-dir", migrate.DefaultStateDir(), "Where the run keeps its state and generated keys (on node 0)")
	fs.BoolVar(&o.DryRun, "dry-run", false, "Run the preflight checks and print the plan; change nothing (not even with --force) and write no state")
	o.atRebootFlags.AddFlags(fs)
	// --to and --target-kubeconfig are required unless --disarm: Validate
	// checks them.
	return wire(env, cmd, o)
}

// resolve turns the flags into the engine's options: the shared bundle flags,
// the AgentServiceConfig file, cluster 0's kubeconfig. It reads those files
// (the first I/O of Run); usage errors exit 2.
func (o *MigrateOptions) resolve() error {
	cmd, env := o.cmd, o.env
	o.out, o.errOut = env.Streams.Out, env.Streams.ErrOut
	in, err := o.bundleFlags.complete(cmd, func(in *bundleInput) (bundle.ResourcesSource, error) {
		if o.SourceKubeconfig == "" {
			return nil, clierr.Usagef(cmd, "--resources cluster exports from node 0's API: give --source-kubeconfig")
		}
		return sourceClusterResources(o.SourceKubeconfig, o.SourceNamespaces, !o.NoEncryption, o.LocalAuthNamespace)
	})
	if err != nil {
		return err
	}
	// migrate encrypts unless --no-encryption (to a key pair it makes when no
	// recipient is given).
	note, err := in.carryEnvKey(o.Postgres.EnvFile, !o.NoEncryption)
	if err != nil {
		return clierr.New(err, "Check "+envECPrivateKey+" and "+envECPublicKey+" in the env file (PEM, or PEM in base64), or bundle without the key: pass the database with --db.", clierr.ExitUsage)
	}
	if note != "" {
		fmt.Fprintln(o.errOut, note)
	}
	mapping, err := parseNamespaceMapping(o.NamespaceMapping)
	if err != nil {
		return usageErr(cmd, err)
	}
	opts := migrate.Options{
		Ref: in.ref, Registry: registryOptions(o.Registry), Create: in.create, SpoolDir: in.spoolDir,
		NoEncryption: o.NoEncryption, IdentityFile: o.Identity, SourceDB: in.sourceDB, Live: o.Live,
		TargetDB: o.TargetDB, TargetDataDir: o.TargetDataDir, ServiceURL: o.ServiceURL, ImageServiceURL: o.ImageServiceURL, NamespaceMapping: mapping,
		RestoreImage: o.RestoreImage, DatabaseImage: o.DatabaseImage, Version: CurrentVersion().Version,
		Force: o.Force, Timeout: o.Timeout, ControllerNamespace: o.ControllerNamespace, CACertPath: o.CACertPath,
		ClusterID: o.ClusterID, StateDir: o.StateDir, Creator: "kubectl-assisted " + CurrentVersion().Version,
	}
	opts.Create.Recipients = in.recipients
	if o.AgentServiceConfig != "" {
		data, err := os.ReadFile(o.AgentServiceConfig)
		if err != nil {
			return usageErr(cmd, fmt.Errorf("--agent-service-config: %w", err))
		}
		if opts.AgentServiceConfig, err = migrate.ParseAgentServiceConfig(data, o.AgentServiceConfig); err != nil {
			return usageErr(cmd, fmt.Errorf("--agent-service-config %w", err))
		}
	}
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: o.TargetKubeconfig},
		&clientcmd.ConfigOverrides{CurrentContext: o.TargetContext})
	cfg, err := loader.ClientConfig()
	if err != nil {
		return clierr.New(fmt.Errorf("--target-kubeconfig: %w", err), "", clierr.ExitUsage)
	}
	// The in-process restore writes dozens of objects: client-go's default
	// 5 requests a second would make it wait between writes.
	opts.Config, opts.Target = withRestoreRate(cfg), cfg.Host
	opts.Namespace = o.Namespace
	if opts.Namespace == "" {
		opts.Namespace = DefaultMigrateNamespace
		if raw, err := loader.RawConfig(); err == nil {
			cur := raw.CurrentContext
			if o.TargetContext != "" {
				cur = o.TargetContext
			}
			if c := raw.Contexts[cur]; c != nil && c.Namespace != "" {
				opts.Namespace = c.Namespace
			}
		}
	}
	o.opts = opts
	return nil
}

// Validate checks the flags, alone and together, before any I/O; its errors
// are usage errors. The engine's own checks of the resolved options run at
// the start of Run.
func (o *MigrateOptions) Validate() error {
	if o.Disarm {
		return o.validateDisarm()
	}
	if err := o.validateRequired(); err != nil {
		return err
	}
	if err := o.bundleFlags.validate(); err != nil {
		return err
	}
	ref, _ := oci.ParseReference(o.To) // bundleFlags.validate parsed it
	switch {
	case ref.Digest != "":
		return fmt.Errorf("--to %s: give a tag, not a digest: migrate pushes a new bundle", o.To)
	case (o.TargetDB == "") != (o.TargetDataDir == ""):
		return errors.New("--target-db and --target-data-dir go together (restore directly); leave both out to restore with a Job on cluster 0")
	case o.TargetDB == "" && o.AgentServiceConfig == "":
		return errors.New("the restore Job pre-creates the operator's PVCs as the AgentServiceConfig specifies them: give --agent-service-config FILE")
	case o.TargetDB == "" && !ref.Remote():
		return fmt.Errorf("--to %s: the restore Job on cluster 0 pulls the bundle from a registry; restore a layout or archive directly (--target-db, --target-data-dir)", o.To)
	case o.NoEncryption && ref.Remote():
		return errors.New("refusing to push an unencrypted bundle to a registry (it holds pull secrets, the kubeadmin password and Secret data): leave out --no-encryption, migrate generates a key pair for the run")
	case len(o.Recipients)+len(o.RecipientFile) > 0 && o.Identity == "":
		return errors.New("with --recipient/--recipients-file, give --identity FILE: the restore needs the matching private key")
	}
	return o.validateAtReboot()
}

// Run runs the migration (or, with --dry-run, only its preflight) and
// renders what the engine reports.
func (o *MigrateOptions) Run(ctx context.Context) error {
	if o.Disarm {
		return o.runDisarm(ctx)
	}
	if err := o.resolve(); err != nil {
		return err
	}
	if err := o.opts.Validate(); err != nil {
		return o.usage(err)
	}
	if o.AtReboot != "" {
		return o.runArm(ctx)
	}
	r := &migrateRenderer{w: o.errOut, ev: &eventPrinter{w: o.errOut}}
	o.opts.OnEvent = r.event
	if o.Terminal.ShowProgress(o.errOut, &o.Output) {
		o.opts.NewProgress = func() (bundle.Progress, func()) {
			bars := progress.New(o.errOut, progress.Options{})
			return bars, bars.Wait
		}
	}
	if o.DryRun {
		fmt.Fprintf(o.errOut, "[1/%d] preflight (dry run) ...\n", len(migrate.Steps))
		plan, err := migrate.DryRun(ctx, o.opts)
		if err != nil {
			return migrateError(err)
		}
		return o.printPlan(plan)
	}
	res, err := migrate.Run(ctx, o.opts)
	if err != nil {
		return migrateError(err)
	}
	return o.printResult(res)
}
