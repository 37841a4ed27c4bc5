package iso

import (
	"bytes"
	"os"
	"testing"

	"github.com/kubectl-assisted/kubectl-assisted/day2/iso/isofixture"
)

// benchImage is a synthetic 2023-07 x86_64 live ISO (igninfo.json,
// kargs.json with pad and end), read into memory so the benchmarks time the
// parsing, not the disk.
func benchImage(b *testing.B) []byte {
	b.Helper()
	f, err := isofixture.Build(b.TempDir(), isofixture.IgnInfoKargsJSONPadEnd)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := os.ReadFile(f.Path)
	if err != nil {
		b.Fatal(err)
	}
	return raw
}

// BenchmarkISOLookup opens the image and finds every file a node ISO and the
// PXE artifacts need: what the ISO9660 reader does per add-nodes run.
func BenchmarkISOLookup(b *testing.B) {
	raw := benchImage(b)
	r := bytes.NewReader(raw)
	b.ReportAllocs()
	for b.Loop() {
		im, err := Open(r)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := im.ReadFile("/coreos/igninfo.json", 64<<10); err != nil {
			b.Fatal(err)
		}
		if _, err := im.ReadFile("/coreos/kargs.json", 64<<10); err != nil {
			b.Fatal(err)
		}
		for _, p := range []string{"/images/ignition.img", "/EFI/redhat/grub.cfg", "/isolinux/isolinux.cfg",
			"/images/pxeboot/vmlinuz", "/images/pxeboot/initrd.img", "/images/pxeboot/rootfs.img"} {
			if _, err := im.Lookup(p); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkPrepare is the whole in-memory part of building a node ISO: find
// the areas, read the (pre-embedded) archive, write and compress a new one.
func BenchmarkPrepare(b *testing.B) {
	raw := benchImage(b)
	im, _ := Open(bytes.NewReader(raw))
	area, _ := IgnitionArea(im)
	pre, err := CompressCPIO([]Member{{Name: "etc/coreos-firstboot-network/eth0.nmconnection", Mode: 0o100600, Data: []byte("[connection]\nid=eth0\n")}}, Gzip)
	if err != nil {
		b.Fatal(err)
	}
	copy(raw[area.Offset:], pre)
	ign := bytes.Repeat([]byte(`{"ignition":{"version":"3.4.0"},"storage":{"files":[]}}`), 200)
	r := bytes.NewReader(raw)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Prepare(r, Customization{Ignition: ign, KargsAppend: []string{"fips=1"}}); err != nil {
			b.Fatal(err)
		}
	}
}

// cpioBenchMembers is what an embed area holds: a config and a few keyfiles.
func cpioBenchMembers() []Member {
	ms := []Member{{Name: "config.ign", Mode: 0o100600, Data: randomish(200 << 10)}}
	for _, n := range []string{"eth0", "eth1", "bond0"} {
		ms = append(ms, Member{Name: "etc/coreos-firstboot-network/" + n + ".nmconnection", Mode: 0o100600, Data: bytes.Repeat([]byte("[connection]\nid="+n+"\n"), 20)})
	}
	return ms
}

func BenchmarkWriteCPIO(b *testing.B) {
	ms := cpioBenchMembers()
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := WriteCPIO(&buf, ms); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadCPIO(b *testing.B) {
	var buf bytes.Buffer
	if err := WriteCPIO(&buf, cpioBenchMembers()); err != nil {
		b.Fatal(err)
	}
	// Two archives back to back with padding, as an area that had keyfiles
	// embedded before the config.
	data := append(append(append([]byte(nil), buf.Bytes()...), make([]byte, 512)...), buf.Bytes()...)
	b.ReportAllocs()
	for b.Loop() {
		ms, err := ReadCPIO(data)
		if err != nil || len(ms) != 12 {
			b.Fatalf("%d members, %v", len(ms), err)
		}
	}
}
