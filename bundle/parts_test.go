package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/klauspost/compress/zstd"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/files"
)

// partsData is dataDir plus a log of about 3 MiB of text and a 1.5 MiB gzip
// archive of random bytes (stored as raw zstd frames): with 1 MiB parts, part
// boundaries fall inside compressed and inside stored content.
func partsData(t *testing.T) (dir string, bigLog, archive []byte) {
	t.Helper()
	dir = dataDir(t)
	rng := rand.New(rand.NewChaCha8([32]byte{3}))
	var log bytes.Buffer
	for log.Len() < 3<<20 {
		fmt.Fprintf(&log, "time=%d level=info msg=\"host %d moved to stage %d\"\n", rng.Uint64(), rng.IntN(50), rng.IntN(9))
	}
	raw := make([]byte, 3<<19)
	for i := range raw {
		raw[i] = byte(rng.Uint32())
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.NoCompression)
	zw.Write(raw)
	zw.Close()
	logs := filepath.Join(dir, clusterID, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(logs, "a-service.log"), log.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(logs, "b-host.tar.gz"), gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, log.Bytes(), gz.Bytes()
}

func layoutManifest(t *testing.T, dir string) (ocispec.Manifest, string) {
	t.Helper()
	var idx ocispec.Index
	raw, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &idx); err != nil || len(idx.Manifests) != 1 {
		t.Fatalf("index.json: %v, %d manifests", err, len(idx.Manifests))
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(readBlob(t, dir, idx.Manifests[0].Digest), &m); err != nil {
		t.Fatal(err)
	}
	return m, idx.Manifests[0].Digest.String()
}

func readBlob(t *testing.T, dir string, d digest.Digest) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "blobs", "sha256", d.Encoded()))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writeBlob stores b in the layout and returns its descriptor.
func writeBlob(t *testing.T, dir, mediaType string, b []byte) ocispec.Descriptor {
	t.Helper()
	d := digest.FromBytes(b)
	if err := os.WriteFile(filepath.Join(dir, "blobs", "sha256", d.Encoded()), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return ocispec.Descriptor{MediaType: mediaType, Digest: d, Size: int64(len(b))}
}

// rewriteLayout edits the layout's manifest (and, through meta, its
// metadata), as someone who can write to the registry could, and points the
// index at the result.
func rewriteLayout(t *testing.T, dir string, edit func(m *ocispec.Manifest, meta map[string]any)) {
	t.Helper()
	m, _ := layoutManifest(t, dir)
	var meta map[string]any
	if err := json.Unmarshal(readBlob(t, dir, m.Config.Digest), &meta); err != nil {
		t.Fatal(err)
	}
	edit(&m, meta)
	cb, _ := json.Marshal(meta)
	m.Config = writeBlob(t, dir, ConfigMediaType, cb)
	mb, _ := json.Marshal(m)
	md := writeBlob(t, dir, ocispec.MediaTypeImageManifest, mb)
	idx := ocispec.Index{Manifests: []ocispec.Descriptor{md}}
	idx.SchemaVersion = 2
	idx.MediaType = ocispec.MediaTypeImageIndex
	ib, _ := json.Marshal(idx)
	if err := os.WriteFile(filepath.Join(dir, "index.json"), ib, 0o644); err != nil {
		t.Fatal(err)
	}
}

func filesParts(m ocispec.Manifest) []ocispec.Descriptor {
	var out []ocispec.Descriptor
	for _, l := range m.Layers {
		if l.Annotations[AnnotationLayer] == string(LayerFiles) {
			out = append(out, l)
		}
	}
	return out
}

// TestParts_EachPartStandsAloneAndTheyJoinToTheTar: with 1 MiB parts, the
// files layer is several blobs; each is a whole age stream holding a whole
// zstd stream, read here with filippo.io/age and klauspost's decoder alone
// (not our reader), and their plaintexts joined in manifest order are the
// tar of the tree: every part but the last holds exactly the part size.
func TestParts_EachPartStandsAloneAndTheyJoinToTheTar(t *testing.T) {
	id := newIdentity(t)
	data, bigLog, archive := partsData(t)
	dir := filepath.Join(t.TempDir(), "layout")
	res := create(t, "oci:"+dir, CreateOptions{Files: &FilesOptions{Dir: data}, Recipients: []age.Recipient{id.Recipient()}, PartSize: MinPartSize})
	m, _ := layoutManifest(t, dir)
	parts := filesParts(m)
	if len(parts) < 4 || len(parts) != len(m.Layers) {
		t.Fatalf("%d files parts of %d layers, want >= 4 and all", len(parts), len(m.Layers))
	}
	if len(res.Layers) != 1 || len(res.Layers[0].Parts) != len(parts) || res.Metadata.Files.Parts != len(parts) {
		t.Fatalf("result: %d layers, %d parts; metadata parts %d; manifest %d", len(res.Layers), len(res.Layers[0].Parts), res.Metadata.Files.Parts, len(parts))
	}
	var joined bytes.Buffer
	for i, p := range parts {
		if want := fmt.Sprintf("files.part%04d.tar.zst.age", i+1); p.Annotations[ocispec.AnnotationTitle] != want {
			t.Fatalf("part %d title %q, want %q", i, p.Annotations[ocispec.AnnotationTitle], want)
		}
		ar, err := age.Decrypt(bytes.NewReader(readBlob(t, dir, p.Digest)), id)
		if err != nil {
			t.Fatalf("part %d: age: %v", i, err)
		}
		zr, err := zstd.NewReader(ar)
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(&joined, zr)
		zr.Close()
		if err != nil {
			t.Fatalf("part %d: zstd: %v", i, err)
		}
		if i < len(parts)-1 && n != MinPartSize {
			t.Fatalf("part %d holds %d bytes of plaintext, want %d", i, n, MinPartSize)
		}
		if n != res.Layers[0].Parts[i].PlainBytes {
			t.Fatalf("part %d: %d plaintext bytes, the result says %d", i, n, res.Layers[0].Parts[i].PlainBytes)
		}
	}
	got := map[string][]byte{}
	tr := tar.NewReader(&joined)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("joined parts are not a tar: %v", err)
		}
		b, _ := io.ReadAll(tr)
		got[h.Name] = b
	}
	for name, want := range map[string][]byte{clusterID + "/logs/a-service.log": bigLog, clusterID + "/logs/b-host.tar.gz": archive} {
		if !bytes.Equal(got[name], want) {
			t.Fatalf("%s: %d bytes in the joined tar, want %d equal bytes", name, len(got[name]), len(want))
		}
	}
}

