package files

import (
	"archive/tar"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// oNoFollow makes opening a symlink fail instead of following it.
const oNoFollow = unix.O_NOFOLLOW

// errNoXattr is the error of reading an attribute that is not (or no longer) set.
var errNoXattr = unix.ENODATA

type statInfo struct {
	uid, gid int
	dev, ino uint64
	nlink    uint64
	ctime    int64 // ns; changes with content, mode, owner and xattrs
}

func statOf(info fs.FileInfo) (statInfo, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return statInfo{}, false
	}
	return statInfo{uid: int(st.Uid), gid: int(st.Gid), dev: uint64(st.Dev), ino: st.Ino, nlink: uint64(st.Nlink), ctime: st.Ctim.Nano()}, true
}

func listXattrs(p string) ([]string, error) {
	for size := 256; ; size *= 4 {
		buf := make([]byte, size)
		n, err := unix.Llistxattr(p, buf)
		if errors.Is(err, unix.ERANGE) && size < 1<<20 {
			continue
		}
		if errors.Is(err, unix.ENOTSUP) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		var names []string
		for _, name := range strings.Split(string(buf[:n]), "\x00") {
			if name != "" {
				names = append(names, name)
			}
		}
		sort.Strings(names)
		return names, nil
	}
}

func getXattr(p, name string) ([]byte, error) {
	for size := 256; ; size *= 4 {
		buf := make([]byte, size)
		n, err := unix.Lgetxattr(p, name, buf)
		if errors.Is(err, unix.ERANGE) && size < 1<<20 {
			continue
		}
		if err != nil {
			return nil, err
		}
		return buf[:n], nil
	}
}

func setXattrs(fd int, hdr *tar.Header) error {
	for k, v := range hdr.PAXRecords {
		name, ok := strings.CutPrefix(k, paxXattrPrefix)
		if !ok {
			continue
		}
		if err := unix.Fsetxattr(fd, name, []byte(v), 0); err != nil {
			if errors.Is(err, unix.ENOTSUP) {
				return ErrXattrUnsupported
			}
			return fmt.Errorf("set extended attribute %s: %w", name, err)
		}
	}
	return nil
}

func statFS(dir string) (fsStat, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fsStat{}, err
	}
	bs := uint64(st.Bsize)
	return fsStat{blockSize: bs, availBytes: st.Bavail * bs, totalBlocks: st.Blocks, totalInodes: st.Files, freeInodes: st.Ffree}, nil
}

// probeXattrs sets attributes of the given (name, value) lengths on an
// unnamed temporary inode in dir: nothing appears in dir, and the inode is
// freed on close. Without O_TMPFILE support the probe is skipped (the
// extraction then finds out, into its staging directory).
func probeXattrs(dir string, sizes [][2]int) error {
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EINVAL) {
			return nil
		}
		return err
	}
	defer unix.Close(fd)
	for i, s := range sizes {
		prefix := fmt.Sprintf("%s%d.", xattrPrefix, i)
		name := prefix + strings.Repeat("p", max(s[0]-len(prefix), 0))
		if err := unix.Fsetxattr(fd, name, make([]byte, s[1]), 0); err != nil {
			if errors.Is(err, unix.ENOTSUP) {
				return ErrXattrUnsupported
			}
			return fmt.Errorf("set a %d-byte extended attribute: %w", s[1], err)
		}
	}
	return nil
}
