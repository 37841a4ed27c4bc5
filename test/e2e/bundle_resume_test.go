package e2e

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// bulkSize is the incompressible file the resume tests add to the data, so
// the files blob is large enough to cut in the middle.
const bulkSize = 48 << 20

// bulkData is assistedData plus a gzip archive of bulkSize random bytes (like
// the gzipped log archives that make most of /data: the bundle stores it as
// zstd raw blocks).
func bulkData(t *testing.T, kubeadminPassword string) string {
	t.Helper()
	d := assistedData(t, kubeadminPassword)
	b := make([]byte, bulkSize)
	rng := rand.New(rand.NewChaCha8([32]byte{7}))
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.NoCompression)
	zw.Write(b)
	zw.Close()
	if err := os.WriteFile(filepath.Join(d, bundleClusterID, "logs", "host", "big.tar.gz"), gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return d
}

// resumeResult is the part of `bundle create -o json` about the spool.
type resumeResult struct {
	Digest string `json:"digest"`
	Layers []struct {
		Kind   string `json:"kind"`
		Digest string `json:"digest"`
		Size   int64  `json:"size"`
		Reused string `json:"reused"`
		Parts  []struct {
			Digest string `json:"digest"`
		} `json:"parts"`
	} `json:"layers"`
	Spool *struct {
		Dir    string `json:"dir"`
		Reused []struct {
			Kind      string `json:"kind"`
			How       string `json:"how"`
			SentBytes int64  `json:"sentBytes"`
		} `json:"reused"`
	} `json:"spool"`
}

// TestBundle_ResumePushAfterNetworkCut cuts the network in the middle of the
// files blob's upload (a TCP proxy in front of the in-process registry stops
// passing bytes and refuses connections). The push fails with a clear error
// and exit code; the rerun of the same command, network back, reuses the
// spooled ciphertext and resumes the registry's upload session: it sends
// fewer bytes than the first run, and the bundle verifies with the identity.
func TestBundle_ResumePushAfterNetworkCut(t *testing.T) {
	testResumePush(t, harness.StartInProcessRegistry(t), true, "")
}

// TestBundle_ResumePushInParts is the same with the files layer in parts of
// 8 MiB (about 6 blobs, uploaded side by side): the cut fails several
// uploads; the spool holds every part, and the rerun sends only what the
// registry lacks, resuming the sessions it kept.
func TestBundle_ResumePushInParts(t *testing.T) {
	testResumePush(t, harness.StartInProcessRegistry(t), true, "8Mi")
}

// TestBundle_ResumePushDockerRegistry is the same against Debian's
// docker-registry (distribution 2.8), which drops an upload session whose
// last PATCH was cut in the middle ("upload resumed at wrong offset"): the
// rerun cannot resume the session, so it uploads the spooled ciphertext in a
// new one, without reading, compressing or encrypting the files again.
func TestBundle_ResumePushDockerRegistry(t *testing.T) {
	testResumePush(t, harness.StartDockerRegistry(t, harness.DockerRegistryOptions{}), false, "")
}

