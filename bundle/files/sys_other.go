//go:build !linux

package files

import (
	"archive/tar"
	"errors"
	"io/fs"
)

// The bundle's files layer is written on node 0 and restored on cluster 0, both
// Linux. Elsewhere (a workstation inspecting or extracting a bundle) ownership
// and hard links are not read, and user.* attributes are neither read nor
// written: extraction reports them as unsupported.

const oNoFollow = 0

var errNoXattr = errors.New("no such attribute")

type statInfo struct {
	uid, gid int
	dev, ino uint64
	nlink    uint64
	ctime    int64
}

func statOf(fs.FileInfo) (statInfo, bool) { return statInfo{}, false }

func listXattrs(string) ([]string, error) { return nil, nil }

func getXattr(string, string) ([]byte, error) { return nil, errNoXattr }

func setXattrs(_ int, hdr *tar.Header) error {
	if hasXattrs(hdr) {
		return ErrXattrUnsupported
	}
	return nil
}

func statFS(string) (fsStat, error) { return fsStat{}, nil }

func probeXattrs(string, [][2]int) error { return ErrXattrUnsupported }
