package migrate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kubectl-assisted/kubectl-assisted/restore"
	"github.com/kubectl-assisted/kubectl-assisted/restore/job"
)

// Step names, in order. A failing step is reported as a *StepError with its
// 1-based number.
const (
	StepPreflight  = "preflight"
	StepBundle     = "bundle"
	StepRestore    = "restore"
	StepWait       = "wait"
	StepService    = "service"
	StepSwitchover = "switchover"
)

// Steps are the step names in order.
var Steps = []string{StepPreflight, StepBundle, StepRestore, StepWait, StepService, StepSwitchover}

// StepNumber is the 1-based position of a step (0: not a step).
func StepNumber(step string) int {
	for i, s := range Steps {
		if s == step {
			return i + 1
		}
	}
	return 0
}

// skippedPrefix marks a step outcome that did nothing (state "skipped").
const skippedPrefix = "skipped: "

// step is one step of a migration: it returns what it did, in one line;
// a detail starting with "skipped: " records the step as skipped.
type step interface {
	name() string
	run(ctx context.Context, m *migration) (string, error)
}

// migration is the state of one Run (or Plan).
type migration struct {
	o      Options
	state  *State
	dryRun bool
	// operator is cluster 0's infrastructure operator (job mode; the
	// preflight finds it), databaseMajor its PostgreSQL major (0: unknown).
	operator      *job.Operator
	databaseMajor int
}

func (m *migration) event(e Event) {
	if m.o.OnEvent != nil {
		e.Total = len(Steps)
		m.o.OnEvent(e)
	}
}

func (m *migration) note(step, format string, args ...any) {
	m.event(Event{Type: EventNote, Step: step, Number: StepNumber(step), Detail: fmt.Sprintf(format, args...)})
}

func (m *migration) restoreEvent(e restore.Event) {
	m.event(Event{Type: EventRestore, Step: StepRestore, Number: StepNumber(StepRestore), Restore: &e})
}

func (m *migration) now() time.Time {
	if m.o.Now != nil {
		return m.o.Now().UTC()
	}
	return time.Now().UTC()
}

func newMigration(o Options) (*migration, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Timeout <= 0 {
		o.Timeout = 60 * time.Minute
	}
	if o.StateDir == "" {
		o.StateDir = DefaultStateDir()
	}
	if o.Target == "" && o.Config != nil {
		o.Target = o.Config.Host
	}
	var err error
	if o.Cluster == nil {
		if o.Cluster, err = NewCluster(o.Config); err != nil {
			return nil, fmt.Errorf("cluster 0: %w", err)
		}
	}
	if o.DB == nil {
		o.DB = PostgresDB{}
	}
	if o.Bundles == nil {
		o.Bundles = RegistryBundles{Registry: o.Registry}
	}
	if o.Restorer == nil {
		o.Restorer = InProcessRestorer{}
	}
	return &migration{o: o}, nil
}

func allSteps() []step {
	return []step{preflightStep{}, bundleStep{}, restoreStep{}, waitStep{}, serviceStep{}, switchoverStep{}}
}

// Run runs the steps that are not done yet, remembering each in the state
// directory, and returns what every step did. Rerun with the same options,
// it continues where the last run stopped; the preflight always runs again.
func Run(ctx context.Context, o Options) (*Result, error) {
	m, err := newMigration(o)
	if err != nil {
		return nil, err
	}
	o = m.o
	st, err := LoadState(o.StateDir, o.Ref.String(), o.Target, o.Namespace)
	if err != nil {
		return nil, &StepError{Step: StepPreflight, Number: 1, Err: err}
	}
	m.state = st
	res := &Result{Reference: o.Ref.String(), Namespace: o.Namespace, RestoreMode: o.RestoreMode(), StateDir: st.dir}
	for _, s := range allSteps() {
		name, n := s.name(), StepNumber(s.name())
		fail := func(err error) (*Result, error) { return res, &StepError{Step: name, Number: n, Err: err} }
		// Preflight always runs again: the world may have changed since.
		if name != StepPreflight && st.Done(name) {
			rec := st.Steps[name]
			m.event(Event{Type: EventStepSkipped, Step: name, Number: n, State: rec.State, Detail: rec.Detail})
			res.Steps = append(res.Steps, StepResult{Name: name, State: rec.State, Detail: rec.Detail,
				DurationSeconds: seconds(rec.FinishedAt.Sub(rec.StartedAt))})
			continue
		}
		sr, err := m.runStep(ctx, s)
		if err != nil {
			return fail(err)
		}
		res.Steps = append(res.Steps, sr)
	}
	res.Digest, res.ServiceURL, res.Watermark = st.Digest, o.ServiceURL, st.Watermark
	m.addKeys(res)
	return res, nil
}

