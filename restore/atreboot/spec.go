package atreboot

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// Mode is what the armed units do at the reboot.
type Mode string

// Modes.
const (
	// ModeAuto runs the migration at the reboot and holds the reboot until
	// cluster 0 holds its receipt.
	ModeAuto Mode = "auto"
	// ModeManual only holds the reboot until cluster 0 holds the receipt of
	// the bundle the user migrated by hand (the same migration's state).
	ModeManual Mode = "manual"
)

// ParseMode reads --at-reboot's value.
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case ModeAuto, ModeManual:
		return Mode(s), nil
	}
	return "", fmt.Errorf("--at-reboot=%s: give auto (migrate at the reboot) or manual (only hold the reboot)", s)
}

// Fixed names and places on node 0.
const (
	// HoldUnit is the unit whose ExecStop runs (or, manual, awaits) the
	// migration at the reboot.
	HoldUnit = "kubectl-assisted-at-reboot.service"
	// CaptureUnit copies the service's file storage before the service
	// stops (auto mode with a data directory).
	CaptureUnit = "kubectl-assisted-at-reboot-capture.service"
	// DefaultSpecDir holds the spec (0700 directory, 0600 file).
	DefaultSpecDir = "/etc/kubectl-assisted/at-reboot"
	// SpecFile is the spec's name in the spec directory.
	SpecFile = "armed.json"
	// DefaultUnitDir is where the units go.
	DefaultUnitDir = "/etc/systemd/system"
	// RecordFile is the record's name in the migration's state directory.
	RecordFile = "at-reboot-record.json"
	// RecordConfigMap is the record on cluster 0, in the migration's namespace.
	RecordConfigMap = "kubectl-assisted-at-reboot"
)

// NodeZeroMarkers are the files the agent-based installer writes on node 0
// only (set-node-zero.sh, run by node-zero.service): /etc/assisted/node0 in
// current releases, /etc/assisted-service/node0 in the first ones
// (openshift/installer data/data/agent/systemd/units/assisted-service-pod.service,
// ConditionPathExists=; commits 155f9d2a and 0bfaa1df).
var NodeZeroMarkers = []string{"/etc/assisted/node0", "/etc/assisted-service/node0"}

// The installer's units on node 0, which the armed units are ordered against.
const (
	ServiceUnit = "assisted-service.service"
	DBUnit      = "assisted-service-db.service"
	PodUnit     = "assisted-service-pod.service"
)

// Spec is what is armed, written 0600 by Arm and read by the units' commands
// at the reboot. Args may hold secrets (a database URL with its password):
// they stay in this file, never in a unit's text or a command line.
type Spec struct {
	Version int       `json:"version"`
	Mode    Mode      `json:"mode"`
	ArmedAt time.Time `json:"armedAt"`
	// Binary is the kubectl-assisted the units run (an absolute path).
	Binary string `json:"binary"`
	// Args are migrate's flags, paths absolute, without --data-dir (the
	// hold adds the captured copy, or DataDir).
	Args []string `json:"args"`
	// The migration's identity: its state lives in StateDir under these.
	Ref       string `json:"ref"`
	Target    string `json:"target"`
	Namespace string `json:"namespace"`
	StateDir  string `json:"stateDir"`
	// Kubeconfig and Context reach cluster 0 (for the record ConfigMap and
	// the manual hold).
	Kubeconfig string `json:"kubeconfig"`
	Context    string `json:"context,omitempty"`
	// DataDir is node 0's file storage; CaptureDir is where the capture unit
	// copies it before the service stops ("" without a capture).
	DataDir    string   `json:"dataDir,omitempty"`
	CaptureDir string   `json:"captureDir,omitempty"`
	Exclude    []string `json:"exclude,omitempty"`
	// ExtraMounts are other local paths the migration reads or writes at
	// the reboot (the spool, cluster 0's storage in direct mode, key files):
	// the hold unit keeps their mounts until it ends.
	ExtraMounts []string `json:"extraMounts,omitempty"`
	// Timeout is how long the reboot waits for the migration to complete;
	// HardLimit how long it waits at most, for the bundle to be in the
	// registry (the hold unit's TimeoutStopSec).
	Timeout   Duration `json:"timeout"`
	HardLimit Duration `json:"hardLimit"`
	// CaptureTimeout bounds the capture unit's stop.
	CaptureTimeout Duration `json:"captureTimeout,omitempty"`
	// Units are the unit files Arm wrote; Created the directories it made
	// (Disarm removes both, and nothing else).
	Units   []string `json:"units"`
	Created []string `json:"created,omitempty"`
}

// SpecVersion is the spec format this build writes and reads.
const SpecVersion = 1

// Duration is a time.Duration that reads and writes as "1m30s".
type Duration time.Duration

// MarshalJSON writes the duration as text.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads "1m30s".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// D is the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// ErrNotArmed means there is no spec: nothing is armed (or it was disarmed).
var ErrNotArmed = errors.New("not armed")

// LoadSpec reads the spec at path; ErrNotArmed when there is none.
func LoadSpec(path string) (*Spec, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotArmed
	}
	if err != nil {
		return nil, err
	}
	var s Spec
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("armed spec %s is damaged (%v): disarm (migrate --disarm) and arm again", path, err)
	}
	if s.Version != SpecVersion {
		return nil, fmt.Errorf("armed spec %s has format version %d, this kubectl-assisted reads %d: arm again with this build", path, s.Version, SpecVersion)
	}
	if _, err := ParseMode(string(s.Mode)); err != nil {
		return nil, fmt.Errorf("armed spec %s: %w", path, err)
	}
	return &s, nil
}

// specBytes is the spec as written.
func specBytes(s *Spec) ([]byte, error) {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
