package files

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// DefaultExcludes are left out of the files layer: assisted-service rebuilds
// them (installercache holds openshift-install binaries; disconnected-ignition
// is a temp area), and lost+found belongs to the filesystem.
var DefaultExcludes = []string{"installercache", "disconnected-ignition*", "lost+found"}

// WriteOptions tune Write.
type WriteOptions struct {
	// Exclude are path.Match patterns against the slash-separated path
	// relative to the root ("installercache", "*/tmp"); a matching directory
	// is left out with everything below it.
	Exclude []string
	// OnBytes is called with the number of file bytes just read.
	OnBytes func(n int64)
}

// ErrChanged is returned when a file changes while it is read: the data
// directory must be quiesced (assisted-service stopped) for a consistent bundle.
var ErrChanged = errors.New("changed while it was read; stop assisted-service (or bundle a quiesced copy) and retry")

// Write writes the tree under root to w as a PAX tar, in lexical order, and
// returns what it wrote. Entries carry mode, mtime, uid/gid and user.* xattrs;
// no access/change times and no user names, so the same tree gives the same
// bytes; no setuid, setgid or sticky bit. Symlinks are stored as links (never followed); files linked more than
// once are stored once and then as hard links; sockets, FIFOs and devices are
// skipped.
func Write(ctx context.Context, w io.Writer, root string, opts WriteOptions) (*Summary, error) {
	fi, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("data directory %s is not a directory", root)
	}
	for _, p := range opts.Exclude {
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("exclude pattern %q: %w", p, err)
		}
	}
	tw := tar.NewWriter(w)
	s := &Summary{}
	wr := &treeWriter{tw: tw, root: root, opts: opts, sum: s, links: map[[2]uint64]string{}}
	wr.raw, _ = w.(RawHinter)
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		if excluded(rel, opts.Exclude) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		return wr.add(p, rel, d)
	})
	if err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	sort.Strings(s.ClusterIDs)
	return s, nil
}

func excluded(rel string, patterns []string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, rel); ok {
			return true
		}
	}
	return false
}

type treeWriter struct {
	tw    *tar.Writer
	raw   RawHinter // w, when it takes hints
	buf   []byte
	root  string
	opts  WriteOptions
	sum   *Summary
	links map[[2]uint64]string // (dev, inode) of multiply linked files -> first path
}

func (w *treeWriter) add(p, rel string, d fs.DirEntry) error {
	info, err := d.Info()
	if err != nil {
		return err
	}
	st, hasStat := statOf(info)
	hdr := &tar.Header{
		Name: rel,
		// Never setuid, setgid or sticky bits: data needs none, and a
		// restore refuses them unless told otherwise.
		Mode:    int64(info.Mode().Perm()),
		ModTime: info.ModTime(),
		Format:  tar.FormatPAX,
	}
	if hasStat {
		hdr.Uid, hdr.Gid = st.uid, st.gid
	}
	stored := true // every entry that reaches the tar counts in the bounds
	defer func() {
		if stored {
			w.sum.note(rel, hdr.PAXRecords)
		}
	}()
	switch {
	case info.IsDir():
		hdr.Typeflag, hdr.Name = tar.TypeDir, rel+"/"
		w.sum.Dirs++
		if !strings.Contains(rel, "/") && uuidRE.MatchString(rel) {
			w.sum.ClusterIDs = append(w.sum.ClusterIDs, rel)
		}
	case info.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(p)
		if err != nil {
			return err
		}
		hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, target
		w.sum.Symlinks++
		return w.tw.WriteHeader(hdr) // Linux has no user.* xattrs on symlinks
	case info.Mode().IsRegular():
		if hasStat && st.nlink > 1 {
			key := [2]uint64{st.dev, st.ino}
			if first, ok := w.links[key]; ok {
				hdr.Typeflag, hdr.Linkname = tar.TypeLink, first
				w.sum.HardLinks++
				return w.tw.WriteHeader(hdr)
			}
			w.links[key] = rel
		}
		hdr.Typeflag, hdr.Size = tar.TypeReg, info.Size()
	default:
		stored = false
		return nil // socket, FIFO, device: not data
	}
	if err := w.xattrs(p, hdr); err != nil {
		return err
	}
	if err := w.tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	if hdr.Typeflag != tar.TypeReg {
		return nil
	}
	w.sum.Files++
	w.sum.Bytes += hdr.Size
	return w.copyFile(p, rel, hdr.Size)
}

