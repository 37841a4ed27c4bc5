package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// nmstateOutput is a set of keyfiles libnmstate generated for a YAML that one
// host of nmCorpus also has: the ISO's keyfiles for that host (before the
// pre-network script renames them) must mean the same to NetworkManager,
// setting by setting, except for the differences listed with their reason.
type nmstateOutput struct {
	name   string
	source string
	host   string            // nmCorpus host whose keyfiles are compared
	files  map[string]string // nmstate's file name -> content
	// differences NetworkManager shows between nmstate's profile and ours:
	// "file: setting" -> why.
	differences map[string]string
}

// The settings assisted-service adds to libnmstate's output before the ISO
// carries it (pkg/staticnetworkconfig/generator.go formatNMConnection:
// autoconnect=true, autoconnect-priority=1); the fixtures below predate it.
const whyPriority = "assisted-service's formatNMConnection adds autoconnect-priority=1 to nmstate's output (release-4.19 pkg/staticnetworkconfig/generator.go); the fixture is nmstate's output before it"

// nmstate 1.0.2 (the documentation's version) wrote DHCP settings into
// families it disabled and addr-gen-mode into every [ipv6]; nmstate 2.x
// writes only method=disabled for a family the YAML does not give
// (nmstate @614c66dc rust/src/lib/nm/settings/ip.rs, the None branches).
const whyOldNmstate = "nmstate 1.0.2's output, on a family the YAML leaves out (disabled); nmstate 2.x (@614c66dc settings/ip.rs) writes only method=disabled there, as we do"

