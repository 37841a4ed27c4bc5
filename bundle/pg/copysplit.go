package pg

import (
	"bufio"
	"encoding/binary"
)

// A server sends each row of a COPY TO as one CopyData message, and pgx
// (pgproto3.Frontend) hands a message over only whole: it reads the row
// into one buffer of its size, rounded up to a power of two (iobufpool).
// A dump or readback of 32 MiB rows thus held buffers of 64 MiB at a time,
// and the process peaked at about 240 MiB: memory grew with the widest
// row. copySplitter, between the connection's read buffer and pgproto3,
// cuts every CopyData message longer than maxCopyPiece into consecutive
// CopyData messages of at most maxCopyPiece bytes. COPY TO's data is the
// concatenation of its CopyData messages (pgconn.CopyTo writes each one's
// bytes to its writer, and nothing of ours gives their boundaries a
// meaning), so the data is unchanged and memory is bounded whatever the row
// width. Every other message passes through as it is.

// maxCopyPiece is the largest CopyData body copySplitter passes on.
const maxCopyPiece = 64 << 10

// copySplitter reads backend messages from r and re-frames long CopyData
// messages (see above).
type copySplitter struct {
	r *bufio.Reader
	// hdr holds a message header to pass on, from hdr[off:hn].
	hdr     [5]byte
	off, hn int
	// piece is what is left of the current message's body (or of the
	// current piece of a split CopyData message) to pass on; rest is what
	// follows it in the split message's further pieces.
	piece, rest int
}

func newCopySplitter(r *bufio.Reader) *copySplitter { return &copySplitter{r: r} }

// Read passes on the messages, blocking only while nothing was passed on in
// this call: past that, it stops where the buffered input ends.
func (s *copySplitter) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		switch {
		case s.off < s.hn:
			k := copy(p[n:], s.hdr[s.off:s.hn])
			s.off += k
			n += k
		case s.piece > 0:
			want := min(len(p)-n, s.piece)
			if n > 0 {
				if s.r.Buffered() == 0 {
					return n, nil
				}
				want = min(want, s.r.Buffered())
			}
			k, err := s.r.Read(p[n : n+want])
			s.piece -= k
			n += k
			if err != nil {
				return n, err
			}
		case s.rest > 0:
			s.startPiece(s.rest)
		default:
			if n > 0 && s.r.Buffered() < len(s.hdr) {
				return n, nil
			}
			h, err := s.r.Peek(len(s.hdr))
			if err != nil {
				return n, err
			}
			typ, size := h[0], int64(binary.BigEndian.Uint32(h[1:]))
			if typ != 'd' || size-4 <= maxCopyPiece || size > 1<<31-1 {
				// Passed on as it is (pgproto3 refuses a bad length).
				copy(s.hdr[:], h)
				s.off, s.hn, s.piece, s.rest = 0, len(s.hdr), max(int(size)-4, 0), 0
			} else {
				s.startPiece(int(size) - 4)
			}
			_, _ = s.r.Discard(len(s.hdr))
		}
	}
	return n, nil
}

// startPiece queues the header of a CopyData message carrying the next
// piece of a body of which total bytes remain.
func (s *copySplitter) startPiece(total int) {
	s.piece = min(total, maxCopyPiece)
	s.rest = total - s.piece
	s.hdr[0] = 'd'
	binary.BigEndian.PutUint32(s.hdr[1:], uint32(s.piece+4))
	s.off, s.hn = 0, len(s.hdr)
}
