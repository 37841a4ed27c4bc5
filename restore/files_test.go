package restore

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestSwapIn(t *testing.T) {
	dir := t.TempDir()
	staging := filepath.Join(dir, StagingDirName)
	for _, p := range []string{"old/a", "keep-name/old", "lost+found/x"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(dir, p), []byte("old"), 0o644)
	}
	for _, p := range []string{"new/b", "keep-name/new"} {
		os.MkdirAll(filepath.Join(staging, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(staging, p), []byte("new"), 0o644)
	}
	if err := swapIn(dir, staging); err != nil {
		t.Fatal(err)
	}
	var got []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			got = append(got, rel)
		}
		return nil
	})
	want := []string{"keep-name/new", "lost+found/x", "new/b"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after the swap: %v, want %v", got, want)
	}
}
