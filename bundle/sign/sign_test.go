package sign

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func pkcs8(t *testing.T, k any) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

func pkix(t *testing.T, k any) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// keyPairs are the two supported algorithms, as PEM files.
func keyPairs(t *testing.T) map[string][2][]byte {
	_, edPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecPriv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return map[string][2][]byte{
		"ed25519":    {pkcs8(t, edPriv), pkix(t, edPriv.Public())},
		"ecdsa-p256": {pkcs8(t, ecPriv), pkix(t, &ecPriv.PublicKey)},
	}
}

var subject = ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromString("a bundle manifest"), Size: 17}

// sigOf returns the payload and base64 signature of an artifact's manifest.
func sigOf(t *testing.T, a *Artifact) ([]byte, string) {
	t.Helper()
	var m ocispec.Manifest
	if err := json.Unmarshal(a.Manifest, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Layers) != 1 || m.Layers[0].MediaType != "application/vnd.dev.cosign.simplesigning.v1+json" {
		t.Fatalf("signature manifest layers: %+v", m.Layers)
	}
	if m.Layers[0].Digest != digest.FromBytes(a.Payload) || m.Config.Digest != digest.FromBytes(a.Config) {
		t.Fatalf("manifest descriptors do not match the blobs")
	}
	if m.Subject == nil || m.Subject.Digest != subject.Digest || m.ArtifactType != "application/vnd.dev.cosign.artifact.sig.v1+json" {
		t.Fatalf("not a referrer of the bundle: subject %+v artifactType %q", m.Subject, m.ArtifactType)
	}
	return a.Payload, m.Layers[0].Annotations["dev.cosignproject.cosign/signature"]
}

func TestSignVerify(t *testing.T) {
	pairs := keyPairs(t)
	for name, kp := range pairs {
		t.Run(name, func(t *testing.T) {
			priv, err := ParsePrivateKey(kp[0])
			if err != nil {
				t.Fatal(err)
			}
			pub, err := ParsePublicKey(kp[1])
			if err != nil {
				t.Fatal(err)
			}
			key, err := NewKey(pub)
			if err != nil {
				t.Fatal(err)
			}
			a, err := NewArtifact(priv, subject, "registry.example.com/assisted/node0")
			if err != nil {
				t.Fatal(err)
			}
			if a.Tag != "sha256-"+subject.Digest.Encoded()+".sig" {
				t.Errorf("tag %q", a.Tag)
			}
			payload, sig := sigOf(t, a)
			got, claim, err := Verify(subject.Digest, payload, sig, []Key{key})
			if err != nil {
				t.Fatalf("a good signature does not verify: %v", err)
			}
			if got.Fingerprint != key.Fingerprint || claim.Signer != key.Fingerprint || claim.Digest != subject.Digest.String() {
				t.Errorf("verified by %s, claim %+v, want %s", got.Fingerprint, claim, key.Fingerprint)
			}
			// The payload is cosign's: type and digest where cosign reads them.
			var p map[string]map[string]any
			if err := json.Unmarshal(payload, &p); err != nil {
				t.Fatal(err)
			}
			if p["critical"]["type"] != "cosign container image signature" ||
				p["critical"]["image"].(map[string]any)["docker-manifest-digest"] != subject.Digest.String() ||
				p["critical"]["identity"].(map[string]any)["docker-reference"] != "registry.example.com/assisted/node0" {
				t.Errorf("payload %s", payload)
			}

			// The other algorithm's key, and another key of the same one.
			for other, okp := range pairs {
				if other == name {
					continue
				}
				opub, _ := ParsePublicKey(okp[1])
				ok, _ := NewKey(opub)
				if _, _, err := Verify(subject.Digest, payload, sig, []Key{ok}); !errors.Is(err, ErrNoTrustedKey) {
					t.Errorf("verified with the %s key: %v", other, err)
				}
				// Trusting both: the right one is reported.
				if got, _, err := Verify(subject.Digest, payload, sig, []Key{ok, key}); err != nil || got.Fingerprint != key.Fingerprint {
					t.Errorf("with two trusted keys: %v, %s", err, got.Fingerprint)
				}
			}
			same := keyPairs(t)[name]
			spub, _ := ParsePublicKey(same[1])
			sk, _ := NewKey(spub)
			if _, _, err := Verify(subject.Digest, payload, sig, []Key{sk}); !errors.Is(err, ErrNoTrustedKey) {
				t.Errorf("verified with another %s key: %v", name, err)
			}
			if _, _, err := Verify(subject.Digest, payload, sig, nil); !errors.Is(err, ErrNoTrustedKey) {
				t.Errorf("verified with no key: %v", err)
			}

			// Another manifest (the bundle was replaced; the signature kept).
			if _, _, err := Verify(digest.FromString("another manifest"), payload, sig, []Key{key}); !errors.Is(err, ErrDigestMismatch) {
				t.Errorf("a signature of another manifest: %v", err)
			}
			// A payload edited to name another manifest.
			forged := []byte(strings.Replace(string(payload), subject.Digest.Encoded(), digest.FromString("forged").Encoded(), 1))
			if _, _, err := Verify(digest.FromString("forged"), forged, sig, []Key{key}); !errors.Is(err, ErrNoTrustedKey) {
				t.Errorf("an edited payload: %v", err)
			}
			// A flipped bit in the signature.
			raw, _ := base64.StdEncoding.DecodeString(sig)
			raw[len(raw)/2] ^= 0x01
			if _, _, err := Verify(subject.Digest, payload, base64.StdEncoding.EncodeToString(raw), []Key{key}); !errors.Is(err, ErrNoTrustedKey) {
				t.Errorf("a tampered signature: %v", err)
			}
			for _, bad := range []string{"", "not base64!"} {
				if _, _, err := Verify(subject.Digest, payload, bad, []Key{key}); !errors.Is(err, ErrBadEncoding) {
					t.Errorf("signature %q: %v", bad, err)
				}
			}
		})
	}
}

