package iso

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-assisted/kubectl-assisted/day2/iso/isofixture"
)

// fixture is one live ISO a test runs against: a synthetic one the test built
// with xorriso (isofixture, with what its layout declares, measured by
// xorriso), or a coreos-installer fixture from ../shared when present.
type fixture struct {
	path     string
	built    *isofixture.Fixture // nil for a shared fixture
	hasKargs bool
}

// fixtures builds a synthetic ISO of every layout the day-2 code supports and
// adds the coreos-installer fixtures of ../shared/fixtures/iso when present.
func fixtures(t *testing.T) map[string]fixture {
	t.Helper()
	out := t.TempDir()
	m := map[string]fixture{}
	for _, l := range isofixture.Layouts {
		f, err := isofixture.Build(out, l)
		if err != nil {
			t.Fatal(err)
		}
		m["synthetic-"+string(l)] = fixture{path: f.Path, built: f, hasKargs: f.HasKargs()}
	}
	for name, p := range sharedFixtures(t, out) {
		m[name] = fixture{path: p, hasKargs: !strings.Contains(name, "2020-09") && name != "embed-areas-2023-03.s390x.iso"}
	}
	return m
}

// synthetic builds one synthetic ISO of layout l.
func synthetic(t *testing.T, l isofixture.Layout) *isofixture.Fixture {
	t.Helper()
	f, err := isofixture.Build(t.TempDir(), l)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// sharedFixtures decompresses the coreos-installer live-ISO fixtures of
// ../shared (KUBECTL_ASSISTED_SHARED) into out; none when they are absent.
func sharedFixtures(t *testing.T, out string) map[string]string {
	t.Helper()
	dir := os.Getenv("KUBECTL_ASSISTED_SHARED")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "fixtures", "iso", "embed-areas-*.iso.xz"))
	m := map[string]string{}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".xz")
		raw, err := exec.Command("xz", "-dc", f).Output()
		if err != nil {
			t.Fatalf("xz -dc %s: %v", f, err)
		}
		p := filepath.Join(out, name)
		if err := os.WriteFile(p, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		m[name] = p
	}
	return m
}

