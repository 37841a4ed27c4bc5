package plugin

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-assisted/kubectl-assisted/plugin/clierr"
	"github.com/kubectl-assisted/kubectl-assisted/restore"
	"github.com/kubectl-assisted/kubectl-assisted/restore/migrate"
)

// TestMigrateErrorExitCodes pins migrate's documented exit codes: 11..16
// for the steps in order, 2 for options the engine refuses.
func TestMigrateErrorExitCodes(t *testing.T) {
	want := map[string]int{"preflight": 11, "bundle": 12, "restore": 13, "wait": 14, "service": 15, "switchover": 16}
	for i, step := range migrate.Steps {
		err := migrateError(&migrate.StepError{Step: step, Number: i + 1, Err: errors.New("boom")})
		if got := clierr.ExitCode(err); got != want[step] {
			t.Errorf("%s: exit %d, want %d", step, got, want[step])
		}
		if !strings.Contains(err.Error(), step) || !strings.Contains(err.Error(), "boom") {
			t.Errorf("%s: message %q does not name the step and the cause", step, err)
		}
	}
	if got := clierr.ExitCode(migrateError(&migrate.OptionsError{Err: errors.New("x")})); got != 2 {
		t.Errorf("options errors exit 2, got %d", got)
	}
}

// The engine's hint is what the user is told to do next; without one, a
// rerun is.
func TestMigrateErrorRecommendation(t *testing.T) {
	hinted := &migrate.StepError{Step: "preflight", Number: 1, Err: &migrate.HintError{Err: errors.New("busy"), Hint: "pass --live"}}
	var ce *clierr.Error
	if !errors.As(migrateError(hinted), &ce) || ce.Recommendation != "pass --live" {
		t.Fatalf("recommendation %+v, want the engine's hint", ce)
	}
	if !errors.As(migrateError(&migrate.StepError{Step: "wait", Number: 4, Err: errors.New("x")}), &ce) || !strings.Contains(ce.Recommendation, "run the same command again") {
		t.Fatalf("default recommendation %q", ce.Recommendation)
	}
}

// TestBundleFlagsShared: every flag of the shared group has the same name,
// default and help in `bundle create` and `migrate`.
func TestBundleFlagsShared(t *testing.T) {
	env := &Env{Streams: genericiooptions.NewTestIOStreamsDiscard(), Kube: genericclioptions.NewConfigFlags(true)}
	create, mig := NewCmdBundleCreate(env).Flags(), NewCmdMigrate(env).Flags()
	group := pflag.NewFlagSet("group", pflag.ContinueOnError)
	(&bundleFlags{}).AddFlags(group, "")
	n := 0
	group.VisitAll(func(g *pflag.Flag) {
		n++
		a, b := create.Lookup(g.Name), mig.Lookup(g.Name)
		if a == nil || b == nil {
			t.Errorf("--%s: bundle create has it: %v, migrate has it: %v", g.Name, a != nil, b != nil)
			return
		}
		if a.DefValue != b.DefValue || a.Value.Type() != b.Value.Type() {
			t.Errorf("--%s: bundle create default %q (%s), migrate %q (%s)", g.Name, a.DefValue, a.Value.Type(), b.DefValue, b.Value.Type())
		}
		if g.Name != "resources" && a.Usage != b.Usage {
			t.Errorf("--%s: help differs:\n  %s\n  %s", g.Name, a.Usage, b.Usage)
		}
	})
	if n < 15 {
		t.Fatalf("the group has %d flags", n)
	}
	spool := mig.Lookup("spool-dir")
	if spool == nil || spool.DefValue == "" || !strings.Contains(spool.Usage, "Default: on") {
		t.Fatalf("--spool-dir: default %q; its help must say it is on by default: %q", spool.DefValue, spool.Usage)
	}
	if mig.Lookup("no-spool") == nil {
		t.Fatal("migrate has no --no-spool")
	}
}

// completeMigrate parses args into `migrate` and runs Complete and Validate
// as its RunE does, then the resolution that starts Run (no migration runs).
func completeMigrate(t *testing.T, args ...string) (*MigrateOptions, error) {
	t.Helper()
	env := &Env{Streams: genericiooptions.NewTestIOStreamsDiscard()}
	o := &MigrateOptions{}
	cmd := newCmdMigrate(env, o)
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	if err := o.Complete(nil); err != nil {
		return o, err
	}
	if err := o.Validate(); err != nil {
		return o, usageErr(cmd, err)
	}
	if err := o.resolve(); err != nil {
		return o, err
	}
	if err := o.opts.Validate(); err != nil {
		return o, o.usage(err)
	}
	return o, nil
}

