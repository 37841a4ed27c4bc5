// Package bundle is the kubectl-assisted bundle format: it collects node 0's
// assisted-service state (PostgreSQL, file storage, resources), encodes each part
// as a streamed, compressed and encrypted OCI layer, and pushes, pulls, inspects
// and verifies the artifact. docs/bundle-format.md is its specification.
//
// Nothing here prints or imports cobra: callers pass an io.Writer, a logger or a
// progress callback.
package bundle

// FormatVersion is the version of the bundle format this code writes. Minor
// versions only add; a bundle with a newer major version is refused.
const FormatVersion = "1.2.0"
