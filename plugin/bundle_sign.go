package plugin

import (
	"crypto"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/sign"
	"github.com/kubectl-assisted/kubectl-assisted/plugin/clierr"
)

// ExitBundleSignature is the exit code of a bundle without a valid signature
// by a trusted signer (unsigned, signed by another key, or altered).
const ExitBundleSignature = clierr.ExitBundleSignature

// signerOptions are the flags of the commands that read a bundle's content:
// --signer (trusted public keys) and --allow-unsigned.
type signerOptions struct {
	Signers       []string
	AllowUnsigned bool
}

func (s *signerOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&s.Signers, "signer", nil, "PEM public key (ed25519 or ECDSA P-256) whose signature the bundle must carry; repeatable (any one suffices)")
	fs.BoolVar(&s.AllowUnsigned, "allow-unsigned", false, "Accept a bundle without a valid signature by a --signer (insecure: anyone who can push to the tag could have made it)")
}

// validate refuses --allow-unsigned with --signer.
func (s *signerOptions) validate() error {
	if s.AllowUnsigned && len(s.Signers) > 0 {
		return errors.New("--allow-unsigned and --signer contradict each other: give one")
	}
	return nil
}

// keys reads the --signer files; an error when --allow-unsigned is given too.
func (s *signerOptions) keys() ([]sign.Key, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	return readSigners(s.Signers)
}

// readSigners reads PEM public keys.
func readSigners(paths []string) ([]sign.Key, error) {
	var out []sign.Key
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("--signer: %w", err)
		}
		pub, err := sign.ParsePublicKey(data)
		if err != nil {
			return nil, fmt.Errorf("--signer %s: %w", p, err)
		}
		k, err := sign.NewKey(pub)
		if err != nil {
			return nil, fmt.Errorf("--signer %s: %w", p, err)
		}
		out = append(out, k)
	}
	return out, nil
}

// readSigningKey reads --signing-key. Errors never quote the file: it is a
// private key.
func readSigningKey(path string) (crypto.Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--signing-key: %w", err)
	}
	k, err := sign.ParsePrivateKey(data)
	if err != nil {
		return nil, fmt.Errorf("--signing-key %s: %w", path, err)
	}
	return k, nil
}

// signatureSummary is one line about a bundle's signature.
func signatureSummary(s *bundle.SignatureStatus) string {
	switch {
	case s == nil || !s.Checked:
		return "not checked (--allow-unsigned)"
	case s.Verified:
		return "verified, signed by " + s.Signer
	case len(s.Found) > 0:
		return fmt.Sprintf("found, by key %s (not verified: give --signer to check)", strings.Join(s.Found, ", "))
	}
	return "none found (unsigned)"
}
