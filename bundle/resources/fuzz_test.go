package resources

import (
	"archive/tar"
	"bytes"
	"testing"
)

// FuzzDecode feeds arbitrary tars to Decode: no panic, and every object
// returned has apiVersion and kind.
func FuzzDecode(f *testing.F) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	doc := []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n")
	tw.WriteHeader(&tar.Header{Name: "manifests/a.yaml", Typeflag: tar.TypeReg, Size: int64(len(doc))})
	tw.Write(doc)
	tw.Close()
	f.Add(b.Bytes())
	f.Add([]byte("not a tar"))
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := Decode(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, o := range objs {
			if o.GetAPIVersion() == "" || o.GetKind() == "" {
				t.Fatalf("object without apiVersion/kind: %v", o.Object)
			}
		}
	})
}
