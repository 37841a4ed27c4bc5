//go:build unix

package atreboot

import "syscall"

// FreeSpace is the space an unprivileged writer can use on the filesystem
// that holds path, or would hold it (its nearest existing ancestor).
func FreeSpace(path string) (int64, error) {
	p, err := ExistingAncestor(path)
	if err != nil {
		return 0, err
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(p, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// Writable reports whether this process could create path: it exists and is
// writable, or its nearest existing ancestor is a writable directory.
func Writable(path string) error {
	p, err := ExistingAncestor(path)
	if err != nil {
		return err
	}
	return syscall.Access(p, 2 /* W_OK */)
}
