// Package oci moves bundles between this process and their storage: OCI
// registries (through oras-go, with docker/podman auth files, custom CAs, retries
// and a streamed chunked upload, from memory or from a spool file that a later
// run can resume from), OCI image layout
// directories (oci:DIR[:TAG]) and tars of those (oci-archive:FILE[:TAG]).
//
// References follow the transports of skopeo and podman; see ParseReference.
package oci
