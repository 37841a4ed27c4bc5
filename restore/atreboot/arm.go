package atreboot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kubectl-assisted/kubectl-assisted/restore/internal/atomicfile"
)

// UpstreamStopTimeouts are the installer's units' TimeoutStopSec where the
// unit is not loaded (openshift/installer data/data/agent/systemd/units/:
// assisted-service.service(.template) and assisted-service-db.service 300,
// assisted-service-pod.service 70).
var UpstreamStopTimeouts = map[string]time.Duration{
	ServiceUnit: 300 * time.Second,
	DBUnit:      300 * time.Second,
	PodUnit:     70 * time.Second,
}

// budgetMargin is left between the last armed stop and reboot.target's job
// timeout, for the units that stop after the database.
const budgetMargin = time.Minute

// Budget is how long the reboot can be held: reboot.target forces the reboot
// when its job times out (JobTimeoutSec=30min, JobTimeoutAction=reboot-force
// in systemd's units/reboot.target), and the installer's units and the
// capture stop within that time too.
type Budget struct {
	// RebootJobTimeout is reboot.target's JobTimeoutUSec (0: none).
	RebootJobTimeout time.Duration `json:"rebootJobTimeout"`
	// Stops are the stop timeouts counted against it, by unit.
	Stops map[string]time.Duration `json:"stops"`
	// HardLimit is the longest the hold unit may hold the reboot.
	HardLimit time.Duration `json:"hardLimit"`
}

