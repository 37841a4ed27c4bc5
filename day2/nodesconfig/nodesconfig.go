// Package nodesconfig reads and checks nodes-config.yaml, the installer's input
// format for adding nodes to a cluster (the same file `oc adm node-image create`
// takes): the hosts, their interfaces and MAC addresses, nmstate network
// configuration and root device hints.
package nodesconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"sort"
	"strings"

	"golang.org/x/crypto/ssh"

	"sigs.k8s.io/yaml"
)

// Config is nodes-config.yaml.
type Config struct {
	// CPUArchitecture overrides the cluster's architecture: amd64, arm64, ppc64le,
	// s390x (x86_64 and aarch64 are accepted too).
	CPUArchitecture      string `json:"cpuArchitecture,omitempty"`
	SSHKey               string `json:"sshKey,omitempty"`
	BootArtifactsBaseURL string `json:"bootArtifactsBaseURL,omitempty"`
	Hosts                []Host `json:"hosts"`
}

// Host is one new node.
type Host struct {
	Hostname        string           `json:"hostname,omitempty"`
	Role            string           `json:"role,omitempty"`
	RootDeviceHints *RootDeviceHints `json:"rootDeviceHints,omitempty"`
	Interfaces      []Interface      `json:"interfaces"`
	// NetworkConfig is nmstate YAML, kept as parsed JSON-compatible data.
	NetworkConfig map[string]any `json:"networkConfig,omitempty"`
	// BMC exists in the installer's type but add-nodes ignores it.
	BMC map[string]any `json:"bmc,omitempty"`
}

// Interface names one NIC by MAC; the MACs identify the host when it boots.
type Interface struct {
	Name       string `json:"name"`
	MACAddress string `json:"macAddress"`
}

// RootDeviceHints select the installation disk (metal3's hint keys).
type RootDeviceHints struct {
	DeviceName         string `json:"deviceName,omitempty"`
	HCTL               string `json:"hctl,omitempty"`
	Model              string `json:"model,omitempty"`
	Vendor             string `json:"vendor,omitempty"`
	SerialNumber       string `json:"serialNumber,omitempty"`
	MinSizeGigabytes   int    `json:"minSizeGigabytes,omitempty"`
	WWN                string `json:"wwn,omitempty"`
	WWNWithExtension   string `json:"wwnWithExtension,omitempty"`
	WWNVendorExtension string `json:"wwnVendorExtension,omitempty"`
	Rotational         *bool  `json:"rotational,omitempty"`
}

// Load reads and strictly decodes nodes-config.yaml: an unknown field (such as
// a misspelt root device hint) is an error that names it.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(bytes.NewReader(b))
}

// Parse strictly decodes nodes-config YAML from r.
func Parse(r io.Reader) (*Config, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var c Config
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		if unknown := unknownFields(b); len(unknown) > 0 {
			return nil, fmt.Errorf("nodes-config is not valid: %w", Problems(unknown))
		}
		return nil, fmt.Errorf("nodes-config is not valid: %w", err)
	}
	return &c, nil
}

// Problems is every problem found in one check, reported together.
type Problems []string

func (p Problems) Error() string {
	if len(p) == 1 {
		return p[0]
	}
	return fmt.Sprintf("%d problems:\n  - %s", len(p), strings.Join(p, "\n  - "))
}

// Err returns nil when there are no problems.
func (p Problems) Err() error {
	if len(p) == 0 {
		return nil
	}
	return p
}

