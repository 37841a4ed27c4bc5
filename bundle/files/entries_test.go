package files

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// lender lends a byte slice in pieces of irregular sizes, each a fresh copy
// that it overwrites at the next call, so that a caller that keeps a piece
// too long reads garbage.
type lender struct {
	data []byte
	step int
	buf  []byte
	n    int
}

func (l *lender) Next(max int) ([]byte, error) {
	if len(l.data) == 0 {
		return nil, io.EOF
	}
	for i := range l.buf {
		l.buf[i] = 0xA5 // what a piece kept past its time holds
	}
	l.n++
	k := min(max, len(l.data), 1+(l.n*l.step)%(3*l.step))
	l.buf = append(l.buf[:0], l.data[:k]...)
	l.data = l.data[k:]
	return l.buf, nil
}

func (l *lender) Read(p []byte) (int, error) {
	b, err := l.Next(len(p))
	return copy(p, b), err
}

// tree lists what an extraction wrote: path, type, mode, content or link.
func tree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fi, _ := os.Lstat(p)
		s := fmt.Sprintf("%s %v", rel, fi.Mode())
		switch {
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			s += fmt.Sprintf(" %q", b)
		case fi.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			s += " -> " + l
		}
		out = append(out, s)
		return nil
	})
	sort.Strings(out)
	return out
}

func content(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

func tarBytes(t *testing.T, format tar.Format, entries ...any) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for i := 0; i < len(entries); i++ {
		h := entries[i].(tar.Header)
		h.Format = format
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg && h.Size > 0 {
			i++
			tw.Write(entries[i].([]byte))
		}
	}
	tw.Close()
	return b.Bytes()
}

// A reader that lends (the bundle's layer reader) is extracted and checked
// exactly as a plain reader of the same bytes: the same files, the same
// summary, the same verdicts on broken archives, whatever the pieces' sizes.
func TestEntries_LenderSameAsReader(t *testing.T) {
	long := strings.Repeat("d", 120) + "/" + strings.Repeat("f", 140)
	good := map[string][]byte{}
	for _, format := range []tar.Format{tar.FormatPAX, tar.FormatGNU, tar.FormatUSTAR} {
		name := long
		if format == tar.FormatUSTAR {
			name = "d/f" // USTAR cannot hold the long name
		}
		entries := []any{
			tar.Header{Name: "d/", Typeflag: tar.TypeDir, Mode: 0o750},
			tar.Header{Name: "d/empty", Typeflag: tar.TypeReg, Mode: 0o600},
			tar.Header{Name: "d/511", Typeflag: tar.TypeReg, Size: 511, Mode: 0o644}, content(511, 1),
			tar.Header{Name: "d/512", Typeflag: tar.TypeReg, Size: 512, Mode: 0o644}, content(512, 2),
			tar.Header{Name: "d/513", Typeflag: tar.TypeReg, Size: 513, Mode: 0o640}, content(513, 3),
			tar.Header{Name: "d/big", Typeflag: tar.TypeReg, Size: 150<<10 + 17, Mode: 0o644}, content(150<<10+17, 4),
			tar.Header{Name: "d/link", Typeflag: tar.TypeSymlink, Linkname: "513"},
			tar.Header{Name: "d/hard", Typeflag: tar.TypeLink, Linkname: "d/512"},
		}
		if format != tar.FormatUSTAR {
			entries = append(entries, tar.Header{Name: long[:121], Typeflag: tar.TypeDir, Mode: 0o755},
				tar.Header{Name: name, Typeflag: tar.TypeReg, Size: 1000, Mode: 0o644}, content(1000, 5))
		}
		if format == tar.FormatPAX {
			entries = append(entries, tar.Header{Name: "d/x", Typeflag: tar.TypeReg, Size: 3, Mode: 0o644,
				PAXRecords: map[string]string{"SCHILY.xattr.user.assisted-installer-manifest-source": "user", "comment": strings.Repeat("c", 600)}}, []byte("abc"))
		}
		good[fmt.Sprint(format)] = tarBytes(t, format, entries...)
	}
	cases := map[string][]byte{}
	for name, b := range good {
		cases[name] = b
		cases[name+", cut in the big file"] = b[:100<<10]
		cases[name+", cut in a header"] = b[:1024+100]
		cases[name+", cut in the end marker"] = b[:len(b)-600]
		cases[name+", data after the end"] = append(bytes.Clone(b), 1)
	}
	cases["sparse"] = sparseTar(t, "10")
	cases["empty"] = nil
	for name, data := range cases {
		wantSum, wantCheck := Check(context.Background(), bytes.NewReader(data))
		wantDir := filepath.Join(t.TempDir(), "x")
		_, wantErr := Extract(context.Background(), bytes.NewReader(data), wantDir, ExtractOptions{SkipUnsupportedXattrs: true})
		want := tree(t, wantDir)
		for _, step := range []int{1, 100, 4096, 64 << 10, 1 << 20} {
			gotSum, gotCheck := Check(context.Background(), &lender{data: data, step: step})
			if (gotCheck == nil) != (wantCheck == nil) || fmt.Sprint(gotSum) != fmt.Sprint(wantSum) {
				t.Fatalf("%s, pieces of ~%d: Check gives %v, %v; from a plain reader %v, %v", name, step, gotSum, gotCheck, wantSum, wantCheck)
			}
			dir := filepath.Join(t.TempDir(), "x")
			_, err := Extract(context.Background(), &lender{data: data, step: step}, dir, ExtractOptions{SkipUnsupportedXattrs: true})
			if (err == nil) != (wantErr == nil) || errors.Is(err, io.ErrUnexpectedEOF) != errors.Is(wantErr, io.ErrUnexpectedEOF) {
				t.Fatalf("%s, pieces of ~%d: Extract gives %v; from a plain reader %v", name, step, err, wantErr)
			}
			if got := tree(t, dir); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%s, pieces of ~%d: extracted\n%v\nfrom a plain reader\n%v", name, step, got, want)
			}
		}
		if len(data) > 0 && wantErr == nil && len(want) == 0 {
			t.Fatalf("%s: nothing extracted: the case tests nothing", name)
		}
	}
}
