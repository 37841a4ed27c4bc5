package atreboot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/files"
	"github.com/kubectl-assisted/kubectl-assisted/restore/internal/atomicfile"
)

// CaptureMarker is written beside the captured copy once it is complete.
const captureMarkerSuffix = ".complete"

// CaptureInfo is the marker's content.
type CaptureInfo struct {
	From    string        `json:"from"`
	At      time.Time     `json:"at"`
	Summary files.Summary `json:"summary"`
}

// Capture copies the spec's data directory into its capture directory, as
// the bundle's files layer would carry it (modes, times, user.* xattrs,
// symlinks; the default and given excludes left out), through a staging
// directory renamed into place, then marks the copy complete.
func Capture(ctx context.Context, s *Spec) (*CaptureInfo, error) {
	if s.CaptureDir == "" || s.DataDir == "" {
		return nil, errors.New("nothing to capture: no data directory armed")
	}
	marker := s.CaptureDir + captureMarkerSuffix
	staging := s.CaptureDir + ".staging"
	for _, p := range []string{marker, staging, s.CaptureDir} {
		if err := os.RemoveAll(p); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(filepath.Dir(s.CaptureDir), 0o700); err != nil {
		return nil, err
	}
	// The service still runs: a file it writes while it is read is read
	// again (a few times), not copied torn.
	var sum *files.Summary
	var err error
	for try := 0; try < 3; try++ {
		if sum, err = copyTree(ctx, s, staging); !errors.Is(err, files.ErrChanged) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("copy %s: %w", s.DataDir, err)
	}
	if err := os.Rename(staging, s.CaptureDir); err != nil {
		return nil, err
	}
	info := &CaptureInfo{From: s.DataDir, At: time.Now().UTC(), Summary: *sum}
	data, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := atomicfile.Write(marker, append(data, '\n'), 0o600); err != nil {
		return nil, err
	}
	return info, nil
}

// copyTree streams the data directory through the files layer's writer into
// its extractor at staging (which it removes first).
func copyTree(ctx context.Context, s *Spec, staging string) (*files.Summary, error) {
	if err := os.RemoveAll(staging); err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	go func() {
		_, err := files.Write(ctx, pw, s.DataDir, files.WriteOptions{Exclude: append(append([]string{}, files.DefaultExcludes...), s.Exclude...)})
		pw.CloseWithError(err)
	}()
	sum, err := files.Extract(ctx, pr, staging, files.ExtractOptions{PreserveOwner: os.Geteuid() == 0,
		Rules: files.Rules{PreserveSpecialBits: true}})
	pr.CloseWithError(err)
	return sum, err
}

// RemoveCapture removes the copy of the files (it holds secrets in the
// clear: the kubeadmin password, kubeconfigs) once the bundle has them.
func RemoveCapture(s *Spec) error {
	if s.CaptureDir == "" {
		return nil
	}
	for _, p := range []string{s.CaptureDir + captureMarkerSuffix, s.CaptureDir, s.CaptureDir + ".staging"} {
		if err := os.RemoveAll(p); err != nil {
			return err
		}
	}
	return nil
}

// Captured returns the completed capture of s, or nil when there is none.
func Captured(s *Spec) *CaptureInfo {
	if s.CaptureDir == "" {
		return nil
	}
	data, err := os.ReadFile(s.CaptureDir + captureMarkerSuffix)
	if err != nil {
		return nil
	}
	var info CaptureInfo
	if json.Unmarshal(data, &info) != nil {
		return nil
	}
	if fi, err := os.Stat(s.CaptureDir); err != nil || !fi.IsDir() {
		return nil
	}
	return &info
}

// DataDirAtReboot is the directory the migration bundles at the reboot: the
// completed capture, else the data directory itself while it still exists,
// else "" (the files layer is left out, and the record says so).
func DataDirAtReboot(s *Spec) (dir, note string) {
	if info := Captured(s); info != nil {
		return s.CaptureDir, fmt.Sprintf("files: the copy of %s made before assisted-service stopped (%d files, %s)", s.DataDir, info.Summary.Files, files.HumanBytes(info.Summary.Bytes))
	}
	if s.DataDir == "" {
		return "", ""
	}
	if fi, err := os.Stat(s.DataDir); err == nil && fi.IsDir() {
		if s.CaptureDir != "" {
			return s.DataDir, fmt.Sprintf("files: no completed copy in %s; bundling %s as it is now", s.CaptureDir, s.DataDir)
		}
		return s.DataDir, ""
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return s.DataDir, ""
	}
	return "", fmt.Sprintf("files: %s is gone and no copy was made: the bundle has no files layer", s.DataDir)
}
