// Package harness starts the real components that kubectl-assisted's integration
// and end-to-end tests run against, on loopback only: PostgreSQL (fresh databases
// on the machine's server, or private servers for "sites" and restarts), OCI
// registries (in-process olareg, Debian's docker-registry with TLS and basic
// auth), kube-apiserver + etcd with the real CRDs, the built plugin binary on a
// temporary PATH behind the real kubectl, and systemd as PID 1 in a container
// (StartSystemd; StartNode0 adds the agent-based installer's node-0 units) for
// units that must really run.
//
// A component that cannot start skips the test on a developer machine and fails
// it in CI (CI=true): a suite that silently skipped would prove nothing.
package harness
