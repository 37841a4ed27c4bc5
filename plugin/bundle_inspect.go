package plugin

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/files"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/oci"
	"github.com/kubectl-assisted/kubectl-assisted/plugin/option"
)

// BundleInspectOptions holds the inputs of `bundle inspect`.
type BundleInspectOptions struct {
	cmdEnv
	Ref      string
	Signers  []string
	Registry option.Registry
	Output   option.Output
}

// NewCmdBundleInspect builds `bundle inspect`.
func NewCmdBundleInspect(env *Env) *cobra.Command {
	o := &BundleInspectOptions{}
	cmd := &cobra.Command{
		Use:   "inspect REF [-o json|yaml]",
		Short: "Show a bundle's manifest digest, layers and metadata (never secrets, no key needed)",
		Example: env.Example(`
  # What is in this bundle, and who can decrypt it?
  %[1]s assisted bundle inspect registry.example.com/assisted/node0:v1

  # Is it signed by node 0's key?
  %[1]s assisted bundle inspect registry.example.com/assisted/node0:v1 --signer node0.pub

  # The same for scripts
  %[1]s assisted bundle inspect oci:/var/tmp/bundle:v1 -o json | jq .digest`),
		Args: cobra.ExactArgs(1),
	}
	cmd.Flags().StringArrayVar(&o.Signers, "signer", nil, "PEM public key to check the signatures found against (inspect never refuses a bundle for its signature); repeatable")
	o.Registry.AddFlags(cmd.Flags())
	o.Output.AddFlags(cmd.Flags())
	return wire(env, cmd, o)
}

// Complete takes the reference.
func (o *BundleInspectOptions) Complete(args []string) error {
	o.Ref = args[0]
	return nil
}

// Validate checks the reference and -o.
func (o *BundleInspectOptions) Validate() error {
	if err := o.Output.Validate(); err != nil {
		return err
	}
	_, err := oci.ParseReference(o.Ref)
	return err
}

// BundleInspection is the -o json|yaml result of `bundle inspect`.
type BundleInspection struct {
	APIVersion    string               `json:"apiVersion"`
	Kind          string               `json:"kind"`
	Reference     string               `json:"reference"`
	Digest        string               `json:"digest"`
	MediaType     string               `json:"mediaType"`
	ArtifactType  string               `json:"artifactType"`
	Size          int64                `json:"size"`
	FormatVersion string               `json:"formatVersion"`
	Created       time.Time            `json:"created"`
	Layers        []BundleLayerInspect `json:"layers"`
	Metadata      *bundle.Metadata     `json:"metadata"`
	// Signature lists the signing keys found; verified only with --signer.
	Signature *bundle.SignatureStatus `json:"signature"`
	// RestoreImages are the images stored beside the bundle for its
	// restore Job (migrate pushes one; only a user removes it).
	RestoreImages []bundle.RestoreImage `json:"restoreImages,omitempty"`
}

// BundleLayerInspect is one layer of an inspection.
type BundleLayerInspect struct {
	Kind      bundle.LayerKind `json:"kind"`
	MediaType string           `json:"mediaType"`
	Digest    string           `json:"digest"`
	Size      int64            `json:"size"`
	Encrypted bool             `json:"encrypted"`
	// Parts are the blobs of a layer in several parts (format 1.2): Digest
	// is then the first's, Size the sum.
	Parts []BundlePart `json:"parts,omitempty"`
}

// BundlePart is one blob of a layer in parts.
type BundlePart struct {
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
}

