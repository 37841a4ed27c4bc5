// Package files is the files layer of a bundle: a PAX tar of assisted-service's
// file storage (/data) that keeps modes, modification times and user.* extended
// attributes (assisted-service records a manifest's origin in
// user.assisted-installer-manifest-source), stores symlinks as symlinks, and
// leaves rebuildable caches out.
//
// Write produces the tar from a directory; Check validates a tar without
// writing anything; Extract restores one into an empty staging directory and
// refuses any entry that would land outside it.
package files

import "regexp"

// Summary counts what a tar holds.
type Summary struct {
	Files     int64 `json:"files"`
	Dirs      int64 `json:"dirs"`
	Symlinks  int64 `json:"symlinks"`
	HardLinks int64 `json:"hardLinks"`
	// Bytes is the sum of the regular files' sizes.
	Bytes int64 `json:"bytes"`
	// Xattrs counts the extended attributes stored or restored.
	Xattrs int64 `json:"xattrs"`
	// XattrsLost are the entries whose user.* attributes the target
	// filesystem refused (Extract with SkipUnsupportedXattrs only).
	XattrsLost []string `json:"xattrsLost,omitempty"`
	// LongestName is the length in bytes of the longest relative path: the
	// extraction directory's own path plus it must fit PATH_MAX.
	LongestName int `json:"-"`
	// MaxXattrBytes is the largest sum of the extended attributes' names and
	// values of one entry; LargestXattrs are that entry's (name, value)
	// lengths, which CheckTarget probes the target filesystem with.
	MaxXattrBytes int64    `json:"-"`
	LargestXattrs [][2]int `json:"-"`
	// ClusterIDs are the top-level directories named like a UUID: the
	// clusters assisted-service keeps files for.
	ClusterIDs []string `json:"clusterIDs,omitempty"`
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// xattrPrefix is the only namespace stored and restored: user.* is what
// assisted-service writes, and other namespaces (security.*, trusted.*,
// system.*) belong to the host, not to the data.
const (
	xattrPrefix    = "user."
	paxXattrPrefix = "SCHILY.xattr."
)
