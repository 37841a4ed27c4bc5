package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }

// TestDemo runs the demo as `KEEP=1 make demo` does (a separate process,
// the built plugin through kubectl), checks its summary against what it
// seeded, looks at what it kept running, then cleans up as `make demo-clean`.
func TestDemo(t *testing.T) {
	for _, tool := range []string{"kube-apiserver", "etcd", "kubectl", "xz", "psql"} {
		harness.RequireTool(t, tool)
	}
	if harness.PGBinDir() == "" {
		harness.Unavailable(t, "PostgreSQL server binaries", fmt.Errorf("no /usr/lib/postgresql/*/bin"))
	}
	plugin := harness.PluginBinary(t)
	demo := filepath.Join(t.TempDir(), "demo")
	if out, err := exec.Command("go", "build", "-o", demo, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build the demo: %v\n%s", err, out)
	}
	state := filepath.Join(harness.SharedTempDir(t, "demo"), "state")
	summaryFile := filepath.Join(t.TempDir(), "summary.json")
	env := append(os.Environ(), "KUBECTL_ASSISTED_BIN="+plugin, "KEEP=")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, demo, "-keep", "-state", state, "-summary", summaryFile)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	t.Cleanup(func() {
		c := exec.Command(demo, "clean", "-state", state)
		c.Env = env
		_ = c.Run()
	})
	output := out.String()
	if runErr != nil {
		t.Errorf("the demo failed: %v\n%s", runErr, output)
	}

	var s Summary
	raw, err := os.ReadFile(summaryFile)
	if err != nil {
		t.Fatalf("no summary: %v\n%s", err, output)
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("summary: %v\n%s", err, raw)
	}

	// Every step ran, in order, and succeeded.
	want := []string{"components", "seed", "migrate", "show", "add-nodes"}
	if len(s.Steps) != len(want) {
		t.Fatalf("steps %+v, want %v", s.Steps, want)
	}
	for i, st := range s.Steps {
		if st.Name != want[i] || st.Number != i+1 {
			t.Errorf("step %d is %d %s, want %s", i+1, st.Number, st.Name, want[i])
		}
		if st.Status != statusOK {
			t.Errorf("step %d %s: %s: %s", st.Number, st.Name, st.Status, st.Error)
		}
		if !strings.Contains(output, fmt.Sprintf("[%d/%d] %s", i+1, len(want), st.Title)) {
			t.Errorf("output lacks the header of step %d", i+1)
		}
	}
	if !s.OK {
		t.Errorf("summary says the demo did not succeed")
	}

	// Rows: every row of the bundled tables arrived, table by table.
	db := s.Database
	if db.RowsSeededBundled == 0 || db.RowsRestored != db.RowsSeededBundled {
		t.Errorf("rows: seeded %d in bundled tables, restored %d", db.RowsSeededBundled, db.RowsRestored)
	}
	bundled := map[string]TableCount{}
	for _, tc := range db.Tables {
		if tc.Bundled {
			bundled[tc.Name] = tc
			if tc.Node0 != tc.Cluster0 {
				t.Errorf("table %s: node 0 %d rows, cluster 0 %d", tc.Name, tc.Node0, tc.Cluster0)
			}
		}
	}
	for _, name := range []string{"clusters", "hosts", "infra_envs", "events", "migrations", "monitored_operators"} {
		if bundled[name].Node0 == 0 {
			t.Errorf("table %s: not bundled or empty on node 0 (%+v)", name, bundled[name])
		}
	}
	if bundled["hosts"].Node0 != 3 || bundled["clusters"].Node0 != 1 {
		t.Errorf("node 0 should hold 1 cluster and 3 hosts: %+v %+v", bundled["clusters"], bundled["hosts"])
	}

	// Files and objects.
	f := s.Files
	if f.Node0Files == 0 || int64(f.Identical) != f.Node0Files || f.Cluster0Files != f.Node0Files {
		t.Errorf("files: %+v", f)
	}
	if f.Node0Xattrs != 2 || f.Cluster0Xattrs != f.Node0Xattrs {
		t.Errorf("manifest-source xattrs: node 0 %d, cluster 0 %d (want 2 and 2)", f.Node0Xattrs, f.Cluster0Xattrs)
	}
	if s.Objects.Total == 0 {
		t.Errorf("no object on cluster 0: %+v", s.Objects)
	}
	for _, k := range []string{"ClusterDeployment", "AgentClusterInstall", "InfraEnv", "ClusterImageSet"} {
		if s.Objects.Restored[k] == 0 {
			t.Errorf("no %s on cluster 0: %+v", k, s.Objects.Restored)
		}
	}
	if !s.Receipt {
		t.Error("no receipt")
	}
	if !strings.HasPrefix(s.Bundle.Digest, "sha256:") || !s.Bundle.Encrypted || s.Bundle.Size == 0 || s.Migration == nil || s.Migration.Digest != s.Bundle.Digest {
		t.Errorf("bundle %+v, migration %+v", s.Bundle, s.Migration)
	}

	// The ISO is on disk, as big as reported, and an ISO 9660 image.
	iso, err := os.ReadFile(s.ISO.Path)
	if err != nil || !s.ISO.Exists {
		t.Errorf("ISO %+v: %v", s.ISO, err)
	} else if int64(len(iso)) != s.ISO.Size || len(iso) < 0x8006 || string(iso[0x8001:0x8006]) != "CD001" {
		t.Errorf("ISO %s: %d bytes (summary %d), not an ISO 9660 image", s.ISO.Path, len(iso), s.ISO.Size)
	}

	// No secret in the output: the planted ones, the registry password, the
	// age identity and node 0's kubeadmin password.
	if len(s.SecretsInOutput) > 0 {
		t.Errorf("the demo found secrets in its output: %v", s.SecretsInOutput)
	}
	secrets := []string{pullSecretAuth, "AGE-SECRET-KEY-", "s3cret-"}
	if files, _ := filepath.Glob(filepath.Join(state, "node0", "data", "*", "kubeadmin-password")); len(files) == 1 {
		b, _ := os.ReadFile(files[0])
		secrets = append(secrets, string(b))
	} else {
		t.Errorf("kept state has %d kubeadmin-password files", len(files))
	}
	for _, sec := range secrets {
		if sec != "" && strings.Contains(output, sec) {
			t.Errorf("a secret (%.6s...) is in the demo's output", sec)
		}
	}

	// Kept: the output says how to reach cluster 0, and it answers.
	if !strings.Contains(output, "make demo-clean") || !strings.Contains(output, "export KUBECONFIG=") {
		t.Errorf("the kept demo does not say how to reach its components:\n%s", output)
	}
	get := exec.Command("kubectl", "--kubeconfig", filepath.Join(state, "cluster0", "kubeconfig"), "get", "agentclusterinstalls", "-A", "-o", "name")
	if b, err := get.CombinedOutput(); err != nil || !strings.Contains(string(b), "agentclusterinstall") {
		t.Errorf("kept cluster 0: kubectl get agentclusterinstalls: %v\n%s", err, b)
	}

	// make demo-clean: the keeper and its components stop, the state goes.
	pidBytes, err := os.ReadFile(filepath.Join(state, pidFile))
	if err != nil {
		t.Fatalf("keeper pid: %v", err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(pidBytes)))
	clean := exec.Command(demo, "clean", "-state", state)
	clean.Env = env
	if b, err := clean.CombinedOutput(); err != nil {
		t.Fatalf("demo clean: %v\n%s", err, b)
	}
	if alive(pid) {
		t.Errorf("the keeper (pid %d) still runs after demo clean", pid)
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("the state directory is still there after demo clean: %v", err)
	}
}

// TestCleanWithoutDemo: make demo-clean with nothing to clean succeeds.
func TestCleanWithoutDemo(t *testing.T) {
	var out, errOut bytes.Buffer
	state := filepath.Join(t.TempDir(), "never-made")
	if code := run([]string{"clean", "-state", state}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "nothing to clean") {
		t.Fatalf("clean: exit %d\n%s%s", code, out.String(), errOut.String())
	}
}