// runStep runs one step, recording it in the state as running, then done,
// skipped or failed (the message without connection strings), and telling
// OnEvent.
func (m *migration) runStep(ctx context.Context, s step) (StepResult, error) {
	o, st := m.o, m.state
	name, n := s.name(), StepNumber(s.name())
	m.event(Event{Type: EventStepStart, Step: name, Number: n})
	start := m.now()
	st.Steps[name] = &StepState{State: StateRunning, StartedAt: start}
	if err := st.Save(); err != nil {
		return StepResult{}, fmt.Errorf("save state: %w", err)
	}
	detail, err := s.run(ctx, m)
	rec := st.Steps[name]
	if rec == nil { // the step reset itself (a failed restore Job)
		rec = &StepState{StartedAt: start}
		st.Steps[name] = rec
	}
	rec.FinishedAt = m.now()
	if err != nil {
		rec.State, rec.Detail = StateFailed, redactDSNs(err.Error(), o.SourceDB, o.TargetDB)
		if serr := st.Save(); serr != nil {
			err = errors.Join(err, fmt.Errorf("save state: %w", serr))
		}
		return StepResult{}, err
	}
	rec.State, rec.Detail = StateDone, detail
	if d, ok := strings.CutPrefix(detail, skippedPrefix); ok {
		rec.State, rec.Detail = StateSkipped, d
	}
	if err := st.Save(); err != nil {
		return StepResult{}, fmt.Errorf("save state: %w", err)
	}
	d := rec.FinishedAt.Sub(start)
	m.event(Event{Type: EventStepDone, Step: name, Number: n, State: rec.State, Detail: detail, Duration: d})
	return StepResult{Name: name, State: rec.State, Ran: true, Detail: rec.Detail, DurationSeconds: seconds(d)}, nil
}

// addKeys names the run's generated identity and signing key in res.
func (m *migration) addKeys(res *Result) {
	st := m.state
	if st.Recipient != "" {
		res.IdentityFile = st.IdentityPath()
	}
	if k, _, err := st.Signer(); err == nil {
		res.SignerFile, res.Signer = st.SignerPath(), k.Fingerprint
	}
}

// Plan is what a dry run found: the preflight's outcome and what each step
// would do.
type Plan struct {
	Reference   string   `json:"reference"`
	Namespace   string   `json:"namespace"`
	RestoreMode string   `json:"restoreMode"`
	Preflight   string   `json:"preflight"`
	Steps       []string `json:"steps"`
}

// DryRun runs the preflight checks with nothing forced (Force is ignored),
// writes no state, and says what a real run would do.
func DryRun(ctx context.Context, o Options) (*Plan, error) {
	o.Force = false
	m, err := newMigration(o)
	if err != nil {
		return nil, err
	}
	o = m.o
	m.state, m.dryRun = memoryState(o.StateDir), true
	detail, err := preflightStep{}.run(ctx, m)
	if err != nil {
		return nil, &StepError{Step: StepPreflight, Number: 1, Err: err}
	}
	restoreDo := "restore directly into the target database and " + o.TargetDataDir + " (in process)"
	if !o.Direct() {
		image := o.RestoreImage
		if image == "" {
			image = "this kubectl-assisted, pushed as an image beside the bundle"
		}
		restoreDo = fmt.Sprintf("apply a restore Job in %s running %s with PostgreSQL from %s (PVCs %s and %s as the AgentServiceConfig specifies them)", o.Namespace, image,
			m.sidecarImage(), o.AgentServiceConfig.DatabaseSize.String(), o.AgentServiceConfig.FilesystemSize.String())
	}
	keys := "a key pair generated for this run, kept in " + o.StateDir
	if len(o.Create.Recipients) > 0 {
		keys = fmt.Sprintf("%d given recipient(s)", len(o.Create.Recipients))
	} else if o.NoEncryption {
		keys = "no encryption"
	}
	var layers []string
	if o.Create.Database != nil {
		layers = append(layers, "database")
	}
	if o.Create.Files != nil {
		layers = append(layers, "files from "+o.Create.Files.Dir)
	}
	if o.Create.Resources != nil {
		layers = append(layers, "resources")
	}
	service := "skip: no AgentServiceConfig given"
	if a := o.AgentServiceConfig; a != nil {
		service = "create the AgentServiceConfig from " + a.Source + " once the receipt exists"
	}
	switchTo := "skip: no service URL given"
	if o.ServiceURL != "" {
		switchTo = "switch the assisted-installer-controller to " + o.ServiceURL
	}
	return &Plan{Reference: o.Ref.String(), Namespace: o.Namespace, RestoreMode: o.RestoreMode(), Preflight: detail, Steps: []string{
		"preflight: " + detail,
		"bundle: " + strings.Join(layers, ", ") + " to " + o.Ref.String() + ", encrypted to " + keys,
		"restore: " + restoreDo,
		"wait: for the receipt of the pushed digest (timeout " + o.Timeout.String() + ")",
		"service: " + service,
		"switchover: " + switchTo,
	}}, nil
}

func seconds(d time.Duration) float64 {
	return float64(d.Round(time.Millisecond)) / float64(time.Second)
}

// redactDSNs removes connection strings from a message kept in the state file.
func redactDSNs(msg string, dsns ...string) string {
	for _, d := range dsns {
		if d != "" {
			msg = strings.ReplaceAll(msg, d, "<connection string>")
		}
	}
	return msg
}
