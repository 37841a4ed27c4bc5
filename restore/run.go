package restore

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/files"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/pg"
	bundleres "github.com/kubectl-assisted/kubectl-assisted/bundle/resources"
	"github.com/kubectl-assisted/kubectl-assisted/restore/auth"
	"github.com/kubectl-assisted/kubectl-assisted/restore/journal"
	"github.com/kubectl-assisted/kubectl-assisted/restore/kubekeys"
	"github.com/kubectl-assisted/kubectl-assisted/restore/recreate"
	"github.com/kubectl-assisted/kubectl-assisted/restore/resources"
)

// runner is the state of one Run.
type runner struct {
	o   Options
	log *slog.Logger
	now func() time.Time
	res *Result
	// imageURLsReset counts the infra-envs marked for a new ISO URL (beforeCommit).
	imageURLsReset int64
	b              *bundle.Bundle
	ownB           bool
	progress       *phaseProgress

	recreate  bool
	manifests *recreate.Manifests
	node0     []*unstructured.Unstructured // node 0's exported CRs, for re-creating
	plan      *resources.Plan
	targets   kubekeys.Targets
	writeKeys bool // targets go into the rows in the database transaction

	cs     kubernetes.Interface
	client resources.Client

	j *journal.Journal
	// jdb keeps the journal and receipt in the target database when there is
	// no cluster.
	jdb *journal.DB
	// dbResume: an earlier run of this bundle started loading the database,
	// so whatever the target holds is its own (see checkDatabase).
	dbResume    bool
	filesResume bool
	creds       *auth.PostgresCredentials
	// staged is the files layer extracted into the staging directory before
	// the database phase (nil until then, and once moved into place).
	staged         *files.Summary
	createdDataDir bool // stageFiles created the data directory
	// nodeZeroKey is node 0's local-auth key pair when the bundle carries it
	// (its resources hold node 0's assisted-servicelocal-auth Secret).
	nodeZeroKey *auth.KeyPair
	// analyzed is closed when the ANALYZE started after the database commit
	// ends; it runs beside the files, auth and resources phases.
	analyzed chan struct{}
}

// waitAnalyze waits for the background ANALYZE, if one runs.
func (r *runner) waitAnalyze() {
	if r.analyzed != nil {
		<-r.analyzed
		r.analyzed = nil
	}
}

// Run restores a bundle into cluster 0; see the package documentation for the
// order and guarantees. It returns a Result also with an error, so the caller
// can report what was done (Result.Resources for a report.json).
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	r := &runner{o: o, log: o.Logger, now: o.Now, res: &Result{Namespace: o.Namespace, DryRun: o.DryRun}}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.res.DryRun == "" || o.Diff {
		r.res.DryRun = resources.DryRunNone
		if o.Diff {
			r.res.DryRun = resources.DryRunClient
		}
	}
	defer r.close()
	steps := []func(context.Context) error{r.openBundle, r.verifyBundle, r.prepareResources, r.connect, r.checkTargets}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return r.res, err
		}
	}
	if o.dryRun() {
		return r.res, r.dryRun(ctx)
	}
	return r.res, r.runPhases(ctx)
}

func (r *runner) close() {
	if r.ownB && r.b != nil {
		_ = r.b.Close()
	}
}

func (r *runner) event(e Event) {
	if r.o.OnEvent != nil {
		r.o.OnEvent(e)
	}
}

func (r *runner) warn(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.res.Warnings = append(r.res.Warnings, msg)
	r.log.Warn(msg)
	r.event(Event{Type: EventWarning, Message: msg})
}

func (r *runner) check(msg string) {
	r.log.Info("check passed", "check", msg)
	r.event(Event{Type: EventCheck, Message: msg})
}

func (r *runner) openBundle(ctx context.Context) error {
	r.progress = &phaseProgress{p: r.o.Progress, prefix: "verify "}
	if r.o.Bundle != nil {
		r.b = r.o.Bundle
	} else {
		b, err := bundle.Open(ctx, r.o.Ref, bundle.OpenOptions{Registry: r.o.Registry, Identities: r.o.Identities, Progress: r.progress,
			Signers: r.o.Signers, AllowUnsigned: r.o.AllowUnsigned})
		if err != nil {
			return fmt.Errorf("open bundle %s: %w", r.o.Ref, err)
		}
		r.b, r.ownB = b, true
	}
	r.res.Reference, r.res.Digest = r.b.Reference, r.b.Descriptor.Digest.String()
	r.res.ClusterIDs = r.b.Metadata.Source.ClusterIDs
	return nil
}

