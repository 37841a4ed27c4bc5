package e2e

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"
	"github.com/klauspost/compress/zstd"
	"golang.org/x/sys/unix"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// The hostile-bundle corpus, files part. Each bundle is what an attacker who
// can push to the tag makes from a real bundle: the files layer replaced by a
// crafted tar, re-encrypted to the bundle's public age recipient, the
// metadata and manifest rewritten and every digest recomputed (or the
// versions and digests themselves played with). Every case is refused by
// `bundle verify`, `bundle extract`, `restore` and `restore
// --dry-run=client`, each with the documented exit code and message, and has
// no effect: no file inside or outside the data directory (or beside the
// extraction directory), no table in the target database, no ConfigMap or
// Secret in the namespace.

// hostileCase is one crafted bundle.
type hostileCase struct {
	name string
	// entries is the files layer's tar; nil keeps the real bundle's layer.
	entries []byte
	// declared overrides the counts the metadata declares (default: what
	// the tar holds, so only the rule under test refuses it).
	declared map[string]int64
	// annotation and config are the manifest's and the metadata's format
	// versions (default bundle.FormatVersion).
	annotation, config string
	// noBounds leaves the largest entry undeclared in the metadata; bounds
	// marks a case about them (it has no variant without them).
	noBounds, bounds bool
	// edit plays digest games on the written layout.
	edit    func(t *testing.T, l *hostileLayout)
	exit    int
	message string
}

// tarOf writes entries (regular files get Size bytes of body) as a PAX tar.
func hostileTar(t *testing.T, entries ...tar.Header) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries {
		e := e
		if e.Format == tar.FormatUnknown {
			e.Format = tar.FormatPAX
		}
		if err := tw.WriteHeader(&e); err != nil {
			t.Fatalf("tar header %.60q: %v", e.Name, err)
		}
		if e.Typeflag == tar.TypeReg && e.Size > 0 {
			if _, err := io.CopyN(tw, zeros{}, e.Size); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// sparseBomb is a GNU PAX 0.1 sparse entry claiming 2 GiB with no data
// stored. archive/tar's writer refuses GNU.sparse records, so they are
// written under another name of the same length and renamed in the bytes (a
// PAX record block has no checksum).
func sparseBomb(t *testing.T) []byte {
	t.Helper()
	b := hostileTar(t, tar.Header{Name: "bomb", Typeflag: tar.TypeReg, Mode: 0o644, PAXRecords: map[string]string{
		"GNU.xparse.major": "0", "GNU.xparse.minor": "1", "GNU.xparse.numblocks": "1",
		"GNU.xparse.map": "0,0", "GNU.xparse.realsize": "2147483648",
	}})
	return bytes.ReplaceAll(b, []byte("GNU.xparse."), []byte("GNU.sparse."))
}

// counted is what a tar holds, as the metadata of an honest bundle declares.
func counted(t *testing.T, data []byte) map[string]int64 {
	t.Helper()
	c := map[string]int64{"files": 0, "dirs": 0, "symlinks": 0, "hardLinks": 0, "bytes": 0}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return c
		}
		if err != nil {
			t.Fatalf("count the crafted tar: %v", err)
		}
		switch h.Typeflag {
		case tar.TypeReg:
			c["files"]++
			c["bytes"] += h.Size
		case tar.TypeDir:
			c["dirs"]++
		case tar.TypeSymlink:
			c["symlinks"]++
		case tar.TypeLink:
			c["hardLinks"]++
		}
	}
}

// bounded measures the crafted tar's largest entry as the metadata declares
// it: the longest name (without a trailing slash or a leading ./, at least
// as long as the clean name) and the (name, value) lengths of the largest set
// of SCHILY.xattr records of one entry.
func bounded(t *testing.T, data []byte) (int, [][2]int) {
	t.Helper()
	longest, most := 0, 0
	var largest [][2]int
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return longest, largest
		}
		if err != nil {
			t.Fatalf("measure the crafted tar: %v", err)
		}
		longest = max(longest, len(strings.TrimPrefix(strings.TrimSuffix(h.Name, "/"), "./")))
		total := 0
		var sizes [][2]int
		for k, v := range h.PAXRecords {
			if x, ok := strings.CutPrefix(k, "SCHILY.xattr."); ok {
				total += len(x) + len(v)
				sizes = append(sizes, [2]int{len(x), len(v)})
			}
		}
		if total > most {
			most, largest = total, sizes
		}
	}
}

