package iso

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Where the legacy headers live: the last bytes of the 32 KiB system area.
const (
	systemAreaEnd    = 32768
	coreisoHeaderOff = systemAreaEnd - 24      // "coreiso+", offset u64, length u64
	coreKargHeaderOf = systemAreaEnd - 24 - 72 // "coreKarg", size, default, 6 region offsets
)

// ErrNoIgnitionArea is returned for an ISO that has no Ignition embed area: not
// a CoreOS live ISO.
var ErrNoIgnitionArea = errors.New("ISO has no Ignition embed area (no /coreos/igninfo.json, /images/ignition.img or coreiso+ header): is it a CoreOS live ISO?")

// ErrNoKargsArea is returned when kernel arguments must change but the ISO has
// no kernel-argument embed area.
var ErrNoKargsArea = errors.New("ISO has no kernel-argument embed area (no /coreos/kargs.json or coreKarg header)")

// Area is a byte range of the image.
type Area struct {
	Offset int64
	Length int64
}

type ignInfo struct {
	File   string `json:"file"`
	Offset *int64 `json:"offset,omitempty"`
	Length *int64 `json:"length,omitempty"`
}

// IgnitionArea finds the Ignition embed area: the one /coreos/igninfo.json
// names (a whole file, or a range inside one such as s390x's cdboot.img), else
// /images/ignition.img, else the range in the legacy coreiso+ header.
func IgnitionArea(im *Image) (Area, error) {
	raw, err := im.ReadFile("/coreos/igninfo.json", 64<<10)
	switch {
	case err == nil:
		var info ignInfo
		if err := json.Unmarshal(raw, &info); err != nil {
			return Area{}, fmt.Errorf("parse /coreos/igninfo.json: %w", err)
		}
		if info.File == "" {
			return Area{}, errors.New("/coreos/igninfo.json names no file")
		}
		e, err := im.Lookup(info.File)
		if err != nil {
			return Area{}, fmt.Errorf("igninfo.json file: %w", err)
		}
		a := Area{Offset: e.Offset, Length: e.Size}
		if info.Offset != nil {
			if *info.Offset < 0 || *info.Offset > e.Size {
				return Area{}, fmt.Errorf("igninfo.json offset %d is outside %s (%d bytes)", *info.Offset, info.File, e.Size)
			}
			a.Offset += *info.Offset
			a.Length -= *info.Offset
		}
		if info.Length != nil {
			if *info.Length < 0 || *info.Length > a.Length {
				return Area{}, fmt.Errorf("igninfo.json length %d does not fit %s", *info.Length, info.File)
			}
			a.Length = *info.Length
		}
		return a, nil
	case !errors.Is(err, ErrNotFound):
		return Area{}, err
	}
	if e, err := im.Lookup("/images/ignition.img"); err == nil {
		return Area{Offset: e.Offset, Length: e.Size}, nil
	}
	hdr := make([]byte, 24)
	if _, err := im.r.ReadAt(hdr, coreisoHeaderOff); err == nil && string(hdr[:8]) == "coreiso+" {
		off := int64(binary.LittleEndian.Uint64(hdr[8:16]))
		n := int64(binary.LittleEndian.Uint64(hdr[16:24]))
		if off > 0 && n > 0 {
			return Area{Offset: off, Length: n}, nil
		}
	}
	return Area{}, ErrNoIgnitionArea
}

// Kargs are the kernel-argument embed areas: every region holds the same
// arguments, padded to Size bytes.
type Kargs struct {
	// Default is the image's pristine arguments (may be empty for legacy headers).
	Default string
	Size    int64
	Regions []KargsRegion
}

// KargsRegion is one copy of the arguments (grub.cfg, isolinux.cfg, cdboot.img).
type KargsRegion struct {
	Offset int64
	Pad    byte // fills the rest of the region, '#' by default
	End    byte // terminates the region, '\n' by default
}

type kargsJSON struct {
	Default string `json:"default"`
	Files   []struct {
		Path   string  `json:"path"`
		Offset int64   `json:"offset"`
		Pad    *string `json:"pad,omitempty"`
		End    *string `json:"end,omitempty"`
	} `json:"files"`
	Size int64 `json:"size"`
}