// verifyBundle reads every layer to its end before anything is written:
// digests, decryption and strict decoding (the database stream included).
func (r *runner) verifyBundle(ctx context.Context) error {
	for kind, skip := range map[bundle.LayerKind]bool{bundle.LayerDatabase: r.o.SkipDatabase, bundle.LayerFiles: r.o.SkipFiles} {
		if _, ok := r.b.Layer(kind); !ok && !skip {
			return &BundleContentError{Err: fmt.Errorf("the bundle has no %s layer: skip the %s phase explicitly to restore the rest; nothing was changed", kind, kind)}
		}
	}
	rep, err := r.b.Verify(ctx, bundle.VerifyOptions{Database: func(ctx context.Context, rd io.Reader) error {
		_, err := pg.Verify(ctx, rd)
		return err
	}, PreserveSpecialBits: r.o.PreserveSpecialBits})
	r.progress.set("")
	if err != nil {
		return fmt.Errorf("verify bundle %s: %w; nothing was changed", r.res.Reference, err)
	}
	for _, l := range rep.Layers {
		if layer, _ := r.b.Layer(l.Kind); !layer.Known {
			r.warn("the bundle's %s layer is of a newer format minor version: verified, not restored", l.Kind)
			continue
		}
		if !l.Decoded {
			return &bundle.DecryptError{Layer: l.Kind, Err: bundle.ErrNoIdentity}
		}
	}
	r.check(fmt.Sprintf("bundle %s verified: %d layer(s) decrypted and decoded", r.res.Digest, len(rep.Layers)))
	return nil
}

// prepareResources decides between the bundle's CRs and re-created ones and
// plans the former (planning needs no cluster).
func (r *runner) prepareResources(ctx context.Context) error {
	_, hasLayer := r.b.Layer(bundle.LayerResources)
	meta := r.b.Metadata.Resources
	from := ""
	if hasLayer && meta != nil {
		from = meta.From
	}
	fromManifests := hasLayer && from == bundleres.FromManifestsName
	// A layer that only carries node 0's local-auth key (a node 0 without
	// API or manifests, its key read from the service's env file).
	keyOnly := hasLayer && from == bundleres.FromLocalAuthName
	exported := hasLayer && !fromManifests && !keyOnly
	r.recreate = r.o.RecreateResources || r.o.Diff || !exported
	if r.o.Diff && exported && !r.o.RecreateResources {
		r.warn("the bundle holds exported resources; the drift check compares re-created ones")
	}
	// Install manifests and the key-only layer: node 0's key comes out first,
	// whatever is done with the resources (the auth phase needs it).
	var layerManifests []*unstructured.Unstructured
	if fromManifests || keyOnly {
		objs, err := r.b.Resources(ctx)
		if err != nil {
			return fmt.Errorf("read the resources layer: %w", err)
		}
		if layerManifests, err = r.takeNodeZeroKey(objs); err != nil {
			return err
		}
	}
	if r.o.SkipResources {
		r.res.ResourcesFrom = ResourcesSkipped
		if r.recreate || r.o.SkipDatabase {
			return nil
		}
		// The exported CRs are not applied now, but their kube keys still go
		// into the rows: whoever applies the CRs later needs them there first.
		objs, err := r.b.Resources(ctx)
		if err != nil {
			return fmt.Errorf("read the resources layer: %w", err)
		}
		if objs, err = r.takeNodeZeroKey(objs); err != nil {
			return err
		}
		mapNS := resources.Options{NamespaceMapping: r.o.NamespaceMapping}.MapNamespace
		if r.targets, err = kubekeys.FromObjects(objs, mapNS); err != nil {
			return fmt.Errorf("kube keys: %w; nothing was changed", err)
		}
		r.writeKeys = true
		return nil
	}
	if !r.recreate {
		r.res.ResourcesFrom = ResourcesFromBundle
		objs, err := r.b.Resources(ctx)
		if err != nil {
			return fmt.Errorf("read the resources layer: %w", err)
		}
		if objs, err = r.takeNodeZeroKey(objs); err != nil {
			return err
		}
		r.plan, err = resources.NewPlan(objs, r.planOptions(r.o.NamespaceMapping, r.o.ClusterZero))
		if err != nil {
			return fmt.Errorf("plan the resources: %w; nothing was changed", err)
		}
		if r.targets, err = kubekeys.FromObjects(objs, r.plan.Options().MapNamespace); err != nil {
			return fmt.Errorf("kube keys: %w; nothing was changed", err)
		}
		r.writeKeys = true
		return nil
	}
	r.res.ResourcesFrom = ResourcesFromRecreated
	if exported {
		objs, err := r.b.Resources(ctx)
		if err != nil {
			return fmt.Errorf("read the resources layer: %w", err)
		}
		if _, err := r.takeNodeZeroKey(objs); err != nil {
			return err
		}
	}
	if r.o.SkipDatabase {
		return &OptionsError{Err: errors.New("re-created resources are built from the restored database: the database phase cannot be skipped")}
	}
	switch {
	case r.o.ManifestsDir != "":
		m, err := recreate.LoadManifests(os.DirFS(r.o.ManifestsDir))
		if err != nil {
			return fmt.Errorf("install manifests %s: %w", r.o.ManifestsDir, err)
		}
		r.manifests = m
	case fromManifests:
		var err error
		if r.manifests, err = recreate.ManifestsFromObjects(layerManifests); err != nil {
			return fmt.Errorf("the bundle's install manifests: %w", err)
		}
	}
	if exported {
		// Node 0 had an API: its exported CRs say what the rows cannot
		// (holdInstallation, selectors, labels, hostnames, namespaces).
		objs, err := r.b.Resources(ctx)
		if err != nil {
			return fmt.Errorf("read the resources layer: %w", err)
		}
		r.node0 = objs
	}
	return nil
}

