package e2e

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// assertExtracted compares an extracted files tree with the source data dir.
func assertExtracted(t *testing.T, src, got string) {
	t.Helper()
	pw := filepath.Join(bundleClusterID, "kubeadmin-password")
	want, _ := os.ReadFile(filepath.Join(src, pw))
	b, err := os.ReadFile(filepath.Join(got, pw))
	if err != nil || string(b) != string(want) {
		t.Fatalf("kubeadmin-password = %q, %v", b, err)
	}
	fi, err := os.Stat(filepath.Join(got, pw))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("kubeadmin-password mode: %v %v", fi, err)
	}
	sfi, _ := os.Stat(filepath.Join(src, pw))
	if !fi.ModTime().Equal(sfi.ModTime()) {
		t.Fatalf("mtime %v, want %v", fi.ModTime(), sfi.ModTime())
	}
	buf := make([]byte, 32)
	n, err := unix.Getxattr(filepath.Join(got, bundleClusterID, "manifests/openshift/50-user.yaml"), "user.assisted-installer-manifest-source", buf)
	if err != nil || string(buf[:n]) != "user" {
		t.Fatalf("manifest source xattr = %q, %v", buf[:n], err)
	}
	if l, err := os.Readlink(filepath.Join(got, bundleClusterID, "latest.yaml")); err != nil || l != "manifests/openshift/50-user.yaml" {
		t.Fatalf("symlink = %q, %v", l, err)
	}
	if _, err := os.Stat(filepath.Join(got, "installercache")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("installercache was bundled (%v)", err)
	}
}
