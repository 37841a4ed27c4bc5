package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// TestBundle_DockerRegistryTLSAuth pushes an encrypted bundle to Debian's
// docker-registry with TLS and basic auth, reads it back with oras and skopeo,
// copies it to an OCI layout and back with skopeo, and verifies both copies.
func TestBundle_DockerRegistryTLSAuth(t *testing.T) {
	reg := harness.StartDockerRegistry(t, harness.DockerRegistryOptions{TLS: true, Auth: true})
	testRegistryInterop(t, reg)
}

// TestBundle_InProcessRegistry is the same against the in-process registry.
func TestBundle_InProcessRegistry(t *testing.T) {
	reg := harness.StartInProcessRegistry(t)
	testRegistryInterop(t, reg)
}

func testRegistryInterop(t *testing.T, reg *harness.Registry) {
	p := harness.NewPlugin(t)
	oras := harness.RequireTool(t, "oras")
	skopeo := harness.RequireTool(t, "skopeo")
	key, recipient := ageKey(t)
	data := assistedData(t, "kubeadmin-pw-not-secret-here")
	ref := reg.Ref("assisted/node0", "v1")

	res := parseCreate(t, p.MustRun(t, append([]string{"bundle", "create", "--to", ref, "--data-dir", data,
		"--recipient", recipient, "--signing-key", signingKeyFile(t), "-o", "json"}, registryArgs(reg)...)...).Stdout)
	if !res.Encrypted || len(res.Layers) != 1 || res.Layers[0].Kind != "files" {
		t.Fatalf("create result: %+v", res)
	}

	// oras sees our artifactType, config and layer, under the same digest.
	raw := run(t, oras, append([]string{"manifest", "fetch", ref}, orasArgs(reg)...)...)
	m := parseManifest(t, raw)
	if m.ArtifactType != bundleArtifactType || m.Config.MediaType != bundleConfigType ||
		len(m.Layers) != 1 || m.Layers[0].MediaType != filesLayerTypeAge || m.Layers[0].Digest != res.Layers[0].Digest {
		t.Fatalf("oras manifest fetch:\n%s", raw)
	}
	desc := run(t, oras, append([]string{"manifest", "fetch", "--descriptor", ref}, orasArgs(reg)...)...)
	if !strings.Contains(desc, res.Digest) {
		t.Fatalf("oras descriptor %s does not name digest %s", desc, res.Digest)
	}

	// skopeo reads the same manifest.
	skopeoTLS := skopeoArgs(t, reg, "")
	skRaw := run(t, skopeo, append(append([]string{"inspect", "--raw"}, skopeoTLS...), "docker://"+ref)...)
	if skRaw != raw {
		t.Fatalf("skopeo inspect --raw differs from oras:\n%s\n%s", skRaw, raw)
	}

	// The signature is a referrer of the manifest that oras finds (the
	// referrers API, or the referrers tag schema on docker-registry).
	if disc := run(t, oras, append([]string{"discover", "--format", "json", ref}, orasArgs(reg)...)...); !strings.Contains(disc, cosignSigArtifactType) {
		t.Fatalf("oras discover does not list the signature:\n%s", disc)
	}
	// oras cp -r copies the bundle with its referrers: the layout copy verifies with the signer.
	orasLayout := filepath.Join(t.TempDir(), "oras-layout")
	run(t, oras, append([]string{"cp", "-r", "--to-oci-layout", ref, orasLayout + ":copied"}, orasFromArgs(reg)...)...)
	p.MustRun(t, "bundle", "verify", "oci:"+orasLayout+":copied", "--signer", signerFile(t), "--identity", key)

	// skopeo copy to an OCI layout keeps the digest but not the signature:
	// refused with exit 9, accepted with --allow-unsigned.
	layout := filepath.Join(t.TempDir(), "layout")
	run(t, skopeo, append(append([]string{"copy"}, skopeoArgs(t, reg, "src-")...), "docker://"+ref, "oci:"+layout+":copied")...)
	ins := p.MustRun(t, "bundle", "inspect", "oci:"+layout+":copied", "-o", "json").Stdout
	if !strings.Contains(ins, `"digest": "`+res.Digest+`"`) {
		t.Fatalf("the oci copy has another digest than %s:\n%s", res.Digest, ins)
	}
	if r := p.Run(t, "bundle", "verify", "oci:"+layout+":copied", "--signer", signerFile(t), "--identity", key); r.ExitCode != 9 || !strings.Contains(r.Stderr, "not signed") {
		t.Fatalf("verify of a copy without its signature: exit %d, want 9\n%s", r.ExitCode, r.Combined())
	}
	v := p.MustRun(t, "bundle", "verify", "oci:"+layout+":copied", "--allow-unsigned", "--identity", key, "-o", "json").Stdout
	if !strings.Contains(v, `"decrypted": true`) || !strings.Contains(v, res.Digest) {
		t.Fatalf("verify of the oci copy:\n%s", v)
	}

	// And back to the registry under another name: still the same digest.
	back := reg.Ref("assisted/copy", "v2")
	run(t, skopeo, append(append([]string{"copy"}, skopeoArgs(t, reg, "dest-")...), "oci:"+layout+":copied", "docker://"+back)...)
	if got := run(t, oras, append([]string{"manifest", "fetch", back}, orasArgs(reg)...)...); got != raw {
		t.Fatalf("manifest changed on the way back:\n%s", got)
	}
	vb := p.MustRun(t, append([]string{"bundle", "verify", back, "--allow-unsigned", "--identity", key, "-o", "json"}, registryArgs(reg)...)...).Stdout
	if !strings.Contains(vb, `"decrypted": true`) || !strings.Contains(vb, res.Digest) {
		t.Fatalf("verify of the copy pushed back:\n%s", vb)
	}

	// The bundle extracts with the xattr and the modes, without installercache.
	out := filepath.Join(t.TempDir(), "out")
	p.MustRun(t, append([]string{"bundle", "extract", ref, "--signer", signerFile(t), "--identity", key, "--dir", out}, registryArgs(reg)...)...)
	assertExtracted(t, data, filepath.Join(out, "files"))
}

// skopeoArgs are skopeo's TLS and auth flags for reg; prefix is "", "src-" or "dest-".
func skopeoArgs(t *testing.T, reg *harness.Registry, prefix string) []string {
	t.Helper()
	var a []string
	if reg.PlainHTTP {
		return append(a, "--"+prefix+"tls-verify=false")
	}
	certDir := t.TempDir()
	ca, err := os.ReadFile(reg.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(certDir, "ca.crt"), ca, 0o644); err != nil {
		t.Fatal(err)
	}
	a = append(a, "--"+prefix+"cert-dir", certDir)
	if reg.AuthFile != "" {
		a = append(a, "--"+prefix+"authfile", reg.AuthFile)
	}
	return a
}
