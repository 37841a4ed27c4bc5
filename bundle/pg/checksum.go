package pg

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"hash"

	"github.com/zeebo/xxh3"
)

// Table checksum algorithms: the header's "checksum" (3.0 on) names the one
// its summary uses; streams before 3.0 carry none and use SHA-256.
//
// The checksum catches data lost or changed between the dump's COPY TO and
// the restore's COPY FROM (and, reading back, what the target stored). It is
// no authentication: what a stream is allowed to be comes from the bundle's
// signature over its manifest, whose layer digests are SHA-256. So 3.0 uses
// XXH3-128 (seed 0, printed in the xxHash canonical form, as `xxhsum -H2`
// prints it), which hashes at memory speed where SHA-256 was a visible part
// of a CPU-bound dump and restore (docs/bundle-format.md, "The dump stream").
const (
	checksumSHA256 = "sha256"
	checksumXXH3   = "xxh3-128"
)

// tableHash follows a table's COPY data: its checksum, its size and its row
// count. In COPY text format every row ends with a newline and newlines
// inside values are escaped, so counting newlines counts rows; COPY binary
// data is counted from its framing (binaryRows).
type tableHash struct {
	algo  string
	h     hash.Hash
	bytes int64
	rows  int64
	bin   *binaryRows // binary format; nil for text
}

// newTableHash follows data with the checksum algo (checksumSHA256 or
// checksumXXH3; the reader has refused any other).
func newTableHash(algo string) *tableHash {
	if algo == checksumXXH3 {
		return &tableHash{algo: algo, h: xxh3.New128()}
	}
	return &tableHash{algo: checksumSHA256, h: sha256.New()}
}

// newTableHashFor follows data in format (copyText or copyBinary).
func newTableHashFor(format, algo string) *tableHash {
	t := newTableHash(algo)
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

// sum is "<algo>:<hex>".
func (t *tableHash) sum() string { return t.algo + ":" + hex.EncodeToString(t.h.Sum(nil)) }
