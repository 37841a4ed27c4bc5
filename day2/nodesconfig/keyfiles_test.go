package nodesconfig

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func hostWith(t *testing.T, nmstate string, nics ...Interface) Host {
	t.Helper()
	var nc map[string]any
	if err := yaml.Unmarshal([]byte(nmstate), &nc); err != nil {
		t.Fatal(err)
	}
	return Host{Hostname: "w0", Interfaces: nics, NetworkConfig: nc}
}

// Literal keyfiles for a static dual-stack NIC with default routes and DNS,
// and for a bond of two NICs with a VLAN on top (nm-settings-keyfile(5)), with
// libnmstate's values for the same YAML (nmstate/nmstate @614c66dc): a route
// without metric gets metric 0 and every route its table in routeN_options,
// table=254 by default (rust/src/lib/nm/settings/route.rs gen_nm_ip_routes,
// nm_dbus/gen_conf/route.rs to_keyfile); IPv6 addresses are generated as
// EUI-64 whenever the YAML has ipv6 (settings/ip.rs, ADDR_GEN_MODE_EUI64);
// DNS of the family of the first server, with the search list, on the first
// static interface with priority 40, the other family's with 50 (nm/dns.rs
// _save_dns_to_iface, DEFAULT_DNS_PRIORITY).
func TestKeyfiles_Literal(t *testing.T) {
	h := hostWith(t, `
interfaces:
- name: eth0
  type: ethernet
  state: up
  mtu: 9000
  ipv4: {enabled: true, dhcp: false, address: [{ip: 192.0.2.10, prefix-length: 24}]}
  ipv6: {enabled: true, dhcp: false, autoconf: false, address: [{ip: "2001:db8::10", prefix-length: 64}]}
routes:
  config:
  - {destination: 0.0.0.0/0, next-hop-address: 192.0.2.1, next-hop-interface: eth0, metric: 100}
  - {destination: "::/0", next-hop-address: "2001:db8::1", next-hop-interface: eth0}
dns-resolver:
  config: {server: [192.0.2.53, "2001:db8::53"], search: [example.com]}
`, Interface{Name: "eth0", MACAddress: "52:54:00:00:00:01"})
	kfs, err := h.Keyfiles()
	if err != nil {
		t.Fatal(err)
	}
	want := `[connection]
id=eth0
uuid=` + kfs[0].uuid(t) + `
type=ethernet
interface-name=eth0
autoconnect=true
autoconnect-priority=1

[ethernet]
mtu=9000

[ipv4]
address1=192.0.2.10/24
dns=192.0.2.53;
dns-priority=40
dns-search=example.com;
method=manual
route1=0.0.0.0/0,192.0.2.1,100
route1_options=table=254

[ipv6]
address1=2001:db8::10/64
addr-gen-mode=eui64
dns=2001:db8::53;
dns-priority=50
method=manual
route1=::/0,2001:db8::1,0
route1_options=table=254
`
	if len(kfs) != 1 || kfs[0].Name != "eth0.nmconnection" || string(kfs[0].Content) != want {
		t.Fatalf("got %d keyfiles; %s:\n%s\nwant\n%s", len(kfs), kfs[0].Name, kfs[0].Content, want)
	}

	h = hostWith(t, `
interfaces:
- name: bond0
  type: bond
  state: up
  link-aggregation: {mode: active-backup, port: [eno1, eno2], options: {miimon: 100}}
  ipv4: {enabled: false}
  ipv6: {enabled: false}
- name: bond0.20
  type: vlan
  state: up
  vlan: {base-iface: bond0, id: 20}
  ipv4: {enabled: true, dhcp: true}
`, Interface{Name: "eno1", MACAddress: "52:54:00:00:00:01"}, Interface{Name: "eno2", MACAddress: "52:54:00:00:00:02"})
	kfs, err = h.Keyfiles()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, k := range kfs {
		names = append(names, k.Name)
	}
	if got := strings.Join(names, " "); got != "bond0.nmconnection eno1.nmconnection eno2.nmconnection bond0.20.nmconnection" {
		t.Fatalf("keyfiles %s", got)
	}
	for name, subs := range map[string][]string{
		"bond0.nmconnection":    {"type=bond\n", "autoconnect-slaves=1\n", "[bond]\nmode=active-backup\nmiimon=100\n", "[ipv4]\nmethod=disabled\n", "[ipv6]\naddr-gen-mode=eui64\nmethod=disabled\n"},
		"eno1.nmconnection":     {"type=ethernet\n", "interface-name=eno1\n", "master=bond0\nslave-type=bond\n"},
		"bond0.20.nmconnection": {"type=vlan\n", "[vlan]\nid=20\nparent=bond0\n", "[ipv4]\ndhcp-client-id=mac\ndhcp-send-hostname=true\ndhcp-timeout=2147483647\nmethod=auto\n", "[ipv6]\nmethod=disabled\n"},
	} {
		for _, k := range kfs {
			if k.Name != name {
				continue
			}
			for _, s := range subs {
				if !strings.Contains(string(k.Content), s) {
					t.Errorf("%s lacks %q:\n%s", name, s, k.Content)
				}
			}
			if name == "eno1.nmconnection" && strings.Contains(string(k.Content), "[ipv4]") {
				t.Errorf("bond port has its own IP settings:\n%s", k.Content)
			}
		}
	}
}