// takeNodeZeroKey removes node 0's local-auth Secret from the exported objects
// (it is never applied as it is) and keeps its key pair for the auth phase.
func (r *runner) takeNodeZeroKey(objs []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	out := objs[:0:0]
	for _, o := range objs {
		if o == nil || o.GetKind() != "Secret" || o.GetAPIVersion() != "v1" || o.GetName() != auth.LocalAuthSecretName {
			out = append(out, o)
			continue
		}
		data, _, _ := unstructured.NestedStringMap(o.Object, "data")
		raw := map[string][]byte{}
		for _, k := range []string{auth.KeyECPrivate, auth.KeyECPublic} {
			b, err := base64.StdEncoding.DecodeString(data[k])
			if err != nil {
				return nil, &BundleContentError{Err: fmt.Errorf("node 0's Secret %s/%s: %s is not base64; nothing was changed", o.GetNamespace(), o.GetName(), k)}
			}
			raw[k] = b
		}
		k, err := auth.KeyPairFromSecret(raw)
		if err != nil {
			return nil, &BundleContentError{Err: fmt.Errorf("node 0's Secret %s/%s: %w; nothing was changed", o.GetNamespace(), o.GetName(), err)}
		}
		if r.nodeZeroKey != nil && !r.nodeZeroKey.Equal(k) {
			return nil, &BundleContentError{Err: fmt.Errorf("the bundle holds two different %s Secrets: which key node 0's tokens use is unknown; nothing was changed", auth.LocalAuthSecretName)}
		}
		r.nodeZeroKey = k
	}
	if r.nodeZeroKey != nil {
		r.check("the bundle carries node 0's local-auth key: node 0's tokens will verify on cluster 0")
	}
	return out, nil
}

func (r *runner) planOptions(mapping map[string]string, clusterZero *resources.ObjectKey) resources.Options {
	return resources.Options{
		NamespaceMapping: mapping, ServiceURL: r.o.ServiceURL, ImageServiceURL: r.o.ImageServiceURL, BundleDigest: r.res.Digest,
		Existing: r.o.Existing, DryRun: r.o.DryRun, ClusterZero: clusterZero, Logger: r.log,
	}
}

