package bundle

import (
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/oci"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/selfimage"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/sign"
)

// SignatureStatus is what Open learned about a bundle's signatures; its json
// form is part of `bundle inspect` and `bundle verify -o json`.
type SignatureStatus struct {
	// Checked is false when the check was skipped (AllowUnsigned).
	Checked bool `json:"checked"`
	// Verified is true when a signature by one of the trusted keys names
	// this bundle's manifest digest.
	Verified bool `json:"verified"`
	// Signer is the fingerprint of the trusted key that verified it.
	Signer string `json:"signer,omitempty"`
	// Found are the key fingerprints the signatures of this manifest name,
	// verified or not (a claim until Verified).
	Found []string `json:"found,omitempty"`
}

// SignatureError is a bundle without a valid signature by a trusted key:
// unsigned, signed by another key, or with a signature that does not verify.
type SignatureError struct {
	Digest string
	// Reason says which: see the Reason* constants.
	Reason string
	// Found are the key fingerprints the signatures found name.
	Found []string
	// Notes are why candidate signatures were set aside.
	Notes []string
}

// Reasons of a SignatureError.
const (
	ReasonUnsigned  = "not signed"
	ReasonNoSigner  = "no trusted signer given"
	ReasonUntrusted = "not signed by a trusted key"
	ReasonInvalid   = "signature does not verify"
)

func (e *SignatureError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "bundle %s: %s", e.Digest, e.Reason)
	switch e.Reason {
	case ReasonUnsigned:
		b.WriteString(" (no cosign signature refers to its manifest)")
	case ReasonNoSigner:
		b.WriteString(" (--signer)")
	}
	if len(e.Found) > 0 {
		fmt.Fprintf(&b, "; signatures found by key %s", strings.Join(e.Found, ", "))
	}
	if len(e.Notes) > 0 {
		fmt.Fprintf(&b, "; %s", strings.Join(e.Notes, "; "))
	}
	return b.String()
}

