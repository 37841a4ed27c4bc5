package resources

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Limits that keep a hostile layer from exhausting memory: resources are small.
const (
	maxEntryBytes = 16 << 20
	maxTotalBytes = 256 << 20
	maxObjects    = 100000
)

// epoch dates every tar entry, so equal objects give equal bytes.
var epoch = time.Unix(0, 0).UTC()

// writeObjects stores each object as pretty JSON, in the given order.
func writeObjects(w io.Writer, objs []*unstructured.Unstructured) (*Summary, error) {
	tw := tar.NewWriter(w)
	sum := &Summary{From: FromClusterName, Kinds: map[string]int{}}
	nss := map[string]bool{}
	for i, o := range objs {
		b, err := json.MarshalIndent(o.Object, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("encode %s %s: %w", o.GetKind(), o.GetName(), err)
		}
		// A numeric prefix keeps the restore order in the tar order.
		name := entryName(o)
		name = fmt.Sprintf("%s%05d-%s", clusterPrefix, i, strings.TrimPrefix(name, clusterPrefix))
		if err := writeEntry(tw, name, append(b, '\n')); err != nil {
			return nil, err
		}
		sum.Objects++
		sum.Kinds[o.GetKind()]++
		if ns := o.GetNamespace(); ns != "" {
			nss[ns] = true
		}
	}
	sum.Namespaces = slices.Sorted(maps.Keys(nss))
	return sum, tw.Close()
}

func writeEntry(tw *tar.Writer, name string, b []byte) error {
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o600, Size: int64(len(b)), ModTime: epoch, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err := tw.Write(b)
	return err
}

// DirSource stores the agent-based installer's manifest files (*.yaml, *.yml,
// *.json under Dir, e.g. cluster-manifests/ and mirror/) as they are.
type DirSource struct {
	Dir string
	// LocalAuth, when set, is node 0's local-auth key as a Secret named
	// LocalAuthSecretName (see LocalAuthSecret), stored after the manifests
	// as an object under cluster/: the restore takes it out of the objects
	// (never applies it) and makes it cluster 0's key. Only an encrypted
	// layer may hold it.
	LocalAuth *unstructured.Unstructured
}

// LocalAuthSource is a resources layer that holds only node 0's local-auth
// key (a node 0 without API and without manifests to bundle). Its Summary
// says From "local-auth".
type LocalAuthSource struct {
	Secret *unstructured.Unstructured
}

// Write stores the Secret as the layer's one object.
func (s *LocalAuthSource) Write(ctx context.Context, w io.Writer) (*Summary, error) {
	if err := checkLocalAuthSecret(s.Secret); err != nil {
		return nil, err
	}
	sum, err := writeObjects(w, []*unstructured.Unstructured{s.Secret})
	if err != nil {
		return nil, err
	}
	sum.From = FromLocalAuthName
	return sum, nil
}

// LocalAuthSecret is node 0's local-auth key pair (PEM) as the Secret the
// operator writes (agentserviceconfig_controller.go newAgentLocalAuthSecret:
// data ec-private-key.pem and ec-public-key.pem), without a namespace.
func LocalAuthSecret(privatePEM, publicPEM []byte) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
		"metadata": map[string]any{"name": LocalAuthSecretName},
		"data": map[string]any{
			"ec-private-key.pem": base64.StdEncoding.EncodeToString(privatePEM),
			"ec-public-key.pem":  base64.StdEncoding.EncodeToString(publicPEM),
		},
	}}
}

func checkLocalAuthSecret(o *unstructured.Unstructured) error {
	if o == nil || o.GetKind() != "Secret" || o.GetAPIVersion() != "v1" || o.GetName() != LocalAuthSecretName {
		return fmt.Errorf("the local-auth object must be a v1 Secret named %s", LocalAuthSecretName)
	}
	return nil
}

