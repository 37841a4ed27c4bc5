package iso

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"

	"github.com/ulikunitz/xz"
	"github.com/ulikunitz/xz/lzma"
)

// Compression is how an Ignition cpio archive is compressed.
type Compression string

// Supported compressions. The kernel and coreos-installer read both; xz with a
// CRC32 check is what coreos-installer writes (the kernel rejects CRC64).
const (
	XZ   Compression = "xz"
	Gzip Compression = "gzip"
)

// maxArchive caps what is decompressed from an embed area: an area holds an
// Ignition config and a few keyfiles, never more.
const maxArchive = 64 << 20

var (
	gzipMagic = []byte{0x1f, 0x8b}
	xzMagic   = []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// CompressCPIO returns members as a cpio archive compressed with c.
func CompressCPIO(members []Member, c Compression) ([]byte, error) {
	var raw bytes.Buffer
	if err := WriteCPIO(&raw, members); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	var w io.WriteCloser
	switch c {
	case XZ, "":
		// The dictionary only needs to cover the archive: a small one makes the
		// encoder ~50x faster than the 8 MiB default for a typical config.
		dict := 64 << 10
		for dict < raw.Len() && dict < 8<<20 {
			dict <<= 1
		}
		xw, err := xz.WriterConfig{CheckSum: xz.CRC32, DictCap: dict, Matcher: lzma.HashTable4}.NewWriter(&out)
		if err != nil {
			return nil, err
		}
		w = xw
	case Gzip:
		gw, err := gzip.NewWriterLevel(&out, gzip.BestCompression)
		if err != nil {
			return nil, err
		}
		w = gw
	default:
		return nil, fmt.Errorf("unknown compression %q: use xz or gzip", c)
	}
	if _, err := w.Write(raw.Bytes()); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	for out.Len()%4 != 0 {
		out.WriteByte(0)
	}
	return out.Bytes(), nil
}

// ReadArchives reads an embed area or initrd: a sequence of cpio archives, each
// uncompressed, gzip or xz, with zero padding between and after them. It returns
// every member in order.
func ReadArchives(area []byte) ([]Member, error) {
	var out []Member
	for off := 0; ; {
		for off < len(area) && area[off] == 0 {
			off++
		}
		if off >= len(area) {
			return out, nil
		}
		rest := area[off:]
		var raw []byte
		var used int
		var err error
		switch {
		case bytes.HasPrefix(rest, gzipMagic):
			raw, used, err = gunzipOne(rest)
		case bytes.HasPrefix(rest, xzMagic):
			raw, used, err = unxzOne(rest)
		case bytes.HasPrefix(rest, zstdMagic):
			return nil, errors.New("embed area holds a zstd archive, which is not supported: use a base ISO whose area is empty, xz or gzip")
		case bytes.HasPrefix(rest, []byte("0707")):
			raw, used = rest, len(rest)
		default:
			return nil, fmt.Errorf("unknown data at byte %d of the embed area", off)
		}
		if err != nil {
			return nil, fmt.Errorf("archive at byte %d of the embed area: %w", off, err)
		}
		ms, err := ReadCPIO(raw)
		if err != nil {
			return nil, fmt.Errorf("archive at byte %d of the embed area: %w", off, err)
		}
		out = append(out, ms...)
		off += used
	}
}

// gunzipOne decompresses one gzip member and reports how many bytes it used.
// bytes.Reader is an io.ByteReader, so the decoder reads exactly the member.
func gunzipOne(b []byte) ([]byte, int, error) {
	br := bytes.NewReader(b)
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, 0, err
	}
	zr.Multistream(false)
	raw, err := io.ReadAll(io.LimitReader(zr, maxArchive+1))
	if err != nil {
		return nil, 0, err
	}
	if len(raw) > maxArchive {
		return nil, 0, fmt.Errorf("decompresses to more than %d bytes", maxArchive)
	}
	return raw, len(b) - br.Len(), nil
}

// unxzOne decompresses one xz stream. A stream ends with the footer magic "YZ"
// at a multiple of four bytes; try each candidate end until one decodes.
func unxzOne(b []byte) ([]byte, int, error) {
	var lastErr error = errors.New("no xz stream footer")
	for end := 12 + 12; end <= len(b); end += 4 {
		if b[end-2] != 'Y' || b[end-1] != 'Z' {
			continue
		}
		r, err := xz.ReaderConfig{SingleStream: true}.NewReader(bytes.NewReader(b[:end]))
		if err != nil {
			lastErr = err
			continue
		}
		raw, err := io.ReadAll(io.LimitReader(r, maxArchive+1))
		if err != nil {
			lastErr = err
			continue
		}
		if len(raw) > maxArchive {
			return nil, 0, fmt.Errorf("decompresses to more than %d bytes", maxArchive)
		}
		return raw, end, nil
	}
	return nil, 0, lastErr
}
