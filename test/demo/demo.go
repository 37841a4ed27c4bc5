package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// Names on both sites, as a compact agent-based install and MCE use them.
const (
	clusterNamespace = "cluster0"            // the CRs of the ABI manifests
	serviceNamespace = "multicluster-engine" // cluster 0's assisted-service, journal and receipt
	databaseName     = "installer"           // assisted-service's database on both sites
	bundleRepo       = "assisted/node0-bundle"
	bundleTag        = "compact"
	serviceURL       = "https://assisted-service-multicluster-engine.apps.compact.example.com"
	node0ServiceURL  = "http://192.168.111.20:8090" // assisted-service on node 0 (the rendezvous IP)
	// controllerNamespace holds the assisted-installer-controller on cluster 0.
	controllerNamespace = "assisted-installer"
)

// demo is one run: the components, what was seeded and what moved.
type demo struct {
	opts options
	r    *runner
	out  io.Writer
	ctx  context.Context

	plugin *harness.Plugin

	// Step 1.
	node0PG, cluster0PG *harness.Server
	node0DB, cluster0DB string // connection URLs (trust auth: no password)
	// node0c is node 0 as a systemd container (-at-reboot); node0Counts its
	// rows counted before it rebooted, when its database went away.
	node0c       *harness.Node0
	node0Counts  map[string]int64
	registry     *harness.Registry
	registryNote string
	mirror       *harness.Registry
	kube         *harness.Kube
	kubeconfig   string // cluster 0, admin
	// cluster is cluster 0 with a node (-job); cluster0Data is cluster 0's
	// file storage: a directory, or the node's volume behind the PVC.
	cluster      *harness.Cluster
	cluster0Data string
	ascFile      string

	// Step 2.
	node0 node0State

	// Step 3.
	migration *migration

	// Steps 4 and 5, and the summary.
	sum Summary

	// secrets are the values planted or made by the demo, by name; rec holds
	// everything printed and every command's output, checked for them at the end.
	secrets map[string]string
	rec     *recorder
}

func newDemo(o options, r *runner, out io.Writer, rec *recorder) *demo {
	return &demo{opts: o, r: r, out: out, ctx: r.ctx, rec: rec,
		secrets: map[string]string{"pull secret": pullSecretAuth}}
}

// path is a path in the state directory.
func (d *demo) path(elem ...string) string {
	return filepath.Join(append([]string{d.opts.state}, elem...)...)
}

func (d *demo) ref() string { return d.registry.Ref(bundleRepo, bundleTag) }

// refAt names the bundle by digest, so that later commands read exactly the
// bundle that was created.
func (d *demo) refAt(digest string) string { return d.registry.Host + "/" + bundleRepo + "@" + digest }

// run runs every step and returns the summary.
func (d *demo) run() *Summary {
	start := time.Now()
	fmt.Fprintf(d.out, "kubectl-assisted demo: migrate node 0's assisted-service into cluster 0, then build a day-2 ISO.\n")
	fmt.Fprintf(d.out, "Everything runs on loopback; state in %s.\n", d.opts.state)
	steps := []step{
		{name: "components", title: "Start node 0's and cluster 0's components on loopback", run: d.startComponents},
		{name: "seed", title: "Seed node 0: a compact 3-node cluster in the middle of its installation", needs: []string{"components"}, run: d.seedNode0},
		{name: "migrate", title: "Migrate node 0's state into cluster 0 through the registry", needs: []string{"seed"}, run: d.migrate},
		{name: "show", title: "Show what arrived on cluster 0: bundle, objects, receipt, rows, files", needs: []string{"migrate"}, run: d.show},
		{name: "add-nodes", title: "Day 2: build the ISO that adds a worker to cluster 0", needs: []string{"components"}, run: d.addNodes},
	}
	d.sum.Steps = runSteps(d.out, d.r, steps)
	d.sum.TotalSeconds = seconds(time.Since(start))
	d.sum.Migration = d.migration
	if d.registry != nil && d.registry.Password != "" {
		d.secrets["registry password"] = d.registry.Password
	}
	d.sum.SecretsInOutput = d.rec.leaked(d.secrets)
	if d.registryNote != "" {
		d.sum.Notes = append(d.sum.Notes, d.registryNote)
	}
	if d.node0.xattrNote != "" {
		d.sum.Notes = append(d.sum.Notes, d.node0.xattrNote)
	}
	d.sum.finish()
	printSummary(d.out, &d.sum)
	return &d.sum
}

// assisted runs `kubectl assisted args...` through kubectl's plugin discovery,
// printing the command first. A non-zero exit is an error that quotes the
// command's stderr.
func (d *demo) assisted(s *stepRun, args ...string) (harness.Result, error) {
	return d.assistedNote(s, "", args...)
}

// assistedNote is assisted with a note after the printed command.
func (d *demo) assistedNote(s *stepRun, note string, args ...string) (harness.Result, error) {
	line := "kubectl assisted " + shellQuote(args)
	if note != "" {
		line += "   # " + note
	}
	done := s.command(line)
	res := d.plugin.RunContext(d.ctx, d.r, "", args...)
	done(res.ExitCode)
	d.rec.record(res.Stdout)
	d.rec.record(res.Stderr)
	if res.ExitCode != 0 {
		return res, commandError(args, res)
	}
	return res, nil
}

// commandError says which command failed and why, in its own words, and
// recognizes a subcommand this build does not have.
func commandError(args []string, res harness.Result) error {
	sub := strings.Join(leadingWords(args), " ")
	msg := strings.TrimSpace(res.Stderr)
	if msg == "" {
		msg = strings.TrimSpace(res.Stdout)
	}
	if m := unknownCommand.FindStringSubmatch(msg); m != nil {
		missing := m[1]
		if missing == leadingWords(args)[0] {
			return fmt.Errorf("`kubectl assisted %s` is not in this build of kubectl-assisted (%s); this step needs it", sub, m[0])
		}
		return fmt.Errorf("`kubectl assisted %s` failed (exit %d) because it runs `kubectl assisted %s`, which is not in this build of kubectl-assisted (%s):\n%s",
			sub, res.ExitCode, missing, m[0], tail(msg, 8))
	}
	return fmt.Errorf("`kubectl assisted %s` failed (exit %d):\n%s", sub, res.ExitCode, tail(msg, 20))
}

// unknownCommand is cobra's message for a subcommand the binary lacks.
var unknownCommand = regexp.MustCompile(`unknown command "([^"]+)" for "[^"]*"`)

func leadingWords(args []string) []string {
	var out []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") || strings.ContainsAny(a, "/:") {
			break
		}
		out = append(out, a)
	}
	return out
}

// kubectl runs kubectl against cluster 0, printing the command.
func (d *demo) kubectl(s *stepRun, args ...string) (string, error) {
	all := append([]string{"--kubeconfig", d.kubeconfig}, args...)
	done := s.command("kubectl " + shellQuote(all))
	cmd := exec.CommandContext(d.ctx, d.plugin.Kubectl, all...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	d.rec.record(out.String())
	d.rec.record(errOut.String())
	code := 0
	if err != nil {
		code = 1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		done(code)
		return out.String(), fmt.Errorf("kubectl %s: %v\n%s", strings.Join(args, " "), err, tail(errOut.String(), 10))
	}
	done(code)
	return out.String(), nil
}

// tail keeps the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"..."}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

func mkdirs(dirs ...string) error {
	for _, dir := range dirs {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	return nil
}
