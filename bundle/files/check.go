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
	ReasonNameTooLong  = "a component of its path is longer than 255 bytes (NAME_MAX)"
	ReasonPathTooLong  = "its path is longer than 4095 bytes (PATH_MAX)"
	ReasonLinkTooLong  = "its link target is longer than 4095 bytes (PATH_MAX)"
	ReasonXattrSize    = "an extended attribute is over the Linux limits (name 255 bytes, value 64 KiB, all names 64 KiB)"
	ReasonSpecialBits  = "it has the setuid, setgid or sticky bit (pass --preserve-special-bits to restore them as stored)"
	ReasonSparse       = "it is a sparse file (a bundle never holds one; its holes would expand beyond the stored bytes)"
	ReasonExpansion    = "the layer holds more than the metadata declares"
	ReasonBeyondBounds = "it is larger than the metadata declares the layer's largest entry to be"
)

// Limits of Linux that an entry must fit, checked before anything is
// written: a name or attribute the kernel would refuse must fail `bundle
// verify`, not the files phase of a restore.
const (
	NameMax       = 255   // NAME_MAX: one path component
	PathMax       = 4095  // PATH_MAX less its NUL: a whole path, a symlink target
	XattrNameMax  = 255   // XATTR_NAME_MAX
	XattrValueMax = 65536 // XATTR_SIZE_MAX
	XattrListMax  = 65536 // XATTR_LIST_MAX: all names of an inode, NUL-terminated
)

// Declared is what the bundle's metadata says its files layer holds. With it,
// extraction stops at the first entry beyond it, before that entry's bytes
// are written: a layer can never expand beyond what the metadata declared.
type Declared struct {
	Files, Dirs, Symlinks, HardLinks int64
	Bytes                            int64
}

// Rules are the caller's part of the extraction rules; Check and Extract
// apply the same ones.
type Rules struct {
	// Declared caps the layer; nil leaves it uncapped (tests and fuzzing).
	// The bundle package always sets it from the metadata.
	Declared *Declared
	// Bounds, when the metadata declares them, refuse an entry with a
	// longer path or a larger set of extended attributes than declared (the
	// target was checked against the declared ones before the first write).
	Bounds *Bounds
	// PreserveSpecialBits accepts setuid, setgid and sticky bits and restores
	// them; by default an entry with one is refused.
	PreserveSpecialBits bool
}

// CountMismatchError is a files layer that holds less than its metadata
// declares (more is refused entry by entry as ReasonExpansion).
type CountMismatchError struct {
	Got, Want Declared
}

func (e *CountMismatchError) Error() string {
	return fmt.Sprintf("holds %d files, %d directories, %d symlinks, %d hard links and %d bytes; the metadata declares %d files, %d directories, %d symlinks, %d hard links and %d bytes",
		e.Got.Files, e.Got.Dirs, e.Got.Symlinks, e.Got.HardLinks, e.Got.Bytes, e.Want.Files, e.Want.Dirs, e.Want.Symlinks, e.Want.HardLinks, e.Want.Bytes)
}

// finish compares the whole layer with what was declared.
func (v *validator) finish() error {
	d := v.rules.Declared
	if d == nil {
		return nil
	}
	got := Declared{Files: v.sum.Files, Dirs: v.sum.Dirs, Symlinks: v.sum.Symlinks, HardLinks: v.sum.HardLinks, Bytes: v.sum.Bytes}
	if got != *d {
		return &CountMismatchError{Got: got, Want: *d}
	}
	return nil
}

// validator applies the extraction rules to a stream of headers; Check and
// Extract share it so that `bundle verify` refuses exactly what a restore would.
type validator struct {
	rules    Rules
	seen     map[string]byte // clean name -> typeflag
	symlinks map[string]bool
	sum      Summary
}

func newValidator(rules Rules) *validator {
	return &validator{rules: rules, seen: map[string]byte{}, symlinks: map[string]bool{}}
}

