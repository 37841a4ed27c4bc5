package plugin

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/resources"
	"github.com/kubectl-assisted/kubectl-assisted/restore/auth"
)

// ecPEM makes a P-256 key pair as openshift/installer's gencrypto keyPairPEM
// writes it: SEC 1 "EC PRIVATE KEY", PKIX "EC PUBLIC KEY".
func ecPEM(t *testing.T) (priv, pub []byte) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalECPrivateKey(k)
	pubDER, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PUBLIC KEY", Bytes: pubDER})
}

func writeEnv(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "assisted-service.env")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestEnvKeyPair(t *testing.T) {
	priv, pub := ecPEM(t)
	want, err := auth.ParseKeyPair(priv, pub)
	if err != nil {
		t.Fatal(err)
	}
	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	escaped := func(b []byte) string { return strings.ReplaceAll(strings.TrimSpace(string(b)), "\n", `\n`) }
	otherPriv, otherPub := ecPEM(t)
	db := []string{"DB_HOST=127.0.0.1", "DB_NAME=installer", "DB_PASS=admin", "DB_PORT=5432", "DB_USER=admin"}

	for _, tc := range []struct {
		name  string
		lines []string
		carry bool
		err   string
	}{
		// The older template (installer ecc6a712): AUTH_TYPE=none, both keys.
		{"base64 pair", []string{"AUTH_TYPE=none", "EC_PUBLIC_KEY_PEM=" + b64(pub), "EC_PRIVATE_KEY_PEM=" + b64(priv), "AGENT_AUTH_TOKEN=x"}, true, ""},
		{"escaped PEM pair, quoted", []string{`EC_PUBLIC_KEY_PEM="` + escaped(pub) + `"`, `EC_PRIVATE_KEY_PEM='` + escaped(priv) + `'`}, true, ""},
		{"private key only", []string{"EC_PRIVATE_KEY_PEM=" + b64(priv)}, true, ""},
		// agent-installer-local: the public key alone, nothing to carry.
		{"public key only", []string{"AUTH_TYPE=agent-installer-local", "EC_PUBLIC_KEY_PEM=" + b64(pub)}, false, ""},
		{"no key", nil, false, ""},
		{"mismatched pair", []string{"EC_PUBLIC_KEY_PEM=" + b64(otherPub), "EC_PRIVATE_KEY_PEM=" + b64(priv)}, false, "does not belong"},
		{"not PEM", []string{"EC_PRIVATE_KEY_PEM=" + b64([]byte("hello")) + "x"}, false, "neither PEM"},
		{"base64 of no PEM", []string{"EC_PRIVATE_KEY_PEM=" + b64([]byte("not a key"))}, false, "does not hold PEM"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeEnv(t, append(append([]string{}, db...), tc.lines...)...)
			k, err := envKeyPair(path)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				// The error names the variable, never a key's bytes.
				for _, secret := range [][]byte{priv, otherPriv, pub} {
					if strings.Contains(err.Error(), b64(secret)[:20]) || strings.Contains(err.Error(), "MHcCAQEE") {
						t.Fatalf("error quotes key material: %v", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (k != nil) != tc.carry {
				t.Fatalf("key found = %v, want %v", k != nil, tc.carry)
			}
			if k != nil && !k.Equal(want) {
				t.Fatal("the key read is not the env file's")
			}
		})
	}
}

func TestCarryEnvKey(t *testing.T) {
	priv, pub := ecPEM(t)
	path := writeEnv(t, "DB_HOST=h", "DB_USER=u", "DB_NAME=n", "EC_PRIVATE_KEY_PEM="+base64.StdEncoding.EncodeToString(priv),
		"EC_PUBLIC_KEY_PEM="+base64.StdEncoding.EncodeToString(pub))

	// Unencrypted: never carried, and said so.
	in := &bundleInput{}
	note, err := in.carryEnvKey(path, false)
	if err != nil || in.create.Resources != nil || !strings.Contains(note, "never carries") {
		t.Fatalf("unencrypted: note %q, resources %v, err %v", note, in.create.Resources, err)
	}
	// Encrypted, no manifests: a layer with the key alone.
	in = &bundleInput{}
	if note, err = in.carryEnvKey(path, true); err != nil || !strings.Contains(note, "carries node 0's token key") {
		t.Fatalf("note %q err %v", note, err)
	}
	ls, ok := in.create.Resources.(*resources.LocalAuthSource)
	if !ok {
		t.Fatalf("resources = %T, want the key-only layer", in.create.Resources)
	}
	data := map[string][]byte{}
	for k, v := range ls.Secret.Object["data"].(map[string]any) {
		data[k], _ = base64.StdEncoding.DecodeString(v.(string))
	}
	got, err := auth.KeyPairFromSecret(data)
	want, _ := auth.ParseKeyPair(priv, pub)
	if err != nil || !got.Equal(want) {
		t.Fatalf("carried Secret does not hold the env file's key (%v)", err)
	}
	// Encrypted, with manifests: added to the manifests layer.
	dir := &resources.DirSource{Dir: t.TempDir()}
	in = &bundleInput{}
	in.create.Resources = dir
	if _, err = in.carryEnvKey(path, true); err != nil || dir.LocalAuth == nil {
		t.Fatalf("manifests layer: LocalAuth %v err %v", dir.LocalAuth, err)
	}
	// No env file: nothing.
	in = &bundleInput{}
	if note, err = in.carryEnvKey("", true); note != "" || err != nil || in.create.Resources != nil {
		t.Fatalf("no env file: %q %v", note, err)
	}
}