// TestParts_OpenVerifyExtract: our reader joins the parts: Verify decodes
// the layer, reports its parts and total size, and the extraction gives the
// source bytes.
func TestParts_OpenVerifyExtract(t *testing.T) {
	ctx := context.Background()
	id := newIdentity(t)
	data, bigLog, archive := partsData(t)
	ref := "oci:" + filepath.Join(t.TempDir(), "layout")
	res := create(t, ref, CreateOptions{Database: fakeDB{data: "row\n"}, Files: &FilesOptions{Dir: data}, Recipients: []age.Recipient{id.Recipient()}, PartSize: MinPartSize})
	b, err := Open(ctx, ref, OpenOptions{Identities: []age.Identity{id}, AllowUnsigned: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	rep, err := b.Verify(ctx, VerifyOptions{})
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	fl := rep.Layers[1]
	if fl.Kind != LayerFiles || !fl.Decoded || fl.Parts != len(res.Layers[1].Parts) || fl.Size != res.Layers[1].Size {
		t.Fatalf("files report %+v, result %d parts of %d bytes", fl, len(res.Layers[1].Parts), res.Layers[1].Size)
	}
	out := filepath.Join(t.TempDir(), "staged")
	if _, err := b.ExtractFiles(ctx, out, files.ExtractOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]byte{"a-service.log": bigLog, "b-host.tar.gz": archive} {
		got, err := os.ReadFile(filepath.Join(out, clusterID, "logs", name))
		if err != nil || sha256.Sum256(got) != sha256.Sum256(want) {
			t.Fatalf("%s extracted: %d bytes, %v; want the source's %d", name, len(got), err, len(want))
		}
	}
}

// TestParts_UnencryptedIsReproducible: where parts end depends only on the
// byte count, so equal input gives equal parts and an equal digest.
func TestParts_UnencryptedIsReproducible(t *testing.T) {
	data, _, _ := partsData(t)
	opts := CreateOptions{Files: &FilesOptions{Dir: data}, PartSize: MinPartSize, Created: time.Unix(1700000000, 0)}
	a := create(t, "oci:"+filepath.Join(t.TempDir(), "a"), opts)
	b := create(t, "oci:"+filepath.Join(t.TempDir(), "b"), opts)
	if a.Digest != b.Digest || len(a.Layers[0].Parts) < 4 {
		t.Fatalf("digests %s, %s; %d parts", a.Digest, b.Digest, len(a.Layers[0].Parts))
	}
}

// TestParts_HostileLayouts: a manifest edited around the parts is refused,
// before any layer is read where the manifest alone tells, else by Verify.
func TestParts_HostileLayouts(t *testing.T) {
	ctx := context.Background()
	id := newIdentity(t)
	data, _, _ := partsData(t)
	base := filepath.Join(t.TempDir(), "base")
	create(t, "oci:"+base, CreateOptions{Database: fakeDB{data: "row\n"}, Files: &FilesOptions{Dir: data}, Recipients: []age.Recipient{id.Recipient()}, PartSize: MinPartSize})
	cases := []struct {
		name   string
		edit   func(m *ocispec.Manifest, meta map[string]any)
		atOpen string // the error Open gives; empty: Open succeeds and Verify fails
	}{
		{"a part dropped", func(m *ocispec.Manifest, _ map[string]any) { m.Layers = m.Layers[:len(m.Layers)-1] }, "the metadata declares"},
		{"a part dropped, metadata edited to match", func(m *ocispec.Manifest, meta map[string]any) {
			m.Layers = m.Layers[:len(m.Layers)-1]
			meta["files"].(map[string]any)["parts"] = len(m.Layers) - 1
		}, ""},
		{"two parts swapped", func(m *ocispec.Manifest, _ map[string]any) { m.Layers[1], m.Layers[2] = m.Layers[2], m.Layers[1] }, ""},
		{"parts not consecutive", func(m *ocispec.Manifest, _ map[string]any) {
			m.Layers[0], m.Layers[2] = m.Layers[2], m.Layers[0] // files, files, database, files...
		}, "not consecutive"},
		{"parts in a format 1.1 bundle", func(m *ocispec.Manifest, meta map[string]any) {
			m.Annotations[AnnotationFormatVersion] = "1.1.0"
			meta["formatVersion"] = "1.1.0"
		}, "two files layers"},
		{"a part of another media type", func(m *ocispec.Manifest, _ map[string]any) {
			m.Layers[2].MediaType = LayerFiles.MediaType(false)
		}, "differ in media type"},
		{"a negative parts count", func(_ *ocispec.Manifest, meta map[string]any) { meta["files"].(map[string]any)["parts"] = -1 }, "the metadata declares -1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "layout")
			if err := os.CopyFS(dir, os.DirFS(base)); err != nil {
				t.Fatal(err)
			}
			rewriteLayout(t, dir, c.edit)
			b, err := Open(ctx, "oci:"+dir, OpenOptions{Identities: []age.Identity{id}, AllowUnsigned: true})
			if c.atOpen != "" {
				var fe *FormatError
				if !errors.As(err, &fe) || !strings.Contains(err.Error(), c.atOpen) {
					t.Fatalf("Open: %T %v, want a *FormatError saying %q", err, err, c.atOpen)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer b.Close()
			if _, err := b.Verify(ctx, VerifyOptions{}); err == nil {
				t.Fatal("Verify accepted the edited bundle")
			} else {
				t.Logf("Verify: %v", err)
			}
			out := filepath.Join(t.TempDir(), "staged")
			if _, err := b.ExtractFiles(ctx, out, files.ExtractOptions{}); err == nil {
				t.Fatal("ExtractFiles accepted the edited bundle")
			}
		})
	}
}