// connect builds the clients of cluster 0 and proves it answers.
func (r *runner) connect(context.Context) error {
	if r.o.Config == nil {
		return nil
	}
	cs, err := kubernetes.NewForConfig(r.o.Config)
	if err != nil {
		return fmt.Errorf("cluster 0: %w", err)
	}
	dyn, err := dynamic.NewForConfig(r.o.Config)
	if err != nil {
		return fmt.Errorf("cluster 0: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(r.o.Config)
	if err != nil {
		return fmt.Errorf("cluster 0: %w", err)
	}
	if _, err := disc.ServerVersion(); err != nil {
		var status apierrors.APIStatus
		if errors.As(err, &status) {
			return fmt.Errorf("cluster 0 answered but refused the restore: %w; nothing was changed", err)
		}
		return &resources.UnreachableError{Err: err}
	}
	r.cs, r.client = cs, resources.Client{Dynamic: dyn, Discovery: disc}
	return nil
}

// checkTargets runs every check that needs the targets, still without a write:
// an earlier run's journal, the database, the data directory and the objects
// on cluster 0.
func (r *runner) checkTargets(ctx context.Context) error {
	if r.o.TargetDB != "" {
		if err := r.awaitDatabase(ctx); err != nil {
			return err
		}
	}
	if r.cs == nil && !r.o.dryRun() {
		r.jdb = &journal.DB{ConnString: r.o.TargetDB}
		r.res.Namespace = "" // nothing goes to a cluster
		_, err := r.jdb.Peek(ctx, r.res.Digest)
		switch {
		case errors.Is(err, journal.ErrNoJournal):
		case err != nil:
			return err
		default:
			j, err := r.jdb.Open(ctx, r.res.Digest, r.o.fingerprint(r.recreate))
			if err != nil {
				return err
			}
			r.j, r.res.Resumed = j, true
			_, r.dbResume = j.Record(PhaseDatabase)
			_, r.filesResume = j.Record(PhaseFiles)
		}
	}
	if r.cs != nil {
		_, err := journal.Peek(ctx, r.cs, r.o.Namespace, r.res.Digest)
		switch {
		case errors.Is(err, journal.ErrNoJournal):
		case err != nil:
			return err
		default:
			// Open reads the existing journal (no write) and checks that it
			// was written with the same options.
			j, err := journal.Open(ctx, r.cs, r.o.Namespace, r.res.Digest, r.o.fingerprint(r.recreate))
			if err != nil {
				return err
			}
			r.j, r.res.Resumed = j, true
			_, r.dbResume = j.Record(PhaseDatabase)
			_, r.filesResume = j.Record(PhaseFiles)
		}
	}
	if !r.o.SkipDatabase {
		if err := r.checkDatabase(ctx); err != nil {
			return err
		}
	}
	if !r.o.SkipFiles {
		if err := r.checkDataDir(); err != nil {
			return err
		}
	}
	if r.plan != nil && r.cs != nil {
		if err := r.checkResources(ctx, r.plan); err != nil {
			return err
		}
	}
	return nil
}

func (r *runner) checkResources(ctx context.Context, plan *resources.Plan) error {
	rep, err := resources.Check(ctx, r.client, plan)
	if err != nil {
		r.res.Resources = rep
		return fmt.Errorf("check the resources on cluster 0: %w", err)
	}
	r.check(fmt.Sprintf("cluster 0 serves every API the %d object(s) need; no conflicting object", len(plan.Objects())))
	return nil
}

// awaitDatabase waits up to DatabaseWait for the target database to accept
// connections, then checks its major against DatabaseMajor.
func (r *runner) awaitDatabase(ctx context.Context) error {
	waiting := false
	v, n, err := pg.AwaitServer(ctx, r.o.TargetDB, r.o.DatabaseWait, func(err error) {
		if !waiting {
			waiting = true
			r.log.Info("the target database does not accept connections yet; retrying", "for", r.o.DatabaseWait, "error", err)
		}
	})
	if err != nil {
		return fmt.Errorf("the target database: %w", err)
	}
	if r.o.DatabaseMajor != 0 {
		if n/10000 != r.o.DatabaseMajor {
			return fmt.Errorf("%w; nothing was changed", &pg.WrongMajorError{TargetVersion: v, Want: r.o.DatabaseMajor})
		}
		r.check(fmt.Sprintf("target database runs PostgreSQL %s, the major cluster 0 will run it with", v))
	}
	return nil
}

func (r *runner) checkDatabase(ctx context.Context) error {
	cfg, err := pg.ParseConnString(r.o.TargetDB)
	if err != nil {
		return &OptionsError{Err: fmt.Errorf("target database: %w", err)}
	}
	if cfg.Password != "" {
		r.creds = &auth.PostgresCredentials{Host: "localhost", Port: "5432", Name: cfg.Database, User: cfg.User, Password: cfg.Password}
	}
	err = pg.CheckTarget(ctx, r.o.TargetDB)
	switch {
	case err == nil:
		r.check("target database is empty")
	case errors.Is(err, pg.ErrTargetNotEmpty) && (r.o.Replace || r.o.Diff):
		r.check("target database is not empty; it will be replaced in the restore transaction")
	case errors.Is(err, pg.ErrTargetNotEmpty) && r.dbResume:
		r.check("target database holds what an earlier run of this bundle loaded; it is loaded again")
	case errors.Is(err, pg.ErrTargetNotEmpty):
		return &targetNotEmpty{err}
	default:
		return err
	}
	return r.checkServerVersion(ctx)
}

// checkServerVersion compares the target's PostgreSQL major with the bundle's
// source's. An older target must accept the bundle's schema, which is tried
// there in a transaction that is rolled back; if it refuses, the restore stops
// before any write.
func (r *runner) checkServerVersion(ctx context.Context) error {
	rc, err := r.b.Database(ctx)
	if err != nil {
		return err
	}
	defer rc.Close()
	vc, err := pg.CheckTargetVersion(ctx, r.o.TargetDB, rc)
	switch {
	case errors.Is(err, pg.ErrOlderTarget):
		return &olderTarget{err}
	case err != nil:
		return fmt.Errorf("check the target database's PostgreSQL version: %w", err)
	case vc.Older:
		r.warn("the target database runs PostgreSQL %s, older than node 0's PostgreSQL %s; it accepted the bundle's schema (tried in a transaction that was rolled back)",
			vc.TargetVersion, vc.SourceVersion)
	default:
		r.check(fmt.Sprintf("target database runs PostgreSQL %s; the bundle's source ran %s", vc.TargetVersion, vc.SourceVersion))
	}
	return nil
}

// olderTarget adds "nothing was changed" to pg's refusal of an older server.
type olderTarget struct{ err error }

func (e *olderTarget) Error() string { return e.err.Error() + "; nothing was changed" }
func (e *olderTarget) Unwrap() error { return e.err }

// targetNotEmpty adds "nothing was changed" and ErrTargetNotEmpty to pg's refusal.
type targetNotEmpty struct{ err error }

func (e *targetNotEmpty) Error() string        { return e.err.Error() + "; nothing was changed" }
func (e *targetNotEmpty) Unwrap() error        { return e.err }
func (e *targetNotEmpty) Is(target error) bool { return target == ErrTargetNotEmpty }

// dryRun checks the database without loading it (client), or loads it in a
// transaction that is rolled back (server, diff: kube keys, re-created
// objects and their drift checked inside it), then applies the resources as
// a dry run. Nothing is written.
func (r *runner) dryRun(ctx context.Context) error {
	if !r.o.SkipDatabase {
		if err := r.dryRunDatabase(ctx); err != nil {
			return err
		}
	}
	if r.o.Diff || r.plan == nil || r.cs == nil {
		return nil
	}
	rep, err := resources.Apply(ctx, r.client, r.plan)
	r.res.Resources = rep
	if err != nil {
		return fmt.Errorf("dry run of the resources: %w", err)
	}
	return nil
}

// objectsNamespace is the Namespace object re-created resources go into.
func namespaceObject(name string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetAPIVersion("v1")
	o.SetKind("Namespace")
	o.SetName(name)
	return o
}
