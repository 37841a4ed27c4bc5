package bundle

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"filippo.io/age"
	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/files"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/oci"
)

// FilesOptions select the file storage to bundle.
type FilesOptions struct {
	// Dir is assisted-service's data directory (/data on node 0).
	Dir string
	// Exclude are path.Match patterns relative to Dir; nil means
	// files.DefaultExcludes.
	Exclude []string
}

// CreateOptions say what goes into a bundle. A nil source leaves its layer out.
type CreateOptions struct {
	Database  DatabaseSource
	Files     *FilesOptions
	Resources ResourcesSource
	// Recipients encrypt every layer; empty writes plaintext layers (the
	// caller decides whether that is allowed for the target).
	Recipients []age.Recipient
	// Created is the creation time; zero means now. With equal input, an equal
	// Created and no recipients, two bundles have equal digests.
	Created time.Time
	// Creator names the tool and version, e.g. "kubectl-assisted v1.2.0".
	Creator string
	// AssistedServiceImage goes into the metadata when known.
	AssistedServiceImage string
	Progress             Progress
}

// Result describes a written bundle; its json form is part of `bundle create -o json`.
type Result struct {
	Reference string        `json:"reference"`
	Digest    string        `json:"digest"`
	MediaType string        `json:"mediaType"`
	Size      int64         `json:"size"`
	Layers    []LayerResult `json:"layers"`
	Metadata  *Metadata     `json:"metadata"`
	Duration  time.Duration `json:"-"`
}

// LayerResult is one written layer.
type LayerResult struct {
	Kind      LayerKind `json:"kind"`
	MediaType string    `json:"mediaType"`
	Digest    string    `json:"digest"`
	// Size is the stored (compressed, encrypted) size; PlainBytes before that.
	Size       int64         `json:"size"`
	PlainBytes int64         `json:"plainBytes"`
	Duration   time.Duration `json:"-"`
}

// Create writes a bundle to ref ("HOST/REPO:TAG", "oci:DIR:TAG",
// "oci-archive:FILE:TAG").
func Create(ctx context.Context, ref string, reg oci.RegistryOptions, opts CreateOptions) (*Result, error) {
	r, err := oci.ParseReference(ref)
	if err != nil {
		return nil, err
	}
	w, err := oci.NewWriter(ctx, r, reg)
	if err != nil {
		return nil, err
	}
	res, err := Write(ctx, w, opts)
	if err != nil {
		w.Abort()
		return nil, err
	}
	if err := w.Close(); err != nil {
		w.Abort()
		return nil, err
	}
	res.Reference = r.String()
	return res, nil
}