var (
	macRE      = regexp.MustCompile(`^([0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2}$`)
	hctlRE     = regexp.MustCompile(`^[0-9]+:[0-9]+:[0-9]+:[0-9]+$`)
	hostnameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// Validate checks what needs no cluster: at least one host, well-formed and
// unique MACs, valid and unique hostnames, roles, root device hints, and nmstate
// whose interfaces with a MAC name one of the host's MACs. All problems are
// returned at once (as Problems).
func (c *Config) Validate() error {
	var p Problems
	if len(c.Hosts) == 0 {
		p = append(p, "at least one host must be defined")
	}
	switch c.CPUArchitecture {
	case "", "amd64", "x86_64", "arm64", "aarch64", "ppc64le", "s390x":
	default:
		p = append(p, fmt.Sprintf("cpuArchitecture %q is not supported: use amd64, arm64, ppc64le or s390x", c.CPUArchitecture))
	}
	if k := strings.TrimSpace(c.SSHKey); k != "" {
		// As the installer's validate.SSHPublicKey: one authorized_keys line.
		if _, _, _, rest, err := ssh.ParseAuthorizedKey([]byte(k)); err != nil || len(bytes.TrimSpace(rest)) > 0 {
			p = append(p, "sshKey is not a valid SSH public key (one authorized_keys line, such as \"ssh-ed25519 AAAA... user@host\")")
		}
	}
	seenMAC := map[string]int{}
	seenHost := map[string]int{}
	for i, h := range c.Hosts {
		who := h.Label(i)
		if h.Hostname != "" {
			if len(h.Hostname) > 253 || !hostnameRE.MatchString(h.Hostname) {
				p = append(p, fmt.Sprintf("%s: hostname %q is not a valid lowercase DNS name", who, h.Hostname))
			}
			if j, dup := seenHost[h.Hostname]; dup {
				p = append(p, fmt.Sprintf("%s: hostname %q is also used by host %d", who, h.Hostname, j))
			}
			seenHost[h.Hostname] = i
		}
		switch h.Role {
		case "", "worker", "master":
		default:
			p = append(p, fmt.Sprintf("%s: role %q is not valid: use master or worker", who, h.Role))
		}
		if len(h.Interfaces) == 0 {
			p = append(p, fmt.Sprintf("%s: at least one interface must be defined", who))
		}
		for _, nic := range h.Interfaces {
			switch {
			case nic.MACAddress == "":
				p = append(p, fmt.Sprintf("%s: interface %q has no macAddress", who, nic.Name))
				continue
			case !macRE.MatchString(nic.MACAddress):
				p = append(p, fmt.Sprintf("%s: MAC address %q of interface %q is malformed: use XX:XX:XX:XX:XX:XX", who, nic.MACAddress, nic.Name))
				continue
			}
			m := NormalizeMAC(nic.MACAddress)
			if j, dup := seenMAC[m]; dup {
				p = append(p, fmt.Sprintf("%s: duplicate MAC address %s (also on host %d)", who, m, j))
			}
			seenMAC[m] = i
		}
		if rdh := h.RootDeviceHints; rdh != nil {
			if rdh.WWNWithExtension != "" || rdh.WWNVendorExtension != "" {
				p = append(p, fmt.Sprintf("%s: WWN extensions are not supported in root device hints", who))
			}
			if rdh.DeviceName != "" && !strings.HasPrefix(rdh.DeviceName, "/dev/") {
				p = append(p, fmt.Sprintf("%s: rootDeviceHints.deviceName %q must be a path under /dev/", who, rdh.DeviceName))
			}
			if rdh.HCTL != "" && !hctlRE.MatchString(rdh.HCTL) {
				p = append(p, fmt.Sprintf("%s: rootDeviceHints.hctl %q is not Host:Channel:Target:Lun (four numbers, such as 1:0:0:0)", who, rdh.HCTL))
			}
			if rdh.MinSizeGigabytes < 0 {
				p = append(p, fmt.Sprintf("%s: rootDeviceHints.minSizeGigabytes must not be negative", who))
			}
		}
		p = append(p, h.validateNetworkConfig(who)...)
	}
	return p.Err()
}

// Label names host i in messages: its hostname, or its index.
func (h Host) Label(i int) string {
	if h.Hostname != "" {
		return fmt.Sprintf("host %d (%s)", i, h.Hostname)
	}
	return fmt.Sprintf("host %d", i)
}

// MACs are the host's MAC addresses, normalized.
func (h Host) MACs() []string {
	var out []string
	for _, nic := range h.Interfaces {
		out = append(out, NormalizeMAC(nic.MACAddress))
	}
	return out
}

// NormalizeMAC lowercases a MAC address.
func NormalizeMAC(m string) string { return strings.ToLower(strings.TrimSpace(m)) }

func (h Host) validateNetworkConfig(who string) []string {
	if h.NetworkConfig == nil {
		return nil
	}
	var p []string
	raw, ok := h.NetworkConfig["interfaces"]
	if !ok {
		return []string{fmt.Sprintf("%s: networkConfig has no interfaces", who)}
	}
	list, ok := raw.([]any)
	if !ok {
		return []string{fmt.Sprintf("%s: networkConfig.interfaces must be a list", who)}
	}
	macs := map[string]bool{}
	for _, m := range h.MACs() {
		macs[m] = true
	}
	for j, it := range list {
		iface, ok := it.(map[string]any)
		if !ok {
			p = append(p, fmt.Sprintf("%s: networkConfig.interfaces[%d] must be a mapping", who, j))
			continue
		}
		name, _ := iface["name"].(string)
		if name == "" {
			p = append(p, fmt.Sprintf("%s: networkConfig.interfaces[%d] has no name", who, j))
		}
		if mac, ok := iface["mac-address"].(string); ok && mac != "" {
			if !macRE.MatchString(mac) {
				p = append(p, fmt.Sprintf("%s: networkConfig interface %q: MAC address %q is malformed", who, name, mac))
			} else if !macs[NormalizeMAC(mac)] {
				p = append(p, fmt.Sprintf("%s: networkConfig interface %q has MAC %s, which is not among the host's interfaces", who, name, NormalizeMAC(mac)))
			}
		}
		for _, fam := range []string{"ipv4", "ipv6"} {
			for _, a := range addressesOf(iface, fam) {
				if net.ParseIP(a) == nil {
					p = append(p, fmt.Sprintf("%s: networkConfig interface %q: %s address %q is not an IP address", who, name, fam, a))
				}
			}
		}
	}
	if len(p) > 0 {
		return p
	}
	// As assisted-service's ValidateStaticConfigParams (pkg/staticnetworkconfig/
	// generator.go): interface names of the host unique; every ethernet
	// interface and bond port of the nmstate either has a MAC mapping in
	// interfaces or a predictable kernel name (man systemd.net-naming-scheme),
	// since the boot-time script finds the NIC by that MAC.
	names := map[string]bool{}
	for _, nic := range h.Interfaces {
		if names[nic.Name] {
			p = append(p, fmt.Sprintf("%s: interface name %q is used twice: MACs and interface names of a host must be unique", who, nic.Name))
		}
		names[nic.Name] = true
	}
	mapped := func(n string) bool { return names[n] || predictableNICRE.MatchString(n) }
	for _, it := range list {
		iface, _ := it.(map[string]any)
		name, _ := iface["name"].(string)
		switch iface["type"] {
		case "ethernet", "802-3-ethernet":
			if !mapped(name) {
				p = append(p, fmt.Sprintf("%s: networkConfig interface %q has no MAC mapping in interfaces and is not a physical interface name: add {name: %s, macAddress: ...} to the host's interfaces", who, name, name))
			}
		case "bond":
			la, _ := iface["link-aggregation"].(map[string]any)
			ports, _ := la["port"].([]any)
			for _, port := range ports {
				if ps, _ := port.(string); ps != "" && !mapped(ps) {
					p = append(p, fmt.Sprintf("%s: bond %q port %q has no MAC mapping in interfaces and is not a physical interface name: add {name: %s, macAddress: ...} to the host's interfaces", who, name, ps, ps))
				}
			}
		}
	}
	if _, err := h.Keyfiles(); err != nil {
		p = append(p, fmt.Sprintf("%s: %v", who, err))
	}
	return p
}

var predictableNICRE = regexp.MustCompile(`^en[PsvxXbucaipod]`)

// IPs are the static addresses the host's nmstate assigns (interfaces[].ipv4/
// ipv6.address[].ip), sorted.
func (h Host) IPs() []string {
	if h.NetworkConfig == nil {
		return nil
	}
	list, _ := h.NetworkConfig["interfaces"].([]any)
	var out []string
	for _, it := range list {
		iface, _ := it.(map[string]any)
		for _, fam := range []string{"ipv4", "ipv6"} {
			for _, a := range addressesOf(iface, fam) {
				if ip := net.ParseIP(a); ip != nil {
					out = append(out, ip.String())
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func addressesOf(iface map[string]any, family string) []string {
	fam, _ := iface[family].(map[string]any)
	if fam == nil {
		return nil
	}
	list, _ := fam["address"].([]any)
	var out []string
	for _, a := range list {
		m, _ := a.(map[string]any)
		if ip, ok := m["ip"].(string); ok {
			out = append(out, ip)
		}
	}
	return out
}

// ErrNoHosts is returned when single-host flags and a file are both missing.
var ErrNoHosts = errors.New("no hosts: give -f nodes-config.yaml or --mac-address for a single host")
