package harness

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/retry"
)

// ImageFile is one entry of a test image's layer.
type ImageFile struct {
	// Path is the absolute path in the image.
	Path string
	// Mode holds the permission bits; fs.ModeDir makes a directory and
	// fs.ModeSymlink a symbolic link to Target.
	Mode   fs.FileMode
	Target string
	// Data is a regular file's content, or Source names the host file that
	// holds it.
	Data   []byte
	Source string
	// UID and GID own the entry (0: root).
	UID, GID int
}

// ImageConfig is the part of an image's configuration the tests set.
type ImageConfig struct {
	Entrypoint, Cmd, Env []string
	User, WorkingDir     string
	Labels               map[string]string
}

// Image is a container image built here from files, never pulled: one
// uncompressed layer, an OCI config and manifest. Built the same way from
// the same files, it has the same digest.
type Image struct {
	Manifest     []byte
	ManifestDesc ocispec.Descriptor
	config       []byte
	configDesc   ocispec.Descriptor
	layerFile    string
	layerDesc    ocispec.Descriptor
}

// Digest is the image's manifest digest.
func (i *Image) Digest() string { return i.ManifestDesc.Digest.String() }

// BuildImage writes the layer of files into dir and returns the image.
// Parent directories are added (root-owned, 0755) where files does not
// list them; entries are written in path order with a fixed time.
func BuildImage(dir string, cfg ImageConfig, files []ImageFile) (*Image, error) {
	byPath := map[string]ImageFile{}
	for _, f := range files {
		if !path.IsAbs(f.Path) {
			return nil, fmt.Errorf("image file %q: path must be absolute", f.Path)
		}
		f.Path = path.Clean(f.Path)
		byPath[f.Path] = f
		for d := path.Dir(f.Path); d != "/"; d = path.Dir(d) {
			if _, ok := byPath[d]; !ok {
				byPath[d] = ImageFile{Path: d, Mode: fs.ModeDir | 0o755}
			}
		}
	}
	paths := make([]string, 0, len(byPath))
	for p := range byPath {
		paths = append(paths, p)
	}
	sort.Strings(paths)

	layer, err := os.CreateTemp(dir, "layer-*.tar")
	if err != nil {
		return nil, err
	}
	defer layer.Close()
	h := sha256.New()
	tw := tar.NewWriter(io.MultiWriter(layer, h))
	epoch := time.Unix(0, 0)
	for _, p := range paths {
		f := byPath[p]
		hdr := &tar.Header{Name: strings.TrimPrefix(p, "/"), Mode: int64(f.Mode.Perm()), Uid: f.UID, Gid: f.GID, ModTime: epoch, Format: tar.FormatPAX}
		var body io.Reader
		switch {
		case f.Mode&fs.ModeDir != 0:
			hdr.Typeflag, hdr.Name = tar.TypeDir, hdr.Name+"/"
		case f.Mode&fs.ModeSymlink != 0:
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, f.Target
		case f.Source != "":
			src, err := os.Open(f.Source)
			if err != nil {
				return nil, fmt.Errorf("image file %s: %w", p, err)
			}
			defer src.Close()
			st, err := src.Stat()
			if err != nil {
				return nil, err
			}
			hdr.Typeflag, hdr.Size, body = tar.TypeReg, st.Size(), src
		default:
			hdr.Typeflag, hdr.Size, body = tar.TypeReg, int64(len(f.Data)), bytes.NewReader(f.Data)
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if body != nil {
			if _, err := io.Copy(tw, body); err != nil {
				return nil, fmt.Errorf("image file %s: %w", p, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	st, err := layer.Stat()
	if err != nil {
		return nil, err
	}
	diffID := digest.NewDigestFromEncoded(digest.SHA256, hex.EncodeToString(h.Sum(nil)))
	img := &Image{layerFile: layer.Name(), layerDesc: ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayer, Digest: diffID, Size: st.Size()}}

	created := epoch
	config := ocispec.Image{
		Created:  &created,
		Platform: ocispec.Platform{OS: "linux", Architecture: runtime.GOARCH},
		Config: ocispec.ImageConfig{Entrypoint: cfg.Entrypoint, Cmd: cfg.Cmd, Env: cfg.Env, User: cfg.User,
			WorkingDir: cfg.WorkingDir, Labels: cfg.Labels},
		RootFS: ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{diffID}},
	}
	if img.config, err = json.Marshal(config); err != nil {
		return nil, err
	}
	img.configDesc = ocispec.Descriptor{MediaType: ocispec.MediaTypeImageConfig, Digest: digest.FromBytes(img.config), Size: int64(len(img.config))}
	manifest := ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
		Config: img.configDesc, Layers: []ocispec.Descriptor{img.layerDesc}}
	if img.Manifest, err = json.Marshal(manifest); err != nil {
		return nil, err
	}
	img.ManifestDesc = ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(img.Manifest), Size: int64(len(img.Manifest))}
	return img, nil
}

// WriteArchive writes the image as an OCI layout tar whose index names it
// refName (what `ctr images import` registers).
func (i *Image) WriteArchive(file, refName string) error {
	out, err := os.Create(file)
	if err != nil {
		return err
	}
	defer out.Close()
	tw := tar.NewWriter(out)
	add := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	desc := i.ManifestDesc
	desc.Annotations = map[string]string{ocispec.AnnotationRefName: refName, "io.containerd.image.name": refName}
	index, err := json.Marshal(ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{desc}})
	if err != nil {
		return err
	}
	layout, _ := json.Marshal(ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion})
	blob := func(d digest.Digest) string { return "blobs/sha256/" + d.Encoded() }
	for _, f := range []struct {
		name string
		data []byte
	}{{ocispec.ImageLayoutFile, layout}, {"index.json", index}, {blob(i.ManifestDesc.Digest), i.Manifest}, {blob(i.configDesc.Digest), i.config}} {
		if err := add(f.name, f.data); err != nil {
			return err
		}
	}
	layer, err := os.Open(i.layerFile)
	if err != nil {
		return err
	}
	defer layer.Close()
	if err := tw.WriteHeader(&tar.Header{Name: blob(i.layerDesc.Digest), Mode: 0o644, Size: i.layerDesc.Size, Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := io.Copy(tw, layer); err != nil {
		return err
	}
	return tw.Close()
}

// Push pushes the image to reg as repo:tag (skipping blobs the registry
// has) and returns REGISTRY/REPO@DIGEST.
func (i *Image) Push(ctx context.Context, reg *Registry, repo, tag string) (string, error) {
	r, err := remote.NewRepository(reg.Host + "/" + repo)
	if err != nil {
		return "", err
	}
	r.PlainHTTP = reg.PlainHTTP
	client := &auth.Client{Client: retry.DefaultClient, Cache: auth.NewCache()}
	if reg.CAFile != "" {
		hc, err := httpsClientFor(reg.CAFile)
		if err != nil {
			return "", err
		}
		client.Client = hc
	}
	if reg.Username != "" {
		client.Credential = auth.StaticCredential(reg.Host, auth.Credential{Username: reg.Username, Password: reg.Password})
	}
	r.Client = client
	push := func(desc ocispec.Descriptor, open func() (io.ReadCloser, error)) error {
		if ok, err := r.Exists(ctx, desc); err == nil && ok {
			return nil
		}
		rc, err := open()
		if err != nil {
			return err
		}
		defer rc.Close()
		return r.Push(ctx, desc, rc)
	}
	bytesOf := func(b []byte) func() (io.ReadCloser, error) {
		return func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	if err := push(i.layerDesc, func() (io.ReadCloser, error) { return os.Open(i.layerFile) }); err != nil {
		return "", fmt.Errorf("push layer of %s: %w", repo, err)
	}
	if err := push(i.configDesc, bytesOf(i.config)); err != nil {
		return "", fmt.Errorf("push config of %s: %w", repo, err)
	}
	if err := r.PushReference(ctx, i.ManifestDesc, bytes.NewReader(i.Manifest), tag); err != nil {
		return "", fmt.Errorf("push manifest %s:%s: %w", repo, tag, err)
	}
	return reg.Host + "/" + repo + "@" + i.Digest(), nil
}

// HostFiles lists a host directory tree as image files under dest:
// directories, regular files (by Source) and symbolic links, with their
// permission bits, owned by root.
func HostFiles(src, dest string) ([]ImageFile, error) {
	var files []ImageFile
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := path.Join(dest, filepath.ToSlash(rel))
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			files = append(files, ImageFile{Path: target, Mode: fs.ModeDir | info.Mode().Perm()})
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			files = append(files, ImageFile{Path: target, Mode: fs.ModeSymlink | 0o777, Target: link})
		case d.Type().IsRegular():
			files = append(files, ImageFile{Path: target, Mode: info.Mode().Perm(), Source: p})
		}
		return nil
	})
	return files, err
}

