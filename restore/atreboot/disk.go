package atreboot

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// ExistingAncestor is path, or its nearest ancestor that exists.
func ExistingAncestor(path string) (string, error) {
	p := filepath.Clean(path)
	for {
		_, err := os.Stat(p)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(p)
		if parent == p {
			return "", err
		}
		p = parent
	}
}
