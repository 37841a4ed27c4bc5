package files

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Target is where a files layer is about to be extracted and what it must
// hold: CheckTarget compares them before the first write.
type Target struct {
	// Dir is the directory the entries land in; it may not exist yet (its
	// nearest existing ancestor is measured).
	Dir string
	// Declared is what the metadata says the layer holds.
	Declared Declared
	// ExtraBytes are written beside the layer on the same filesystem (the
	// database stream of `bundle extract`).
	ExtraBytes int64
	// Checked is what Check found in the layer: its longest path and its
	// largest set of extended attributes.
	Checked *Summary
	// SkipUnsupportedXattrs accepts a filesystem without user.* attributes
	// (the extraction will report what was lost).
	SkipUnsupportedXattrs bool
}

// TargetError is a target that cannot hold the layer: too little space or
// too few inodes, a path that would be too long, or extended attributes the
// filesystem refuses.
type TargetError struct {
	Dir    string
	Reason string
	// NoSpace is a lack of free space or inodes (the bundle is fine; the
	// target is too small), as opposed to content the target cannot hold.
	NoSpace bool
	Err     error
}

func (e *TargetError) Error() string {
	msg := fmt.Sprintf("%s cannot hold the files layer: %s", e.Dir, e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}
func (e *TargetError) Unwrap() error { return e.Err }

// CheckTarget checks, without writing anything visible, that the filesystem
// of t.Dir can take the layer: free space and inodes for the declared counts
// (each file and directory counted one block more than its bytes), every path
// within PATH_MAX once under Dir, and the largest set of extended attributes
// of one entry accepted by the filesystem (probed on an unnamed O_TMPFILE
// inode that vanishes when closed, where the kernel has them).
func CheckTarget(t Target) error {
	abs, err := filepath.Abs(t.Dir)
	if err != nil {
		return err
	}
	if t.Checked != nil && len(abs)+1+t.Checked.LongestName > PathMax {
		return &TargetError{Dir: abs, Reason: fmt.Sprintf("the layer's longest path (%d bytes) under this directory (%d bytes) is over PATH_MAX (%d)", t.Checked.LongestName, len(abs), PathMax)}
	}
	existing := abs
	for {
		fi, err := os.Stat(existing)
		if err == nil {
			if !fi.IsDir() {
				return &TargetError{Dir: abs, Reason: existing + " is not a directory"}
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return &TargetError{Dir: abs, Reason: "cannot be examined", Err: err}
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			return &TargetError{Dir: abs, Reason: "no ancestor exists"}
		}
		existing = parent
	}
	st, err := statFS(existing)
	if err != nil {
		return &TargetError{Dir: abs, Reason: "statfs", Err: err}
	}
	d := t.Declared
	inodes := uint64(d.Files + d.Dirs + d.Symlinks)
	need := uint64(d.Bytes) + uint64(t.ExtraBytes) + inodes*st.blockSize
	// A filesystem without a size (ramfs reports 0 blocks) has no limit to check.
	if st.totalBlocks > 0 && st.availBytes < need {
		return &TargetError{Dir: abs, NoSpace: true, Reason: fmt.Sprintf("%d bytes are free on its filesystem, the layer needs about %d (%d bytes in %d files and %d directories)", st.availBytes, need, d.Bytes+t.ExtraBytes, d.Files, d.Dirs)}
	}
	if st.totalInodes > 0 && st.freeInodes < inodes {
		return &TargetError{Dir: abs, NoSpace: true, Reason: fmt.Sprintf("%d inodes are free on its filesystem, the layer needs %d", st.freeInodes, inodes)}
	}
	if t.Checked != nil && len(t.Checked.LargestXattrs) > 0 {
		if err := probeXattrs(existing, t.Checked.LargestXattrs); err != nil {
			if errors.Is(err, ErrXattrUnsupported) && t.SkipUnsupportedXattrs {
				return nil
			}
			return &TargetError{Dir: abs, Reason: fmt.Sprintf("its filesystem refuses the layer's largest set of extended attributes (%d bytes on one entry)", t.Checked.MaxXattrBytes), Err: err}
		}
	}
	return nil
}

type fsStat struct {
	blockSize, availBytes   uint64
	totalBlocks             uint64
	totalInodes, freeInodes uint64
}
