package bundle

import (
	"fmt"
	"strings"
)

// The fixed names of the format; docs/bundle-format.md explains each.
const (
	// ArtifactType is the manifest's artifactType. It carries no version, so
	// that any bundle, of any format version, is recognised as one; the
	// version is in AnnotationFormatVersion.
	ArtifactType = "application/vnd.kubectl-assisted.bundle"
	// ConfigMediaType is the config blob: the bundle's Metadata as JSON.
	ConfigMediaType = "application/vnd.kubectl-assisted.bundle.config.v1+json"

	// AnnotationFormatVersion on the manifest is the format version (semver).
	AnnotationFormatVersion = "io.kubectl-assisted.bundle.format-version"
	// AnnotationLayer on a layer names its kind (database, files, resources).
	AnnotationLayer = "io.kubectl-assisted.bundle.layer"
	// AnnotationEncryption on a layer is "age" or "none".
	AnnotationEncryption = "io.kubectl-assisted.bundle.encryption"

	layerMediaTypePrefix = "application/vnd.kubectl-assisted.bundle."
	suffixZstd           = "+zstd"
	suffixAge            = "+age"
)

// LayerKind says what a layer holds.
type LayerKind string

// The layer kinds of format v1, in manifest order.
const (
	LayerDatabase  LayerKind = "database"
	LayerFiles     LayerKind = "files"
	LayerResources LayerKind = "resources"
)

// layerKinds is the manifest order.
var layerKinds = []LayerKind{LayerDatabase, LayerFiles, LayerResources}

// baseMediaType is the media type of the layer's plaintext, before compression.
func (k LayerKind) baseMediaType() string {
	switch k {
	case LayerDatabase:
		return layerMediaTypePrefix + "database.v1"
	default:
		return layerMediaTypePrefix + string(k) + ".v1.tar"
	}
}

// MediaType is the layer media type: the plaintext type, then "+zstd", then
// "+age" when encrypted (the suffixes read in the order they were applied).
func (k LayerKind) MediaType(encrypted bool) string {
	mt := k.baseMediaType() + suffixZstd
	if encrypted {
		mt += suffixAge
	}
	return mt
}

// title is the layer's org.opencontainers.image.title: the file name `oras
// pull` writes it to.
func (k LayerKind) title(encrypted bool) string {
	name := string(k)
	if k != LayerDatabase {
		name += ".tar"
	}
	name += ".zst"
	if encrypted {
		name += ".age"
	}
	return name
}

// ParseLayerMediaType splits a layer media type into its kind and whether it
// is encrypted. A kind this version does not know is returned with known=false
// (a newer minor version may add layers; they are verified but not decoded).
func ParseLayerMediaType(mt string) (kind LayerKind, encrypted, known bool, err error) {
	rest, ok := strings.CutPrefix(mt, layerMediaTypePrefix)
	if !ok {
		return "", false, false, fmt.Errorf("layer media type %q is not a bundle layer", mt)
	}
	rest, encrypted = strings.CutSuffix(rest, suffixAge)
	rest, ok = strings.CutSuffix(rest, suffixZstd)
	if !ok {
		return "", false, false, fmt.Errorf("layer media type %q: only zstd-compressed layers are defined", mt)
	}
	name, _, _ := strings.Cut(rest, ".")
	kind = LayerKind(name)
	for _, k := range layerKinds {
		if k == kind {
			if rest+suffixZstd != strings.TrimPrefix(k.MediaType(false), layerMediaTypePrefix) {
				return "", false, false, fmt.Errorf("layer media type %q: unknown version or encoding of the %s layer", mt, k)
			}
			return kind, encrypted, true, nil
		}
	}
	return kind, encrypted, false, nil
}
