package pg

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"

	"github.com/jackc/pgx/v5/pgproto3"
)

// message is one backend message: its type and body.
func message(typ byte, body []byte) []byte {
	m := []byte{typ, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(m[1:], uint32(len(body)+4))
	return append(m, body...)
}

func TestCopySplitter(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	body := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return b
	}
	rows := [][]byte{body(10), body(maxCopyPiece), body(maxCopyPiece + 1), body(3*maxCopyPiece + 17), {}, body(5 << 20), body(1)}
	var stream []byte
	stream = append(stream, message('H', []byte{1, 0, 1, 0, 1})...) // CopyOutResponse: binary, one column
	var want []byte
	for _, row := range rows {
		stream = append(stream, message('d', row)...)
		want = append(want, row...)
	}
	stream = append(stream, message('c', nil)...)
	stream = append(stream, message('C', []byte("COPY 7\x00"))...)
	stream = append(stream, message('Z', []byte{'I'})...)

	for _, tc := range []struct {
		name string
		r    func() io.Reader
	}{
		{"whole", func() io.Reader { return bytes.NewReader(stream) }},
		{"one byte at a time", func() io.Reader { return iotest.OneByteReader(bytes.NewReader(stream)) }},
		{"half reads", func() io.Reader { return iotest.HalfReader(bytes.NewReader(stream)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fe := pgproto3.NewFrontend(newCopySplitter(bufio.NewReaderSize(tc.r(), readBuffer)), io.Discard)
			var got []byte
			var kinds []string
			for {
				msg, err := fe.Receive()
				if err != nil {
					t.Fatalf("receive after %v: %v", kinds, err)
				}
				switch m := msg.(type) {
				case *pgproto3.CopyOutResponse:
					kinds = append(kinds, "H")
				case *pgproto3.CopyData:
					if len(m.Data) > maxCopyPiece {
						t.Fatalf("a CopyData message of %d bytes passed, more than %d", len(m.Data), maxCopyPiece)
					}
					got = append(got, m.Data...)
					if len(kinds) == 0 || kinds[len(kinds)-1] != "d" {
						kinds = append(kinds, "d")
					}
				case *pgproto3.CopyDone:
					kinds = append(kinds, "c")
				case *pgproto3.CommandComplete:
					kinds = append(kinds, "C:"+string(m.CommandTag))
				case *pgproto3.ReadyForQuery:
					kinds = append(kinds, "Z")
				default:
					t.Fatalf("unexpected %T", msg)
				}
				if _, ok := msg.(*pgproto3.ReadyForQuery); ok {
					break
				}
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("the COPY data came through as %d bytes that differ from the %d sent", len(got), len(want))
			}
			if k := fmtKinds(kinds); k != "H d c C:COPY 7 Z" {
				t.Fatalf("messages %q, want H d c C:COPY 7 Z", k)
			}
		})
	}
}

func fmtKinds(k []string) string {
	var b bytes.Buffer
	for i, s := range k {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s)
	}
	return b.String()
}

// The splitter keeps its place when its source fails and resumes where it
// was (pgconn retries a read that a deadline interrupted).
func TestCopySplitterResumesAfterErrors(t *testing.T) {
	row := bytes.Repeat([]byte("0123456789abcdef"), maxCopyPiece/4)
	stream := append(message('d', row), message('c', nil)...)
	flaky := &flakyReader{r: bytes.NewReader(stream)}
	s := newCopySplitter(bufio.NewReaderSize(flaky, 4096))
	var out bytes.Buffer
	buf := make([]byte, 3000)
	for {
		n, err := s.Read(buf)
		out.Write(buf[:n])
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !errors.Is(err, errFlaky) {
			t.Fatal(err)
		}
	}
	fe := pgproto3.NewFrontend(bytes.NewReader(out.Bytes()), io.Discard)
	var got []byte
	for {
		msg, err := fe.Receive()
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := msg.(*pgproto3.CopyData); ok {
			got = append(got, d.Data...)
			continue
		}
		if _, ok := msg.(*pgproto3.CopyDone); !ok {
			t.Fatalf("unexpected %T", msg)
		}
		break
	}
	if !bytes.Equal(got, row) {
		t.Fatalf("got %d bytes of data back, want the %d sent", len(got), len(row))
	}
}

var errFlaky = errors.New("flaky")

// flakyReader fails every third read without consuming anything.
type flakyReader struct {
	r io.Reader
	n int
}

func (f *flakyReader) Read(p []byte) (int, error) {
	f.n++
	if f.n%3 == 0 {
		return 0, errFlaky
	}
	return f.r.Read(p[:min(len(p), 1000)])
}
