// Package isofixture builds small synthetic CoreOS live ISOs for tests, with
// xorriso, in every embed-area layout the day-2 code supports. Nothing here is
// used by the plugin itself; tests of both modules build their fixtures with it
// so they need nothing outside the repository.
//
// The layouts follow coreos-installer (github.com/coreos/coreos-installer,
// src/live/embed.rs and docs/development/iso-embed-ignition.md, main) and the
// fixture index of its fixtures/iso directory:
//
//   - the Ignition embed area is a file (images/ignition.img) filled with
//     zeros, or a range of one that /coreos/igninfo.json names
//     ({"file", "offset", "length"}; s390x points into images/cdboot.img);
//     the oldest images only carry a 24-byte "coreiso+" header at the end of
//     the 32 KiB system area (magic, offset and length, little-endian u64);
//   - the kernel-argument areas are ranges inside the boot configs (grub.cfg,
//     isolinux.cfg), each holding the arguments, an end byte ('\n') and pad
//     bytes ('#') up to a fixed size; /coreos/kargs.json lists them
//     ({"default", "files": [{"path", "offset", "pad", "end"}], "size"}); the
//     oldest images instead carry a 72-byte "coreKarg" header just before the
//     coreiso+ one (magic, size, offset of the default arguments, up to six
//     region offsets).
package isofixture

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// GenericIns is the generic.ins of the s390x layouts (the one of
// coreos-installer's s390x fixtures).
const GenericIns = "* minimal lpar ins file\nimages/kernel.img 0x00000000\nimages/initrd.img 0x02000000\nimages/genericdvd.prm 0x00010480\nimages/initrd.addrsize 0x00010408\n"

// Layout is one way a live ISO describes its embed areas.
type Layout string

const (
	// LegacyIgnitionHeader: only the coreiso+ system-area header (2020-09 images).
	LegacyIgnitionHeader Layout = "legacy-ignition-header"
	// LegacyHeaders: coreiso+ and coreKarg headers (2021-01 images).
	LegacyHeaders Layout = "legacy-headers"
	// LegacyHeaderOnly: the coreiso+ header points at an area in a file not
	// named images/ignition.img, so only the header can find it (exercises
	// the header path; both real legacy layouts also have images/ignition.img).
	LegacyHeaderOnly Layout = "legacy-header-only"
	// IgnitionImgKargsJSON: images/ignition.img and kargs.json (2021-09 to 2022-09).
	IgnitionImgKargsJSON Layout = "ignition-img-kargs-json"
	// IgnInfoKargsJSON: igninfo.json naming images/ignition.img, kargs.json (2023-03 x86_64).
	IgnInfoKargsJSON Layout = "igninfo-kargs-json"
	// IgnInfoKargsJSONPadEnd: as IgnInfoKargsJSON with pad and end in kargs.json (2023-07 x86_64).
	IgnInfoKargsJSONPadEnd Layout = "igninfo-kargs-json-pad-end"
	// S390xCdboot: igninfo.json naming a range of images/cdboot.img, no kargs (2023-03 s390x).
	S390xCdboot Layout = "s390x-cdboot"
	// S390xCdbootKargs: as S390xCdboot with kargs.json (2023-07 s390x).
	S390xCdbootKargs Layout = "s390x-cdboot-kargs"
	// NotLive: an ISO9660 image without any embed area.
	NotLive Layout = "not-live"
)

// Layouts are all live layouts (NotLive excluded).
var Layouts = []Layout{LegacyIgnitionHeader, LegacyHeaders, LegacyHeaderOnly, IgnitionImgKargsJSON, IgnInfoKargsJSON,
	IgnInfoKargsJSONPadEnd, S390xCdboot, S390xCdbootKargs}

