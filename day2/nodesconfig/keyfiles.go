package nodesconfig

import (
	"fmt"
	"net"
	"regexp"
	"strings"
)

// Keyfile is one NetworkManager connection profile generated from a host's
// nmstate networkConfig.
type Keyfile struct {
	// Name is the file name, <interface>.nmconnection, as nmstate names them.
	Name    string
	Content []byte
}

// The installer's node-joiner turns each host's nmstate into NetworkManager
// keyfiles at build time with libnmstate (openshift/installer
// pkg/asset/agent/manifests/staticnetworkconfig.go GetNMIgnitionFiles ->
// assisted-service pkg/staticnetworkconfig/generator.go
// GenerateStaticNetworkConfigData) and ships them with mac_interface.ini; the
// pre-network script renames them to the NIC that has the MAC on the booted
// machine (assisted-service internal/constants/scripts.go,
// PreNetworkConfigScript). libnmstate is a Rust library that is not available
// to this Go program, so Keyfiles generates the profiles itself for the subset
// of nmstate below and refuses anything else at build time, naming it:
//
//   - interfaces of type ethernet, vlan (vlan.base-iface, vlan.id) and bond
//     (link-aggregation.mode, .port, .options), state up (down and absent
//     interfaces get no profile), mtu, mac-address;
//   - ipv4/ipv6: enabled, dhcp, autoconf (ipv6), address[].ip/prefix-length;
//   - routes.config[]: destination, next-hop-address, next-hop-interface,
//     metric, table-id;
//   - dns-resolver.config: server, search.
//
// The keys are NetworkManager's keyfile settings (nm-settings-keyfile(5),
// nm-settings-nmcli(5)), with the values libnmstate's gen_conf gives the same
// YAML (nmstate/nmstate @614c66dc, rust/src/lib/nm/settings/: ip.rs for the
// methods, DHCP and addr-gen-mode, route.rs and nm_dbus/gen_conf/route.rs for
// routes, wired.rs for MTU and MAC, ../dns.rs for where DNS goes); like
// assisted-service's formatNMConnection, every profile gets autoconnect=true
// and autoconnect-priority=1. NetworkManager itself loads and applies them in
// the test suite (test/e2e, TestAddNodes_NetworkManagerAppliesKeyfiles).
func (h Host) Keyfiles() ([]Keyfile, error) {
	if h.NetworkConfig == nil {
		return nil, nil
	}
	g := &kfGen{profiles: map[string]*profile{}}
	if err := g.parse(h.NetworkConfig); err != nil {
		return nil, err
	}
	return g.render(), nil
}

type profile struct {
	name, typ  string
	mtu        int
	mac        string
	master     string
	vlanID     int
	vlanParent string
	bondMode   string
	bondOpts   map[string]string
	ip         [2]ipConf // ipv4, ipv6
}

type ipConf struct {
	present          bool // the family is in the YAML
	enabled          bool
	dhcp, autoconf   bool
	addresses        []string
	routes           []route
	dns, dnsSearch   []string
	dnsPriority      int
	hasStaticAddress bool
}

// route is one keyfile route: routeN=dest,gateway,metric and
// routeN_options=table=T.
type route struct {
	dest, gateway string
	metric, table int
}

type kfGen struct {
	order    []string
	profiles map[string]*profile
}

