package restore

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"time"

	"filippo.io/age"
	"k8s.io/client-go/rest"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/oci"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/pg"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/sign"
	"github.com/kubectl-assisted/kubectl-assisted/restore/journal"
	"github.com/kubectl-assisted/kubectl-assisted/restore/resources"
)

// Phase names: the journal's phases, in the order they run. `wait-for
// restore-complete` requires database and files in the receipt.
const (
	PhaseDatabase  = "database"
	PhaseFiles     = "files"
	PhaseAuth      = "auth"
	PhaseResources = "resources"
)

// Options configure Run. Only resolved values: the CLI turns flags, env files
// and Secrets into these.
type Options struct {
	// Ref is the bundle reference (HOST/REPO[:TAG|@DIGEST], oci:DIR[:TAG],
	// oci-archive:FILE[:TAG]); ignored when Bundle is set.
	Ref      string
	Registry oci.RegistryOptions
	// Bundle is an already opened bundle (opened with Identities); Run does
	// not close it.
	Bundle *bundle.Bundle
	// Identities decrypt the layers.
	Identities []age.Identity
	// Signers are the trusted signing keys: a bundle no valid signature by
	// one of them names is refused before anything of it is read (a
	// *bundle.SignatureError), unless AllowUnsigned. Not used with Bundle
	// (its opener checked it).
	Signers       []sign.Key
	AllowUnsigned bool

	// TargetDB is the connection string of cluster 0's assisted-service
	// database. Required unless SkipDatabase.
	TargetDB string
	// DatabaseWait is how long to wait for the target database to accept
	// connections (a server still starting, as in the restore Job); zero
	// fails at once.
	DatabaseWait time.Duration
	// DatabaseMajor is the PostgreSQL major that will run the restored data
	// (cluster 0's DATABASE_IMAGE); a target of another major is refused
	// before any write. Zero: no check.
	DatabaseMajor int
	SkipDatabase  bool
	// DataDir is cluster 0's file storage (the assisted-service PVC). Required
	// unless SkipFiles.
	DataDir   string
	SkipFiles bool

	// Config reaches cluster 0. It may be nil for a diff, or with
	// SkipResources: a database-and-files restore without a cluster (to read
	// node 0's data elsewhere) keeps its journal and receipt in the target
	// database (journal.DBSchema) and creates no Secret.
	Config *rest.Config
	// Namespace is the assisted-service namespace on cluster 0: it receives
	// the journal, the receipt, the postgres and local-auth Secrets, and the
	// re-created resources when no install manifests name another one.
	Namespace string
	// NamespaceMapping maps node-0 namespaces to cluster-0 namespaces.
	NamespaceMapping map[string]string
	// ServiceURL is cluster 0's assisted-service URL; node-0 status URLs are
	// rewritten onto it (or removed without it).
	ServiceURL string
	// ImageServiceURL is cluster 0's image service URL; a BareMetalHost's
	// image URLs on node 0's image service are moved onto it (the restore
	// refuses such a host without it).
	ImageServiceURL string
	// ClusterZero names cluster 0's own ClusterDeployment (node-0 namespace
	// and name) when the bundle holds several.
	ClusterZero *resources.ObjectKey

	// SkipResources restores the database and files only (and the Secrets).
	SkipResources bool
	// RecreateResources builds the CRs from the restored rows instead of
	// applying the bundle's exported ones. It is implied when the bundle has
	// no resources layer or its layer holds install manifests.
	RecreateResources bool
	// ManifestsDir holds node 0's install manifests (ABI's
	// /etc/assisted/manifests) the re-created objects start from; default the
	// bundle's own manifests, if it has them.
	ManifestsDir string
	// Diff only compares the re-created objects with the rows (in a rolled-back
	// transaction) and returns them in Result.Drift; nothing is written.
	Diff bool
	// AcceptDrift applies re-created objects even when Diff finds differences.
	AcceptDrift bool
	// Existing is the policy for objects already on cluster 0 (default fail).
	Existing resources.ExistingPolicy
	// DryRun client checks everything and writes nothing; server also sends
	// every object with dryRun=All. The database is loaded and checked in a
	// transaction that is rolled back.
	DryRun resources.DryRun
	// Replace restores into a non-empty database (dropping what is there in
	// the restore transaction) and data directory (emptying it once the new
	// files are staged).
	Replace bool
	// PreserveSpecialBits accepts and restores setuid, setgid and sticky bits
	// in the files layer; by default an entry with one refuses the bundle.
	PreserveSpecialBits bool

	// Logger receives what happens, never secrets; nil discards.
	Logger *slog.Logger
	// Progress receives byte progress (pull, load); nil is silent.
	Progress bundle.Progress
	// OnEvent is told when a phase starts, ends or is skipped, and of
	// warnings; nil is silent.
	OnEvent func(Event)
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// EventType says what an Event reports.
type EventType string

// Event types.
const (
	EventCheck   EventType = "check"   // a check before any write passed
	EventStart   EventType = "start"   // a phase started
	EventDone    EventType = "done"    // a phase finished
	EventSkipped EventType = "skipped" // a phase an earlier run finished
	EventWarning EventType = "warning"
)

// Event is one step of a restore, for progress output. It never holds secrets.
type Event struct {
	Type     EventType
	Phase    string
	Message  string
	Counts   journal.Counts
	Duration time.Duration
}

func (o *Options) validate() error {
	bad := func(format string, args ...any) error { return &OptionsError{Err: fmt.Errorf(format, args...)} }
	switch {
	case o.Bundle == nil && o.Ref == "":
		return bad("no bundle reference")
	case o.TargetDB == "" && !o.SkipDatabase:
		return bad("no target database: give one, or skip the database phase")
	case o.TargetDB != "" && o.SkipDatabase:
		return bad("a target database and skipping the database phase contradict each other")
	case o.DataDir == "" && !o.SkipFiles:
		return bad("no data directory: give the file storage directory, or skip the files phase")
	case o.DataDir != "" && o.SkipFiles:
		return bad("a data directory and skipping the files phase contradict each other")
	case o.Namespace == "" && o.Config != nil:
		return bad("no namespace")
	case o.Diff && o.SkipDatabase:
		return bad("the drift check loads the database: it cannot skip it")
	case o.Diff && o.SkipResources:
		return bad("the drift check compares re-created resources: it cannot skip them")
	case o.RecreateResources && o.SkipResources:
		return bad("re-creating resources and skipping them contradict each other")
	case o.ManifestsDir != "" && o.SkipResources:
		return bad("install manifests only serve re-created resources, which are skipped")
	case o.Config == nil && !o.Diff && !o.SkipResources:
		return bad("no cluster 0 configuration: only a drift check, or a restore (or dry run) with resources skipped, works without one")
	case o.Config == nil && !o.dryRun() && o.SkipDatabase:
		return bad("a restore without cluster 0 keeps its journal and receipt in the target database: it cannot skip the database")
	}
	ro := resources.Options{Existing: o.Existing, DryRun: o.DryRun, NamespaceMapping: o.NamespaceMapping}
	if err := ro.Validate(); err != nil {
		return &OptionsError{Err: err}
	}
	return nil
}

// dryRun reports whether nothing may be written.
func (o *Options) dryRun() bool {
	return o.Diff || (o.DryRun != "" && o.DryRun != resources.DryRunNone)
}

// fingerprint identifies what decides the end state, so a rerun with other
// such options does not resume this journal (journal.FingerprintMismatchError).
// Policies that only decide whether to stop (existing, accept-drift, replace)
// are left out: a rerun may relax them. So is SkipResources: a restore of the
// database and files may be followed by one that adds the resources.
func (o *Options) fingerprint(recreate bool) string {
	type dbID struct{ Host, Port, Name string }
	var db *dbID
	if o.TargetDB != "" {
		if cfg, err := pg.ParseConnString(o.TargetDB); err == nil {
			db = &dbID{cfg.Host, fmt.Sprint(cfg.Port), cfg.Database}
		}
	}
	dataDir := o.DataDir
	if abs, err := filepath.Abs(dataDir); err == nil && dataDir != "" {
		dataDir = abs
	}
	var mapping []string
	for k, v := range o.NamespaceMapping {
		mapping = append(mapping, k+"="+v)
	}
	sort.Strings(mapping)
	fp := map[string]any{
		"db": db, "dataDir": dataDir, "namespace": o.Namespace, "mapping": mapping, "serviceURL": o.ServiceURL,
		"clusterZero": o.ClusterZero, "recreate": recreate,
		"skipDatabase": o.SkipDatabase, "skipFiles": o.SkipFiles,
	}
	if o.ImageServiceURL != "" { // absent when unset: earlier runs keep their fingerprint
		fp["imageServiceURL"] = o.ImageServiceURL
	}
	b, _ := json.Marshal(fp)
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:16])
}
