package main

import (
	"fmt"
	"regexp"
	"strings"
)

// semverRE is semver 2.0 with the leading "v" that krew requires: no leading
// zeros in numeric parts, dot-separated pre-release and build identifiers.
var semverRE = regexp.MustCompile(`^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(-(0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(\.(0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*)?` +
	`(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)

// describeRE matches what `git describe --always --dirty` prints in a
// repository without tags: an abbreviated commit hash, maybe marked dirty.
var describeRE = regexp.MustCompile(`^[0-9a-f]{4,40}(-dirty)?$`)

// releaseVersion turns the build's VERSION into the semver that krew needs in
// spec.version. A tag (v1.2.3, v1.2.3-4-gabc1234-dirty) is kept; a bare commit
// hash becomes v0.0.0-g<hash>, the "g" keeping an all-digit hash a valid
// pre-release identifier. The binary is stamped with the same string, so
// `kubectl assisted version` and `kubectl krew list` agree.
func releaseVersion(v string) (string, error) {
	v = strings.TrimSpace(v)
	switch {
	case v == "":
		return "", fmt.Errorf("empty version: set VERSION (make dist derives it from git describe)")
	case semverRE.MatchString(v):
		return v, nil
	case semverRE.MatchString("v" + v):
		return "v" + v, nil
	case describeRE.MatchString(v):
		return "v0.0.0-g" + v, nil
	}
	return "", fmt.Errorf("version %q is neither semver (vMAJOR.MINOR.PATCH[-PRE]) nor a commit hash: set VERSION=vX.Y.Z", v)
}
