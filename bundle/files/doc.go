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

import (
	"regexp"
	"strings"
)

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

// Bounds are the largest things one entry of a layer holds: the longest
// relative path and the largest set of extended attributes. The writer
// records them (Write's Summary) so that a bundle's metadata can declare
// them; with declared bounds, CheckTarget can probe the target before the
// first entry is read, and extraction refuses an entry beyond them.
type Bounds struct {
	LongestName   int
	LargestXattrs [][2]int // (name, value) lengths of one entry
}

// WithinLimits reports whether the bounds fit what Linux allows one entry
// (PATH_MAX, the xattr limits). Bounds beyond them only come from altered
// metadata, and what exceeds them is refused entry by entry, with its reason.
func (b Bounds) WithinLimits() bool {
	if b.LongestName < 0 || b.LongestName > PathMax {
		return false
	}
	list := 0
	for _, s := range b.LargestXattrs {
		if s[0] <= 0 || s[0] > XattrNameMax || s[1] < 0 || s[1] > XattrValueMax {
			return false
		}
		list += s[0] + 1
	}
	return list <= XattrListMax
}

// MaxXattrBytes is the sum of the largest set's names and values.
func (b Bounds) MaxXattrBytes() int64 {
	var n int64
	for _, s := range b.LargestXattrs {
		n += int64(s[0] + s[1])
	}
	return n
}

// Bounds returns what s found of them.
func (s *Summary) Bounds() Bounds {
	return Bounds{LongestName: s.LongestName, LargestXattrs: s.LargestXattrs}
}

// Checked turns declared bounds into the Summary CheckTarget probes with.
func (b Bounds) Checked() *Summary {
	return &Summary{LongestName: b.LongestName, LargestXattrs: b.LargestXattrs, MaxXattrBytes: b.MaxXattrBytes()}
}

// note records an entry's clean name and its PAX records in the bounds.
func (s *Summary) note(name string, pax map[string]string) {
	var total int64
	var sizes [][2]int
	for k, val := range pax {
		if x, ok := strings.CutPrefix(k, paxXattrPrefix); ok {
			total += int64(len(x) + len(val))
			sizes = append(sizes, [2]int{len(x), len(val)})
		}
	}
	s.noteBounds(Summary{LongestName: len(name), MaxXattrBytes: total, LargestXattrs: sizes})
}

// noteBounds takes one entry's bounds (as note measured them) into s.
func (s *Summary) noteBounds(one Summary) {
	s.LongestName = max(s.LongestName, one.LongestName)
	if one.MaxXattrBytes > s.MaxXattrBytes {
		s.MaxXattrBytes, s.LargestXattrs = one.MaxXattrBytes, one.LargestXattrs
	}
}
