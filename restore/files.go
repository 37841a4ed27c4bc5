package restore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/files"
	"github.com/kubectl-assisted/kubectl-assisted/restore/journal"
)

// StagingDirName is the directory inside the data directory where the files
// layer is extracted before its entries are renamed into place. It lives
// inside, not beside, the data directory because that is usually the mount
// point of the assisted-service PVC: a sibling would be on another
// filesystem, where a rename cannot reach.
const StagingDirName = ".kubectl-assisted-staging"

// ReplacedDirName holds, during the swap of a --replace, the entries the
// staged ones replace; it is removed once the new ones are in place.
const ReplacedDirName = ".kubectl-assisted-replaced"

// ignoredEntries are never restored content: the staging directories and the
// lost+found of a freshly formatted volume.
func ignoredEntry(name string) bool {
	return name == StagingDirName || name == ReplacedDirName || name == "lost+found"
}

// contentOf lists the data directory's entries that count as content.
func contentOf(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if !ignoredEntry(e.Name()) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// checkDataDir refuses a data directory with content, unless replacing it or
// resuming a run that wrote it.
func (r *runner) checkDataDir() error {
	names, err := contentOf(r.o.DataDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		r.check("data directory " + r.o.DataDir + " does not exist yet; it will be created")
	case err != nil:
		return fmt.Errorf("data directory: %w", err)
	case len(names) == 0:
		r.check("data directory " + r.o.DataDir + " is empty")
	case r.o.Replace:
		r.check("data directory " + r.o.DataDir + " is not empty; its content will be replaced")
	case r.filesResume:
		r.check("data directory " + r.o.DataDir + " holds what an earlier run of this bundle wrote; it is written again")
	default:
		e := &DataDirNotEmptyError{Dir: r.o.DataDir, Entries: names}
		if len(names) > 5 {
			e.Entries, e.More = names[:5], len(names)-5
		}
		return e
	}
	return r.checkDataDirFits()
}

// checkDataDirFits checks, before any write, that the data directory's
// filesystem can take the files layer: space and inodes for what the
// metadata declares, the longest path under the staging directory, and the
// largest extended attributes (probed without a visible write).
func (r *runner) checkDataDirFits() error {
	if _, ok := r.b.Layer(bundle.LayerFiles); !ok {
		return nil
	}
	t := files.Target{Dir: filepath.Join(r.o.DataDir, StagingDirName), Checked: r.b.FilesChecked, SkipUnsupportedXattrs: true}
	if m := r.b.Metadata.Files; m != nil {
		t.Declared = files.Declared{Files: m.Files, Dirs: m.Dirs, Symlinks: m.Symlinks, HardLinks: m.HardLinks, Bytes: m.Bytes}
	}
	if err := files.CheckTarget(t); err != nil {
		return fmt.Errorf("%w; nothing was changed", err)
	}
	r.check(fmt.Sprintf("data directory %s has room for %d file(s) of %d bytes, their longest path and extended attributes", r.o.DataDir, t.Declared.Files, t.Declared.Bytes))
	return nil
}

// stageFiles extracts the files layer into the staging directory (verified
// to its last byte, or nothing is kept). It runs before the database phase,
// so that the database is never replaced by a bundle whose files cannot be
// written: the old rows and files stay until the new files are staged.
func (r *runner) stageFiles(ctx context.Context) error {
	dir := r.o.DataDir
	_, statErr := os.Stat(dir)
	created := errors.Is(statErr, fs.ErrNotExist)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("create the data directory: %w", err)
	}
	staging := filepath.Join(dir, StagingDirName)
	for _, d := range []string{staging, filepath.Join(dir, ReplacedDirName)} {
		if err := os.RemoveAll(d); err != nil {
			return fmt.Errorf("remove an earlier staging directory: %w", err)
		}
	}
	sum, err := r.b.ExtractFiles(ctx, staging, files.ExtractOptions{SkipUnsupportedXattrs: true, Rules: files.Rules{PreserveSpecialBits: r.o.PreserveSpecialBits}})
	if err != nil {
		if created {
			_ = os.Remove(dir) // only if still empty
		}
		return fmt.Errorf("stage the files layer: %w; nothing was changed", err)
	}
	r.staged, r.createdDataDir = sum, created
	return nil
}

