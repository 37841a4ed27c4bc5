package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

const module = "github.com/kubectl-assisted/kubectl-assisted"

// platform is one GOOS/GOARCH pair of a release.
type platform struct{ OS, Arch string }

func (p platform) String() string { return p.OS + "/" + p.Arch }

// binName is the plugin executable's name on p: kubectl looks for
// kubectl-assisted, with .exe on Windows.
func (p platform) binName() string {
	if p.OS == "windows" {
		return "kubectl-assisted.exe"
	}
	return "kubectl-assisted"
}

// archiveExt is .zip for Windows users and .tar.gz for everyone else.
func (p platform) archiveExt() string {
	if p.OS == "windows" {
		return ".zip"
	}
	return ".tar.gz"
}

// defaultPlatforms are the release targets.
var defaultPlatforms = []platform{
	{"linux", "amd64"}, {"linux", "arm64"}, {"linux", "ppc64le"}, {"linux", "s390x"},
	{"darwin", "amd64"}, {"darwin", "arm64"}, {"windows", "amd64"},
}

// krewPlatforms are the OS/ARCH pairs that krew's manifest validator
// (validate-krew-manifest v0.4.3, which the krew-index CI runs too) knows: a
// manifest entry for any other pair fails validation. linux/ppc64le and
// linux/s390x archives are built and checksummed like the others, but left out
// of the krew manifest; users there install from the archive or with
// `make install`.
var krewPlatforms = map[platform]bool{
	{"linux", "386"}: true, {"linux", "amd64"}: true, {"linux", "arm"}: true, {"linux", "arm64"}: true,
	{"darwin", "386"}: true, {"darwin", "amd64"}: true, {"darwin", "arm64"}: true,
	{"windows", "386"}: true, {"windows", "amd64"}: true, {"windows", "arm64"}: true,
}

func parsePlatforms(s string) ([]platform, error) {
	if strings.TrimSpace(s) == "" {
		return defaultPlatforms, nil
	}
	var ps []platform
	seen := map[platform]bool{}
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		osName, arch, ok := strings.Cut(f, "/")
		if !ok || osName == "" || arch == "" {
			return nil, fmt.Errorf("platform %q: want OS/ARCH, e.g. linux/amd64", f)
		}
		p := platform{osName, arch}
		if !seen[p] {
			seen[p] = true
			ps = append(ps, p)
		}
	}
	return ps, nil
}

// stamp is what the binary reports in `version`; the same ldflags as the
// Makefile's GOBUILD, with the release version.
type stamp struct{ Version, Commit, BuildDate string }

func (s stamp) ldflags() string {
	return strings.Join([]string{
		"-s", "-w", "-buildid=",
		"-X", module + "/plugin.version=" + s.Version,
		"-X", module + "/plugin.commit=" + s.Commit,
		"-X", module + "/plugin.buildDate=" + s.BuildDate,
	}, " ")
}

// buildBinary compiles cmd/kubectl-assisted for p into out. The environment is
// pinned so that a developer's GOFLAGS, GOAMD64 or CGO setting cannot change
// the bytes: no cgo, no VCS stamp (the ldflags carry the commit), trimmed
// paths, empty build id, and each architecture's baseline instruction set.
func buildBinary(ctx context.Context, repo string, p platform, s stamp, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false",
		"-ldflags", s.ldflags(), "-o", out, "./cmd/kubectl-assisted")
	cmd.Dir = repo
	cmd.Env = append(buildEnv(os.Environ()),
		"CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch, "GOFLAGS=",
		"GOAMD64=v1", "GOARM64=v8.0", "GOPPC64=power8", "GOEXPERIMENT=")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", p, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// buildEnv drops the variables buildBinary sets, so its values win.
func buildEnv(env []string) []string {
	drop := map[string]bool{"CGO_ENABLED": true, "GOOS": true, "GOARCH": true, "GOFLAGS": true,
		"GOAMD64": true, "GOARM64": true, "GOPPC64": true, "GOEXPERIMENT": true}
	var kept []string
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); !drop[k] {
			kept = append(kept, kv)
		}
	}
	return kept
}

// archiveName is the release asset for p: kubectl-assisted_<version>_<os>_<arch>.<ext>.
func archiveName(version string, p platform) string {
	return fmt.Sprintf("kubectl-assisted_%s_%s_%s%s", version, p.OS, p.Arch, p.archiveExt())
}

func absDir(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return filepath.Abs(dir)
}
