// Package monitor follows new hosts from boot to Ready nodes: whether they are
// reachable, their local assisted-service REST API (validations, installation
// progress), the kubelet port, the kubelet's two CSRs, and the Node. With
// approval on, it approves the CSRs that provably belong to a host of
// nodes-config.yaml (package day2/csr) and says why not for every other one.
//
// It reports through callbacks (Options.OnEvent, Options.OnPoll) and a Result;
// it never prints.
package monitor

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/kubectl-assisted/kubectl-assisted/day2/nodesconfig"
)

// Host is one new host to follow.
type Host struct {
	// Label names the host in events: its hostname, or "host N".
	Label string
	// Hostname is nodes-config.yaml's hostname; empty when it gives none.
	Hostname string
	// IPs are where to reach the host, and the only IPs its serving certificate
	// may name.
	IPs []net.IP
}

// HostsFromConfig builds the host list from nodes-config.yaml: hostnames and the
// static IPs of each host's nmstate networkConfig. Each override is
// HOST=IP (HOST is a hostname or a host index) and replaces the networkConfig
// IPs of that host; a bare IP is accepted when it is already a host's IP (and
// changes nothing), or when nodes-config.yaml has a single host (whose IPs it
// then replaces).
func HostsFromConfig(cfg *nodesconfig.Config, overrides []string) ([]Host, error) {
	hosts := make([]Host, len(cfg.Hosts))
	for i, h := range cfg.Hosts {
		hosts[i] = Host{Label: h.Hostname, Hostname: h.Hostname}
		if hosts[i].Label == "" {
			hosts[i].Label = fmt.Sprintf("host %d", i)
		}
		for _, s := range h.IPs() {
			hosts[i].IPs = append(hosts[i].IPs, net.ParseIP(s))
		}
	}
	given := map[int][]net.IP{}
	for _, o := range overrides {
		o = strings.TrimSpace(o)
		if o == "" {
			continue
		}
		name, addr, named := strings.Cut(o, "=")
		if !named {
			addr = name
		}
		ip := net.ParseIP(strings.TrimSpace(addr))
		if ip == nil {
			return nil, fmt.Errorf("--ip-addresses: %q is not an IP address", addr)
		}
		if named {
			i, err := findHost(hosts, strings.TrimSpace(name))
			if err != nil {
				return nil, err
			}
			given[i] = append(given[i], ip)
			continue
		}
		switch i := ownerOf(hosts, ip); {
		case i >= 0:
			// Already one of the host's IPs (as oc adm node-image monitor takes them).
		case len(hosts) == 1:
			given[0] = append(given[0], ip)
		default:
			return nil, fmt.Errorf("--ip-addresses: %s is not an IP of any host in nodes-config.yaml: say which host it is, as HOSTNAME=%s", ip, ip)
		}
	}
	for i, ips := range given {
		hosts[i].IPs = uniqueIPs(ips)
	}
	return hosts, nil
}

func findHost(hosts []Host, name string) (int, error) {
	for i, h := range hosts {
		if h.Hostname != "" && h.Hostname == name {
			return i, nil
		}
	}
	if i, err := strconv.Atoi(name); err == nil && i >= 0 && i < len(hosts) {
		return i, nil
	}
	return -1, fmt.Errorf("--ip-addresses: %q is neither a hostname nor a host index of nodes-config.yaml", name)
}

func ownerOf(hosts []Host, ip net.IP) int {
	for i, h := range hosts {
		for _, x := range h.IPs {
			if x.Equal(ip) {
				return i
			}
		}
	}
	return -1
}

func uniqueIPs(ips []net.IP) []net.IP {
	seen := map[string]bool{}
	var out []net.IP
	for _, ip := range ips {
		if !seen[ip.String()] {
			seen[ip.String()] = true
			out = append(out, ip)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].String() < out[b].String() })
	return out
}

func ipStrings(ips []net.IP) []string {
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = ip.String()
	}
	return out
}
