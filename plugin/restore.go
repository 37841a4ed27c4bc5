package plugin

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubectl-assisted/kubectl-assisted/plugin/option"
	"github.com/kubectl-assisted/kubectl-assisted/restore"
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

Exit codes (docs/exit-codes.md): 0 restored; 2 usage (also a bundle that lacks a layer the restore needs);` + bundleExitCodes + `;
20 the target database or data directory is not empty; 21 objects on cluster 0
conflict with the bundle (--existing), or a journal of this bundle was written with
other options; 22 the CRs do not match the database rows (kube keys); 23 re-created
resources disagree with the database (drift); 24 applying an object failed (the error
names it; --report FILE keeps the per-object report); 25 cluster 0 is unreachable or
lacks the CRDs; 26 the target database runs an older PostgreSQL major than node 0 did
and refuses the bundle's schema; 27 it is not of --database-major
and refuses the bundle's schema (tried in a transaction that is rolled back; an older
major that accepts it is restored into, with a warning); 1 anything else (also too
little space in the data directory).`

// RestoreOptions holds the inputs of `restore`.
type RestoreOptions struct {
	cmdEnv
	bundleRead
	DataDir           string
	SkipDatabase      bool
	DatabaseWait      time.Duration
	DatabaseMajor     int
	SkipFiles         bool
	SkipResources     bool
	RecreateResources bool
	ManifestsDir      string
	Diff              bool
	AcceptDrift       bool
	NamespaceMapping  []string
	ClusterZero       string
	ServiceURL        string
	ImageServiceURL   string
	Existing          string
	DryRun            string
	Replace           bool
	ReportFile        string
	NoCluster         bool
	Postgres          option.Postgres

	// Derived by Validate.
	mapping     map[string]string
	clusterZero *resources.ObjectKey
	// Resolved at the start of Run.
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
	}
	fs := cmd.Flags()
	o.addFlags(fs, "Accept setuid, setgid and sticky bits in the files layer and restore them (refused by default)")
	fs.StringVar(&o.DataDir, "data-dir", "", "cluster 0's assisted-service file storage (the assisted-service PVC, /data in the pod)")
	fs.BoolVar(&o.SkipDatabase, "skip-database", false, "Do not restore the database (its receipt then does not satisfy wait-for)")
	fs.DurationVar(&o.DatabaseWait, "database-wait", 0, "Wait up to this long for the target database to accept connections (a server still starting); 0 fails at once")
	fs.IntVar(&o.DatabaseMajor, "database-major", 0, "PostgreSQL major that will run the restored data (cluster 0's DATABASE_IMAGE): a target database of another major is refused before any write")
	fs.BoolVar(&o.SkipFiles, "skip-files", false, "Do not restore the file storage (its receipt then does not satisfy wait-for)")
	fs.BoolVar(&o.SkipResources, "skip-resources", false, "Restore the database, the files and the Secrets only")
	fs.BoolVar(&o.RecreateResources, "recreate-resources", false, "Re-create the CRs from the restored database rows instead of applying the bundle's")
	fs.StringVar(&o.ManifestsDir, "manifests-dir", "", "Node 0's install manifests (/etc/assisted/manifests) the re-created CRs start from (default: the bundle's, if any)")
	fs.BoolVar(&o.Diff, "diff", false, "With --recreate-resources: list every field where the re-created CRs disagree with the rows or differ from node 0's CRs (exported, or the install manifests), write nothing, exit 0 (none), 1 (some) or above 1 (error)")
	fs.BoolVar(&o.AcceptDrift, "accept-drift", false, "Apply re-created CRs even where they disagree with the rows (the controllers then update the rows)")
	fs.StringArrayVar(&o.NamespaceMapping, "namespace-mapping", nil, "Restore node-0 namespace OLD into NEW (OLD=NEW; repeatable or comma-separated); spec references are rewritten too")
	fs.StringVar(&o.ClusterZero, "cluster-zero", "", "NAMESPACE/NAME (as on node 0) of cluster 0's own ClusterDeployment, when the bundle holds several")
	fs.StringVar(&o.ServiceURL, "service-url", "", "cluster 0's assisted-service URL: node-0 status URLs are rewritten onto it (removed without it)")
	fs.StringVar(&o.ImageServiceURL, "image-service-url", "", "cluster 0's image service URL: BareMetalHost image URLs on node 0's image service are moved onto it")
	fs.StringVar(&o.Existing, "existing", string(resources.ExistingFail), "Objects already on cluster 0 that differ from the bundle: fail (before any change), skip, or update")
	fs.StringVar(&o.DryRun, "dry-run", string(resources.DryRunNone), "none, client (check everything, write nothing) or server (also send every object with dryRun=All)")
	fs.BoolVar(&o.Replace, "replace", false, "Restore into a non-empty database (dropped in the restore transaction) and data directory (emptied once the new files are staged)")
	fs.BoolVar(&o.NoCluster, "no-cluster", false, "Restore the database and files without cluster 0 (implies --skip-resources; needs --db...): the journal and receipt are kept in the target database (schema "+journal.DBSchema+"), no Secret is created; for reading node 0's data elsewhere")
	fs.StringVar(&o.ReportFile, "report", "", "Write the per-object report to this file when applying resources fails (default: no file; the error names the failing object)")
	o.Postgres.AddFlags(fs, "target")
	o.Postgres.AddFromEnvFlag(fs, "target")
	env.Kube.AddFlags(fs)
	return wire(env, cmd, o)
}

// Complete takes the reference.
func (o *RestoreOptions) Complete(args []string) error {
	o.Ref = args[0]
	return nil
}

// Validate checks every flag and their combinations, before any I/O.
func (o *RestoreOptions) Validate() error {
	if err := o.validate(); err != nil {
		return err
	}
	if err := o.Postgres.Validate(); err != nil {
		return err
	}
	switch resources.ExistingPolicy(o.Existing) {
	case resources.ExistingFail, resources.ExistingSkip, resources.ExistingUpdate:
	default:
		return fmt.Errorf("--existing %q: give fail, skip or update", o.Existing)
	}
	switch resources.DryRun(o.DryRun) {
	case resources.DryRunNone, resources.DryRunClient, resources.DryRunServer:
	default:
		return fmt.Errorf("--dry-run %q: give none, client or server", o.DryRun)
	}
	mapping, err := parseNamespaceMapping(o.NamespaceMapping)
	if err != nil {
		return err
	}
	o.mapping = mapping
	if o.ClusterZero != "" {
		cns, cname, ok := strings.Cut(o.ClusterZero, "/")
		if !ok || cns == "" || cname == "" {
			return fmt.Errorf("--cluster-zero %q: give NAMESPACE/NAME of cluster 0's ClusterDeployment as on node 0", o.ClusterZero)
		}
		o.clusterZero = &resources.ObjectKey{Group: "hive.openshift.io", Kind: "ClusterDeployment", Namespace: cns, Name: cname}
	}
	switch {
	case o.Diff && !o.RecreateResources:
		return errors.New("--diff compares re-created resources: it needs --recreate-resources")
	case o.AcceptDrift && o.Diff:
		return errors.New("--accept-drift applies despite differences; --diff only lists them: give one")
	case o.Diff && o.DryRun != string(resources.DryRunNone):
		return errors.New("--diff writes nothing already; leave out --dry-run")
	}
	if o.NoCluster {
		switch {
		case o.SkipDatabase || !o.Postgres.IsSet():
			return errors.New("--no-cluster keeps the journal in the target database: give it with --db, --db-env-file or --db-from-env")
		case o.RecreateResources || o.Diff || o.ManifestsDir != "" || o.ServiceURL != "" || o.ImageServiceURL != "" || len(o.NamespaceMapping) > 0:
			return errors.New("--no-cluster restores the database and files only: leave out the resource flags")
		}
	}
	return nil
}
