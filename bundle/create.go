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
	"os"
	"path/filepath"
	"sort"
	"time"

	"filippo.io/age"
	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/files"
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
	Reused   string        `json:"reused,omitempty"`
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
		lr, desc, err := writeLayer(ctx, w, kind, opts.Recipients, p, produce, layerSpool{})
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
		lr, desc, ids, err := writeFilesLayer(ctx, w, sp, opts, p, meta, res.Spool)
		if err != nil {
			return nil, err
		}
		layers = append(layers, desc)
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

// writeFilesLayer writes the files layer, through the spool when there is
// one: taken from it when an earlier run spooled the same tree, else
// produced and recorded in it. It sets meta.Files and returns the cluster ids
// found in the tree.
func writeFilesLayer(ctx context.Context, w oci.Writer, sp *spool, opts CreateOptions, p Progress, meta *Metadata, rep *SpoolReport) (*LayerResult, ocispec.Descriptor, []string, error) {
	exclude := opts.Files.Exclude
	if exclude == nil {
		exclude = files.DefaultExcludes
	}
	var clusterIDs []string
	produce := func(lw io.Writer) error {
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
		meta.Files = &FilesInfo{Files: sum.Files, Dirs: sum.Dirs, Symlinks: sum.Symlinks, HardLinks: sum.HardLinks, Bytes: sum.Bytes, Excluded: exclude,
			LongestPath: sum.LongestName, LargestXattrs: sum.LargestXattrs}
		clusterIDs = sum.ClusterIDs
		return nil
	}
	ls := layerSpool{}
	if sp != nil {
		ls = filesSpool(ctx, sp, opts, exclude, rep)
	}
	if ls.key != "" {
		if e := sp.load(ls.key); e != nil && e.Kind == LayerFiles && e.Files != nil {
			lr, desc, err := reuseLayer(ctx, w.(oci.Resumer), sp, ls.key, e, len(opts.Recipients) > 0, p)
			if err != nil {
				return nil, desc, nil, fmt.Errorf("%s layer (from the spool, %s): %w", LayerFiles, sp.dir, err)
			}
			if lr != nil {
				rep.Reused = append(rep.Reused, SpoolReuse{Kind: LayerFiles, How: lr.Reused, SentBytes: lr.sent})
				fi := *e.Files
				meta.Files = &fi
				sp.done = append(sp.done, ls.key)
				return &lr.LayerResult, desc, e.ClusterIDs, nil
			}
			// Not reusable (no spooled copy, or a damaged one): produce it again.
			sp.drop(ls.key)
		}
		ls.save = func(desc ocispec.Descriptor, plain int64, session *oci.UploadSession, blob bool) error {
			// Only a tree that did not change while it was read is what a
			// rerun will find under the same fingerprint.
			if fp, _, err := files.Fingerprint(ctx, opts.Files.Dir, exclude); err != nil || fp != ls.fingerprint {
				return errors.New("the tree changed while it was read")
			}
			e := &spoolEntry{Kind: LayerFiles, Source: ls.source, Descriptor: desc, PlainBytes: plain, Blob: blob, Files: meta.Files,
				ClusterIDs: clusterIDs, Session: session, Created: time.Now().UTC()}
			if err := sp.save(ls.key, e); err != nil {
				return err
			}
			sp.done = append(sp.done, ls.key)
			return nil
		}
	}
	if ls.file != "" {
		_ = os.Remove(ls.file) // an incomplete one of an earlier run
	}
	lr, desc, err := writeLayer(ctx, w, LayerFiles, opts.Recipients, p, produce, ls)
	if err != nil {
		return nil, desc, nil, err
	}
	return lr, desc, clusterIDs, nil
}

// layerSpool is how a layer uses the spool: key names its record (empty: no
// record), file is where its ciphertext goes (empty: streamed from memory),
// and save records it once its bytes are complete.
type layerSpool struct {
	key, fingerprint, file, source string
	save                           func(desc ocispec.Descriptor, plain int64, session *oci.UploadSession, blob bool) error
}

// writeLayer runs produce into zstd (and age) and a blob of w.
func writeLayer(ctx context.Context, w oci.Writer, kind LayerKind, recipients []age.Recipient, p Progress, produce func(io.Writer) error, ls layerSpool) (*LayerResult, ocispec.Descriptor, error) {
	start := time.Now()
	encrypted := len(recipients) > 0
	id := "push " + string(kind)
	p.Start(id, "push "+string(kind), 0)
	var saved bool
	var lw *layerWriter
	bo := oci.BlobOptions{SpoolFile: ls.file, OnUpload: func(n int64) { p.Add(id, n) }}
	if ls.save != nil && ls.file != "" {
		// Record the spooled layer as soon as the spool holds it whole: a
		// run killed while the upload catches up can still be resumed.
		bo.OnComplete = func(desc ocispec.Descriptor) { saved = ls.save(desc, lw.raw, nil, true) == nil }
	}
	bw, err := w.NewBlob(ctx, kind.MediaType(encrypted), bo)
	if err != nil {
		p.Done(id, err)
		return nil, ocispec.Descriptor{}, fmt.Errorf("%s layer: %w", kind, err)
	}
	lw, err = newLayerWriter(bw, recipients)
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
	var ue *oci.UploadError
	switch {
	case ls.save == nil || desc.Digest == "":
	case err == nil && !saved:
		// Not spooled (plaintext, or no room): the record alone lets a
		// rerun skip the layer when the registry has it.
		saved = ls.save(desc, lw.raw, nil, ls.file != "") == nil
	case errors.As(err, &ue) && saved && ue.Session != nil:
		saved = ls.save(desc, lw.raw, ue.Session, true) == nil // where to resume
	}
	p.Done(id, err)
	if err != nil {
		if ue != nil && saved && ls.file != "" {
			err = fmt.Errorf("%w (the layer is spooled: run the same command again to resume the push)", err)
		}
		return nil, ocispec.Descriptor{}, fmt.Errorf("%s layer: %w", kind, err)
	}
	desc.Annotations = layerAnnotations(kind, encrypted)
	return &LayerResult{Kind: kind, MediaType: desc.MediaType, Digest: desc.Digest.String(), Size: desc.Size, PlainBytes: lw.raw, Duration: time.Since(start)}, desc, nil
}

