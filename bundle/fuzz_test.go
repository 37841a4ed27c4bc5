package bundle

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"filippo.io/age"
	"github.com/klauspost/compress/zstd"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/internal/codec"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/oci"
)

// memSource is an in-memory oci.Source: blobs by digest and one manifest.
type memSource struct {
	blobs    map[digest.Digest][]byte
	manifest ocispec.Descriptor
}

func (m *memSource) Resolve(context.Context) (ocispec.Descriptor, error) { return m.manifest, nil }
func (m *memSource) Reference() oci.Reference {
	return oci.Reference{Transport: oci.TransportLayout, Path: "mem"}
}
func (m *memSource) Close() error { return nil }
func (m *memSource) Fetch(_ context.Context, d ocispec.Descriptor) (io.ReadCloser, error) {
	b, ok := m.blobs[d.Digest]
	if !ok {
		return nil, fmt.Errorf("%s: not found", d.Digest)
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

func (m *memSource) put(b []byte) digest.Digest {
	d := digest.FromBytes(b)
	m.blobs[d] = b
	return d
}

// memWriter is an oci.Writer into a memSource.
type memWriter struct{ src *memSource }

func (w memWriter) NewBlob(_ context.Context, mt string, _ oci.BlobOptions) (oci.BlobWriter, error) {
	return &memBlobWriter{src: w.src, mt: mt}, nil
}

type memBlobWriter struct {
	src *memSource
	mt  string
	buf bytes.Buffer
}

func (b *memBlobWriter) Write(p []byte) (int, error) { return b.buf.Write(p) }
func (b *memBlobWriter) Abort()                      {}
func (b *memBlobWriter) Commit() (ocispec.Descriptor, error) {
	return ocispec.Descriptor{MediaType: b.mt, Digest: b.src.put(b.buf.Bytes()), Size: int64(b.buf.Len())}, nil
}

func (w memWriter) push(mt string, b []byte) ocispec.Descriptor {
	return ocispec.Descriptor{MediaType: mt, Digest: w.src.put(b), Size: int64(len(b))}
}

func (w memWriter) PushBytes(_ context.Context, mt string, b []byte) (ocispec.Descriptor, error) {
	return w.push(mt, b), nil
}
func (w memWriter) PushManifest(_ context.Context, mt string, b []byte) (ocispec.Descriptor, error) {
	d := w.push(mt, b)
	w.src.manifest = d
	return d, nil
}
func (memWriter) Close() error { return nil }
func (memWriter) Abort()       {}

// fuzzIdentity is fixed so the corpus stays meaningful across runs.
var fuzzIdentity, _ = age.ParseX25519Identity("AGE-SECRET-KEY-1GQ9778VQXMMJVE8SK7J6VT8UJ4HDQAJUVSFCWCM02D8GEWQ72PVQ2Y5J33")

func sampleTar() []byte {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	tw.WriteHeader(&tar.Header{Name: "d/", Typeflag: tar.TypeDir, Mode: 0o755})
	tw.WriteHeader(&tar.Header{Name: "d/f", Typeflag: tar.TypeReg, Mode: 0o600, Size: 3, PAXRecords: map[string]string{"SCHILY.xattr.user.x": "y"}})
	tw.Write([]byte("abc"))
	tw.WriteHeader(&tar.Header{Name: "d/l", Typeflag: tar.TypeSymlink, Linkname: "f"})
	tw.Close()
	return b.Bytes()
}

// encodeLayer is the writer's encoding of plain.
func encodeLayer(t testing.TB, plain []byte, encrypted bool) []byte {
	var out bytes.Buffer
	var rs []age.Recipient
	if encrypted {
		rs = []age.Recipient{fuzzIdentity.Recipient()}
	}
	lw, err := codec.NewLayerWriter(&out, rs, zstd.SpeedFastest)
	if err != nil {
		t.Fatal(err)
	}
	lw.Write(plain)
	lw.Close()
	return out.Bytes()
}

// FuzzLayerReader feeds arbitrary blobs (whose descriptor matches, so the
// digest check passes) through age and zstd decoding and the files check: no
// panic, and every failure is one of the typed errors.
func FuzzLayerReader(f *testing.F) {
	f.Add(encodeLayer(f, sampleTar(), false), false)
	f.Add(encodeLayer(f, sampleTar(), true), true)
	f.Add([]byte("age-encryption.org/v1\n-> X25519 abc\n"), true)
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0}, false)
	f.Fuzz(func(t *testing.T, blob []byte, encrypted bool) {
		src := &memSource{blobs: map[digest.Digest][]byte{}}
		d := src.put(blob)
		b := &Bundle{src: src, identities: []age.Identity{fuzzIdentity}, progress: nopProgress{}}
		l := Layer{Kind: LayerFiles, Known: true, Encrypted: encrypted, Descriptor: ocispec.Descriptor{MediaType: LayerFiles.MediaType(encrypted), Digest: d, Size: int64(len(blob))}}
		b.Layers = []Layer{l}
		// Declared counts far above anything a fuzzed blob holds: every entry
		// is checked (the end's count mismatch is a typed FormatError).
		huge := int64(1) << 40
		b.Metadata = &Metadata{FormatVersion: FormatVersion, Encryption: EncryptionInfo{Scheme: EncryptionNone},
			Files: &FilesInfo{Files: huge, Dirs: huge, Symlinks: huge, HardLinks: huge, Bytes: huge}}
		var lr LayerReport
		err := b.verifyDecoded(context.Background(), l, &lr, VerifyOptions{})
		if err == nil {
			return
		}
		// The digest matches, so the only integrity error is ciphertext that
		// fails age's authentication (altered after encryption).
		var ie *IntegrityError
		if errors.As(err, &ie) && (!encrypted || !strings.HasPrefix(ie.Reason, ReasonTampered)) {
			t.Fatalf("integrity error on a blob that matches its descriptor: %v", err)
		}
	})
}

// FuzzOpen decodes arbitrary manifests and configs strictly: no panic, and
// only a well-formed bundle opens.
func FuzzOpen(f *testing.F) {
	src := &memSource{blobs: map[digest.Digest][]byte{}}
	if _, err := Write(context.Background(), memWriter{src}, CreateOptions{Resources: nil, Database: fakeDB{data: "x"}}); err != nil {
		f.Fatal(err)
	}
	man := src.blobs[src.manifest.Digest]
	var cfg []byte
	for _, b := range src.blobs {
		if bytes.Contains(b, []byte(`"formatVersion"`)) {
			cfg = b
		}
	}
	f.Add(man, cfg)
	f.Add([]byte(`{"schemaVersion":2,"artifactType":"application/vnd.kubectl-assisted.bundle","annotations":{"io.kubectl-assisted.bundle.format-version":"2.0.0"}}`), cfg)
	f.Add([]byte(`{}`), []byte(`{}`))
	f.Fuzz(func(t *testing.T, manifest, config []byte) {
		s := &memSource{blobs: map[digest.Digest][]byte{}}
		s.put(config)
		d := s.put(manifest)
		s.manifest = ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: d, Size: int64(len(manifest))}
		b, err := OpenSource(context.Background(), s, OpenOptions{AllowUnsigned: true})
		if err != nil {
			return
		}
		if b.Manifest.ArtifactType != ArtifactType || b.Metadata == nil || b.Metadata.FormatVersion == "" {
			t.Fatalf("opened a bundle that is not one: %+v", b.Manifest)
		}
	})
}
