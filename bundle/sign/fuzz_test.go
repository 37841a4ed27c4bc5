package sign

import (
	"encoding/base64"
	"testing"
)

// FuzzVerify feeds arbitrary payloads and signatures to the reader's check:
// no panic, and nothing verifies without the trusted key's signature of a
// payload naming the wanted digest.
func FuzzVerify(f *testing.F) {
	priv, pubPEM, err := GenerateKey()
	if err != nil {
		f.Fatal(err)
	}
	k, _ := ParsePrivateKey(priv)
	pub, _ := ParsePublicKey(pubPEM)
	key, _ := NewKey(pub)
	good, _ := Payload(subject.Digest, "r.example.com/a", key.Fingerprint)
	f.Add(good, "")
	f.Add([]byte(`{"critical":{"type":"cosign container image signature","image":{"docker-manifest-digest":"sha256:00"}}}`), "AAAA")
	f.Add([]byte(`{}`), "!!")
	f.Fuzz(func(t *testing.T, payload []byte, sig string) {
		_, _ = ParsePayload(payload)
		if _, _, err := Verify(subject.Digest, payload, sig, []Key{key}); err == nil {
			t.Fatalf("verified a signature nobody made: %q %q", payload, sig)
		}
		// With a real signature of that payload: verifies only when it names the digest.
		s, err := Sign(k, payload)
		if err != nil {
			t.Fatal(err)
		}
		c, perr := ParsePayload(payload)
		_, _, err = Verify(subject.Digest, payload, base64.StdEncoding.EncodeToString(s), []Key{key})
		if (err == nil) != (perr == nil && c.Digest == subject.Digest.String()) {
			t.Fatalf("payload %q: verify %v, parse %v %+v", payload, err, perr, c)
		}
	})
}
