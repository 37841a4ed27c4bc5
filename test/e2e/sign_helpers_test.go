package e2e

import (
	"bytes"
	"context"
	"crypto"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry/remote"

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

// fingerprintOf is a PEM public key's fingerprint as docs/bundle-format.md
// defines it: SHA-256 of the DER, computed here with openssl.
func fingerprintOf(t testing.TB, pubFile string) string {
	t.Helper()
	openssl := harness.RequireTool(t, "openssl")
	der, err := exec.Command(openssl, "pkey", "-pubin", "-in", pubFile, "-outform", "DER").Output()
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(der)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func repository(t testing.TB, reg *harness.Registry, repo string) *remote.Repository {
	t.Helper()
	r, err := remote.NewRepository(reg.Host + "/" + repo)
	if err != nil {
		t.Fatal(err)
	}
	r.PlainHTTP = reg.PlainHTTP
	return r
}

// fetchManifest reads the manifest tagged tag in assisted/node0.
func fetchManifest(t testing.TB, reg *harness.Registry, tag string) []byte {
	t.Helper()
	_, rc, err := repository(t, reg, "assisted/node0").FetchReference(context.Background(), tag)
	if err != nil {
		t.Fatalf("fetch %s: %v", tag, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pushManifest tags b (an OCI image manifest) as tag in assisted/node0.
func pushManifest(t testing.TB, reg *harness.Registry, tag string, b []byte) {
	t.Helper()
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(b), Size: int64(len(b))}
	if err := repository(t, reg, "assisted/node0").PushReference(context.Background(), desc, bytes.NewReader(b), tag); err != nil {
		t.Fatalf("push %s: %v", tag, err)
	}
}

// layoutIndex is an OCI layout's index.json.
type layoutIndex struct{ ocispec.Index }

func readIndex(t testing.TB, dir string) *layoutIndex {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var idx layoutIndex
	if err := json.Unmarshal(b, &idx.Index); err != nil {
		t.Fatal(err)
	}
	return &idx
}

func (x *layoutIndex) find(t testing.TB, tag string) ocispec.Descriptor {
	t.Helper()
	for _, m := range x.Manifests {
		if m.Annotations[ocispec.AnnotationRefName] == tag {
			return m
		}
	}
	t.Fatalf("no manifest tagged %s in index.json", tag)
	return ocispec.Descriptor{}
}

func (x *layoutIndex) save(t testing.TB, dir string) {
	t.Helper()
	b, err := json.Marshal(x.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "index.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// retag points tag at another manifest.
func (x *layoutIndex) retag(t testing.TB, dir, tag string, d digest.Digest, size int64) {
	t.Helper()
	for i, m := range x.Manifests {
		if m.Annotations[ocispec.AnnotationRefName] == tag {
			x.Manifests[i].Digest, x.Manifests[i].Size = d, size
		}
	}
	x.save(t, dir)
}

// add tags desc as tag.
func (x *layoutIndex) add(t testing.TB, dir, tag string, desc ocispec.Descriptor) {
	t.Helper()
	desc.Annotations = map[string]string{ocispec.AnnotationRefName: tag}
	x.Manifests = append(x.Manifests, desc)
	x.save(t, dir)
}

func readBlob(t testing.TB, dir string, d digest.Digest) []byte {
	t.Helper()
	b, err := os.ReadFile(blobPath(dir, d.String()))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeBlob(t testing.TB, dir string, b []byte) digest.Digest {
	t.Helper()
	d := digest.FromBytes(b)
	if err := os.WriteFile(blobPath(dir, d.String()), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return d
}

// copyLayoutBlobs copies every blob of layout src into layout dst.
func copyLayoutBlobs(t testing.TB, src, dst string) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(src, "blobs", "sha256"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, "blobs", "sha256", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, "blobs", "sha256", e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
