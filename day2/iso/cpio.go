package iso

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cavaliergopher/cpio"
)

// Member is one entry of a newc cpio archive.
type Member struct {
	Name  string // without leading "/"
	Mode  uint32 // type and permission bits, e.g. 0o100600
	MTime int64
	Data  []byte
}

const (
	modeDir  = 0o040000
	modeFile = 0o100000
)

// WriteCPIO writes members as a newc ("070701") archive, with the trailer.
// Parent directories that are not members are added first, as coreos-installer
// does, so the kernel can unpack the files.
func WriteCPIO(w io.Writer, members []Member) error {
	seen := map[string]bool{}
	for _, m := range members {
		seen[strings.Trim(m.Name, "/")] = true
	}
	var all []Member
	for _, m := range members {
		name := strings.Trim(m.Name, "/")
		parts := strings.Split(name, "/")
		for i := 1; i < len(parts); i++ {
			dir := strings.Join(parts[:i], "/")
			if !seen[dir] {
				seen[dir] = true
				all = append(all, Member{Name: dir, Mode: modeDir | 0o755, MTime: m.MTime})
			}
		}
		m.Name = name
		all = append(all, m)
	}
	cw := cpio.NewWriter(w)
	for _, m := range all {
		links := 1
		if m.Mode&0o170000 == modeDir {
			links = 2
		}
		// The writer numbers inodes from 1, as coreos-installer does.
		hdr := &cpio.Header{Name: m.Name, Mode: cpio.FileMode(m.Mode), ModTime: time.Unix(m.MTime, 0), Size: int64(len(m.Data)), Links: links}
		if err := cw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := cw.Write(m.Data); err != nil {
			return err
		}
	}
	return cw.Close() // writes the trailer
}

// errNotCPIO is returned when data does not start with a newc header.
var errNotCPIO = errors.New("not a newc cpio archive")

// ReadCPIO parses newc archives (070701 and 070702), possibly several back to
// back with zero padding between them, and returns every member but the
// trailers.
func ReadCPIO(data []byte) ([]Member, error) {
	var out []Member
	br := bytes.NewReader(data)
	for {
		off := len(data) - br.Len()
		for off < len(data) && data[off] == 0 {
			off++
		}
		if off >= len(data) {
			return out, nil
		}
		if !bytes.HasPrefix(data[off:], []byte("070701")) && !bytes.HasPrefix(data[off:], []byte("070702")) {
			if len(out) == 0 {
				return nil, errNotCPIO
			}
			return nil, fmt.Errorf("cpio: bad header at byte %d", off)
		}
		_, _ = br.Seek(int64(off), io.SeekStart)
		cr := cpio.NewReader(br)
		for {
			at := len(data) - br.Len()
			hdr, err := cr.Next()
			if errors.Is(err, io.EOF) {
				break // the trailer, or the end of an archive without one
			}
			if err != nil {
				return nil, fmt.Errorf("cpio: bad or truncated entry at byte %d: %w", at, err)
			}
			m := Member{Name: strings.TrimPrefix(hdr.Name, "/"), Mode: uint32(hdr.Mode), MTime: hdr.ModTime.Unix()}
			if hdr.Linkname != "" {
				m.Data = []byte(hdr.Linkname) // a symlink's data is its target
			} else {
				if hdr.Size > int64(br.Len()) { // before allocating what a header claims
					return nil, fmt.Errorf("cpio: truncated entry at byte %d", at)
				}
				m.Data = make([]byte, hdr.Size)
				if _, err := io.ReadFull(cr, m.Data); err != nil {
					return nil, fmt.Errorf("cpio: truncated entry at byte %d: %w", at, err)
				}
			}
			out = append(out, m)
		}
		// br is now just past the trailer's name; its padding is zeros.
	}
}

func align4(n int) int { return (n + 3) &^ 3 }
