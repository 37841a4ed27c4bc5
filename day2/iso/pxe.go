package iso

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// PXEOptions says which PXE artifacts to write and how.
type PXEOptions struct {
	// Dir receives the files; Prefix names them (<prefix>.<arch>-vmlinuz ...).
	Dir    string
	Prefix string
	// Arch is the RPM architecture (x86_64, aarch64, ppc64le, s390x).
	Arch string
	// BaseURL, when set, is where the artifacts will be served: an iPXE script
	// that boots them is written too.
	BaseURL string
	// Checksum computes the sha256 of every file.
	Checksum bool
	Customization
}

// Artifact is one written file.
type Artifact struct {
	Kind   string `json:"kind"`
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256,omitempty"`
}

// PXEResult lists the artifacts and the kernel arguments they boot with.
type PXEResult struct {
	Artifacts []Artifact
	Kargs     string
}

// WritePXE extracts kernel, initrd and rootfs from the live ISO at isoPath; the
// initrd gets the Ignition config appended as one more compressed cpio archive
// (the kernel unpacks concatenated archives), and kernel arguments are the
// ISO's defaults without coreos.liveiso=, plus KargsAppend.
func WritePXE(isoPath string, o PXEOptions) (*PXEResult, error) {
	f, err := os.Open(isoPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	im, err := Open(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", isoPath, err)
	}
	kernelPath := "/images/pxeboot/vmlinuz"
	if o.Arch == "s390x" {
		if _, err := im.Lookup("/images/pxeboot/kernel.img"); err == nil {
			kernelPath = "/images/pxeboot/kernel.img"
		}
	}
	kernel, err := im.Lookup(kernelPath)
	if err != nil {
		return nil, err
	}
	initrd, err := im.Lookup("/images/pxeboot/initrd.img")
	if err != nil {
		return nil, err
	}
	rootfs, err := im.Lookup("/images/pxeboot/rootfs.img")
	if err != nil {
		return nil, err
	}
	mtime := o.MTime.Unix()
	if o.MTime.IsZero() {
		mtime = 0
	}
	archive, err := CompressCPIO([]Member{{Name: "config.ign", Mode: modeFile | 0o600, MTime: mtime, Data: o.Ignition}}, o.Compression)
	if err != nil {
		return nil, err
	}
	kargs, err := pxeKargs(im, f, o.KargsAppend)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	name := func(suffix string) string {
		return filepath.Join(o.Dir, fmt.Sprintf("%s.%s%s", o.Prefix, o.Arch, suffix))
	}
	res := &PXEResult{Kargs: kargs}
	var written []string
	fail := func(err error) (*PXEResult, error) {
		for _, p := range written {
			os.Remove(p)
		}
		return nil, err
	}
	kernelReader := io.Reader(io.NewSectionReader(f, kernel.Offset, kernel.Size))
	if o.Arch == "aarch64" {
		// iPXE and UEFI on arm64 boot an uncompressed kernel image.
		head := make([]byte, 2)
		if _, err := f.ReadAt(head, kernel.Offset); err == nil && bytes.Equal(head, gzipMagic) {
			zr, err := gzip.NewReader(io.NewSectionReader(f, kernel.Offset, kernel.Size))
			if err != nil {
				return fail(err)
			}
			kernelReader = zr
		}
	}
	steps := []struct {
		kind, path string
		src        io.Reader
	}{
		{"kernel", name("-vmlinuz"), kernelReader},
		{"initrd", name("-initrd.img"), io.MultiReader(io.NewSectionReader(f, initrd.Offset, initrd.Size), bytes.NewReader(make([]byte, align4(int(initrd.Size))-int(initrd.Size))), bytes.NewReader(archive))},
		{"rootfs", name("-rootfs.img"), io.NewSectionReader(f, rootfs.Offset, rootfs.Size)},
	}
	for _, s := range steps {
		a, err := writeArtifact(s.kind, s.path, s.src, o.Checksum)
		if err != nil {
			return fail(err)
		}
		written = append(written, s.path)
		res.Artifacts = append(res.Artifacts, *a)
	}
	if o.Arch == "s390x" {
		initrdSize := res.Artifacts[1].Size
		extra, err := s390xArtifacts(im, initrdSize, o.Prefix, o.Arch)
		if err != nil {
			return fail(err)
		}
		for _, x := range extra {
			a, err := writeArtifact(x.kind, name(x.suffix), bytes.NewReader(x.data), o.Checksum)
			if err != nil {
				return fail(err)
			}
			written = append(written, a.Path)
			res.Artifacts = append(res.Artifacts, *a)
		}
	}
	if o.BaseURL != "" {
		base := strings.TrimRight(o.BaseURL, "/")
		file := func(suffix string) string { return fmt.Sprintf("%s/%s.%s%s", base, o.Prefix, o.Arch, suffix) }
		script := fmt.Sprintf("#!ipxe\ninitrd --name initrd %s\nkernel %s initrd=initrd coreos.live.rootfs_url=%s %s\nboot\n",
			file("-initrd.img"), file("-vmlinuz"), file("-rootfs.img"), kargs)
		a, err := writeArtifact("ipxe", name(".ipxe"), strings.NewReader(script), o.Checksum)
		if err != nil {
			return fail(err)
		}
		res.Artifacts = append(res.Artifacts, *a)
	}
	return res, nil
}

type extraArtifact struct {
	kind, suffix string
	data         []byte
}

// s390xArtifacts are what an LPAR or z/VM boot needs beside kernel and initrd,
// as the installer's AgentPXEFiles.handleAdditionals390xArtifacts writes them
// (openshift/installer pkg/asset/agent/image/agentpxefiles.go):
//
//   - <prefix>.s390x-initrd.addrsize: the first 8 bytes of the ISO's
//     /images/initrd.addrsize (the initrd load address) followed by the size of
//     the written initrd (Ignition included) as a big-endian 64-bit integer
//     (assisted-image-service pkg/isoeditor/initrd_addrsize.go,
//     NewInitrdAddrsizeReaderFromStream);
//   - <prefix>.s390x-generic.ins: the ISO's /generic.ins with kernel.img,
//     initrd.img and initrd.addrsize renamed to the written files.
func s390xArtifacts(im *Image, initrdSize int64, prefix, arch string) ([]extraArtifact, error) {
	addr, err := im.ReadFile("/images/initrd.addrsize", 4096)
	if err != nil {
		return nil, fmt.Errorf("s390x PXE: the ISO has no /images/initrd.addrsize (%w): use an RHCOS s390x live ISO of the cluster's release", err)
	}
	if len(addr) < 8 {
		return nil, fmt.Errorf("s390x PXE: the ISO's /images/initrd.addrsize has %d bytes, want at least 8: use an RHCOS s390x live ISO of the cluster's release", len(addr))
	}
	ins, err := im.ReadFile("/generic.ins", 1<<20)
	if err != nil {
		return nil, fmt.Errorf("s390x PXE: the ISO has no /generic.ins (%w): use an RHCOS s390x live ISO of the cluster's release", err)
	}
	as := make([]byte, 16)
	copy(as, addr[:8])
	binary.BigEndian.PutUint64(as[8:], uint64(initrdSize))
	file := func(suffix string) string { return fmt.Sprintf("%s.%s-%s", prefix, arch, suffix) }
	rep := strings.NewReplacer("kernel.img", file("vmlinuz"), "initrd.img", file("initrd.img"), "initrd.addrsize", file("initrd.addrsize"))
	return []extraArtifact{
		{"initrd-addrsize", "-initrd.addrsize", as},
		{"generic-ins", "-generic.ins", []byte(rep.Replace(string(ins)))},
	}, nil
}

func pxeKargs(im *Image, r io.ReaderAt, add []string) (string, error) {
	k, err := KargsAreas(im)
	var base string
	switch {
	case err == nil:
		base = k.Default
		if base == "" {
			if base, err = k.Current(r); err != nil {
				return "", err
			}
		}
	case err == ErrNoKargsArea:
		// s390x 2023-03 images: no kargs area; boot with what Ignition needs.
		base = "ignition.firstboot ignition.platform.id=metal"
	default:
		return "", err
	}
	var keep []string
	for _, a := range strings.Fields(base) {
		if !strings.HasPrefix(a, "coreos.liveiso=") {
			keep = append(keep, a)
		}
	}
	return AppendArgs(strings.Join(keep, " "), add...), nil
}

func writeArtifact(kind, path string, src io.Reader, checksum bool) (*Artifact, error) {
	tmp := path + ".part"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	var h hash.Hash
	w := io.Writer(f)
	if checksum {
		h = sha256.New()
		w = io.MultiWriter(f, h)
	}
	n, err := io.Copy(w, src)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return nil, fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	a := &Artifact{Kind: kind, Path: path, Size: n}
	if h != nil {
		a.SHA256 = hex.EncodeToString(h.Sum(nil))
	}
	return a, nil
}

// FileSHA256 hashes a file.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
