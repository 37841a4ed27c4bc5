package bundle

import (
	"context"
	"crypto"
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
	"oras.land/oras-go/v2/content"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/internal/pipe"
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
	// Spool makes a push to a registry resumable (see SpoolOptions); it is
	// not used for local targets.
	Spool SpoolOptions
	// PartSize is the plaintext of one part of the files layer (format
	// 1.2: parts are uploaded side by side); zero means DefaultPartSize.
	PartSize int64
	// SigningKey signs the manifest (bundle/sign: cosign's key-pair
	// signature, stored as a referrer); nil leaves the bundle unsigned.
	SigningKey crypto.Signer

	// dockerRef is the repository the signature's payload names (Create).
	dockerRef string
}

// Result describes a written bundle; its json form is part of `bundle create -o json`.
type Result struct {
	Reference string        `json:"reference"`
	Digest    string        `json:"digest"`
	MediaType string        `json:"mediaType"`
	Size      int64         `json:"size"`
	Layers    []LayerResult `json:"layers"`
	Metadata  *Metadata     `json:"metadata"`
	// Spool is what the spool did, when there was one.
	Spool *SpoolReport `json:"spool,omitempty"`
	// Signer is the fingerprint of the key that signed the bundle.
	Signer   string        `json:"signer,omitempty"`
	Duration time.Duration `json:"-"`
}

