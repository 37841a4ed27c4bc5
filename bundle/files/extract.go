package files

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/internal/pipe"
)

// ExtractOptions tune Extract.
type ExtractOptions struct {
	// PreserveOwner sets the stored uid/gid (needs privilege); by default the
	// files belong to the extracting user, as on a PVC the pod owns.
	PreserveOwner bool
	// OnBytes is called with the number of file bytes just written.
	OnBytes func(n int64)
	// SkipUnsupportedXattrs goes on when the target filesystem refuses user.*
	// attributes (ErrXattrUnsupported) and lists the entries that lost them in
	// Summary.XattrsLost, instead of failing: the caller warns that those
	// manifests lost their origin mark.
	SkipUnsupportedXattrs bool
	// Rules are the caps and the special-bits choice (see Rules); without
	// PreserveSpecialBits, no setuid, setgid or sticky bit is ever set.
	Rules
}

// ErrDirNotEmpty is returned when the extraction directory already holds files.
var ErrDirNotEmpty = errors.New("extraction directory is not empty")

// Extract restores a files-layer tar into dir, a staging directory that must
// not exist or be empty. Every entry is checked first (see the Reason*
// constants); writes go through an os.Root, so the kernel refuses any path
// that resolves outside dir even through a symlink. Modes, mtimes and user.*
// xattrs are restored; directory modes and mtimes are applied last.
//
// Extract reads r to its end, so a verifying reader below reports a bad
// digest as the error. On any error, everything Extract wrote is removed (and
// dir too when Extract created it): nothing half-restored is left to commit.
func Extract(ctx context.Context, r io.Reader, dir string, opts ExtractOptions) (sum *Summary, err error) {
	created, err := prepareDir(dir)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = rootCause(r, err)
			cleanDir(dir, created)
		}
	}()
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	x := &extractor{root: root, opts: opts, v: newValidator(opts.Rules)}
	es := newEntries(r)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hdr, err := es.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, tarError(err)
		}
		name, err := x.v.entry(hdr)
		if err != nil {
			return nil, err
		}
		if err := x.write(name, hdr, es); err != nil {
			return nil, fmt.Errorf("extract %s: %w", name, err)
		}
	}
	if err := drainRest(r); err != nil {
		return nil, err
	}
	if err := x.v.finish(); err != nil {
		return nil, err
	}
	if err := x.finishDirs(); err != nil {
		return nil, err
	}
	s := x.v.sum
	s.XattrsLost = x.lost
	return &s, nil
}

func prepareDir(dir string) (created bool, err error) {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return false, err
		}
		return true, nil
	case err != nil:
		return false, err
	case len(entries) > 0:
		return false, fmt.Errorf("%s: %w", dir, ErrDirNotEmpty)
	}
	return false, nil
}

func cleanDir(dir string, created bool) {
	if created {
		_ = os.RemoveAll(dir)
		return
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		_ = os.RemoveAll(dir + "/" + e.Name())
	}
}

type dirAttrs struct {
	name  string
	mode  fs.FileMode
	mtime time.Time
	uid   int
	gid   int
}

type extractor struct {
	root *os.Root
	opts ExtractOptions
	v    *validator
	dirs []dirAttrs
	lost []string // entries whose user.* xattrs the filesystem refused
}

// xattrErr lets an unsupported filesystem through when asked to, noting the entry.
func (x *extractor) xattrErr(name string, err error) error {
	if err != nil && x.opts.SkipUnsupportedXattrs && errors.Is(err, ErrXattrUnsupported) {
		x.lost = append(x.lost, name)
		return nil
	}
	return err
}

// CopyBufferSize is the size of the file writes of an extraction (see
// pipe.FileWriteSize for why it is small).
const CopyBufferSize = pipe.FileWriteSize

// preallocateMin is the smallest file whose blocks are reserved before it is
// written (pipe.Preallocate): below it the extra system call gains nothing.
const preallocateMin = 1 << 20

func (x *extractor) write(name string, hdr *tar.Header, body *entries) error {
	if parent := path.Dir(name); parent != "." {
		if err := x.root.MkdirAll(parent, 0o700); err != nil {
			return err
		}
	}
	mode := fs.FileMode(hdr.Mode).Perm()
	if x.opts.PreserveSpecialBits {
		mode |= unixSpecial(hdr.Mode)
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := x.root.Mkdir(name, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		if err := x.xattrErr(name, x.setXattrsPath(name, hdr)); err != nil {
			return err
		}
		x.dirs = append(x.dirs, dirAttrs{name: name, mode: mode, mtime: hdr.ModTime, uid: hdr.Uid, gid: hdr.Gid})
		return nil
	case tar.TypeSymlink:
		if err := x.root.Symlink(hdr.Linkname, name); err != nil {
			return err
		}
		if x.opts.PreserveOwner {
			return x.root.Lchown(name, hdr.Uid, hdr.Gid)
		}
		return nil
	case tar.TypeLink:
		return x.root.Link(hdr.Linkname, name)
	}
	f, err := x.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if hdr.Size >= preallocateMin {
		if err := pipe.Preallocate(f, hdr.Size); err != nil {
			f.Close()
			return err
		}
	}
	var dst io.Writer = f
	if x.opts.OnBytes != nil {
		dst = &reportingWriter{w: f, on: x.opts.OnBytes}
	}
	if err := body.copyTo(dst, hdr.Size); err != nil {
		f.Close()
		return tarError(err)
	}
	if err := x.xattrErr(name, setXattrs(int(f.Fd()), hdr)); err != nil {
		f.Close()
		return err
	}
	if x.opts.PreserveOwner {
		if err := f.Chown(hdr.Uid, hdr.Gid); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return x.root.Chtimes(name, hdr.ModTime, hdr.ModTime)
}

func (x *extractor) setXattrsPath(name string, hdr *tar.Header) error {
	if !hasXattrs(hdr) {
		return nil
	}
	f, err := x.root.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	return setXattrs(int(f.Fd()), hdr)
}

// finishDirs applies directory modes and times deepest first, after their
// contents exist (a 0555 directory could not have been filled otherwise).
func (x *extractor) finishDirs() error {
	for i := len(x.dirs) - 1; i >= 0; i-- {
		d := x.dirs[i]
		if x.opts.PreserveOwner {
			if err := x.root.Lchown(d.name, d.uid, d.gid); err != nil {
				return err
			}
		}
		if err := x.root.Chmod(d.name, d.mode); err != nil {
			return err
		}
		if err := x.root.Chtimes(d.name, d.mtime, d.mtime); err != nil {
			return err
		}
	}
	return nil
}

func hasXattrs(hdr *tar.Header) bool {
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, paxXattrPrefix) {
			return true
		}
	}
	return false
}

// ErrXattrUnsupported is returned when the target filesystem refuses user.*
// xattrs: restoring without them would turn every user manifest into a system
// one in assisted-service.
var ErrXattrUnsupported = errors.New("the target filesystem does not support user.* extended attributes")

func unixSpecial(mode int64) fs.FileMode {
	var m fs.FileMode
	if mode&0o4000 != 0 {
		m |= fs.ModeSetuid
	}
	if mode&0o2000 != 0 {
		m |= fs.ModeSetgid
	}
	if mode&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	return m
}
