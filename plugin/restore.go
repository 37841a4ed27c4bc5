package plugin

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/oci"
	"github.com/kubectl-assisted/kubectl-assisted/plugin/clierr"
	"github.com/kubectl-assisted/kubectl-assisted/plugin/option"
	"github.com/kubectl-assisted/kubectl-assisted/plugin/progress"
	"github.com/kubectl-assisted/kubectl-assisted/restore"
	"github.com/kubectl-assisted/kubectl-assisted/restore/auth"
	"github.com/kubectl-assisted/kubectl-assisted/restore/journal"
	"github.com/kubectl-assisted/kubectl-assisted/restore/resources"
)

const restoreLong = `Restore a bundle into cluster 0 before its assisted-service starts: the database
(one transaction, with the kube keys the controllers look rows up by), the file storage
(staged, then renamed into place, with modes, times and user.* xattrs), the postgres and
assisted-servicelocal-auth Secrets the operator adopts, and the resources in the order
assisted-service needs. A journal ConfigMap makes it resumable: killed at any point and
run again with the same flags, it converges to the same end state. The last step writes
the receipt that "wait-for restore-complete" on node 0 waits for.

Everything is checked before anything is written: the bundle's signature first (it must
be signed by a --signer key, see bundle create --signing-key; --allow-unsigned skips
that), then the bundle is pulled, verified and
decrypted to its last byte, the database and data directory must be empty (or
--replace), the resources must not conflict with cluster 0 (--existing), and the CRs
must match the database rows. A refusal changes nothing anywhere.

The target database is --db, --db-env-file or --db-from-env; without them, the
operator's postgres Secret in -n (db.host, db.port, db.user, db.password, db.name).

Resources: the bundle's exported CRs by default; re-created from the restored rows with
--recreate-resources, and always when the bundle has no resources layer or holds
install manifests. Re-created CRs must agree with the rows: --diff lists every
disagreement and exits like diff(1) (0 none, 1 some, 2 or more on error) without
writing; the restore refuses to apply while any remains, unless --accept-drift.

With --replace, the files layer is staged inside the data directory before the database
transaction starts: the old rows and files are replaced only once the new files are
written. Setuid, setgid and sticky bits are refused unless --preserve-special-bits.

Exit codes: 0 restored; 2 usage (also a bundle that lacks a layer the restore needs);` + bundleExitCodes + `;
20 the target database or data directory is not empty; 21 objects on cluster 0
conflict with the bundle (--existing), or a journal of this bundle was written with
other options; 22 the CRs do not match the database rows (kube keys); 23 re-created
resources disagree with the database (drift); 24 applying an object failed (the error
names it; --report FILE keeps the per-object report); 25 cluster 0 is unreachable or
lacks the CRDs; 26 the target database runs an older PostgreSQL major than node 0 did
and refuses the bundle's schema (tried in a transaction that is rolled back; an older
major that accepts it is restored into, with a warning); 1 anything else (also too
little space in the data directory).`

// Exit codes of restore, beside the bundle's (3-9).
const (
	ExitRestoreTargetNotEmpty = 20 // database or data directory not empty
	ExitRestoreConflict       = 21 // objects on cluster 0 conflict; journal of other options
	ExitRestoreKubeKeys       = 22 // CRs do not match the database rows
	ExitRestoreDrift          = 23 // re-created resources disagree with the rows
	ExitRestoreApply          = 24 // an object failed to apply
	ExitRestoreCluster        = 25 // cluster 0 unreachable or without the CRDs
	ExitRestoreOlderPostgres  = 26 // target PostgreSQL older than the source's and refuses its schema
)

// RestoreOptions holds the inputs of `restore`.
type RestoreOptions struct {
	Ref          string
	Identities   []string
	Sign         signerOptions
	DataDir      string
	SkipDatabase bool
	SkipFiles    bool
	// PreserveSpecialBits restores setuid, setgid and sticky bits.
	PreserveSpecialBits bool
	SkipResources       bool
	RecreateResources   bool
	ManifestsDir        string
	Diff                bool
	AcceptDrift         bool
	NamespaceMapping    []string
	ClusterZero         string
	ServiceURL          string
	Existing            string
	DryRun              string
	Replace             bool
	ReportFile          string
	NoCluster           bool
	Postgres            option.Postgres
	Registry            option.Registry
	Output              option.Output
	Terminal            option.Terminal

	// Resolved by Complete.
	opts restore.Options
}

