package oci

import (
	"errors"
	"fmt"
	"strings"

	"github.com/opencontainers/go-digest"
	"oras.land/oras-go/v2/registry"
)

// Transport is where a bundle is stored.
type Transport string

// The transports of ParseReference; the names are skopeo's.
const (
	TransportRegistry Transport = "docker"
	TransportLayout   Transport = "oci"
	TransportArchive  Transport = "oci-archive"
	defaultTag                  = "latest"
	registryPrefix              = "docker://"
	layoutPrefix                = "oci:"
	archivePrefix               = "oci-archive:"
	maxTagLength                = 128
	tagCharsFirst               = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"
	tagCharsRest                = tagCharsFirst + ".-"
	errRefHint                  = "use HOST[:PORT]/REPO[:TAG|@DIGEST], oci:DIR[:TAG] or oci-archive:FILE[:TAG]"
)

// Reference names a bundle: a registry repository with a tag or digest, or an
// image layout directory or archive with a tag.
type Reference struct {
	Transport Transport
	// Registry is HOST[:PORT] and Repository the repository path (registry only).
	Registry, Repository string
	// Path is the layout directory or archive file (oci, oci-archive).
	Path string
	// Tag is the tag; empty when Digest is set or, for layouts, when none was given.
	Tag string
	// Digest pins the manifest (registry only).
	Digest digest.Digest
}

// ParseReference parses s like skopeo does: "oci:DIR[:TAG]",
// "oci-archive:FILE[:TAG]", "docker://HOST/REPO..." or plain
// "HOST[:PORT]/REPO[:TAG|@DIGEST]". A registry reference must name its host (no
// implicit docker.io), so that a typo never pushes a bundle somewhere public.
func ParseReference(s string) (Reference, error) {
	switch {
	case s == "":
		return Reference{}, errors.New("empty bundle reference: " + errRefHint)
	case strings.HasPrefix(s, archivePrefix):
		return parsePathRef(TransportArchive, strings.TrimPrefix(s, archivePrefix), s)
	case strings.HasPrefix(s, layoutPrefix):
		return parsePathRef(TransportLayout, strings.TrimPrefix(s, layoutPrefix), s)
	}
	raw := strings.TrimPrefix(s, registryPrefix)
	if i := strings.Index(raw, "://"); i >= 0 {
		return Reference{}, fmt.Errorf("bundle reference %q: unsupported transport %q: %s", s, raw[:i], errRefHint)
	}
	if first, _, _ := strings.Cut(raw, "/"); !strings.ContainsAny(first, ".:") && first != "localhost" {
		return Reference{}, fmt.Errorf("bundle reference %q: the registry host is missing (for example registry.example.com/%s): %s", s, raw, errRefHint)
	}
	r, err := registry.ParseReference(raw)
	if err != nil {
		return Reference{}, fmt.Errorf("bundle reference %q: %w", s, err)
	}
	ref := Reference{Transport: TransportRegistry, Registry: r.Registry, Repository: r.Repository}
	if d, err := r.Digest(); err == nil {
		ref.Digest = d
	} else {
		ref.Tag = r.Reference
	}
	if ref.Tag == "" && ref.Digest == "" {
		ref.Tag = defaultTag
	}
	return ref, nil
}

func parsePathRef(t Transport, rest, orig string) (Reference, error) {
	// skopeo splits at the first colon: paths with colons need a tag.
	path, tag, _ := strings.Cut(rest, ":")
	if path == "" {
		return Reference{}, fmt.Errorf("bundle reference %q: the %s path is empty: %s", orig, t, errRefHint)
	}
	if tag != "" && !validTag(tag) {
		return Reference{}, fmt.Errorf("bundle reference %q: invalid tag %q", orig, tag)
	}
	return Reference{Transport: t, Path: path, Tag: tag}, nil
}

func validTag(tag string) bool {
	if len(tag) == 0 || len(tag) > maxTagLength || !strings.ContainsRune(tagCharsFirst, rune(tag[0])) {
		return false
	}
	for _, c := range tag[1:] {
		if !strings.ContainsRune(tagCharsRest, c) {
			return false
		}
	}
	return true
}

// TagOrDefault is the tag, or "latest" when the reference has neither tag nor digest.
func (r Reference) TagOrDefault() string {
	if r.Tag == "" && r.Digest == "" {
		return defaultTag
	}
	return r.Tag
}

// String is the reference in the form ParseReference reads.
func (r Reference) String() string {
	switch r.Transport {
	case TransportLayout, TransportArchive:
		s := string(r.Transport) + ":" + r.Path
		if r.Tag != "" {
			s += ":" + r.Tag
		}
		return s
	}
	s := r.Registry + "/" + r.Repository
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest.String()
	}
	return s
}

// Remote reports whether the reference names a registry (as opposed to local disk).
func (r Reference) Remote() bool { return r.Transport == TransportRegistry }
