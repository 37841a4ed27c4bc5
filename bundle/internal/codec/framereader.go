package codec

import (
	"bytes"
	"io"

	"github.com/klauspost/compress/zstd"
)

// frameReader walks zstd frames in src: next reads a frame's header, then
// Read passes the frame's bytes through up to its end (io.EOF), from its
// block headers: raw and compressed blocks carry their size, an RLE block
// one byte, the last block is followed by the checksum when the header has
// one. Where it cannot walk (a reserved block type) it becomes transparent:
// Read then passes all of src.
type frameReader struct {
	src         io.Reader
	transparent bool
	fast        bool // the frame may be decoded whole (next)
	ended       bool // the frame's last byte was read
	checksum    bool
	last        bool
	left        int64 // bytes of the current block (or checksum) still to pass
	hdr         [3]byte
	pend        []byte // a block header not yet passed
	// window is the window of a frame whose raw blocks may be passed as
	// they are (no content size, no checksum, no dictionary, a window of
	// at most passWindow: see frameDecoder.passRaw), else 0.
	window     int
	windowDesc byte
}

// next reads the header of the next frame into (*buf)[:0] and returns it;
// io.EOF with nothing read is the end of the stream, another error the
// source's. A short header, or one that is not a frame's (not zstd, a
// skippable frame, reserved bits), leaves fr transparent: the streaming
// decoder gets it and says what it is.
func (fr *frameReader) next(buf *[]byte) ([]byte, error) {
	*fr = frameReader{src: fr.src}
	b := (*buf)[:0]
	if cap(b) < zstd.HeaderMaxSize {
		b = make([]byte, 0, 64<<10)
	}
	b = b[:5]
	n, err := io.ReadFull(fr.src, b)
	b = b[:n]
	*buf = b
	if err != nil {
		if err == io.EOF { //nolint:errorlint // io.ReadFull's own
			return nil, io.EOF
		}
		if err == io.ErrUnexpectedEOF { //nolint:errorlint // io.ReadFull's own: a short stream
			fr.transparent = true
			return b, nil
		}
		return b, err
	}
	if !bytes.Equal(b[:4], zstdMagic) || b[4]&0x08 != 0 {
		fr.transparent = true // a skippable frame, or not zstd: the decoder says which
		return b, nil
	}
	fhd := b[4]
	single := fhd&0x20 != 0
	size := 5 + []int{0, 1, 2, 4}[fhd&3] + []int{0, 2, 4, 8}[fhd>>6]
	if !single {
		size++ // the window descriptor
	} else if fhd>>6 == 0 {
		size++ // a one-byte content size
	}
	b = b[:size]
	if m, err := io.ReadFull(fr.src, b[5:]); err != nil {
		*buf = b[:5+m]
		if err == io.ErrUnexpectedEOF || err == io.EOF { //nolint:errorlint // io.ReadFull's own
			fr.transparent = true
			return *buf, nil
		}
		return *buf, err
	}
	*buf = b
	var h zstd.Header
	if err := h.Decode(b); err != nil || h.HeaderSize != size {
		fr.transparent = true
		return b, nil
	}
	fr.checksum = h.HasCheckSum
	fr.fast = h.DictionaryID == 0 && h.HasFCS && h.FrameContentSize <= fastFrame
	if h.DictionaryID == 0 && !h.HasFCS && !h.HasCheckSum && !single && h.WindowSize <= passWindow {
		fr.window, fr.windowDesc = int(h.WindowSize), b[5]
	}
	return b, nil
}

// setBlock takes fr.hdr as the header of the next block (RFC 8878, section
// 3.1.1.2): whether it is the frame's last, and how many bytes of it follow
// (raw and compressed blocks: their size; RLE: one byte; a reserved type
// leaves fr transparent). It returns the type and the size field.
func (fr *frameReader) setBlock() (typ uint32, size int) {
	h := uint32(fr.hdr[0]) | uint32(fr.hdr[1])<<8 | uint32(fr.hdr[2])<<16
	typ, size = (h>>1)&3, int(h>>3)
	fr.last = h&1 != 0
	switch typ {
	case 0, 2: // raw, compressed
		fr.left = int64(size)
	case 1: // RLE
		fr.left = 1
	default: // reserved: the decoder says what it is
		fr.transparent = true
	}
	return typ, size
}

// fill appends the frame's next bytes to *buf, up to limit bytes in all.
func (fr *frameReader) fill(buf *[]byte, limit int) error {
	b := *buf
	if len(b) == cap(b) && cap(b) < limit {
		nb := make([]byte, len(b), min(limit, 2*cap(b)+4096))
		copy(nb, b)
		b = nb
	}
	n, err := fr.Read(b[len(b):min(cap(b), limit)])
	*buf = b[:len(b)+n]
	if err == io.EOF { //nolint:errorlint // fr's own
		if fr.ended {
			return nil
		}
		return io.ErrUnexpectedEOF
	}
	return err
}

func (fr *frameReader) Read(p []byte) (int, error) {
	if len(fr.pend) > 0 {
		n := copy(p, fr.pend)
		fr.pend = fr.pend[n:]
		return n, nil
	}
	if fr.transparent {
		return fr.src.Read(p)
	}
	if fr.left == 0 {
		if fr.ended {
			return 0, io.EOF
		}
		if fr.last {
			// Past the last block: the checksum, or the end.
			if fr.checksum {
				fr.checksum, fr.left = false, 4
			} else {
				fr.ended = true
				return 0, io.EOF
			}
		} else {
			if _, err := io.ReadFull(fr.src, fr.hdr[:]); err != nil {
				if err == io.EOF { //nolint:errorlint // io.ReadFull's own
					err = io.ErrUnexpectedEOF
				}
				return 0, err
			}
			fr.setBlock()
			fr.pend = fr.hdr[:]
			return fr.Read(p)
		}
	}
	if int64(len(p)) > fr.left {
		p = p[:fr.left]
	}
	n, err := fr.src.Read(p)
	fr.left -= int64(n)
	if err == io.EOF { //nolint:errorlint // the source's end
		if fr.left > 0 {
			err = io.ErrUnexpectedEOF
		} else {
			err = nil
		}
	}
	if fr.left == 0 && fr.last && !fr.checksum && err == nil {
		fr.ended = true
	}
	return n, err
}
