package migrate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/oci"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/selfimage"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/sign"
	"github.com/kubectl-assisted/kubectl-assisted/restore"
	"github.com/kubectl-assisted/kubectl-assisted/restore/auth"
	"github.com/kubectl-assisted/kubectl-assisted/restore/job"
	"github.com/kubectl-assisted/kubectl-assisted/restore/journal"
	"github.com/kubectl-assisted/kubectl-assisted/restore/switchover"
)

// Options configure Run and Plan. Only resolved values: the CLI turns flags,
// env files and kubeconfigs into these.
type Options struct {
	// Ref is where the bundle goes (a tag, not a digest).
	Ref      oci.Reference
	Registry oci.RegistryOptions
	// Create is the bundle's content: Database, Files, Resources, and
	// Recipients when the user gave keys (none: a key pair is generated for
	// the run, unless NoEncryption). Run adds the signing key, the generated
	// recipient and the spool.
	Create bundle.CreateOptions
	// SpoolDir keeps the files layer's ciphertext of an encrypted push to a
	// registry until the push succeeds; empty streams.
	SpoolDir     string
	NoEncryption bool
	// IdentityFile decrypts the bundle when the user gave Recipients.
	IdentityFile string
	// SourceDB is node 0's database (a pgx connection string), "" when the
	// bundle has no database layer.
	SourceDB string
	// Live dumps while the source is still written to, recording a Watermark.
	Live bool

	// Config reaches cluster 0; Target names its API server (the state is
	// per Ref, Target and Namespace).
	Config    *rest.Config
	Target    string
	Namespace string
	// TargetDB and TargetDataDir (both or neither) restore directly from
	// node 0; without them a restore Job runs on cluster 0.
	TargetDB      string
	TargetDataDir string
	ServiceURL    string
	// ImageServiceURL is cluster 0's image service: BareMetalHost image URLs
	// on node 0's image service move onto it (restore --image-service-url).
	ImageServiceURL string
	// NamespaceMapping maps node-0 namespaces to cluster-0 ones.
	NamespaceMapping map[string]string
	// RestoreImage is the restore Job's image; empty: the running binary,
	// pushed beside the bundle (bundle/selfimage).
	RestoreImage string
	// DatabaseImage overrides the operator's DATABASE_IMAGE for the Job's
	// PostgreSQL; it must be of the same major.
	DatabaseImage string
	// Version is this binary's version, recorded on the restore image.
	Version string
	// AgentServiceConfig is created once the receipt exists (nil: skipped);
	// its storage requests size the Job's PVCs.
	AgentServiceConfig *AgentServiceConfig
	// Force scales a running assisted-service on cluster 0 to zero.
	Force bool
	// Timeout bounds the wait for the receipt (60m when zero).
	Timeout time.Duration

	ControllerNamespace string
	CACertPath          string
	// ClusterID is cluster 0's id in the bundle (default: its only cluster).
	ClusterID string

	// StateDir holds one directory per run (DefaultStateDir).
	StateDir string
	// Creator is recorded in the bundle's metadata.
	Creator string

	// OnEvent is told what happens; nil is silent. It never receives secrets.
	OnEvent func(Event)
	// NewProgress returns byte progress for the bundle and restore steps and
	// a function that finishes drawing it; nil is silent.
	NewProgress func() (bundle.Progress, func())

	// The outside world; nil uses the real one (PostgreSQL through pgx,
	// cluster 0 through Config, the registry, restore.Run).
	DB       DB
	Cluster  Cluster
	Bundles  Bundles
	Restorer Restorer
	Now      func() time.Time
}

// Direct reports whether the restore runs from node 0 into TargetDB and
// TargetDataDir (else a Job on cluster 0).
func (o *Options) Direct() bool { return o.TargetDB != "" }

// RestoreMode is "direct" or "job".
func (o *Options) RestoreMode() string {
	if o.Direct() {
		return "direct"
	}
	return "job"
}

