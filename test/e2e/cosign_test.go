package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// TestBundle_CosignVerifiesTheSignature: the signature `bundle create
// --signing-key` stores is cosign's key-pair signature of the manifest, so
// the real cosign CLI (test/tools/install.sh builds it) verifies a bundle
// signed with an ed25519 or a P-256 key made by openssl, and refuses it with
// another key. No transparency log is involved (--insecure-ignore-tlog).
// The format: sigstore/cosign specs/SIGNATURE_SPEC.md (simple signing
// payload, dev.cosignproject.cosign/signature, tag sha256-<hex>.sig).
func TestBundle_CosignVerifiesTheSignature(t *testing.T) {
	cosign := harness.RequireTool(t, "cosign")
	p := harness.NewPlugin(t)
	_, recipient := ageKey(t)
	data := assistedData(t, "kubeadmin-pw")
	regs := map[string]*harness.Registry{
		"olareg":          harness.StartInProcessRegistry(t),
		"docker-registry": harness.StartDockerRegistry(t, harness.DockerRegistryOptions{}),
	}
	home := t.TempDir()
	for regName, reg := range regs {
		for _, algo := range []string{"ed25519", "p256"} {
			t.Run(regName+"/"+algo, func(t *testing.T) {
				keys := t.TempDir()
				key, pub := signingKeyPair(t, keys, algo)
				_, otherPub := signingKeyPair(t, filepath.Join(t.TempDir()), algo)
				ref := reg.Ref("assisted/cosign", algo)
				res := parseCreate(t, p.MustRun(t, append([]string{"bundle", "create", "--to", ref, "--data-dir", data,
					"--recipient", recipient, "--signing-key", key, "-o", "json"}, registryArgs(reg)...)...).Stdout)
				pinned := reg.Host + "/assisted/cosign@" + res.Digest
				verify := func(pubKey string) (string, error) {
					cmd := exec.Command(cosign, "verify", "--key", pubKey, "--insecure-ignore-tlog=true",
						"--allow-http-registry", "--output", "json", pinned)
					cmd.Env = []string{"HOME=" + home, "TUF_ROOT=" + filepath.Join(home, "tuf"), "SIGSTORE_NO_CACHE=true"}
					out, err := cmd.CombinedOutput()
					return string(out), err
				}
				out, err := verify(pub)
				if err != nil {
					t.Fatalf("cosign verify --key %s %s: %v\n%s", filepath.Base(pub), pinned, err, out)
				}
				if !strings.Contains(out, `"docker-manifest-digest":"`+res.Digest+`"`) {
					t.Fatalf("cosign verified another payload:\n%s", out)
				}
				if out, err := verify(otherPub); err == nil {
					t.Fatalf("cosign accepted another key:\n%s", out)
				}
			})
		}
	}
}
