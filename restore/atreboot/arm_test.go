package atreboot

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeSystemd answers systemctl like systemd 252 does for the calls Arm and
// Disarm make, and records them.
type fakeSystemd struct {
	calls []string
	props map[string]map[string]string // unit -> property -> value
	fail  map[string]error             // first word of a call -> error
}

func newFakeSystemd() *fakeSystemd {
	return &fakeSystemd{props: map[string]map[string]string{
		// systemd's units/reboot.target: JobTimeoutSec=30min.
		"reboot.target": {"JobTimeoutUSec": "30min"},
		ServiceUnit:     {"LoadState": "loaded", "TimeoutStopUSec": "5min"},
		DBUnit:          {"LoadState": "loaded", "TimeoutStopUSec": "5min"},
		PodUnit:         {"LoadState": "loaded", "TimeoutStopUSec": "1min 10s"},
		HoldUnit:        {"ActiveState": "active", "ConditionResult": "yes"},
		CaptureUnit:     {"ActiveState": "active", "ConditionResult": "yes"},
	}}
}

func (f *fakeSystemd) Systemctl(_ context.Context, args ...string) (string, error) {
	f.calls = append(f.calls, strings.Join(args, " "))
	if err := f.fail[args[0]]; err != nil {
		return "", err
	}
	if args[0] != "show" {
		return "", nil
	}
	unit := args[len(args)-1]
	var b strings.Builder
	for i := 1; i < len(args)-2; i += 2 {
		p := args[i+1]
		v, ok := f.props[unit][p]
		if !ok && p == "LoadState" {
			v = "not-found"
		}
		fmt.Fprintf(&b, "%s=%s\n", p, v)
	}
	return b.String(), nil
}

func (f *fakeSystemd) count(prefix string) int {
	n := 0
	for _, c := range f.calls {
		if strings.HasPrefix(c, prefix) {
			n++
		}
	}
	return n
}

