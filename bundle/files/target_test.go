package files

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestCheckTarget(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "not", "yet")
	ok := Target{Dir: target, Declared: Declared{Files: 2, Dirs: 1, Bytes: 10}, Checked: &Summary{LongestName: 10}}
	if err := CheckTarget(ok); err != nil {
		t.Fatalf("a small layer: %v", err)
	}
	var te *TargetError
	huge := ok
	huge.Declared.Bytes = 1 << 62
	if err := CheckTarget(huge); !errors.As(err, &te) || !te.NoSpace {
		t.Fatalf("4 EiB: err = %v", err)
	}
	long := ok
	long.Checked = &Summary{LongestName: PathMax - 5}
	if err := CheckTarget(long); !errors.As(err, &te) || te.NoSpace || !strings.Contains(te.Reason, "PATH_MAX") {
		t.Fatalf("long path: err = %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("CheckTarget wrote %v", entries)
	}
}

// TestCheckTarget_XattrProbeAgreesWithTheFilesystem: whatever this
// filesystem's limit, the probe refuses exactly the attribute sizes a real
// file refuses, and leaves nothing behind.
func TestCheckTarget_XattrProbeAgreesWithTheFilesystem(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(real, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{16, 3000, 8000, 65536} {
		name := "user.kubectl-assisted-test"
		realErr := unix.Setxattr(real, name, make([]byte, n), 0)
		_ = unix.Removexattr(real, name)
		sum := &Summary{MaxXattrBytes: int64(len(name) + n), LargestXattrs: [][2]int{{len(name), n}}}
		err := CheckTarget(Target{Dir: dir, Checked: sum})
		if errors.Is(realErr, unix.ENOTSUP) {
			if !errors.Is(err, ErrXattrUnsupported) {
				t.Fatalf("%d bytes: no user xattrs here, probe says %v", n, err)
			}
			if err := CheckTarget(Target{Dir: dir, Checked: sum, SkipUnsupportedXattrs: true}); err != nil {
				t.Fatalf("%d bytes, skipping unsupported: %v", n, err)
			}
			continue
		}
		if (realErr == nil) != (err == nil) {
			t.Fatalf("%d bytes: a real file says %v, the probe %v", n, realErr, err)
		}
		t.Logf("%d bytes: %v", n, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("the probe left %v", entries)
	}
}
