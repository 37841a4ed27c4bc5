package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// These helpers read node ISOs back with tools that share no code with the
// plugin: xorriso (ISO9660), xz/gzip and cpio (the embedded archive), and the
// Go build of ignition-validate.

func requireISOTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"xorriso", "xz", "gzip", "cpio"} {
		if _, err := exec.LookPath(tool); err != nil {
			harness.Unavailable(t, tool+" (test/tools/install.sh installs it)", err)
		}
	}
}

// fixtureISO is a live ISO with the layout of a coreos-installer fixture: the
// real one from ../shared when present, else a synthetic one built with xorriso.
func fixtureISO(t *testing.T, name string) string {
	t.Helper()
	return harness.LiveISO(t, name)
}

// isoExtract extracts one file of an ISO with xorriso; ok is false when absent.
func isoExtract(t *testing.T, isoPath, file string) ([]byte, bool) {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "x")
	cmd := exec.Command("xorriso", "-osirrox", "on", "-indev", isoPath, "-extract", "/"+strings.TrimPrefix(file, "/"), dst)
	out, err := cmd.CombinedOutput()
	b, rerr := os.ReadFile(dst)
	if err != nil || rerr != nil {
		if strings.Contains(string(out), "Cannot find") || strings.Contains(string(out), "not found") || rerr != nil {
			return nil, false
		}
		t.Fatalf("xorriso extract %s: %v\n%s", file, err, out)
	}
	return b, true
}

// embeddedIgnition returns config.ign from an ISO's embed area, the other
// member names, and the compression seen.
func embeddedIgnition(t *testing.T, isoPath string) (cfg []byte, members []string, compression string) {
	t.Helper()
	file, off, length := "images/ignition.img", int64(0), int64(-1)
	if raw, ok := isoExtract(t, isoPath, "coreos/igninfo.json"); ok {
		var info struct {
			File   string `json:"file"`
			Offset int64  `json:"offset"`
			Length *int64 `json:"length"`
		}
		if err := json.Unmarshal(raw, &info); err != nil {
			t.Fatal(err)
		}
		file, off = info.File, info.Offset
		if info.Length != nil {
			length = *info.Length
		}
	}
	img, ok := isoExtract(t, isoPath, file)
	if !ok {
		t.Fatalf("%s: no %s", isoPath, file)
	}
	area := img[off:]
	if length >= 0 {
		area = area[:length]
	}
	return unpackArchive(t, area)
}

// unpackArchive decompresses one xz or gzip cpio archive (with zero padding
// after it) with the system tools and unpacks it with cpio.
func unpackArchive(t *testing.T, data []byte) ([]byte, []string, string) {
	t.Helper()
	var tool, compression string
	switch {
	case bytes.HasPrefix(data, []byte{0xfd, '7', 'z', 'X', 'Z', 0}):
		tool, compression = "xz", "xz"
	case bytes.HasPrefix(data, []byte{0x1f, 0x8b}):
		tool, compression = "gzip", "gzip"
	default:
		t.Fatalf("embed area starts with % x: neither xz nor gzip", data[:8])
	}
	dec := exec.Command(tool, "-dc")
	dec.Stdin = bytes.NewReader(data)
	var stderr bytes.Buffer
	dec.Stderr = &stderr
	raw, err := dec.Output()
	if err != nil {
		// gzip exits 2 on the zero padding after the member ("trailing garbage
		// ignored"), having decompressed it.
		if ee, ok := err.(*exec.ExitError); !(ok && ee.ExitCode() == 2 && tool == "gzip") {
			t.Fatalf("%s -dc: %v\n%s", tool, err, stderr.String())
		}
	}
	dir := t.TempDir()
	cp := exec.Command("cpio", "-idm", "--quiet", "--no-absolute-filenames")
	cp.Dir = dir
	cp.Stdin = bytes.NewReader(raw)
	if out, err := cp.CombinedOutput(); err != nil {
		t.Fatalf("cpio -id: %v\n%s", err, out)
	}
	var names []string
	_ = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			names = append(names, rel)
		}
		return nil
	})
	st, err := os.Stat(filepath.Join(dir, "config.ign"))
	if err != nil {
		t.Fatalf("archive has no config.ign (members %v)", names)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("config.ign mode %v, want 0600", st.Mode().Perm())
	}
	cfg, _ := os.ReadFile(filepath.Join(dir, "config.ign"))
	if tool == "xz" {
		// coreos-installer writes CRC32 ("the kernel requires CRC32"); xz -lvv says which.
		f := filepath.Join(t.TempDir(), "a.xz")
		end := len(data)
		for end > 0 && data[end-1] == 0 {
			end--
		}
		_ = os.WriteFile(f, data[:align4(end)], 0o644)
		out, err := exec.Command("xz", "--robot", "-lvv", f).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "CRC32") {
			t.Fatalf("xz check is not CRC32: %v\n%s", err, out)
		}
	}
	return cfg, names, compression
}

