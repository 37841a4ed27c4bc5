package plugin

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
)

// BundleVerifyOptions holds the inputs of `bundle verify`.
type BundleVerifyOptions struct {
	cmdEnv
	bundleRead
}

// NewCmdBundleVerify builds `bundle verify`.
func NewCmdBundleVerify(env *Env) *cobra.Command {
	o := &BundleVerifyOptions{}
	cmd := &cobra.Command{
		Use:   "verify REF --signer FILE [--identity FILE]",
		Short: "Check a bundle's signature, every digest and size and, with --identity, decrypt and decode it",
		Long: `Check the bundle's signature first: it must be signed by one of the --signer public keys
(bundle create --signing-key), or nothing else of it is read; --allow-unsigned skips
that check. Then read the whole bundle: the manifest, the metadata and every layer,
checking each blob's size and digest. With --identity, also decrypt every layer and
decode it strictly (tar entries are checked by the same rules as a restore). Nothing
is written.

Exit codes: 0 verified;` + bundleExitCodes + `;
1 anything else.`,
		Example: env.Example(`
  # Check the signature, digests and sizes (no age key needed)
  %[1]s assisted bundle verify registry.example.com/assisted/node0:v1 --signer node0.pub

  # Decrypt and decode every layer
  %[1]s assisted bundle verify oci:/var/tmp/bundle:v1 --signer node0.pub --identity key.txt`),
		Args: cobra.ExactArgs(1),
	}
	o.addFlags(cmd.Flags(), "Accept setuid, setgid and sticky bits in the files layer (refused by default)")
	return wire(env, cmd, o)
}

// Complete takes the reference.
func (o *BundleVerifyOptions) Complete(args []string) error {
	o.Ref = args[0]
	return nil
}

// Validate checks the reference and the flags.
func (o *BundleVerifyOptions) Validate() error { return o.validate() }

// BundleVerification is the -o json|yaml result of `bundle verify`.
type BundleVerification struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	*bundle.VerifyReport
	// Decrypted is true when every layer was decrypted and decoded.
	Decrypted bool `json:"decrypted"`
}

// Run verifies the bundle.
func (o *BundleVerifyOptions) Run(ctx context.Context) error {
	opts, bars, err := o.bundleOpenOptions(&o.bundleRead)
	if err != nil {
		return err
	}
	rep, err := o.verify(ctx, opts)
	if bars != nil {
		bars.Wait()
	}
	if err != nil {
		return bundleError(fmt.Errorf("verify %s: %w", o.Ref, err))
	}
	out := &BundleVerification{APIVersion: ResultAPIVersion, Kind: "BundleVerification", VerifyReport: rep, Decrypted: true}
	for _, l := range rep.Layers {
		out.Decrypted = out.Decrypted && l.Decoded
	}
	if o.Output.Machine() {
		return o.Output.Print(o.env.Streams.Out, out)
	}
	return printVerification(o.env.Streams.Out, out)
}

func (o *BundleVerifyOptions) verify(ctx context.Context, opts bundle.OpenOptions) (*bundle.VerifyReport, error) {
	b, err := bundle.Open(ctx, o.Ref, opts)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	return b.Verify(ctx, bundle.VerifyOptions{Database: checkDatabaseLayer, PreserveSpecialBits: o.PreserveSpecialBits})
}

func printVerification(w io.Writer, r *BundleVerification) error {
	fmt.Fprintf(w, "Verified %s\nDigest: %s (format %s)\n", r.Reference, r.Digest, r.FormatVersion)
	fmt.Fprintf(w, "Signature: %s\n", signatureSummary(r.Signature))
	for _, l := range r.Layers {
		what := "digest and size"
		if l.Decoded {
			what = fmt.Sprintf("digest, size, decryption and decoding (%d entries, %s plaintext)", l.Entries, humanBytes(l.PlainBytes))
			if !l.Encrypted {
				what = fmt.Sprintf("digest, size and decoding (%d entries, %s plaintext)", l.Entries, humanBytes(l.PlainBytes))
			}
		}
		if l.Parts > 1 {
			what += fmt.Sprintf(", %d parts", l.Parts)
		}
		fmt.Fprintf(w, "  %-10s ok: %s\n", l.Kind, what)
	}
	if !r.Decrypted {
		fmt.Fprintln(w, "Encrypted layers were checked as stored; give --identity to decrypt and decode them.")
	}
	return nil
}