// Validate checks what Run needs; errors are *OptionsError.
func (o *Options) Validate() error {
	bad := func(format string, args ...any) error { return &OptionsError{Err: fmt.Errorf(format, args...)} }
	switch {
	case o.Ref.String() == "" || o.Ref.Digest != "":
		return bad("the bundle reference must name a tag, not a digest: migrate pushes a new bundle")
	case (o.TargetDB == "") != (o.TargetDataDir == ""):
		return bad("the target database and data directory go together (restore directly); give neither to restore with a Job")
	case !o.Direct() && o.AgentServiceConfig == nil:
		return bad("the restore Job sizes its PVCs from the AgentServiceConfig: give one")
	case o.NoEncryption && len(o.Create.Recipients) > 0:
		return bad("no encryption and recipients contradict each other")
	case o.NoEncryption && o.Ref.Remote():
		return bad("refusing to push an unencrypted bundle to a registry: it holds pull secrets, the kubeadmin password and Secret data")
	case len(o.Create.Recipients) > 0 && o.IdentityFile == "":
		return bad("with given recipients the restore needs the matching identity file")
	case o.Create.Database == nil && o.Create.Files == nil && o.Create.Resources == nil:
		return bad("nothing to migrate: no database, files or resources")
	case o.Namespace == "":
		return bad("no namespace on cluster 0")
	case o.Config == nil && o.Cluster == nil:
		return bad("no cluster 0 configuration")
	}
	return nil
}

// OptionsError means the options contradict each other; nothing ran.
type OptionsError struct{ Err error }

func (e *OptionsError) Error() string { return e.Err.Error() }
func (e *OptionsError) Unwrap() error { return e.Err }

// StepError is the failure of one step; Number is its 1-based position
// (the CLI exits with 10 + Number).
type StepError struct {
	Step   string
	Number int
	Err    error
}

func (e *StepError) Error() string {
	return fmt.Sprintf("step %d/%d %s: %v", e.Number, len(Steps), e.Step, e.Err)
}
func (e *StepError) Unwrap() error { return e.Err }

// HintError is a refusal that says what to do next.
type HintError struct {
	Err  error
	Hint string
}

func (e *HintError) Error() string { return e.Err.Error() }
func (e *HintError) Unwrap() error { return e.Err }

func hinted(err error, hint string) error { return &HintError{Err: err, Hint: hint} }

// Hint is the next step an error names, or "".
func Hint(err error) string {
	var h *HintError
	if errors.As(err, &h) {
		return h.Hint
	}
	return ""
}

// EventType says what an Event reports.
type EventType string

// Event types.
const (
	EventStepStart   EventType = "start"   // a step starts
	EventStepDone    EventType = "done"    // a step finished (done or skipped)
	EventStepSkipped EventType = "already" // an earlier run finished this step
	EventNote        EventType = "note"    // something a step noticed
	EventRestore     EventType = "restore" // an event of the in-process restore
)

// Event is one thing that happened during Run, for progress output.
type Event struct {
	Type   EventType
	Step   string
	Number int
	Total  int
	// Detail is what the step did (Done, Skipped), or the note.
	Detail   string
	State    string
	Duration time.Duration
	Restore  *restore.Event
}

// Result is what Run did; its JSON form is the CLI's -o json result.
type Result struct {
	Reference    string `json:"reference"`
	Digest       string `json:"digest"`
	Namespace    string `json:"namespace"`
	RestoreMode  string `json:"restoreMode"`
	ServiceURL   string `json:"serviceURL,omitempty"`
	IdentityFile string `json:"identityFile,omitempty"`
	// SignerFile is the public key the bundle was signed and checked with;
	// Signer its fingerprint.
	SignerFile string       `json:"signerFile,omitempty"`
	Signer     string       `json:"signer,omitempty"`
	Watermark  *Watermark   `json:"watermark,omitempty"`
	Steps      []StepResult `json:"steps"`
	StateDir   string       `json:"stateDir"`
}

// StepResult is one step in the result.
type StepResult struct {
	Name            string  `json:"name"`
	State           string  `json:"state"`
	Ran             bool    `json:"ran"`
	Detail          string  `json:"detail,omitempty"`
	DurationSeconds float64 `json:"durationSeconds"`
}

