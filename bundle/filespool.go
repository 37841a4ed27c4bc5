package bundle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"sync"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/files"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/internal/codec"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/oci"
)

// How a push of the files layer uses the spool (see spool.go for the spool
// itself): the record's key, where the parts go, and the reuse of what an
// earlier, interrupted run left.

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
