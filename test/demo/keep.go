package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Files in the state directory that the keeper and `clean` share.
const (
	pidFile   = "keeper.pid" // the keeper's pid
	logFile   = "demo.log"   // the keeper's output
	doneFile  = "done"       // the demo's exit code, written when it ends
	reachFile = "reach.txt"  // how to reach the kept components
)

// startKeeper runs the demo in a detached keeper process that holds the
// components afterwards, follows its output until the demo ends, prints how
// to reach what it keeps, and returns the demo's exit code.
func startKeeper(o options, stdout, stderr io.Writer) int {
	if err := prepareState(o.state); err != nil {
		fmt.Fprintln(stderr, "demo:", err)
		return 1
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "demo:", err)
		return 1
	}
	logPath := filepath.Join(o.state, logFile)
	log, err := os.Create(logPath)
	if err != nil {
		fmt.Fprintln(stderr, "demo:", err)
		return 1
	}
	args := []string{"-keeper", "-keep", "-state", o.state}
	if o.twoStep {
		args = append(args, "-two-step")
	}
	if o.job {
		args = append(args, "-job")
	}
	if o.atReboot {
		args = append(args, "-at-reboot")
	}
	if o.summary != "" {
		abs, _ := filepath.Abs(o.summary)
		args = append(args, "-summary", abs)
	}
	cmd := exec.Command(self, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Dir = o.state
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // not killed with this terminal's session
	if err := cmd.Start(); err != nil {
		log.Close()
		fmt.Fprintln(stderr, "demo: start keeper:", err)
		return 1
	}
	log.Close()
	pid := cmd.Process.Pid
	_ = os.WriteFile(filepath.Join(o.state, pidFile), []byte(strconv.Itoa(pid)), 0o644)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	code, err := follow(logPath, filepath.Join(o.state, doneFile), stdout, exited)
	if err != nil {
		fmt.Fprintln(stderr, "demo:", err)
		return 1
	}
	if reach, err := os.ReadFile(filepath.Join(o.state, reachFile)); err == nil {
		fmt.Fprintf(stdout, "\n%s", reach)
	}
	return code
}

// follow copies the keeper's log to w until the keeper writes its exit code,
// or dies without one.
func follow(logPath, donePath string, w io.Writer, exited <-chan error) (int, error) {
	f, err := os.Open(logPath)
	if err != nil {
		return 1, err
	}
	defer f.Close()
	for {
		if _, err := io.Copy(w, f); err != nil {
			return 1, err
		}
		if b, err := os.ReadFile(donePath); err == nil {
			_, _ = io.Copy(w, f)
			code, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			return code, nil
		}
		select {
		case err := <-exited:
			_, _ = io.Copy(w, f)
			return 1, fmt.Errorf("the demo keeper exited before the demo ended (%v); see %s", err, logPath)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// keeperPID reads the keeper's pid and whether it still runs as the demo.
func keeperPID(dir string) (int, bool) {
	b, err := os.ReadFile(filepath.Join(dir, pidFile))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !bytes.Contains(cmdline, []byte("-keeper")) {
		return pid, false
	}
	return pid, true
}

// cleanState stops the keeper (its components stop with it) and removes the
// state directory.
func cleanState(dir string, out io.Writer) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(out, "demo-clean: nothing to clean (%s does not exist)\n", dir)
		return nil
	}
	if pid, alive := keeperPID(dir); alive {
		fmt.Fprintf(out, "demo-clean: stopping the demo keeper (pid %d) and its components\n", pid)
		_ = syscall.Kill(pid, syscall.SIGTERM)
		if !waitGone(pid, 60*time.Second) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			waitGone(pid, 10*time.Second)
		}
	}
	if err := removeState(dir); err != nil {
		return err
	}
	fmt.Fprintf(out, "demo-clean: removed %s\n", dir)
	return nil
}

func waitGone(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if !alive(pid) {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// alive reports whether pid runs; a zombie (exited, not yet reaped by its
// new parent) does not.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || !strings.HasPrefix(strings.TrimSpace(s[i+1:]), "Z")
}

// stopLeftoverPostgres stops PostgreSQL servers whose data directory is under
// dir: a killed keeper cannot stop them, because they run under runuser.
func stopLeftoverPostgres(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "postmaster.pid" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
		if pid <= 0 {
			return nil
		}
		// Only a postgres whose data directory is this one.
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !bytes.Contains(cmdline, []byte(filepath.Dir(p))) {
			return nil
		}
		_ = syscall.Kill(pid, syscall.SIGQUIT) // immediate shutdown
		waitGone(pid, 20*time.Second)
		return nil
	})
}
