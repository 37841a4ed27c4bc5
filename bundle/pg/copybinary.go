package pg

import (
	"bytes"
	"encoding/binary"
)

// A table whose columns are all of built-in types with a stable binary
// representation is dumped and restored with COPY in binary format (stream
// format 2.0): the server then neither formats nor parses each value as text
// (docs/bundle-format.md, "database layer", has what that saved on the
// bench's data). The binary send and receive
// functions of these types have kept their formats across the majors this
// project supports (12 to 17), refer to no database-specific OID (an array
// names its element type, and built-in type OIDs are fixed), and apply the
// column's typmod on input as text input does. Any other column type (a
// domain, enum, composite, range, an extension's type, xml) keeps the whole
// table in text format.
var binaryCopyTypes = map[uint32]bool{
	16:   true, // bool
	17:   true, // bytea
	18:   true, // "char"
	19:   true, // name
	20:   true, // int8
	21:   true, // int2
	23:   true, // int4
	25:   true, // text
	26:   true, // oid
	114:  true, // json
	650:  true, // cidr
	700:  true, // float4
	701:  true, // float8
	774:  true, // macaddr8
	829:  true, // macaddr
	869:  true, // inet
	1042: true, // bpchar
	1043: true, // varchar
	1082: true, // date
	1083: true, // time
	1114: true, // timestamp
	1184: true, // timestamptz
	1186: true, // interval
	1266: true, // timetz
	1700: true, // numeric
	2950: true, // uuid
	3802: true, // jsonb
}

// firstNormalOID is where the OIDs of objects made after initdb start:
// every built-in type's OID is below it.
const firstNormalOID = 16384

// Copy formats of a table's data in the stream (streamTable.Format).
const (
	copyText   = ""
	copyBinary = "binary"
)

// binaryCopyable tells whether COPY can move the column in binary format
// (see binaryCopyTypes): a listed type, or a built-in array of one.
func (c columnDef) binaryCopyable() bool {
	if c.elemOID != 0 {
		return c.typOID < firstNormalOID && binaryCopyTypes[c.elemOID]
	}
	return binaryCopyTypes[c.typOID]
}

// copyFormat is the format the table's rows are dumped in.
func (t *tableDef) copyFormat() string {
	for _, c := range t.columns {
		if c.generated == "" && !c.binaryCopyable() {
			return copyText
		}
	}
	return copyBinary
}

// binarySignature starts COPY's binary format: "PGCOPY\n\377\r\n\0".
var binarySignature = []byte("PGCOPY\n\xff\r\n\x00")

// binaryRows follows COPY binary data as it streams and counts its tuples
// from the framing alone (RFC-like description in the COPY documentation,
// "Binary Format"): the signature, a flags word, a header extension, then
// tuples of a 16-bit field count and, per field, a 32-bit length (-1 for
// NULL) and the value, and a 16-bit -1 trailer. rows is -1 unless the data
// is well-framed and ended with the trailer; the server checks the values.
type binaryRows struct {
	pos   int // bytes of the header seen
	hdr   [19]byte
	small [4]byte // an integer being read
	nsm   int     // its bytes so far
	want  int     // its size: 2 (field count) or 4 (field length)
	skip  int64   // value bytes still to skip
	left  int     // fields of the current tuple still to read
	rows  int64
	ended bool
	bad   bool
}

func (b *binaryRows) write(p []byte) {
	for len(p) > 0 && !b.bad {
		if b.ended {
			b.bad = true // data after the trailer
			return
		}
		if b.pos < len(b.hdr) {
			n := copy(b.hdr[b.pos:], p)
			b.pos += n
			p = p[n:]
			if b.pos == len(b.hdr) {
				flags := binary.BigEndian.Uint32(b.hdr[11:15])
				if !bytes.Equal(b.hdr[:11], binarySignature) || flags&0xffff != 0 || flags&(1<<16) != 0 {
					b.bad = true // not COPY binary data, or with OIDs, or an unknown critical flag
					return
				}
				b.skip = int64(binary.BigEndian.Uint32(b.hdr[15:19])) // the header extension
				b.want = 2
			}
			continue
		}
		if b.skip > 0 {
			n := min(int64(len(p)), b.skip)
			b.skip -= n
			p = p[n:]
			continue
		}
		n := copy(b.small[b.nsm:b.want], p)
		b.nsm += n
		p = p[n:]
		if b.nsm < b.want {
			continue
		}
		b.nsm = 0
		if b.want == 2 {
			count := int16(binary.BigEndian.Uint16(b.small[:2]))
			switch {
			case count == -1:
				b.ended = true
			case count < 0:
				b.bad = true
			default:
				b.rows++
				b.left = int(count)
				if b.left > 0 {
					b.want = 4
				}
			}
			continue
		}
		length := int32(binary.BigEndian.Uint32(b.small[:4]))
		switch {
		case length >= 0:
			b.skip = int64(length)
		case length != -1:
			b.bad = true
		}
		if b.left--; b.left == 0 {
			b.want = 2
		}
	}
}

// count is the number of tuples, or -1 when the data is not well-framed
// COPY binary data that ended with its trailer.
func (b *binaryRows) count() int64 {
	if b.bad || !b.ended || b.skip > 0 || b.nsm > 0 {
		return -1
	}
	return b.rows
}
