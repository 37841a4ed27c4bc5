package pg

import (
	"context"
	"fmt"
	"io"
)

// Verify reads a dump stream without a database and checks it completely:
// the member order, every statement of the pre-data and post-data against
// the shapes Dump writes (ErrUnsafeSQL), every table's row count, size and
// checksum against the trailer. It returns the stream's summary.
func Verify(ctx context.Context, r io.Reader) (*Summary, error) {
	sr := newStreamReader(r)
	if err := sr.readHeader(); err != nil {
		return nil, err
	}
	if _, err := sr.readPreData(); err != nil {
		return nil, err
	}
	hashes := make([]*tableHash, len(sr.header.Tables))
	for i, t := range sr.header.Tables {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hashes[i] = t.newHash()
		if _, err := io.Copy(hashes[i], sr.tableData(i+1)); err != nil {
			return nil, fmt.Errorf("table %s.%s: %w", t.Schema, t.Name, err)
		}
	}
	return sr.finish(hashes)
}

// finish reads post-data and the summary, checks them against what was read,
// and returns the stream's summary; the post-data list is kept in s.post.
func (s *streamReader) finish(hashes []*tableHash) (*Summary, error) {
	var post streamDDL
	if err := s.readJSON(memberPostData, &post); err != nil {
		return nil, err
	}
	if err := s.checkPostData(post.Objects); err != nil {
		return nil, err
	}
	s.post = post.Objects
	var sum streamSummary
	if err := s.readJSON(memberSummary, &sum); err != nil {
		return nil, err
	}
	if err := s.end(); err != nil {
		return nil, err
	}
	if err := s.checkSummary(&sum, hashes); err != nil {
		return nil, err
	}
	return &Summary{ServerVersion: s.header.ServerVersion, LastMigration: s.header.LastMigration, Tables: sum.Tables, Bytes: s.count.N}, nil
}