var nmstateOutputs = []nmstateOutput{
	{
		name:   "nmstate gen_conf documentation",
		source: "nmstate.io/features/gen_conf.html (nmstate/nmstate.github.io features/gen_conf.md), nmstate 1.0.2",
		host:   "nm-balancerr",
		files: map[string]string{
			"bond99.nmconnection": "[connection]\nid=bond99\nuuid=2a31ed97-6794-45dc-813d-7f948ec098ae\ntype=bond\nautoconnect-slaves=1\ninterface-name=bond99\npermissions=\n\n[bond]\nmode=balance-rr\n\n[ipv4]\ndhcp-client-id=mac\ndns-search=\nmethod=disabled\n\n[ipv6]\naddr-gen-mode=eui64\ndhcp-duid=ll\ndhcp-iaid=mac\ndns-search=\nmethod=disabled\n\n[proxy]\n",
			"eth2.nmconnection":   "[connection]\nid=eth2\nuuid=652f5243-c2e1-4a05-a463-d30b3381b47d\ntype=ethernet\ninterface-name=eth2\nmaster=bond99\npermissions=\nslave-type=bond\n\n[ethernet]\nmac-address-blacklist=\n",
			"eth1.nmconnection":   "[connection]\nid=eth1\nuuid=33d6e6ad-8189-4088-b142-35e40a4c3142\ntype=ethernet\ninterface-name=eth1\nmaster=bond99\npermissions=\nslave-type=bond\n\n[ethernet]\nmac-address-blacklist=\n",
		},
		differences: map[string]string{
			"bond99.nmconnection: connection.autoconnect-priority": whyPriority,
			"eth1.nmconnection: connection.autoconnect-priority":   whyPriority,
			"eth2.nmconnection: connection.autoconnect-priority":   whyPriority,
			"bond99.nmconnection: ipv4.dhcp-client-id":             whyOldNmstate,
			"bond99.nmconnection: ipv6.addr-gen-mode":              whyOldNmstate,
			"bond99.nmconnection: ipv6.dhcp-duid":                  whyOldNmstate,
			"bond99.nmconnection: ipv6.dhcp-iaid":                  whyOldNmstate,
		},
	},
	{
		name:   "assisted-service host4 (VLAN 2507 on eth0)",
		source: "openshift/assisted-service internal/constants/test_root/etc/assisted/network/host4 @6d85fb16f (release-4.17 to master)",
		host:   "nm-vlan",
		files: map[string]string{
			"eth0.2507.nmconnection": "[connection]\nautoconnect=true\nautoconnect-slaves=-1\nid=eth0.2507\ninterface-name=eth0.2507\ntype=vlan\nuuid=11c51756-66a4-4c44-b472-1995ff8689e0\n\n[ipv4]\naddress0=192.0.2.111/24\nmethod=manual\n\n[ipv6]\nmethod=disabled\n\n[vlan]\nid=2507\nparent=eth0\n",
			"eth0.nmconnection":      "[connection]\nautoconnect=true\nautoconnect-slaves=-1\nid=eth0\ninterface-name=eth0\ntype=802-3-ethernet\nuuid=16b5d9c7-3fb6-4cb2-a61b-1dcaec41dacc\n\n[ipv4]\naddress0=192.0.2.50/24\nmethod=manual\n\n[ipv6]\nmethod=disabled\n",
		},
		differences: map[string]string{
			"eth0.2507.nmconnection: connection.autoconnect-priority": whyPriority,
			"eth0.nmconnection: connection.autoconnect-priority":      whyPriority,
		},
	},
	{
		name:   "assisted-service host0 (VLAN 101 on eth0)",
		source: "openshift/assisted-service internal/constants/test_root/etc/assisted/network/host0 @6d85fb16f",
		host:   "as-host0",
		files: map[string]string{
			"eth0.101.nmconnection": "[connection]\nautoconnect=true\nautoconnect-slaves=-1\nid=eth0.101\ninterface-name=eth0.101\ntype=vlan\nuuid=0b99f628-be0c-539c-be57-968bdf51f152\n\n[ipv4]\naddress0=192.168.122.250/24\nmethod=manual\n\n[ipv6]\nmethod=disabled\n\n[vlan]\nid=101\nparent=eth0\n",
			"eth0.nmconnection":     "[connection]\nautoconnect=true\nautoconnect-slaves=-1\nid=eth0\ninterface-name=eth0\ntype=802-3-ethernet\nuuid=dfd202f5-562f-5f07-8f2a-a7717756fb70\n\n[ipv4]\naddress0=192.0.2.1/24\nmethod=manual\n\n[ipv6]\nmethod=disabled\n",
		},
		differences: map[string]string{
			"eth0.101.nmconnection: connection.autoconnect-priority": whyPriority,
			"eth0.nmconnection: connection.autoconnect-priority":     whyPriority,
		},
	},
	{
		name:   "assisted-service host2 (balance-rr bond of eth0, eth1)",
		source: "openshift/assisted-service internal/constants/test_root/etc/assisted/network/host2 @6d85fb16f",
		host:   "as-host2",
		files: map[string]string{
			"bond0.nmconnection": "[connection]\nautoconnect=true\nautoconnect-slaves=1\nid=bond0\ninterface-name=bond0\ntype=bond\nuuid=925b4a95-2de0-5b2d-bcf5-8b684a7e9cb4\n\n[bond]\nmiimon=140\nmode=balance-rr\n\n[ipv4]\naddress0=192.0.2.0/24\nmethod=manual\n\n[ipv6]\nmethod=disabled\n",
			"eth0.nmconnection":  "[connection]\nautoconnect=true\nautoconnect-slaves=-1\nid=eth0\ninterface-name=eth0\nmaster=925b4a95-2de0-5b2d-bcf5-8b684a7e9cb4\nslave-type=bond\ntype=802-3-ethernet\nuuid=dfd202f5-562f-5f07-8f2a-a7717756fb70\n",
			"eth1.nmconnection":  "[connection]\nautoconnect=true\nautoconnect-slaves=-1\nid=eth1\ninterface-name=eth1\nmaster=925b4a95-2de0-5b2d-bcf5-8b684a7e9cb4\nslave-type=bond\ntype=802-3-ethernet\nuuid=0523c0a1-5f5e-5603-bcf2-68155d5d322e\n",
		},
		differences: map[string]string{
			"bond0.nmconnection: connection.autoconnect-priority": whyPriority,
			"eth0.nmconnection: connection.autoconnect-priority":  whyPriority,
			"eth1.nmconnection: connection.autoconnect-priority":  whyPriority,
		},
	},
}

