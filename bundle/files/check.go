package files

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// UnsafeEntryError is a tar entry that must not be extracted: it would land
// outside the extraction root, or is not a kind of file the format holds.
type UnsafeEntryError struct {
	Name   string
	Reason string
}

func (e *UnsafeEntryError) Error() string {
	return fmt.Sprintf("unsafe entry %q in the files layer: %s", e.Name, e.Reason)
}

// The reasons of UnsafeEntryError, one per way out of the root.
const (
	ReasonParent       = "its path climbs out of the extraction root with .."
	ReasonAbsolute     = "its path is absolute"
	ReasonSymlinkOut   = "it is a symlink whose target is outside the extraction root"
	ReasonThroughLink  = "its path goes through a symlink stored earlier"
	ReasonHardLinkOut  = "it is a hard link whose target is not a regular file stored earlier in the layer"
	ReasonDuplicate    = "the path appears twice"
	ReasonEntryType    = "entry type is not a regular file, directory, symlink or hard link"
	ReasonEmptyName    = "its path is empty"
	ReasonInvalidName  = "its path holds a NUL byte or is not clean"
	ReasonXattrNotUser = "it carries an extended attribute outside user.*"
)

// validator applies the extraction rules to a stream of headers; Check and
// Extract share it so that `bundle verify` refuses exactly what a restore would.
type validator struct {
	seen     map[string]byte // clean name -> typeflag
	symlinks map[string]bool
	sum      Summary
}

func newValidator() *validator {
	return &validator{seen: map[string]byte{}, symlinks: map[string]bool{}}
}

// entry validates hdr and returns its clean relative name.
func (v *validator) entry(hdr *tar.Header) (string, error) {
	name, err := cleanName(hdr.Name)
	if err != nil {
		return "", err
	}
	for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
		if v.symlinks[dir] {
			return "", &UnsafeEntryError{Name: hdr.Name, Reason: ReasonThroughLink}
		}
	}
	if _, dup := v.seen[name]; dup {
		return "", &UnsafeEntryError{Name: hdr.Name, Reason: ReasonDuplicate}
	}
	for k := range hdr.PAXRecords {
		if x, ok := strings.CutPrefix(k, paxXattrPrefix); ok && !strings.HasPrefix(x, xattrPrefix) {
			return "", &UnsafeEntryError{Name: hdr.Name, Reason: ReasonXattrNotUser}
		}
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		v.sum.Dirs++
		if !strings.Contains(name, "/") && uuidRE.MatchString(name) {
			v.sum.ClusterIDs = append(v.sum.ClusterIDs, name)
		}
	case tar.TypeReg:
		if hdr.Size < 0 {
			return "", &UnsafeEntryError{Name: hdr.Name, Reason: "negative size"}
		}
		v.sum.Files++
		v.sum.Bytes += hdr.Size
	case tar.TypeSymlink:
		if !symlinkInside(name, hdr.Linkname) {
			return "", &UnsafeEntryError{Name: hdr.Name, Reason: ReasonSymlinkOut + fmt.Sprintf(" (%q)", hdr.Linkname)}
		}
		v.symlinks[name] = true
		v.sum.Symlinks++
	case tar.TypeLink:
		target, err := cleanName(hdr.Linkname)
		if err != nil || v.seen[target] != tar.TypeReg {
			return "", &UnsafeEntryError{Name: hdr.Name, Reason: ReasonHardLinkOut + fmt.Sprintf(" (%q)", hdr.Linkname)}
		}
		v.sum.HardLinks++
	default:
		return "", &UnsafeEntryError{Name: hdr.Name, Reason: ReasonEntryType + fmt.Sprintf(" (type %q)", hdr.Typeflag)}
	}
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, paxXattrPrefix) {
			v.sum.Xattrs++
		}
	}
	v.seen[name] = hdr.Typeflag
	return name, nil
}

// cleanName turns a tar name into a clean relative slash path, refusing
// absolute paths and any ".." that climbs out.
func cleanName(name string) (string, error) {
	n := strings.TrimSuffix(name, "/")
	switch {
	case n == "" || n == ".":
		return "", &UnsafeEntryError{Name: name, Reason: ReasonEmptyName}
	case strings.ContainsRune(n, 0) || strings.Contains(n, "\\"):
		return "", &UnsafeEntryError{Name: name, Reason: ReasonInvalidName}
	case strings.HasPrefix(n, "/"):
		return "", &UnsafeEntryError{Name: name, Reason: ReasonAbsolute}
	}
	for _, part := range strings.Split(n, "/") {
		if part == ".." {
			return "", &UnsafeEntryError{Name: name, Reason: ReasonParent}
		}
	}
	c := path.Clean(strings.TrimPrefix(n, "./"))
	if c != strings.TrimPrefix(n, "./") {
		return "", &UnsafeEntryError{Name: name, Reason: ReasonInvalidName}
	}
	return c, nil
}

// symlinkInside reports whether a link at name pointing to target stays inside
// the root. Absolute targets never do: they would point into the host that
// restores the bundle. ".." is allowed only as a leading run: "a/../.." could
// climb out physically when "a" is itself a symlink, whatever it looks like
// lexically.
func symlinkInside(name, target string) bool {
	if target == "" || strings.HasPrefix(target, "/") || strings.ContainsRune(target, 0) {
		return false
	}
	depth := strings.Count(name, "/") // directories above the link
	descended := false
	for _, part := range strings.Split(target, "/") {
		switch part {
		case "", ".":
		case "..":
			depth--
			if depth < 0 || descended {
				return false
			}
		default:
			descended = true
		}
	}
	return true
}

// Check reads a files-layer tar to its end and applies every extraction rule
// without writing anything. It then reads r to EOF, so a verifying reader
// below reports a bad digest.
func Check(ctx context.Context, r io.Reader) (sum *Summary, err error) {
	defer func() { err = rootCause(r, err) }()
	tr := tar.NewReader(r)
	v := newValidator()
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, tarError(err)
		}
		if _, err := v.entry(hdr); err != nil {
			return nil, err
		}
		if _, err := io.Copy(io.Discard, tr); err != nil {
			return nil, tarError(err)
		}
	}
	if err := drainRest(r); err != nil {
		return nil, err
	}
	s := v.sum
	return &s, nil
}

// TarError is a files layer that is not a valid tar stream.
type TarError struct{ Err error }

func (e *TarError) Error() string { return "files layer is not a valid tar: " + e.Err.Error() }
func (e *TarError) Unwrap() error { return e.Err }

func tarError(err error) error {
	if errors.Is(err, tar.ErrHeader) || errors.Is(err, tar.ErrFieldTooLong) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, tar.ErrInsecurePath) {
		return &TarError{Err: err}
	}
	return err
}

// drainRest reads what follows the tar's end marker; only zero padding may.
func drainRest(r io.Reader) error {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		for _, b := range buf[:n] {
			if b != 0 {
				return &TarError{Err: errors.New("data after the end of the archive")}
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// rootCause drains r after a decoding error: when the stream below fails too
// (a verifying reader finding an altered blob), that failure is the cause.
func rootCause(r io.Reader, err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if _, derr := io.Copy(io.Discard, r); derr != nil {
		return derr
	}
	return err
}
