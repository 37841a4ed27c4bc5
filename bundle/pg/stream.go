package pg

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/internal/pipe"
)

// Stream format identifiers; docs/bundle-format.md ("The dump stream")
// specifies the format.
const (
	// FormatName is the header's "format" value.
	FormatName = "kubectl-assisted-pg-dump"
	// FormatMajor changes when an older reader could misread a stream; readers
	// refuse a newer major. Minor versions only add fields or members.
	// 2.0: a table's data may be COPY binary format (the header's table
	// format "binary"), which a 1.x reader would take for text.
	FormatMajor = 3
	// FormatMinor is the minor version this code writes. 1.1: every
	// pre-data and post-data entry is one statement of the kinds and shapes
	// docs/bundle-format.md lists (readers of every version check them).
	// 1.2: pre-data.json also carries postData, the post-data entries that
	// do not depend on the rows (all but SEQUENCE SET), so that a reader can
	// build a table's keys and indexes as soon as the table is loaded. 2.0
	// keeps both. 3.0: the header's "checksum" names the algorithm of the
	// summary's table checksums, "xxh3-128" (checksum.go); a 2.x reader
	// would hash with SHA-256 and refuse every table.
	FormatMinor = 0

	memberHeader   = "header.json"
	memberPreData  = "pre-data.json"
	memberPostData = "post-data.json"
	memberSummary  = "summary.json"

	// maxJSONMember bounds the metadata members a reader accepts.
	maxJSONMember = 64 << 20
	// defaultChunkSize is the largest data member Dump writes.
	defaultChunkSize = 1 << 20
)

// dataMember names chunk c (from 0) of the table at index i (from 1) of the
// header's table list.
func dataMember(i, c int) string { return fmt.Sprintf("data/%04d/%06d.copy", i, c) }

// streamHeader is header.json, the stream's first member.
type streamHeader struct {
	Format           string `json:"format"`
	Version          string `json:"version"`
	ServerVersion    string `json:"serverVersion"`
	ServerVersionNum int    `json:"serverVersionNum"`
	Encoding         string `json:"encoding"`
	LastMigration    string `json:"lastMigration,omitempty"`
	// Checksum is the algorithm of the summary's table checksums (3.0 on):
	// "xxh3-128" or "sha256"; before 3.0 none, and SHA-256.
	Checksum string            `json:"checksum,omitempty"`
	Settings map[string]string `json:"settings"`
	Schemas  []string          `json:"schemas"`
	Tables   []streamTable     `json:"tables"`
}

// streamTable is one table of the header: its data members follow in this
// order; Columns is the COPY column list.
type streamTable struct {
	Schema  string   `json:"schema"`
	Name    string   `json:"name"`
	Columns []string `json:"columns"`
	// NoData is true for a table whose rows were left out (ExcludeTableData).
	NoData bool `json:"noData,omitempty"`
	// Format is the COPY format of the data: "binary" (2.0), or text when
	// empty.
	Format string `json:"format,omitempty"`
	// algo is the header's checksum algorithm (not in the JSON).
	algo string
}

func (t streamTable) qualified() string { return qualified(t.Schema, t.Name) }

// copyFromSQL loads the table's data into target (its name, or its staging
// table's) in one transaction with the table's creation or truncation, so
// that the rows may be frozen as they are written.
func (t streamTable) copyFromSQL(target string) string {
	opts := "FREEZE"
	if t.Format == copyBinary {
		opts = "FORMAT binary, FREEZE"
	}
	return "COPY " + target + " " + copyColumnList(t) + " FROM STDIN WITH (" + opts + ")"
}

// copyToSQL reads source's rows in the table's format, as Dump wrote them.
func (t streamTable) copyToSQL(source string) string {
	sql := "COPY " + source + " " + copyColumnList(t) + " TO STDOUT"
	if t.Format == copyBinary {
		sql += " WITH (FORMAT binary)"
	}
	return sql
}

// newHash follows the table's data (see tableHash).
func (t streamTable) newHash() *tableHash { return newTableHashFor(t.Format, t.algo) }

func (t streamTable) copyColumns() string {
	s := ""
	for i, c := range t.Columns {
		if i > 0 {
			s += ", "
		}
		s += ident(c)
	}
	return "(" + s + ")"
}

// streamDDL is pre-data.json and post-data.json.
type streamDDL struct {
	Objects []object `json:"objects"`
	// PostData (pre-data.json, from 1.2) is post-data.json's list without
	// its SEQUENCE SET entries, in the same order, known before the rows.
	// Readers of 1.0 and 1.1 ignore it; a reader that uses it refuses a
	// stream whose post-data.json does not hold exactly these entries.
	PostData []object `json:"postData,omitempty"`
}

// streamSummary is summary.json, the last member.
type streamSummary struct {
	Tables    []TableSummary `json:"tables"`
	DataBytes int64          `json:"dataBytes"`
}

// streamWriter writes the tar members of a dump. Members have a fixed mode and
// time, so one database state always gives the same bytes.
type streamWriter struct {
	tw    *tar.Writer
	count *pipe.CountingWriter
}

func newStreamWriter(w io.Writer) *streamWriter {
	cw := &pipe.CountingWriter{W: w}
	return &streamWriter{tw: tar.NewWriter(cw), count: cw}
}

func (s *streamWriter) member(name string, body []byte) error {
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     name,
		Mode:     0o600,
		Size:     int64(len(body)),
		ModTime:  time.Unix(0, 0),
		Format:   tar.FormatUSTAR,
	}
	if err := s.tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if _, err := s.tw.Write(body); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

func (s *streamWriter) json(name string, v any) error {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", name, err)
	}
	return s.member(name, append(b, '\n'))
}

func (s *streamWriter) close() error {
	if err := s.tw.Close(); err != nil {
		return fmt.Errorf("finish stream: %w", err)
	}
	return nil
}

// chunker is the io.Writer that COPY TO writes a table into: it cuts the data
// into members of at most len(buf) bytes.
type chunker struct {
	s      *streamWriter
	table  int
	chunk  int
	buf    []byte
	n      int
	onData func(int)
}

func (c *chunker) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		k := copy(c.buf[c.n:], p)
		c.n += k
		p = p[k:]
		written += k
		if c.n == len(c.buf) {
			if err := c.flush(); err != nil {
				return written, err
			}
		}
	}
	return written, nil
}

func (c *chunker) flush() error {
	if c.n == 0 {
		return nil
	}
	if err := c.s.member(dataMember(c.table, c.chunk), c.buf[:c.n]); err != nil {
		return err
	}
	if c.onData != nil {
		c.onData(c.n)
	}
	c.chunk++
	c.n = 0
	return nil
}