// ForFixtureName maps a coreos-installer fixture file name (as in
// ../shared/fixtures/iso, with or without .xz) to the layout it has.
func ForFixtureName(name string) (Layout, bool) {
	name = strings.TrimSuffix(name, ".xz")
	switch name {
	case "embed-areas-2020-09.iso":
		return LegacyIgnitionHeader, true
	case "embed-areas-2021-01.iso":
		return LegacyHeaders, true
	case "embed-areas-2021-09.iso", "embed-areas-2021-12.iso", "embed-areas-2022-02.iso", "embed-areas-2022-09.iso":
		return IgnitionImgKargsJSON, true
	case "embed-areas-2023-03.x86_64.iso":
		return IgnInfoKargsJSON, true
	case "embed-areas-2023-07.x86_64.iso":
		return IgnInfoKargsJSONPadEnd, true
	case "embed-areas-2023-03.s390x.iso":
		return S390xCdboot, true
	case "embed-areas-2023-07.s390x.iso":
		return S390xCdbootKargs, true
	case "synthetic.iso":
		return NotLive, true
	}
	return "", false
}

// Sizes of the synthetic areas: the Ignition area is 256 KiB as in every
// coreos-installer fixture; a kargs area is 1 KiB.
const (
	IgnitionAreaSize = 256 << 10
	KargsAreaSize    = 1024
	// cdbootIgnitionOffset is where the Ignition range starts inside cdboot.img.
	cdbootIgnitionOffset = 128 << 10
)

// DefaultKargs are the synthetic images' own kernel arguments.
const DefaultKargs = "coreos.liveiso=synthetic-live ignition.firstboot ignition.platform.id=metal"

// Fixture is a built ISO and what its layout declares, measured with
// xorriso (not with the code under test).
type Fixture struct {
	Path   string
	Layout Layout
	// IgnitionOffset and IgnitionLength locate the Ignition area in the image
	// (zero for NotLive).
	IgnitionOffset, IgnitionLength int64
	// KargsOffsets are the image offsets of the kernel-argument areas (none
	// when the layout has none).
	KargsOffsets []int64
	// Files are the image's files and their contents, for read-back checks.
	Files map[string][]byte
}

// HasKargs reports whether the layout has kernel-argument areas.
func (f *Fixture) HasKargs() bool { return len(f.KargsOffsets) > 0 }