// dropStaged removes what stageFiles wrote, when a later step fails before
// the files phase.
func (r *runner) dropStaged() {
	if r.staged != nil {
		_ = os.RemoveAll(filepath.Join(r.o.DataDir, StagingDirName))
		if r.createdDataDir {
			_ = os.Remove(r.o.DataDir) // only if still empty
		}
		r.staged = nil
	}
}

// restoreFiles extracts the files layer into the staging directory (verified
// to its last byte, or nothing is kept), then replaces the data directory's
// content with the staged entries, one rename each. A run killed at any point
// is redone from the start: the staging directory is emptied first, and the
// content is replaced again.
func (r *runner) restoreFiles(ctx context.Context) (journal.Counts, error) {
	dir := r.o.DataDir
	if r.staged == nil { // a resumed run whose database phase was done
		if err := r.stageFiles(ctx); err != nil {
			return nil, err
		}
	}
	sum := r.staged
	staging := filepath.Join(dir, StagingDirName)
	if err := swapIn(dir, staging); err != nil {
		return nil, err
	}
	r.staged = nil
	r.res.Files = sum
	if n := len(sum.XattrsLost); n > 0 {
		shown := sum.XattrsLost
		if n > 10 {
			shown = shown[:10]
		}
		more := ""
		if n > 10 {
			more = fmt.Sprintf(" and %d more", n-10)
		}
		r.warn("the filesystem of %s does not support user.* extended attributes: %d file(s) lost their origin mark (user.assisted-installer-manifest-source), so assisted-service treats those manifests as system-generated: %s%s",
			dir, n, strings.Join(shown, ", "), more)
	}
	return journal.Counts{"files": sum.Files, "dirs": sum.Dirs, "symlinks": sum.Symlinks, "bytes": sum.Bytes,
		"xattrs": sum.Xattrs, "xattrsLost": int64(len(sum.XattrsLost))}, nil
}

// swapIn moves the data directory's content aside, the staged entries into
// place, then deletes what was moved aside; when a move into place fails,
// the old entries are moved back. Every step is a rename on one filesystem.
func swapIn(dir, staging string) error {
	old, err := contentOf(dir)
	if err != nil {
		return err
	}
	replaced := filepath.Join(dir, ReplacedDirName)
	if len(old) > 0 {
		if err := os.Mkdir(replaced, 0o700); err != nil {
			return fmt.Errorf("set the old content aside: %w", err)
		}
	}
	var moved []string
	undo := func() {
		for _, name := range moved {
			_ = os.RemoveAll(filepath.Join(dir, name))
		}
		for _, name := range old {
			_ = os.Rename(filepath.Join(replaced, name), filepath.Join(dir, name))
		}
		_ = os.Remove(replaced)
	}
	for i, name := range old {
		if err := os.Rename(filepath.Join(dir, name), filepath.Join(replaced, name)); err != nil {
			old = old[:i]
			undo()
			return fmt.Errorf("set %s aside: %w", name, err)
		}
	}
	staged, err := os.ReadDir(staging)
	if err != nil {
		undo()
		return err
	}
	for _, e := range staged {
		if err := os.Rename(filepath.Join(staging, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			undo()
			return fmt.Errorf("move %s into place: %w", e.Name(), err)
		}
		moved = append(moved, e.Name())
	}
	if err := os.Remove(staging); err != nil {
		return fmt.Errorf("remove the staging directory: %w", err)
	}
	if err := os.RemoveAll(replaced); err != nil {
		return fmt.Errorf("remove the replaced content: %w", err)
	}
	return syncDir(dir)
}

// verifyFiles re-checks a files phase recorded as done: no staging left and,
// when the bundle had files, content in place.
func (r *runner) verifyFiles(context.Context) error {
	if _, err := os.Stat(filepath.Join(r.o.DataDir, StagingDirName)); err == nil {
		return errors.New("a staging directory is left in the data directory")
	}
	names, err := contentOf(r.o.DataDir)
	if err != nil {
		return err
	}
	if m := r.b.Metadata.Files; m != nil && m.Files+m.Dirs > 0 && len(names) == 0 {
		return errors.New("the data directory is empty")
	}
	return nil
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