// Run opens the bundle (manifest and metadata only) and prints it.
func (o *BundleInspectOptions) Run(ctx context.Context) error {
	env := o.env
	signers, err := readSigners(o.Signers)
	if err != nil {
		return o.usage(err)
	}
	b, err := bundle.Open(ctx, o.Ref, bundle.OpenOptions{Registry: registryOptions(o.Registry), Signers: signers, ListSignatures: true})
	if err != nil {
		return bundleError(fmt.Errorf("inspect %s: %w", o.Ref, err))
	}
	defer b.Close()
	out := &BundleInspection{
		APIVersion: ResultAPIVersion, Kind: "BundleInspection",
		Reference: b.Reference, Digest: b.Descriptor.Digest.String(), MediaType: b.Descriptor.MediaType,
		ArtifactType: b.Manifest.ArtifactType, Size: b.Descriptor.Size,
		FormatVersion: b.Metadata.FormatVersion, Created: b.Metadata.Created, Metadata: b.Metadata,
		Layers: []BundleLayerInspect{}, Signature: b.Signature,
	}
	if out.RestoreImages, err = b.RestoreImages(ctx); err != nil {
		fmt.Fprintf(env.Streams.ErrOut, "warning: could not list the restore images stored beside the bundle: %v\n", err)
	}
	for _, l := range b.Layers {
		li := BundleLayerInspect{Kind: l.Kind, MediaType: l.Descriptor.MediaType, Digest: l.Descriptor.Digest.String(), Size: l.Size(), Encrypted: l.Encrypted}
		if len(l.Parts) > 1 {
			for _, p := range l.Parts {
				li.Parts = append(li.Parts, BundlePart{Digest: p.Digest.String(), Size: p.Size})
			}
		}
		out.Layers = append(out.Layers, li)
	}
	if o.Output.Machine() {
		return o.Output.Print(env.Streams.Out, out)
	}
	return printInspection(env.Streams.Out, out)
}

func printInspection(w io.Writer, r *BundleInspection) error {
	m := r.Metadata
	fmt.Fprintf(w, "Reference:      %s\nDigest:         %s\nArtifact type:  %s\nFormat:         %s\nCreated:        %s\n",
		r.Reference, r.Digest, r.ArtifactType, r.FormatVersion, r.Created.Format(time.RFC3339))
	if m.Creator != "" {
		fmt.Fprintf(w, "Creator:        %s\n", m.Creator)
	}
	enc := m.Encryption.Scheme
	if len(m.Encryption.Recipients) > 0 {
		enc += " to " + strings.Join(m.Encryption.Recipients, ", ")
	}
	fmt.Fprintf(w, "Encryption:     %s\n", enc)
	fmt.Fprintf(w, "Signature:      %s\n", signatureSummary(r.Signature))
	for _, img := range r.RestoreImages {
		fmt.Fprintf(w, "Restore image:  %s (kubectl-assisted %s, %s)\n", img.Digest, orNone(img.Version), orNone(img.Platform))
	}
	if s := m.Source; s.PostgresVersion != "" || s.LastMigration != "" || s.AssistedServiceImage != "" || len(s.ClusterIDs) > 0 {
		fmt.Fprintf(w, "Source:         postgres %s, migration %s, image %s\n", orNone(s.PostgresVersion), orNone(s.LastMigration), orNone(s.AssistedServiceImage))
		if len(s.ClusterIDs) > 0 {
			fmt.Fprintf(w, "Clusters:       %s\n", strings.Join(s.ClusterIDs, ", "))
		}
	}
	fmt.Fprintln(w, "Layers:")
	for _, l := range r.Layers {
		fmt.Fprintf(w, "  %-10s %-10s %s  %s\n", l.Kind, humanBytes(l.Size), l.Digest, l.MediaType)
		if len(l.Parts) > 1 {
			fmt.Fprintf(w, "  %-10s in %d parts (their plaintexts, joined, are the layer's):\n", "", len(l.Parts))
			for i, p := range l.Parts {
				fmt.Fprintf(w, "  %-10s %4d %-10s %s\n", "", i+1, humanBytes(p.Size), p.Digest)
			}
		}
	}
	if d := m.Database; d != nil {
		var rows int64
		for _, t := range d.Tables {
			rows += t.Rows
		}
		fmt.Fprintf(w, "Database:       %d tables, %d rows, %s\n", len(d.Tables), rows, humanBytes(d.Bytes))
	}
	if f := m.Files; f != nil {
		fmt.Fprintf(w, "Files:          %d files, %d dirs, %d symlinks, %s\n", f.Files, f.Dirs, f.Symlinks, humanBytes(f.Bytes))
	}
	if res := m.Resources; res != nil {
		kinds := make([]string, 0, len(res.Kinds))
		for k, n := range res.Kinds {
			kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
		}
		sort.Strings(kinds)
		fmt.Fprintf(w, "Resources:      %d objects from %s (%s)\n", res.Objects, res.From, strings.Join(kinds, ", "))
	}
	return nil
}

// humanBytes formats sizes in the CLI's output, as the bundle's messages do.
var humanBytes = files.HumanBytes

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
