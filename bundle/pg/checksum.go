package pg

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"hash"
)

// tableHash follows a table's COPY data: its SHA-256, its size and its row
// count. In COPY text format every row ends with a newline and newlines
// inside values are escaped, so counting newlines counts rows; COPY binary
// data is counted from its framing (binaryRows).
type tableHash struct {
	h     hash.Hash
	bytes int64
	rows  int64
	bin   *binaryRows // binary format; nil for text
}

func newTableHash() *tableHash { return &tableHash{h: sha256.New()} }

// newTableHashFor follows data in format (copyText or copyBinary).
func newTableHashFor(format string) *tableHash {
	t := newTableHash()
	if format == copyBinary {
		t.bin = &binaryRows{}
	}
	return t
}

func (t *tableHash) Write(p []byte) (int, error) {
	t.h.Write(p)
	t.bytes += int64(len(p))
	if t.bin != nil {
		t.bin.write(p)
		t.rows = t.bin.count()
	} else {
		t.rows += int64(bytes.Count(p, []byte{'\n'}))
	}
	return len(p), nil
}

// sum is "sha256:<hex>".
func (t *tableHash) sum() string { return "sha256:" + hex.EncodeToString(t.h.Sum(nil)) }