// Build writes an ISO of layout l into dir and returns it. It needs xorriso.
func Build(dir string, l Layout) (*Fixture, error) {
	xorriso, err := exec.LookPath("xorriso")
	if err != nil {
		return nil, fmt.Errorf("building a %s live-ISO fixture needs xorriso (make tools installs it): %w", l, err)
	}
	root, err := os.MkdirTemp(dir, "isoroot-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(root)
	f := &Fixture{Layout: l, Files: map[string][]byte{}, Path: filepath.Join(dir, string(l)+".iso")}
	add := func(p string, b []byte) {
		f.Files[p] = b
	}
	// The PXE artifacts every live ISO carries.
	add("images/pxeboot/vmlinuz", pattern("vmlinuz", 8<<10))
	add("images/pxeboot/initrd.img", pattern("initrd", 12<<10))
	add("images/pxeboot/rootfs.img", pattern("rootfs", 24<<10))
	add("coreos/features.json", []byte(`{"installer-config": true, "live-initrd-network": true}`+"\n"))
	if l == S390xCdboot || l == S390xCdbootKargs {
		// The LPAR boot files of an s390x live ISO, as in coreos-installer's
		// fixtures/iso/embed-areas-2023-*.s390x.iso: generic.ins maps files to
		// load addresses; images/initrd.addrsize holds the initrd's load
		// address and size (big-endian u64 each).
		add("generic.ins", []byte(GenericIns))
		as := make([]byte, 16)
		binary.BigEndian.PutUint64(as, 0x02000000)
		binary.BigEndian.PutUint64(as[8:], uint64(len(f.Files["images/pxeboot/initrd.img"])))
		add("images/initrd.addrsize", as)
	}

	// Kernel-argument areas inside the boot configs; offsets are within each file.
	kargsFiles := map[string]int64{}
	var withPadEnd bool
	switch l {
	case LegacyHeaders, IgnitionImgKargsJSON, IgnInfoKargsJSON, IgnInfoKargsJSONPadEnd:
		grub, off := bootConfig("menuentry 'live' {\n  linux /images/pxeboot/vmlinuz ", "\n  initrd /images/pxeboot/initrd.img\n}\n")
		add("EFI/redhat/grub.cfg", grub)
		kargsFiles["EFI/redhat/grub.cfg"] = off
		iso, off2 := bootConfig("label linux\n  kernel /images/pxeboot/vmlinuz\n  append initrd=/images/pxeboot/initrd.img ", "\n")
		add("isolinux/isolinux.cfg", iso)
		kargsFiles["isolinux/isolinux.cfg"] = off2
		withPadEnd = l == IgnInfoKargsJSONPadEnd
	case S390xCdbootKargs:
		prm, off := bootConfig("", "\n")
		add("images/generic.prm", prm)
		kargsFiles["images/generic.prm"] = off
		withPadEnd = true
	}
	if l == LegacyHeaders {
		def, _ := bootConfig("", "")
		add("coreos/kargs-default", def)
	}
	if len(kargsFiles) > 0 && l != LegacyHeaders {
		type loc struct {
			Path   string  `json:"path"`
			Offset int64   `json:"offset"`
			Pad    *string `json:"pad,omitempty"`
			End    *string `json:"end,omitempty"`
		}
		kj := struct {
			Default string `json:"default"`
			Files   []loc  `json:"files"`
			Size    int    `json:"size"`
		}{Default: DefaultKargs, Size: KargsAreaSize}
		for _, p := range slices.Sorted(maps.Keys(kargsFiles)) {
			x := loc{Path: p, Offset: kargsFiles[p]}
			if withPadEnd {
				pad, end := "#", "\n"
				x.Pad, x.End = &pad, &end
			}
			kj.Files = append(kj.Files, x)
		}
		b, _ := json.MarshalIndent(kj, "", "  ")
		add("coreos/kargs.json", append(b, '\n'))
	}

	// The Ignition area.
	ignFile := ""
	switch l {
	case LegacyHeaderOnly:
		// No igninfo.json and no images/ignition.img: only the header finds it.
		ignFile = "images/embed-area.img"
		add(ignFile, make([]byte, IgnitionAreaSize))
	case LegacyIgnitionHeader, LegacyHeaders, IgnitionImgKargsJSON:
		ignFile = "images/ignition.img"
		add(ignFile, make([]byte, IgnitionAreaSize))
	case IgnInfoKargsJSON, IgnInfoKargsJSONPadEnd:
		ignFile = "images/ignition.img"
		add(ignFile, make([]byte, IgnitionAreaSize))
		add("coreos/igninfo.json", []byte(`{"file": "images/ignition.img"}`+"\n"))
	case S390xCdboot, S390xCdbootKargs:
		ignFile = "images/cdboot.img"
		cd := pattern("cdboot", cdbootIgnitionOffset)
		cd = append(cd, make([]byte, IgnitionAreaSize)...)
		cd = append(cd, pattern("cdboot-tail", 64<<10)...)
		add(ignFile, cd)
		add("coreos/igninfo.json", []byte(fmt.Sprintf(`{"file": "images/cdboot.img", "offset": %d, "length": %d}`+"\n", cdbootIgnitionOffset, IgnitionAreaSize)))
	case NotLive:
		add("README.txt", []byte("an ISO without CoreOS embed areas\n"))
	default:
		return nil, fmt.Errorf("unknown ISO layout %q", l)
	}

	for p, b := range f.Files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(full, b, 0o644); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command(xorriso, "-as", "mkisofs", "-R", "-J", "-V", "coreos-synthetic", "-o", f.Path, root)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("xorriso -as mkisofs (%s fixture): %w\n%s", l, err, out)
	}
	lbas, err := reportLBAs(xorriso, f.Path)
	if err != nil {
		return nil, err
	}
	if ignFile != "" {
		start, ok := lbas["/"+ignFile]
		if !ok {
			return nil, fmt.Errorf("xorriso reports no %s in the %s fixture", ignFile, l)
		}
		f.IgnitionOffset, f.IgnitionLength = start, IgnitionAreaSize
		if l == S390xCdboot || l == S390xCdbootKargs {
			f.IgnitionOffset += cdbootIgnitionOffset
		}
	}
	for _, p := range slices.Sorted(maps.Keys(kargsFiles)) {
		start, ok := lbas["/"+p]
		if !ok {
			return nil, fmt.Errorf("xorriso reports no %s in the %s fixture", p, l)
		}
		f.KargsOffsets = append(f.KargsOffsets, start+kargsFiles[p])
	}
	switch l {
	case LegacyIgnitionHeader, LegacyHeaders, LegacyHeaderOnly:
		hdrs := map[int64][]byte{}
		hdrs[32768-24] = le("coreiso+", f.IgnitionOffset, f.IgnitionLength)
		if l == LegacyHeaders {
			// The default arguments are a kargs area of their own at the
			// start of coreos/kargs-default.
			def, ok := lbas["/coreos/kargs-default"]
			if !ok {
				return nil, fmt.Errorf("xorriso reports no coreos/kargs-default in the %s fixture", l)
			}
			vals := []int64{KargsAreaSize, def}
			vals = append(vals, f.KargsOffsets...)
			for len(vals) < 8 {
				vals = append(vals, 0)
			}
			hdrs[32768-24-72] = le("coreKarg", vals...)
		}
		if err := patch(f.Path, hdrs); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// bootConfig returns before + the default arguments in a kargs area (the
// arguments, '\n', then '#' up to KargsAreaSize) + after, and the area's
// offset in the result.
func bootConfig(before, after string) ([]byte, int64) {
	area := bytes.Repeat([]byte{'#'}, KargsAreaSize)
	copy(area, DefaultKargs)
	area[len(DefaultKargs)] = '\n'
	var b bytes.Buffer
	b.WriteString(before)
	off := int64(b.Len())
	b.Write(area)
	b.WriteString(after)
	return b.Bytes(), off
}

var lbaLine = regexp.MustCompile(`^File data lba:\s+\d+\s*,\s*(\d+)\s*,\s*\d+\s*,\s*(\d+)\s*,\s*'(.*)'$`)

// reportLBAs asks xorriso where each file's data starts, in bytes.
func reportLBAs(xorriso, iso string) (map[string]int64, error) {
	out, err := exec.Command(xorriso, "-indev", iso, "-find", "/", "-type", "f", "-exec", "report_lba", "--").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("xorriso report_lba %s: %w\n%s", iso, err, out)
	}
	m := map[string]int64{}
	for _, line := range strings.Split(string(out), "\n") {
		sm := lbaLine.FindStringSubmatch(strings.TrimSpace(line))
		if sm == nil {
			continue
		}
		lba, _ := strconv.ParseInt(sm[1], 10, 64)
		m[sm[3]] = lba * 2048
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("xorriso report_lba %s: no files reported\n%s", iso, out)
	}
	return m, nil
}

// le is magic followed by little-endian u64 values.
func le(magic string, vals ...int64) []byte {
	b := []byte(magic)
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	return b
}

func patch(path string, at map[int64][]byte) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	for off, b := range at {
		if _, err := f.WriteAt(b, off); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// pattern is n bytes of recognisable, incompressible-enough content.
func pattern(seed string, n int) []byte {
	b := make([]byte, n)
	x := uint32(2166136261)
	for _, c := range []byte(seed) {
		x = (x ^ uint32(c)) * 16777619
	}
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}
