package pg

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/internal/pipe"
)

// streamReader reads a dump stream strictly: members in the documented order,
// nothing unknown, bounded metadata, every table of the header accounted for.
type streamReader struct {
	tr      *tar.Reader
	count   *pipe.CountingReader
	pending *tar.Header
	header  streamHeader
	post    []object // post-data, once read
	// early is pre-data.json's copy of the post-data without SEQUENCE SET
	// (1.2), checked with pre-data; nil in older streams.
	early []object
	// ddl checks pre-data and post-data as they are read.
	ddl *ddlChecker
}

func newStreamReader(r io.Reader) *streamReader {
	cr := &pipe.CountingReader{R: r}
	return &streamReader{tr: tar.NewReader(cr), count: cr}
}

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorruptStream, fmt.Sprintf(format, args...))
}

// streamErr turns an error of the tar reader into a corrupt-stream error.
func streamErr(what string, err error) error {
	if errors.Is(err, ErrCorruptStream) {
		return err
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return corrupt("truncated in %s", what)
	}
	return fmt.Errorf("%w: %s: %w", ErrCorruptStream, what, err)
}

// peek returns the next member's header without consuming it; io.EOF at the
// end of the archive.
func (s *streamReader) peek() (*tar.Header, error) {
	if s.pending != nil {
		return s.pending, nil
	}
	h, err := s.tr.Next()
	if err != nil {
		return nil, err
	}
	if h.Typeflag != tar.TypeReg {
		return nil, corrupt("member %q is not a regular file", h.Name)
	}
	s.pending = h
	return h, nil
}

// take consumes the peeked member; its body is then read from s.tr.
func (s *streamReader) take() { s.pending = nil }

