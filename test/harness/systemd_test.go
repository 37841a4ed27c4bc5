package harness

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSystemd_SharesLoopbackAndRunsUnits: the container's systemd runs a unit
// written before boot, and a process inside reaches a listener on the host's
// loopback (the harness's servers) and the other way round.
func TestSystemd_SharesLoopbackAndRunsUnits(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			fmt.Fprint(c, "hello from the host\n")
			c.Close()
		}
	}()
	s := StartSystemd(t, SystemdOptions{
		Files: map[string]File{"/etc/systemd/system/kat-hello.service": {Data: []byte(
			"[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/sh -c 'echo started by systemd > /run/kat-hello'\n[Install]\nWantedBy=multi-user.target\n")}},
		Enable: []string{"kat-hello.service"},
	})
	if r := s.MustExec(t, "cat", "/run/kat-hello"); strings.TrimSpace(r.Stdout) != "started by systemd" {
		t.Fatalf("the enabled unit did not run: %q", r.Stdout)
	}
	if r := s.MustExec(t, "cat", "/proc/1/comm"); strings.TrimSpace(r.Stdout) != "systemd" {
		t.Fatalf("PID 1 is %q", r.Stdout)
	}
	port := l.Addr().(*net.TCPAddr).Port
	r := s.MustExec(t, "bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && cat <&3", port))
	if !strings.Contains(r.Stdout, "hello from the host") {
		t.Fatalf("the host's loopback from inside: %q", r.Combined())
	}
}

// TestSystemd_ARebootWaitsOnlyForUnitsWithDefaultDependencies is the fact the
// at-reboot units rest on, under systemd 252 as PID 1: a oneshot unit whose
// ExecStop takes 3 s holds `systemctl reboot` for those 3 s with systemd's
// default dependencies (Conflicts= and Before=shutdown.target), and not at
// all with DefaultDependencies=no and Before=shutdown.target (the unit
// docs/examples shipped before migrate --at-reboot): that one is never
// stopped, its ExecStop never runs.
func TestSystemd_ARebootWaitsOnlyForUnitsWithDefaultDependencies(t *testing.T) {
	t.Parallel()
	const unit = `[Unit]
Description=kat hold
%s
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/true
ExecStop=/bin/sh -c 'echo hold-start; sleep 3; echo hold-end'
TimeoutStopSec=60
`
	for _, tc := range []struct {
		name, deps string
		holds      bool
	}{
		{"default dependencies", "", true},
		{"DefaultDependencies=no", "DefaultDependencies=no\nBefore=shutdown.target reboot.target\nAfter=network-online.target", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := StartSystemd(t, SystemdOptions{Files: map[string]File{
				"/etc/systemd/system/kat-hold.service": {Data: []byte(fmt.Sprintf(unit, tc.deps))}}})
			s.MustExec(t, "systemctl", "start", "kat-hold.service")
			asked := time.Now()
			s.Reboot(t)
			code, at := s.Wait(t, 90*time.Second)
			if code != 133 {
				t.Fatalf("systemd-nspawn exited %d, want 133 (rebooted):\n%s", code, tail(s.Console(), 20))
			}
			var start, end time.Time
			for _, e := range s.Journal(t) {
				switch {
				case e.Message == "hold-start":
					start = e.Time
				case e.Message == "hold-end":
					end = e.Time
				}
			}
			held := at.Sub(asked)
			if tc.holds {
				// The journal stamps a line when journald reads it, which
				// can be a few ms after the echo: the 3 s sleep showed once as
				// 2.998 s between the two lines (the reboot itself 3.245 s).
				if start.IsZero() || end.Sub(start) < 2900*time.Millisecond || held < 3*time.Second {
					t.Fatalf("ExecStop ran %v..%v, the reboot took %s: want it held for the 3 s ExecStop\n%s", start, end, held, s.JournalText(t, "-n", "40"))
				}
			} else if !start.IsZero() {
				t.Fatalf("with DefaultDependencies=no the ExecStop ran (%v): the reboot waited for it", start)
			}
			t.Logf("%s: reboot asked, systemd-nspawn ended %s later", tc.name, held.Round(time.Millisecond))
		})
	}
}

// TestSystemd_ContainersHaveCgroupsOfTheirOwn: two containers up at once,
// restarting a unit of the same name over and over, each in a cgroup of its
// own under kat-nspawn in every hierarchy systemd tracks processes in (not
// the hierarchies' roots, where both systemds would build the same
// system.slice/kat-loop.service and remove it under each other: status
// 219/CGROUP); no restart fails, each unit's process is under its own
// container's cgroup, and the cgroups are gone after the test.
func TestSystemd_ContainersHaveCgroupsOfTheirOwn(t *testing.T) {
	t.Parallel()
	var dirs []string
	t.Run("two at once", func(t *testing.T) {
		unit := map[string]File{"/etc/systemd/system/kat-loop.service": {Data: []byte("[Unit]\nStartLimitIntervalSec=0\n[Service]\nExecStart=/bin/sleep infinity\n")}}
		boxes := []*Systemd{StartSystemd(t, SystemdOptions{Files: unit}), StartSystemd(t, SystemdOptions{Files: unit})}
		seen := map[string]string{} // cgroup: the container whose PID 1 is in it
		for _, s := range boxes {
			cgs := hostCgroups(t, s.leader)
			if len(cgs) == 0 {
				t.Fatalf("%s's PID 1: no name=systemd or cgroup2 line in /proc/%d/cgroup", s.Machine, s.leader)
			}
			for _, cg := range cgs {
				if other := seen[cg]; !strings.HasPrefix(cg, "/"+nspawnCgroupParent+"/") || (other != "" && other != s.Machine) {
					t.Fatalf("%s's PID 1 is in cgroup %q (all: %v; seen: %v), want one of its own under /%s", s.Machine, cg, cgs, seen, nspawnCgroupParent)
				}
				seen[cg] = s.Machine
			}
			dirs = append(dirs, s.cgroup.dirs...)
		}
		errs := make(chan string, 2*20)
		var wg sync.WaitGroup
		for _, s := range boxes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 20 {
					if r := s.exec(context.Background(), nil, "systemctl", "restart", "kat-loop.service"); r.ExitCode != 0 {
						errs <- s.Machine + ": " + r.Combined()
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Errorf("systemctl restart kat-loop.service failed in %s", e)
		}
		for _, s := range boxes {
			for _, d := range s.cgroup.dirs {
				b, err := os.ReadFile(filepath.Join(d, "payload", "system.slice", "kat-loop.service", "cgroup.procs"))
				if err != nil || len(strings.Fields(string(b))) != 1 {
					t.Errorf("%s: the unit's cgroup under the container's (%s): %q, %v; want its one process", s.Machine, d, b, err)
				}
			}
		}
	})
	if t.Failed() {
		return
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("cgroup %s still there after the test (%v)", d, err)
		}
	}
}

// hostCgroups are pid's cgroups in the hierarchies systemd may track
// processes in (name=systemd, the cgroup2 one), as the host sees them.
func hostCgroups(t *testing.T, pid int) []string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	var cgs []string
	for _, l := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			cgs = append(cgs, p)
		} else if i := strings.Index(l, ":name=systemd:"); i >= 0 {
			cgs = append(cgs, l[i+len(":name=systemd:"):])
		}
	}
	return cgs
}
