package bundle

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/sign"
)

func signingKey(t *testing.T) (*sign.Key, []byte) {
	t.Helper()
	privPEM, pubPEM, err := sign.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	pub, err := sign.ParsePublicKey(pubPEM)
	if err != nil {
		t.Fatal(err)
	}
	k, err := sign.NewKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return &k, privPEM
}

// A layout bundle signed at creation opens with its signer, and is refused
// without one, with another, unsigned, or with its layers gone (the
// signature is checked before any of them is read).
func TestSignedLayout(t *testing.T) {
	ctx := context.Background()
	id := newIdentity(t)
	key, privPEM := signingKey(t)
	other, _ := signingKey(t)
	priv, err := sign.ParsePrivateKey(privPEM)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "layout")
	ref := "oci:" + dir + ":v1"
	res := create(t, ref, CreateOptions{
		Database:   fakeDB{data: "COPY clusters ...\n"},
		Recipients: []age.Recipient{id.Recipient()},
		SigningKey: priv,
	})
	if res.Signer != key.Fingerprint {
		t.Fatalf("signer %q, want %q", res.Signer, key.Fingerprint)
	}
	b, err := Open(ctx, ref, OpenOptions{Identities: []age.Identity{id}, Signers: []sign.Key{*other, *key}})
	if err != nil {
		t.Fatal(err)
	}
	if !b.Signature.Verified || b.Signature.Signer != key.Fingerprint {
		t.Fatalf("signature %+v", b.Signature)
	}
	if _, err := b.Verify(ctx, VerifyOptions{}); err != nil {
		t.Fatal(err)
	}
	b.Close()
	// "oci:DIR" without a tag still finds the one bundle beside its signature.
	if b, err := Open(ctx, "oci:"+dir, OpenOptions{Signers: []sign.Key{*key}}); err != nil {
		t.Fatalf("untagged: %v", err)
	} else {
		b.Close()
	}

	var se *SignatureError
	for name, opts := range map[string]OpenOptions{
		"no signer":    {},
		"other signer": {Signers: []sign.Key{*other}},
	} {
		_, err := Open(ctx, ref, opts)
		if !errors.As(err, &se) {
			t.Fatalf("%s: %v", name, err)
		}
		if !strings.Contains(err.Error(), key.Fingerprint) {
			t.Errorf("%s: the error does not name the key found: %v", name, err)
		}
	}
	// Inspect's mode: found, not verified, no error.
	b, err = Open(ctx, ref, OpenOptions{ListSignatures: true})
	if err != nil || b.Signature.Verified || len(b.Signature.Found) != 1 || b.Signature.Found[0] != key.Fingerprint {
		t.Fatalf("list: %v %+v", err, b.Signature)
	}
	b.Close()

	// The layers gone: still a signature error with the wrong
	// signer, still opens with the right one (nothing read yet).
	for _, l := range res.Layers {
		if err := os.Remove(filepath.Join(dir, "blobs", "sha256", strings.TrimPrefix(l.Digest, "sha256:"))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Open(ctx, ref, OpenOptions{Signers: []sign.Key{*other}}); !errors.As(err, &se) || se.Reason != ReasonUntrusted {
		t.Fatalf("layers gone, other signer: %v", err)
	}

	// Unsigned.
	uref := "oci:" + filepath.Join(t.TempDir(), "u") + ":v1"
	create(t, uref, CreateOptions{Database: fakeDB{data: "x"}})
	if _, err := Open(ctx, uref, OpenOptions{Signers: []sign.Key{*key}}); !errors.As(err, &se) || se.Reason != ReasonUnsigned {
		t.Fatalf("unsigned: %v", err)
	}
	if b, err := Open(ctx, uref, OpenOptions{AllowUnsigned: true}); err != nil || b.Signature.Checked {
		t.Fatalf("unsigned, allowed: %v", err)
	}
}