// DB is what migrate asks PostgreSQL (node 0's database, and cluster 0's in
// direct mode). dsn is a pgx connection string.
type DB interface {
	// OtherSessions counts the client sessions on the database other than
	// the caller's and says who they are (application@address).
	OtherSessions(ctx context.Context, dsn string) (int, string, error)
	// Watermark reads the WAL position, the time and the other sessions.
	Watermark(ctx context.Context, dsn string) (*Watermark, error)
	// ClusterIDs lists the clusters that are not soft-deleted.
	ClusterIDs(ctx context.Context, dsn string) ([]string, error)
	// ServerVersion is the server's server_version and server_version_num.
	ServerVersion(ctx context.Context, dsn string) (string, int, error)
}

// Cluster is what migrate does on cluster 0.
type Cluster interface {
	// Reachable proves the API server answers.
	Reachable(ctx context.Context) error
	// AgentServiceConfig returns the annotations of the AgentServiceConfig,
	// or found=false.
	AgentServiceConfig(ctx context.Context) (annotations map[string]string, found bool, err error)
	// ServiceReplicas returns the replicas of the assisted-service Deployment
	// in ns (nil: unset), or found=false.
	ServiceReplicas(ctx context.Context, ns string) (replicas *int32, found bool, err error)
	// ScaleServiceToZero scales that Deployment to zero.
	ScaleServiceToZero(ctx context.Context, ns string) error
	// PVCSize returns a PVC's storage request, or found=false.
	PVCSize(ctx context.Context, ns, name string) (q resource.Quantity, found bool, err error)
	// Apply server-side applies objects in order, marking them with digest
	// (provenance annotation) unless it is empty.
	Apply(ctx context.Context, objs []runtime.Object, digest string) error
	// EnsurePostgresSecret creates the operator's postgres Secret in ns
	// unless one exists.
	EnsurePostgresSecret(ctx context.Context, ns string) error
	// LocalAuthKey returns cluster 0's local-auth key pair in ns, creating
	// the Secret if needed.
	LocalAuthKey(ctx context.Context, ns string) (*auth.KeyPair, error)
	// WaitReceipt waits for the receipt of digest in ns until ctx ends.
	WaitReceipt(ctx context.Context, ns, digest string, onStatus func(string)) (*journal.Receipt, error)
	// Switchover points the assisted-installer-controller at the service.
	Switchover(ctx context.Context, o switchover.Options) (*switchover.Result, error)
	// Operator finds cluster 0's infrastructure operator (the Deployment
	// that sets DATABASE_IMAGE) that will deploy assisted-service into ns;
	// an *OperatorError when it runs elsewhere or there is none (then
	// with the Operator's OpenShift field set all the same).
	Operator(ctx context.Context, ns string) (*job.Operator, error)
	// JobState reports the state of the Job ns/name: whether it exists,
	// has completed or has failed, and why (its condition's message and the
	// restore container's last words).
	JobState(ctx context.Context, ns, name string) (JobState, error)
	// DeleteJob deletes the Job ns/name (its pods go with it) and returns
	// once it is gone.
	DeleteJob(ctx context.Context, ns, name string) error
}

// JobState is the state of the restore Job.
type JobState struct {
	Found, Complete, Failed bool
	// Reason says why it failed.
	Reason string
}

// OperatorError says why the infrastructure operator was not found.
type OperatorError struct {
	// NotFound: no operator anywhere (not one in another namespace).
	NotFound bool
	Err      error
}

func (e *OperatorError) Error() string { return e.Err.Error() }
func (e *OperatorError) Unwrap() error { return e.Err }

// Bundles reaches the registry.
type Bundles interface {
	// Check opens the bundle at ref and checks its signature by signer.
	Check(ctx context.Context, ref string, signer sign.Key) error
	// Create writes the bundle to ref.
	Create(ctx context.Context, ref string, o bundle.CreateOptions) (*bundle.Result, error)
	// PushRestoreImage stores the running binary as an image beside the
	// bundle pinned (REPO@DIGEST) and returns it.
	PushRestoreImage(ctx context.Context, pinned, version string) (*selfimage.Image, error)
}

// Restorer runs a restore (restore.Run).
type Restorer interface {
	Restore(ctx context.Context, o restore.Options) (*restore.Result, error)
}