// hostileLayout is a copy of a real bundle's OCI layout being rewritten.
type hostileLayout struct {
	dir      string
	manifest map[string]any
	config   map[string]any
	// files is the index of the files layer in manifest["layers"].
	files int
}

func (l *hostileLayout) put(t *testing.T, b []byte) (string, int64) {
	t.Helper()
	sum := sha256.Sum256(b)
	d := "sha256:" + hex.EncodeToString(sum[:])
	if err := os.WriteFile(blobPath(l.dir, d), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return d, int64(len(b))
}

func (l *hostileLayout) filesLayer() map[string]any {
	return l.manifest["layers"].([]any)[l.files].(map[string]any)
}

// write stores the config and the manifest and tags the manifest "latest".
func (l *hostileLayout) write(t *testing.T) {
	t.Helper()
	cb, _ := json.Marshal(l.config)
	cd, cs := l.put(t, cb)
	cfg := l.manifest["config"].(map[string]any)
	cfg["digest"], cfg["size"] = cd, cs
	mb, _ := json.Marshal(l.manifest)
	md, ms := l.put(t, mb)
	index, _ := json.Marshal(map[string]any{"schemaVersion": 2, "manifests": []map[string]any{{
		"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": md, "size": ms,
		"annotations": map[string]string{"org.opencontainers.image.ref.name": "latest"},
	}}})
	if err := os.WriteFile(filepath.Join(l.dir, "index.json"), index, 0o644); err != nil {
		t.Fatal(err)
	}
}

// craft copies the real layout at src (its manifest digest good) and applies c.
func craft(t *testing.T, src, good, recipient string, c hostileCase) string {
	t.Helper()
	l := &hostileLayout{dir: t.TempDir(), files: -1}
	if err := os.MkdirAll(filepath.Join(l.dir, "blobs", "sha256"), 0o755); err != nil {
		t.Fatal(err)
	}
	blobs, err := os.ReadDir(filepath.Join(src, "blobs", "sha256"))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range blobs {
		if err := os.Link(filepath.Join(src, "blobs", "sha256", b.Name()), filepath.Join(l.dir, "blobs", "sha256", b.Name())); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(l.dir, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	mb, err := os.ReadFile(blobPath(src, good))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(mb, &l.manifest); err != nil {
		t.Fatal(err)
	}
	cb, err := os.ReadFile(blobPath(src, l.manifest["config"].(map[string]any)["digest"].(string)))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(cb, &l.config); err != nil {
		t.Fatal(err)
	}
	for i, x := range l.manifest["layers"].([]any) {
		if strings.HasPrefix(x.(map[string]any)["mediaType"].(string), "application/vnd.kubectl-assisted.bundle.files.") {
			l.files = i
		}
	}
	if l.files < 0 {
		t.Fatal("the real bundle has no files layer")
	}
	if c.entries != nil {
		// The attacker's files layer: zstd, then age to the public recipient.
		var z bytes.Buffer
		zw, _ := zstd.NewWriter(&z, zstd.WithEncoderLevel(zstd.SpeedFastest))
		if _, err := zw.Write(c.entries); err != nil {
			t.Fatal(err)
		}
		zw.Close()
		r, err := age.ParseX25519Recipient(recipient)
		if err != nil {
			t.Fatal(err)
		}
		var enc bytes.Buffer
		aw, err := age.Encrypt(&enc, r)
		if err != nil {
			t.Fatal(err)
		}
		aw.Write(z.Bytes())
		aw.Close()
		d, s := l.put(t, enc.Bytes())
		fl := l.filesLayer()
		fl["digest"], fl["size"] = d, s
		decl := c.declared
		if decl == nil {
			decl = counted(t, c.entries)
		}
		files := l.config["files"].(map[string]any)
		for k, v := range decl {
			files[k] = v
		}
		// The bounds of format 1.1, as large as what the tar holds, so
		// that only the rule under test refuses it.
		longest, largest := bounded(t, c.entries)
		files["longestPath"], files["largestXattrs"] = longest, largest
		if largest == nil {
			delete(files, "largestXattrs")
		}
	}
	if c.noBounds {
		// A bundle that does not declare them (format 1.0): extract
		// verifies every layer before it reads them again.
		files := l.config["files"].(map[string]any)
		delete(files, "longestPath")
		delete(files, "largestXattrs")
	}
	ann, cfg := c.annotation, c.config
	if ann == "" {
		ann = bundle.FormatVersion
	}
	if cfg == "" {
		cfg = bundle.FormatVersion
	}
	l.manifest["annotations"].(map[string]any)[bundle.AnnotationFormatVersion] = ann
	l.config["formatVersion"] = cfg
	if c.edit != nil {
		c.edit(t, l)
	}
	l.write(t)
	return l.dir
}

func hostileCases(t *testing.T) []hostileCase {
	reg := func(name string, size int64) tar.Header {
		return tar.Header{Name: name, Typeflag: tar.TypeReg, Size: size, Mode: 0o644}
	}
	dir := func(name string, mode int64) tar.Header {
		return tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: mode}
	}
	cid := "3f0b8e7c-1f2a-4b3c-9d4e-5f6a7b8c9d0e/"
	withXattr := func(name string, n int) tar.Header {
		h := reg(cid+"manifests.yaml", 4)
		h.PAXRecords = map[string]string{"SCHILY.xattr." + name: strings.Repeat("v", n)}
		return h
	}
	long := cid + strings.Repeat(strings.Repeat("d", 200)+"/", 21) + "f"
	many := []tar.Header{dir(cid, 0o755)}
	for i := range 1000 {
		many = append(many, reg(fmt.Sprintf("%sf%04d", cid, i), 0))
	}
	bomb := hostileTar(t, dir(cid, 0o755), reg(cid+"logs.tar", 256<<20))
	return []hostileCase{
		// Traversal and link tricks.
		{name: "dot-dot", entries: hostileTar(t, dir(cid, 0o755), reg(cid+"../../evil", 4)), exit: 7, message: "climbs out of the extraction root"},
		{name: "absolute path", entries: hostileTar(t, reg("/tmp/kubectl-assisted-hostile-evil", 4)), exit: 7, message: "its path is absolute"},
		{name: "symlink to an absolute path", entries: hostileTar(t, tar.Header{Name: "etc", Typeflag: tar.TypeSymlink, Linkname: "/etc", Mode: 0o777}), exit: 7, message: "symlink whose target is outside"},
		{name: "symlink parent climbing out", entries: hostileTar(t, dir(cid, 0o755), tar.Header{Name: cid + "up", Typeflag: tar.TypeSymlink, Linkname: "../..", Mode: 0o777}, reg(cid+"up/evil", 4)), exit: 7, message: "symlink whose target is outside"},
		{name: "file through a symlink", entries: hostileTar(t, dir(cid, 0o755), tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: cid, Mode: 0o777}, reg("l/evil", 4)), exit: 7, message: "goes through a symlink stored earlier"},
		{name: "hard link to outside", entries: hostileTar(t, tar.Header{Name: "h", Typeflag: tar.TypeLink, Linkname: "../../../etc/passwd"}), exit: 7, message: "hard link whose target"},
		{name: "hard link to an absolute path", entries: hostileTar(t, tar.Header{Name: "h", Typeflag: tar.TypeLink, Linkname: "/etc/passwd"}), exit: 7, message: "hard link whose target"},
		// Entry types.
		{name: "character device", entries: hostileTar(t, tar.Header{Name: "null", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3, Mode: 0o666}), exit: 7, message: "entry type is not"},
		{name: "fifo", entries: hostileTar(t, tar.Header{Name: "pipe", Typeflag: tar.TypeFifo, Mode: 0o644}), exit: 7, message: "entry type is not"},
		// Bombs.
		{name: "sparse bomb", entries: sparseBomb(t), exit: 7, message: "is a sparse file"},
		{name: "declared-size mismatch bomb", entries: bomb, declared: map[string]int64{"files": 1, "dirs": 1, "bytes": 10}, exit: 7, message: "holds more than the metadata declares"},
		{name: "more files than declared", entries: hostileTar(t, many...), declared: map[string]int64{"files": 3, "dirs": 1}, exit: 7, message: "more than 3 files"},
		// Bounds (format 1.1) that understate the largest entry: the
		// target was checked against them, so the entry is refused.
		{name: "path longer than the declared bounds", bounds: true, entries: hostileTar(t, dir(cid, 0o755), reg(cid+"manifests.yaml", 4)), edit: func(t *testing.T, l *hostileLayout) {
			l.config["files"].(map[string]any)["longestPath"] = 8
		}, exit: 7, message: "larger than the metadata declares the layer's largest entry to be"},
		{name: "xattrs larger than the declared bounds", bounds: true, entries: hostileTar(t, dir(cid, 0o755), withXattr("user.big", 300)), edit: func(t *testing.T, l *hostileLayout) {
			l.config["files"].(map[string]any)["largestXattrs"] = [][2]int{{len("user.big"), 10}}
		}, exit: 7, message: "larger than the metadata declares the layer's largest entry to be"},
		// Special bits.
		{name: "setuid", entries: hostileTar(t, reg("sh", 4), tar.Header{Name: "suid", Typeflag: tar.TypeReg, Mode: 0o4777, Size: 4}), exit: 7, message: "setuid, setgid or sticky bit"},
		{name: "setgid directory", entries: hostileTar(t, dir(cid, 0o2755)), exit: 7, message: "setuid, setgid or sticky bit"},
		{name: "sticky directory", entries: hostileTar(t, dir(cid, 0o1777)), exit: 7, message: "setuid, setgid or sticky bit"},
		// Oversize names and attributes.
		{name: "300-byte name component", entries: hostileTar(t, dir(cid, 0o755), reg(cid+strings.Repeat("n", 300), 4)), exit: 7, message: "longer than 255 bytes"},
		{name: "path over 4096 bytes", entries: hostileTar(t, dir(cid, 0o755), reg(long, 4)), exit: 7, message: "longer than 4095 bytes"},
		{name: "70 KB user xattr", entries: hostileTar(t, dir(cid, 0o755), withXattr("user.assisted-installer-manifest-source", 70000)), exit: 7, message: "over the Linux limits"},
		{name: "trusted xattr", entries: hostileTar(t, dir(cid, 0o755), withXattr("trusted.overlay.opaque", 1)), exit: 7, message: "outside user.*"},
		{name: "security xattr", entries: hostileTar(t, dir(cid, 0o755), withXattr("security.capability", 20)), exit: 7, message: "outside user.*"},
		{name: "duplicate entries", entries: hostileTar(t, dir(cid, 0o755), reg(cid+"f", 4), reg(cid+"f", 4)), exit: 7, message: "the path appears twice"},
		// Version games.
		{name: "annotation 1.0.1, metadata 1.0.0", annotation: "1.0.1", config: "1.0.0", exit: 5, message: "the manifest annotation says 1.0.1, the metadata says 1.0.0"},
		{name: "unknown major", annotation: "2.0.0", config: "2.0.0", exit: 5, message: "bundle format version 2.0.0 is not supported"},
		{name: "newer minor does not relax the files rules", annotation: "1.9.0", config: "1.9.0", entries: hostileTar(t, tar.Header{Name: "suid", Typeflag: tar.TypeReg, Mode: 0o4755, Size: 4}), exit: 7, message: "setuid, setgid or sticky bit"},
		// Digest games.
		{name: "size lie", edit: func(t *testing.T, l *hostileLayout) {
			fl := l.filesLayer()
			fl["size"] = fl["size"].(float64) - 1
		}, exit: 3, message: "size mismatch"},
		{name: "missing blob", edit: func(t *testing.T, l *hostileLayout) {
			if err := os.Remove(blobPath(l.dir, l.filesLayer()["digest"].(string))); err != nil {
				t.Fatal(err)
			}
		}, exit: 8, message: "is missing"},
		{name: "tampered ciphertext, digest recomputed", edit: func(t *testing.T, l *hostileLayout) {
			fl := l.filesLayer()
			b, err := os.ReadFile(blobPath(l.dir, fl["digest"].(string)))
			if err != nil {
				t.Fatal(err)
			}
			b = bytes.Clone(b)
			b[len(b)-20] ^= 0x01 // in the last payload chunk, past the age header
			fl["digest"], fl["size"] = l.put(t, b)
		}, exit: 3, message: "ciphertext fails authentication"},
	}
}

// allowUnsigned is --allow-unsigned where the plugin has it: the corpus tests
// the files checks, not the signature's.
func allowUnsigned(t *testing.T, p *harness.Plugin) []string {
	t.Helper()
	if strings.Contains(p.MustRun(t, "bundle", "verify", "--help").Stdout, "--allow-unsigned") {
		return []string{"--allow-unsigned"}
	}
	return nil
}

// hostileSource is the real bundle every case starts from: a real database
// dump (of a small database this test makes) and a real files layer.
func hostileSource(t *testing.T, recipient string) (layout, digest string) {
	t.Helper()
	db := harness.NewDatabase(t)
	db.Exec(t, `CREATE TABLE clusters (id uuid PRIMARY KEY, name text NOT NULL); INSERT INTO clusters VALUES ('3f0b8e7c-1f2a-4b3c-9d4e-5f6a7b8c9d0e', 'one');`)
	layout = filepath.Join(t.TempDir(), "layout")
	digest = makeBundle(t, "oci:"+layout+":good", bundleRegistryNone, recipient, bundle.CreateOptions{
		Database: pgDumpSource{db.URL}, Files: &bundle.FilesOptions{Dir: assistedData(t, plantedKubeadmin)}})
	return layout, digest
}

// TestHostileFiles_VerifyAndExtract refuses every crafted bundle in `bundle
// verify` and `bundle extract`, with its exit code and message, and checks
// that extract leaves nothing beside its --dir nor anywhere the entries aim.
func TestHostileFiles_VerifyAndExtract(t *testing.T) {
	// Long and self-contained (its own databases, directories, namespace):
	// it runs beside the other long ones once the sequential tests are done.
	t.Parallel()
	p := harness.NewPlugin(t)
	identity, recipient := ageKey(t)
	src, good := hostileSource(t, recipient)
	unsigned := allowUnsigned(t, p)
	// The real bundle passes, so each refusal below is the crafted part's.
	p.MustRun(t, append([]string{"bundle", "verify", "oci:" + src + ":good", "--identity", identity}, unsigned...)...)
	cases := hostileCases(t)
	if len(cases) < 18 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each case crafts its own bundle and directories
			ref := "oci:" + craft(t, src, good, recipient, c) + ":latest"
			base := append([]string{"--identity", identity}, unsigned...)
			v := p.Run(t, append([]string{"bundle", "verify", ref}, base...)...)
			if v.ExitCode != c.exit || !strings.Contains(v.Stderr, c.message) {
				t.Fatalf("verify: exit %d, want %d with %q\n%s", v.ExitCode, c.exit, c.message, v.Combined())
			}
			parent := t.TempDir()
			x := p.Run(t, append([]string{"bundle", "extract", ref, "--dir", filepath.Join(parent, "out")}, base...)...)
			if x.ExitCode != c.exit || !strings.Contains(x.Stderr, c.message) {
				t.Fatalf("extract: exit %d, want %d with %q\n%s", x.ExitCode, c.exit, c.message, x.Combined())
			}
			if entries, _ := os.ReadDir(parent); len(entries) != 0 {
				t.Fatalf("extract left %v", entries)
			}
			noEscapes(t, parent)
			if c.bounds {
				return
			}
			// The same bundle without declared bounds: extract verifies
			// every layer first, and refuses it the same way.
			c := c
			c.noBounds = true
			ref = "oci:" + craft(t, src, good, recipient, c) + ":latest"
			parent = t.TempDir()
			x = p.Run(t, append([]string{"bundle", "extract", ref, "--dir", filepath.Join(parent, "out")}, base...)...)
			if x.ExitCode != c.exit || !strings.Contains(x.Stderr, c.message) {
				t.Fatalf("extract (verify first): exit %d, want %d with %q\n%s", x.ExitCode, c.exit, c.message, x.Combined())
			}
			if entries, _ := os.ReadDir(parent); len(entries) != 0 {
				t.Fatalf("extract (verify first) left %v", entries)
			}
			noEscapes(t, parent)
		})
	}
}

