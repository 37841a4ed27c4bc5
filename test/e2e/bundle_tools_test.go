package e2e

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// A files layer is readable with the standard tools alone, as
// docs/bundle-format.md promises: `age -d` (filippo.io/age's CLI), then the
// `zstd` CLI, which must read the layer's many frames (2 MiB compressed
// frames, a stored frame for a gzip archive, more compressed frames after
// it) as one stream, then `tar -x`. The data spans several frames on both
// sides of the stored one, so a frame cut wrong, out of order or dropped
// shows as a difference.
func TestBundleFilesLayer_StandardToolsReadIt(t *testing.T) {
	t.Parallel()
	ageBin := harness.RequireTool(t, "age")
	zstdBin := harness.RequireTool(t, "zstd")
	tarBin := harness.RequireTool(t, "tar")
	key, recipient := ageKey(t)
	data, files := framesData(t)

	dir := filepath.Join(t.TempDir(), "layout")
	testStandardToolsReadIt(t, ageBin, zstdBin, tarBin, key, recipient, data, files, dir)
}

// framesData is a tree whose files layer spans several zstd frames on both
// sides of a stored one (about 12 MiB of plaintext).
func framesData(t *testing.T) (string, map[string][]byte) {
	data := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 4))
	logText := func(n int) []byte {
		var b bytes.Buffer
		for i := 0; b.Len() < n; i++ {
			fmt.Fprintf(&b, "time=2026-12-03T10:%02d:%02dZ level=info msg=\"host %d progress\" stage=%d\n", i/60%60, i%60, rng.IntN(5000), rng.IntN(9))
		}
		return b.Bytes()[:n]
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.NoCompression)
	noise := make([]byte, 3<<20)
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	zw.Write(noise)
	zw.Close()
	files := map[string][]byte{
		"a/events.log":         logText(5<<20 + 1234), // three compressed frames
		"b/logs/logs.tar.gz":   gz.Bytes(),            // a stored frame
		"c/more.log":           logText(4<<20 + 17),   // frames after it
		"c/small.txt":          []byte("small\n"),
		bundleClusterID + "/x": logText(100),
	}
	for rel, content := range files {
		p := filepath.Join(data, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return data, files
}

func testStandardToolsReadIt(t *testing.T, ageBin, zstdBin, tarBin, key, recipient, data string, files map[string][]byte, dir string) {
	p := harness.NewPlugin(t)
	created := parseCreate(t, p.MustRun(t, "bundle", "create", "--to", "oci:"+dir+":v1", "--data-dir", data, "--recipient", recipient, "-o", "json").Stdout)
	var blob string
	for _, l := range created.Layers {
		if l.Kind == "files" {
			blob = filepath.Join(dir, "blobs", "sha256", strings.TrimPrefix(l.Digest, "sha256:"))
		}
	}
	if blob == "" {
		t.Fatalf("no files layer in %+v", created)
	}

	out := t.TempDir()
	script := fmt.Sprintf("set -o pipefail; %q -d -i %q %q | %q -q -d -c | %q -C %q -xf -", ageBin, key, blob, zstdBin, tarBin, out)
	if b, err := exec.Command("bash", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("age | zstd | tar: %v\n%s", err, b)
	}
	for rel, want := range files {
		got, err := os.ReadFile(filepath.Join(out, rel))
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: the standard tools give %d bytes, the source has %d (or other bytes)", rel, len(got), len(want))
		}
	}
}

