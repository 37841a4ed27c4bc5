package plugin

import (
	"github.com/spf13/pflag"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/oci"
	"github.com/kubectl-assisted/kubectl-assisted/plugin/option"
	"github.com/kubectl-assisted/kubectl-assisted/plugin/progress"
)

// bundleRead holds what the commands that read a bundle's content share
// (bundle verify, bundle extract, restore): the reference, the keys, the
// registry, the output and the progress flags.
type bundleRead struct {
	Ref                 string
	Identities          []string
	Sign                signerOptions
	PreserveSpecialBits bool
	Registry            option.Registry
	Output              option.Output
	Terminal            option.Terminal
}

// addFlags adds --identity, --signer, --allow-unsigned, --preserve-special-bits
// (with its help text, which says what the command does with the bits), the
// registry flags, -o and --no-progress.
func (b *bundleRead) addFlags(fs *pflag.FlagSet, preserveHelp string) {
	fs.StringArrayVar(&b.Identities, "identity", nil, "age identity file that decrypts the bundle; repeatable")
	b.Sign.AddFlags(fs)
	fs.BoolVar(&b.PreserveSpecialBits, "preserve-special-bits", false, preserveHelp)
	b.Registry.AddFlags(fs)
	b.Output.AddFlags(fs)
	b.Terminal.AddFlags(fs)
}

// validate checks the reference and the flags, without I/O.
func (b *bundleRead) validate() error {
	if err := b.Output.Validate(); err != nil {
		return err
	}
	if _, err := oci.ParseReference(b.Ref); err != nil {
		return err
	}
	return b.Sign.validate()
}

// bundleOpenOptions reads the --identity and --signer files (a file that cannot be
// read or parsed is a usage error) and, on a terminal, starts progress bars
// (the caller Waits for them).
func (c *cmdEnv) bundleOpenOptions(b *bundleRead) (bundle.OpenOptions, *progress.Bars, error) {
	ids, err := readIdentities(b.Identities)
	if err != nil {
		return bundle.OpenOptions{}, nil, c.usage(err)
	}
	signers, err := b.Sign.keys()
	if err != nil {
		return bundle.OpenOptions{}, nil, c.usage(err)
	}
	opts := bundle.OpenOptions{Registry: registryOptions(b.Registry), Identities: ids, Signers: signers, AllowUnsigned: b.Sign.AllowUnsigned}
	var bars *progress.Bars
	if b.Terminal.ShowProgress(c.env.Streams.ErrOut, &b.Output) {
		bars = progress.New(c.env.Streams.ErrOut, progress.Options{})
		opts.Progress = bars
	}
	return opts, bars, nil
}
