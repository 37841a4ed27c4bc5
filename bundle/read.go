package bundle

import (
	"context"
	"errors"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/files"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/resources"
)

// ExtractFiles restores the files layer into dir, a staging directory that
// must not exist or be empty (see files.Extract). It returns an error, and dir
// holds nothing, unless every entry was safe and the layer verified to its
// last byte; the caller then moves the staged tree into place. The layer is
// capped at what the metadata declares, whatever opts.Declared says.
func (b *Bundle) ExtractFiles(ctx context.Context, dir string, opts files.ExtractOptions) (*files.Summary, error) {
	rc, err := b.OpenLayer(ctx, LayerFiles)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	opts.Rules = b.FilesRules(opts.PreserveSpecialBits)
	sum, err := files.Extract(ctx, rc, dir, opts)
	if err != nil {
		return nil, filesLayerErr(err)
	}
	return sum, nil
}

// Resources decodes the resources layer: the exported objects in restore
// order (Namespaces, ClusterImageSets, Secrets, ConfigMaps, then the assisted
// CRs), or the objects of the ABI manifest files. Secrets carry their data:
// handle the result as secret.
func (b *Bundle) Resources(ctx context.Context) ([]*unstructured.Unstructured, error) {
	rc, err := b.OpenLayer(ctx, LayerResources)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	objs, err := resources.Decode(rc)
	if err != nil {
		return nil, unwrapLayerErr(err)
	}
	if err := b.checkObjectCount(len(objs)); err != nil {
		return nil, err
	}
	return objs, nil
}

// Database streams the database layer's plaintext for the engine's restore.
// See OpenLayer for when its end can be trusted.
func (b *Bundle) Database(ctx context.Context) (io.ReadCloser, error) {
	return b.OpenLayer(ctx, LayerDatabase)
}

// unwrapLayerErr returns the layer reader's own error when a decoder wrapped it.
func unwrapLayerErr(err error) error {
	var ie *IntegrityError
	var de *DecryptError
	var se *SourceError
	switch {
	case errors.As(err, &ie):
		return ie
	case errors.As(err, &de):
		return de
	case errors.As(err, &se):
		return se
	}
	return err
}
