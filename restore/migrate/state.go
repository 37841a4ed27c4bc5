package migrate

import (
	"bytes"
	"crypto"
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

	"github.com/kubectl-assisted/kubectl-assisted/bundle/sign"
	"github.com/kubectl-assisted/kubectl-assisted/restore/internal/atomicfile"
)

// Step states in the state file.
const (
	StateDone    = "done"
	StateSkipped = "skipped"
	StateFailed  = "failed"
	StateRunning = "running"
)

// State is what a run remembers between invocations, in
// STATE_DIR/<run>/state.json (0600). It never holds secrets: the generated
// age identity and signing key sit beside it in their own 0600 files.
type State struct {
	// Run identifies the migration: a hash of the bundle reference, the
	// target API server and the target namespace. A rerun with other values
	// starts a new state.
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
	Watermark  *Watermark            `json:"watermark,omitempty"`
	Steps      map[string]*StepState `json:"steps"`
	UpdatedAt  time.Time             `json:"updatedAt"`

	dir string
}

// StepState records one step of a run.
type StepState struct {
	State      string    `json:"state"` // done | skipped | failed | running
	Detail     string    `json:"detail,omitempty"`
	StartedAt  time.Time `json:"startedAt"`
	FinishedAt time.Time `json:"finishedAt,omitempty"`
}

// Watermark records where the source database was when a live dump took its
// snapshot.
type Watermark struct {
	WALLSN string    `json:"walLSN"`
	Time   time.Time `json:"time"`
	// Sessions is how many other client sessions were connected to the
	// source database when the dump started.
	Sessions int `json:"sessions"`
}

// DefaultStateDir is $XDG_STATE_HOME/kubectl-assisted/migrate, else
// ~/.local/state/kubectl-assisted/migrate.
func DefaultStateDir() string {
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

// LoadState reads the run's state under root, or starts an empty one (and
// its 0700 directory).
func LoadState(root, to, target, ns string) (*State, error) {
	id := runID(to, target, ns)
	dir := filepath.Join(root, id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	s := &State{Run: id, To: to, Target: target, Namespace: ns, Steps: map[string]*StepState{}, dir: dir}
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
		s.Steps = map[string]*StepState{}
	}
	s.dir = dir
	return s, nil
}

// memoryState is the state of a dry run: nothing is ever written.
func memoryState(root string) *State {
	return &State{Steps: map[string]*StepState{}, dir: root}
}

// Dir is the run's directory.
func (s *State) Dir() string { return s.dir }

// Save writes the state atomically (temp file, fsync, rename).
func (s *State) Save() error {
	s.UpdatedAt = time.Now().UTC()
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(s.dir, "state.json"), append(data, '\n'), 0o600)
}

// Done reports whether step finished (done or skipped) in this or an earlier run.
func (s *State) Done(step string) bool {
	st := s.Steps[step]
	return st != nil && (st.State == StateDone || st.State == StateSkipped)
}

// ResetFrom forgets a step and every step after it.
func (s *State) ResetFrom(step string) {
	n := StepNumber(step)
	if n == 0 {
		return
	}
	for _, name := range Steps[n-1:] {
		delete(s.Steps, name)
	}
}

// IdentityPath is where a generated age identity lives.
func (s *State) IdentityPath() string { return filepath.Join(s.dir, "identity.txt") }

// SigningKeyPath and SignerPath are where the run's generated signing key
// pair lives: the private key stays on node 0, the public key goes to the
// restore.
func (s *State) SigningKeyPath() string { return filepath.Join(s.dir, "signing.key") }

// SignerPath is the public half of SigningKeyPath.
func (s *State) SignerPath() string { return filepath.Join(s.dir, "signing.pub") }

// EnsureIdentity returns the run's generated age identity, creating it
// (0600) on the first run. It stays on node 0.
func (s *State) EnsureIdentity() (*age.X25519Identity, error) {
	data, err := os.ReadFile(s.IdentityPath())
	if err == nil {
		ids, err := age.ParseIdentities(bytes.NewReader(data))
		if err != nil || len(ids) != 1 {
			return nil, fmt.Errorf("generated identity %s is damaged: remove the state directory %s to start over", s.IdentityPath(), s.dir)
		}
		id, ok := ids[0].(*age.X25519Identity)
		if !ok {
			return nil, fmt.Errorf("generated identity %s is not an X25519 identity", s.IdentityPath())
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
	if err := atomicfile.Create(s.IdentityPath(), []byte(fmt.Sprintf("# generated by kubectl-assisted migrate for %s\n%s\n", s.To, id)), 0o600); err != nil {
		return nil, err
	}
	return id, nil
}

// EnsureSigningKey returns the run's ed25519 signing key, creating the pair
// (private 0600, public 0644) on the first run. A damaged key is an error,
// never silently replaced.
func (s *State) EnsureSigningKey() (crypto.Signer, error) {
	data, err := os.ReadFile(s.SigningKeyPath())
	if err == nil {
		k, perr := sign.ParsePrivateKey(data)
		if perr != nil {
			return nil, fmt.Errorf("generated signing key %s is damaged: remove the state directory %s to start over", s.SigningKeyPath(), s.dir)
		}
		if _, err := os.Stat(s.SignerPath()); err != nil {
			if err := s.writeSigner(k); err != nil {
				return nil, err
			}
		}
		return k, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	privPEM, _, err := sign.GenerateKey()
	if err != nil {
		return nil, err
	}
	if err := atomicfile.Create(s.SigningKeyPath(), privPEM, 0o600); err != nil {
		return nil, err
	}
	k, err := sign.ParsePrivateKey(privPEM)
	if err != nil {
		return nil, err
	}
	return k, s.writeSigner(k)
}

func (s *State) writeSigner(k crypto.Signer) error {
	pub, err := sign.MarshalPublicKey(k.Public())
	if err != nil {
		return err
	}
	return atomicfile.Write(s.SignerPath(), pub, 0o644)
}

// Signer returns the run's trusted key (the public half of the generated
// signing key) and its PEM text.
func (s *State) Signer() (sign.Key, string, error) {
	data, err := os.ReadFile(s.SignerPath())
	if err != nil {
		return sign.Key{}, "", fmt.Errorf("the run's signing public key: %w", err)
	}
	pub, err := sign.ParsePublicKey(data)
	if err != nil {
		return sign.Key{}, "", fmt.Errorf("the run's signing public key %s: %w", s.SignerPath(), err)
	}
	k, err := sign.NewKey(pub)
	return k, string(data), err
}
