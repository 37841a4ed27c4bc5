package e2e

import (
	"bytes"
	"compress/gzip"
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

	dir := filepath.Join(t.TempDir(), "layout")
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
