package plugin

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/oci"
	"github.com/kubectl-assisted/kubectl-assisted/plugin/option"
	"github.com/kubectl-assisted/kubectl-assisted/plugin/progress"
)

// BundleVerifyOptions holds the inputs of `bundle verify`.
type BundleVerifyOptions struct {
	Ref                 string
	Identities          []string
	Sign                signerOptions
	PreserveSpecialBits bool
	Registry            option.Registry
	Output              option.Output
	Terminal            option.Terminal
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
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Output.Validate(); err != nil {
				return usageErr(cmd, err)
			}
			if _, err := oci.ParseReference(args[0]); err != nil {
				return usageErr(cmd, err)
			}
			o.Ref = args[0]
			return o.Run(cmd, env)
		},
	}
	cmd.Flags().StringArrayVar(&o.Identities, "identity", nil, "age identity file that decrypts the bundle; repeatable")
	o.Sign.AddFlags(cmd.Flags())
	cmd.Flags().BoolVar(&o.PreserveSpecialBits, "preserve-special-bits", false, "Accept setuid, setgid and sticky bits in the files layer (refused by default)")
	o.Registry.AddFlags(cmd.Flags())
	o.Output.AddFlags(cmd.Flags())
	o.Terminal.AddFlags(cmd.Flags())
	return cmd
}

// BundleVerification is the -o json|yaml result of `bundle verify`.
type BundleVerification struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	*bundle.VerifyReport
	// Decrypted is true when every layer was decrypted and decoded.
	Decrypted bool `json:"decrypted"`
}

// Run verifies the bundle.
func (o *BundleVerifyOptions) Run(cmd *cobra.Command, env *Env) error {
	ids, err := readIdentities(o.Identities)
	if err != nil {
		return usageErr(cmd, err)
	}
	signers, err := o.Sign.keys()
	if err != nil {
		return usageErr(cmd, err)
	}
	opts := bundle.OpenOptions{Registry: registryOptions(o.Registry), Identities: ids, Signers: signers, AllowUnsigned: o.Sign.AllowUnsigned}
	var bars *progress.Bars
	if o.Terminal.ShowProgress(env.Streams.ErrOut, &o.Output) {
		bars = progress.New(env.Streams.ErrOut, progress.Options{})
		opts.Progress = bars
	}
	rep, err := o.verify(cmd, opts)
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
		return o.Output.Print(env.Streams.Out, out)
	}
	return printVerification(env.Streams.Out, out)
}

func (o *BundleVerifyOptions) verify(cmd *cobra.Command, opts bundle.OpenOptions) (*bundle.VerifyReport, error) {
	b, err := bundle.Open(cmd.Context(), o.Ref, opts)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	return b.Verify(cmd.Context(), bundle.VerifyOptions{Database: checkDatabaseLayer, PreserveSpecialBits: o.PreserveSpecialBits})
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
		fmt.Fprintf(w, "  %-10s ok: %s\n", l.Kind, what)
	}
	if !r.Decrypted {
		fmt.Fprintln(w, "Encrypted layers were checked as stored; give --identity to decrypt and decode them.")
	}
	return nil
}
