package oci

import "testing"

func TestParseReference(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Reference
		wantErr bool
	}{
		{"registry with tag", "registry.example.com:5000/a/b:v1", Reference{Transport: TransportRegistry, Registry: "registry.example.com:5000", Repository: "a/b", Tag: "v1"}, false},
		{"registry default tag", "localhost/x", Reference{Transport: TransportRegistry, Registry: "localhost", Repository: "x", Tag: "latest"}, false},
		{"docker transport", "docker://127.0.0.1:5000/x:y", Reference{Transport: TransportRegistry, Registry: "127.0.0.1:5000", Repository: "x", Tag: "y"}, false},
		{"registry digest", "q.io/x@sha256:" + zeros, Reference{Transport: TransportRegistry, Registry: "q.io", Repository: "x", Digest: "sha256:" + zeros}, false},
		{"layout with tag", "oci:/tmp/dir:v1", Reference{Transport: TransportLayout, Path: "/tmp/dir", Tag: "v1"}, false},
		{"layout without tag", "oci:dir", Reference{Transport: TransportLayout, Path: "dir"}, false},
		{"archive", "oci-archive:b.tar:t", Reference{Transport: TransportArchive, Path: "b.tar", Tag: "t"}, false},
		{"no host", "assisted/node0:v1", Reference{}, true},
		{"empty", "", Reference{}, true},
		{"empty layout path", "oci::v1", Reference{}, true},
		{"bad tag", "oci:dir:-bad", Reference{}, true},
		{"other transport", "containers-storage://x", Reference{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseReference(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			if err == nil && got.Transport != TransportRegistry {
				if back, _ := ParseReference(got.String()); back != got {
					t.Fatalf("String() %q does not parse back", got.String())
				}
			}
		})
	}
}

const zeros = "0000000000000000000000000000000000000000000000000000000000000000"
