// Command demo is `make demo`: kubectl-assisted's main job, end to end, on
// local components. It starts PostgreSQL for node 0 and for cluster 0, an OCI
// registry with TLS and basic auth, and kube-apiserver + etcd with the real
// CRDs standing for cluster 0 (all on loopback, with the test harness); seeds
// node 0 with a compact cluster in the middle of its installation; migrates it
// into cluster 0 with `kubectl assisted`; shows what arrived; builds a day-2
// ISO against the same API; and ends with a summary table.
//
//	go run ./demo [-summary FILE] [-keep] [-state DIR] [-two-step | -at-reboot]   # from test/; make demo
//	go run ./demo clean                                   # make demo-clean
//
// Everything lives under one state directory (default
// ${TMPDIR:-/tmp}/kubectl-assisted-demo). With -keep (KEEP=1 make demo) a
// background keeper process holds the components after the demo and prints how
// to reach them; `clean` stops it and removes the directory.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
)

const usage = `usage: demo [-summary FILE] [-keep] [-state DIR] [-two-step | [-job] [-at-reboot]]
       demo clean [-state DIR]

Runs kubectl-assisted's migration and a day-2 ISO end to end on local components.
KEEP=1 is -keep; KUBECTL_ASSISTED_DEMO_DIR is -state; KUBECTL_ASSISTED_BIN names the
plugin binary (make demo builds it).
`

type options struct {
	state   string
	summary string
	keep    bool
	keeper  bool // internal: this process is the background keeper
	twoStep bool // bundle create + restore instead of migrate
	job     bool // migrate with the restore Job, on a cluster with a real node
	// atReboot runs node 0 as a systemd container: migrate --at-reboot arms
	// it, and the installer's reboot runs the migration.
	atReboot bool
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	clean := len(args) > 0 && args[0] == "clean"
	if clean {
		args = args[1:]
	}
	var o options
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	fs.StringVar(&o.state, "state", defaultStateDir(), "State directory: components' data, files, logs")
	fs.StringVar(&o.summary, "summary", os.Getenv("KUBECTL_ASSISTED_DEMO_SUMMARY"), "Also write the summary as JSON to this file")
	fs.BoolVar(&o.keep, "keep", os.Getenv("KEEP") == "1" || os.Getenv("KEEP") == "true", "Leave the components running after the demo (stop them with `demo clean`)")
	fs.BoolVar(&o.twoStep, "two-step", false, "Migrate with the commands migrate is made of: bundle create, restore, switchover")
	fs.BoolVar(&o.job, "job", false, "Migrate as on a real install: with the restore Job on cluster 0, run by a real kubelet (needs root: containerd, runc)")
	fs.BoolVar(&o.atReboot, "at-reboot", false, "Node 0 is a systemd container (as root, after make tools): arm it with migrate --at-reboot and reboot it as the installer does; the migration runs at that reboot")
	fs.BoolVar(&o.keeper, "keeper", false, "internal: run as the background keeper")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	// -at-reboot -job is the production path: node 0 armed, the restore
	// Job at its reboot.
	if fs.NArg() > 0 || (o.twoStep && (o.job || o.atReboot)) {
		fs.Usage()
		return 2
	}
	abs, err := filepath.Abs(o.state)
	if err != nil {
		fmt.Fprintln(stderr, "demo:", err)
		return 1
	}
	o.state = abs
	switch {
	case clean:
		if err := cleanState(o.state, stdout); err != nil {
			fmt.Fprintln(stderr, "demo-clean:", err)
			return 1
		}
		return 0
	case o.keep && !o.keeper:
		return startKeeper(o, stdout, stderr)
	default:
		return runDemo(o, stdout, stderr)
	}
}

func defaultStateDir() string {
	if d := os.Getenv("KUBECTL_ASSISTED_DEMO_DIR"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "kubectl-assisted-demo")
}

// runDemo runs the demo in this process. Without -keep the components stop
// and the state directory goes when it ends; as the keeper, they stay until
// SIGTERM or SIGINT.
func runDemo(o options, stdout, stderr io.Writer) int {
	if !o.keeper {
		if err := prepareState(o.state); err != nil {
			fmt.Fprintln(stderr, "demo:", err)
			return 1
		}
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	go func() {
		// A second signal after the first: leave now; the components die with
		// this process (Pdeathsig) and `make demo-clean` removes the rest.
		<-ctx.Done()
		c := make(chan os.Signal, 1)
		signal.Notify(c, os.Interrupt, syscall.SIGTERM)
		<-c
		os.Exit(130)
	}()

	rec := &recorder{}
	stdout, stderr = rec.tee(stdout), rec.tee(stderr)
	r := newRunner(ctx, stderr)
	d := newDemo(o, r, stdout, rec)
	sum := d.run()
	code := 0
	if !sum.OK {
		code = 1
	}
	if o.summary != "" {
		if err := writeSummaryJSON(o.summary, sum); err != nil {
			fmt.Fprintln(stderr, "demo: write summary:", err)
			code = 1
		}
	}
	if o.keeper {
		if err := d.writeReach(filepath.Join(o.state, reachFile)); err != nil {
			fmt.Fprintln(stderr, "demo: write reach info:", err)
		}
		_ = os.WriteFile(filepath.Join(o.state, doneFile), []byte(fmt.Sprint(code)), 0o644)
		<-ctx.Done()
		fmt.Fprintln(stdout, "demo keeper: stopping the components")
	} else if ctx.Err() != nil {
		fmt.Fprintln(stdout, "\ninterrupted: stopping the components")
	}
	r.cleanup()
	if !o.keeper || ctx.Err() != nil {
		if err := removeState(o.state); err != nil {
			fmt.Fprintln(stderr, "demo:", err)
		}
	}
	return code
}

// prepareState makes a fresh state directory, refusing while a kept demo
// still runs there, and points TMPDIR into it so that everything the harness
// makes lands there too. PostgreSQL runs as the postgres user when the demo
// runs as root, so the directories are world-traversable (0755).
func prepareState(dir string) error {
	if pid, alive := keeperPID(dir); alive {
		return fmt.Errorf("a kept demo is still running from %s (pid %d): run `make demo-clean` first", dir, pid)
	}
	if err := removeState(dir); err != nil {
		return err
	}
	tmp := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	for _, d := range []string{dir, tmp} {
		if err := os.Chmod(d, 0o755); err != nil {
			return err
		}
	}
	return os.Setenv("TMPDIR", tmp)
}

// removeState stops what a killed demo may have left (PostgreSQL servers
// found by their postmaster.pid under dir) and removes dir.
func removeState(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	stopLeftoverPostgres(dir)
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	return nil
}
