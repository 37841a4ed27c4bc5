package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

func TestVersion_ThroughKubectlPluginDiscovery(t *testing.T) {
	p := harness.NewPlugin(t)
	r := p.MustRun(t, "version", "-o", "json")
	var v map[string]any
	if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil {
		t.Fatalf("version -o json is not JSON: %v\n%s", err, r.Stdout)
	}
	if v["version"] != harness.BinaryVersion() || v["kind"] != "Version" || v["bundleFormatVersion"] == "" {
		t.Fatalf("version -o json = %v", v)
	}
	if r.Stderr != "" {
		t.Fatalf("stderr not empty: %q", r.Stderr)
	}

	// Parsed, not grepped: a version made only of digits (a short commit
	// such as 0725730) is quoted in YAML.
	y := p.MustRun(t, "version", "-o", "yaml")
	var vy map[string]any
	if err := yaml.Unmarshal([]byte(y.Stdout), &vy); err != nil {
		t.Fatalf("version -o yaml is not YAML: %v\n%s", err, y.Stdout)
	}
	if vy["version"] != harness.BinaryVersion() || vy["kind"] != "Version" {
		t.Fatalf("version -o yaml:\n%s", y.Stdout)
	}

	bad := p.Run(t, "version", "-o", "xml")
	if bad.ExitCode != 2 || !strings.Contains(bad.Stderr, `unknown output format "xml"`) || !strings.Contains(bad.Stderr, "kubectl assisted version --help") {
		t.Fatalf("version -o xml: exit %d\n%s", bad.ExitCode, bad.Combined())
	}
}

func TestHelp_NamesTheCaller(t *testing.T) {
	p := harness.NewPlugin(t)
	if r := p.MustRun(t, "--help"); !strings.Contains(r.Stdout, "kubectl assisted [command]") {
		t.Fatalf("help does not say 'kubectl assisted':\n%s", r.Stdout)
	}
	p.Env = append(p.Env, "KUBECTL_PLUGINS_CALLER=/usr/bin/oc")
	if r := p.MustRun(t, "version", "--help"); !strings.Contains(r.Stdout, "oc assisted version") {
		t.Fatalf("help under oc does not say 'oc assisted':\n%s", r.Stdout)
	}
}

func TestCompletion(t *testing.T) {
	p := harness.NewPlugin(t)
	for _, sh := range []string{"bash", "zsh", "fish"} {
		r := p.MustRun(t, "completion", sh)
		if !strings.Contains(r.Stdout, "assisted") || len(r.Stdout) < 500 {
			t.Fatalf("completion %s: %d bytes", sh, len(r.Stdout))
		}
	}
	if r := p.Run(t, "completion", "tcsh"); r.ExitCode == 0 {
		t.Fatal("completion tcsh succeeded")
	}
}
