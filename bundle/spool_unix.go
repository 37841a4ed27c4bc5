//go:build unix

package bundle

import (
	"os"

	"golang.org/x/sys/unix"
)

// lockFile opens path and takes an exclusive flock on it without waiting;
// the kernel drops it when the process ends, however it ends.
func lockFile(path string) (*os.File, bool) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, false
	}
	return f, true
}

func unlockFile(f *os.File) {
	_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
	f.Close()
}

// diskFree is the space left for an unprivileged user on dir's filesystem;
// false where it cannot be known.
func diskFree(dir string) (int64, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true //nolint:unconvert // field types differ by OS
}
