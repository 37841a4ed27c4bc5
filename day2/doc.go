// Package day2 adds nodes to an installed cluster: it reads the cluster's
// configuration with the user's kubeconfig, validates nodes-config.yaml, renders
// the Ignition that boots a host into add-nodes mode, writes it into the live ISO,
// and follows the hosts until they are Ready, approving only CSRs that provably
// belong to them. It never prints, and imports neither cobra nor pgx.
package day2