// SignerKeys turns public keys into trusted keys.
func SignerKeys(pubs []crypto.PublicKey) ([]sign.Key, error) {
	var out []sign.Key
	for _, p := range pubs {
		k, err := sign.NewKey(p)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, nil
}

// signBundle pushes the signature of the manifest mdesc (before the manifest
// itself, so the tag never names an unsigned bundle).
func signBundle(ctx context.Context, w oci.Writer, key crypto.Signer, mdesc ocispec.Descriptor, dockerRef string) (string, error) {
	rw, ok := w.(oci.ReferrerWriter)
	if !ok {
		return "", fmt.Errorf("this target (%T) cannot store a signature", w)
	}
	a, err := sign.NewArtifact(key, mdesc, dockerRef)
	if err != nil {
		return "", fmt.Errorf("sign: %w", err)
	}
	if _, err := w.PushBytes(ctx, sign.ConfigMediaType, a.Config); err != nil {
		return "", fmt.Errorf("push signature: %w", err)
	}
	if _, err := w.PushBytes(ctx, sign.PayloadMediaType, a.Payload); err != nil {
		return "", fmt.Errorf("push signature: %w", err)
	}
	if err := rw.PushReferrer(ctx, oci.ReferrerDescriptor(a.Manifest, sign.ArtifactType), a.Manifest, a.Tag); err != nil {
		return "", fmt.Errorf("push signature: %w", err)
	}
	return sign.Fingerprint(key.Public())
}

// candidate is one signature found: a payload and its signature annotation.
type candidate struct {
	payload []byte
	sig     string
}

const maxSignatureLayers = 8

// checkSignature looks for the signatures of the manifest desc and checks
// them against opts.Signers. It reads nothing of the bundle itself: only
// the signature manifests that name it (referrers) and cosign's tag.
func checkSignature(ctx context.Context, src oci.Source, desc ocispec.Descriptor, opts OpenOptions) (*SignatureStatus, error) {
	st := &SignatureStatus{}
	if opts.AllowUnsigned && !opts.ListSignatures {
		return st, nil
	}
	st.Checked = true
	cands, notes := findSignatures(ctx, src, desc)
	seen := map[string]bool{}
	for _, c := range cands {
		k, claim, err := sign.Verify(desc.Digest, c.payload, c.sig, opts.Signers)
		if claim.Signer != "" && claim.Digest == desc.Digest.String() && !seen[claim.Signer] {
			seen[claim.Signer] = true
			st.Found = append(st.Found, claim.Signer)
		}
		if err == nil {
			st.Verified, st.Signer = true, k.Fingerprint
			if !seen[k.Fingerprint] {
				seen[k.Fingerprint] = true
				st.Found = append(st.Found, k.Fingerprint)
			}
			break
		}
		if !errors.Is(err, sign.ErrNoTrustedKey) || len(opts.Signers) > 0 {
			notes = append(notes, "a signature was set aside: "+err.Error())
		}
	}
	if st.Verified || opts.ListSignatures || opts.AllowUnsigned {
		return st, nil
	}
	e := &SignatureError{Digest: desc.Digest.String(), Found: st.Found, Notes: notes}
	switch {
	case len(cands) == 0:
		e.Reason = ReasonUnsigned
	case len(opts.Signers) == 0:
		e.Reason, e.Notes = ReasonNoSigner, nil
	default:
		e.Reason = ReasonUntrusted
		for _, f := range st.Found {
			for _, k := range opts.Signers {
				if k.Fingerprint == f {
					// The payload names a trusted key, whose signature fails.
					e.Reason = ReasonInvalid
				}
			}
		}
	}
	return nil, e
}

// findSignatures collects the cosign signatures of desc: referrers of the
// cosign artifactType and the manifest at cosign's tag. Anything that does
// not fetch, verify against its descriptor or decode is set aside with a note.
func findSignatures(ctx context.Context, src oci.Source, desc ocispec.Descriptor) ([]candidate, []string) {
	rs, ok := src.(oci.ReferrerSource)
	if !ok {
		return nil, nil
	}
	var notes []string
	var descs []ocispec.Descriptor
	// cosign's tag first: it names this digest, whatever else the
	// repository or layout lists.
	if d, err := rs.ResolveTag(ctx, sign.Tag(desc.Digest)); err == nil {
		descs = append(descs, d)
	} else if !oci.IsNotFound(err) {
		notes = append(notes, fmt.Sprintf("resolve %s: %v", sign.Tag(desc.Digest), err))
	}
	refs, err := rs.Referrers(ctx, desc, sign.ArtifactType)
	if err != nil {
		notes = append(notes, err.Error())
	}
	descs = append(descs, refs...)
	var out []candidate
	done := map[string]bool{}
	for _, d := range descs {
		if done[d.Digest.String()] || len(done) == oci.MaxReferrers {
			continue
		}
		done[d.Digest.String()] = true
		cs, err := readSignatureManifest(ctx, src, d)
		if err != nil {
			notes = append(notes, fmt.Sprintf("signature manifest %s: %v", d.Digest, err))
			continue
		}
		out = append(out, cs...)
	}
	return out, notes
}

const maxSignatureManifestBytes = 64 << 10

func readSignatureManifest(ctx context.Context, src oci.Source, d ocispec.Descriptor) ([]candidate, error) {
	if d.MediaType != ocispec.MediaTypeImageManifest {
		return nil, fmt.Errorf("media type %q, want %q", d.MediaType, ocispec.MediaTypeImageManifest)
	}
	if d.Size > maxSignatureManifestBytes {
		return nil, fmt.Errorf("%d bytes is over the %d limit", d.Size, maxSignatureManifestBytes)
	}
	mb, err := fetchSmall(ctx, src, d, "signature manifest")
	if err != nil {
		return nil, err
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(mb, &m); err != nil {
		return nil, err
	}
	var out []candidate
	for i, l := range m.Layers {
		if i == maxSignatureLayers {
			break
		}
		if l.MediaType != sign.PayloadMediaType || l.Size > sign.MaxPayloadBytes {
			continue
		}
		p, err := fetchSmall(ctx, src, l, "signature payload")
		if err != nil {
			return out, err
		}
		out = append(out, candidate{payload: p, sig: l.Annotations[sign.AnnotationSignature]})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no %s layer", sign.PayloadMediaType)
	}
	return out, nil
}

// RestoreImage is a restore image stored beside the bundle (a referrer of
// its manifest; see bundle/selfimage): `bundle inspect` lists them.
type RestoreImage struct {
	Digest   string `json:"digest"`
	Version  string `json:"version,omitempty"`
	Platform string `json:"platform,omitempty"`
}

// RestoreImages lists the restore images stored beside the bundle, from
// the registry's referrers (or the referrers tag schema) and their tag. A
// layout or archive holds none.
func (b *Bundle) RestoreImages(ctx context.Context) ([]RestoreImage, error) {
	rs, ok := b.src.(oci.ReferrerSource)
	if !ok {
		return nil, nil
	}
	descs, err := selfimage.List(ctx, rs, b.Descriptor)
	if err != nil {
		return nil, err
	}
	if d, err := rs.ResolveTag(ctx, selfimage.Tag(b.Descriptor.Digest)); err == nil {
		descs = append(descs, d)
	}
	var out []RestoreImage
	seen := map[string]bool{}
	for _, d := range descs {
		if seen[d.Digest.String()] {
			continue
		}
		seen[d.Digest.String()] = true
		out = append(out, RestoreImage{Digest: d.Digest.String(), Version: d.Annotations[selfimage.AnnotationVersion],
			Platform: d.Annotations[selfimage.AnnotationPlatform]})
	}
	return out, nil
}