// testResumePush cuts the link 30 MiB into the push; partSize, when given,
// is --part-size.
func testResumePush(t *testing.T, reg *harness.Registry, sessionKept bool, partSize string) {
	p := harness.NewPlugin(t)
	key, recipient := ageKey(t)
	const kubeadminPassword = "kubeadmin-pw-RESUME-7d1e"
	data := bulkData(t, kubeadminPassword)
	proxy := harness.StartFaultyProxy(t, reg.Host)
	viaProxy := *reg
	viaProxy.Host = proxy.Addr
	ref := viaProxy.Ref("assisted/node0", "v1")
	args := append([]string{"bundle", "create", "--to", ref, "--data-dir", data, "--recipient", recipient, "--signing-key", signingKeyFile(t), "-o", "json"}, registryArgs(&viaProxy)...)
	wantBlobs := 1
	if partSize != "" {
		args = append(args, "--part-size", partSize)
		wantBlobs = bulkSize/(8<<20) + 1 // 6 full parts of the bulk file, then the rest of the tree
	}

	// First run: the link goes down 30 MiB into the upload.
	proxy.CutUpAfter(30 << 20)
	first := p.Run(t, args...)
	// Exit 1: a network failure (docs/bundle-format.md, exit codes).
	if first.ExitCode != 1 || proxy.Cuts() != 1 {
		t.Fatalf("first push: exit %d, %d cuts; want exit 1 after the cut\n%s", first.ExitCode, proxy.Cuts(), first.Combined())
	}
	if !strings.Contains(first.Stderr, "run the same command again to resume") {
		t.Fatalf("first push: the error does not say how to resume:\n%s", first.Stderr)
	}
	for _, secret := range []string{kubeadminPassword, recipient} {
		if strings.Contains(first.Stdout+first.Stderr, secret) {
			t.Fatalf("first push: output holds %q:\n%s", secret, first.Combined())
		}
	}
	firstBytes := proxy.Up()
	spool := filepath.Join(p.Home, ".cache", "kubectl-assisted", "spool")
	assertSpoolCiphertextOnly(t, spool, kubeadminPassword, wantBlobs)

	// Second run, network back: the same command completes.
	proxy.Restore()
	second := p.MustRun(t, args...)
	secondBytes := proxy.Up() - firstBytes
	var res resumeResult
	if err := json.Unmarshal([]byte(second.Stdout), &res); err != nil || len(res.Layers) != 1 {
		t.Fatalf("second push result: %v\n%s", err, second.Stdout)
	}
	how := res.Layers[0].Reused
	if partSize != "" && len(res.Layers[0].Parts) != wantBlobs {
		t.Fatalf("second push: %d parts, want %d\n%s", len(res.Layers[0].Parts), wantBlobs, second.Stdout)
	}
	t.Logf("first run sent %d bytes, second %d (files blob %d bytes, reused: %s)", firstBytes, secondBytes, res.Layers[0].Size, how)
	if sessionKept {
		if how != "resumed" {
			t.Fatalf("second push: files layer reused %q, want resumed\n%s", how, second.Stdout)
		}
		if secondBytes >= firstBytes {
			t.Fatalf("second push sent %d bytes, not fewer than the first's %d", secondBytes, firstBytes)
		}
	} else if how != "resumed" && how != "uploaded" {
		t.Fatalf("second push: files layer reused %q, want the spooled ciphertext resumed or uploaded\n%s", how, second.Stdout)
	}
	// A successful push leaves nothing in the spool.
	if left := spoolFiles(t, spool); len(left) > 0 {
		t.Fatalf("spool not cleaned after the successful push: %v", left)
	}

	// The bundle is whole: every digest, the decryption, the format.
	v := p.MustRun(t, append([]string{"bundle", "verify", reg.Ref("assisted/node0", "v1"), "--signer", signerFile(t), "--identity", key, "-o", "json"}, registryArgs(reg)...)...).Stdout
	if !strings.Contains(v, `"decrypted": true`) || !strings.Contains(v, res.Digest) {
		t.Fatalf("verify after the resumed push:\n%s", v)
	}
}

// assertSpoolCiphertextOnly checks what a failed push left in the spool: a
// record and a blob, private, and no plaintext (the kubeadmin password of
// the data must not appear in any file).
func assertSpoolCiphertextOnly(t *testing.T, dir, secret string, wantBlobs int) {
	t.Helper()
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatalf("spool after the failed push: %v", err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Fatalf("spool directory mode %v, want 0700", fi.Mode().Perm())
	}
	names := spoolFiles(t, dir)
	var blobs int
	for _, n := range names {
		p := filepath.Join(dir, n)
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Fatalf("spool file %s mode %v: readable by others", n, fi.Mode().Perm())
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), secret) {
			t.Fatalf("spool file %s holds plaintext", n)
		}
		if strings.HasSuffix(n, ".blob") {
			blobs++
			// Each part's file was preallocated for a part that does not
			// compress; a complete one keeps only its size.
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Blocks*512 > fi.Size()+64<<10 {
				t.Fatalf("spool blob %s: %d bytes allocated for its %d bytes (the preallocation was not given back)", n, st.Blocks*512, fi.Size())
			}
			if !strings.HasPrefix(string(b), "age-encryption.org/v1\n") {
				t.Fatalf("spool blob %s is not an age file", n)
			}
		}
	}
	if blobs != wantBlobs {
		t.Fatalf("spool after the failed push holds %d blobs, want %d: %v", blobs, wantBlobs, names)
	}
}

// spoolFiles lists the spool's records and blobs (lock files aside).
func spoolFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".lock") {
			names = append(names, e.Name())
		}
	}
	return names
}

