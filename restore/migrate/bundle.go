package migrate

import (
	"context"
	"fmt"
	"io"

	"filippo.io/age"
	"github.com/opencontainers/go-digest"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/files"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/oci"
)

// bundleStep creates, signs and pushes the bundle, or reuses the one a
// previous run pushed while the registry still has it.
type bundleStep struct{}

func (bundleStep) name() string { return StepBundle }

func (bundleStep) run(ctx context.Context, m *migration) (string, error) {
	o, st := m.o, m.state
	key, err := st.EnsureSigningKey()
	if err != nil {
		return "", err
	}
	if st.Digest != "" {
		if signer, _, err := st.Signer(); err == nil {
			if err := o.Bundles.Check(ctx, st.Pinned, signer); err == nil {
				return "reused " + st.Digest + " pushed (and signed) by an earlier run", nil
			}
		}
		m.note(StepBundle, "the bundle of the earlier run (%s) is gone or not signed by this run's key: creating a new one", st.Digest)
		st.Digest, st.Pinned = "", ""
		st.ResetFrom(StepRestore)
	}
	c := o.Create
	c.SigningKey = key
	if c.Creator == "" {
		c.Creator = o.Creator
	}
	if len(c.Recipients) == 0 && !o.NoEncryption {
		id, err := st.EnsureIdentity()
		if err != nil {
			return "", err
		}
		st.Recipient = id.Recipient().String()
		c.Recipients = []age.Recipient{id.Recipient()}
	}
	var db *recordingSource
	if c.Database != nil {
		db = &recordingSource{src: c.Database}
		c.Database = db
	}
	if o.Live && db != nil {
		wm, err := o.DB.Watermark(ctx, o.SourceDB)
		if err != nil {
			return "", fmt.Errorf("read the write watermark: %w", err)
		}
		wm.Time = wm.Time.UTC()
		st.Watermark = wm
	}
	c.Spool.Dir = ""
	if o.Ref.Remote() && len(c.Recipients) > 0 {
		c.Spool.Dir = o.SpoolDir
	}
	finish := func() {}
	if o.NewProgress != nil {
		c.Progress, finish = o.NewProgress()
	}
	res, err := o.Bundles.Create(ctx, o.Ref.String(), c)
	finish()
	if err != nil {
		return "", err
	}
	st.Digest = res.Digest
	st.Pinned = pinnedRef(o.Ref, res.Digest)
	st.ClusterIDs = nil
	// The database's live clusters, else every cluster the metadata names
	// (the file storage's, which may hold deleted ones).
	if db != nil && len(db.clusterIDs) > 0 {
		st.ClusterIDs = db.clusterIDs
	} else if res.Metadata != nil {
		st.ClusterIDs = res.Metadata.Source.ClusterIDs
	}
	// A new bundle invalidates whatever a previous run restored from another one.
	st.ResetFrom(StepRestore)
	var size int64
	for _, l := range res.Layers {
		size += l.Size
	}
	return fmt.Sprintf("pushed %s (%s in %d layers), signed by %s", res.Digest, humanBytes(size), len(res.Layers), res.Signer), nil
}

// recordingSource remembers the clusters the database dump found.
type recordingSource struct {
	src        bundle.DatabaseSource
	clusterIDs []string
}

func (r *recordingSource) Dump(ctx context.Context, w io.Writer) (*bundle.DatabaseSummary, error) {
	sum, err := r.src.Dump(ctx, w)
	if sum != nil {
		r.clusterIDs = sum.ClusterIDs
	}
	return sum, err
}

// pinnedRef names the bundle by digest where the transport allows it.
func pinnedRef(ref oci.Reference, dgst string) string {
	if !ref.Remote() {
		return ref.String()
	}
	r := ref
	r.Tag = ""
	r.Digest = digest.Digest(dgst)
	return r.String()
}

// humanBytes is the one byte formatter of the binary (bundle/files).
func humanBytes(n int64) string { return files.HumanBytes(n) }
