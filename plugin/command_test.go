package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/files"
	"github.com/kubectl-assisted/kubectl-assisted/day2/monitor"
	"github.com/kubectl-assisted/kubectl-assisted/plugin/clierr"
	"github.com/kubectl-assisted/kubectl-assisted/restore/waitfor"
)

// Every command's options have the one shape (Complete, Validate, Run).
var (
	_ Command = (*VersionOptions)(nil)
	_ Command = (*CompletionOptions)(nil)
	_ Command = (*WaitForOptions)(nil)
	_ Command = (*SwitchoverOptions)(nil)
	_ Command = (*AddNodesCreateOptions)(nil)
	_ Command = (*AddNodesMonitorOptions)(nil)
	_ Command = (*BundleInspectOptions)(nil)
	_ Command = (*BundleVerifyOptions)(nil)
	_ Command = (*BundleExtractOptions)(nil)
	_ Command = (*RestoreOptions)(nil)
	_ Command = (*BundleCreateOptions)(nil)
	_ Command = (*MigrateOptions)(nil)
)

// run executes the root command with args and returns the exit code and stderr.
func run(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	root := NewCmdRoot(streams)
	root.SetArgs(args)
	return Execute(context.Background(), root, streams), errOut.String()
}

// TestValidateBeforeIO: refusals of Validate exit 2 with a pointer to --help
// and what to give instead, before any file, cluster or registry is touched
// (the kubeconfig, the registry and the key files named here do not exist).
func TestValidateBeforeIO(t *testing.T) {
	noKube := []string{"--kubeconfig", "/nonexistent/kubeconfig"}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"version", "-o", "xml"}, "allowed formats are json, yaml"},
		{[]string{"version", "extra"}, "unknown command"},
		{[]string{"nope"}, `unknown command "nope" for "kubectl assisted"`},
		{[]string{"wait-for", "nope"}, `unknown command "nope"`},
		{[]string{"add-nodes", "nope"}, `unknown command "nope"`},
		{[]string{"completion", "tcsh"}, `invalid argument "tcsh"`},
		{[]string{"bundle", "verify"}, "accepts 1 arg(s), received 0"},
		{append([]string{"wait-for", "restore-complete", "--bundle", "latest"}, noKube...), "give sha256:<64 hex>"},
		{append([]string{"wait-for", "restore-complete", "--bundle", "sha256:" + strings.Repeat("a", 64), "--timeout", "0s"}, noKube...), "give a positive duration"},
		{append([]string{"switchover"}, noKube...), "--service-url is required"},
		{append([]string{"switchover", "--service-url", "https://x", "--redirect-listen", "nope"}, noKube...), "give HOST:PORT"},
		{append([]string{"add-nodes", "monitor"}, noKube...), "-f nodes-config.yaml is required"},
		{append([]string{"add-nodes", "create", "-f", "/nonexistent/n.yaml", "--compression", "zstd"}, noKube...), "use xz or gzip"},
		{append([]string{"add-nodes", "create"}, noKube...), "give -f nodes-config.yaml or --mac-address"},
		{[]string{"bundle", "inspect", "oci:/nonexistent:v1", "-o", "xml"}, "allowed formats"},
		{[]string{"bundle", "verify", "oci:/nonexistent:v1", "--signer", "/nonexistent.pub", "--allow-unsigned"}, "contradict each other"},
		{[]string{"bundle", "extract", "oci:/nonexistent:v1", "--allow-unsigned"}, "--dir is required"},
		{append([]string{"restore", "oci:/nonexistent:v1", "--allow-unsigned", "--existing", "merge"}, noKube...), "give fail, skip or update"},
		{append([]string{"restore", "oci:/nonexistent:v1", "--allow-unsigned", "--dry-run", "maybe"}, noKube...), "give none, client or server"},
		{append([]string{"restore", "oci:/nonexistent:v1", "--allow-unsigned", "--diff"}, noKube...), "needs --recreate-resources"},
		{append([]string{"restore", "oci:/nonexistent:v1", "--allow-unsigned", "--cluster-zero", "x"}, noKube...), "give NAMESPACE/NAME"},
		{append([]string{"restore", "oci:/nonexistent:v1", "--allow-unsigned", "--no-cluster"}, noKube...), "--no-cluster keeps the journal"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args[:min(2, len(tt.args))], " "), func(t *testing.T) {
			code, stderr := run(t, tt.args...)
			if code != 2 || !strings.Contains(stderr, tt.want) || !strings.Contains(stderr, "--help' for usage") {
				t.Fatalf("%v: exit %d, want 2 with %q and a pointer to --help\n%s", tt.args, code, tt.want, stderr)
			}
		})
	}
}

// TestExitCodeMappings pins, with the documented numbers, the codes the
// commands map their failures to.
func TestExitCodeMappings(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("context: %w", err) }
	codes := []struct {
		name string
		err  error
		want int
	}{
		{"wait-for timeout", waitForError(wrap(waitfor.ErrTimeout)), 30},
		{"wait-for failed restore", waitForError(&waitfor.RestoreFailedError{Phase: "database", Reason: "x"}), 31},
		{"wait-for other bundle", waitForError(&waitfor.OtherBundleError{Want: "sha256:a"}), 32},
		{"wait-for incomplete receipt", waitForError(&waitfor.IncompleteReceiptError{Missing: []string{"files"}}), 32},
		{"wait-for other error", waitForError(errors.New("x")), 1},
		{"bundle integrity", bundleError(wrap(&bundle.IntegrityError{Blob: "manifest"})), 3},
		{"bundle decrypt", bundleError(wrap(&bundle.DecryptError{Err: bundle.ErrNoIdentity})), 4},
		{"bundle version", bundleError(wrap(&bundle.UnsupportedVersionError{Version: "2.0.0"})), 5},
		{"bundle format", bundleError(wrap(&bundle.FormatError{What: "manifest", Err: errors.New("x")})), 6},
		{"bundle unsafe entry", bundleError(wrap(&files.UnsafeEntryError{Name: "x", Reason: files.ReasonSparse})), 7},
		{"bundle missing blob", bundleError(wrap(&bundle.MissingBlobError{Blob: "files layer", Err: errors.New("x")})), 8},
		{"bundle signature", bundleError(wrap(&bundle.SignatureError{Digest: "sha256:a", Reason: bundle.ReasonUnsigned})), 9},
	}
	for _, c := range codes {
		if got := clierr.ExitCode(c.err); got != c.want {
			t.Errorf("%s: exit %d, want %d", c.name, got, c.want)
		}
	}
	outcomes := map[monitor.Outcome]int{
		monitor.OutcomeAllReady: 0, monitor.OutcomeTimeout: 30, monitor.OutcomeValidationsFailing: 33,
		monitor.OutcomeCSRBlocked: 34, monitor.OutcomeInstallFailed: 35, monitor.OutcomeInterrupted: 130,
	}
	for o, want := range outcomes {
		if got, ok := monitorExitCodes[o]; !ok || got != want {
			t.Errorf("add-nodes monitor %s: exit %d, want %d", o, got, want)
		}
	}
	if len(monitorExitCodes) != len(outcomes) {
		t.Errorf("monitor maps %d outcomes, the test pins %d", len(monitorExitCodes), len(outcomes))
	}
}
