// Package harness starts the real components that kubectl-assisted's integration
// and end-to-end tests run against, on loopback only: PostgreSQL (fresh databases
// on the machine's server, or private servers for "sites" and restarts), OCI
// registries (in-process olareg, Debian's docker-registry with TLS and basic
// auth), kube-apiserver + etcd with the real CRDs, and the built plugin binary on a
// temporary PATH behind the real kubectl.
//
// A component that cannot start skips the test on a developer machine and fails
// it in CI (CI=true): a suite that silently skipped would prove nothing.
package harness
