package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"
	"golang.org/x/sys/unix"

	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// The bundle's fixed names (docs/bundle-format.md); spelled out here so the
// tests check the contract, not the code's constants.
const (
	bundleArtifactType = "application/vnd.kubectl-assisted.bundle"
	bundleConfigType   = "application/vnd.kubectl-assisted.bundle.config.v1+json"
	filesLayerTypeAge  = "application/vnd.kubectl-assisted.bundle.files.v1.tar+zstd+age"
	bundleClusterID    = "5d7a9c1e-2b3f-4a6d-8e9f-0a1b2c3d4e5f"
)

// ageKey writes a fresh age identity file and returns its path and recipient.
func ageKey(t *testing.T) (identityFile, recipient string) {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	identityFile = filepath.Join(t.TempDir(), "key.txt")
	if err := os.WriteFile(identityFile, []byte(id.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return identityFile, id.Recipient().String()
}

// assistedData builds a small /data tree of assisted-service: a cluster
// directory with the kubeadmin password, a user manifest carrying its source
// xattr, a log, a symlink, and an installercache that must be left out.
func assistedData(t *testing.T, kubeadminPassword string) string {
	t.Helper()
	d := t.TempDir()
	write := func(rel, content string, mode os.FileMode) string {
		p := filepath.Join(d, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write(bundleClusterID+"/kubeadmin-password", kubeadminPassword, 0o600)
	write(bundleClusterID+"/install-config.yaml", "apiVersion: v1\nmetadata:\n  name: test\n", 0o644)
	m := write(bundleClusterID+"/manifests/openshift/50-user.yaml", "apiVersion: v1\nkind: ConfigMap\n", 0o644)
	if err := unix.Setxattr(m, "user.assisted-installer-manifest-source", []byte("user"), 0); err != nil {
		harness.Unavailable(t, "user xattrs on the temp filesystem", err)
	}
	write(bundleClusterID+"/logs/host/logs.tar.gz", strings.Repeat("log line\n", 1000), 0o644)
	write("installercache/openshift-install-4.16", "not bundled", 0o755)
	if err := os.Symlink("manifests/openshift/50-user.yaml", filepath.Join(d, bundleClusterID, "latest.yaml")); err != nil {
		t.Fatal(err)
	}
	return d
}

// registryArgs are the plugin's flags to reach r.
func registryArgs(r *harness.Registry) []string {
	var a []string
	if r.PlainHTTP {
		a = append(a, "--plain-http")
	}
	if r.CAFile != "" {
		a = append(a, "--ca-file", r.CAFile)
	}
	if r.AuthFile != "" {
		a = append(a, "--registry-config", r.AuthFile)
	}
	return a
}

// orasArgs are the same for the oras CLI.
func orasArgs(r *harness.Registry) []string {
	var a []string
	if r.PlainHTTP {
		a = append(a, "--plain-http")
	}
	if r.CAFile != "" {
		a = append(a, "--ca-file", r.CAFile)
	}
	if r.AuthFile != "" {
		a = append(a, "--registry-config", r.AuthFile)
	}
	return a
}

// run runs a tool and fails t on error.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr)
	}
	return string(out)
}

// manifest is the part of an OCI manifest the tests look at.
type manifest struct {
	MediaType    string `json:"mediaType"`
	ArtifactType string `json:"artifactType"`
	Config       struct {
		MediaType string `json:"mediaType"`
		Digest    string `json:"digest"`
	} `json:"config"`
	Layers []struct {
		MediaType   string            `json:"mediaType"`
		Digest      string            `json:"digest"`
		Size        int64             `json:"size"`
		Annotations map[string]string `json:"annotations"`
	} `json:"layers"`
	Annotations map[string]string `json:"annotations"`
}

func parseManifest(t *testing.T, raw string) manifest {
	t.Helper()
	var m manifest
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatalf("manifest is not JSON: %v\n%s", err, raw)
	}
	return m
}

// bundleCreateResult is the part of `bundle create -o json` the tests read.
type bundleCreateResult struct {
	Kind      string `json:"kind"`
	Reference string `json:"reference"`
	Digest    string `json:"digest"`
	Encrypted bool   `json:"encrypted"`
	Layers    []struct {
		Kind   string `json:"kind"`
		Digest string `json:"digest"`
		Size   int64  `json:"size"`
	} `json:"layers"`
}

func parseCreate(t *testing.T, stdout string) bundleCreateResult {
	t.Helper()
	var r bundleCreateResult
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || r.Kind != "BundleCreateResult" || !strings.HasPrefix(r.Digest, "sha256:") {
		t.Fatalf("bundle create -o json: %v\n%s", err, stdout)
	}
	return r
}
