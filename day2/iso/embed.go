package iso

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// maxAreaRead caps how much of an embed area is read to find existing members.
const maxAreaRead = 64 << 20

// Customization is what goes into a node ISO.
type Customization struct {
	// Ignition is the config written as config.ign into the embed area.
	Ignition []byte
	// KargsAppend are kernel arguments appended (once) to the image's own,
	// e.g. "fips=1".
	KargsAppend []string
	// Compression of the embedded cpio archive; xz (CRC32) by default.
	Compression Compression
	// MTime stamps the cpio members; the zero time means the Unix epoch, so
	// the same inputs give the same image.
	MTime time.Time
}

// Patch is bytes to write at an offset of the image.
type Patch struct {
	Offset int64
	Data   []byte
}

// Plan is the result of preparing a customization against a base image.
type Plan struct {
	Patches []Patch
	// IgnitionArea is where the config goes; IgnitionBytes is the compressed
	// archive's size within it.
	IgnitionArea  Area
	IgnitionBytes int
	// Kept names the members of the area that were preserved (e.g. network
	// keyfiles); ReplacedConfig is true when the area already held a config.ign.
	Kept           []string
	ReplacedConfig bool
	// Kargs is the resulting kernel command line ("" when unchanged/unknown).
	Kargs string
}

// Prepare reads the base image and computes the writes that turn it into the
// customized image. It fails before anything is written when the image has no
// embed area, the config does not fit, or kernel arguments are requested from
// an image that cannot take them.
func Prepare(base io.ReaderAt, c Customization) (*Plan, error) {
	im, err := Open(base)
	if err != nil {
		return nil, err
	}
	area, err := IgnitionArea(im)
	if err != nil {
		return nil, err
	}
	if area.Length > maxAreaRead {
		return nil, fmt.Errorf("ignition embed area of %d bytes is implausibly large", area.Length)
	}
	old := make([]byte, area.Length)
	if _, err := base.ReadAt(old, area.Offset); err != nil {
		return nil, fmt.Errorf("read ignition embed area: %w", err)
	}
	existing, err := ReadArchives(old)
	if err != nil {
		return nil, fmt.Errorf("existing content of the ignition embed area: %w", err)
	}
	p := &Plan{IgnitionArea: area}
	mtime := c.MTime.Unix()
	if c.MTime.IsZero() {
		mtime = 0
	}
	var members []Member
	for _, m := range existing {
		if m.Name == "config.ign" {
			p.ReplacedConfig = true
			continue
		}
		if m.Mode&0o170000 == modeDir {
			continue // WriteCPIO recreates parents
		}
		members = append(members, m)
		p.Kept = append(p.Kept, m.Name)
	}
	members = append(members, Member{Name: "config.ign", Mode: modeFile | 0o600, MTime: mtime, Data: c.Ignition})
	archive, err := CompressCPIO(members, c.Compression)
	if err != nil {
		return nil, fmt.Errorf("build ignition archive: %w", err)
	}
	if int64(len(archive)) > area.Length {
		return nil, fmt.Errorf("ignition config compresses to %d bytes, more than the ISO's %d-byte embed area", len(archive), area.Length)
	}
	p.IgnitionBytes = len(archive)
	data := make([]byte, area.Length) // zero padding clears the old content
	copy(data, archive)
	p.Patches = append(p.Patches, Patch{Offset: area.Offset, Data: data})

	if len(c.KargsAppend) > 0 {
		k, err := KargsAreas(im)
		if err != nil {
			return nil, fmt.Errorf("kernel arguments %v requested: %w", c.KargsAppend, err)
		}
		cur, err := k.Current(base)
		if err != nil {
			return nil, err
		}
		p.Kargs = AppendArgs(cur, c.KargsAppend...)
		for _, reg := range k.Regions {
			b, err := k.Region(reg, p.Kargs)
			if err != nil {
				return nil, err
			}
			p.Patches = append(p.Patches, Patch{Offset: reg.Offset, Data: b})
		}
	}
	return p, nil
}

// Apply writes the patches in place.
func (p *Plan) Apply(w io.WriterAt) error {
	for _, pt := range p.Patches {
		if _, err := w.WriteAt(pt.Data, pt.Offset); err != nil {
			return fmt.Errorf("write at byte %d: %w", pt.Offset, err)
		}
	}
	return nil
}

// Result describes a written image.
type Result struct {
	Path string
	Size int64
	Plan *Plan
}

// Copy is a base image being copied, in the background, to dst+".part", so
// that the rest of the work (token, payload, ignition) overlaps with it.
type Copy struct {
	f        *os.File
	src      io.Reader
	dst, tmp string
	done     chan struct{}
	n        int64
	err      error
}

// StartCopy starts streaming src into dst+".part". The caller keeps src open
// until Finish or Abort returns, and must call one of them.
func StartCopy(dst string, src io.Reader) (*Copy, error) {
	tmp := dst + ".part"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	c := &Copy{f: f, src: src, dst: dst, tmp: tmp, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		c.n, c.err = io.Copy(f, src)
	}()
	return c, nil
}

// Abort waits for the copy and removes it.
func (c *Copy) Abort() {
	<-c.done
	c.f.Close()
	os.Remove(c.tmp)
}

// Finish waits for the copy, writes the customization in place and renames
// the result to dst. On error the partial file is removed. When the source
// can be read at offsets (a local base ISO), the writes are computed from it
// while the copy is still running, so that only they follow the copy.
func (c *Copy) Finish(cust Customization) (res *Result, err error) {
	var plan *Plan
	if ra, ok := c.src.(io.ReaderAt); ok {
		plan, err = Prepare(ra, cust)
	}
	<-c.done
	defer func() {
		if err != nil {
			c.f.Close()
			os.Remove(c.tmp)
		}
	}()
	if c.err != nil {
		return nil, fmt.Errorf("copy base ISO: %w", c.err)
	}
	if err != nil {
		return nil, err
	}
	if plan == nil {
		if plan, err = Prepare(c.f, cust); err != nil {
			return nil, err
		}
	}
	if err := plan.Apply(c.f); err != nil {
		return nil, err
	}
	// No fsync: the image is an artifact that is rebuilt in seconds, and like
	// cp(1) the copy is left to the page cache; the rename keeps readers from
	// ever seeing a half-written node ISO.
	if err := c.f.Close(); err != nil {
		return nil, err
	}
	if err := os.Rename(c.tmp, c.dst); err != nil {
		return nil, err
	}
	return &Result{Path: c.dst, Size: c.n, Plan: plan}, nil
}

// CheckFile prepares c against the ISO at path without writing anything, so a
// bad base ISO fails before a long copy.
func CheckFile(path string, c Customization) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = Prepare(f, c)
	if errors.Is(err, ErrNotISO) {
		return fmt.Errorf("%s: %w", path, err)
	}
	return err
}