// NewCmdRestore builds `restore`.
func NewCmdRestore(env *Env) *cobra.Command {
	o := &RestoreOptions{}
	cmd := &cobra.Command{
		Use:   "restore REF --signer FILE [--identity FILE] [--db URL | --db-env-file FILE | --db-from-env] [--data-dir DIR] [-n NS]",
		Short: "Restore a bundle into cluster 0: database, files, Secrets and resources, resumable",
		Long:  restoreLong,
		Example: env.Example(`
  # Restore through a port-forward to cluster 0's database and a mounted PVC
  %[1]s assisted restore registry.example.com/assisted/node0@sha256:4f1c... --signer node0.pub --identity key.txt \
      --db postgres://admin@localhost:15432/installer --data-dir /mnt/assisted-service \
      -n multicluster-engine --namespace-mapping cluster0=cluster0 \
      --service-url https://assisted-service-multicluster-engine.apps.cluster0.example.com

  # Inside cluster 0 (the restore Job): database from the DB_* variables
  kubectl-assisted restore REF --signer /var/run/identity/signer.pub --identity /var/run/identity/identity.txt --db-from-env --data-dir /data -n multicluster-engine

  # Node 0 had no Kubernetes API: list where re-created CRs would disagree with the rows
  %[1]s assisted restore oci:/var/tmp/bundle:v1 --signer node0.pub --identity key.txt --recreate-resources --diff \
      --db postgres://postgres@localhost/scratch --skip-files

  # Cluster 0 never came up: restore node 0's database and files elsewhere to read its logs
  %[1]s assisted restore oci-archive:bundle.tar --identity key.txt --no-cluster \
      --db postgres://postgres@localhost/node0 --data-dir /srv/node0-data

  # Check everything, change nothing
  %[1]s assisted restore oci-archive:bundle.tar --signer node0.pub --identity key.txt --db-env-file cluster0.env \
      --data-dir /mnt/data -n multicluster-engine --dry-run=server -o json`),
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Ref = args[0]
			if err := o.Complete(env, cmd); err != nil {
				return err
			}
			return o.Run(cmd, env)
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVar(&o.Identities, "identity", nil, "age identity file that decrypts the bundle; repeatable")
	o.Sign.AddFlags(fs)
	fs.StringVar(&o.DataDir, "data-dir", "", "cluster 0's assisted-service file storage (the assisted-service PVC, /data in the pod)")
	fs.BoolVar(&o.SkipDatabase, "skip-database", false, "Do not restore the database (its receipt then does not satisfy wait-for)")
	fs.BoolVar(&o.SkipFiles, "skip-files", false, "Do not restore the file storage (its receipt then does not satisfy wait-for)")
	fs.BoolVar(&o.SkipResources, "skip-resources", false, "Restore the database, the files and the Secrets only")
	fs.BoolVar(&o.RecreateResources, "recreate-resources", false, "Re-create the CRs from the restored database rows instead of applying the bundle's")
	fs.StringVar(&o.ManifestsDir, "manifests-dir", "", "Node 0's install manifests (/etc/assisted/manifests) the re-created CRs start from (default: the bundle's, if any)")
	fs.BoolVar(&o.Diff, "diff", false, "With --recreate-resources: list every field where the re-created CRs disagree with the rows or differ from node 0's CRs (exported, or the install manifests), write nothing, exit 0 (none), 1 (some) or above 1 (error)")
	fs.BoolVar(&o.AcceptDrift, "accept-drift", false, "Apply re-created CRs even where they disagree with the rows (the controllers then update the rows)")
	fs.StringArrayVar(&o.NamespaceMapping, "namespace-mapping", nil, "Restore node-0 namespace OLD into NEW (OLD=NEW; repeatable or comma-separated); spec references are rewritten too")
	fs.StringVar(&o.ClusterZero, "cluster-zero", "", "NAMESPACE/NAME (as on node 0) of cluster 0's own ClusterDeployment, when the bundle holds several")
	fs.StringVar(&o.ServiceURL, "service-url", "", "cluster 0's assisted-service URL: node-0 status URLs are rewritten onto it (removed without it)")
	fs.StringVar(&o.Existing, "existing", string(resources.ExistingFail), "Objects already on cluster 0 that differ from the bundle: fail (before any change), skip, or update")
	fs.StringVar(&o.DryRun, "dry-run", string(resources.DryRunNone), "none, client (check everything, write nothing) or server (also send every object with dryRun=All)")
	fs.BoolVar(&o.PreserveSpecialBits, "preserve-special-bits", false, "Accept setuid, setgid and sticky bits in the files layer and restore them (refused by default)")
	fs.BoolVar(&o.Replace, "replace", false, "Restore into a non-empty database (dropped in the restore transaction) and data directory (emptied once the new files are staged)")
	fs.BoolVar(&o.NoCluster, "no-cluster", false, "Restore the database and files without cluster 0 (implies --skip-resources; needs --db...): the journal and receipt are kept in the target database (schema "+journal.DBSchema+"), no Secret is created; for reading node 0's data elsewhere")
	fs.StringVar(&o.ReportFile, "report", "", "Write the per-object report to this file when applying resources fails (default: no file; the error names the failing object)")
	o.Postgres.AddFlags(fs, "target")
	o.Postgres.AddFromEnvFlag(fs, "target")
	o.Registry.AddFlags(fs)
	o.Output.AddFlags(fs)
	o.Terminal.AddFlags(fs)
	env.Kube.AddFlags(fs)
	return cmd
}

// Complete validates the flags and resolves them into restore.Options.
func (o *RestoreOptions) Complete(env *Env, cmd *cobra.Command) error {
	if err := o.Output.Validate(); err != nil {
		return usageErr(cmd, err)
	}
	if _, err := oci.ParseReference(o.Ref); err != nil {
		return usageErr(cmd, err)
	}
	if err := o.Postgres.Validate(); err != nil {
		return usageErr(cmd, err)
	}
	ids, err := readIdentities(o.Identities)
	if err != nil {
		return usageErr(cmd, err)
	}
	signers, err := o.Sign.keys()
	if err != nil {
		return usageErr(cmd, err)
	}
	mapping, err := parseNamespaceMapping(o.NamespaceMapping)
	if err != nil {
		return usageErr(cmd, err)
	}
	ns, _, err := env.Kube.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return usageErr(cmd, fmt.Errorf("namespace: %w", err))
	}
	ro := restore.Options{
		Ref: o.Ref, Registry: registryOptions(o.Registry), Identities: ids,
		Signers: signers, AllowUnsigned: o.Sign.AllowUnsigned,
		DataDir: o.DataDir, SkipDatabase: o.SkipDatabase, SkipFiles: o.SkipFiles, PreserveSpecialBits: o.PreserveSpecialBits,
		Namespace: ns, NamespaceMapping: mapping, ServiceURL: o.ServiceURL,
		SkipResources: o.SkipResources, RecreateResources: o.RecreateResources, ManifestsDir: o.ManifestsDir,
		Diff: o.Diff, AcceptDrift: o.AcceptDrift, Existing: resources.ExistingPolicy(o.Existing),
		DryRun: resources.DryRun(o.DryRun), Replace: o.Replace,
	}
	if o.ClusterZero != "" {
		cns, cname, ok := strings.Cut(o.ClusterZero, "/")
		if !ok || cns == "" || cname == "" {
			return clierr.Usagef(cmd, "--cluster-zero %q: want NAMESPACE/NAME", o.ClusterZero)
		}
		ro.ClusterZero = &resources.ObjectKey{Group: "hive.openshift.io", Kind: "ClusterDeployment", Namespace: cns, Name: cname}
	}
	if o.Diff && !o.RecreateResources {
		return clierr.Usagef(cmd, "--diff compares re-created resources: it needs --recreate-resources")
	}
	if o.AcceptDrift && o.Diff {
		return clierr.Usagef(cmd, "--accept-drift applies despite differences; --diff only lists them: give one")
	}
	if o.Diff && o.DryRun != string(resources.DryRunNone) {
		return clierr.Usagef(cmd, "--diff writes nothing already; leave out --dry-run")
	}
	if o.Diff && !o.SkipFiles && o.DataDir == "" {
		ro.SkipFiles = true // the drift check never touches files
	}

	if o.NoCluster {
		switch {
		case o.SkipDatabase || !o.Postgres.IsSet():
			return clierr.Usagef(cmd, "--no-cluster keeps the journal in the target database: give it with --db, --db-env-file or --db-from-env")
		case o.RecreateResources || o.Diff || o.ManifestsDir != "" || o.ServiceURL != "" || len(o.NamespaceMapping) > 0:
			return clierr.Usagef(cmd, "--no-cluster restores the database and files only: leave out the resource flags")
		}
		ro.SkipResources = true
		if ro.TargetDB, err = o.targetDB(cmd, nil, ns); err != nil {
			return err
		}
		o.opts = ro
		return nil
	}
	// Cluster 0 is needed for everything but a drift check or a dry run of
	// the database and files alone with an explicit database.
	cfg, cfgErr := env.Kube.ToRESTConfig()
	restoreNeedsCluster := !o.Diff && !(ro.DryRun != resources.DryRunNone && o.SkipResources)
	secretNeedsCluster := !o.Postgres.IsSet() && !o.SkipDatabase
	if cfgErr != nil && (restoreNeedsCluster || secretNeedsCluster) {
		return clierr.New(fmt.Errorf("cluster 0's kubeconfig: %w", cfgErr), "Pass --kubeconfig (and --context), or run inside cluster 0.", clierr.ExitUsage)
	}
	if restoreNeedsCluster {
		ro.Config = withRestoreRate(cfg)
	}
	if !o.SkipDatabase {
		if ro.TargetDB, err = o.targetDB(cmd, cfg, ns); err != nil {
			return err
		}
	}
	o.opts = ro
	return nil
}

