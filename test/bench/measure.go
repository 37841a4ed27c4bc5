package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// measured is one child process run: wall time, CPU time (its own and its
// children's: a shell pipeline counts whole) and peak resident memory.
type measured struct {
	wall   time.Duration
	cpu    time.Duration
	maxRSS int64 // bytes
	stdout []byte
}

// run runs a command to completion and measures it; its output is kept for
// errors and results.
//
// Peak memory is the child's VmHWM, polled from /proc every 10 ms once the
// child runs its own program. rusage's maxrss would not do: on Linux it keeps
// the high-water mark of the image before exec, which for a child of a Go
// program is the parent's memory.
func run(name string, args ...string) (measured, error) {
	return runIn("", nil, name, args...)
}

// runIn is run in directory dir (empty: the current one) with env added to
// the environment.
func runIn(dir string, env []string, name string, args ...string) (measured, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return measured{}, err
	}
	done := make(chan struct{})
	var peak int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		comm := filepath.Base(name)
		if len(comm) > 15 {
			comm = comm[:15]
		}
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			if hwm, ok := vmHWM(cmd.Process.Pid, comm); ok && hwm > peak {
				peak = hwm
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	wg.Wait()
	m := measured{wall: time.Since(start), stdout: out.Bytes(), maxRSS: peak}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && ru != nil {
		m.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if err != nil {
		return m, fmt.Errorf("%s: %w\n%s", name, err, errb.String())
	}
	return m, nil
}

// vmHWM reads a process's peak resident set size, if it runs program comm.
func vmHWM(pid int, comm string) (int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	var name string
	var hwm int64 = -1
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		switch k {
		case "Name":
			name = v
		case "VmHWM":
			kb, _ := strconv.ParseInt(strings.TrimSuffix(v, " kB"), 10, 64)
			hwm = kb * 1024
		}
	}
	return hwm, name == comm && hwm >= 0
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func secs(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }
