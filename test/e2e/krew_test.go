package e2e

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// The distribution tests run `make dist` as a release would and install its
// output with the real krew, offline: the manifest's URIs point at GitHub
// releases, so every install passes the local archive with --archive.

// krewManifest is the part of the generated krew manifest the tests read.
type krewManifest struct {
	Spec struct {
		Version   string `json:"version"`
		Caveats   string `json:"caveats"`
		Platforms []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			Sha256 string `json:"sha256"`
			Bin    string `json:"bin"`
		} `json:"platforms"`
	} `json:"spec"`
}

const distVersion = "v1.2.3-e2e.1"

// distPlatforms keeps the suite fast: the host platform (needed to run the
// installed binary) plus one foreign platform, windows/amd64, which also
// covers the zip path. A cold build of a foreign platform compiles every
// dependency for it once (minutes); warm builds only link and archive.
func distPlatforms() []string {
	host := runtime.GOOS + "/" + runtime.GOARCH
	foreign := "windows/amd64"
	if host == foreign {
		foreign = "linux/arm64"
	}
	return []string{host, foreign}
}

// makeDist runs `make dist` into dir with the Makefile's own COMMIT and
// BUILD_DATE (from git) and returns the manifest path.
func makeDist(t *testing.T, dir string) string {
	t.Helper()
	manifest := filepath.Join(dir, "manifest", "assisted.yaml")
	start := time.Now()
	runMake(t, "dist", "VERSION="+distVersion, "DIST_DIR="+filepath.Join(dir, "dist"),
		"DIST_MANIFEST="+manifest, "DIST_PLATFORMS="+strings.Join(distPlatforms(), " "))
	t.Logf("make dist (%s) took %s", strings.Join(distPlatforms(), ", "), time.Since(start).Round(time.Second))
	return manifest
}

// runMake runs make in the repository root. Variables that would override the
// Makefile's own derivations, and the parent make's jobserver, are dropped.
func runMake(t *testing.T, args ...string) string {
	t.Helper()
	mk, err := exec.LookPath("make")
	if err != nil {
		harness.Unavailable(t, "make", err)
	}
	cmd := exec.Command(mk, append([]string{"--no-print-directory", "-C", harness.RepoRoot()}, args...)...)
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "VERSION", "COMMIT", "BUILD_DATE", "PREFIX", "BIN_DIR",
			"DIST_DIR", "DIST_MANIFEST", "DIST_PLATFORMS":
		default:
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func gitOutput(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", harness.RepoRoot()}, args...)...).Output()
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}

func readManifest(t *testing.T, path string) krewManifest {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m krewManifest
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// TestDist builds once and checks that build from every side; the last
// subtest builds again and compares the two byte for byte.
func TestDist(t *testing.T) {
	// Long and self-contained (its own databases, directories, namespace):
	// it runs beside the other long ones once the sequential tests are done.
	t.Parallel()
	krew := harness.RequireTool(t, "krew")
	validator := harness.RequireTool(t, "validate-krew-manifest")
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		harness.Unavailable(t, "kubectl", err)
	}
	first := t.TempDir()
	manifestPath := makeDist(t, first)
	m := readManifest(t, manifestPath)
	distDir := filepath.Join(first, "dist")
	archiveOf := func(osArch string) string {
		goos, goarch, _ := strings.Cut(osArch, "/")
		ext := ".tar.gz"
		if goos == "windows" {
			ext = ".zip"
		}
		return filepath.Join(distDir, "kubectl-assisted_"+distVersion+"_"+goos+"_"+goarch+ext)
	}

	t.Run("manifest", func(t *testing.T) {
		if m.Spec.Version != distVersion || len(m.Spec.Platforms) != len(distPlatforms()) {
			t.Fatalf("manifest version %q with %d platforms, want %s with %d", m.Spec.Version, len(m.Spec.Platforms), distVersion, len(distPlatforms()))
		}
		for _, p := range m.Spec.Platforms {
			name := filepath.Base(archiveOf(p.Selector.MatchLabels["os"] + "/" + p.Selector.MatchLabels["arch"]))
			want := "https://github.com/kubectl-assisted/kubectl-assisted/releases/download/" + distVersion + "/" + name
			if p.URI != want {
				t.Errorf("uri %s, want %s", p.URI, want)
			}
		}
		out, err := exec.Command(validator, "-manifest", manifestPath, "-skip-install").CombinedOutput()
		if err != nil {
			t.Fatalf("validate-krew-manifest: %v\n%s", err, out)
		}
		// The validator is not a rubber stamp: an upper-case digest fails it.
		bad := filepath.Join(t.TempDir(), "assisted.yaml")
		data, _ := os.ReadFile(manifestPath)
		sum := m.Spec.Platforms[0].Sha256
		if err := os.WriteFile(bad, bytes.Replace(data, []byte(sum), []byte(strings.ToUpper(sum)), 1), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(validator, "-manifest", bad, "-skip-install").CombinedOutput(); err == nil {
			t.Fatalf("validator accepted an upper-case sha256:\n%s", out)
		}
	})

	t.Run("sha256sums", func(t *testing.T) {
		cmd := exec.Command("sha256sum", "--check", "--strict", "sha256sums.txt")
		cmd.Dir = distDir
		out, err := cmd.CombinedOutput()
		if err != nil || strings.Count(string(out), ": OK") != len(distPlatforms()) {
			t.Fatalf("sha256sum --check: %v\n%s", err, out)
		}
	})

	// krew itself checks each archive against the manifest's sha256, unpacks it
	// and runs the files operations; KREW_OS/KREW_ARCH let it install the
	// foreign archive too, as validate-krew-manifest does online.
	t.Run("krew install every platform offline", func(t *testing.T) {
		for _, osArch := range distPlatforms() {
			goos, goarch, _ := strings.Cut(osArch, "/")
			k := newKrew(t, krew, kubectl)
			out := k.run(t, []string{"KREW_OS=" + goos, "KREW_ARCH=" + goarch},
				"krew", "install", "--manifest="+manifestPath, "--archive="+archiveOf(osArch))
			if !strings.Contains(out, "Installed plugin: assisted") || !strings.Contains(out, "openshift-config/agent-auth-token") {
				t.Fatalf("%s: krew install did not install or print the caveats:\n%s", osArch, out)
			}
			bin := "kubectl-assisted"
			if goos == "windows" {
				bin += ".exe"
			}
			for _, f := range []string{bin, "LICENSE"} {
				if _, err := os.Stat(filepath.Join(k.root, "store", "assisted", distVersion, f)); err != nil {
					t.Errorf("%s: %v", osArch, err)
				}
			}
		}
	})

	t.Run("krew-installed binary reports the stamped version through kubectl", func(t *testing.T) {
		host := distPlatforms()[0]
		k := newKrew(t, krew, kubectl)
		k.run(t, nil, "krew", "install", "--manifest="+manifestPath, "--archive="+archiveOf(host))
		// kubectl's own discovery finds the link krew made.
		link := filepath.Join(k.root, "bin", "kubectl-assisted")
		if out := k.run(t, nil, "plugin", "list"); !strings.Contains(out, link) {
			t.Fatalf("kubectl plugin list does not show %s:\n%s", link, out)
		}
		var v struct{ Version, Commit, BuildDate, Platform string }
		out := k.run(t, nil, "assisted", "version", "-o", "json")
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("version -o json: %v\n%s", err, out)
		}
		want := struct{ Version, Commit, BuildDate, Platform string }{
			distVersion, gitOutput(t, "rev-parse", "HEAD"), gitOutput(t, "log", "-1", "--format=%cI"), host}
		if v != want {
			t.Fatalf("krew-installed kubectl assisted version = %+v, want %+v", v, want)
		}
	})

	t.Run("second build is byte-identical", func(t *testing.T) {
		second := t.TempDir()
		makeDist(t, second)
		a, b := treeFiles(t, first), treeFiles(t, second)
		if len(a) != len(b) || len(a) != len(distPlatforms())+2 {
			t.Fatalf("file sets differ: %v vs %v", slices.Sorted(maps.Keys(a)), slices.Sorted(maps.Keys(b)))
		}
		for name, data := range a {
			if !bytes.Equal(data, b[name]) {
				t.Errorf("%s differs between two builds of one commit", name)
			}
		}
	})
}

// krewEnv is a private krew installation: KREW_ROOT, HOME and a PATH with
// kubectl-krew (the real krew, found by kubectl's plugin discovery) and
// KREW_ROOT/bin, where krew links installed plugins.
type krewEnv struct{ root, home, bin, kubectl string }

func newKrew(t *testing.T, krew, kubectl string) *krewEnv {
	t.Helper()
	k := &krewEnv{root: t.TempDir(), home: t.TempDir(), bin: t.TempDir(), kubectl: kubectl}
	if err := os.Symlink(krew, filepath.Join(k.bin, "kubectl-krew")); err != nil {
		t.Fatal(err)
	}
	return k
}

// run runs `kubectl args...` and returns its combined output; no network is
// used or needed (KREW_NO_UPGRADE_CHECK).
func (k *krewEnv) run(t *testing.T, extraEnv []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(k.kubectl, args...)
	cmd.Dir = k.home
	cmd.Env = append([]string{
		"PATH=" + filepath.Join(k.root, "bin") + string(os.PathListSeparator) + k.bin + string(os.PathListSeparator) + "/usr/local/bin:/usr/bin:/bin",
		"HOME=" + k.home, "KREW_ROOT=" + k.root, "KREW_NO_UPGRADE_CHECK=1", "LANG=C.UTF-8",
	}, extraEnv...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if args[0] == "assisted" {
		cmd.Stderr = os.Stderr // keep stdout pure JSON
	}
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// treeFiles reads every regular file under dir, keyed by its relative path.
func treeFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		files[rel], err = os.ReadFile(path)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
