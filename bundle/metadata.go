package bundle

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Metadata is the bundle's config blob: what is inside, where it came from and
// who can decrypt it. It is never encrypted and never holds a secret (no
// password, token, pull secret, DSN or Secret data), so `bundle inspect` shows
// it without an identity.
type Metadata struct {
	FormatVersion string    `json:"formatVersion"`
	Created       time.Time `json:"created"`
	// Creator is the tool and version that wrote the bundle.
	Creator    string         `json:"creator,omitempty"`
	Source     Source         `json:"source"`
	Database   *DatabaseInfo  `json:"database,omitempty"`
	Files      *FilesInfo     `json:"files,omitempty"`
	Resources  *ResourcesInfo `json:"resources,omitempty"`
	Encryption EncryptionInfo `json:"encryption"`
}

// Source describes node 0 at the time of the bundle.
type Source struct {
	// AssistedServiceImage is the service image, when the caller knows it.
	AssistedServiceImage string `json:"assistedServiceImage,omitempty"`
	// PostgresVersion is the source server's version (server_version).
	PostgresVersion string `json:"postgresVersion,omitempty"`
	// LastMigration is the newest row of assisted-service's migrations table.
	LastMigration string `json:"lastMigration,omitempty"`
	// ClusterIDs are the clusters found in the file storage (top-level UUID
	// directories) and the database.
	ClusterIDs []string `json:"clusterIDs,omitempty"`
}

// DatabaseInfo summarises the database layer.
type DatabaseInfo struct {
	Tables []TableInfo `json:"tables"`
	// Bytes is the size of the dump stream before compression.
	Bytes int64 `json:"bytes"`
}

// TableInfo is one table's row count and content checksum as the engine computed it.
type TableInfo struct {
	Schema   string `json:"schema"`
	Name     string `json:"name"`
	Rows     int64  `json:"rows"`
	Checksum string `json:"checksum,omitempty"`
}

// FilesInfo summarises the files layer.
type FilesInfo struct {
	Files     int64 `json:"files"`
	Dirs      int64 `json:"dirs"`
	Symlinks  int64 `json:"symlinks"`
	HardLinks int64 `json:"hardLinks"`
	// Bytes is the sum of the regular files' sizes.
	Bytes int64 `json:"bytes"`
	// LongestPath and LargestXattrs (format 1.1) are the layer's largest
	// entry: the length of its longest relative path, and the (name, value)
	// lengths of its largest set of user.* extended attributes. With them,
	// an extraction checks its target before reading the layer and refuses
	// any entry beyond them, so it reads the layer once.
	LongestPath   int      `json:"longestPath,omitempty"`
	LargestXattrs [][2]int `json:"largestXattrs,omitempty"`
	// Parts (format 1.2) is the number of blobs the layer is cut into,
	// when more than one: the manifest must list exactly that many.
	Parts int `json:"parts,omitempty"`
	// Excluded are the patterns of rebuildable content left out.
	Excluded []string `json:"excluded,omitempty"`
}

// ResourcesInfo summarises the resources layer.
type ResourcesInfo struct {
	// From is "cluster" (exported from an API server) or "manifests" (ABI
	// manifest files).
	From       string         `json:"from"`
	Namespaces []string       `json:"namespaces,omitempty"`
	Objects    int            `json:"objects"`
	Kinds      map[string]int `json:"kinds,omitempty"`
}

// EncryptionInfo says how the layers are encrypted and to whom.
type EncryptionInfo struct {
	// Scheme is "age" or "none".
	Scheme string `json:"scheme"`
	// Recipients are fingerprints (see RecipientFingerprint) of the age
	// recipients, never keys of identities.
	Recipients []string `json:"recipients,omitempty"`
}

// Encryption schemes.
const (
	EncryptionAge  = "age"
	EncryptionNone = "none"
)

const maxMetadataBytes = 4 << 20

// decodeMetadata reads the config blob strictly: one JSON object, no trailing
// data, and no unknown field unless the bundle's minor version is newer than
// ours (minor versions only add fields).
func decodeMetadata(b []byte, newerMinor bool) (*Metadata, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if !newerMinor {
		dec.DisallowUnknownFields()
	}
	var m Metadata
	if err := dec.Decode(&m); err != nil {
		return nil, &FormatError{What: "metadata (config blob)", Err: err}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, &FormatError{What: "metadata (config blob)", Err: errors.New("trailing data after the JSON object")}
	}
	if m.FormatVersion == "" {
		return nil, &FormatError{What: "metadata (config blob)", Err: errors.New("formatVersion is missing")}
	}
	switch m.Encryption.Scheme {
	case EncryptionAge, EncryptionNone:
	default:
		return nil, &FormatError{What: "metadata (config blob)", Err: fmt.Errorf("unknown encryption scheme %q", m.Encryption.Scheme)}
	}
	return &m, nil
}

// version is a parsed MAJOR.MINOR.PATCH.
type version struct{ major, minor, patch int }

func parseVersion(s string) (version, error) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return version{}, fmt.Errorf("format version %q is not MAJOR.MINOR.PATCH", s)
	}
	var v [3]int
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || (len(p) > 1 && p[0] == '0') {
			return version{}, fmt.Errorf("format version %q is not MAJOR.MINOR.PATCH", s)
		}
		v[i] = n
	}
	return version{v[0], v[1], v[2]}, nil
}

// checkVersion refuses other majors; it reports whether the bundle's minor is
// newer than ours (then unknown fields and layers are tolerated).
func checkVersion(s string) (newerMinor bool, err error) {
	got, err := parseVersion(s)
	if err != nil {
		return false, &FormatError{What: "manifest", Err: err}
	}
	ours, _ := parseVersion(FormatVersion)
	if got.major != ours.major {
		return false, &UnsupportedVersionError{Version: s}
	}
	return got.minor > ours.minor, nil
}