// node0 is a fake node 0's root: the marker, /run/systemd/system, an /etc
// with files of its own.
func node0(t *testing.T, marker bool) (root string, o ArmOptions) {
	t.Helper()
	root = t.TempDir()
	for _, d := range []string{"run/systemd/system", "etc/systemd/system", "etc/assisted"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "etc/systemd/system/assisted-service.service"), []byte("[Unit]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if marker {
		if err := os.WriteFile(filepath.Join(root, "etc/assisted/node0"), []byte("BOOTSTRAP_HOST_MAC=52:54:00:aa:bb:cc\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := testSpec(ModeAuto)
	s.HardLimit = 0
	return root, ArmOptions{Spec: *s, Root: root, SpecDir: filepath.Join(root, "etc/kubectl-assisted/at-reboot"),
		UnitDir: filepath.Join(root, "etc/systemd/system"), Systemd: newFakeSystemd(),
		Now: func() time.Time { return time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC) }}
}

// tree describes every path under root: mode and content digest.
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		desc := fi.Mode().String()
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" %x", sha256.Sum256(data))
		}
		rel, _ := filepath.Rel(root, p)
		out[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestArm_WritesStartsAndIsIdempotent(t *testing.T) {
	root, o := node0(t, true)
	sd := o.Systemd.(*fakeSystemd)
	before := tree(t, root)
	res, err := Arm(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	// 30min - (5min + 5min + 1min10s + 5min capture) - 1min margin.
	if want := 12*time.Minute + 50*time.Second; res.Budget.HardLimit != want || res.Spec.HardLimit.D() != want {
		t.Fatalf("hard limit %s, want %s (%s)", res.Budget.HardLimit, want, res.Budget.Explain())
	}
	if !res.Changed || res.NodeZero != "/etc/assisted/node0" || len(res.Units) != 2 {
		t.Fatalf("result %+v", res)
	}
	specPath := filepath.Join(o.SpecDir, SpecFile)
	for p, mode := range map[string]fs.FileMode{specPath: 0o600, o.SpecDir: 0o700 | fs.ModeDir,
		filepath.Join(o.UnitDir, HoldUnit): 0o644, filepath.Join(o.UnitDir, CaptureUnit): 0o644} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode() != mode {
			t.Errorf("%s: %v %v, want mode %v", p, fi, err, mode)
		}
	}
	spec, err := LoadSpec(specPath)
	if err != nil || spec.Mode != ModeAuto || len(spec.Args) != 3 || len(spec.Created) != 2 {
		t.Fatalf("spec %+v %v", spec, err)
	}
	if sd.count("daemon-reload") != 1 || sd.count("start -- "+HoldUnit+" "+CaptureUnit) != 1 {
		t.Fatalf("systemctl calls %v", sd.calls)
	}

	// Again, later, the same: nothing written, no reload, the start is a no-op.
	o.Now = func() time.Time { return time.Date(2026, 12, 5, 11, 0, 0, 0, time.UTC) }
	mid := tree(t, root)
	again, err := Arm(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if again.Changed || len(again.Written) != 0 || sd.count("daemon-reload") != 1 {
		t.Fatalf("second arming changed something: %+v, calls %v", again, sd.calls)
	}
	if after := tree(t, root); fmt.Sprint(after) != fmt.Sprint(mid) {
		t.Fatal("second arming changed files")
	}

	// Manual now: the capture unit goes, stopped first.
	o.Spec.Mode = ModeManual
	man, err := Arm(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !man.Changed || len(man.Removed) != 1 || sd.count("stop -- "+CaptureUnit) != 1 || sd.count("daemon-reload") != 2 {
		t.Fatalf("auto -> manual: %+v, calls %v", man, sd.calls)
	}
	if _, err := os.Stat(filepath.Join(o.UnitDir, CaptureUnit)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("the capture unit stayed")
	}

	// Disarm: exactly the state before arming.
	dres, err := Disarm(context.Background(), DisarmOptions{SpecDir: o.SpecDir, UnitDir: o.UnitDir, Systemd: sd})
	if err != nil || !dres.WasArmed {
		t.Fatalf("disarm: %+v %v", dres, err)
	}
	if after := tree(t, root); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("after disarm:\n%v\nbefore arming:\n%v", after, before)
	}
	if sd.count("stop -- "+HoldUnit) != 1 || sd.count("daemon-reload") != 3 {
		t.Fatalf("disarm calls %v", sd.calls)
	}
	// Disarming again: nothing to do.
	if dres, err := Disarm(context.Background(), DisarmOptions{SpecDir: o.SpecDir, UnitDir: o.UnitDir, Systemd: sd}); err != nil || dres.WasArmed || len(dres.Removed) != 0 {
		t.Fatalf("second disarm %+v %v", dres, err)
	}
}

func TestArm_RefusesBeforeWritingAnything(t *testing.T) {
	t.Run("not node 0", func(t *testing.T) {
		root, o := node0(t, false)
		before := tree(t, root)
		_, err := Arm(context.Background(), o)
		var nz *NotNodeZeroError
		if !errors.As(err, &nz) {
			t.Fatalf("got %v", err)
		}
		if fmt.Sprint(tree(t, root)) != fmt.Sprint(before) || len(o.Systemd.(*fakeSystemd).calls) != 0 {
			t.Fatal("wrote or called systemctl")
		}
	})
	t.Run("no systemd", func(t *testing.T) {
		root, o := node0(t, true)
		if err := os.RemoveAll(filepath.Join(root, "run/systemd")); err != nil {
			t.Fatal(err)
		}
		if _, err := Arm(context.Background(), o); !errors.Is(err, ErrNoSystemd) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("timeout beyond reboot.target's", func(t *testing.T) {
		root, o := node0(t, true)
		before := tree(t, root)
		o.Spec.Timeout = Duration(13 * time.Minute)
		_, err := Arm(context.Background(), o)
		var be *BudgetError
		if !errors.As(err, &be) || !strings.Contains(err.Error(), "reboot.target forces the reboot after 30m0s") {
			t.Fatalf("got %v", err)
		}
		if fmt.Sprint(tree(t, root)) != fmt.Sprint(before) {
			t.Fatal("wrote files")
		}
	})
	t.Run("installer units not loaded: upstream stop timeouts", func(t *testing.T) {
		_, o := node0(t, true)
		sd := o.Systemd.(*fakeSystemd)
		for _, u := range []string{ServiceUnit, DBUnit, PodUnit} {
			delete(sd.props, u)
		}
		o.Spec.CaptureDir = ""
		o.DryRun = true
		res, err := Arm(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		if want := 30*time.Minute - 300*time.Second - 300*time.Second - 70*time.Second - time.Minute; res.Budget.HardLimit != want {
			t.Fatalf("hard limit %s, want %s", res.Budget.HardLimit, want)
		}
		if _, err := os.Stat(o.SpecDir); !errors.Is(err, fs.ErrNotExist) || sd.count("start") != 0 {
			t.Fatal("a dry run wrote or started something")
		}
	})
	t.Run("condition fails", func(t *testing.T) {
		_, o := node0(t, true)
		o.Systemd.(*fakeSystemd).props[HoldUnit]["ConditionResult"] = "no"
		var nz *NotNodeZeroError
		if _, err := Arm(context.Background(), o); !errors.As(err, &nz) {
			t.Fatalf("got %v", err)
		}
	})
}