// LayerResult is one written layer.
type LayerResult struct {
	Kind      LayerKind `json:"kind"`
	MediaType string    `json:"mediaType"`
	Digest    string    `json:"digest"`
	// Size is the stored (compressed, encrypted) size; PlainBytes before that.
	Size       int64 `json:"size"`
	PlainBytes int64 `json:"plainBytes"`
	// Reused says how a layer an earlier, interrupted run spooled was used
	// instead of producing it again (see SpoolReuse.How); empty otherwise.
	Reused string `json:"reused,omitempty"`
	// Parts lists the blobs of a layer written in several parts (the files
	// layer beyond one part's size); Digest is then the first part's, Size
	// and PlainBytes the sums.
	Parts    []PartResult  `json:"parts,omitempty"`
	Duration time.Duration `json:"-"`
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
	if r.Remote() {
		opts.dockerRef = r.Registry + "/" + r.Repository
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
// and the manifest. Producing, compressing, encrypting, hashing and storing
// run as a pipeline of goroutines joined by a few buffers: memory stays flat
// whatever the data size. With opts.Spool and a registry writer, layers are
// spooled and reused as described at SpoolOptions.
func Write(ctx context.Context, w oci.Writer, opts CreateOptions) (res *Result, err error) {
	start := time.Now()
	var sp *spool
	if _, ok := w.(oci.Resumer); ok && opts.Spool.Dir != "" {
		if sp, err = openSpool(opts.Spool.Dir); err != nil {
			return nil, err
		}
		defer func() { sp.release(err == nil) }()
	}
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

	res = &Result{Metadata: meta}
	if sp != nil {
		res.Spool = &SpoolReport{Dir: sp.dir}
	}
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
			cw := &pipe.CountingWriter{W: lw}
			sum, err := opts.Database.Dump(ctx, cw)
			if err != nil {
				return fmt.Errorf("dump database: %w", err)
			}
			if sum == nil {
				return errors.New("dump database: the engine returned no summary")
			}
			meta.Database = &DatabaseInfo{Tables: sum.Tables, Bytes: cw.N}
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
		lr, descs, ids, err := writeFilesLayer(ctx, w, sp, opts, p, meta, res.Spool)
		if err != nil {
			return nil, err
		}
		layers = append(layers, descs...)
		res.Layers = append(res.Layers, *lr)
		for _, id := range ids {
			clusterIDs[id] = true
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
	if opts.SigningKey != nil {
		if res.Signer, err = signBundle(ctx, w, opts.SigningKey, content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, mb), opts.dockerRef); err != nil {
			return nil, err
		}
	}
	mdesc, err := w.PushManifest(ctx, ocispec.MediaTypeImageManifest, mb)
	if err != nil {
		return nil, err
	}
	res.Digest, res.MediaType, res.Size = mdesc.Digest.String(), mdesc.MediaType, mdesc.Size
	res.Duration = time.Since(start)
	return res, nil
}

// writeParts runs produce into a partsWriter: parts spooled to files and
// uploaded side by side when ls gives files, else streamed one after the
// other. With a spool record (ls.save), the layer is recorded once every part
// is whole, and again with the upload sessions of the parts that failed.
func writeParts(ctx context.Context, w oci.Writer, kind LayerKind, recipients []age.Recipient, partSize int64, p Progress, produce func(io.Writer) error, ls layerSpool) (*LayerResult, []ocispec.Descriptor, error) {
	start := time.Now()
	encrypted := len(recipients) > 0
	id := "push " + string(kind)
	p.Start(id, "push "+string(kind), 0)
	pw, err := newPartsWriter(ctx, w, kind.MediaType(encrypted), recipients, partSize, ls.partFile, ls.keep, func(n int64) { p.Add(id, n) })
	if err != nil {
		p.Done(id, err)
		return nil, nil, fmt.Errorf("%s layer: %w", kind, err)
	}
	err = produce(pw)
	if err == nil {
		err = pw.Close()
	}
	err = pw.cause(err)
	if err != nil {
		pw.abort()
		p.Done(id, err)
		return nil, nil, fmt.Errorf("%s layer: %w", kind, err)
	}
	saved := false
	if ls.save != nil && ls.keep {
		// Every part is whole in the spool: a run killed while the
		// uploads catch up can still be resumed.
		saved = ls.save(pw.records(), pw.raw, true) == nil
	}
	err = pw.wait()
	if ls.save != nil {
		switch {
		case err == nil && !saved:
			// Not spooled (plaintext, or no room): the record alone lets a
			// rerun skip the layer when the registry has it.
			saved = ls.save(pw.records(), pw.raw, false) == nil
		case err != nil && saved:
			saved = ls.save(pw.records(), pw.raw, true) == nil // where to resume
		}
	}
	p.Done(id, err)
	if err != nil {
		if saved && ls.keep {
			err = fmt.Errorf("%w (the layer is spooled: run the same command again to resume the push)", err)
		}
		return nil, nil, fmt.Errorf("%s layer: %w", kind, err)
	}
	descs := layerDescriptors(kind, encrypted, pw.descriptors())
	return layerResult(kind, descs, pw.records(), time.Since(start)), descs, nil
}

// layerResult sums a layer's parts.
func layerResult(kind LayerKind, descs []ocispec.Descriptor, parts []spoolPart, d time.Duration) *LayerResult {
	lr := &LayerResult{Kind: kind, MediaType: descs[0].MediaType, Digest: descs[0].Digest.String(), Parts: partResults(parts), Duration: d}
	for _, p := range parts {
		lr.Size += p.Descriptor.Size
		lr.PlainBytes += p.PlainBytes
	}
	return lr
}

// writeLayer runs produce into zstd (and age) and a blob of w.
func writeLayer(ctx context.Context, w oci.Writer, kind LayerKind, recipients []age.Recipient, p Progress, produce func(io.Writer) error) (*LayerResult, ocispec.Descriptor, error) {
	start := time.Now()
	encrypted := len(recipients) > 0
	id := "push " + string(kind)
	p.Start(id, "push "+string(kind), 0)
	bw, err := w.NewBlob(ctx, kind.MediaType(encrypted), oci.BlobOptions{OnUpload: func(n int64) { p.Add(id, n) }})
	if err != nil {
		p.Done(id, err)
		return nil, ocispec.Descriptor{}, fmt.Errorf("%s layer: %w", kind, err)
	}
	lw, err := newLayerWriter(bw, kind, recipients)
	if err == nil {
		err = produce(lw)
		if cerr := lw.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		bw.Abort()
		p.Done(id, err)
		return nil, ocispec.Descriptor{}, fmt.Errorf("%s layer: %w", kind, err)
	}
	desc, err := bw.Commit()
	p.Done(id, err)
	if err != nil {
		return nil, ocispec.Descriptor{}, fmt.Errorf("%s layer: %w", kind, err)
	}
	desc.Annotations = layerAnnotations(kind, encrypted)
	return &LayerResult{Kind: kind, MediaType: desc.MediaType, Digest: desc.Digest.String(), Size: desc.Size, PlainBytes: lw.Plain(), Duration: time.Since(start)}, desc, nil
}

func layerAnnotations(kind LayerKind, encrypted bool) map[string]string {
	return map[string]string{
		ocispec.AnnotationTitle: kind.title(encrypted),
		AnnotationLayer:         string(kind),
		AnnotationEncryption:    map[bool]string{true: EncryptionAge, false: EncryptionNone}[encrypted],
	}
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