// Write stores the files under manifests/ in the tar, in lexical order; each
// must parse as Kubernetes objects.
func (s *DirSource) Write(ctx context.Context, w io.Writer) (*Summary, error) {
	tw := tar.NewWriter(w)
	sum := &Summary{From: FromManifestsName, Kinds: map[string]int{}}
	nss := map[string]bool{}
	err := filepath.WalkDir(s.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !d.Type().IsRegular() || !manifestFile(p) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(s.Dir, p)
		objs, err := decodeDocuments(b)
		if err != nil {
			return fmt.Errorf("manifest %s: %w", rel, err)
		}
		for _, o := range objs {
			sum.Objects++
			sum.Kinds[o.GetKind()]++
			if ns := o.GetNamespace(); ns != "" {
				nss[ns] = true
			}
		}
		return writeEntry(tw, manifestsPrefix+filepath.ToSlash(rel), b)
	})
	if err != nil {
		return nil, fmt.Errorf("manifests directory: %w", err)
	}
	if s.LocalAuth != nil {
		if err := checkLocalAuthSecret(s.LocalAuth); err != nil {
			return nil, err
		}
		b, err := json.MarshalIndent(s.LocalAuth.Object, "", "  ")
		if err != nil {
			return nil, err
		}
		// Under cluster/, apart from the manifests: a reader that builds
		// CRs from manifests/ never sees it as one.
		if err := writeEntry(tw, fmt.Sprintf("%s%05d-%s", clusterPrefix, 0, strings.TrimPrefix(entryName(s.LocalAuth), clusterPrefix)), append(b, '\n')); err != nil {
			return nil, err
		}
		sum.Objects++
		sum.Kinds["Secret"]++
	}
	sum.Namespaces = slices.Sorted(maps.Keys(nss))
	return sum, tw.Close()
}

func manifestFile(p string) bool {
	switch strings.ToLower(filepath.Ext(p)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// FormatError is a resources layer that does not decode.
type FormatError struct {
	Entry string
	Err   error
}

func (e *FormatError) Error() string {
	if e.Entry == "" {
		return "resources layer: " + e.Err.Error()
	}
	return fmt.Sprintf("resources layer entry %q: %v", e.Entry, e.Err)
}
func (e *FormatError) Unwrap() error { return e.Err }

// Decode reads a resources layer and returns its objects in stored order
// (exported objects are stored in restore order). Every entry must be a
// regular file under cluster/ or manifests/ holding JSON or YAML objects with
// apiVersion and kind. Decode reads r to its end, so a verifying reader below
// reports a bad digest as the error.
func Decode(r io.Reader) (objs []*unstructured.Unstructured, err error) {
	defer func() {
		if err != nil {
			if _, derr := io.Copy(io.Discard, r); derr != nil {
				err = derr // the stream below failed (an altered blob): the cause
			}
		}
	}()
	tr := tar.NewReader(r)
	var out []*unstructured.Unstructured
	var total int64
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, &FormatError{Err: err}
		}
		if hdr.Typeflag != tar.TypeReg {
			return nil, &FormatError{Entry: hdr.Name, Err: fmt.Errorf("entry type %q: only regular files are allowed", hdr.Typeflag)}
		}
		if !strings.HasPrefix(hdr.Name, clusterPrefix) && !strings.HasPrefix(hdr.Name, manifestsPrefix) {
			return nil, &FormatError{Entry: hdr.Name, Err: errors.New("entries live under cluster/ or manifests/")}
		}
		if hdr.Size > maxEntryBytes {
			return nil, &FormatError{Entry: hdr.Name, Err: fmt.Errorf("%d bytes is over the %d limit", hdr.Size, maxEntryBytes)}
		}
		if total += hdr.Size; total > maxTotalBytes {
			return nil, &FormatError{Err: fmt.Errorf("more than %d bytes of objects", maxTotalBytes)}
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, &FormatError{Entry: hdr.Name, Err: err}
		}
		objs, err := decodeDocuments(b)
		if err != nil {
			return nil, &FormatError{Entry: hdr.Name, Err: err}
		}
		if len(out)+len(objs) > maxObjects {
			return nil, &FormatError{Err: fmt.Errorf("more than %d objects", maxObjects)}
		}
		out = append(out, objs...)
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		return nil, err
	}
	return out, nil
}

// decodeDocuments parses one file: a JSON object, or YAML with one or more
// documents; empty documents are skipped, List kinds are flattened.
func decodeDocuments(b []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bufio.NewReader(bytes.NewReader(b)), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		o := &unstructured.Unstructured{Object: m}
		if o.GetAPIVersion() == "" || o.GetKind() == "" {
			return nil, errors.New("a document has no apiVersion or kind")
		}
		if o.IsList() {
			err := o.EachListItem(func(item runtime.Object) error {
				u, ok := item.(*unstructured.Unstructured)
				if !ok || u.GetAPIVersion() == "" || u.GetKind() == "" {
					return errors.New("a list item has no apiVersion or kind")
				}
				out = append(out, u)
				return nil
			})
			if err != nil {
				return nil, err
			}
			continue
		}
		out = append(out, o)
	}
}
