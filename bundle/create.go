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
	"path/filepath"
	"sort"
	"sync"
	"time"

	"filippo.io/age"
	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/files"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/internal/codec"
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

// writeFilesLayer writes the files layer, through the spool when there is
// one: taken from it when an earlier run spooled the same tree, else
// produced and recorded in it. It sets meta.Files and returns the layer's
// descriptors (its parts) and the cluster ids found in the tree.
func writeFilesLayer(ctx context.Context, w oci.Writer, sp *spool, opts CreateOptions, p Progress, meta *Metadata, rep *SpoolReport) (*LayerResult, []ocispec.Descriptor, []string, error) {
	exclude := opts.Files.Exclude
	if exclude == nil {
		exclude = files.DefaultExcludes
	}
	partSize := opts.PartSize
	if partSize == 0 {
		partSize = DefaultPartSize
	}
	if partSize < MinPartSize {
		return nil, nil, nil, fmt.Errorf("part size %d bytes is below the minimum of %d", partSize, MinPartSize)
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
		ls = filesSpool(ctx, sp, opts, exclude, partSize, rep)
	}
	if ls.key != "" {
		if e := sp.load(ls.key); e != nil && e.Kind == LayerFiles && e.Files != nil {
			lr, descs, err := reuseParts(ctx, w.(oci.Resumer), sp, ls.key, e, len(opts.Recipients) > 0, p)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("%s layer (from the spool, %s): %w", LayerFiles, sp.dir, err)
			}
			if lr != nil {
				rep.Reused = append(rep.Reused, SpoolReuse{Kind: LayerFiles, How: lr.Reused, SentBytes: lr.sent})
				fi := *e.Files
				fi.Parts = 0
				if len(descs) > 1 {
					fi.Parts = len(descs)
				}
				meta.Files = &fi
				sp.done = append(sp.done, ls.key)
				return &lr.LayerResult, descs, e.ClusterIDs, nil
			}
			// Not reusable (no spooled copy, or a damaged one): produce it again.
			sp.drop(ls.key)
		}
		ls.save = func(parts []spoolPart, plain int64, blob bool) error {
			// Only a tree that did not change while it was read is what a
			// rerun will find under the same fingerprint.
			if fp, _, err := files.Fingerprint(ctx, opts.Files.Dir, exclude); err != nil || fp != ls.fingerprint {
				return errors.New("the tree changed while it was read")
			}
			fi := *meta.Files
			if len(parts) > 1 {
				fi.Parts = len(parts)
			}
			e := &spoolEntry{Kind: LayerFiles, Source: ls.source, Parts: parts, PlainBytes: plain, Blob: blob, Files: &fi,
				ClusterIDs: clusterIDs, Created: time.Now().UTC()}
			if err := sp.save(ls.key, e); err != nil {
				return err
			}
			sp.done = append(sp.done, ls.key)
			return nil
		}
		if ls.keep {
			sp.dropBlobs(ls.key) // incomplete ones of an earlier run
		}
	}
	lr, descs, err := writeParts(ctx, w, LayerFiles, opts.Recipients, partSize, p, produce, ls)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(descs) > 1 {
		meta.Files.Parts = len(descs)
	}
	return lr, descs, clusterIDs, nil
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

