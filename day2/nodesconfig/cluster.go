package nodesconfig

import (
	"fmt"
	"net"
	"strings"
)

// Cluster is what the cluster-dependent checks need to know about the
// installed cluster.
type Cluster struct {
	// Architecture is the control plane's RPM architecture (x86_64, aarch64...).
	Architecture string
	// MultiArch is true for clusters running a multi-architecture payload.
	MultiArch bool
	Nodes     []ExistingNode
}

// ExistingNode is a node of the cluster.
type ExistingNode struct {
	Name      string
	Addresses []string
}

// RPMArch normalizes cpuArchitecture to the RPM name (amd64 -> x86_64,
// arm64 -> aarch64).
func RPMArch(a string) string {
	switch a {
	case "amd64":
		return "x86_64"
	case "arm64":
		return "aarch64"
	}
	return a
}

// Architecture is the architecture the ISO is built for: cpuArchitecture, or
// the cluster's.
func (c *Config) Architecture(cl Cluster) string {
	if c.CPUArchitecture != "" {
		return RPMArch(c.CPUArchitecture)
	}
	return cl.Architecture
}

// ValidateCluster checks the config against the installed cluster: no host
// takes the hostname of an existing node, no static IP is already a node's
// address, and the architecture can join the cluster (amd64 and arm64 workers
// mix only on multi-architecture clusters; ppc64le and s390x only join their
// own). All problems are returned at once (as Problems).
func (c *Config) ValidateCluster(cl Cluster) error {
	var p Problems
	if arch := c.Architecture(cl); arch != cl.Architecture {
		mixable := (arch == "x86_64" || arch == "aarch64") && (cl.Architecture == "x86_64" || cl.Architecture == "aarch64")
		switch {
		case mixable && !cl.MultiArch:
			p = append(p, fmt.Sprintf("cpuArchitecture %s does not match the cluster's architecture %s: only a multi-architecture cluster can add %s nodes", c.CPUArchitecture, cl.Architecture, arch))
		case !mixable:
			p = append(p, fmt.Sprintf("cpuArchitecture %s cannot join a %s cluster: %s nodes only join %s clusters", c.CPUArchitecture, cl.Architecture, arch, arch))
		}
	}
	nodeByName := map[string]string{}
	nodeByIP := map[string]string{}
	for _, n := range cl.Nodes {
		nodeByName[strings.ToLower(n.Name)] = n.Name
		for _, a := range n.Addresses {
			if ip := net.ParseIP(a); ip != nil {
				nodeByIP[ip.String()] = n.Name
			} else {
				nodeByName[strings.ToLower(a)] = n.Name // Hostname addresses
			}
		}
	}
	for i, h := range c.Hosts {
		who := h.Label(i)
		if h.Hostname != "" {
			if node, ok := nodeByName[strings.ToLower(h.Hostname)]; ok {
				p = append(p, fmt.Sprintf("%s: hostname conflict: %s is already used by the cluster's node %s", who, h.Hostname, node))
			}
		}
		for _, ip := range h.IPs() {
			if node, ok := nodeByIP[ip]; ok {
				p = append(p, fmt.Sprintf("%s: address conflict: %s is already used by the cluster's node %s", who, ip, node))
			}
		}
	}
	return p.Err()
}
