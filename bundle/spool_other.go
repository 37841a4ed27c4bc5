//go:build !unix

package bundle

import "os"

// Elsewhere a spool entry is locked by creating its lock file exclusively; a
// lock file left by a killed run is pruned with the entry.
func lockFile(path string) (*os.File, bool) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, false
	}
	return f, true
}

func unlockFile(f *os.File) {
	name := f.Name()
	f.Close()
	_ = os.Remove(name)
}

func diskFree(string) (int64, bool) { return 0, false }