// noEscapes checks the places the crafted entries aim at outside the root.
func noEscapes(t *testing.T, parent string) {
	t.Helper()
	for _, p := range []string{filepath.Join(parent, "evil"), filepath.Join(filepath.Dir(parent), "evil"), "/tmp/kubectl-assisted-hostile-evil"} {
		if _, err := os.Lstat(p); err == nil {
			t.Fatalf("an entry escaped to %s", p)
		}
	}
}

// TestHostileFiles_Restore refuses every crafted bundle in `restore` and
// `restore --dry-run=client` against a real PostgreSQL, a data directory and
// a real kube-apiserver: the exit code and message of verify, and nothing in
// the database, the data directory (not even created) or the namespace.
func TestHostileFiles_Restore(t *testing.T) {
	// Long and self-contained (its own databases, directories, namespace):
	// it runs beside the other long ones once the sequential tests are done.
	t.Parallel()
	k := harness.SharedKube(t)
	p := harness.NewPlugin(t)
	identity, recipient := ageKey(t)
	src, good := hostileSource(t, recipient)
	unsigned := allowUnsigned(t, p)
	ns := k.Namespace(t)
	kubeconfig := k.KubeconfigFor(t, harness.AdminUser, ns)
	db := emptyDatabase(t)
	secretsBefore := strings.Join(secretNames(t, k, ns), ",")
	for _, c := range hostileCases(t) {
		t.Run(c.name, func(t *testing.T) {
			// Side by side: none of them may write, and each checks that the
			// shared database and namespace stay empty.
			t.Parallel()
			ref := "oci:" + craft(t, src, good, recipient, c) + ":latest"
			for _, dry := range []string{"", "--dry-run=client"} {
				parent := t.TempDir()
				dataDir := filepath.Join(parent, "data")
				args := []string{"restore", ref, "--identity", identity, "--db", withPassword(t, db.URL, plantedDBPassword),
					"--data-dir", dataDir, "--kubeconfig", kubeconfig, "-n", ns}
				if dry != "" {
					args = append(args, dry)
				}
				r := p.Run(t, append(args, unsigned...)...)
				if r.ExitCode != c.exit || !strings.Contains(r.Stderr, c.message) {
					t.Fatalf("restore %s: exit %d, want %d with %q\n%s", dry, r.ExitCode, c.exit, c.message, r.Combined())
				}
				if strings.Contains(r.Combined(), plantedDBPassword) {
					t.Fatalf("restore %s printed the database password", dry)
				}
				if entries, _ := os.ReadDir(parent); len(entries) != 0 {
					t.Fatalf("restore %s wrote %v", dry, entries)
				}
				noEscapes(t, parent)
				if n := userTables(t, db.URL); n != 0 {
					t.Fatalf("restore %s left %d table(s) in the target database", dry, n)
				}
				if cms := journalConfigMaps(t, k, ns); len(cms) != 0 {
					t.Fatalf("restore %s left ConfigMaps %v", dry, cms)
				}
				if s := strings.Join(secretNames(t, k, ns), ","); s != secretsBefore {
					t.Fatalf("restore %s changed the Secrets: %s, before %s", dry, s, secretsBefore)
				}
			}
		})
	}
}

