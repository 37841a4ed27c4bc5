package pg

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// The XXH3-128 checksums are those of the reference implementation: the
// expected values were printed by xxhsum 0.8.1 (Debian package xxhash),
// `printf ... | xxhsum -H2`, not computed by this package's code.
func TestTableHashXXH3MatchesXXHsum(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "99aa06d3014798d86001c324468d497f"},
		{"1\tone\n2\t\\N\n3\ttab\\there\n", "25ce15d7bb27f280722d27ab57c7cdb6"},
		{strings.Repeat("a", 100000), "819d5302938c790308f809ef04c54838"},
	} {
		h := newTableHashFor(copyText, checksumXXH3)
		// Written in uneven pieces, as chunks arrive.
		for rest := []byte(c.in); len(rest) > 0; {
			n := min(len(rest), 4093)
			_, _ = h.Write(rest[:n])
			rest = rest[n:]
		}
		if got := h.sum(); got != "xxh3-128:"+c.want {
			t.Errorf("xxh3-128 of %d bytes: %s, want xxh3-128:%s", len(c.in), got, c.want)
		}
	}
	// SHA-256 of the empty input (FIPS 180-4 test vector), for streams
	// before 3.0.
	if got := newTableHash(checksumSHA256).sum(); got != "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Errorf("sha256 of nothing: %s", got)
	}
}

// A stream names its checksum algorithm from 3.0 on; before, it has none
// and its checksums are SHA-256. A reader refuses an unknown algorithm, one
// named in an older stream, and a summary hashed with another algorithm
// than the header names.
func TestVerifyChecksumAlgorithm(t *testing.T) {
	order := []string{"a", "b", "empty"}
	for version, prefix := range map[string]string{"3.0": "xxh3-128:", "2.0": "sha256:", "1.2": "sha256:"} {
		sum, err := Verify(context.Background(), bytes.NewReader(buildStreamFormats(t, 100, version, sampleTables, nil, order)))
		if err != nil {
			t.Fatalf("verify %s: %v", version, err)
		}
		for _, ts := range sum.Tables {
			if !strings.HasPrefix(ts.Checksum, prefix) {
				t.Errorf("%s stream: table %s checksum %q, want %s...", version, ts.Name, ts.Checksum, prefix)
			}
		}
	}
	v3 := buildStreamFormats(t, 100, "3.0", sampleTables, nil, order)
	v2 := buildStreamFormats(t, 100, "2.0", sampleTables, nil, order)
	swap := func(stream []byte, old, new string) []byte {
		if !bytes.Contains(stream, []byte(old)) {
			t.Fatalf("stream holds no %q", old)
		}
		return bytes.Replace(bytes.Clone(stream), []byte(old), []byte(new), 1)
	}
	// Each swap keeps the member's length (the tar header records it).
	for name, c := range map[string]struct {
		stream []byte
		want   error
		msg    string
	}{
		"unknown algorithm":         {swap(v3, `"checksum": "xxh3-128"`, `"checksum": "md5"     `), ErrCorruptStream, `unknown checksum algorithm "md5"`},
		"algorithm in 2.0":          {swap(v3, `"version": "3.0"`, `"version": "2.0"`), ErrCorruptStream, "a checksum algorithm"},
		"3.0 without its algorithm": {swap(v2, `"version": "2.0"`, `"version": "3.0"`), ErrCorruptStream, "names no checksum algorithm"},
		"header sha256, sums xxh3":  {swap(v3, `"checksum": "xxh3-128"`, `"checksum": "sha256"  `), ErrChecksumMismatch, "hashes to sha256:"},
	} {
		_, err := Verify(context.Background(), bytes.NewReader(c.stream))
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want %v saying %q", name, err, c.want, c.msg)
		}
	}
}