// compareWithNmstate loads each of nmstate's files and the ISO's file of the
// same name into NetworkManager one at a time and compares the settings
// NetworkManager holds for them (its own parsing and defaults: "type=vlan"
// and "802-3-ethernet", address0 and address1, a missing key and its default
// compare equal). UUIDs differ by nature; a port's master is compared as the
// id of the profile it names.
func compareWithNmstate(t *testing.T, h *harness.NMHost, iso *isoNetwork, o nmstateOutput) {
	t.Helper()
	ours := map[string]string{}
	for p, body := range iso.files {
		if dir, file := filepath.Split(p); dir == "/etc/assisted/network/"+o.host+"/" && strings.HasSuffix(file, ".nmconnection") {
			ours[file] = body
		}
	}
	var names []string
	for f := range o.files {
		names = append(names, f)
	}
	sort.Strings(names)
	var oursNames []string
	for f := range ours {
		oursNames = append(oursNames, f)
	}
	sort.Strings(oursNames)
	if !slices.Equal(names, oursNames) {
		t.Fatalf("%s: nmstate writes %q, the ISO has %q for host %s", o.name, names, oursNames, o.host)
	}
	theirs := loadSet(t, h, o.files)
	mine := loadSet(t, h, ours)
	var got []string
	for _, f := range names {
		a, b := theirs[f], mine[f]
		keys := map[string]bool{}
		for k := range a {
			keys[k] = true
		}
		for k := range b {
			keys[k] = true
		}
		for k := range keys {
			if k == "connection.uuid" || a[k] == b[k] {
				continue
			}
			d := f + ": " + k
			got = append(got, d)
			if _, ok := o.differences[d]; !ok {
				t.Errorf("%s (%s): %s differs: nmstate %q, ours %q", o.name, o.source, d, a[k], b[k])
			}
		}
	}
	for d := range o.differences {
		if !slices.Contains(got, d) {
			t.Errorf("%s: %s was expected to differ (%s) and does not", o.name, d, o.differences[d])
		}
	}
}

// loadSet puts one set of keyfiles into NetworkManager, reads what it made
// of each, and removes them again. Masters given as UUIDs become the id of
// the profile of the set that has that UUID.
func loadSet(t *testing.T, h *harness.NMHost, files map[string]string) map[string]map[string]string {
	t.Helper()
	dir := filepath.Join(h.Root, "etc/NetworkManager/system-connections")
	var paths []string
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, "/etc/NetworkManager/system-connections/"+name)
	}
	h.Run(t, append([]string{"nmcli", "connection", "load"}, paths...)...)
	byFile := map[string]string{}
	for _, p := range nmProfiles(t, h) {
		byFile[filepath.Base(p.File)] = p.Name
	}
	out := map[string]map[string]string{}
	idOf := map[string]string{}
	for name := range files {
		id, ok := byFile[name]
		if !ok {
			t.Fatalf("NetworkManager did not load %s:\n%s\n%s", name, files[name], h.Journal("NetworkManager.service"))
		}
		s := nmSettings(t, h, id)
		out[name] = s
		idOf[s["connection.uuid"]] = s["connection.id"]
	}
	for _, s := range out {
		if id, ok := idOf[s["connection.master"]]; ok {
			s["connection.master"] = id
		}
	}
	for name := range files {
		h.Run(t, "nmcli", "connection", "delete", "id", byFile[name])
	}
	return out
}

func (o nmstateOutput) String() string { return fmt.Sprintf("%s (%s)", o.name, o.source) }