// TestHostileFiles_ReplaceKeepsTheOldState: bundles that pass `bundle
// verify` (their names and attributes fit Linux's limits) but that the
// target cannot hold: a path that is too long once under this data directory,
// and an extended attribute larger than the data directory's filesystem
// takes. `restore --replace` refuses them before any write: the old rows,
// the old files and the namespace are as they were.
func TestHostileFiles_ReplaceKeepsTheOldState(t *testing.T) {
	// Long and self-contained (its own databases, directories, namespace):
	// it runs beside the other long ones once the sequential tests are done.
	t.Parallel()
	k := harness.SharedKube(t)
	p := harness.NewPlugin(t)
	identity, recipient := ageKey(t)
	src, good := hostileSource(t, recipient)
	unsigned := allowUnsigned(t, p)
	cid := "3f0b8e7c-1f2a-4b3c-9d4e-5f6a7b8c9d0e/"

	// A path of 4050 bytes: within PATH_MAX alone, over it under any data
	// directory plus the staging directory.
	name := cid
	for len(name)+201 < 4050 {
		name += strings.Repeat("d", 200) + "/"
	}
	name += strings.Repeat("f", 4050-len(name))
	cases := []struct {
		name, message string
		entries       []byte
	}{
		{"path too long under the data directory", "is over PATH_MAX", hostileTar(t, tar.Header{Name: cid, Typeflag: tar.TypeDir, Mode: 0o755}, tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: 4})},
	}
	// The smallest value this filesystem refuses (ext4 takes about one
	// block; XFS and tmpfs take 64 KiB, the kernel's limit, which the format
	// accepts too).
	probe := filepath.Join(t.TempDir(), "probe")
	if err := os.WriteFile(probe, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{8000, 65000} {
		if err := unix.Setxattr(probe, "user.assisted-installer-manifest-source", make([]byte, n), 0); err != nil {
			h := tar.Header{Name: cid + "manifest.yaml", Typeflag: tar.TypeReg, Mode: 0o644, Size: 4,
				PAXRecords: map[string]string{"SCHILY.xattr.user.assisted-installer-manifest-source": strings.Repeat("u", n)}}
			cases = append(cases, struct {
				name, message string
				entries       []byte
			}{
				fmt.Sprintf("%d-byte xattr this filesystem refuses", n), "its filesystem refuses the layer's largest set of extended attributes",
				hostileTar(t, tar.Header{Name: cid, Typeflag: tar.TypeDir, Mode: 0o755}, h)})
			break
		}
	}
	if len(cases) == 1 {
		t.Logf("the temp filesystem takes a 65000-byte user xattr: only the path case runs")
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ref := "oci:" + craft(t, src, good, recipient, hostileCase{entries: c.entries}) + ":latest"
			p.MustRun(t, append([]string{"bundle", "verify", ref, "--identity", identity}, unsigned...)...)

			ns := k.Namespace(t)
			kubeconfig := k.KubeconfigFor(t, harness.AdminUser, ns)
			db := emptyDatabase(t)
			db.Exec(t, `CREATE TABLE old_rows (id int PRIMARY KEY, v text); INSERT INTO old_rows VALUES (1, 'the old state');`)
			dataDir := filepath.Join(t.TempDir(), "data")
			if err := os.MkdirAll(filepath.Join(dataDir, "old"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dataDir, "old", "keep"), []byte("old file"), 0o644); err != nil {
				t.Fatal(err)
			}
			rowsBefore, filesBefore := tableSums(t, db.URL), fileTree(t, dataDir)
			secretsBefore := strings.Join(secretNames(t, k, ns), ",")
			for _, dry := range []string{"--dry-run=client", "--dry-run=none"} {
				r := p.Run(t, append([]string{"restore", ref, "--identity", identity, "--db", withPassword(t, db.URL, plantedDBPassword),
					"--data-dir", dataDir, "--kubeconfig", kubeconfig, "-n", ns, "--replace", dry}, unsigned...)...)
				if r.ExitCode != 7 || !strings.Contains(r.Stderr, c.message) || !strings.Contains(r.Stderr, "nothing was changed") {
					t.Fatalf("restore --replace %s: exit %d, want 7 with %q\n%s", dry, r.ExitCode, c.message, r.Combined())
				}
				if after := tableSums(t, db.URL); !equalMaps(after, rowsBefore) {
					t.Fatalf("restore --replace %s changed the database: %v, before %v", dry, after, rowsBefore)
				}
				if after := fileTree(t, dataDir); !equalMaps(after, filesBefore) {
					t.Fatalf("restore --replace %s changed the data directory: %v, before %v", dry, after, filesBefore)
				}
				if cms := journalConfigMaps(t, k, ns); len(cms) != 0 {
					t.Fatalf("restore --replace %s left ConfigMaps %v", dry, cms)
				}
				if s := strings.Join(secretNames(t, k, ns), ","); s != secretsBefore {
					t.Fatalf("restore --replace %s changed the Secrets: %s, before %s", dry, s, secretsBefore)
				}
			}
		})
	}
}

