// Package sign signs a bundle's manifest digest and checks such signatures.
//
// The format is cosign's key-pair signature of a container image, so that
// `cosign verify --key` checks a bundle too: a "simple signing" JSON payload
// naming the manifest digest, signed with an ed25519 or ECDSA P-256 key, the
// base64 signature in the dev.cosignproject.cosign/signature annotation of the
// payload's layer, in an OCI image manifest whose subject is the bundle's
// manifest (an OCI 1.1 referrer) and that is also tagged sha256-<hex>.sig
// (cosign's tag). docs/bundle-format.md describes it.
//
// Keys are PEM: private keys PKCS#8 ("PRIVATE KEY", as `openssl genpkey`
// writes them), public keys PKIX ("PUBLIC KEY", as `openssl pkey -pubout`
// writes them). A key is named by its fingerprint: "sha256:" and the hex
// SHA-256 of its PKIX DER encoding (`openssl pkey -pubin -outform DER |
// sha256sum`).
package sign

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Names of cosign's signature format (cosign's specs/SIGNATURE_SPEC.md).
const (
	// ArtifactType is the artifactType of a signature manifest stored as a
	// referrer (cosign's "OCI 1.1" mode of key-pair signatures).
	ArtifactType = "application/vnd.dev.cosign.artifact.sig.v1+json"
	// PayloadMediaType is the media type of the payload layer.
	PayloadMediaType = "application/vnd.dev.cosign.simplesigning.v1+json"
	// AnnotationSignature holds the base64 signature on the payload layer.
	AnnotationSignature = "dev.cosignproject.cosign/signature"
	// PayloadType is the simple signing payload's critical.type.
	PayloadType = "cosign container image signature"
	// ConfigMediaType is the signature manifest's config (an empty image config).
	ConfigMediaType = ocispec.MediaTypeImageConfig
	// AnnotationSigner is the payload's optional field naming the signing
	// key's fingerprint (signed, so `bundle inspect` can show it).
	AnnotationSigner = "io.kubectl-assisted.signer"
	// MaxPayloadBytes bounds a payload read from storage.
	MaxPayloadBytes = 64 << 10
)

// ErrUnsupportedKey is a key of an algorithm this package does not sign with.
var ErrUnsupportedKey = errors.New("unsupported key: want ed25519 or ECDSA P-256")

// ParsePrivateKey reads a PEM PKCS#8 private key (ed25519 or ECDSA P-256).
// Errors never quote the input: it is a secret.
func ParsePrivateKey(data []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block found (want a PKCS#8 \"PRIVATE KEY\", e.g. from `openssl genpkey -algorithm ed25519`)")
	}
	switch block.Type {
	case "PRIVATE KEY":
	case "ENCRYPTED PRIVATE KEY", "ENCRYPTED SIGSTORE PRIVATE KEY", "ENCRYPTED COSIGN PRIVATE KEY":
		return nil, fmt.Errorf("the key is encrypted (%s): give an unencrypted PKCS#8 key, and keep the file private", block.Type)
	default:
		return nil, fmt.Errorf("PEM block %q: want a PKCS#8 \"PRIVATE KEY\"", block.Type)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, errors.New("not a valid PKCS#8 private key")
	}
	switch k := k.(type) {
	case ed25519.PrivateKey:
		return k, nil
	case *ecdsa.PrivateKey:
		if k.Curve != elliptic.P256() {
			return nil, fmt.Errorf("%w (ECDSA on %s)", ErrUnsupportedKey, k.Curve.Params().Name)
		}
		return k, nil
	}
	return nil, fmt.Errorf("%w (%T)", ErrUnsupportedKey, k)
}

// ParsePublicKey reads a PEM PKIX public key (ed25519 or ECDSA P-256).
func ParsePublicKey(data []byte) (crypto.PublicKey, error) {
	block, rest := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block found (want a \"PUBLIC KEY\", e.g. from `openssl pkey -pubout`)")
	}
	if block.Type != "PUBLIC KEY" {
		if strings.Contains(block.Type, "PRIVATE") {
			return nil, errors.New("this is a private key: give the public key (`openssl pkey -in KEY -pubout`)")
		}
		return nil, fmt.Errorf("PEM block %q: want a \"PUBLIC KEY\"", block.Type)
	}
	if b, _ := pem.Decode(rest); b != nil {
		return nil, errors.New("more than one PEM block: give one public key per file")
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("not a valid PKIX public key: %w", err)
	}
	if err := checkPublic(k); err != nil {
		return nil, err
	}
	return k, nil
}