// TestBundleFilesLayer_PartsThroughRealRegistry: with --part-size 2Mi the
// files layer of about 12 MiB goes to Debian's docker-registry (distribution
// 2.8) as several blobs, uploaded side by side. `oras pull` writes them under
// their titles (files.part0001.tar.zst.age, ...); each one, through the real
// `age -d` and `zstd -d`, in name order, joined, is the tar that `tar -x`
// turns into the source tree. Our own verify and extract read it too, and
// inspect lists the parts. A part size below 1Mi is a usage error.
func TestBundleFilesLayer_PartsThroughRealRegistry(t *testing.T) {
	t.Parallel()
	ageBin := harness.RequireTool(t, "age")
	zstdBin := harness.RequireTool(t, "zstd")
	tarBin := harness.RequireTool(t, "tar")
	oras := harness.RequireTool(t, "oras")
	reg := harness.StartDockerRegistry(t, harness.DockerRegistryOptions{})
	key, recipient := ageKey(t)
	data, files := framesData(t)
	p := harness.NewPlugin(t)
	ref := reg.Ref("assisted/parts", "v1")

	if r := p.Run(t, append([]string{"bundle", "create", "--to", ref, "--data-dir", data, "--recipient", recipient, "--part-size", "100Ki"}, registryArgs(reg)...)...); r.ExitCode != 2 || !strings.Contains(r.Stderr, "--part-size") {
		t.Fatalf("--part-size 100Ki: exit %d, want 2 (usage) naming the flag\n%s", r.ExitCode, r.Combined())
	}
	out := p.MustRun(t, append([]string{"bundle", "create", "--to", ref, "--data-dir", data, "--recipient", recipient, "--part-size", "2Mi", "-o", "json"}, registryArgs(reg)...)...).Stdout
	var created struct {
		Layers []struct {
			Kind  string `json:"kind"`
			Size  int64  `json:"size"`
			Parts []struct {
				Digest     string `json:"digest"`
				Size       int64  `json:"size"`
				PlainBytes int64  `json:"plainBytes"`
			} `json:"parts"`
		} `json:"layers"`
		Metadata struct {
			Files struct {
				Parts int `json:"parts"`
			} `json:"files"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(out), &created); err != nil || len(created.Layers) != 1 {
		t.Fatalf("create -o json: %v\n%s", err, out)
	}
	parts := created.Layers[0].Parts
	// 12 MiB of tar in parts of 2 MiB of plaintext.
	if len(parts) < 6 || created.Metadata.Files.Parts != len(parts) {
		t.Fatalf("%d parts, metadata says %d; want >= 6 and equal\n%s", len(parts), created.Metadata.Files.Parts, out)
	}
	var sum int64
	for i, pt := range parts {
		sum += pt.Size
		if i < len(parts)-1 && pt.PlainBytes != 2<<20 {
			t.Fatalf("part %d holds %d bytes of plaintext, want 2 MiB", i+1, pt.PlainBytes)
		}
	}
	if sum != created.Layers[0].Size {
		t.Fatalf("parts sum to %d bytes, the layer says %d", sum, created.Layers[0].Size)
	}

	pulled := t.TempDir()
	if b, err := exec.Command(oras, "pull", "--plain-http", ref, "-o", pulled).CombinedOutput(); err != nil {
		t.Fatalf("oras pull: %v\n%s", err, b)
	}
	names, _ := filepath.Glob(filepath.Join(pulled, "files.part*.tar.zst.age"))
	if len(names) != len(parts) {
		t.Fatalf("oras pull wrote %v, want %d parts", names, len(parts))
	}
	tree := t.TempDir()
	script := fmt.Sprintf("set -o pipefail; for f in %q/files.part*.tar.zst.age; do %q -d -i %q \"$f\" | %q -q -d -c || exit 1; done | %q -C %q -xf -", pulled, ageBin, key, zstdBin, tarBin, tree)
	if b, err := exec.Command("bash", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("age | zstd per part, joined | tar: %v\n%s", err, b)
	}
	ours := filepath.Join(t.TempDir(), "ours")
	p.MustRun(t, append([]string{"bundle", "verify", ref, "--allow-unsigned", "--identity", key}, registryArgs(reg)...)...)
	p.MustRun(t, append([]string{"bundle", "extract", ref, "--allow-unsigned", "--identity", key, "--dir", ours}, registryArgs(reg)...)...)
	for rel, want := range files {
		for _, root := range []string{tree, filepath.Join(ours, "files")} {
			got, err := os.ReadFile(filepath.Join(root, rel))
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s under %s: %d bytes, %v; want the source's %d", rel, root, len(got), err, len(want))
			}
		}
	}
	insp := p.MustRun(t, append([]string{"bundle", "inspect", ref}, registryArgs(reg)...)...).Stdout
	if !strings.Contains(insp, fmt.Sprintf("in %d parts", len(parts))) || !strings.Contains(insp, parts[len(parts)-1].Digest) {
		t.Fatalf("inspect does not list the %d parts:\n%s", len(parts), insp)
	}
}