// withRestoreRate lifts client-go's default client-side limit (5 requests a
// second), which would make a restore of a few dozen objects wait seconds
// between writes; the API server's own priority and fairness still applies.
func withRestoreRate(cfg *rest.Config) *rest.Config {
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		cfg = rest.CopyConfig(cfg)
		cfg.QPS, cfg.Burst = 50, 100
	}
	return cfg
}

// targetDB resolves the database flags, or the operator's postgres Secret.
func (o *RestoreOptions) targetDB(cmd *cobra.Command, cfg *rest.Config, ns string) (string, error) {
	if o.Postgres.IsSet() {
		cs, err := o.Postgres.ConnString()
		if err != nil {
			return "", clierr.New(err, "", clierr.ExitUsage)
		}
		return cs, nil
	}
	if cfg == nil {
		return "", clierr.Usagef(cmd, "no target database: pass --db, --db-env-file or --db-from-env, or a kubeconfig to read the postgres Secret of -n")
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	creds, err := auth.ReadPostgresSecret(cmd.Context(), c, ns)
	if err != nil {
		return "", clierr.New(fmt.Errorf("no target database given and %w", err),
			"Pass --db, --db-env-file or --db-from-env, or restore into the namespace whose postgres Secret names the database (-n).", clierr.ExitUsage)
	}
	return creds.URL().String(), nil
}

// parseNamespaceMapping reads OLD=NEW pairs, repeatable or comma-separated.
func parseNamespaceMapping(values []string) (map[string]string, error) {
	out := map[string]string{}
	for _, v := range values {
		for _, pair := range strings.Split(v, ",") {
			pair = strings.TrimSpace(pair)
			if pair == "" {
				continue
			}
			from, to, ok := strings.Cut(pair, "=")
			from, to = strings.TrimSpace(from), strings.TrimSpace(to)
			if !ok || from == "" || to == "" {
				return nil, fmt.Errorf("--namespace-mapping %q: want OLD=NEW", pair)
			}
			if prev, dup := out[from]; dup && prev != to {
				return nil, fmt.Errorf("--namespace-mapping maps %s twice (%s and %s)", from, prev, to)
			}
			out[from] = to
		}
	}
	return out, nil
}

// Run restores and prints the result.
func (o *RestoreOptions) Run(cmd *cobra.Command, env *Env) error {
	var bars *progress.Bars
	if o.Terminal.ShowProgress(env.Streams.ErrOut, &o.Output) {
		bars = progress.New(env.Streams.ErrOut, progress.Options{})
		o.opts.Progress = bars
	}
	ev := &eventPrinter{w: env.Streams.ErrOut}
	o.opts.OnEvent = ev.print
	res, err := restore.Run(cmd.Context(), o.opts)
	if bars != nil {
		bars.Wait()
	}
	if o.Diff {
		return o.finishDiff(env, res, err)
	}
	if err != nil {
		o.writeReport(env, res)
		return restoreError(err)
	}
	out := newRestoreResult(res)
	if o.Output.Machine() {
		return o.Output.Print(env.Streams.Out, out)
	}
	return printRestoreResult(env.Streams.Out, env.Caller, out)
}

// writeReport writes the per-object report of a failed apply or check.
func (o *RestoreOptions) writeReport(env *Env, res *restore.Result) {
	if res == nil || res.Resources == nil || o.ReportFile == "" || !res.Resources.Failed() {
		return
	}
	f, err := os.OpenFile(o.ReportFile, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err == nil {
		err = res.Resources.WriteJSON(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(env.Streams.ErrOut, "warning: could not write the report: %v\n", err)
		return
	}
	fmt.Fprintf(env.Streams.ErrOut, "per-object report written to %s\n", o.ReportFile)
}

// finishDiff prints the differences and exits like diff(1).
func (o *RestoreOptions) finishDiff(env *Env, res *restore.Result, err error) error {
	if err != nil {
		mapped := restoreError(err)
		if clierr.ExitCode(mapped) == clierr.ExitError {
			return clierr.New(err, "", clierr.ExitUsage) // diff(1): above 1 is trouble
		}
		return mapped
	}
	diffs := res.Drift
	if o.Output.Machine() {
		if diffs == nil {
			diffs = []recreateDifference{}
		}
		if perr := o.Output.Print(env.Streams.Out, diffs); perr != nil {
			return perr
		}
	} else {
		for _, d := range diffs {
			fmt.Fprintln(env.Streams.Out, d.String())
		}
		if len(diffs) == 0 {
			fmt.Fprintln(env.Streams.ErrOut, "the re-created resources agree with the database and with node 0's CRs")
		}
	}
	if len(diffs) > 0 {
		return clierr.Silent(1)
	}
	return nil
}