func checkPublic(k crypto.PublicKey) error {
	switch k := k.(type) {
	case ed25519.PublicKey:
		if len(k) != ed25519.PublicKeySize {
			return fmt.Errorf("%w (ed25519 key of %d bytes)", ErrUnsupportedKey, len(k))
		}
		return nil
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return fmt.Errorf("%w (ECDSA on %s)", ErrUnsupportedKey, k.Curve.Params().Name)
		}
		return nil
	}
	return fmt.Errorf("%w (%T)", ErrUnsupportedKey, k)
}

// MarshalPublicKey is the PEM PKIX form of a public key.
func MarshalPublicKey(pub crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// GenerateKey makes an ed25519 key pair, PEM encoded: PKCS#8 private, PKIX public.
func GenerateKey() (privPEM, pubPEM []byte, err error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, nil, err
	}
	if pubPEM, err = MarshalPublicKey(pub); err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), pubPEM, nil
}

// Fingerprint names a public key: "sha256:" and the hex SHA-256 of its PKIX DER.
func Fingerprint(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(der)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// payload is cosign's simple signing payload (containers/image's "atomic
// container signature" with cosign's type).
type payload struct {
	Critical struct {
		Identity struct {
			DockerReference string `json:"docker-reference"`
		} `json:"identity"`
		Image struct {
			DockerManifestDigest string `json:"docker-manifest-digest"`
		} `json:"image"`
		Type string `json:"type"`
	} `json:"critical"`
	Optional map[string]any `json:"optional"`
}

// Payload is the simple signing payload for a manifest digest. dockerRef is
// the repository (HOST/REPO) the bundle was pushed to, or empty for a layout;
// signer is the signing key's fingerprint.
func Payload(manifest digest.Digest, dockerRef, signer string) ([]byte, error) {
	if err := manifest.Validate(); err != nil {
		return nil, err
	}
	var p payload
	p.Critical.Identity.DockerReference = dockerRef
	p.Critical.Image.DockerManifestDigest = manifest.String()
	p.Critical.Type = PayloadType
	if signer != "" {
		p.Optional = map[string]any{AnnotationSigner: signer}
	}
	return json.Marshal(p)
}

// Sign signs payload as cosign does: ed25519 over the bytes, ECDSA P-256
// over their SHA-256 (ASN.1 DER signature).
func Sign(key crypto.Signer, payload []byte) ([]byte, error) {
	switch k := key.(type) {
	case ed25519.PrivateKey:
		return ed25519.Sign(k, payload), nil
	case *ecdsa.PrivateKey:
		sum := sha256.Sum256(payload)
		return ecdsa.SignASN1(rand.Reader, k, sum[:])
	}
	return nil, fmt.Errorf("%w (%T)", ErrUnsupportedKey, key)
}

// VerifySignature reports whether sig is pub's signature of payload.
func VerifySignature(pub crypto.PublicKey, payload, sig []byte) bool {
	switch k := pub.(type) {
	case ed25519.PublicKey:
		return len(k) == ed25519.PublicKeySize && ed25519.Verify(k, payload, sig)
	case *ecdsa.PublicKey:
		sum := sha256.Sum256(payload)
		return ecdsa.VerifyASN1(k, sum[:], sig)
	}
	return false
}

// Claim is what a payload says, before any signature is checked.
type Claim struct {
	// Digest is the manifest digest the payload names.
	Digest string
	// Signer is the key fingerprint the payload names, if any (unverified
	// until a signature by that key checks).
	Signer string
}

// ParsePayload decodes a simple signing payload and checks its type.
func ParsePayload(b []byte) (Claim, error) {
	if len(b) > MaxPayloadBytes {
		return Claim{}, fmt.Errorf("payload of %d bytes is over the %d limit", len(b), MaxPayloadBytes)
	}
	var p payload
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&p); err != nil {
		return Claim{}, fmt.Errorf("payload: %w", err)
	}
	if dec.More() {
		return Claim{}, errors.New("payload: trailing data after the JSON object")
	}
	if p.Critical.Type != PayloadType {
		return Claim{}, fmt.Errorf("payload type %q, want %q", p.Critical.Type, PayloadType)
	}
	d, err := digest.Parse(p.Critical.Image.DockerManifestDigest)
	if err != nil {
		return Claim{}, fmt.Errorf("payload digest: %w", err)
	}
	c := Claim{Digest: d.String()}
	if s, ok := p.Optional[AnnotationSigner].(string); ok {
		c.Signer = s
	}
	return c, nil
}