// Write streams every layer through zstd (and age) into w, then the metadata
// and the manifest. Each layer's producer runs in its own goroutine, joined to
// the upload by a pipe: nothing is buffered beyond the codecs' windows and the
// upload chunks, whatever the data size.
func Write(ctx context.Context, w oci.Writer, opts CreateOptions) (*Result, error) {
	start := time.Now()
	created := opts.Created
	if created.IsZero() {
		created = time.Now()
	}
	created = created.UTC().Truncate(time.Second)
	p := progressOrNop(opts.Progress)
	encrypted := len(opts.Recipients) > 0
	meta := &Metadata{
		FormatVersion: FormatVersion,
		Created:       created,
		Creator:       opts.Creator,
		Source:        Source{AssistedServiceImage: opts.AssistedServiceImage},
		Encryption:    EncryptionInfo{Scheme: EncryptionNone},
	}
	if encrypted {
		meta.Encryption.Scheme = EncryptionAge
		for _, r := range opts.Recipients {
			fp, err := RecipientFingerprint(r)
			if err != nil {
				return nil, err
			}
			meta.Encryption.Recipients = append(meta.Encryption.Recipients, fp)
		}
		sort.Strings(meta.Encryption.Recipients)
	}

	res := &Result{Metadata: meta}
	var layers []ocispec.Descriptor
	clusterIDs := map[string]bool{}
	add := func(kind LayerKind, produce func(io.Writer) error) error {
		lr, desc, err := writeLayer(ctx, w, kind, opts.Recipients, p, produce)
		if err != nil {
			return err
		}
		layers = append(layers, desc)
		res.Layers = append(res.Layers, *lr)
		return nil
	}

	if opts.Database != nil {
		err := add(LayerDatabase, func(lw io.Writer) error {
			cw := &countWriter{w: lw}
			sum, err := opts.Database.Dump(ctx, cw)
			if err != nil {
				return fmt.Errorf("dump database: %w", err)
			}
			if sum == nil {
				return errors.New("dump database: the engine returned no summary")
			}
			meta.Database = &DatabaseInfo{Tables: sum.Tables, Bytes: cw.n}
			meta.Source.PostgresVersion, meta.Source.LastMigration = sum.ServerVersion, sum.LastMigration
			for _, id := range sum.ClusterIDs {
				clusterIDs[id] = true
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if opts.Files != nil {
		exclude := opts.Files.Exclude
		if exclude == nil {
			exclude = files.DefaultExcludes
		}
		err := add(LayerFiles, func(lw io.Writer) error {
			id := "read " + string(LayerFiles)
			p.Start(id, "read files", 0)
			sum, err := files.Write(ctx, lw, opts.Files.Dir, files.WriteOptions{
				Exclude: exclude,
				OnBytes: func(n int64) { p.Add(id, n) },
			})
			p.Done(id, err)
			if err != nil {
				return fmt.Errorf("files: %w", err)
			}
			meta.Files = &FilesInfo{Files: sum.Files, Dirs: sum.Dirs, Symlinks: sum.Symlinks, HardLinks: sum.HardLinks, Bytes: sum.Bytes, Excluded: exclude}
			for _, id := range sum.ClusterIDs {
				clusterIDs[id] = true
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if opts.Resources != nil {
		err := add(LayerResources, func(lw io.Writer) error {
			sum, err := opts.Resources.Write(ctx, lw)
			if err != nil {
				return fmt.Errorf("resources: %w", err)
			}
			meta.Resources = &ResourcesInfo{From: sum.From, Namespaces: sum.Namespaces, Objects: sum.Objects, Kinds: sum.Kinds}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	for id := range clusterIDs {
		meta.Source.ClusterIDs = append(meta.Source.ClusterIDs, id)
	}
	sort.Strings(meta.Source.ClusterIDs)

	cfg, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	cfgDesc, err := w.PushBytes(ctx, ConfigMediaType, cfg)
	if err != nil {
		return nil, fmt.Errorf("push metadata: %w", err)
	}
	man := ocispec.Manifest{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: ArtifactType,
		Config:       cfgDesc,
		Layers:       layers,
		Annotations: map[string]string{
			ocispec.AnnotationCreated: created.Format(time.RFC3339),
			AnnotationFormatVersion:   FormatVersion,
		},
	}
	if man.Layers == nil {
		man.Layers = []ocispec.Descriptor{} // the spec wants an array, even empty
	}
	mb, err := json.Marshal(man)
	if err != nil {
		return nil, err
	}
	mdesc, err := w.PushManifest(ctx, ocispec.MediaTypeImageManifest, mb)
	if err != nil {
		return nil, err
	}
	res.Digest, res.MediaType, res.Size = mdesc.Digest.String(), mdesc.MediaType, mdesc.Size
	res.Duration = time.Since(start)
	return res, nil
}

// writeLayer runs produce in a goroutine that writes through zstd and age into
// a pipe, and pushes the pipe's other end as one blob.
func writeLayer(ctx context.Context, w oci.Writer, kind LayerKind, recipients []age.Recipient, p Progress, produce func(io.Writer) error) (*LayerResult, ocispec.Descriptor, error) {
	start := time.Now()
	encrypted := len(recipients) > 0
	pr, pw := io.Pipe()
	produced := make(chan error, 1)
	var plain int64
	go func() {
		lw, err := newLayerWriter(pw, recipients)
		if err == nil {
			err = produce(lw)
			if cerr := lw.Close(); err == nil {
				err = cerr
			}
			plain = lw.raw
		}
		pw.CloseWithError(err) // nil closes with io.EOF
		produced <- err
	}()
	id := "push " + string(kind)
	p.Start(id, "push "+string(kind), 0)
	desc, err := w.PushStream(ctx, kind.MediaType(encrypted), &countingReader{r: pr, p: p, id: id})
	if err != nil {
		pr.CloseWithError(err) // unblock the producer
	}
	perr := <-produced
	if perr != nil {
		err = perr // the producer's failure is the root cause
	}
	p.Done(id, err)
	if err != nil {
		return nil, ocispec.Descriptor{}, fmt.Errorf("%s layer: %w", kind, err)
	}
	desc.Annotations = map[string]string{
		ocispec.AnnotationTitle: kind.title(encrypted),
		AnnotationLayer:         string(kind),
		AnnotationEncryption:    map[bool]string{true: EncryptionAge, false: EncryptionNone}[encrypted],
	}
	return &LayerResult{Kind: kind, MediaType: desc.MediaType, Digest: desc.Digest.String(), Size: desc.Size, PlainBytes: plain, Duration: time.Since(start)}, desc, nil
}

// RecipientFingerprint is "sha256:" and the first 16 bytes, in hex, of the
// SHA-256 of the recipient's string form (age1...). It lets `bundle inspect`
// say who can decrypt, and `bundle verify` tell a wrong identity before any
// download, without the metadata listing keys.
func RecipientFingerprint(r age.Recipient) (string, error) {
	s, ok := r.(fmt.Stringer)
	if !ok {
		return "", fmt.Errorf("age recipient of type %T has no string form", r)
	}
	sum := sha256.Sum256([]byte(s.String()))
	return "sha256:" + hex.EncodeToString(sum[:16]), nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