func align4(n int) int { return (n + 3) &^ 3 }

// validateIgnition runs the real ignition-validate on cfg.
func validateIgnition(t *testing.T, cfg []byte) {
	t.Helper()
	bin := harness.RequireTool(t, "ignition-validate")
	f := filepath.Join(t.TempDir(), "config.ign")
	if err := os.WriteFile(f, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, f).CombinedOutput(); err != nil {
		t.Fatalf("ignition-validate: %v\n%s", err, out)
	}
}

// ign is the part of an Ignition config the tests inspect.
type ign struct {
	Ignition struct{ Version string } `json:"ignition"`
	Passwd   struct {
		Users []struct {
			Name              string   `json:"name"`
			SSHAuthorizedKeys []string `json:"sshAuthorizedKeys"`
		} `json:"users"`
	} `json:"passwd"`
	Storage struct {
		Files []struct {
			Path     string `json:"path"`
			Mode     int    `json:"mode"`
			Contents struct {
				Source string `json:"source"`
			} `json:"contents"`
		} `json:"files"`
	} `json:"storage"`
	Systemd struct {
		Units []struct {
			Name     string `json:"name"`
			Enabled  *bool  `json:"enabled"`
			Contents string `json:"contents"`
		} `json:"units"`
	} `json:"systemd"`
}

func parseIgn(t *testing.T, raw []byte) *ign {
	t.Helper()
	var c ign
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatalf("config.ign is not JSON: %v", err)
	}
	return &c
}

// file returns a file's decoded content; ok is false when absent.
func (c *ign) file(t *testing.T, path string) (string, bool) {
	t.Helper()
	for _, f := range c.Storage.Files {
		if f.Path != path {
			continue
		}
		meta, data, ok := strings.Cut(strings.TrimPrefix(f.Contents.Source, "data:"), ",")
		if !ok {
			t.Fatalf("%s: source is not a data URL", path)
		}
		if strings.HasSuffix(meta, ";base64") {
			b, err := base64.StdEncoding.DecodeString(data)
			if err != nil {
				t.Fatal(err)
			}
			return string(b), true
		}
		s, _ := url.PathUnescape(data)
		return s, true
	}
	return "", false
}

func (c *ign) mustFile(t *testing.T, path string) string {
	t.Helper()
	s, ok := c.file(t, path)
	if !ok {
		t.Fatalf("ignition has no file %s", path)
	}
	return s
}

func (c *ign) mode(path string) int {
	for _, f := range c.Storage.Files {
		if f.Path == path {
			return f.Mode
		}
	}
	return -1
}

// env parses KEY=value lines.
func env(s string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			m[k] = v
		}
	}
	return m
}

// kargRegions reads every kernel-argument region of an ISO independently:
// the files kargs.json names (at their offsets), or, for legacy ISOs, the
// config files themselves.
func kargRegions(t *testing.T, isoPath string) []string {
	t.Helper()
	raw, ok := isoExtract(t, isoPath, "coreos/kargs.json")
	if !ok {
		var out []string
		for _, f := range []string{"EFI/redhat/grub.cfg", "EFI/fedora/grub.cfg", "isolinux/isolinux.cfg"} {
			if b, ok := isoExtract(t, isoPath, f); ok {
				out = append(out, string(b))
			}
		}
		return out
	}
	var kj struct {
		Files []struct {
			Path   string `json:"path"`
			Offset int    `json:"offset"`
		} `json:"files"`
		Size int `json:"size"`
	}
	if err := json.Unmarshal(raw, &kj); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range kj.Files {
		b, ok := isoExtract(t, isoPath, f.Path)
		if !ok {
			t.Fatalf("kargs.json names %s, which xorriso cannot find", f.Path)
		}
		out = append(out, string(b[f.Offset:f.Offset+kj.Size]))
	}
	return out
}