// RawHinter is implemented by a destination that stores already compressed
// content more cheaply than it compresses the rest (the bundle's layer
// writer stores it as zstd raw blocks rather than run zstd over it). Write
// calls StoreRaw(true) before the content of a file that is at least
// MinRawSize long and starts like a compressed format (gzip, zstd, xz,
// bzip2, zip, lz4: the log archives that make most of /data), and
// StoreRaw(false) after it. The tar's bytes are the same either way.
type RawHinter interface {
	StoreRaw(raw bool) error
}

// MinRawSize is the smallest file hinted as raw: below it the cost of
// ending and restarting a compressed frame outweighs the gain.
const MinRawSize = 1 << 20

// readBufSize is the size of the reads of files: larger than io.Copy's
// 32 KiB, fewer system calls.
const readBufSize = 256 << 10

var compressedMagic = [][]byte{
	{0x1f, 0x8b},                         // gzip
	{0x28, 0xb5, 0x2f, 0xfd},             // zstd
	{0xfd, '7', 'z', 'X', 'Z', 0x00},     // xz
	{'B', 'Z', 'h'},                      // bzip2
	{'P', 'K', 0x03, 0x04},               // zip
	{0x04, 0x22, 0x4d, 0x18},             // lz4
	{0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c}, // 7z
}

func looksCompressed(b []byte) bool {
	for _, m := range compressedMagic {
		if bytes.HasPrefix(b, m) {
			return true
		}
	}
	return false
}

// copyFile copies exactly size bytes and fails when the file is shorter or
// longer than when it was listed.
func (w *treeWriter) copyFile(p, rel string, size int64) error {
	f, err := os.OpenFile(p, os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	var dst io.Writer = w.tw
	if w.opts.OnBytes != nil {
		dst = &reportingWriter{w: w.tw, on: w.opts.OnBytes}
	}
	if w.buf == nil {
		w.buf = make([]byte, readBufSize)
	}
	var n int64
	raw := false
	for n < size {
		m, err := io.ReadFull(f, w.buf[:min(int64(len(w.buf)), size-n)])
		if m > 0 {
			if n == 0 && size >= MinRawSize && w.raw != nil && looksCompressed(w.buf[:m]) {
				if err := w.raw.StoreRaw(true); err != nil {
					return err
				}
				raw = true
			}
			if _, werr := dst.Write(w.buf[:m]); werr != nil {
				return fmt.Errorf("%s: %w", rel, werr)
			}
			n += int64(m)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%s: shrank from %d to %d bytes: %w", rel, size, n, ErrChanged)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
	}
	if raw {
		if err := w.raw.StoreRaw(false); err != nil {
			return err
		}
	}
	var one [1]byte
	if m, _ := f.Read(one[:]); m > 0 {
		return fmt.Errorf("%s: grew beyond %d bytes: %w", rel, size, ErrChanged)
	}
	return nil
}

func (w *treeWriter) xattrs(p string, hdr *tar.Header) error {
	names, err := listXattrs(p)
	if err != nil {
		return fmt.Errorf("%s: list extended attributes: %w", hdr.Name, err)
	}
	for _, name := range names {
		if !strings.HasPrefix(name, xattrPrefix) {
			continue
		}
		val, err := getXattr(p, name)
		if errors.Is(err, errNoXattr) {
			continue // removed between list and get
		}
		if err != nil {
			return fmt.Errorf("%s: read extended attribute %s: %w", hdr.Name, name, err)
		}
		if hdr.PAXRecords == nil {
			hdr.PAXRecords = map[string]string{}
		}
		hdr.PAXRecords[paxXattrPrefix+name] = string(val)
		w.sum.Xattrs++
	}
	return nil
}

type reportingWriter struct {
	w  io.Writer
	on func(int64)
}

func (r *reportingWriter) Write(p []byte) (int, error) {
	n, err := r.w.Write(p)
	r.on(int64(n))
	return n, err
}
