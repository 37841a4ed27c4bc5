package atreboot

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCapture_CopiesWhatTheBundleCarries: modes, times, user.* xattrs and
// symlinks survive; caches are left out; the copy is marked complete only
// once it is whole, and DataDirAtReboot then prefers it to the data
// directory, which may be gone.
func TestCapture_CopiesWhatTheBundleCarries(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	mtime := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	for p, content := range map[string]string{
		"c1/auth/kubeadmin-password": "pw", "c1/manifests/openshift/99-x.yaml": "kind: X\n",
		"installercache/openshift-install": "big", "c1/logs/m0.tar.gz": "logs",
	} {
		full := filepath.Join(data, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(full, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	manifest := filepath.Join(data, "c1/manifests/openshift/99-x.yaml")
	xattr := true
	if err := syscall.Setxattr(manifest, "user.assisted-installer-manifest-source", []byte("user"), 0); err != nil {
		xattr = false // a filesystem without user.* xattrs (tmpfs before 6.6)
	}
	if err := os.Symlink("auth/kubeadmin-password", filepath.Join(data, "c1/pw")); err != nil {
		t.Fatal(err)
	}
	s := testSpec(ModeAuto)
	s.DataDir, s.CaptureDir, s.Exclude = data, filepath.Join(dir, "spool", "at-reboot-data"), []string{"*/logs"}
	if got, _ := DataDirAtReboot(s); got != data {
		t.Fatalf("before the capture: %q", got)
	}
	info, err := Capture(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if info.Summary.Files != 2 {
		t.Fatalf("captured %d files, want 2 (cache and logs left out)", info.Summary.Files)
	}
	cp := filepath.Join(s.CaptureDir, "c1/manifests/openshift/99-x.yaml")
	fi, err := os.Stat(cp)
	if err != nil || fi.Mode().Perm() != 0o640 || !fi.ModTime().Equal(mtime) {
		t.Fatalf("copy: %v %v", fi, err)
	}
	if xattr {
		buf := make([]byte, 64)
		if n, err := syscall.Getxattr(cp, "user.assisted-installer-manifest-source", buf); err != nil || string(buf[:n]) != "user" {
			t.Fatalf("xattr: %q %v", buf[:max(n, 0)], err)
		}
	}
	if l, err := os.Readlink(filepath.Join(s.CaptureDir, "c1/pw")); err != nil || l != "auth/kubeadmin-password" {
		t.Fatalf("symlink %q %v", l, err)
	}
	for _, gone := range []string{"installercache", "c1/logs"} {
		if _, err := os.Stat(filepath.Join(s.CaptureDir, gone)); err == nil {
			t.Errorf("%s copied", gone)
		}
	}
	// podman removes the service's container, and its /data with it.
	if err := os.RemoveAll(data); err != nil {
		t.Fatal(err)
	}
	if got, note := DataDirAtReboot(s); got != s.CaptureDir || !strings.Contains(note, "2 files") {
		t.Fatalf("after the capture: %q (%s)", got, note)
	}
	// An unfinished copy (no marker) is not used.
	if err := os.Remove(s.CaptureDir + captureMarkerSuffix); err != nil {
		t.Fatal(err)
	}
	if got, note := DataDirAtReboot(s); got != "" || !strings.Contains(note, "no copy was made") {
		t.Fatalf("without the marker: %q (%s)", got, note)
	}
}
