package iso

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
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
	trailer  = "TRAILER!!!"
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
	ino := uint32(1)
	for _, m := range all {
		if err := writeRecord(w, ino, m); err != nil {
			return err
		}
		ino++
	}
	return writeRecord(w, 0, Member{Name: trailer})
}

func writeRecord(w io.Writer, ino uint32, m Member) error {
	nlink := uint32(1)
	if m.Mode&0o170000 == modeDir {
		nlink = 2
	}
	hdr := fmt.Sprintf("070701%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x",
		ino, m.Mode, 0, 0, nlink, uint32(m.MTime), len(m.Data), 0, 0, 0, 0, len(m.Name)+1, 0)
	var b bytes.Buffer
	b.WriteString(hdr)
	b.WriteString(m.Name)
	b.WriteByte(0)
	pad4(&b)
	b.Write(m.Data)
	pad4(&b)
	_, err := w.Write(b.Bytes())
	return err
}

func pad4(b *bytes.Buffer) {
	for b.Len()%4 != 0 {
		b.WriteByte(0)
	}
}

// errNotCPIO is returned when data does not start with a newc header.
var errNotCPIO = errors.New("not a newc cpio archive")

// ReadCPIO parses newc archives (070701 and 070702), possibly several back to
// back with zero padding between them, and returns every member but the
// trailers.
func ReadCPIO(data []byte) ([]Member, error) {
	var out []Member
	off := 0
	for {
		for off < len(data) && data[off] == 0 {
			off++
		}
		if off >= len(data) {
			return out, nil
		}
		if len(data)-off < 110 || (string(data[off:off+6]) != "070701" && string(data[off:off+6]) != "070702") {
			if len(out) == 0 {
				return nil, errNotCPIO
			}
			return nil, fmt.Errorf("cpio: bad header at byte %d", off)
		}
		field := func(i int) (int, error) {
			s := string(data[off+6+8*i : off+14+8*i])
			v, err := strconv.ParseUint(s, 16, 32)
			return int(v), err
		}
		mode, err1 := field(1)
		mtime, err2 := field(5)
		size, err3 := field(6)
		nameSize, err4 := field(11)
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			return nil, fmt.Errorf("cpio: bad header at byte %d: %w", off, err)
		}
		nameStart := off + 110
		nameEnd := nameStart + nameSize
		dataStart := align4(nameEnd)
		dataEnd := dataStart + size
		if nameSize < 1 || dataEnd > len(data) {
			return nil, fmt.Errorf("cpio: truncated entry at byte %d", off)
		}
		name := strings.TrimRight(string(data[nameStart:nameEnd]), "\x00")
		off = align4(dataEnd)
		if name == trailer {
			continue
		}
		out = append(out, Member{
			Name:  strings.TrimPrefix(name, "/"),
			Mode:  uint32(mode),
			MTime: int64(mtime),
			Data:  append([]byte(nil), data[dataStart:dataEnd]...),
		})
	}
}

func align4(n int) int { return (n + 3) &^ 3 }
