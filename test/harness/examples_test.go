package harness

import (
	"path/filepath"
	"sort"
	"testing"
)

// The own examples cover every file the upstream examples have, and each one
// decodes into objects with a kind and a name.
func TestOwnExamples_CoverSharedOnesAndDecode(t *testing.T) {
	own, _ := filepath.Glob(filepath.Join(RepoRoot(), "test", "harness", "examples", "*.yaml"))
	have := map[string]bool{}
	for _, f := range own {
		have[filepath.Base(f)] = true
		objs, err := ReadObjects(f)
		if err != nil || len(objs) == 0 {
			t.Fatalf("%s: %d objects, %v", f, len(objs), err)
		}
		for _, o := range objs {
			if o.GetKind() == "" || o.GetName() == "" {
				t.Fatalf("%s: object without kind or name", f)
			}
		}
	}
	shared, _ := filepath.Glob(filepath.Join(SharedDir(), "fixtures", "crs", "*.yaml"))
	var missing []string
	for _, f := range shared {
		if !have[filepath.Base(f)] {
			missing = append(missing, filepath.Base(f))
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("own examples lack %v", missing)
	}
	if len(own) < 16 {
		t.Fatalf("only %d own examples", len(own))
	}
}
