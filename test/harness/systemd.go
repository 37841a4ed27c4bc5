package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A Debian root booted by systemd-nspawn with systemd as PID 1, for units
// that must really run: ordering, the shutdown transaction, what a reboot
// waits for. The roots are made once by test/tools/install.sh systemd
// (debootstrap, cached by version); every container boots a copy of its own
// (cp -a), so that what one test writes never reaches another.
//
// The container shares the host's network (no --private-network): loopback
// is the host's, so kube-apiserver, registries and PostgreSQL servers of the
// harness are reachable from inside on 127.0.0.1, and a server inside is
// reachable from the tests. systemd-nspawn runs with --register=no
// --keep-unit because the host has no systemd of its own; `systemctl reboot`
// inside ends it with exit status 133 once the shutdown transaction is over
// (systemd-nspawn(1)), which is how a test measures what held a reboot.

// SystemdRootDir is the cached root called name (install.sh systemd).
func SystemdRootDir(name string) string { return filepath.Join(CacheDir(), "nspawn", name) }

// File is a file written into a container's root before it boots.
type File struct {
	Data []byte
	Mode fs.FileMode // 0644 when zero
}

// SystemdOptions shape a container.
type SystemdOptions struct {
	// Root is the cached root's name (default "node0").
	Root string
	// Machine is its name, and the hostname inside (default: unique).
	Machine string
	// Files are written into the copy before boot, by absolute path inside.
	Files map[string]File
	// Enable links these units into multi-user.target.wants before boot.
	Enable []string
	// Bind and BindRO are host paths made visible inside, "SRC" (the same
	// path) or "SRC:DST" (systemd-nspawn --bind, --bind-ro).
	Bind, BindRO []string
	// Boot is how long the boot may take (default 60s).
	Boot time.Duration
}

// Systemd is a running (or ended) container.
type Systemd struct {
	// Root is the container's root directory on the host: Path(p) is
	// where a path inside is.
	Root    string
	Machine string

	nspawn   *exec.Cmd
	cgroup   *nspawnCgroup
	leader   int
	out      *syncBuffer
	done     chan struct{}
	mu       sync.Mutex
	exitCode int
	exitedAt time.Time
}

var machineSeq struct {
	sync.Mutex
	n int
}

// systemdUsable says why systemd cannot run as PID 1 in a container here.
func systemdUsable(root string) error {
	if !isRoot() {
		return errors.New("systemd-nspawn needs root")
	}
	for _, tool := range []string{"systemd-nspawn", "nsenter", "journalctl"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s: %w (Debian packages systemd-container, util-linux, systemd)", tool, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(root, "usr", "lib", "systemd", "systemd")); err != nil || fi.IsDir() {
		return fmt.Errorf("no systemd root at %s (test/tools/install.sh systemd builds it)", root)
	}
	return nil
}

