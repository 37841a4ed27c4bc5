package e2e

import (
	"strings"
	"testing"

	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// nmShape is one host of the NetworkManager test: its nodes-config entry,
// the NICs of the machine it boots on (its MACs, other names) and what
// NetworkManager must make of it. A shape without NICs is only compared with
// nmstate's own output for the same YAML.
type nmShape struct {
	name string
	host string // nodes-config.yaml hosts[] entry
	nics []harness.NIC
	wire func(t *testing.T, h *harness.NMHost) // servers on the far end
	want func(j *nmJudge)
}

// nmCorpus is every shape add-nodes accepts: ethernet (also as
// 802-3-ethernet), vlan, bond; state up, down, absent; mtu; mac-address;
// IPv4 and IPv6 static, DHCP, autoconf with DHCP, link-local; routes with and
// without gateway, metric and table; DNS servers of both families and
// search; numbers written as strings; logical names unlike the machine's,
// also swapped; a VLAN name that passes 15 characters on the machine.
var nmCorpus = []nmShape{
	{
		// The suite's everyday host (e2e and demo nodes-config): one NIC,
		// static IPv4, default route, DNS.
		name: "static ipv4",
		host: `- hostname: nm-static
  role: worker
  interfaces: [{name: eno1, macAddress: "52:54:00:e0:01:01"}]
  networkConfig:
    interfaces:
    - name: eno1
      type: ethernet
      state: up
      mac-address: 52:54:00:e0:01:01
      ipv4: {enabled: true, dhcp: false, address: [{ip: 192.0.2.30, prefix-length: 24}]}
    dns-resolver: {config: {server: [192.0.2.1]}}
    routes:
      config: [{destination: 0.0.0.0/0, next-hop-address: 192.0.2.1, next-hop-interface: eno1}]
`,
		nics: []harness.NIC{{Name: "ens3", MAC: "52:54:00:e0:01:01"}},
		want: func(j *nmJudge) {
			j.profiles("ens3")
			j.connected("ens3")
			j.addrs("ens3", "192.0.2.30/24") // no IPv6 at all: ipv6 absent means disabled
			j.routes("default via 192.0.2.1 dev ens3 metric 0 table main")
			j.dns([]string{"192.0.2.1"}, nil)
			j.settings("ens3", map[string]string{"ipv4.method": "manual", "ipv6.method": "disabled",
				"802-3-ethernet.cloned-mac-address": "52:54:00:E0:01:01", "connection.autoconnect-priority": "1"})
		},
	},
	{
		// Dual stack with jumbo frames, a default route per family and
		// servers of both families with a search domain.
		name: "dual stack",
		host: `- hostname: nm-dualstack
  role: worker
  interfaces: [{name: eth0, macAddress: "52:54:00:e0:02:01"}]
  networkConfig:
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
    dns-resolver: {config: {server: [192.0.2.53, "2001:db8::53"], search: [example.com]}}
`,
		nics: []harness.NIC{{Name: "enp1s0", MAC: "52:54:00:e0:02:01"}},
		want: func(j *nmJudge) {
			j.connected("enp1s0")
			j.mtu("enp1s0", 9000)
			j.addrs("enp1s0", "192.0.2.10/24", "2001:db8::10/64", "link-local")
			j.routes("default via 192.0.2.1 dev enp1s0 metric 100 table main", "default via 2001:db8::1 dev enp1s0 metric 1024 table main")
			j.dns([]string{"192.0.2.53", "2001:db8::53"}, []string{"example.com"})
			j.settings("enp1s0", map[string]string{"ipv6.addr-gen-mode": "eui64"})
		},
	},
	{
		// The NMStateConfig example of assisted-service's docs (the suite's
		// test/harness/examples/nmstate.yaml): two NICs, a default route
		// each with table-id 254; on the machine the two names are swapped.
		name: "two nics swapped names",
		host: `- hostname: nm-twonics
  role: worker
  interfaces: [{name: eth0, macAddress: "52:54:00:e0:03:01"}, {name: eth1, macAddress: "52:54:00:e0:03:02"}]
  networkConfig:
    interfaces:
    - {name: eth0, type: ethernet, state: up, mac-address: "52:54:00:e0:03:01", ipv4: {enabled: true, dhcp: false, address: [{ip: 10.20.0.11, prefix-length: 24}]}}
    - {name: eth1, type: ethernet, state: up, mac-address: "52:54:00:e0:03:02", ipv4: {enabled: true, dhcp: false, address: [{ip: 10.21.0.11, prefix-length: 24}]}}
    dns-resolver: {config: {server: [10.20.0.1]}}
    routes:
      config:
      - {destination: 0.0.0.0/0, next-hop-address: 10.20.0.1, next-hop-interface: eth0, table-id: 254}
      - {destination: 0.0.0.0/0, next-hop-address: 10.21.0.1, next-hop-interface: eth1, table-id: 254, metric: 100}
`,
		nics: []harness.NIC{{Name: "eth1", MAC: "52:54:00:e0:03:01"}, {Name: "eth0", MAC: "52:54:00:e0:03:02"}},
		want: func(j *nmJudge) {
			j.connected("eth0", "eth1")
			j.addrs("eth1", "10.20.0.11/24")
			j.addrs("eth0", "10.21.0.11/24")
			j.routes("default via 10.20.0.1 dev eth1 metric 0 table main", "default via 10.21.0.1 dev eth0 metric 100 table main")
			j.dns([]string{"10.20.0.1"}, nil)
		},
	},
	{
		// IPv6 only: a route into another table, a route without gateway,
		// an IPv6 server and search domain.
		name: "ipv6 only with tables",
		host: `- hostname: nm-ipv6
  role: worker
  interfaces: [{name: eth0, macAddress: "52:54:00:e0:04:01"}]
  networkConfig:
    interfaces:
    - name: eth0
      type: ethernet
      state: up
      ipv4: {enabled: false}
      ipv6: {enabled: true, dhcp: false, autoconf: false, address: [{ip: "2001:db8:1::5", prefix-length: 64}]}
    routes:
      config:
      - {destination: "2001:db8:2::/64", next-hop-address: "2001:db8:1::1", next-hop-interface: eth0, metric: 200, table-id: 100}
      - {destination: "2001:db8:3::/64", next-hop-interface: eth0, metric: 300}
    dns-resolver: {config: {server: ["2001:db8:1::53"], search: [v6.example.com]}}
`,
		nics: []harness.NIC{{Name: "ens5", MAC: "52:54:00:e0:04:01"}},
		want: func(j *nmJudge) {
			j.connected("ens5")
			j.addrs("ens5", "2001:db8:1::5/64", "link-local")
			j.routes("2001:db8:2::/64 via 2001:db8:1::1 dev ens5 metric 200 table 100", "2001:db8:3::/64 dev ens5 metric 300 table main")
			j.dns([]string{"2001:db8:1::53"}, []string{"v6.example.com"})
		},
	},
	{
		// DHCPv4 and SLAAC from dnsmasq on the wire, with a static route
		// and a static server: the address, the EUI-64 IPv6 address (nmstate
		// writes addr-gen-mode eui64), the route from DHCP and the static
		// one, and both servers (nmstate keeps DHCP's unless auto-dns: false).
		name: "dhcp and slaac",
		host: `- hostname: nm-dhcp
  role: worker
  interfaces: [{name: eth0, macAddress: "52:54:00:e0:05:01"}]
  networkConfig:
    interfaces:
    - name: eth0
      type: ethernet
      state: up
      ipv4: {enabled: true, dhcp: true}
      ipv6: {enabled: true, dhcp: true, autoconf: true}
    routes:
      config: [{destination: 203.0.113.0/24, next-hop-address: 198.51.100.254, next-hop-interface: eth0}]
    dns-resolver: {config: {server: [198.51.100.99]}}
`,
		nics: []harness.NIC{{Name: "enp2s0", MAC: "52:54:00:e0:05:01"}},
		wire: func(t *testing.T, h *harness.NMHost) {
			p := h.Peer("enp2s0")
			h.Wire(t, "ip", "addr", "add", "198.51.100.1/24", "dev", p)
			h.Wire(t, "ip", "addr", "add", "2001:db8:5::1/64", "dev", p)
			h.ServeDHCP(t, "enp2s0", "--dhcp-range=198.51.100.50,198.51.100.59,255.255.255.0,1h",
				"--dhcp-option=option:router,198.51.100.1", "--dhcp-option=option:dns-server,198.51.100.53",
				"--enable-ra", "--dhcp-range=::,constructor:"+p+",ra-only")
		},
		want: func(j *nmJudge) {
			j.connected("enp2s0")
			eventually(j.t, "DHCP and SLAAC addresses", func() string {
				got := ipLinks(j.t, j.h)["enp2s0"].addrs()
				var v4 bool
				for _, a := range got {
					v4 = v4 || strings.HasPrefix(a, "198.51.100.5") && strings.HasSuffix(a, "/24")
				}
				// EUI-64 of 52:54:00:e0:05:01 in 2001:db8:5::/64.
				if !v4 || containsAll(got, "2001:db8:5:0:5054:ff:fee0:501/64") != "" {
					return "addresses " + strings.Join(got, " ")
				}
				return ""
			})
			j.routes("default via 198.51.100.1 dev enp2s0 metric 100 table main", "203.0.113.0/24 via 198.51.100.254 dev enp2s0 metric 0 table main")
			j.dns([]string{"198.51.100.99", "198.51.100.53"}, nil)
			j.settings("enp2s0", map[string]string{"ipv4.method": "auto", "ipv6.method": "auto",
				"ipv4.dhcp-client-id": "mac", "ipv4.dhcp-timeout": "2147483647", "ipv6.ra-timeout": "2147483647"})
		},
	},
	{
		// A bond of two NICs with a MAC and jumbo frames, a VLAN with an MTU
		// of its own on top.
		name: "bond with vlan",
		host: `- hostname: nm-bond
  role: worker
  interfaces: [{name: eno1, macAddress: "52:54:00:e0:06:01"}, {name: eno2, macAddress: "52:54:00:e0:06:02"}]
  networkConfig:
    interfaces:
    - name: bond0
      type: bond
      state: up
      mac-address: 52:54:00:e0:06:01
      mtu: 9000
      link-aggregation: {mode: active-backup, port: [eno1, eno2], options: {miimon: 100}}
      ipv4: {enabled: false}
      ipv6: {enabled: false}
    - name: bond0.20
      type: vlan
      state: up
      mtu: 8000
      vlan: {base-iface: bond0, id: 20}
      ipv4: {enabled: true, address: [{ip: 192.0.2.20, prefix-length: 24}]}
`,
		nics: []harness.NIC{{Name: "ens6", MAC: "52:54:00:e0:06:01"}, {Name: "ens7", MAC: "52:54:00:e0:06:02"}},
		want: func(j *nmJudge) {
			j.profiles("bond0", "bond0.20", "ens6", "ens7")
			j.settings("bond0", map[string]string{"connection.type": "bond", "bond.options": "mode=active-backup,miimon=100",
				"802-3-ethernet.cloned-mac-address": "52:54:00:E0:06:01", "802-3-ethernet.mtu": "9000", "connection.autoconnect-slaves": "1"})
			for _, port := range []string{"ens6", "ens7"} {
				j.settings(port, map[string]string{"connection.interface-name": port, "connection.master": "bond0", "connection.slave-type": "bond"})
			}
			j.settings("bond0.20", map[string]string{"vlan.id": "20", "vlan.parent": "bond0", "ipv4.addresses": "192.0.2.20/24", "802-3-ethernet.mtu": "8000"})
			if j.bond {
				j.connected("bond0", "ens6", "ens7")
				j.mtu("bond0", 9000)
				j.bonding("bond0", "fault-tolerance (active-backup)", 100, "ens6", "ens7")
			}
			if j.bond && j.vlan {
				j.vlanLink("bond0.20", "bond0", 20)
				j.addrs("bond0.20", "192.0.2.20/24")
			}
		},
	},
	{
		// nmstate's own example of its generated configuration
		// (nmstate.io/features/gen_conf.html): a balance-rr bond whose ports
		// are not listed themselves (nmstate then takes them as ethernet).
		name: "bond of unlisted ports",
		host: `- hostname: nm-balancerr
  role: worker
  interfaces: [{name: eth1, macAddress: "52:54:00:e0:07:01"}, {name: eth2, macAddress: "52:54:00:e0:07:02"}]
  networkConfig:
    interfaces:
    - name: bond99
      type: bond
      state: up
      link-aggregation:
        mode: balance-rr
        port: [eth2, eth1]
`,
		nics: []harness.NIC{{Name: "ens8", MAC: "52:54:00:e0:07:01"}, {Name: "ens9", MAC: "52:54:00:e0:07:02"}},
		want: func(j *nmJudge) {
			j.profiles("bond99", "ens8", "ens9")
			j.settings("bond99", map[string]string{"bond.options": "mode=balance-rr", "ipv4.method": "disabled", "ipv6.method": "disabled"})
			j.settings("ens8", map[string]string{"connection.master": "bond99", "connection.slave-type": "bond"})
			j.settings("ens9", map[string]string{"connection.master": "bond99", "connection.slave-type": "bond"})
			if j.bond {
				j.connected("bond99", "ens8", "ens9")
				j.bonding("bond99", "load balancing (round-robin)", -1, "ens8", "ens9")
			}
		},
	},
	{
		// A VLAN on a NIC whose name leaves no room for ".2507": the values
		// of assisted-service's own case (internal/constants/test_root host4
		// and scripts_test.go "truncates vlan interface names").
		name: "vlan on a long nic name",
		host: `- hostname: nm-vlan
  role: worker
  interfaces: [{name: eth0, macAddress: "b6:6f:12:c4:4e:fc"}]
  networkConfig:
    interfaces:
    - {name: eth0, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 192.0.2.50, prefix-length: 24}]}}
    - {name: eth0.2507, type: vlan, state: up, vlan: {base-iface: eth0, id: 2507}, ipv4: {enabled: true, address: [{ip: 192.0.2.111, prefix-length: 24}]}}
`,
		nics: []harness.NIC{{Name: "enp94s0f0np0", MAC: "b6:6f:12:c4:4e:fc"}},
		want: func(j *nmJudge) {
			j.profiles("enp94s0f0np0", "enp94s0f0n.2507")
			j.connected("enp94s0f0np0")
			j.addrs("enp94s0f0np0", "192.0.2.50/24")
			j.settings("enp94s0f0n.2507", map[string]string{"connection.interface-name": "enp94s0f0n.2507",
				"vlan.id": "2507", "vlan.parent": "enp94s0f0np0", "ipv4.addresses": "192.0.2.111/24"})
			if j.vlan {
				j.connected("enp94s0f0n.2507")
				j.vlanLink("enp94s0f0n.2507", "enp94s0f0np0", 2507)
				j.addrs("enp94s0f0n.2507", "192.0.2.111/24")
			}
		},
	},
	{
		// Spellings nmstate accepts (802-3-ethernet, a prefix length as a
		// string, no state), IPv6 enabled with nothing else (link-local),
		// and interfaces down or absent, which get no profile.
		name: "spellings and interfaces down",
		host: `- hostname: nm-misc
  role: worker
  interfaces: [{name: eth0, macAddress: "52:54:00:e0:09:01"}, {name: eth1, macAddress: "52:54:00:e0:09:02"}, {name: eth2, macAddress: "52:54:00:e0:09:03"}]
  networkConfig:
    interfaces:
    - {name: eth0, type: 802-3-ethernet, ipv4: {enabled: true, address: [{ip: 203.0.113.7, prefix-length: "24"}]}, ipv6: {enabled: true}}
    - {name: eth1, type: ethernet, state: down}
    - {name: eth2, type: ethernet, state: absent}
`,
		nics: []harness.NIC{{Name: "ens10", MAC: "52:54:00:e0:09:01"}, {Name: "ens11", MAC: "52:54:00:e0:09:02"}, {Name: "ens12", MAC: "52:54:00:e0:09:03"}},
		want: func(j *nmJudge) {
			j.profiles("ens10")
			j.connected("ens10")
			j.addrs("ens10", "203.0.113.7/24", "link-local")
			j.settings("ens10", map[string]string{"ipv6.method": "link-local"})
			devs := nmDevices(j.t, j.h)
			for _, d := range []string{"ens11", "ens12"} {
				if devs[d] != "disconnected " {
					j.t.Errorf("%s is %q, want disconnected without a profile", d, devs[d])
				}
			}
		},
	},
	{
		// Compared with nmstate's output only (nm_nmstate_test.go): the
		// shapes of assisted-service's keyfile fixtures host0 and host2.
		name: "assisted-service host0",
		host: `- hostname: as-host0
  role: worker
  interfaces: [{name: eth0, macAddress: "f8:75:a4:a4:00:fe"}, {name: eth1, macAddress: "80:32:53:4f:cf:d6"}]
  networkConfig:
    interfaces:
    - {name: eth0, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 192.0.2.1, prefix-length: 24}]}}
    - {name: eth0.101, type: vlan, state: up, vlan: {base-iface: eth0, id: 101}, ipv4: {enabled: true, address: [{ip: 192.168.122.250, prefix-length: 24}]}}
`,
	},
	{
		name: "assisted-service host2",
		host: `- hostname: as-host2
  role: worker
  interfaces: [{name: eth0, macAddress: "52:54:00:09:de:93"}, {name: eth1, macAddress: "52:54:00:09:de:94"}]
  networkConfig:
    interfaces:
    - {name: bond0, type: bond, state: up, link-aggregation: {mode: balance-rr, port: [eth0, eth1], options: {miimon: 140}}, ipv4: {enabled: true, address: [{ip: 192.0.2.0, prefix-length: 24}]}}
`,
	},
}