// ifaceNameRE: what NetworkManager takes as an interface name (1 to 15
// characters; nmcli --offline refuses "eth0:1": "interface name contains an
// invalid character"), "." and ".." excepted below.
var ifaceNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,15}$`)

func (g *kfGen) get(name string) *profile {
	p, ok := g.profiles[name]
	if !ok {
		p = &profile{name: name}
		g.profiles[name] = p
		g.order = append(g.order, name)
	}
	return p
}

// parse reads the host's nmstate in four steps: the document (strictly, into
// nmState), each interface in state up, the profiles that follow from them
// (bond ports and VLAN parents not listed themselves), then routes and DNS,
// which need the interfaces.
func (g *kfGen) parse(nc map[string]any) error {
	var st nmState
	if err := decodeStrict(nc, &st, where{"networkConfig", "."}); err != nil {
		return err
	}
	skipped := map[string]bool{}
	for j, raw := range st.Interfaces {
		if err := g.parseInterface(j, raw, skipped); err != nil {
			return err
		}
	}
	if err := g.completeProfiles(skipped); err != nil {
		return err
	}
	if st.Routes != nil {
		for k, r := range st.Routes.Config {
			if err := g.parseRoute(k, r); err != nil {
				return err
			}
		}
	}
	if st.DNSResolver != nil && st.DNSResolver.Config != nil {
		return g.parseDNS(*st.DNSResolver.Config)
	}
	return nil
}

// parseInterface decodes networkConfig.interfaces[j] and records its profile
// (nothing for state down or absent, which it remembers in skipped).
func (g *kfGen) parseInterface(j int, raw any, skipped map[string]bool) error {
	m, ok := raw.(map[string]any)
	if !ok {
		return fmt.Errorf("networkConfig.interfaces[%d] must be a mapping", j)
	}
	name, _ := m["name"].(string)
	if !ifaceNameRE.MatchString(name) || name == "." || name == ".." {
		return fmt.Errorf("networkConfig.interfaces[%d]: name %q is not an interface name (1 to 15 letters, digits, '.', '-', '_')", j, name)
	}
	w := where{fmt.Sprintf("networkConfig interface %q", name), ": "}
	var it nmInterface
	if err := decodeStrict(m, &it, w); err != nil {
		return err
	}
	switch it.State {
	case "", "up":
	case "down", "absent":
		skipped[name] = true
		return nil
	default:
		return fmt.Errorf("%s: state %q is not supported (use up, down or absent)", w.base, it.State)
	}
	if p, dup := g.profiles[name]; dup && p.typ != "" {
		return fmt.Errorf("%s is listed twice", w.base)
	}
	p := g.get(name)
	var err error
	switch it.Type {
	case "ethernet", "802-3-ethernet":
		p.typ = "ethernet"
	case "vlan":
		err = g.vlan(p, it.VLAN, w)
	case "bond":
		err = g.bond(p, it.LinkAggregation, w)
	case "":
		return fmt.Errorf("%s: type is required (ethernet, vlan or bond)", w.base)
	default:
		return fmt.Errorf("%s: type %q is not supported (add-nodes turns nmstate into NetworkManager keyfiles at build time and supports ethernet, vlan and bond)", w.base, it.Type)
	}
	if err != nil {
		return err
	}
	if it.MTU != nil {
		p.mtu = *it.MTU
	}
	if it.MACAddress != "" {
		p.mac = NormalizeMAC(it.MACAddress)
	}
	if it.IPv4 != nil {
		c := nmIPv6{Enabled: it.IPv4.Enabled, DHCP: it.IPv4.DHCP, Address: it.IPv4.Address}
		if err := p.ip[0].set(c, "ipv4", w); err != nil {
			return err
		}
	}
	if it.IPv6 != nil {
		if err := p.ip[1].set(*it.IPv6, "ipv6", w); err != nil {
			return err
		}
	}
	return nil
}

func (g *kfGen) vlan(p *profile, v *nmVLAN, w where) error {
	p.typ = "vlan"
	if v == nil || v.BaseIface == "" {
		return fmt.Errorf("%s: vlan.base-iface is required", w.base)
	}
	if v.ID == nil {
		return fmt.Errorf("%s: vlan.id must be an integer, not <nil>", w.base)
	}
	p.vlanParent, p.vlanID = v.BaseIface, *v.ID
	if p.vlanID < 0 || p.vlanID > 4094 {
		return fmt.Errorf("%s: vlan.id %d is outside 0-4094", w.base, p.vlanID)
	}
	return nil
}

func (g *kfGen) bond(p *profile, la *nmBonding, w where) error {
	p.typ = "bond"
	if la == nil || la.Mode == "" {
		return fmt.Errorf("%s: link-aggregation.mode is required", w.base)
	}
	var err error
	if p.bondMode, p.bondOpts, err = bondOptions(string(la.Mode), la.Options, w); err != nil {
		return err
	}
	for _, port := range la.Port {
		if !ifaceNameRE.MatchString(port) {
			return fmt.Errorf("%s: port %q is not an interface name", w.base, port)
		}
		pp := g.get(port)
		if pp.master != "" && pp.master != p.name {
			return fmt.Errorf("%s: port %q is already a port of bond %q", w.base, port, pp.master)
		}
		pp.master = p.name
	}
	return nil
}

// set records one address family of an interface (ipv4 comes in as an
// nmIPv6 without autoconf: the decoder already refused that key for it).
func (ic *ipConf) set(c nmIPv6, fam string, w where) error {
	ic.present, ic.enabled = true, true
	if c.Enabled != nil {
		ic.enabled = *c.Enabled
	}
	if c.DHCP != nil {
		ic.dhcp = *c.DHCP
	}
	if c.Autoconf != nil {
		ic.autoconf = *c.Autoconf
	}
	v4 := fam == "ipv4"
	if !v4 && ic.enabled && ic.autoconf && !ic.dhcp {
		// libnmstate refuses it (nm/settings/ip.rs gen_nm_ipv6_setting).
		return fmt.Errorf("%s: ipv6.autoconf without ipv6.dhcp is not supported (nmstate: \"Autoconf without DHCP is not supported yet\"); set ipv6.dhcp: true as well", w.base)
	}
	for k, a := range c.Address {
		parsed := net.ParseIP(a.IP)
		if parsed == nil || v4 != (parsed.To4() != nil) {
			return fmt.Errorf("%s: %s.address[%d].ip %q is not an %s address", w.base, fam, k, a.IP, fam)
		}
		if a.PrefixLength == nil {
			return fmt.Errorf("%s: %s.address[%d].prefix-length must be an integer, not <nil>", w.base, fam, k)
		}
		pl, max := *a.PrefixLength, 128
		if v4 {
			max = 32
		}
		if pl < 0 || pl > max {
			return fmt.Errorf("%s: %s.address[%d].prefix-length %d is outside 0-%d", w.base, fam, k, pl, max)
		}
		ic.addresses = append(ic.addresses, fmt.Sprintf("%s/%d", a.IP, pl))
	}
	ic.hasStaticAddress = len(ic.addresses) > 0
	return nil
}

// completeProfiles drops what was only named by a skipped interface, gives
// bond ports and VLAN parents that are not listed an ethernet profile, and
// refuses IP settings on a bond port.
func (g *kfGen) completeProfiles(skipped map[string]bool) error {
	for _, name := range g.order {
		p := g.profiles[name]
		if p.typ == "" {
			if skipped[name] {
				delete(g.profiles, name)
				continue
			}
			// A bond port that is not listed itself: an ethernet port profile.
			p.typ = "ethernet"
		}
		if p.master != "" && (p.ip[0].configured() || p.ip[1].configured()) {
			return fmt.Errorf("networkConfig interface %q is a port of bond %q and cannot have its own ipv4/ipv6 configuration", name, p.master)
		}
		if p.typ == "vlan" {
			if _, ok := g.profiles[p.vlanParent]; !ok && !skipped[p.vlanParent] {
				// The parent NIC need not be listed (it is then only a link).
				g.get(p.vlanParent).typ = "ethernet"
			}
		}
	}
	kept := g.order[:0]
	for _, n := range g.order {
		if _, ok := g.profiles[n]; ok {
			kept = append(kept, n)
		}
	}
	g.order = kept
	if len(g.order) == 0 {
		return fmt.Errorf("networkConfig: no interface in state up")
	}
	return nil
}

// configured: the family is given and enabled, or has addresses.
func (ic ipConf) configured() bool { return ic.present && (ic.enabled || ic.hasStaticAddress) }

// parseRoute adds a route to its next-hop interface's family, as libnmstate
// writes it: metric 0 and table 254 (main) unless given (nmstate
// nm/settings/route.rs gen_nm_ip_routes; nm_dbus/gen_conf/route.rs: the table
// always goes to routeN_options). A table-id of 0 and a metric of -1 mean
// nmstate's defaults.
func (g *kfGen) parseRoute(k int, r nmRoute) error {
	where := fmt.Sprintf("networkConfig.routes.config[%d]", k)
	ip, ipnet, err := net.ParseCIDR(r.Destination)
	if err != nil {
		return fmt.Errorf("%s: destination %q is not an address/prefix", where, r.Destination)
	}
	fi := 1
	if ip.To4() != nil {
		fi = 0
	}
	p, ok := g.profiles[r.NextHopInterface]
	if !ok {
		return fmt.Errorf("%s: next-hop-interface %q is not an interface in state up of networkConfig.interfaces", where, r.NextHopInterface)
	}
	rt := route{dest: ipnet.String(), gateway: r.NextHopAddress, table: 254}
	if gw := r.NextHopAddress; gw != "" {
		g := net.ParseIP(gw)
		if g == nil || (g.To4() != nil) != (fi == 0) {
			return fmt.Errorf("%s: next-hop-address %q is not an address of the destination's family", where, gw)
		}
	}
	if r.Metric != nil && *r.Metric != -1 {
		if *r.Metric < 0 {
			return fmt.Errorf("%s: metric %d is negative", where, *r.Metric)
		}
		rt.metric = *r.Metric
	}
	if r.TableID != nil && *r.TableID != 0 {
		if *r.TableID < 0 {
			return fmt.Errorf("%s: table-id %d is negative", where, *r.TableID)
		}
		rt.table = *r.TableID
	}
	ic := &p.ip[fi]
	if !ic.present || !ic.enabled {
		return fmt.Errorf("%s: next-hop-interface %q has %s disabled", where, r.NextHopInterface, []string{"ipv4", "ipv6"}[fi])
	}
	ic.routes = append(ic.routes, rt)
	return nil
}

// parseDNS places the DNS configuration as libnmstate does without a running
// system (nmstate nm/dns.rs store_dns_config_to_iface,
// store_dns_search_or_option_to_iface; dns.rs is_iface_valid_for_dns): each
// family's servers go to the first interface, in the order of
// networkConfig.interfaces, with that family enabled and static (for IPv6:
// with an address), else to the first with it enabled at all; the search
// list and priority 40 go with the family of the first server, the other
// family gets priority 50. A search list without servers goes to the first
// interface with automatic IPv6, else IPv4, else enabled IPv6, else IPv4.
func (g *kfGen) parseDNS(c nmDNS) error {
	servers, search := c.Server, c.Search
	var byFam [2][]string
	var pattern string
	for _, s := range servers {
		ip := net.ParseIP(s)
		if ip == nil {
			return fmt.Errorf("networkConfig.dns-resolver.config.server %q is not an IP address", s)
		}
		fam, ch := 1, "6"
		if ip.To4() != nil {
			fam, ch = 0, "4"
		}
		byFam[fam] = append(byFam[fam], s)
		if !strings.HasSuffix(pattern, ch) {
			pattern += ch
		}
	}
	if len(servers) > 2 && (strings.Contains(pattern, "464") || strings.Contains(pattern, "646")) {
		return fmt.Errorf("networkConfig.dns-resolver.config.server: an IPv4 server between IPv6 servers (or the reverse) is not supported (nmstate: \"Placing IPv4/IPv6 nameserver in the middle of IPv6/IPv4 nameservers is not supported yet\")")
	}
	if len(servers) == 0 {
		if len(search) == 0 {
			return nil
		}
		p, fi := g.searchHolder()
		if p == nil {
			return fmt.Errorf("networkConfig.dns-resolver: no interface has IP enabled to hold the search domains %s", strings.Join(search, ", "))
		}
		p.ip[fi].dnsSearch, p.ip[fi].dnsPriority = search, 40
		return nil
	}
	preferred := 0
	if net.ParseIP(servers[0]).To4() == nil {
		preferred = 1
	}
	for fi := range byFam {
		if len(byFam[fi]) == 0 {
			continue
		}
		p := g.dnsHolder(fi)
		if p == nil {
			return fmt.Errorf("networkConfig.dns-resolver: no interface has %s enabled to hold the DNS servers %s", []string{"ipv4", "ipv6"}[fi], strings.Join(byFam[fi], ", "))
		}
		ic := &p.ip[fi]
		ic.dns, ic.dnsPriority = byFam[fi], 50
		if fi == preferred {
			ic.dnsSearch, ic.dnsPriority = search, 40
		}
	}
	return nil
}

func (g *kfGen) dnsHolder(fi int) *profile {
	for _, n := range g.order {
		ic := g.profiles[n].ip[fi]
		if ic.present && ic.enabled && !ic.dhcp && !ic.autoconf && (fi == 0 || ic.hasStaticAddress) {
			return g.profiles[n]
		}
	}
	for _, n := range g.order {
		if ic := g.profiles[n].ip[fi]; ic.present && ic.enabled {
			return g.profiles[n]
		}
	}
	return nil
}

func (g *kfGen) searchHolder() (*profile, int) {
	for _, auto := range []bool{true, false} {
		for _, n := range g.order {
			p := g.profiles[n]
			for _, fi := range []int{1, 0} {
				if ic := p.ip[fi]; ic.present && ic.enabled && (!auto || ic.dhcp || ic.autoconf) {
					return p, fi
				}
			}
		}
	}
	return nil, 0
}
