package plugin

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"filippo.io/age"
)

// Steps of migrate, in order. A failing step exits with clierr.ExitStepBase +
// its number (1-based), so scripts can tell where a run stopped.
const (
	stepPreflight  = "preflight"
	stepBundle     = "bundle"
	stepRestore    = "restore"
	stepWait       = "wait"
	stepService    = "service"
	stepSwitchover = "switchover"
)

var migrateSteps = []string{stepPreflight, stepBundle, stepRestore, stepWait, stepService, stepSwitchover}

// stepNumber is the 1-based position of a step.
func stepNumber(step string) int {
	for i, s := range migrateSteps {
		if s == step {
			return i + 1
		}
	}
	return 0
}

// migrateState is what a run remembers between invocations, in
// STATE_DIR/<run>/state.json (0600). It never holds secrets: the generated age
// identity sits beside it in identity.txt (0600), and nothing else.
type migrateState struct {
	// Run identifies the migration: a hash of --to, the target API server and
	// the target namespace. A rerun with other values starts a new state.
	Run       string `json:"run"`
	To        string `json:"to"`
	Target    string `json:"target"`
	Namespace string `json:"namespace"`
	// Digest and Pinned (REF@DIGEST) name the bundle once pushed.
	Digest string `json:"digest,omitempty"`
	Pinned string `json:"pinned,omitempty"`
	// Recipient is the public key of the generated identity (none when the
	// user gave keys).
	Recipient  string                `json:"recipient,omitempty"`
	ClusterIDs []string              `json:"clusterIDs,omitempty"`
	Watermark  *writeWatermark       `json:"watermark,omitempty"`
	Steps      map[string]*stepState `json:"steps"`
	UpdatedAt  time.Time             `json:"updatedAt"`

	dir string
}

// stepState records one step of a run.
type stepState struct {
	State      string    `json:"state"` // done | skipped | failed | running
	Detail     string    `json:"detail,omitempty"`
	StartedAt  time.Time `json:"startedAt"`
	FinishedAt time.Time `json:"finishedAt,omitempty"`
}

// writeWatermark records where the source database was when a --live dump
// took its snapshot.
type writeWatermark struct {
	WALLSN string    `json:"walLSN"`
	Time   time.Time `json:"time"`
	// Sessions is how many other client sessions were connected to the source
	// database when the dump started.
	Sessions int `json:"sessions"`
}

// defaultStateDir is $XDG_STATE_HOME/kubectl-assisted/migrate, else
// ~/.local/state/kubectl-assisted/migrate.
func defaultStateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "kubectl-assisted", "migrate")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "state", "kubectl-assisted", "migrate")
	}
	return filepath.Join(os.TempDir(), "kubectl-assisted-migrate")
}

func runID(to, target, ns string) string {
	h := sha256.Sum256([]byte(to + "\x00" + target + "\x00" + ns))
	return hex.EncodeToString(h[:6])
}

// loadState reads the run's state, or starts an empty one.
func loadState(root, to, target, ns string) (*migrateState, error) {
	id := runID(to, target, ns)
	dir := filepath.Join(root, id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	s := &migrateState{Run: id, To: to, Target: target, Namespace: ns, Steps: map[string]*stepState{}, dir: dir}
	data, err := os.ReadFile(filepath.Join(dir, "state.json"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return s, nil
	case err != nil:
		return nil, fmt.Errorf("read state: %w", err)
	}
	if err := json.Unmarshal(data, s); err != nil {
		return nil, fmt.Errorf("state file %s is damaged (%v): remove it to start the migration over", filepath.Join(dir, "state.json"), err)
	}
	if s.Steps == nil {
		s.Steps = map[string]*stepState{}
	}
	s.dir = dir
	return s, nil
}

// save writes the state atomically (temp file, fsync, rename).
func (s *migrateState) save() error {
	s.UpdatedAt = time.Now().UTC()
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(s.dir, ".state-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(s.dir, "state.json"))
}

func (s *migrateState) done(step string) bool {
	st := s.Steps[step]
	return st != nil && (st.State == "done" || st.State == "skipped")
}

// reset forgets a step and every step after it.
func (s *migrateState) resetFrom(step string) {
	n := stepNumber(step)
	for _, name := range migrateSteps[n-1:] {
		delete(s.Steps, name)
	}
}

// identityPath is where a generated age identity lives.
func (s *migrateState) identityPath() string { return filepath.Join(s.dir, "identity.txt") }

// ensureIdentity returns the run's generated age identity, creating it (0600)
// on the first run. It stays on node 0.
func (s *migrateState) ensureIdentity() (*age.X25519Identity, error) {
	data, err := os.ReadFile(s.identityPath())
	if err == nil {
		ids, err := age.ParseIdentities(bytesReader(data))
		if err != nil || len(ids) != 1 {
			return nil, fmt.Errorf("generated identity %s is damaged: remove the state directory %s to start over", s.identityPath(), s.dir)
		}
		id, ok := ids[0].(*age.X25519Identity)
		if !ok {
			return nil, fmt.Errorf("generated identity %s is not an X25519 identity", s.identityPath())
		}
		return id, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(s.identityPath(), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if _, err := fmt.Fprintf(f, "# generated by kubectl-assisted migrate for %s\n%s\n", s.To, id); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return id, nil
}