// TestHostileFiles_PreserveSpecialBits: the special bits refused by default
// are accepted and restored as stored when asked for explicitly.
func TestHostileFiles_PreserveSpecialBits(t *testing.T) {
	p := harness.NewPlugin(t)
	identity, recipient := ageKey(t)
	src, good := hostileSource(t, recipient)
	unsigned := allowUnsigned(t, p)
	entries := hostileTar(t, tar.Header{Name: "d/", Typeflag: tar.TypeDir, Mode: 0o2755},
		tar.Header{Name: "d/suid", Typeflag: tar.TypeReg, Mode: 0o4755, Size: 4})
	ref := "oci:" + craft(t, src, good, recipient, hostileCase{entries: entries}) + ":latest"
	base := append([]string{"--identity", identity, "--preserve-special-bits"}, unsigned...)
	p.MustRun(t, append([]string{"bundle", "verify", ref}, base...)...)
	out := filepath.Join(t.TempDir(), "out")
	p.MustRun(t, append([]string{"bundle", "extract", ref, "--dir", out}, base...)...)
	fi, err := os.Stat(filepath.Join(out, "files", "d", "suid"))
	if err != nil || fi.Mode()&os.ModeSetuid == 0 {
		t.Fatalf("d/suid: mode %v, err %v; want setuid", fi.Mode(), err)
	}
	di, err := os.Stat(filepath.Join(out, "files", "d"))
	if err != nil || di.Mode()&os.ModeSetgid == 0 {
		t.Fatalf("d: mode %v, err %v; want setgid", di.Mode(), err)
	}
}