// KargsAreas finds the kernel-argument areas (/coreos/kargs.json, else the
// legacy coreKarg header); ErrNoKargsArea when there are none.
func KargsAreas(im *Image) (*Kargs, error) {
	raw, err := im.ReadFile("/coreos/kargs.json", 64<<10)
	switch {
	case err == nil:
		var kj kargsJSON
		if err := json.Unmarshal(raw, &kj); err != nil {
			return nil, fmt.Errorf("parse /coreos/kargs.json: %w", err)
		}
		if kj.Size <= 0 || kj.Size > sectorSize {
			return nil, fmt.Errorf("/coreos/kargs.json size %d is not in 1..2048", kj.Size)
		}
		k := &Kargs{Default: kj.Default, Size: kj.Size}
		for _, f := range kj.Files {
			e, err := im.Lookup(f.Path)
			if err != nil {
				return nil, fmt.Errorf("kargs.json file: %w", err)
			}
			if f.Offset < 0 || f.Offset+kj.Size > e.Size {
				return nil, fmt.Errorf("kargs.json region at %d+%d is outside %s", f.Offset, kj.Size, f.Path)
			}
			reg := KargsRegion{Offset: e.Offset + f.Offset, Pad: '#', End: '\n'}
			if f.Pad != nil && len(*f.Pad) == 1 {
				reg.Pad = (*f.Pad)[0]
			}
			if f.End != nil && len(*f.End) == 1 {
				reg.End = (*f.End)[0]
			}
			k.Regions = append(k.Regions, reg)
		}
		if len(k.Regions) == 0 {
			return nil, ErrNoKargsArea
		}
		return k, nil
	case !errors.Is(err, ErrNotFound):
		return nil, err
	}
	hdr := make([]byte, 72)
	if _, err := im.r.ReadAt(hdr, coreKargHeaderOf); err != nil || string(hdr[:8]) != "coreKarg" {
		return nil, ErrNoKargsArea
	}
	k := &Kargs{Size: int64(binary.LittleEndian.Uint64(hdr[8:16]))}
	if k.Size <= 0 || k.Size > sectorSize {
		return nil, fmt.Errorf("coreKarg header size %d is not in 1..2048", k.Size)
	}
	if def := int64(binary.LittleEndian.Uint64(hdr[16:24])); def > 0 {
		b := make([]byte, k.Size)
		if _, err := im.r.ReadAt(b, def); err == nil {
			k.Default = trimKargs(b, '#', '\n')
		}
	}
	for i := 0; i < 6; i++ {
		off := int64(binary.LittleEndian.Uint64(hdr[24+8*i : 32+8*i]))
		if off == 0 {
			break
		}
		k.Regions = append(k.Regions, KargsRegion{Offset: off, Pad: '#', End: '\n'})
	}
	if len(k.Regions) == 0 {
		return nil, ErrNoKargsArea
	}
	return k, nil
}

func trimKargs(b []byte, pad, end byte) string {
	b = bytes.TrimRight(b, string([]byte{pad}))
	b = bytes.TrimRight(b, string([]byte{end}))
	return strings.TrimSpace(string(b))
}

// Current reads the arguments now in the image; every region must agree.
func (k *Kargs) Current(r io.ReaderAt) (string, error) {
	var cur string
	for i, reg := range k.Regions {
		b := make([]byte, k.Size)
		if _, err := r.ReadAt(b, reg.Offset); err != nil {
			return "", fmt.Errorf("read kernel arguments: %w", err)
		}
		s := trimKargs(b, reg.Pad, reg.End)
		if i > 0 && s != cur {
			return "", fmt.Errorf("kernel-argument regions disagree: %q vs %q", cur, s)
		}
		cur = s
	}
	return cur, nil
}

// Region renders args for reg: args, the end byte, then pad up to Size.
func (k *Kargs) Region(reg KargsRegion, args string) ([]byte, error) {
	if int64(len(args)) >= k.Size {
		return nil, fmt.Errorf("kernel arguments (%d bytes) do not fit the %d-byte embed area", len(args), k.Size)
	}
	b := bytes.Repeat([]byte{reg.Pad}, int(k.Size))
	copy(b, args)
	b[len(args)] = reg.End
	return b, nil
}

// AppendArgs returns cur with each of add that is not already there appended.
func AppendArgs(cur string, add ...string) string {
	have := map[string]bool{}
	for _, a := range strings.Fields(cur) {
		have[a] = true
	}
	out := strings.Fields(cur)
	for _, a := range add {
		if !have[a] {
			out = append(out, a)
			have[a] = true
		}
	}
	return strings.Join(out, " ")
}