// Explain says how the budget was reached, in one line.
func (b Budget) Explain() string {
	if b.RebootJobTimeout == 0 {
		return fmt.Sprintf("reboot.target has no job timeout here; the hold is bounded at %s", b.HardLimit)
	}
	var parts []string
	for _, u := range slices.Sorted(mapKeys(b.Stops)) {
		parts = append(parts, fmt.Sprintf("%s %s", u, b.Stops[u]))
	}
	return fmt.Sprintf("reboot.target forces the reboot after %s; minus the stop timeouts (%s) and %s of margin: at most %s",
		b.RebootJobTimeout, strings.Join(parts, ", "), budgetMargin, b.HardLimit)
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// ComputeBudget reads reboot.target's job timeout and the installer's units'
// stop timeouts (their upstream values where they are not loaded) and says
// how long the hold unit may hold the reboot.
func ComputeBudget(ctx context.Context, sd Systemd, capture time.Duration, timeout time.Duration) (Budget, error) {
	b := Budget{Stops: map[string]time.Duration{}}
	p, err := showProps(ctx, sd, "reboot.target", "JobTimeoutUSec")
	if err != nil {
		return b, err
	}
	job, inf, err := parseTimespan(p["JobTimeoutUSec"])
	if err != nil {
		return b, fmt.Errorf("reboot.target JobTimeoutUSec: %w", err)
	}
	if !inf {
		b.RebootJobTimeout = job
	}
	for _, u := range []string{ServiceUnit, DBUnit, PodUnit} {
		p, err := showProps(ctx, sd, u, "LoadState", "TimeoutStopUSec")
		if err != nil {
			return b, err
		}
		d := UpstreamStopTimeouts[u]
		if p["LoadState"] == "loaded" {
			v, inf, err := parseTimespan(p["TimeoutStopUSec"])
			if err == nil && !inf {
				d = v
			}
		}
		b.Stops[u] = d
	}
	if capture > 0 {
		b.Stops[CaptureUnit] = capture
	}
	if b.RebootJobTimeout == 0 {
		b.HardLimit = timeout + 15*time.Minute
		return b, nil
	}
	b.HardLimit = b.RebootJobTimeout - budgetMargin
	for _, d := range b.Stops {
		b.HardLimit -= d
	}
	return b, nil
}

// ArmOptions configure Arm.
type ArmOptions struct {
	// Spec is what to arm; Arm fills in HardLimit, Units, Created, Version
	// and ArmedAt.
	Spec Spec
	// SpecDir and UnitDir default to DefaultSpecDir and DefaultUnitDir.
	SpecDir, UnitDir string
	// Root prefixes the node-0 markers and /run/systemd/system (tests); "".
	Root    string
	Systemd Systemd
	Now     func() time.Time
	// DryRun checks and renders, and writes nothing.
	DryRun bool
}

// ArmResult is what Arm did.
type ArmResult struct {
	// Changed is false when everything was already armed exactly so.
	Changed  bool     `json:"changed"`
	Written  []string `json:"written,omitempty"`
	Kept     []string `json:"kept,omitempty"`
	Removed  []string `json:"removed,omitempty"`
	Units    []string `json:"units"`
	SpecPath string   `json:"spec"`
	Budget   Budget   `json:"budget"`
	// NodeZero is the marker that made this host node 0.
	NodeZero string `json:"nodeZero"`
	// UnitFiles are the rendered units (what a dry run would write).
	UnitFiles []Unit `json:"-"`
	Spec      *Spec  `json:"-"`
}

// NotNodeZeroError means the host lacks the node-0 marker.
type NotNodeZeroError struct{ Markers []string }

func (e *NotNodeZeroError) Error() string {
	return fmt.Sprintf("this host is not node 0: none of %s exists (the agent-based installer writes it on node 0 only)", strings.Join(e.Markers, ", "))
}

// ErrNoSystemd means systemd is not the service manager here.
var ErrNoSystemd = errors.New("systemd is not running as the service manager here (no /run/systemd/system)")

// BudgetError means the hold would outlast what reboot.target allows.
type BudgetError struct {
	Timeout time.Duration
	Budget  Budget
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("the reboot cannot wait %s: %s", e.Timeout, e.Budget.Explain())
}

// NodeZero returns the node-0 marker present under root, or a *NotNodeZeroError.
func NodeZero(root string) (string, error) {
	for _, m := range NodeZeroMarkers {
		if _, err := os.Stat(filepath.Join(root, m)); err == nil {
			return m, nil
		}
	}
	return "", &NotNodeZeroError{Markers: NodeZeroMarkers}
}

func (o *ArmOptions) defaults() {
	if o.SpecDir == "" {
		o.SpecDir = DefaultSpecDir
	}
	if o.UnitDir == "" {
		o.UnitDir = DefaultUnitDir
	}
	if o.Systemd == nil {
		o.Systemd = Systemctl{}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Arm checks that this host is node 0 under systemd and that the hold fits
// in reboot.target's budget, writes the spec (0600) and the units, reloads
// systemd when a unit changed and starts the units. Arming again with the
// same spec changes nothing (Changed false).
func Arm(ctx context.Context, o ArmOptions) (*ArmResult, error) {
	o.defaults()
	marker, err := NodeZero(o.Root)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(filepath.Join(o.Root, "/run/systemd/system")); err != nil || !fi.IsDir() {
		return nil, ErrNoSystemd
	}
	spec := o.Spec
	if spec.Mode != ModeAuto {
		spec.CaptureDir = ""
	}
	capture := time.Duration(0)
	if spec.CaptureDir != "" {
		capture = spec.CaptureTimeout.D()
	}
	budget, err := ComputeBudget(ctx, o.Systemd, capture, spec.Timeout.D())
	if err != nil {
		return nil, err
	}
	if spec.Timeout.D() <= 0 || spec.Timeout.D() > budget.HardLimit {
		return nil, &BudgetError{Timeout: spec.Timeout.D(), Budget: budget}
	}
	spec.HardLimit = Duration(budget.HardLimit)
	spec.Version = SpecVersion
	specPath := filepath.Join(o.SpecDir, SpecFile)
	units, err := Units(&spec, specPath)
	if err != nil {
		return nil, err
	}
	res := &ArmResult{SpecPath: specPath, Budget: budget, NodeZero: marker, UnitFiles: units}
	spec.Units = nil
	for _, u := range units {
		spec.Units = append(spec.Units, filepath.Join(o.UnitDir, u.Name))
		res.Units = append(res.Units, u.Name)
	}
	if o.DryRun {
		res.Spec = &spec
		return res, nil
	}

	// An earlier arming: keep its time and the directories it created, so
	// that the same spec is the same bytes.
	old, oerr := LoadSpec(specPath)
	if oerr != nil && !errors.Is(oerr, ErrNotArmed) {
		old = nil // damaged: rewritten below
	}
	spec.ArmedAt = o.Now().UTC().Truncate(time.Second)
	if old != nil {
		spec.Created = old.Created
		probe := spec
		probe.ArmedAt = old.ArmedAt
		if a, _ := specBytes(&probe); bytes.Equal(a, mustSpecBytes(old)) {
			spec.ArmedAt = old.ArmedAt
		}
	} else {
		created, err := mkdirAllRecord(o.SpecDir, 0o700)
		if err != nil {
			return nil, fmt.Errorf("spec directory: %w", err)
		}
		spec.Created = created
	}
	if err := os.Chmod(o.SpecDir, 0o700); err != nil {
		return nil, err
	}
	data, err := specBytes(&spec)
	if err != nil {
		return nil, err
	}
	// The spec first: a unit started below reads it.
	changedUnits := false
	if wrote, err := writeIfChanged(specPath, data, 0o600); err != nil {
		return nil, fmt.Errorf("write %s: %w", specPath, err)
	} else if wrote {
		res.Written = append(res.Written, specPath)
	} else {
		res.Kept = append(res.Kept, specPath)
	}
	for _, u := range units {
		p := filepath.Join(o.UnitDir, u.Name)
		wrote, err := writeIfChanged(p, []byte(u.Text), 0o644)
		if err != nil {
			return nil, fmt.Errorf("write %s: %w", p, err)
		}
		if wrote {
			res.Written = append(res.Written, p)
			changedUnits = true
		} else {
			res.Kept = append(res.Kept, p)
		}
	}
	// A unit an earlier arming wrote and this one does not (the capture,
	// after auto then manual): the new spec is written, so its ExecStop
	// does nothing now.
	var stale []string
	if old != nil {
		for _, p := range old.Units {
			if !slices.Contains(spec.Units, p) {
				stale = append(stale, filepath.Base(p))
				if _, err := o.Systemd.Systemctl(ctx, "stop", "--", filepath.Base(p)); err != nil {
					return nil, err
				}
				if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return nil, err
				}
				res.Removed = append(res.Removed, p)
				changedUnits = true
			}
		}
	}
	if changedUnits {
		if _, err := o.Systemd.Systemctl(ctx, "daemon-reload"); err != nil {
			return nil, err
		}
	}
	if len(stale) > 0 {
		_, _ = o.Systemd.Systemctl(ctx, append([]string{"reset-failed", "--"}, stale...)...)
	}
	// Starting an active unit does nothing; ExecStart only checks the spec.
	if _, err := o.Systemd.Systemctl(ctx, append([]string{"start", "--"}, res.Units...)...); err != nil {
		return nil, err
	}
	for _, u := range res.Units {
		p, err := showProps(ctx, o.Systemd, u, "ActiveState", "ConditionResult")
		if err != nil {
			return nil, err
		}
		if p["ConditionResult"] == "no" {
			return nil, &NotNodeZeroError{Markers: NodeZeroMarkers}
		}
		if p["ActiveState"] != "active" {
			return nil, fmt.Errorf("%s is %s after starting it: see journalctl -u %s", u, p["ActiveState"], u)
		}
	}
	res.Changed = len(res.Written) > 0 || len(res.Removed) > 0
	res.Spec = &spec
	return res, nil
}

func mustSpecBytes(s *Spec) []byte {
	b, _ := specBytes(s)
	return b
}

// writeIfChanged writes data to path unless it already holds exactly data
// with mode; it reports whether it wrote.
func writeIfChanged(path string, data []byte, mode fs.FileMode) (bool, error) {
	if cur, err := os.ReadFile(path); err == nil && bytes.Equal(cur, data) {
		if fi, err := os.Stat(path); err == nil && fi.Mode().Perm() == mode {
			return false, nil
		}
	}
	return true, atomicfile.Write(path, data, mode)
}

// mkdirAllRecord makes dir and its missing parents with mode and returns
// those it made, outermost first.
func mkdirAllRecord(dir string, mode fs.FileMode) ([]string, error) {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		missing = append([]string{d}, missing...)
		if filepath.Dir(d) == d {
			break
		}
	}
	for _, d := range missing {
		if err := os.Mkdir(d, mode); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
	}
	return missing, nil
}

// DisarmOptions configure Disarm.
type DisarmOptions struct {
	SpecDir, UnitDir string
	Systemd          Systemd
}

// DisarmResult is what Disarm removed.
type DisarmResult struct {
	// WasArmed is false when there was nothing to remove.
	WasArmed bool     `json:"wasArmed"`
	Stopped  []string `json:"stopped,omitempty"`
	Removed  []string `json:"removed,omitempty"`
}

// Disarm removes what Arm wrote and nothing else: the spec first (so that
// the units' ExecStop, run by the stop that follows, does nothing), then the
// units, stopped and removed, and the directories Arm made when they are
// empty. Disarming what is not armed does nothing.
func Disarm(ctx context.Context, o DisarmOptions) (*DisarmResult, error) {
	ao := ArmOptions{SpecDir: o.SpecDir, UnitDir: o.UnitDir, Systemd: o.Systemd}
	ao.defaults()
	specPath := filepath.Join(ao.SpecDir, SpecFile)
	res := &DisarmResult{}
	spec, err := LoadSpec(specPath)
	switch {
	case errors.Is(err, ErrNotArmed):
	case err != nil:
		// Damaged: the fixed names below still find the units.
		res.WasArmed = true
	default:
		res.WasArmed = true
	}
	unitPaths := []string{filepath.Join(ao.UnitDir, HoldUnit), filepath.Join(ao.UnitDir, CaptureUnit)}
	if spec != nil {
		for _, p := range spec.Units {
			if !slices.Contains(unitPaths, p) {
				unitPaths = append(unitPaths, p)
			}
		}
	}
	var present []string
	for _, p := range unitPaths {
		if _, err := os.Stat(p); err == nil {
			present = append(present, p)
		}
	}
	if _, err := os.Stat(specPath); err == nil {
		if err := os.Remove(specPath); err != nil {
			return nil, err
		}
		res.Removed = append(res.Removed, specPath)
		res.WasArmed = true
	}
	if len(present) > 0 {
		res.WasArmed = true
		var names []string
		for _, p := range present {
			names = append(names, filepath.Base(p))
		}
		// The capture first, as at a reboot; with the spec gone neither
		// ExecStop does anything.
		slices.Reverse(names)
		if _, err := ao.Systemd.Systemctl(ctx, append([]string{"stop", "--"}, names...)...); err != nil {
			return nil, err
		}
		res.Stopped = names
		for _, p := range present {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
			res.Removed = append(res.Removed, p)
		}
		if _, err := ao.Systemd.Systemctl(ctx, "daemon-reload"); err != nil {
			return nil, err
		}
		// Forget a failed state systemd may keep for a removed unit.
		_, _ = ao.Systemd.Systemctl(ctx, append([]string{"reset-failed", "--"}, names...)...)
	}
	if spec != nil {
		created := slices.Clone(spec.Created)
		slices.Reverse(created) // innermost first
		for _, d := range created {
			if err := os.Remove(d); err == nil {
				res.Removed = append(res.Removed, d)
			}
		}
	}
	return res, nil
}
