package plugin

import (
	"fmt"
	"io"
	"time"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
)

// BundleCreateResult is the -o json|yaml result of `bundle create`.
type BundleCreateResult struct {
	APIVersion      string              `json:"apiVersion"`
	Kind            string              `json:"kind"`
	Reference       string              `json:"reference"`
	Digest          string              `json:"digest"`
	MediaType       string              `json:"mediaType"`
	Size            int64               `json:"size"`
	Encrypted       bool                `json:"encrypted"`
	Layers          []BundleLayerResult `json:"layers"`
	DurationSeconds float64             `json:"durationSeconds"`
	Metadata        *bundle.Metadata    `json:"metadata"`
	// Spool is what the spool did (layers reused from an interrupted run).
	Spool *bundle.SpoolReport `json:"spool,omitempty"`
	// Signer is the fingerprint of the key that signed the bundle (--signing-key).
	Signer string `json:"signer,omitempty"`
}

// BundleLayerResult is one layer in a result.
type BundleLayerResult struct {
	Kind       bundle.LayerKind `json:"kind"`
	MediaType  string           `json:"mediaType"`
	Digest     string           `json:"digest"`
	Size       int64            `json:"size"`
	PlainBytes int64            `json:"plainBytes,omitempty"`
	Reused     string           `json:"reused,omitempty"`
	// Parts are the blobs of a layer in several parts; Digest is then the
	// first's, Size and PlainBytes the sums.
	Parts           []bundle.PartResult `json:"parts,omitempty"`
	DurationSeconds float64             `json:"durationSeconds,omitempty"`
}

func newCreateResult(r *bundle.Result, encrypted bool) *BundleCreateResult {
	out := &BundleCreateResult{
		APIVersion: ResultAPIVersion, Kind: "BundleCreateResult",
		Reference: r.Reference, Digest: r.Digest, MediaType: r.MediaType, Size: r.Size,
		Encrypted: encrypted, DurationSeconds: seconds(r.Duration), Metadata: r.Metadata,
		Layers: []BundleLayerResult{}, Spool: r.Spool, Signer: r.Signer,
	}
	for _, l := range r.Layers {
		out.Layers = append(out.Layers, BundleLayerResult{Kind: l.Kind, MediaType: l.MediaType, Digest: l.Digest, Size: l.Size, PlainBytes: l.PlainBytes, Reused: l.Reused, Parts: l.Parts, DurationSeconds: seconds(l.Duration)})
	}
	return out
}

func printCreateResult(w io.Writer, r *BundleCreateResult) error {
	enc := "unencrypted"
	if r.Encrypted {
		enc = fmt.Sprintf("encrypted to %d recipient(s)", len(r.Metadata.Encryption.Recipients))
	}
	fmt.Fprintf(w, "Bundle written to %s (%s) in %.1fs\nDigest: %s\n", r.Reference, enc, r.DurationSeconds, r.Digest)
	if r.Signer != "" {
		fmt.Fprintf(w, "Signed by: %s\n", r.Signer)
	}
	for _, l := range r.Layers {
		reused := ""
		if l.Reused != "" {
			reused = "  [spooled by an earlier run: " + l.Reused + "]"
		}
		parts := ""
		if len(l.Parts) > 1 {
			parts = fmt.Sprintf(" in %d parts", len(l.Parts))
		}
		fmt.Fprintf(w, "  %-10s %s  %s (from %s)%s%s\n", l.Kind, l.Digest, humanBytes(l.Size), humanBytes(l.PlainBytes), parts, reused)
	}
	return nil
}

func seconds(d time.Duration) float64 {
	return float64(d.Round(time.Millisecond)) / float64(time.Second)
}