// TestMigrateCompleteResolvesOptions: the flags become the engine's
// options, with the shared group's defaults (spool on) and the context's
// namespace.
func TestMigrateCompleteResolvesOptions(t *testing.T) {
	kc := kubeconfig(t)
	data := t.TempDir()
	o, err := completeMigrate(t, "--to", "reg.example.com:5000/a/b:v1", "--target-kubeconfig", kc,
		"--db", "postgres://admin:pw@127.0.0.1/installer", "--data-dir", data,
		"--target-db", "postgres://admin:pw2@10.0.0.5/installer", "--target-data-dir", "/mnt/data",
		"--namespace-mapping", "cluster0=c0,other=o", "--state-dir", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m := o.opts
	if m.Namespace != "from-context" || m.Target != "https://c0.example.com:6443" || !m.Direct() {
		t.Fatalf("namespace %q target %q direct %v", m.Namespace, m.Target, m.Direct())
	}
	if m.SpoolDir == "" || !strings.HasSuffix(m.SpoolDir, filepath.Join("kubectl-assisted", "spool")) {
		t.Fatalf("spool dir %q, want the default one", m.SpoolDir)
	}
	if m.Create.Files == nil || m.Create.Files.Dir != data || m.Create.Database == nil || m.SourceDB != "postgres://admin:pw@127.0.0.1/installer" {
		t.Fatalf("bundle content: %+v source %q", m.Create, m.SourceDB)
	}
	if m.NamespaceMapping["cluster0"] != "c0" || m.NamespaceMapping["other"] != "o" || len(m.NamespaceMapping) != 2 {
		t.Fatalf("mapping %v", m.NamespaceMapping)
	}
	o, err = completeMigrate(t, "--to", "reg.example.com:5000/a/b:v1", "--target-kubeconfig", kc, "--data-dir", data,
		"--target-db", "x", "--target-data-dir", "/mnt/data", "--no-spool", "-n", "mce")
	if err != nil {
		t.Fatal(err)
	}
	if o.opts.SpoolDir != "" || o.opts.Namespace != "mce" {
		t.Fatalf("--no-spool: spool %q, namespace %q", o.opts.SpoolDir, o.opts.Namespace)
	}
}

// TestMigrateUsageErrors: contradicting flags exit 2 before anything runs.
func TestMigrateUsageErrors(t *testing.T) {
	kc := kubeconfig(t)
	base := []string{"--to", "reg.example.com:5000/a/b:v1", "--target-kubeconfig", kc, "--data-dir", t.TempDir()}
	for name, extra := range map[string][]string{
		"target-db alone":            {"--target-db", "x"},
		"job without image":          {"--agent-service-config", "x"},
		"digest":                     {"--to", "reg.example.com:5000/a/b@sha256:" + strings.Repeat("0", 64), "--target-db", "x", "--target-data-dir", "y"},
		"plaintext to a registry":    {"--no-encryption", "--target-db", "x", "--target-data-dir", "y"},
		"recipient without identity": {"--recipient", "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p", "--target-db", "x", "--target-data-dir", "y"},
		"bad mapping":                {"--namespace-mapping", "nope", "--target-db", "x", "--target-data-dir", "y"},
		"cluster without kubeconfig": {"--resources", "cluster", "--target-db", "x", "--target-data-dir", "y"},
	} {
		_, err := completeMigrate(t, append(append([]string{}, base...), extra...)...)
		if got := clierr.ExitCode(err); got != 2 {
			t.Errorf("%s: exit %d (%v), want 2", name, got, err)
		}
	}
}

func kubeconfig(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := `apiVersion: v1
kind: Config
clusters: [{name: c0, cluster: {server: "https://c0.example.com:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c0, context: {cluster: c0, user: u, namespace: from-context}}]
current-context: c0
`
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMigrateRenderer pins the stderr lines scripts and the e2e kill test
// look for: one per step start and end, the restore's own phase lines.
func TestMigrateRenderer(t *testing.T) {
	var b strings.Builder
	r := &migrateRenderer{w: &b, ev: &eventPrinter{w: &b}}
	r.event(migrate.Event{Type: migrate.EventStepStart, Step: "bundle", Number: 2, Total: 6})
	r.event(migrate.Event{Type: migrate.EventNote, Step: "bundle", Number: 2, Total: 6, Detail: "a note"})
	r.event(migrate.Event{Type: migrate.EventStepDone, Step: "bundle", Number: 2, Total: 6, Detail: "pushed x", Duration: 1500 * time.Millisecond})
	r.event(migrate.Event{Type: migrate.EventRestore, Restore: &restore.Event{Type: restore.EventStart, Phase: "database"}})
	r.event(migrate.Event{Type: migrate.EventStepSkipped, Step: "wait", Number: 4, Total: 6, Detail: "receipt"})
	want := "[2/6] bundle ...\n  a note\n[2/6] bundle: pushed x (1.5s)\ndatabase: started\n[4/6] wait: already done (receipt)\n"
	if b.String() != want {
		t.Fatalf("rendered:\n%s\nwant:\n%s", b.String(), want)
	}
}
