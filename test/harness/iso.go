package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-assisted/kubectl-assisted/day2/iso/isofixture"
)

// LiveISO returns the path of a live ISO with the layout of the
// coreos-installer fixture name ("embed-areas-2023-07.x86_64.iso",
// "synthetic.iso", ...): the real fixture from ../shared/fixtures/iso when
// present, else a synthetic ISO of the same layout built with xorriso
// (day2/iso/isofixture), so nothing outside the repository is needed.
func LiveISO(t testing.TB, name string) string {
	t.Helper()
	p, err := liveISO(t.TempDir(), name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func liveISO(dir, name string) (string, error) {
	name = strings.TrimSuffix(name, ".xz")
	if shared := filepath.Join(SharedDir(), "fixtures", "iso", name+".xz"); fileExists(shared) {
		raw, err := exec.Command("xz", "-dc", shared).Output()
		if err != nil {
			return "", fmt.Errorf("xz -dc %s: %w", shared, err)
		}
		p := filepath.Join(dir, name)
		return p, os.WriteFile(p, raw, 0o644)
	}
	l, ok := isofixture.ForFixtureName(name)
	if !ok {
		return "", fmt.Errorf("no live-ISO layout known for fixture %q", name)
	}
	f, err := isofixture.Build(dir, l)
	if err != nil {
		return "", err
	}
	return f.Path, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// ExampleCRsDir is the directory of example custom resources the e2e tests
// build on: ../shared/fixtures/crs (the upstream examples) when present, else
// the project's own examples in test/harness/examples (same file names).
func ExampleCRsDir() string {
	if d := filepath.Join(SharedDir(), "fixtures", "crs"); fileExists(filepath.Join(d, "agentClusterInstall.yaml")) {
		return d
	}
	return filepath.Join(RepoRoot(), "test", "harness", "examples")
}