// Key is a trusted public key and its fingerprint.
type Key struct {
	Public      crypto.PublicKey
	Fingerprint string
}

// NewKey checks pub and computes its fingerprint.
func NewKey(pub crypto.PublicKey) (Key, error) {
	if err := checkPublic(pub); err != nil {
		return Key{}, err
	}
	fp, err := Fingerprint(pub)
	if err != nil {
		return Key{}, err
	}
	return Key{Public: pub, Fingerprint: fp}, nil
}

// Errors of Verify.
var (
	// ErrDigestMismatch: the payload names another manifest (a signature
	// moved from another bundle).
	ErrDigestMismatch = errors.New("the signed payload names another manifest")
	// ErrNoTrustedKey: the signature verifies with none of the trusted keys.
	ErrNoTrustedKey = errors.New("the signature verifies with none of the trusted keys")
	// ErrBadEncoding: the signature annotation is missing or not base64.
	ErrBadEncoding = errors.New("the signature annotation is missing or not base64")
)

// Verify checks one signature (the payload and its base64 signature
// annotation) of the manifest with digest want against trusted keys, and
// returns the key that verified it.
func Verify(want digest.Digest, payload []byte, sigB64 string, trusted []Key) (Key, Claim, error) {
	c, err := ParsePayload(payload)
	if err != nil {
		return Key{}, c, err
	}
	if c.Digest != want.String() {
		return Key{}, c, fmt.Errorf("%w (%s, want %s)", ErrDigestMismatch, c.Digest, want)
	}
	sig, err := base64.StdEncoding.DecodeString(sigB64)
	if err != nil || len(sig) == 0 {
		return Key{}, c, ErrBadEncoding
	}
	for _, k := range trusted {
		if VerifySignature(k.Public, payload, sig) {
			return k, c, nil
		}
	}
	return Key{}, c, ErrNoTrustedKey
}

// Artifact is a signature as stored: the blobs and the manifest that refers
// to the signed manifest.
type Artifact struct {
	Config, Payload []byte
	Manifest        []byte
	// Tag is cosign's tag for the signature: sha256-<hex>.sig.
	Tag string
}

// Tag is cosign's tag of the signatures of a manifest: "sha256-<hex>.sig".
func Tag(subject digest.Digest) string {
	return subject.Algorithm().String() + "-" + subject.Encoded() + ".sig"
}

// NewArtifact signs the manifest subject and builds its signature manifest.
func NewArtifact(key crypto.Signer, subject ocispec.Descriptor, dockerRef string) (*Artifact, error) {
	fp, err := Fingerprint(key.Public())
	if err != nil {
		return nil, err
	}
	p, err := Payload(subject.Digest, dockerRef, fp)
	if err != nil {
		return nil, err
	}
	sig, err := Sign(key, p)
	if err != nil {
		return nil, err
	}
	pd := digest.FromBytes(p)
	// The config is the image config cosign writes: no platform, the payload
	// as the one layer.
	cfg, err := json.Marshal(map[string]any{
		"architecture": "", "os": "", "created": "0001-01-01T00:00:00Z",
		"history": []map[string]string{{"created": "0001-01-01T00:00:00Z"}},
		"rootfs":  map[string]any{"type": "layers", "diff_ids": []string{pd.String()}},
		"config":  map[string]any{},
	})
	if err != nil {
		return nil, err
	}
	m := ocispec.Manifest{
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: ArtifactType,
		Config:       ocispec.Descriptor{MediaType: ConfigMediaType, Digest: digest.FromBytes(cfg), Size: int64(len(cfg))},
		Layers: []ocispec.Descriptor{{
			MediaType:   PayloadMediaType,
			Digest:      pd,
			Size:        int64(len(p)),
			Annotations: map[string]string{AnnotationSignature: base64.StdEncoding.EncodeToString(sig)},
		}},
		Subject: &ocispec.Descriptor{MediaType: subject.MediaType, Digest: subject.Digest, Size: subject.Size},
	}
	m.SchemaVersion = 2
	mb, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return &Artifact{Config: cfg, Payload: p, Manifest: mb, Tag: Tag(subject.Digest)}, nil
}