// SharedLibraries lists the shared libraries the dynamically linked
// binaries load (as ldd resolves them with env), the dynamic loader
// included, as image files at their host paths; the host's C library then
// runs in the image.
func SharedLibraries(env []string, binaries ...string) ([]ImageFile, error) {
	seen := map[string]bool{}
	var files []ImageFile
	for _, bin := range binaries {
		cmd := exec.Command("ldd", bin)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("ldd %s: %w", bin, err)
		}
		for _, line := range strings.Split(string(out), "\n") {
			fields := strings.Fields(line)
			var lib string
			switch {
			case len(fields) >= 3 && fields[1] == "=>" && strings.HasPrefix(fields[2], "/"):
				lib = fields[2]
			case len(fields) >= 1 && strings.HasPrefix(fields[0], "/"):
				lib = fields[0] // the loader
			case strings.Contains(line, "not found"):
				return nil, fmt.Errorf("ldd %s: %s", bin, strings.TrimSpace(line))
			}
			if lib == "" || seen[lib] {
				continue
			}
			seen[lib] = true
			real, err := filepath.EvalSymlinks(lib)
			if err != nil {
				return nil, err
			}
			files = append(files, ImageFile{Path: lib, Mode: 0o755, Source: real})
		}
	}
	return files, nil
}