// limits checks what the kernel would refuse later: name and path lengths,
// extended attribute sizes, sparse maps and special bits.
func (v *validator) limits(hdr *tar.Header, name string) error {
	unsafe := func(reason string) error { return &UnsafeEntryError{Name: shorten(hdr.Name), Reason: reason} }
	if len(name) > PathMax {
		return unsafe(ReasonPathTooLong + fmt.Sprintf(" (%d bytes)", len(name)))
	}
	for _, part := range strings.Split(name, "/") {
		if len(part) > NameMax {
			return unsafe(ReasonNameTooLong + fmt.Sprintf(" (%d bytes)", len(part)))
		}
	}
	if len(hdr.Linkname) > PathMax {
		return unsafe(ReasonLinkTooLong)
	}
	if hdr.Typeflag == tar.TypeGNUSparse {
		return unsafe(ReasonSparse)
	}
	list := 0
	for k, val := range hdr.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return unsafe(ReasonSparse)
		}
		x, ok := strings.CutPrefix(k, paxXattrPrefix)
		if !ok {
			continue
		}
		list += len(x) + 1
		if len(x) > XattrNameMax || len(val) > XattrValueMax || list > XattrListMax {
			return unsafe(ReasonXattrSize + fmt.Sprintf(" (%s: %d bytes)", shorten(x), len(val)))
		}
	}
	if hdr.Mode&0o7000 != 0 && !v.rules.PreserveSpecialBits {
		return unsafe(ReasonSpecialBits + fmt.Sprintf(" (mode %04o)", hdr.Mode&0o7777))
	}
	var one Summary
	one.note(name, hdr.PAXRecords)
	if b := v.rules.Bounds; b != nil {
		switch {
		case one.LongestName > b.LongestName:
			return unsafe(ReasonBeyondBounds + fmt.Sprintf(" (a path of %d bytes; the longest declared is %d)", one.LongestName, b.LongestName))
		case one.MaxXattrBytes > b.MaxXattrBytes():
			return unsafe(ReasonBeyondBounds + fmt.Sprintf(" (%d bytes of extended attributes; the largest declared is %d)", one.MaxXattrBytes, b.MaxXattrBytes()))
		}
	}
	v.sum.noteBounds(one)
	return nil
}

// expansion refuses an entry that takes the layer beyond what was declared;
// it runs on the header, before any of the entry's bytes is written.
func (v *validator) expansion(hdr *tar.Header) error {
	d := v.rules.Declared
	if d == nil {
		return nil
	}
	s := v.sum
	var what string
	switch {
	case s.Files > d.Files:
		what = fmt.Sprintf("more than %d files", d.Files)
	case s.Bytes > d.Bytes:
		what = fmt.Sprintf("more than %d bytes of files (this entry claims %d)", d.Bytes, hdr.Size)
	case s.Dirs > d.Dirs:
		what = fmt.Sprintf("more than %d directories", d.Dirs)
	case s.Symlinks > d.Symlinks:
		what = fmt.Sprintf("more than %d symlinks", d.Symlinks)
	case s.HardLinks > d.HardLinks:
		what = fmt.Sprintf("more than %d hard links", d.HardLinks)
	default:
		return nil
	}
	return &UnsafeEntryError{Name: shorten(hdr.Name), Reason: ReasonExpansion + ": " + what}
}

// shorten keeps error messages readable when a name is a bomb itself.
func shorten(s string) string {
	if len(s) <= 120 {
		return s
	}
	return s[:60] + fmt.Sprintf("...(%d bytes)...", len(s)-100) + s[len(s)-40:]
}

// entry validates hdr and returns its clean relative name.
func (v *validator) entry(hdr *tar.Header) (string, error) {
	name, err := cleanName(hdr.Name)
	if err != nil {
		return "", err
	}
	if err := v.limits(hdr, name); err != nil {
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
	if err := v.expansion(hdr); err != nil {
		return "", err
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
func cleanName(name string) (c string, err error) {
	defer func() {
		var ue *UnsafeEntryError
		if errors.As(err, &ue) {
			ue.Name = shorten(ue.Name)
		}
	}()
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
	c = path.Clean(strings.TrimPrefix(n, "./"))
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
// below reports a bad digest. Check applies the default Rules (no cap).
func Check(ctx context.Context, r io.Reader) (sum *Summary, err error) {
	return CheckRules(ctx, r, Rules{})
}

// CheckRules is Check with the caller's rules: the metadata's declared
// counts, special bits.
func CheckRules(ctx context.Context, r io.Reader, rules Rules) (sum *Summary, err error) {
	defer func() { err = rootCause(r, err) }()
	es := newEntries(r)
	v := newValidator(rules)
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
		if _, err := v.entry(hdr); err != nil {
			return nil, err
		}
		if err := es.discard(); err != nil {
			return nil, tarError(err)
		}
	}
	if err := drainRest(r); err != nil {
		return nil, err
	}
	if err := v.finish(); err != nil {
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

// StoredDrainer is a layer reader that can check the rest of its stored
// blob without decoding it: after a refusal, finding out whether the blob was
// altered must not decompress the rest of a bomb.
type StoredDrainer interface {
	DrainStored() error
}

// rootCause drains r after a decoding error: when the stream below fails too
// (a verifying reader finding an altered blob), that failure is the cause.
func rootCause(r io.Reader, err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if d, ok := r.(StoredDrainer); ok {
		if derr := d.DrainStored(); derr != nil {
			return derr
		}
		return err
	}
	if _, derr := io.Copy(io.Discard, r); derr != nil {
		return derr
	}
	return err
}
