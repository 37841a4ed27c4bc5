package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCreate_KilledBeforePublishLeavesNoFile: at the moment of publication the
// data is whole in the temporary file and path does not exist; a process
// killed there (here: a panic) leaves no path.
func TestCreate_KilledBeforePublishLeavesNoFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "signing.key")
	func() {
		beforePublish = func(path string) {
			if _, err := os.Lstat(path); err == nil {
				t.Errorf("%s exists before its content is whole", path)
			}
			panic("killed")
		}
		defer func() {
			beforePublish = nil
			if r := recover(); r != "killed" {
				t.Fatalf("the write was not interrupted before publication: %v", r)
			}
		}()
		_ = Create(p, []byte("key"), 0o600)
	}()
	if _, err := os.Lstat(p); err == nil {
		t.Fatal("the file exists after a write killed before publication")
	}
}

// TestCreate_NeverOverwrites and TestWrite_Replaces; both leave the mode asked
// and no temporary file, and remove those a killed process left.
func TestCreate_NeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "signing.key")
	if err := os.WriteFile(filepath.Join(dir, ".signing.key.tmp-123"), []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Create(p, []byte("first"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Create(p, []byte("second"), 0o600); err == nil {
		t.Fatal("Create replaced an existing file")
	}
	if b, _ := os.ReadFile(p); string(b) != "first" {
		t.Fatalf("the file holds %q", b)
	}
	assertOnly(t, dir, "signing.key", 0o600)
}

func TestWrite_Replaces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "signing.pub")
	for _, data := range []string{"one", "two"} {
		if err := Write(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(p); string(b) != data {
			t.Fatalf("the file holds %q, want %q", b, data)
		}
	}
	assertOnly(t, dir, "signing.pub", 0o644)
}

func assertOnly(t *testing.T, dir, name string, mode os.FileMode) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != name || strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("left in the directory: %s", e.Name())
		}
	}
	fi, err := os.Stat(filepath.Join(dir, name))
	if err != nil || fi.Mode().Perm() != mode {
		t.Fatalf("%s: %v, mode %v; want %v", name, err, fi.Mode().Perm(), mode)
	}
}
