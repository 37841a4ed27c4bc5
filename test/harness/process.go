package harness

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// cleanups run when Main returns: the shared components (kube-apiserver) live for
// the whole test process, not one test.
var (
	cleanupMu sync.Mutex
	cleanups  []func()
)

func atExit(f func()) {
	cleanupMu.Lock()
	defer cleanupMu.Unlock()
	cleanups = append(cleanups, f)
}

// Main runs the tests of a package and then stops the components shared by them.
// Use it from TestMain: func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }.
func Main(m *testing.M) int {
	code := m.Run()
	cleanupMu.Lock()
	fs := cleanups
	cleanups = nil
	cleanupMu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
	return code
}

// Process is a child process started by the harness, with its output kept for
// failure messages.
type Process struct {
	Name string
	Cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b.Len() > 4<<20 { // keep memory bounded for chatty servers
		s.b.Reset()
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// StartProcess starts cmd with its output captured; the child dies with the test
// process (Pdeathsig) so an aborted run leaves nothing behind.
func StartProcess(name string, cmd *exec.Cmd) (*Process, error) {
	p := &Process{Name: name, Cmd: cmd, out: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout = p.out
	cmd.Stderr = p.out
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	cmd.SysProcAttr.Setpgid = true
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Output is what the process printed so far (at most the last few MiB).
func (p *Process) Output() string { return p.out.String() }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM to the process group, then SIGKILL after grace.
func (p *Process) Stop(grace time.Duration) {
	if p.Exited() {
		return
	}
	_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// Kill sends SIGKILL to the process group and waits.
func (p *Process) Kill() {
	if p.Exited() {
		return
	}
	_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// waitFor polls ready until it returns nil, the process exits, or timeout.
func waitFor(p *Process, timeout time.Duration, ready func() error) error {
	return waitForAll([]*Process{p}, timeout, ready)
}

// waitForAll is waitFor for a component made of several processes (etcd +
// kube-apiserver): the first one to exit ends the wait, named with its output.
func waitForAll(ps []*Process, timeout time.Duration, ready func() error) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		for _, p := range ps {
			if p != nil && p.Exited() {
				return fmt.Errorf("%s exited: %v\n%s", p.Name, p.err, tail(p.Output(), 3000))
			}
		}
		if last = ready(); last == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	out := ""
	for _, p := range ps {
		if p != nil {
			out += fmt.Sprintf("--- %s output:\n%s\n", p.Name, tail(p.Output(), 3000))
		}
	}
	return fmt.Errorf("not ready after %s: %v\n%s", timeout, last, out)
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

func isRoot() bool { return os.Geteuid() == 0 }

// killTree SIGKILLs pid and all its descendants and waits until they are gone.
func killTree(pid int) {
	pids := append(descendants(pid), pid)
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range pids {
		for time.Now().Before(deadline) {
			if err := syscall.Kill(p, 0); err != nil {
				break
			}
			// A zombie child of ours still answers kill(0): reap what we can.
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(p, &ws, syscall.WNOHANG, nil)
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// descendants lists the transitive children of pid from /proc.
func descendants(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	parent := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The command name may hold spaces; fields after the last ')' are fixed.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		parent[pp] = append(parent[pp], p)
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range parent[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// AtExit runs f when the test binary ends (after every test), for state
// shared by several tests.
func AtExit(f func()) { atExit(f) }
