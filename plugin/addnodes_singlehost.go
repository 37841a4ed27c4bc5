package plugin

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-assisted/kubectl-assisted/day2/nodesconfig"
)

// SingleHostFlags describe one host without a nodes-config.yaml, with the
// same flags as `oc adm node-image create`.
type SingleHostFlags struct {
	MACAddress        string
	Hostname          string
	CPUArchitecture   string
	SSHKeyPath        string
	RootDeviceHint    string
	NetworkConfigPath string
	InterfaceName     string
}

var singleHostFlagNames = []string{"hostname", "cpu-architecture", "ssh-key-path", "root-device-hint", "network-config-path", "interface-name"}

// AddFlags adds the single-host flags.
func (s *SingleHostFlags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&s.MACAddress, "mac-address", "m", "", "Single host: its MAC address (turns on single-host mode, instead of -f)")
	fs.StringVar(&s.Hostname, "hostname", "", "Single host: its hostname")
	fs.StringVarP(&s.CPUArchitecture, "cpu-architecture", "c", "", "Single host: its CPU architecture (amd64, arm64, ppc64le, s390x)")
	fs.StringVarP(&s.SSHKeyPath, "ssh-key-path", "k", "", "Single host: file with the SSH public key for user core")
	fs.StringVar(&s.RootDeviceHint, "root-device-hint", "", "Single host: installation disk hint as <hint>:<value>, e.g. deviceName:/dev/sda")
	fs.StringVar(&s.NetworkConfigPath, "network-config-path", "", "Single host: nmstate YAML file with its static network configuration")
	fs.StringVar(&s.InterfaceName, "interface-name", "eth0", "Single host: name of the interface that has --mac-address")
}

// Set reports whether single-host mode is on (--mac-address given).
func (s *SingleHostFlags) Set(fs *pflag.FlagSet) bool { return fs.Changed("mac-address") }

// Config builds nodes-config from the flags.
func (s *SingleHostFlags) Config(fs *pflag.FlagSet) (*nodesconfig.Config, error) {
	c := &nodesconfig.Config{CPUArchitecture: s.CPUArchitecture}
	h := nodesconfig.Host{
		Hostname:   s.Hostname,
		Role:       "worker",
		Interfaces: []nodesconfig.Interface{{Name: s.InterfaceName, MACAddress: s.MACAddress}},
	}
	if s.SSHKeyPath != "" {
		b, err := os.ReadFile(s.SSHKeyPath)
		if err != nil {
			return nil, fmt.Errorf("--ssh-key-path: %w", err)
		}
		c.SSHKey = trimmed(b)
	}
	if s.RootDeviceHint != "" {
		rdh, err := parseRootDeviceHint(s.RootDeviceHint)
		if err != nil {
			return nil, err
		}
		h.RootDeviceHints = rdh
	}
	if s.NetworkConfigPath != "" {
		b, err := os.ReadFile(s.NetworkConfigPath)
		if err != nil {
			return nil, fmt.Errorf("--network-config-path: %w", err)
		}
		var nc map[string]any
		if err := yaml.Unmarshal(b, &nc); err != nil {
			return nil, fmt.Errorf("--network-config-path %s is not valid YAML: %w", s.NetworkConfigPath, err)
		}
		h.NetworkConfig = nc
	}
	c.Hosts = []nodesconfig.Host{h}
	return c, nil
}

// CheckOrphans fails when a single-host flag is set without --mac-address.
func (s *SingleHostFlags) CheckOrphans(fs *pflag.FlagSet) error {
	if fs.Changed("mac-address") {
		return nil
	}
	for _, n := range singleHostFlagNames {
		if fs.Changed(n) {
			return fmt.Errorf("flag --%s describes a single host and requires --mac-address", n)
		}
	}
	return nil
}

func parseRootDeviceHint(s string) (*nodesconfig.RootDeviceHints, error) {
	key, val, ok := strings.Cut(s, ":")
	if !ok || key == "" || val == "" {
		return nil, fmt.Errorf("incorrect --root-device-hint %q: expected <hint>:<value>, for example deviceName:/dev/sda", s)
	}
	r := &nodesconfig.RootDeviceHints{}
	switch key {
	case "deviceName":
		r.DeviceName = val
	case "hctl":
		r.HCTL = val
	case "model":
		r.Model = val
	case "vendor":
		r.Vendor = val
	case "serialNumber":
		r.SerialNumber = val
	case "wwn":
		r.WWN = val
	case "minSizeGigabytes":
		n, err := strconv.Atoi(val)
		if err != nil {
			return nil, fmt.Errorf("--root-device-hint minSizeGigabytes:%s is not a number", val)
		}
		r.MinSizeGigabytes = n
	case "rotational":
		b, err := strconv.ParseBool(val)
		if err != nil {
			return nil, fmt.Errorf("--root-device-hint rotational:%s is not true or false", val)
		}
		r.Rotational = &b
	default:
		return nil, fmt.Errorf("unknown root device hint %q: use deviceName, hctl, model, vendor, serialNumber, minSizeGigabytes, wwn or rotational", key)
	}
	return r, nil
}