func layerAnnotations(kind LayerKind, encrypted bool) map[string]string {
	return map[string]string{
		ocispec.AnnotationTitle: kind.title(encrypted),
		AnnotationLayer:         string(kind),
		AnnotationEncryption:    map[bool]string{true: EncryptionAge, false: EncryptionNone}[encrypted],
	}
}

// filesSpool decides how the files layer uses the spool: its key (from the
// tree's fingerprint), and whether its ciphertext is spooled (encrypted, and
// room for it in the spool directory).
func filesSpool(ctx context.Context, sp *spool, opts CreateOptions, exclude []string, rep *SpoolReport) layerSpool {
	fp, treeBytes, err := files.Fingerprint(ctx, opts.Files.Dir, exclude)
	if err != nil {
		return layerSpool{} // files.Write reports it
	}
	dir, err := filepath.Abs(opts.Files.Dir)
	if err != nil {
		return layerSpool{}
	}
	var rcpts []string
	for _, r := range opts.Recipients {
		if f, err := RecipientFingerprint(r); err == nil {
			rcpts = append(rcpts, f)
		}
	}
	sort.Strings(rcpts)
	key := spoolKey(map[string]any{
		"spool": spoolVersion, "kind": LayerFiles, "format": FormatVersion, "creator": opts.Creator, "encoder": encoderID,
		"recipients": rcpts, "dir": dir, "exclude": exclude, "tree": fp,
	})
	if !sp.lock(key) {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s layer: %v; it is pushed without the spool", LayerFiles, errSpoolBusy))
		return layerSpool{}
	}
	ls := layerSpool{key: key, fingerprint: fp, source: dir}
	sp.sources[LayerFiles] = dir
	if len(opts.Recipients) == 0 {
		return ls // plaintext is never spooled; the record alone lets a rerun skip what the registry has
	}
	// The spooled layer is about the size of the files (they are mostly
	// compressed already); keep a margin for the rest of the disk's users.
	need := treeBytes + treeBytes/50 + spoolMargin
	if free, ok := diskFree(sp.dir); ok && free < need {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s layer: the spool directory %s has %s free, about %s is needed: the layer is streamed without the spool, and an interrupted push will produce it again (give --spool-dir on a larger filesystem)",
			LayerFiles, sp.dir, files.HumanBytes(free), files.HumanBytes(need)))
		return ls
	}
	ls.file = sp.path(key, ".blob")
	return ls
}

const spoolMargin = 256 << 20

// reuseLayer serves a layer from a spool record: nothing to send when the
// registry has it, else the spooled ciphertext, verified, is uploaded,
// resuming the earlier run's session when the registry kept it. A nil result
// and nil error mean the record cannot serve (produce the layer again).
func reuseLayer(ctx context.Context, rw oci.Resumer, sp *spool, key string, e *spoolEntry, encrypted bool, p Progress) (*reusedLayer, ocispec.Descriptor, error) {
	start := time.Now()
	desc := e.Descriptor
	desc.MediaType = e.Kind.MediaType(encrypted)
	if desc.MediaType != e.Descriptor.MediaType {
		return nil, desc, nil
	}
	desc.Annotations = layerAnnotations(e.Kind, encrypted)
	lr := func(how string, sent int64) *reusedLayer {
		return &reusedLayer{LayerResult: LayerResult{Kind: e.Kind, MediaType: desc.MediaType, Digest: desc.Digest.String(), Size: desc.Size, PlainBytes: e.PlainBytes, Reused: how, Duration: time.Since(start)}, sent: sent}
	}
	if ok, err := rw.Exists(ctx, e.Descriptor); err == nil && ok {
		return lr(ReusePresent, 0), desc, nil
	}
	if !e.Blob {
		return nil, desc, nil
	}
	if err := sp.verifyBlob(key, e); err != nil {
		return nil, desc, nil
	}
	id := "push " + string(e.Kind)
	p.Start(id, "push "+string(e.Kind)+" (spooled)", desc.Size)
	sent, err := rw.PushFile(ctx, e.Descriptor, sp.path(key, ".blob"), e.Session, func(n int64) { p.Add(id, n) })
	p.Done(id, err)
	if err != nil {
		var ue *oci.UploadError
		if errors.As(err, &ue) {
			e.Session = ue.Session
			_ = sp.save(key, e)
		}
		return nil, desc, fmt.Errorf("%w (the layer stays spooled: run the same command again to resume)", err)
	}
	how := ReuseUploaded
	if sent < desc.Size {
		how = ReuseResumed
	}
	return lr(how, sent), desc, nil
}

// How a spooled layer was reused (LayerResult.Reused).
const (
	ReusePresent  = "present"
	ReuseResumed  = "resumed"
	ReuseUploaded = "uploaded"
)

type reusedLayer struct {
	LayerResult
	sent int64
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
