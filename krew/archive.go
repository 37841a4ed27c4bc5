package main

import (
	"archive/tar"
	"archive/zip"
	"compress/flate"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// member is one file of a release archive.
type member struct {
	Name string      // path inside the archive
	Path string      // file on disk
	Mode os.FileMode // permission bits recorded in the archive
}

// writeArchive writes members into file as a .tar.gz or .zip (by file's name)
// and returns the archive's lowercase hex sha256. The bytes depend only on the
// members' names, modes and contents and on mtime: members are written in the
// order given, owners are 0 with no names, every time is mtime, and the gzip
// header carries no name or time. The file appears atomically (temp + rename).
func writeArchive(file string, members []member, mtime time.Time) (string, error) {
	tmp, err := os.CreateTemp(filepath.Dir(file), ".archive-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	h := sha256.New()
	w := io.MultiWriter(tmp, h)
	switch ext := archiveExt(file); ext {
	case ".tar.gz":
		err = writeTarGz(w, members, mtime)
	case ".zip":
		err = writeZip(w, members, mtime)
	default:
		err = fmt.Errorf("archive %s: unknown format %q", file, ext)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("write %s: %w", filepath.Base(file), err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func archiveExt(file string) string {
	if strings.HasSuffix(file, ".tar.gz") {
		return ".tar.gz"
	}
	return filepath.Ext(file)
}

func writeTarGz(w io.Writer, members []member, mtime time.Time) error {
	gz, err := gzip.NewWriterLevel(w, gzip.DefaultCompression)
	if err != nil {
		return err
	}
	// gzip.Header's zero value: no name, no comment, MTIME 0, OS "unknown".
	tw := tar.NewWriter(gz)
	for _, m := range members {
		if err := addTar(tw, m, mtime); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func addTar(tw *tar.Writer, m member, mtime time.Time) error {
	f, err := os.Open(m.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     m.Name,
		Mode:     int64(m.Mode.Perm()),
		Size:     fi.Size(),
		ModTime:  mtime,
		Format:   tar.FormatUSTAR,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("%s: %w", m.Name, err)
	}
	if _, err := io.Copy(tw, f); err != nil {
		return fmt.Errorf("%s: %w", m.Name, err)
	}
	return nil
}

func writeZip(w io.Writer, members []member, mtime time.Time) error {
	zw := zip.NewWriter(w)
	zw.RegisterCompressor(zip.Deflate, func(out io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(out, flate.DefaultCompression)
	})
	for _, m := range members {
		if err := addZip(zw, m, mtime); err != nil {
			return err
		}
	}
	return zw.Close()
}

func addZip(zw *zip.Writer, m member, mtime time.Time) error {
	f, err := os.Open(m.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	hdr := &zip.FileHeader{Name: m.Name, Method: zip.Deflate, Modified: mtime}
	hdr.SetMode(m.Mode.Perm())
	dst, err := zw.CreateHeader(hdr)
	if err != nil {
		return fmt.Errorf("%s: %w", m.Name, err)
	}
	if _, err := io.Copy(dst, f); err != nil {
		return fmt.Errorf("%s: %w", m.Name, err)
	}
	return nil
}