// readJSON reads the next member, which must be name, into v.
func (s *streamReader) readJSON(name string, v any) error {
	h, err := s.peek()
	if err != nil {
		return streamErr("before "+name, err)
	}
	if h.Name != name {
		return corrupt("expected %s, found %q", name, h.Name)
	}
	if h.Size > maxJSONMember || h.Size < 0 {
		return corrupt("%s is %d bytes, more than the %d allowed", name, h.Size, maxJSONMember)
	}
	s.take()
	b, err := io.ReadAll(s.tr)
	if err != nil {
		return streamErr(name, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return corrupt("%s: %v", name, err)
	}
	return nil
}

// readHeader reads and checks header.json.
func (s *streamReader) readHeader() error {
	if err := s.readJSON(memberHeader, &s.header); err != nil {
		return err
	}
	h := &s.header
	if h.Format != FormatName {
		return corrupt("format is %q, not %q", h.Format, FormatName)
	}
	majorText, _, _ := strings.Cut(h.Version, ".")
	major, err := strconv.Atoi(majorText)
	if err != nil {
		return corrupt("bad format version %q", h.Version)
	}
	if major > FormatMajor {
		return fmt.Errorf("%w: the stream is version %s; this kubectl-assisted reads version %d.x: upgrade kubectl-assisted", ErrUnsupportedFormat, h.Version, FormatMajor)
	}
	if major < 1 {
		return corrupt("bad format version %q", h.Version)
	}
	algo := h.Checksum
	switch {
	case major < 3 && algo != "":
		return corrupt("a checksum algorithm (%q) in a stream of version %s, which has none", algo, h.Version)
	case major < 3:
		algo = checksumSHA256
	case algo == "":
		return corrupt("a stream of version %s names no checksum algorithm", h.Version)
	case algo != checksumXXH3 && algo != checksumSHA256:
		return corrupt("unknown checksum algorithm %q", algo)
	}
	for i := range h.Tables {
		h.Tables[i].algo = algo
	}
	seen := map[string]bool{}
	for _, t := range h.Tables {
		if t.Schema == "" || t.Name == "" {
			return corrupt("header lists a table without a name")
		}
		switch {
		case t.Format != copyText && t.Format != copyBinary:
			return corrupt("table %s.%s: unknown data format %q", t.Schema, t.Name, t.Format)
		case t.Format == copyBinary && major < 2:
			return corrupt("table %s.%s: binary data in a stream of version %s, which only holds text", t.Schema, t.Name, h.Version)
		case t.Format == copyBinary && t.NoData:
			return corrupt("table %s.%s: a data format for a table without data", t.Schema, t.Name)
		}
		if seen[t.qualified()] {
			return corrupt("header lists table %s.%s twice", t.Schema, t.Name)
		}
		seen[t.qualified()] = true
	}
	ddl, err := newDDLChecker(h)
	if err != nil {
		return err
	}
	s.ddl = ddl
	return nil
}

// readPreData reads pre-data.json and checks every statement (ErrUnsafeSQL)
// before anything can run it.
func (s *streamReader) readPreData() ([]object, error) {
	var pre streamDDL
	if err := s.readJSON(memberPreData, &pre); err != nil {
		return nil, err
	}
	if err := s.ddl.checkList(memberPreData, pre.Objects); err != nil {
		return nil, err
	}
	if pre.PostData != nil {
		for _, o := range pre.PostData {
			if o.Kind == "SEQUENCE SET" {
				return nil, corrupt("%s: postData holds a SEQUENCE SET entry, which only post-data.json may hold", memberPreData)
			}
		}
		// Checked as post-data (the tables are known now); post-data.json
		// must then repeat exactly these entries (checkEarly).
		if err := s.ddl.checkList(memberPostData, pre.PostData); err != nil {
			return nil, err
		}
		s.early = pre.PostData
	}
	return pre.Objects, nil
}

// checkPostData checks post-data.json's entries. In a stream with an early
// copy (1.2), the entries that copy holds were checked with the pre-data and
// must come back unchanged, in order, with only SEQUENCE SET entries added;
// every other entry is checked here.
func (s *streamReader) checkPostData(post []object) error {
	if s.early == nil {
		return s.ddl.checkList(memberPostData, post)
	}
	known := make(map[object]bool, len(s.early))
	for _, o := range s.early {
		known[o] = true
	}
	var other []object
	var at []int
	for i, o := range post {
		if !known[o] {
			other = append(other, o)
			at = append(at, i)
		}
	}
	if err := s.ddl.checkList(memberPostData, other); err != nil {
		var ue *UnsafeSQLError
		if errors.As(err, &ue) && ue.Index > 0 && ue.Index <= len(at) {
			ue.Index = at[ue.Index-1] + 1
		}
		return err
	}
	k := 0
	for _, o := range post {
		if o.Kind == "SEQUENCE SET" {
			continue
		}
		if k >= len(s.early) || s.early[k] != o {
			return corrupt("%s differs from the copy of its entries in %s", memberPostData, memberPreData)
		}
		k++
	}
	if k != len(s.early) {
		return corrupt("%s lacks entries of the copy in %s", memberPostData, memberPreData)
	}
	return nil
}

// tableData returns a reader over the data members of table i (from 1), in
// order; it ends at the first member that is not the table's next chunk.
func (s *streamReader) tableData(i int) io.Reader {
	return &tableDataReader{s: s, table: i}
}

type tableDataReader struct {
	s     *streamReader
	table int
	chunk int
	open  bool
	done  bool
}

func (r *tableDataReader) Read(p []byte) (int, error) {
	for {
		if r.done {
			return 0, io.EOF
		}
		if !r.open {
			h, err := r.s.peek()
			if err != nil {
				if err == io.EOF {
					// A complete stream has post-data after the data.
					return 0, corrupt("truncated in the data of table %d", r.table)
				}
				return 0, streamErr("data", err)
			}
			if h.Name != dataMember(r.table, r.chunk) {
				if strings.HasPrefix(h.Name, fmt.Sprintf("data/%04d/", r.table)) {
					return 0, corrupt("expected %s, found %q", dataMember(r.table, r.chunk), h.Name)
				}
				r.done = true
				return 0, io.EOF
			}
			r.s.take()
			r.open = true
			r.chunk++
		}
		n, err := r.s.tr.Read(p)
		if err == io.EOF {
			r.open = false
			if n > 0 {
				return n, nil
			}
			continue
		}
		if err != nil {
			return n, streamErr(dataMember(r.table, r.chunk-1), err)
		}
		return n, nil
	}
}

// end checks that nothing but the archive's end follows summary.json.
func (s *streamReader) end() error {
	h, err := s.peek()
	if err == io.EOF {
		return nil
	}
	if err != nil {
		return streamErr("end of stream", err)
	}
	return corrupt("unexpected member %q after %s", h.Name, memberSummary)
}

// checkSummary compares the trailer with the header and with what was read.
func (s *streamReader) checkSummary(sum *streamSummary, got []*tableHash) error {
	if len(sum.Tables) != len(s.header.Tables) {
		return corrupt("summary lists %d tables, header %d", len(sum.Tables), len(s.header.Tables))
	}
	for i, t := range sum.Tables {
		h := s.header.Tables[i]
		if t.Schema != h.Schema || t.Name != h.Name {
			return corrupt("summary table %d is %s.%s, header says %s.%s", i+1, t.Schema, t.Name, h.Schema, h.Name)
		}
		g := got[i]
		if g.rows != t.Rows || g.bytes != t.DataBytes {
			return fmt.Errorf("%w: table %s.%s: the stream holds %d rows (%d bytes), the dump recorded %d rows (%d bytes)",
				ErrChecksumMismatch, t.Schema, t.Name, g.rows, g.bytes, t.Rows, t.DataBytes)
		}
		if g.sum() != t.Checksum {
			return fmt.Errorf("%w: table %s.%s: stream data hashes to %s, the dump recorded %s", ErrChecksumMismatch, t.Schema, t.Name, g.sum(), t.Checksum)
		}
	}
	return nil
}