// layerSpool is how the files layer uses the spool: key names its record
// (empty: no record), fingerprint and source what it was made from, and save
// records it.
type layerSpool struct {
	key, fingerprint, source string
	save                     func(parts []spoolPart, plain int64, blob bool) error
	// partFile names the file of part i (nil: the parts are streamed);
	// keep says the files are the spool's (ciphertext, kept for a rerun),
	// not passing copies removed once uploaded (plaintext).
	partFile func(i int) string
	keep     bool
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

// filesSpool decides how the files layer uses the spool: its key (from the
// tree's fingerprint), and where its parts go: ciphertext into the spool,
// kept until the push succeeds; plaintext through passing files removed as
// each part is uploaded (a rerun does not reuse plaintext); either only when
// the spool directory has room for the layer, else the parts are streamed.
func filesSpool(ctx context.Context, sp *spool, opts CreateOptions, exclude []string, partSize int64, rep *SpoolReport) layerSpool {
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
		"spool": spoolVersion, "kind": LayerFiles, "format": FormatVersion, "creator": opts.Creator, "encoder": codec.EncoderID,
		"recipients": rcpts, "dir": dir, "exclude": exclude, "tree": fp, "partSize": partSize,
	})
	if !sp.lock(key) {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s layer: %v; it is pushed without the spool", LayerFiles, errSpoolBusy))
		return layerSpool{}
	}
	ls := layerSpool{key: key, fingerprint: fp, source: dir}
	sp.sources[LayerFiles] = dir
	encrypted := len(opts.Recipients) > 0
	// The spooled layer is about the size of the files (they are mostly
	// compressed already); keep a margin for the rest of the disk's users.
	need := treeBytes + treeBytes/50 + spoolMargin
	if free, ok := diskFree(sp.dir); ok && free < need {
		if encrypted {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s layer: the spool directory %s has %s free, about %s is needed: the layer is streamed without the spool, and an interrupted push will produce it again (give --spool-dir on a larger filesystem)",
				LayerFiles, sp.dir, files.HumanBytes(free), files.HumanBytes(need)))
		}
		return ls
	}
	if !encrypted {
		// Plaintext is never kept: its parts pass through files that are
		// removed as soon as they are uploaded (or by prune, after a kill).
		pass := randomKey()
		ls.partFile = func(i int) string { return sp.partPath(pass, i) }
		return ls
	}
	ls.partFile = func(i int) string { return sp.partPath(key, i) }
	ls.keep = true
	return ls
}

const spoolMargin = 256 << 20

// reuseParts serves the files layer from a spool record: nothing to send
// for the parts the registry has; the others are uploaded from the spooled
// ciphertext, verified first, side by side, each resuming the earlier run's
// session when the registry kept it. A nil result and nil error mean the
// record cannot serve (produce the layer again).
func reuseParts(ctx context.Context, rw oci.Resumer, sp *spool, key string, e *spoolEntry, encrypted bool, p Progress) (*reusedLayer, []ocispec.Descriptor, error) {
	start := time.Now()
	mediaType := e.Kind.MediaType(encrypted)
	for _, part := range e.Parts {
		if part.Descriptor.MediaType != mediaType {
			return nil, nil, nil
		}
	}
	parts := make([]ocispec.Descriptor, len(e.Parts))
	for i, part := range e.Parts {
		parts[i] = part.Descriptor
	}
	descs := layerDescriptors(e.Kind, encrypted, parts)
	result := func(how string, sent int64) *reusedLayer {
		lr := layerResult(e.Kind, descs, e.Parts, time.Since(start))
		lr.Reused = how
		return &reusedLayer{LayerResult: *lr, sent: sent}
	}
	var missing []int
	var missingBytes int64
	for i, part := range e.Parts {
		if ok, err := rw.Exists(ctx, part.Descriptor); err != nil || !ok {
			missing = append(missing, i)
			missingBytes += part.Descriptor.Size
		}
	}
	if len(missing) == 0 {
		return result(ReusePresent, 0), descs, nil
	}
	if !e.Blob {
		return nil, nil, nil
	}
	for _, i := range missing {
		if err := sp.verifyBlob(sp.partPath(key, i), e.Parts[i].Descriptor, e.Kind); err != nil {
			return nil, nil, nil
		}
	}
	id := "push " + string(e.Kind)
	p.Start(id, "push "+string(e.Kind)+" (spooled)", missingBytes)
	errs := make([]error, len(e.Parts))
	sent := make([]int64, len(e.Parts))
	var wg sync.WaitGroup
	sem := make(chan struct{}, partUploads)
	for _, i := range missing {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			sent[i], errs[i] = rw.PushFile(ctx, e.Parts[i].Descriptor, sp.partPath(key, i), e.Parts[i].Session, func(n int64) { p.Add(id, n) })
		}()
	}
	wg.Wait()
	var total int64
	var err error
	for i := range e.Parts {
		total += sent[i]
		var ue *oci.UploadError
		if errors.As(errs[i], &ue) {
			e.Parts[i].Session = ue.Session
		}
		if err == nil {
			err = errs[i]
		}
	}
	p.Done(id, err)
	if err != nil {
		_ = sp.save(key, e)
		return nil, nil, fmt.Errorf("%w (the layer stays spooled: run the same command again to resume)", err)
	}
	how := ReuseUploaded
	if total < missingBytes {
		how = ReuseResumed
	}
	return result(how, total), descs, nil
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