func (k Keyfile) uuid(t *testing.T) string {
	t.Helper()
	for _, l := range strings.Split(string(k.Content), "\n") {
		if v, ok := strings.CutPrefix(l, "uuid="); ok {
			if len(v) != 36 || v[14] != '5' {
				t.Fatalf("uuid %q is not a version-5 UUID", v)
			}
			return v
		}
	}
	t.Fatal("no uuid")
	return ""
}

// What the generator does not support is refused at build time, naming the
// key and the host, through Validate (before anything is built).
func TestKeyfiles_UnsupportedIsABuildError(t *testing.T) {
	nic := Interface{Name: "eth0", MACAddress: "52:54:00:00:00:01"}
	for _, tc := range []struct{ name, nmstate, want string }{
		{"bridge", "interfaces:\n- {name: br0, type: linux-bridge, state: up}\n",
			`host 0 (w0): networkConfig interface "br0": type "linux-bridge" is not supported (add-nodes turns nmstate into NetworkManager keyfiles at build time and supports ethernet, vlan and bond)`},
		{"ovs key", "interfaces:\n- {name: eth0, type: ethernet, state: up, ethtool: {}}\n",
			`host 0 (w0): networkConfig interface "eth0": ethtool not supported`},
		{"route to unknown interface", "interfaces:\n- {name: eth0, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 10.0.0.2, prefix-length: 24}]}}\nroutes:\n  config:\n  - {destination: 0.0.0.0/0, next-hop-address: 10.0.0.1, next-hop-interface: eth9}\n",
			`networkConfig.routes.config[0]: next-hop-interface "eth9" is not an interface in state up`},
		{"unmapped ethernet", "interfaces:\n- {name: eth7, type: ethernet, state: up}\n",
			`host 0 (w0): networkConfig interface "eth7" has no MAC mapping in interfaces and is not a physical interface name`},
		{"ipv4 address in ipv6", "interfaces:\n- {name: eth0, type: ethernet, state: up, ipv6: {enabled: true, address: [{ip: 10.0.0.2, prefix-length: 64}]}}\n",
			`ipv6.address[0].ip "10.0.0.2" is not an ipv6 address`},
		// nmstate: "Failed to find suitable(IP enabled) interface for DNS server".
		{"dns without holder", "interfaces:\n- {name: eth0, type: ethernet, state: up, ipv4: {enabled: false}, ipv6: {enabled: true, address: [{ip: '2001:db8::2', prefix-length: 64}]}}\ndns-resolver:\n  config: {server: [10.0.0.53]}\n",
			`no interface has ipv4 enabled to hold the DNS servers 10.0.0.53`},
		// nmstate ip.rs gen_nm_ipv6_setting: "Autoconf without DHCP is not supported yet".
		{"ipv6 autoconf without dhcp", "interfaces:\n- {name: eth0, type: ethernet, state: up, ipv6: {enabled: true, autoconf: true, dhcp: false}}\n",
			`networkConfig interface "eth0": ipv6.autoconf without ipv6.dhcp is not supported`},
		// NetworkManager refuses it: "interface name contains an invalid character".
		{"colon in a name", "interfaces:\n- {name: 'eth0:1', type: ethernet, state: up}\n",
			`networkConfig.interfaces[0]: name "eth0:1" is not an interface name`},
		// nmstate ifaces/bond.rs BondOptions (deny_unknown_fields).
		{"unknown bond option", "interfaces:\n- {name: bond0, type: bond, state: up, link-aggregation: {mode: active-backup, port: [eth0], options: {miimonn: 100}}}\n",
			`link-aggregation.options.miimonn is not a bond option nmstate knows`},
		// NetworkManager 1.42: "'lacp_rate' option is only valid with mode '802.3ad'".
		{"bond option of another mode", "interfaces:\n- {name: bond0, type: bond, state: up, link-aggregation: {mode: active-backup, port: [eth0], options: {lacp_rate: fast}}}\n",
			`bond mode active-backup: option lacp_rate applies to mode 802.3ad only`},
		{"bond mode", "interfaces:\n- {name: bond0, type: bond, state: up, link-aggregation: {mode: lacp, port: [eth0]}}\n",
			`link-aggregation.mode "lacp" is not a bond mode`},
		// nmstate nm/dns.rs is_mixed_dns_servers.
		{"ipv4 server between ipv6 servers", "interfaces:\n- {name: eth0, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 10.0.0.2, prefix-length: 24}]}, ipv6: {enabled: true, address: [{ip: '2001:db8::2', prefix-length: 64}]}}\ndns-resolver:\n  config: {server: ['2001:db8::53', 10.0.0.53, '2001:db8::54']}\n",
			`an IPv4 server between IPv6 servers (or the reverse) is not supported`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := hostWith(t, tc.nmstate, nic)
			err := (&Config{Hosts: []Host{h}}).Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

// The typed decoding names the place of a wrong value, and bond options keep
// whole numbers as NetworkManager reads them (not 1e+06).
func TestKeyfiles_StrictDecoding(t *testing.T) {
	nic := Interface{Name: "eth0", MACAddress: "52:54:00:00:00:01"}
	for _, tc := range []struct{ name, nmstate, want string }{
		{"vlan id not a number", "interfaces:\n- {name: eth0.5, type: vlan, state: up, vlan: {base-iface: eth0, id: five}}\n",
			`networkConfig interface "eth0.5": vlan.id must be an integer, not five`},
		{"autoconf in ipv4", "interfaces:\n- {name: eth0, type: ethernet, state: up, ipv4: {enabled: true, autoconf: true}}\n",
			`networkConfig interface "eth0": ipv4: autoconf not supported (add-nodes turns nmstate into NetworkManager keyfiles at build time and supports enabled, dhcp, address)`},
		{"dhcp not a boolean", "interfaces:\n- {name: eth0, type: ethernet, state: up, ipv6: {enabled: true, dhcp: 'yes'}}\n",
			`networkConfig interface "eth0": ipv6.dhcp must be true or false, not yes`},
		{"route metric", "interfaces:\n- {name: eth0, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 10.0.0.2, prefix-length: 24}]}}\nroutes:\n  config:\n  - {destination: 0.0.0.0/0, next-hop-address: 10.0.0.1, next-hop-interface: eth0, metric: [1]}\n",
			`networkConfig.routes.config[0].metric must be an integer, not [1]`},
		{"unknown top-level key", "interfaces:\n- {name: eth0, type: ethernet, state: up}\nroute-rules: {config: []}\n",
			`networkConfig: route-rules not supported (add-nodes turns nmstate into NetworkManager keyfiles at build time and supports interfaces, routes, dns-resolver)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := hostWith(t, tc.nmstate, nic).Keyfiles()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
	// Numeric aliases of modes and enumerations are written by name, booleans
	// as 0/1 (nmstate ifaces/bond.rs BondMode and BondLacpRate aliases,
	// nm/settings/bond.rs).
	kfs, err := hostWith(t, "interfaces:\n- {name: bond0, type: bond, state: up, link-aggregation: {mode: 4, port: [eth0], options: {miimon: 1000000, lacp_rate: 1, xmit_hash_policy: layer3+4, use_carrier: true}}}\n", nic).Keyfiles()
	if err != nil {
		t.Fatal(err)
	}
	if want := "[bond]\nmode=802.3ad\nlacp_rate=fast\nmiimon=1000000\nuse_carrier=1\nxmit_hash_policy=layer3+4\n"; !strings.Contains(string(kfs[0].Content), want) {
		t.Fatalf("bond0:\n%s\nlacks\n%s", kfs[0].Content, want)
	}
}