func TestPayloadRefused(t *testing.T) {
	good, err := Payload(subject.Digest, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParsePayload(good); err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]string{
		"other type":  strings.Replace(string(good), "cosign container image signature", "atomic container signature", 1),
		"bad digest":  strings.Replace(string(good), subject.Digest.String(), "sha256:zz", 1),
		"not json":    "{",
		"trailing":    string(good) + "{}",
		"huge":        `{"optional":{"x":"` + strings.Repeat("a", MaxPayloadBytes) + `"}}`,
		"empty":       "",
		"no critical": `{"optional":null}`,
	} {
		if _, err := ParsePayload([]byte(p)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestParseKeys(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, edPriv, _ := ed25519.GenerateKey(rand.Reader)
	for name, in := range map[string][]byte{
		"rsa":       pkcs8(t, rsaKey),
		"p384":      pkcs8(t, p384),
		"public":    pkix(t, edPriv.Public()),
		"encrypted": pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: []byte("x")}),
		"garbage":   []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"),
		"none":      []byte("hello"),
	} {
		_, err := ParsePrivateKey(in)
		if err == nil {
			t.Errorf("private %s: accepted", name)
			continue
		}
		if strings.Contains(err.Error(), string(in)) && len(in) > 10 {
			t.Errorf("private %s: the error quotes the key", name)
		}
	}
	for name, in := range map[string][]byte{
		"rsa":     pkix(t, &rsaKey.PublicKey),
		"p384":    pkix(t, &p384.PublicKey),
		"private": pkcs8(t, edPriv),
		"two":     append(pkix(t, edPriv.Public()), pkix(t, edPriv.Public())...),
		"none":    []byte("hello"),
	} {
		if _, err := ParsePublicKey(in); err == nil {
			t.Errorf("public %s: accepted", name)
		}
	}
}

func TestGenerateKey(t *testing.T) {
	privPEM, pubPEM, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	priv, err := ParsePrivateKey(privPEM)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ParsePublicKey(pubPEM)
	if err != nil {
		t.Fatal(err)
	}
	if !pub.(ed25519.PublicKey).Equal(priv.Public()) {
		t.Fatal("the public key is not the private key's")
	}
	fp, err := Fingerprint(pub)
	if err != nil || !strings.HasPrefix(fp, "sha256:") || len(fp) != len("sha256:")+64 {
		t.Fatalf("fingerprint %q: %v", fp, err)
	}
	var _ crypto.Signer = priv
}
