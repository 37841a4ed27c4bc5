// Package atomicfile writes small files whole or not at all: the data goes to
// a temporary file beside the target, synced, which is then published at the
// target's path. A process killed midway leaves no target (at most a
// temporary file, which the next write of the same target removes).
package atomicfile

import (
	"io/fs"
	"os"
	"path/filepath"
)

// Write writes data to path with mode, replacing what path held.
func Write(path string, data []byte, mode fs.FileMode) error {
	return write(path, data, mode, os.Rename)
}

// Create writes data to path with mode and never replaces: it fails when
// path exists (the temporary file is linked at path).
func Create(path string, data []byte, mode fs.FileMode) error {
	return write(path, data, mode, os.Link)
}

// beforePublish, when set (tests), runs once the temporary file is whole,
// before it is published at path.
var beforePublish func(path string)

func write(path string, data []byte, mode fs.FileMode, publish func(tmp, path string) error) error {
	dir, pattern := filepath.Dir(path), "."+filepath.Base(path)+".tmp-*"
	stale, _ := filepath.Glob(filepath.Join(dir, pattern))
	for _, n := range stale {
		_ = os.Remove(n) // what a killed process left
	}
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	err = f.Chmod(mode)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if beforePublish != nil {
		beforePublish(path)
	}
	return publish(f.Name(), path)
}
