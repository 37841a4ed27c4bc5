package files

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Fingerprint is a digest of what Write would read under root: every entry
// it would store, with its type, mode, size, modification and change times,
// inode, owner and link target. It reads no file content, so it is cheap; two
// equal fingerprints mean the tree was not modified in between (a change of
// content, mode, owner or xattr moves the change time on Linux), like the
// quick check of rsync or git. Bytes is the size of the regular files.
//
// A spool uses it to know that a files layer made earlier from the same tree
// is still what Write would produce now.
func Fingerprint(ctx context.Context, root string, exclude []string) (digest string, bytes int64, err error) {
	h := sha256.New()
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil // the root itself is not stored
		}
		rel = filepath.ToSlash(rel)
		if excluded(rel, exclude) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		st, _ := statOf(info)
		var target string
		if info.Mode()&fs.ModeSymlink != 0 {
			if target, err = os.Readlink(p); err != nil {
				return err
			}
		}
		if info.Mode().IsRegular() {
			bytes += info.Size()
		}
		fmt.Fprintf(h, "%q %o %d %d %d %d %d %d %d %d %q\n", rel, uint32(info.Mode()), info.Size(), info.ModTime().UnixNano(),
			st.ctime, st.dev, st.ino, st.nlink, st.uid, st.gid, target)
		return nil
	})
	if err != nil {
		return "", 0, err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), bytes, nil
}