func TestIgnitionArea_AllFixtureLayouts(t *testing.T) {
	// Offsets and lengths as xorriso reports them (report_lba) and as igninfo.json
	// or the coreiso+ header state them.
	want := map[string]Area{
		"embed-areas-2020-09.iso":        {45 * 2048, 262144},
		"embed-areas-2023-07.x86_64.iso": {139264, 262144},
	}
	for name, fx := range fixtures(t) {
		t.Run(name, func(t *testing.T) {
			f, err := os.Open(fx.path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			im, err := Open(f)
			if err != nil {
				t.Fatal(err)
			}
			a, err := IgnitionArea(im)
			if err != nil {
				t.Fatal(err)
			}
			if b := fx.built; b != nil {
				if w := (Area{b.IgnitionOffset, b.IgnitionLength}); a != w {
					t.Fatalf("area = %+v, want %+v (xorriso report_lba + the layout's declaration)", a, w)
				}
				k, err := KargsAreas(im)
				if !b.HasKargs() {
					if !errors.Is(err, ErrNoKargsArea) {
						t.Fatalf("kargs on a layout without them: %v", err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				var offs []int64
				for _, r := range k.Regions {
					offs = append(offs, r.Offset)
				}
				if fmt.Sprint(offs) != fmt.Sprint(b.KargsOffsets) || k.Size != isofixture.KargsAreaSize || k.Default != isofixture.DefaultKargs {
					t.Fatalf("kargs = %+v (offsets %v), want offsets %v size %d default %q", k, offs, b.KargsOffsets, isofixture.KargsAreaSize, isofixture.DefaultKargs)
				}
				return
			}
			if w, ok := want[name]; ok && a != w {
				t.Fatalf("area = %+v, want %+v", a, w)
			}
			if a.Length != 262144 {
				t.Fatalf("area length = %d, want 262144 (every fixture has a 256 KiB area)", a.Length)
			}
			if strings.Contains(name, "s390x") {
				cd, err := im.Lookup("/images/cdboot.img")
				if err != nil {
					t.Fatal(err)
				}
				if a.Offset != cd.Offset+132096 {
					t.Fatalf("s390x area at %d, want cdboot.img+132096 = %d", a.Offset, cd.Offset+132096)
				}
			}
		})
	}
}

func TestPrepare_RoundTripEveryLayout(t *testing.T) {
	ign := []byte(`{"ignition":{"version":"3.4.0"}}`)
	for name, fx := range fixtures(t) {
		for _, c := range []Compression{XZ, Gzip} {
			t.Run(name+"/"+string(c), func(t *testing.T) {
				base, err := os.ReadFile(fx.path)
				if err != nil {
					t.Fatal(err)
				}
				cust := Customization{Ignition: ign, Compression: c}
				hasKargs := fx.hasKargs
				if hasKargs {
					cust.KargsAppend = []string{"fips=1"}
				}
				plan, err := Prepare(bytes.NewReader(base), cust)
				if err != nil {
					t.Fatal(err)
				}
				img := &memFile{b: append([]byte(nil), base...)}
				if err := plan.Apply(img); err != nil {
					t.Fatal(err)
				}
				if len(img.b) != len(base) {
					t.Fatalf("size changed: %d -> %d", len(base), len(img.b))
				}
				im, _ := Open(bytes.NewReader(img.b))
				area, _ := IgnitionArea(im)
				ms, err := ReadArchives(img.b[area.Offset : area.Offset+area.Length])
				if err != nil {
					t.Fatal(err)
				}
				if len(ms) != 1 || ms[0].Name != "config.ign" || !bytes.Equal(ms[0].Data, ign) || ms[0].Mode != 0o100600 {
					t.Fatalf("members = %+v", ms)
				}
				if hasKargs {
					k, err := KargsAreas(im)
					if err != nil {
						t.Fatal(err)
					}
					cur, err := k.Current(bytes.NewReader(img.b))
					if err != nil {
						t.Fatal(err)
					}
					if !strings.HasSuffix(cur, " fips=1") || !strings.Contains(cur, "ignition.platform.id=metal") {
						t.Fatalf("kargs = %q", cur)
					}
				}
				// Bytes outside the patched ranges are untouched.
				changed := 0
				for i := range base {
					if base[i] != img.b[i] {
						changed++
					}
				}
				if changed == 0 || changed > int(area.Length)+4096 {
					t.Fatalf("%d bytes changed", changed)
				}
			})
		}
	}
}

func TestPrepare_KeepsOtherMembersAndRefusesWhatDoesNotFit(t *testing.T) {
	p := synthetic(t, isofixture.IgnInfoKargsJSONPadEnd).Path
	base, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	im, _ := Open(bytes.NewReader(base))
	area, _ := IgnitionArea(im)
	// Pre-embed a network keyfile (as `coreos-installer iso network embed` does)
	// and an old config, gzip-compressed.
	pre, err := CompressCPIO([]Member{
		{Name: "etc/coreos-firstboot-network/eth0.nmconnection", Mode: 0o100600, Data: []byte("[connection]\nid=eth0\n")},
		{Name: "config.ign", Mode: 0o100600, Data: []byte(`{"old":true}`)},
	}, Gzip)
	if err != nil {
		t.Fatal(err)
	}
	copy(base[area.Offset:], pre)
	plan, err := Prepare(bytes.NewReader(base), Customization{Ignition: []byte(`{"new":true}`)})
	if err != nil {
		t.Fatal(err)
	}
	if !plan.ReplacedConfig || len(plan.Kept) != 1 || plan.Kept[0] != "etc/coreos-firstboot-network/eth0.nmconnection" {
		t.Fatalf("plan = %+v", plan)
	}
	img := &memFile{b: base}
	_ = plan.Apply(img)
	ms, err := ReadArchives(img.b[area.Offset : area.Offset+area.Length])
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, m := range ms {
		got[m.Name] = string(m.Data)
	}
	if got["config.ign"] != `{"new":true}` || !strings.Contains(got["etc/coreos-firstboot-network/eth0.nmconnection"], "id=eth0") {
		t.Fatalf("members = %v", got)
	}

	// Incompressible data larger than the area is refused before any write.
	_, err = Prepare(bytes.NewReader(base), Customization{Ignition: randomish(600 << 10)})
	if err == nil || !strings.Contains(err.Error(), "embed area") {
		t.Fatalf("oversized config: err = %v", err)
	}
}

func TestPrepare_FIPSOnImageWithoutKargsArea(t *testing.T) {
	for _, l := range []isofixture.Layout{isofixture.S390xCdboot, isofixture.LegacyIgnitionHeader} {
		f, err := os.Open(synthetic(t, l).Path)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Prepare(f, Customization{Ignition: []byte("{}"), KargsAppend: []string{"fips=1"}})
		f.Close()
		if err == nil || !strings.Contains(err.Error(), "no kernel-argument embed area") {
			t.Fatalf("%s: err = %v", l, err)
		}
	}
}

func TestPrepare_NotALiveISO(t *testing.T) {
	_, err := Prepare(bytes.NewReader(make([]byte, 64<<10)), Customization{})
	if err == nil || !strings.Contains(err.Error(), "not an ISO9660") {
		t.Fatalf("err = %v", err)
	}
	raw, err := os.ReadFile(synthetic(t, isofixture.NotLive).Path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Prepare(bytes.NewReader(raw), Customization{})
	if err == nil || !strings.Contains(err.Error(), "no Ignition embed area") {
		t.Fatalf("err = %v", err)
	}
}

func TestCPIO_RoundTripAndParents(t *testing.T) {
	var b bytes.Buffer
	if err := WriteCPIO(&b, []Member{{Name: "/a/b/c.txt", Mode: 0o100644, Data: []byte("hello")}}); err != nil {
		t.Fatal(err)
	}
	ms, err := ReadCPIO(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range ms {
		names = append(names, m.Name)
	}
	if strings.Join(names, ",") != "a,a/b,a/b/c.txt" || string(ms[2].Data) != "hello" {
		t.Fatalf("names = %v", names)
	}
	if _, err := ReadCPIO([]byte("garbage")); err == nil {
		t.Fatal("garbage parsed")
	}
}

func randomish(n int) []byte {
	b := make([]byte, n)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

type memFile struct{ b []byte }

func (m *memFile) WriteAt(p []byte, off int64) (int, error) {
	if int(off)+len(p) > len(m.b) {
		return 0, io.ErrShortWrite
	}
	return copy(m.b[off:], p), nil
}

func TestWritePXE_InitrdCarriesIgnitionAndIPXEBootsIt(t *testing.T) {
	p := synthetic(t, isofixture.IgnInfoKargsJSONPadEnd).Path
	dir := t.TempDir()
	res, err := WritePXE(p, PXEOptions{Dir: dir, Prefix: "node", Arch: "x86_64", BaseURL: "http://pxe.example/x/", Checksum: true,
		Customization: Customization{Ignition: []byte(`{"ignition":{"version":"3.4.0"}}`), KargsAppend: []string{"fips=1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Artifacts) != 4 {
		t.Fatalf("artifacts = %+v", res.Artifacts)
	}
	for _, a := range res.Artifacts {
		sum, _ := FileSHA256(a.Path)
		if a.SHA256 != sum {
			t.Fatalf("%s: sha256 %s, file has %s", a.Path, a.SHA256, sum)
		}
	}
	initrd, _ := os.ReadFile(filepath.Join(dir, "node.x86_64-initrd.img"))
	f, _ := os.Open(p)
	defer f.Close()
	im, _ := Open(f)
	orig, _ := im.ReadFile("/images/pxeboot/initrd.img", 1<<20)
	if !bytes.HasPrefix(initrd, orig) {
		t.Fatal("initrd does not start with the ISO's initrd")
	}
	ms, err := ReadArchives(initrd[align4(len(orig)):])
	if err != nil || len(ms) != 1 || ms[0].Name != "config.ign" {
		t.Fatalf("appended archive: %v %+v", err, ms)
	}
	script, _ := os.ReadFile(filepath.Join(dir, "node.x86_64.ipxe"))
	for _, want := range []string{"#!ipxe", "initrd --name initrd http://pxe.example/x/node.x86_64-initrd.img",
		"kernel http://pxe.example/x/node.x86_64-vmlinuz initrd=initrd coreos.live.rootfs_url=http://pxe.example/x/node.x86_64-rootfs.img",
		"ignition.platform.id=metal", "fips=1"} {
		if !strings.Contains(string(script), want) {
			t.Fatalf("ipxe script lacks %q:\n%s", want, script)
		}
	}
	if strings.Contains(string(script), "coreos.liveiso=") {
		t.Fatalf("ipxe script keeps coreos.liveiso:\n%s", script)
	}
}

// TestReadCPIO_TruncatedAndOversized: a member whose header claims more data
// than the archive holds is an error, not a huge allocation.
func TestReadCPIO_TruncatedAndOversized(t *testing.T) {
	var b bytes.Buffer
	if err := WriteCPIO(&b, []Member{{Name: "config.ign", Mode: 0o100600, Data: []byte("0123456789")}}); err != nil {
		t.Fatal(err)
	}
	good := b.Bytes()
	// Truncated inside the member's data.
	if _, err := ReadCPIO(good[:115]); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("truncated: err = %v", err)
	}
	// The size field (bytes 54..62 of the header) claims 4 GiB - 1.
	huge := bytes.Clone(good)
	copy(huge[54:62], "FFFFFFFF")
	if _, err := ReadCPIO(huge); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("oversized: err = %v", err)
	}
}

// TestWritePXE_S390xAddrsizeAndGenericIns: s390x PXE also writes
// <prefix>.s390x-initrd.addrsize (the ISO's load address, then the size of the
// written initrd, big-endian) and <prefix>.s390x-generic.ins naming the
// written files, as the installer's add-nodes PXE does; on the synthetic
// layout and on coreos-installer's real s390x fixture.
func TestWritePXE_S390xAddrsizeAndGenericIns(t *testing.T) {
	isos := map[string]string{"synthetic": synthetic(t, isofixture.S390xCdbootKargs).Path}
	if p, ok := sharedFixtures(t, t.TempDir())["embed-areas-2023-07.s390x.iso"]; ok {
		isos["embed-areas-2023-07.s390x.iso"] = p
	}
	for name, p := range isos {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			res, err := WritePXE(p, PXEOptions{Dir: dir, Prefix: "node", Arch: "s390x", Checksum: true,
				Customization: Customization{Ignition: []byte(`{"ignition":{"version":"3.4.0"}}`)}})
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, a := range res.Artifacts {
				kinds = append(kinds, a.Kind+"="+filepath.Base(a.Path))
			}
			want := "kernel=node.s390x-vmlinuz initrd=node.s390x-initrd.img rootfs=node.s390x-rootfs.img initrd-addrsize=node.s390x-initrd.addrsize generic-ins=node.s390x-generic.ins"
			if got := strings.Join(kinds, " "); got != want {
				t.Fatalf("artifacts:\n%s\nwant\n%s", got, want)
			}
			st, err := os.Stat(filepath.Join(dir, "node.s390x-initrd.img"))
			if err != nil {
				t.Fatal(err)
			}
			as, _ := os.ReadFile(filepath.Join(dir, "node.s390x-initrd.addrsize"))
			if len(as) != 16 || !bytes.Equal(as[:8], []byte{0, 0, 0, 0, 2, 0, 0, 0}) {
				t.Fatalf("addrsize = %x, want load address 0x02000000 first", as)
			}
			var size uint64
			for _, b := range as[8:] {
				size = size<<8 | uint64(b)
			}
			if size != uint64(st.Size()) || size == 0 {
				t.Fatalf("addrsize size %d, written initrd has %d bytes", size, st.Size())
			}
			ins, _ := os.ReadFile(filepath.Join(dir, "node.s390x-generic.ins"))
			wantIns := "* minimal lpar ins file\nimages/node.s390x-vmlinuz 0x00000000\nimages/node.s390x-initrd.img 0x02000000\nimages/genericdvd.prm 0x00010480\nimages/node.s390x-initrd.addrsize 0x00010408\n"
			if string(ins) != wantIns {
				t.Fatalf("generic.ins:\n%s\nwant\n%s", ins, wantIns)
			}
		})
	}
	// An s390x ISO without the LPAR files: a clear error, nothing left behind.
	dir := t.TempDir()
	_, err := WritePXE(synthetic(t, isofixture.IgnInfoKargsJSONPadEnd).Path, PXEOptions{Dir: dir, Prefix: "node", Arch: "s390x",
		Customization: Customization{Ignition: []byte(`{}`)}})
	if err == nil || !strings.Contains(err.Error(), "s390x PXE: the ISO has no /images/initrd.addrsize") {
		t.Fatalf("err = %v", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("%d files left after the failure", len(left))
	}
}

// TestCopy_SeekableAndStreamedSourcesGiveTheSameImage runs the node ISO's copy
// from a local file (whose writes are computed from the base while the copy
// runs) and from a plain stream (computed from the copy after it), and checks
// both give the image Prepare+Apply give on the base in memory; a config that
// does not fit fails either way and leaves no file behind.
func TestCopy_SeekableAndStreamedSourcesGiveTheSameImage(t *testing.T) {
	p := synthetic(t, isofixture.IgnInfoKargsJSONPadEnd).Path
	base, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	cust := Customization{Ignition: []byte(`{"ignition":{"version":"3.4.0"}}`), KargsAppend: []string{"fips=1"}}
	plan, err := Prepare(bytes.NewReader(base), cust)
	if err != nil {
		t.Fatal(err)
	}
	want := &memFile{b: append([]byte(nil), base...)}
	if err := plan.Apply(want); err != nil {
		t.Fatal(err)
	}
	sources := map[string]func(t *testing.T) io.Reader{
		"file": func(t *testing.T) io.Reader {
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			return f
		},
		"stream": func(*testing.T) io.Reader { return io.MultiReader(bytes.NewReader(base)) },
	}
	for name, open := range sources {
		t.Run(name, func(t *testing.T) {
			src := open(t)
			if _, ok := src.(io.ReaderAt); ok != (name == "file") {
				t.Fatalf("%s source: ReaderAt %v", name, ok)
			}
			dst := filepath.Join(t.TempDir(), "node.iso")
			c, err := StartCopy(dst, src)
			if err != nil {
				t.Fatal(err)
			}
			res, err := c.Finish(cust)
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(dst)
			if err != nil {
				t.Fatal(err)
			}
			if res.Size != int64(len(base)) || !bytes.Equal(got, want.b) || res.Plan.Kargs != plan.Kargs {
				t.Fatalf("size %d (want %d), same bytes %v, kargs %q (want %q)", res.Size, len(base), bytes.Equal(got, want.b), res.Plan.Kargs, plan.Kargs)
			}
			if _, err := os.Stat(dst + ".part"); !os.IsNotExist(err) {
				t.Fatalf(".part left: %v", err)
			}

			dst2 := filepath.Join(t.TempDir(), "big.iso")
			c, err = StartCopy(dst2, open(t))
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Finish(Customization{Ignition: randomish(int(plan.IgnitionArea.Length) * 2)})
			if err == nil || !strings.Contains(err.Error(), "embed area") {
				t.Fatalf("oversized config: %v", err)
			}
			left, _ := os.ReadDir(filepath.Dir(dst2))
			if len(left) != 0 {
				t.Fatalf("left behind: %v", left)
			}
		})
	}
}