// TestBundle_ExtractNetworkCut cuts the network while `bundle extract`
// downloads the files blob: the command fails with a clear error, and
// nothing is left behind, neither --dir nor its staging directory.
func TestBundle_ExtractNetworkCut(t *testing.T) {
	reg := harness.StartInProcessRegistry(t)
	p := harness.NewPlugin(t)
	key, recipient := ageKey(t)
	data := bulkData(t, "kubeadmin-pw-not-secret-here")
	ref := reg.Ref("assisted/node0", "v1")
	p.MustRun(t, append([]string{"bundle", "create", "--to", ref, "--data-dir", data, "--recipient", recipient, "--signing-key", signingKeyFile(t), "-o", "json"}, registryArgs(reg)...)...)

	proxy := harness.StartFaultyProxy(t, reg.Host)
	viaProxy := *reg
	viaProxy.Host = proxy.Addr
	proxy.CutDownAfter(20 << 20)
	parent := t.TempDir()
	out := filepath.Join(parent, "node0")
	r := p.Run(t, append([]string{"bundle", "extract", viaProxy.Ref("assisted/node0", "v1"), "--signer", signerFile(t), "--identity", key, "--dir", out}, registryArgs(&viaProxy)...)...)
	if r.ExitCode == 0 || proxy.Cuts() != 1 {
		t.Fatalf("extract through a cut link: exit %d, %d cuts\n%s", r.ExitCode, proxy.Cuts(), r.Combined())
	}
	if !strings.Contains(r.Stderr, "files") || !strings.Contains(r.Stderr, "blob") {
		t.Fatalf("extract error does not name the blob it was reading:\n%s", r.Stderr)
	}
	left, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		var names []string
		for _, e := range left {
			names = append(names, e.Name())
		}
		t.Fatalf("a failed extraction left %v in %s", names, parent)
	}
}

// TestBundle_ResumePushChangedTree: when the data changed between the failed
// push and the rerun, the spooled layer is not what the rerun must push; the
// rerun produces the layer again from the current tree, and its success
// clears the spool, the stale ciphertext included.
func TestBundle_ResumePushChangedTree(t *testing.T) {
	reg := harness.StartInProcessRegistry(t)
	p := harness.NewPlugin(t)
	key, recipient := ageKey(t)
	data := bulkData(t, "kubeadmin-pw-not-secret-here")
	proxy := harness.StartFaultyProxy(t, reg.Host)
	viaProxy := *reg
	viaProxy.Host = proxy.Addr
	ref := viaProxy.Ref("assisted/node0", "v1")
	args := append([]string{"bundle", "create", "--to", ref, "--data-dir", data, "--recipient", recipient, "--signing-key", signingKeyFile(t), "-o", "json"}, registryArgs(&viaProxy)...)

	proxy.CutUpAfter(30 << 20)
	if r := p.Run(t, args...); r.ExitCode == 0 {
		t.Fatalf("first push succeeded through a cut link\n%s", r.Combined())
	}
	proxy.Restore()
	spool := filepath.Join(p.Home, ".cache", "kubectl-assisted", "spool")
	if n := len(spoolFiles(t, spool)); n != 2 {
		t.Fatalf("spool after the failed push: %v, want a record and a blob", spoolFiles(t, spool))
	}

	// assisted-service wrote one more line of log in between.
	f, err := os.OpenFile(filepath.Join(data, bundleClusterID, "logs", "host", "logs.tar.gz"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("one more line\n")
	f.Close()

	second := p.MustRun(t, args...)
	var res resumeResult
	if err := json.Unmarshal([]byte(second.Stdout), &res); err != nil || len(res.Layers) != 1 {
		t.Fatalf("second push result: %v\n%s", err, second.Stdout)
	}
	if res.Layers[0].Reused != "" {
		t.Fatalf("the files layer of a changed tree was taken from the spool (%s)", res.Layers[0].Reused)
	}
	if left := spoolFiles(t, spool); len(left) > 0 {
		t.Fatalf("spool not cleaned after the successful push: %v", left)
	}
	// The pushed layer holds the new line.
	out := filepath.Join(t.TempDir(), "x")
	p.MustRun(t, append([]string{"bundle", "extract", reg.Ref("assisted/node0", "v1"), "--signer", signerFile(t), "--identity", key, "--dir", out}, registryArgs(reg)...)...)
	b, err := os.ReadFile(filepath.Join(out, "files", bundleClusterID, "logs", "host", "logs.tar.gz"))
	if err != nil || !strings.HasSuffix(string(b), "one more line\n") {
		t.Fatalf("extracted log: %v, does not end with the line written before the rerun", err)
	}
}
