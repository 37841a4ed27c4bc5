package files

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The bounds Write records are the ones Check finds in what it wrote: a
// bundle's declared bounds are exactly what a full verification would have
// measured, so a one-pass extraction probes the target with the same values.
func TestWrite_BoundsAreWhatCheckFinds(t *testing.T) {
	src := t.TempDir()
	deep := filepath.Join(src, strings.Repeat("a", 120), strings.Repeat("b", 130))
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	long := filepath.Join(deep, strings.Repeat("c", 200))
	for _, p := range []string{long, filepath.Join(src, "small")} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	xattrs := false
	if err := unix.Setxattr(filepath.Join(src, "small"), "user.assisted-installer-manifest-source", bytes.Repeat([]byte("v"), 300), 0); err == nil {
		xattrs = true
		if err := unix.Setxattr(filepath.Join(src, "small"), "user.second", []byte("w"), 0); err != nil {
			t.Fatal(err)
		}
		if err := unix.Setxattr(long, "user.x", []byte("y"), 0); err != nil {
			t.Fatal(err)
		}
	} else {
		t.Logf("no user.* xattrs on %s (%v): only the path bound is compared", src, err)
	}
	var tb bytes.Buffer
	wsum, err := Write(context.Background(), &tb, src, WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	csum, err := Check(context.Background(), bytes.NewReader(tb.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	wantLongest := len(strings.Repeat("a", 120) + "/" + strings.Repeat("b", 130) + "/" + strings.Repeat("c", 200))
	if wsum.LongestName != wantLongest || csum.LongestName != wantLongest {
		t.Fatalf("longest path: Write %d, Check %d, want %d", wsum.LongestName, csum.LongestName, wantLongest)
	}
	if xattrs {
		want := int64(len("user.assisted-installer-manifest-source") + 300 + len("user.second") + 1)
		if wsum.MaxXattrBytes != want || csum.MaxXattrBytes != want || wsum.Bounds().MaxXattrBytes() != want {
			t.Fatalf("largest xattrs: Write %d (%v), Check %d, want %d", wsum.MaxXattrBytes, wsum.LargestXattrs, csum.MaxXattrBytes, want)
		}
	}
}

// With declared bounds, an entry with a longer path or larger extended
// attributes than declared is refused on its header; one at the bounds is
// extracted.
func TestRules_BoundsRefuseALargerEntry(t *testing.T) {
	layer := func(name string, xattr int) []byte {
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		hdr := &tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: 1, Format: tar.FormatPAX}
		if xattr > 0 {
			hdr.PAXRecords = map[string]string{"SCHILY.xattr.user.m": strings.Repeat("v", xattr)}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte("x"))
		tw.Close()
		return b.Bytes()
	}
	bounds := &Bounds{LongestName: 8, LargestXattrs: [][2]int{{len("user.m"), 10}}}
	rules := Rules{Bounds: bounds}
	for _, tc := range []struct {
		name   string
		data   []byte
		refuse bool
	}{
		{"at the bounds", layer("12345678", 10), false},
		{"a longer path", layer("123456789", 0), true},
		{"larger xattrs", layer("f", 11), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, cerr := CheckRules(context.Background(), bytes.NewReader(tc.data), rules)
			dir := filepath.Join(t.TempDir(), "stage")
			_, xerr := Extract(context.Background(), bytes.NewReader(tc.data), dir, ExtractOptions{Rules: rules, SkipUnsupportedXattrs: true})
			for what, err := range map[string]error{"check": cerr, "extract": xerr} {
				var ue *UnsafeEntryError
				switch {
				case tc.refuse && (!errors.As(err, &ue) || !strings.Contains(ue.Reason, ReasonBeyondBounds)):
					t.Fatalf("%s: want a refusal beyond the declared bounds, got %v", what, err)
				case !tc.refuse && err != nil:
					t.Fatalf("%s: %v", what, err)
				}
			}
			if tc.refuse {
				if _, err := os.Stat(dir); !os.IsNotExist(err) {
					t.Fatalf("a refused extraction left %s behind (%v)", dir, err)
				}
			}
		})
	}
}

func TestBounds_WithinLimits(t *testing.T) {
	for _, tc := range []struct {
		b    Bounds
		want bool
	}{
		{Bounds{LongestName: PathMax, LargestXattrs: [][2]int{{XattrNameMax, XattrValueMax}}}, true},
		{Bounds{LongestName: PathMax + 1}, false},
		{Bounds{LongestName: 1, LargestXattrs: [][2]int{{XattrNameMax + 1, 1}}}, false},
		{Bounds{LongestName: 1, LargestXattrs: [][2]int{{10, XattrValueMax + 1}}}, false},
		{Bounds{LongestName: 1, LargestXattrs: [][2]int{{0, 1}}}, false},
		// 300 names of 254 bytes: each fits, their list (with NULs) does not.
		{Bounds{LongestName: 1, LargestXattrs: func() [][2]int {
			var s [][2]int
			for range 300 {
				s = append(s, [2]int{254, 1})
			}
			return s
		}()}, false},
	} {
		if got := tc.b.WithinLimits(); got != tc.want {
			t.Errorf("%d, %d xattrs: WithinLimits %v, want %v", tc.b.LongestName, len(tc.b.LargestXattrs), got, tc.want)
		}
	}
}
