package iso

import (
	"bytes"
	"testing"
)

// FuzzReadArchives feeds arbitrary embed-area bytes to the archive reader:
// no panic, no member larger than the input, and what it reads it can write
// back and read again to the same members.
func FuzzReadArchives(f *testing.F) {
	var raw bytes.Buffer
	_ = WriteCPIO(&raw, []Member{{Name: "etc/a.nmconnection", Mode: 0o100600, Data: []byte("[connection]\n")}, {Name: "config.ign", Mode: 0o100600, Data: []byte("{}")}})
	f.Add(raw.Bytes())
	f.Add(append(append(bytes.Clone(raw.Bytes()), make([]byte, 8)...), raw.Bytes()...))
	for _, c := range []Compression{XZ, Gzip} {
		z, err := CompressCPIO([]Member{{Name: "config.ign", Mode: 0o100600, Data: []byte(`{"ignition":{}}`)}}, c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(z)
	}
	f.Add([]byte("070701"))
	f.Fuzz(func(t *testing.T, area []byte) {
		ms, err := ReadArchives(area)
		if err != nil {
			return
		}
		var files []Member
		for _, m := range ms {
			if len(m.Data) > maxArchive {
				t.Fatalf("member %q of %d bytes", m.Name, len(m.Data))
			}
			if m.Mode&0o170000 == modeFile && m.Name != "" {
				files = append(files, m)
			}
		}
		var out bytes.Buffer
		if err := WriteCPIO(&out, files); err != nil {
			return
		}
		again, err := ReadCPIO(out.Bytes())
		if err != nil {
			t.Fatalf("re-read of a written archive: %v", err)
		}
		got := map[string][]byte{}
		for _, m := range again {
			got[m.Name] = m.Data
		}
		for _, m := range files {
			if d, ok := got[stripSlashes(m.Name)]; !ok || (!bytes.Equal(d, m.Data) && !dupName(files, m.Name)) {
				t.Fatalf("member %q lost or changed in the round trip", m.Name)
			}
		}
	})
}

func stripSlashes(s string) string { return string(bytes.Trim([]byte(s), "/")) }

func dupName(ms []Member, n string) bool {
	c := 0
	for _, m := range ms {
		if stripSlashes(m.Name) == stripSlashes(n) {
			c++
		}
	}
	return c > 1
}
