package plugin

import (
	"crypto"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/sign"
)

// signingKeyPath and signerPath are where a run's generated signing key pair
// lives, beside the age identity: the private key stays on node 0, the
// public key goes to the restore (a --signer file, or the restore Job's
// Secret).
func (s *migrateState) signingKeyPath() string { return filepath.Join(s.dir, "signing.key") }
func (s *migrateState) signerPath() string     { return filepath.Join(s.dir, "signing.pub") }

// ensureSigningKey returns the run's ed25519 signing key, creating the pair
// (private 0600, public 0644) on the first run.
func (s *migrateState) ensureSigningKey() (crypto.Signer, error) {
	data, err := os.ReadFile(s.signingKeyPath())
	if err == nil {
		k, perr := sign.ParsePrivateKey(data)
		if perr != nil {
			return nil, fmt.Errorf("generated signing key %s is damaged: remove the state directory %s to start over", s.signingKeyPath(), s.dir)
		}
		if _, err := os.Stat(s.signerPath()); err != nil {
			if err := s.writeSigner(k); err != nil {
				return nil, err
			}
		}
		return k, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	privPEM, _, err := sign.GenerateKey()
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(s.signingKeyPath(), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(privPEM); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	k, err := sign.ParsePrivateKey(privPEM)
	if err != nil {
		return nil, err
	}
	return k, s.writeSigner(k)
}

func (s *migrateState) writeSigner(k crypto.Signer) error {
	pub, err := sign.MarshalPublicKey(k.Public())
	if err != nil {
		return err
	}
	tmp := s.signerPath() + ".tmp"
	if err := os.WriteFile(tmp, pub, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, s.signerPath())
}

// signer returns the run's trusted key (the public half of the generated
// signing key) and its PEM text.
func (s *migrateState) signer() (sign.Key, string, error) {
	data, err := os.ReadFile(s.signerPath())
	if err != nil {
		return sign.Key{}, "", fmt.Errorf("the run's signing public key: %w", err)
	}
	pub, err := sign.ParsePublicKey(data)
	if err != nil {
		return sign.Key{}, "", fmt.Errorf("the run's signing public key %s: %w", s.signerPath(), err)
	}
	k, err := sign.NewKey(pub)
	return k, string(data), err
}