// StartSystemd copies the cached root, writes opts.Files into the copy,
// boots it with systemd-nspawn and waits until systemd reports the system
// running. It skips t (fails it in CI) when systemd cannot run as PID 1 in
// a container on this machine. The container is killed, if it still runs,
// and its copy removed when t ends.
func StartSystemd(t testing.TB, opts SystemdOptions) *Systemd {
	t.Helper()
	if opts.Root == "" {
		opts.Root = "node0"
	}
	if opts.Boot == 0 {
		opts.Boot = 60 * time.Second
	}
	cached, err := filepath.EvalSymlinks(SystemdRootDir(opts.Root))
	if err == nil {
		err = systemdUsable(cached)
	}
	if err != nil {
		Unavailable(t, "systemd as PID 1 in a container (systemd-nspawn)", err)
	}
	if opts.Machine == "" {
		machineSeq.Lock()
		machineSeq.n++
		opts.Machine = fmt.Sprintf("kat-%s-%d-%d", opts.Root, os.Getpid(), machineSeq.n)
		machineSeq.Unlock()
	}
	base, err := os.MkdirTemp("", "kat-nspawn-")
	if err != nil {
		t.Fatal(err)
	}
	s := &Systemd{Root: filepath.Join(base, "root"), Machine: opts.Machine, out: &syncBuffer{}, done: make(chan struct{})}
	t.Cleanup(func() {
		s.kill()
		_ = os.RemoveAll(base)
	})
	if out, err := exec.Command("cp", "-a", "--reflink=auto", cached, s.Root).CombinedOutput(); err != nil {
		t.Fatalf("copy the systemd root: %v\n%s", err, out)
	}
	paths := make([]string, 0, len(opts.Files))
	for p := range opts.Files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		f := opts.Files[p]
		s.WriteFile(t, p, f.Data, f.Mode)
	}
	for _, u := range opts.Enable {
		wants := s.Path("/etc/systemd/system/multi-user.target.wants")
		if err := os.MkdirAll(wants, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/etc/systemd/system/"+u, filepath.Join(wants, u)); err != nil && !errors.Is(err, fs.ErrExist) {
			t.Fatal(err)
		}
	}
	args := []string{"--register=no", "--keep-unit", "--quiet", "-D", s.Root, "-M", opts.Machine, "-b", "--console=passive"}
	for _, b := range opts.Bind {
		args = append(args, "--bind="+b)
	}
	for _, b := range opts.BindRO {
		args = append(args, "--bind-ro="+b)
	}
	s.nspawn = exec.Command("systemd-nspawn", args...)
	if s.cgroup, err = newNspawnCgroup(opts.Machine); err != nil {
		Unavailable(t, "a cgroup for systemd-nspawn", err)
	}
	t.Cleanup(func() { // registered after the one above, so it runs first
		s.kill()
		s.cgroup.remove()
	})
	s.cgroup.wrap(s.nspawn)
	s.nspawn.Stdout, s.nspawn.Stderr = s.out, s.out
	// Its own process group: a signal to the test's group does not reach it.
	s.nspawn.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.nspawn.Start(); err != nil {
		Unavailable(t, "systemd-nspawn", err)
	}
	go func() {
		err := s.nspawn.Wait()
		s.mu.Lock()
		s.exitedAt = time.Now()
		s.exitCode = 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			s.exitCode = ee.ExitCode()
		} else if err != nil {
			s.exitCode = -1
		}
		s.mu.Unlock()
		close(s.done)
	}()
	deadline := time.Now().Add(opts.Boot)
	state := ""
	for time.Now().Before(deadline) {
		if s.Exited() {
			Unavailable(t, "systemd as PID 1 in a container", fmt.Errorf("systemd-nspawn exited %d during boot:\n%s", s.exitCode, tail(s.out.String(), 30)))
		}
		// The container's PID 1 is systemd-nspawn's child that runs systemd
		// (a first child may still be nspawn's own, on its way out).
		if s.leader == 0 || !isSystemd(s.leader) {
			s.leader = childPID(s.nspawn.Process.Pid)
		}
		if s.leader != 0 {
			r := s.exec(context.Background(), nil, "systemctl", "is-system-running")
			state = strings.TrimSpace(r.Stdout)
			if state == "running" || state == "degraded" {
				return s
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	Unavailable(t, "systemd as PID 1 in a container", fmt.Errorf("not running after %s (is-system-running: %q):\n%s", opts.Boot, state, tail(s.out.String(), 30)))
	return nil
}

// childPID is the child of pid that runs systemd: the container's PID 1 for
// systemd-nspawn.
func childPID(pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return 0
	}
	for _, f := range strings.Fields(string(data)) {
		if n, _ := strconv.Atoi(f); n > 0 && isSystemd(n) {
			return n
		}
	}
	return 0
}

func isSystemd(pid int) bool {
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return err == nil && strings.TrimSpace(string(comm)) == "systemd"
}

// Path is the host path of path inside the container.
func (s *Systemd) Path(path string) string { return filepath.Join(s.Root, path) }

// WriteFile writes a file inside the container (directories made 0755).
func (s *Systemd) WriteFile(t testing.TB, path string, data []byte, mode fs.FileMode) {
	t.Helper()
	if mode == 0 {
		mode = 0o644
	}
	p := s.Path(path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// ExecResult is what a command run inside printed and how it exited.
type ExecResult struct {
	Stdout, Stderr string
	ExitCode       int
}

// Combined is stdout then stderr, for failure messages.
func (r ExecResult) Combined() string { return "stdout:\n" + r.Stdout + "\nstderr:\n" + r.Stderr }

// ExecOptions shape Exec.
type ExecOptions struct {
	// Env is the environment (default: PATH, HOME=/root, LANG).
	Env []string
	// Timeout bounds the command (default 2 minutes).
	Timeout time.Duration
}

// containerEnv is a login's environment inside, not the test's.
var containerEnv = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "LANG=C.UTF-8"}

// Exec runs a command inside the container (its mount, UTS, IPC, network
// and PID namespaces and root, by nsenter), as root with a clean
// environment, and returns what it printed.
func (s *Systemd) Exec(t testing.TB, args ...string) ExecResult {
	t.Helper()
	return s.ExecWith(t, ExecOptions{}, args...)
}

// ExecWith is Exec with options.
func (s *Systemd) ExecWith(t testing.TB, o ExecOptions, args ...string) ExecResult {
	t.Helper()
	if o.Timeout == 0 {
		o.Timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
	defer cancel()
	r := s.exec(ctx, o.Env, args...)
	if ctx.Err() != nil {
		t.Fatalf("%s timed out after %s:\n%s", strings.Join(args, " "), o.Timeout, r.Combined())
	}
	return r
}

// MustExec is Exec that fails t unless the command exits 0.
func (s *Systemd) MustExec(t testing.TB, args ...string) ExecResult {
	t.Helper()
	r := s.Exec(t, args...)
	if r.ExitCode != 0 {
		t.Fatalf("in %s: %s exited %d:\n%s", s.Machine, strings.Join(args, " "), r.ExitCode, r.Combined())
	}
	return r
}

// Command is the command line that runs args inside the container (for a
// caller that starts it itself); env as in ExecOptions.
func (s *Systemd) Command(ctx context.Context, env []string, args ...string) *exec.Cmd {
	if env == nil {
		env = containerEnv
	}
	argv := []string{"-t", strconv.Itoa(s.leader), "-m", "-u", "-i", "-n", "-p", "-r", "-w", "--", "env", "-i"}
	argv = append(append(argv, env...), args...)
	return exec.CommandContext(ctx, "nsenter", argv...)
}

func (s *Systemd) exec(ctx context.Context, env []string, args ...string) ExecResult {
	cmd := s.Command(ctx, env, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := ExecResult{Stdout: out.String(), Stderr: errOut.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.ExitCode = ee.ExitCode()
	} else if err != nil {
		r.ExitCode, r.Stderr = -1, r.Stderr+err.Error()
	}
	return r
}

// Systemctl runs systemctl inside.
func (s *Systemd) Systemctl(t testing.TB, args ...string) ExecResult {
	t.Helper()
	return s.Exec(t, append([]string{"systemctl"}, args...)...)
}

// WaitActive waits until unit is active, failing t after timeout with the
// unit's status, the units that failed and the end of the whole journal (a
// unit that failed on a dependency names only the dependency's job).
func (s *Systemd) WaitActive(t testing.TB, unit string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if strings.TrimSpace(s.Systemctl(t, "is-active", unit).Stdout) == "active" {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s not active after %s:\n%s\nfailed units:\n%s\njournal:\n%s", unit, timeout, s.Systemctl(t, "status", "--no-pager", unit).Stdout,
		s.Systemctl(t, "--failed", "--no-pager", "--plain").Stdout,
		s.Exec(t, "journalctl", "--no-pager", "-n", "120").Stdout)
}

// Reboot asks systemd inside for a reboot (systemctl reboot); Wait then
// sees systemd-nspawn end.
func (s *Systemd) Reboot(t testing.TB) {
	t.Helper()
	s.MustExec(t, "systemctl", "reboot")
}

// Wait waits until systemd-nspawn has ended and returns its exit status
// (133: the container rebooted) and when it ended; it fails t after timeout.
func (s *Systemd) Wait(t testing.TB, timeout time.Duration) (code int, at time.Time) {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(timeout):
		t.Fatalf("%s still runs after %s; its journal ends:\n%s", s.Machine, timeout, s.JournalText(t, "-n", "400"))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exitCode, s.exitedAt
}

// Exited reports whether systemd-nspawn has ended.
func (s *Systemd) Exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// Done is closed when systemd-nspawn has ended.
func (s *Systemd) Done() <-chan struct{} { return s.done }

// Console is what systemd-nspawn and the container's console printed.
func (s *Systemd) Console() string { return s.out.String() }

// JournalEntry is one journal entry.
type JournalEntry struct {
	Time    time.Time
	Unit    string // _SYSTEMD_UNIT, or UNIT for systemd's own messages about a unit
	Ident   string // SYSLOG_IDENTIFIER
	Message string
}

// Journal reads the container's persistent journal from the host
// (journalctl -D), also once the container has stopped; args narrow it
// (e.g. "-u", "x.service"). Entries are in journal order.
func (s *Systemd) Journal(t testing.TB, args ...string) []JournalEntry {
	t.Helper()
	argv := append([]string{"-D", s.Path("/var/log/journal"), "--no-pager", "-o", "export", "--output-fields=__REALTIME_TIMESTAMP,_SYSTEMD_UNIT,UNIT,SYSLOG_IDENTIFIER,MESSAGE"}, args...)
	out, err := exec.Command("journalctl", argv...).Output()
	if err != nil {
		t.Fatalf("journalctl %s: %v", strings.Join(argv, " "), err)
	}
	var entries []JournalEntry
	for _, rec := range strings.Split(string(out), "\n\n") {
		var e JournalEntry
		var sysUnit, unit string
		for _, line := range strings.Split(rec, "\n") {
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				continue
			}
			switch k {
			case "__REALTIME_TIMESTAMP":
				us, _ := strconv.ParseInt(v, 10, 64)
				e.Time = time.UnixMicro(us)
			case "_SYSTEMD_UNIT":
				sysUnit = v
			case "UNIT":
				unit = v
			case "SYSLOG_IDENTIFIER":
				e.Ident = v
			case "MESSAGE":
				e.Message = v
			}
		}
		e.Unit = sysUnit
		if sysUnit == "" || sysUnit == "init.scope" {
			e.Unit = unit
		}
		if e.Message != "" {
			entries = append(entries, e)
		}
	}
	return entries
}

// JournalText is the journal as journalctl prints it (short-precise), for
// failure messages and notes.
func (s *Systemd) JournalText(t testing.TB, args ...string) string {
	t.Helper()
	argv := append([]string{"-D", s.Path("/var/log/journal"), "--no-pager", "-o", "short-precise"}, args...)
	out, _ := exec.Command("journalctl", argv...).CombinedOutput()
	return string(out)
}

// kill ends the container if it still runs: SIGKILL to its PID 1 ends every
// process of its PID namespace, then systemd-nspawn exits.
func (s *Systemd) kill() {
	if s.nspawn == nil || s.Exited() {
		return
	}
	if s.leader != 0 {
		_ = syscall.Kill(s.leader, syscall.SIGKILL)
	}
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.nspawn.Process.Kill()
		<-s.done
	}
}
