package e2e

import (
	"crypto"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/sign"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// signingKeyPair makes a key pair with openssl, as a user would (PEM PKCS#8
// private key, PEM PKIX public key): algo is "ed25519" or "p256".
func signingKeyPair(t testing.TB, dir, algo string) (keyFile, pubFile string) {
	t.Helper()
	openssl := harness.RequireTool(t, "openssl")
	keyFile, pubFile = filepath.Join(dir, algo+".key"), filepath.Join(dir, algo+".pub")
	gen := []string{"genpkey", "-algorithm", "ed25519", "-out", keyFile}
	if algo == "p256" {
		gen = []string{"genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", keyFile}
	}
	for _, args := range [][]string{gen, {"pkey", "-in", keyFile, "-pubout", "-out", pubFile}} {
		if out, err := exec.Command(openssl, args...).CombinedOutput(); err != nil {
			t.Fatalf("openssl %v: %v\n%s", args, err, out)
		}
	}
	return keyFile, pubFile
}

var (
	node0KeyOnce           sync.Once
	node0KeyFile, node0Pub string
	node0KeyErr            error
)

// node0Signer is the signing key pair (made once per test binary) the e2e
// tests sign their bundles with, as node 0 would: the private key file, the
// public key file (--signer) and the parsed private key.
func node0Signer(t testing.TB) (keyFile, pubFile string, key crypto.Signer) {
	t.Helper()
	node0KeyOnce.Do(func() {
		dir, err := os.MkdirTemp("", "e2e-signing-")
		if err != nil {
			node0KeyErr = err
			return
		}
		harness.AtExit(func() { _ = os.RemoveAll(dir) })
		node0KeyFile, node0Pub = signingKeyPair(t, dir, "ed25519")
	})
	if node0KeyErr != nil {
		t.Fatal(node0KeyErr)
	}
	if node0KeyFile == "" {
		t.Fatal("no signing key (openssl failed in an earlier test)")
	}
	data, err := os.ReadFile(node0KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	k, err := sign.ParsePrivateKey(data)
	if err != nil {
		t.Fatal(err)
	}
	return node0KeyFile, node0Pub, k
}

// signerArgs are the flags that make a command accept bundles node0Signer signed.
func signerArgs(t testing.TB) []string {
	t.Helper()
	_, pub, _ := node0Signer(t)
	return []string{"--signer", pub}
}

// signingArgs are the flags that make bundle create sign with node0Signer.
func signingArgs(t testing.TB) []string {
	t.Helper()
	key, _, _ := node0Signer(t)
	return []string{"--signing-key", key}
}

// signerFile is node0Signer's public key file (--signer).
func signerFile(t testing.TB) string {
	t.Helper()
	_, pub, _ := node0Signer(t)
	return pub
}

// signingKeyFile is node0Signer's private key file (--signing-key).
func signingKeyFile(t testing.TB) string {
	t.Helper()
	key, _, _ := node0Signer(t)
	return key
}

// cosignSigArtifactType is the artifactType of cosign's signature manifests
// stored as referrers (cosign's specs/SIGNATURE_SPEC.md); spelled out so the
// tests check the contract, not the code's constant.
const cosignSigArtifactType = "application/vnd.dev.cosign.artifact.sig.v1+json"

// orasFromArgs are orasArgs for the source of `oras cp` (--from-* flags).
func orasFromArgs(r *harness.Registry) []string {
	var a []string
	if r.PlainHTTP {
		a = append(a, "--from-plain-http")
	}
	if r.CAFile != "" {
		a = append(a, "--from-ca-file", r.CAFile)
	}
	if r.AuthFile != "" {
		a = append(a, "--from-registry-config", r.AuthFile)
	}
	return a
}
