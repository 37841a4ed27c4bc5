package pg

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// buildStream writes a synthetic dump stream of the given tables' COPY text,
// cut into chunks of chunk bytes, the way Dump writes one.
func buildStream(t testing.TB, chunk int, tables map[string]string, order []string) []byte {
	return buildStreamFormats(t, chunk, "1.0", tables, nil, order)
}

// buildStreamFormats is buildStream with a version and each table's COPY
// format (formats[name], text when absent).
func buildStreamFormats(t testing.TB, chunk int, version string, tables, formats map[string]string, order []string) []byte {
	t.Helper()
	var buf bytes.Buffer
	sw := newStreamWriter(&buf)
	h := streamHeader{Format: FormatName, Version: version, ServerVersion: "15.0", Settings: map[string]string{}, Schemas: []string{"public"}}
	algo := checksumSHA256
	if !strings.HasPrefix(version, "1.") && !strings.HasPrefix(version, "2.") {
		algo, h.Checksum = checksumXXH3, checksumXXH3
	}
	pre := []object{{Kind: "SCHEMA", Schema: "public", Name: "public", SQL: `CREATE SCHEMA "public"`}}
	for _, name := range order {
		h.Tables = append(h.Tables, streamTable{Schema: "public", Name: name, Columns: []string{"a", "b"}, Format: formats[name]})
		pre = append(pre, object{Kind: "TABLE", Schema: "public", Name: name, SQL: "CREATE TABLE " + qualified("public", name) + ` ("a" integer, "b" text)`})
	}
	if err := sw.json(memberHeader, h); err != nil {
		t.Fatal(err)
	}
	if err := sw.json(memberPreData, streamDDL{Objects: pre}); err != nil {
		t.Fatal(err)
	}
	var sum streamSummary
	b := make([]byte, chunk)
	for i, name := range order {
		th := newTableHashFor(formats[name], algo)
		ch := &chunker{s: sw, table: i + 1, buf: b}
		if _, err := ch.Write([]byte(tables[name])); err != nil {
			t.Fatal(err)
		}
		if err := ch.flush(); err != nil {
			t.Fatal(err)
		}
		_, _ = th.Write([]byte(tables[name]))
		sum.Tables = append(sum.Tables, TableSummary{Schema: "public", Name: name, Rows: th.rows, Checksum: th.sum(), DataBytes: th.bytes})
		sum.DataBytes += th.bytes
	}
	if err := sw.json(memberPostData, streamDDL{}); err != nil {
		t.Fatal(err)
	}
	if err := sw.json(memberSummary, sum); err != nil {
		t.Fatal(err)
	}
	if err := sw.close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

var sampleTables = map[string]string{
	"a":     "1\tone\n2\t\\N\n3\ttab\\there\n",
	"b":     strings.Repeat("42\tsome longer value with \\\\ backslash\n", 200),
	"empty": "",
}

func TestVerifyStream(t *testing.T) {
	stream := buildStream(t, 100, sampleTables, []string{"a", "b", "empty"})
	sum, err := Verify(context.Background(), bytes.NewReader(stream))
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	checkRows(t, sum, map[string]int64{"a": 3, "b": 200, "empty": 0})
	if sum.Bytes == 0 || sum.Bytes > int64(len(stream)) {
		t.Errorf("summary bytes %d, stream %d", sum.Bytes, len(stream))
	}
}

// checkRows compares each table's row count in sum with want's.
func checkRows(t *testing.T, sum *Summary, want map[string]int64) {
	t.Helper()
	for _, ts := range sum.Tables {
		if ts.Rows != want[ts.Name] {
			t.Errorf("table %s: %d rows, want %d", ts.Name, ts.Rows, want[ts.Name])
		}
	}
}

// A 2.0 stream may hold binary tables beside text ones; the binary data is
// counted from its framing, checked against the summary like text, and a
// binary table in a 1.x stream or an unknown format is refused.
func TestVerifyBinaryTables(t *testing.T) {
	tables := map[string]string{
		"bin":   string(binaryCopy(nil, [][]byte{[]byte("1"), []byte("one")}, [][]byte{[]byte("2"), nil}, [][]byte{{3}, []byte("x\ny")}, [][]byte{nil, nil})),
		"txt":   "1\tone\n2\t\\N\n",
		"empty": string(binaryCopy(nil)),
	}
	formats := map[string]string{"bin": copyBinary, "empty": copyBinary}
	order := []string{"bin", "txt", "empty"}
	stream := buildStreamFormats(t, 7, "2.0", tables, formats, order)
	sum, err := Verify(context.Background(), bytes.NewReader(stream))
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	checkRows(t, sum, map[string]int64{"bin": 4, "txt": 2, "empty": 0})
	swap := func(old, new string) []byte {
		return bytes.Replace(bytes.Clone(stream), []byte(old), []byte(new), 1)
	}
	for name, c := range map[string]struct {
		in   []byte
		want error
	}{
		"binary in 1.x":  {buildStreamFormats(t, 7, "1.2", tables, formats, order), ErrCorruptStream},
		"unknown format": {swap(`"format": "binary"`, `"format": "csv!!!"`), ErrCorruptStream},
		"binary as text": {swap(`"format": "binary"`, `"formaX": "binary"`), ErrChecksumMismatch},
		"altered value":  {swap("one", "ONE"), ErrChecksumMismatch},
	} {
		if _, err := Verify(context.Background(), bytes.NewReader(c.in)); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
}

func TestVerifyRejectsBrokenStreams(t *testing.T) {
	stream := buildStream(t, 100, sampleTables, []string{"a", "b", "empty"})
	swap := func(old, new string) []byte {
		return bytes.Replace(append([]byte(nil), stream...), []byte(old), []byte(new), 1)
	}
	tests := []struct {
		name    string
		in      []byte
		wantErr error
	}{
		{"empty", nil, ErrCorruptStream},
		{"garbage", []byte("not a tar"), ErrCorruptStream},
		{"header only", stream[:1024], ErrCorruptStream},
		{"wrong format name", swap(FormatName, "something-else-entirely!"), ErrCorruptStream},
		{"newer major", swap(`"version": "1.0"`, `"version": "9.0"`), ErrUnsupportedFormat},
		{"tampered row", swap("some longer value", "SOME longer value"), ErrChecksumMismatch},
	}
	for cut := 512; cut < len(stream)-1024; cut += 509 {
		tests = append(tests, struct {
			name    string
			in      []byte
			wantErr error
		}{"cut", stream[:cut], ErrCorruptStream})
	}
	for _, tt := range tests {
		_, err := Verify(context.Background(), bytes.NewReader(tt.in))
		if !errors.Is(err, tt.wantErr) {
			t.Errorf("%s (%d bytes): err = %v, want %v", tt.name, len(tt.in), err, tt.wantErr)
		}
	}
}

// FuzzVerify: arbitrary bytes never panic the stream reader, and Restore
// fails cleanly on them (it reads the header before connecting; the target
// here does not exist). Seeds are small: the fuzzer minimizes every new input.
func FuzzVerify(f *testing.F) {
	stream := buildStream(f, 64, map[string]string{"a": "1\tx\n"}, []string{"a"})
	f.Add(stream)
	f.Add(stream[:1536])
	f.Add([]byte{})
	warmParser(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		checkArbitraryStream(t, data)
	})
}

// FuzzVerifyMembers fuzzes the members' contents inside a well-formed tar, to
// reach the checks behind the archive layer.
func FuzzVerifyMembers(f *testing.F) {
	f.Add([]byte(`{"format":"`+FormatName+`","version":"1.0","schemas":["public"],"tables":[{"schema":"public","name":"a","columns":["x"]}]}`),
		[]byte("1\tx\n"),
		[]byte(`{"tables":[{"schema":"public","name":"a","rows":1,"dataBytes":4,"checksum":"sha256:00"}],"dataBytes":4}`))
	warmParser(f)
	f.Fuzz(func(t *testing.T, header, data, summary []byte) {
		var buf bytes.Buffer
		sw := newStreamWriter(&buf)
		for _, m := range []struct {
			name string
			body []byte
		}{{memberHeader, header}, {memberPreData, []byte(`{"objects":[{"kind":"TABLE","schema":"public","name":"a","sql":"CREATE TABLE \"public\".\"a\" (\"x\" text)"}]}`)}, {dataMember(1, 0), data},
			{memberPostData, []byte(`{"objects":[]}`)}, {memberSummary, summary}} {
			if err := sw.member(m.name, m.body); err != nil {
				t.Fatal(err)
			}
		}
		if err := sw.close(); err != nil {
			t.Fatal(err)
		}
		checkArbitraryStream(t, buf.Bytes())
	})
}

func checkArbitraryStream(t *testing.T, data []byte) {
	sum, err := Verify(context.Background(), bytes.NewReader(data))
	if err == nil && (sum == nil || sum.Bytes > int64(len(data))) {
		t.Fatalf("verify accepted %d bytes with summary %+v", len(data), sum)
	}
	if err != nil && !errors.Is(err, ErrCorruptStream) && !errors.Is(err, ErrChecksumMismatch) && !errors.Is(err, ErrUnsupportedFormat) && !errors.Is(err, ErrUnsafeSQL) {
		t.Fatalf("verify error %v is none of the stream errors", err)
	}
	if _, err := Restore(context.Background(), "host=/nonexistent-kat-socket port=1 user=x dbname=x connect_timeout=1", bytes.NewReader(data), RestoreOptions{}); err == nil {
		t.Fatal("restore into a missing server succeeded")
	}
}

func TestQuoting(t *testing.T) {
	tests := []struct{ name, got, want string }{
		{"ident", ident(`we"ird Name`), `"we""ird Name"`},
		{"qualified", qualified("Mixed Schema", "t"), `"Mixed Schema"."t"`},
		{"literal", literal(`it's \ fine`), `'it''s \ fine'`},
		{"options", strings.Join(quoteOptions([]string{"fillfactor=90", "autovacuum_vacuum_scale_factor=0.05", "flag"}), ","), "fillfactor='90',autovacuum_vacuum_scale_factor='0.05',flag"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %s, want %s", tt.name, tt.got, tt.want)
		}
	}
}

func TestMatchTable(t *testing.T) {
	tests := []struct {
		patterns     []string
		schema, name string
		want         bool
	}{
		{[]string{"release_images"}, "public", "release_images", true},
		{[]string{"release_images"}, "other", "release_images", true},
		{[]string{"public.release_images"}, "other", "release_images", false},
		{[]string{"cluster*"}, "public", "cluster_networks", true},
		{[]string{"*.events"}, "x", "events", true},
		{[]string{"events"}, "public", "events_archive", false},
		{nil, "public", "events", false},
	}
	for _, tt := range tests {
		if got := matchTable(tt.patterns, tt.schema, tt.name); got != tt.want {
			t.Errorf("matchTable(%v, %s.%s) = %v, want %v", tt.patterns, tt.schema, tt.name, got, tt.want)
		}
	}
}
