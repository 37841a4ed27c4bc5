package nodesconfig

import (
	"fmt"
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/google/uuid"
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
// nm-settings-nmcli(5)); like assisted-service's formatNMConnection, every
// profile gets autoconnect=true and autoconnect-priority=1.
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
	present          bool
	enabled          bool
	dhcp, autoconf   bool
	addresses        []string
	routes           []string
	dns, dnsSearch   []string
	hasDefaultRoute  bool
	hasStaticAddress bool
}

type kfGen struct {
	order    []string
	profiles map[string]*profile
}

var ifaceNameRE = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,15}$`)

func unknownKeys(m map[string]any, where string, allowed ...string) error {
	ok := map[string]bool{}
	for _, a := range allowed {
		ok[a] = true
	}
	var bad []string
	for k := range m {
		if !ok[k] {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	return fmt.Errorf("%s: %s not supported (add-nodes turns nmstate into NetworkManager keyfiles at build time and supports %s)", where, strings.Join(bad, ", "), strings.Join(allowed, ", "))
}

func asMap(v any, where string) (map[string]any, error) {
	if v == nil {
		return map[string]any{}, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s must be a mapping", where)
	}
	return m, nil
}

func asList(v any, where string) ([]any, error) {
	if v == nil {
		return nil, nil
	}
	l, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s must be a list", where)
	}
	return l, nil
}

func asInt(v any, where string) (int, error) {
	switch n := v.(type) {
	case float64:
		if n == float64(int(n)) {
			return int(n), nil
		}
	case int:
		return n, nil
	case int64:
		return int(n), nil
	case string:
		if i, err := strconv.Atoi(n); err == nil {
			return i, nil
		}
	}
	return 0, fmt.Errorf("%s must be an integer, not %v", where, v)
}

func asBool(v any, where string) (bool, error) {
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("%s must be true or false, not %v", where, v)
	}
	return b, nil
}

func asStrings(v any, where string) ([]string, error) {
	l, err := asList(v, where)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, x := range l {
		s, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("%s must be a list of strings", where)
		}
		out = append(out, s)
	}
	return out, nil
}

func (g *kfGen) get(name string) *profile {
	p, ok := g.profiles[name]
	if !ok {
		p = &profile{name: name}
		g.profiles[name] = p
		g.order = append(g.order, name)
	}
	return p
}

func (g *kfGen) parse(nc map[string]any) error {
	if err := unknownKeys(nc, "networkConfig", "interfaces", "routes", "dns-resolver"); err != nil {
		return err
	}
	ifaces, err := asList(nc["interfaces"], "networkConfig.interfaces")
	if err != nil {
		return err
	}
	skipped := map[string]bool{}
	for j, it := range ifaces {
		where := fmt.Sprintf("networkConfig.interfaces[%d]", j)
		m, err := asMap(it, where)
		if err != nil {
			return err
		}
		name, _ := m["name"].(string)
		if !ifaceNameRE.MatchString(name) {
			return fmt.Errorf("%s: name %q is not an interface name (1 to 15 letters, digits, '.', '-', '_', ':')", where, name)
		}
		where = fmt.Sprintf("networkConfig interface %q", name)
		if err := unknownKeys(m, where, "name", "type", "state", "mtu", "mac-address", "ipv4", "ipv6", "vlan", "link-aggregation"); err != nil {
			return err
		}
		state, _ := m["state"].(string)
		switch state {
		case "", "up":
		case "down", "absent":
			skipped[name] = true
			continue
		default:
			return fmt.Errorf("%s: state %q is not supported (use up, down or absent)", where, state)
		}
		if _, dup := g.profiles[name]; dup && g.profiles[name].typ != "" {
			return fmt.Errorf("%s is listed twice", where)
		}
		p := g.get(name)
		typ, _ := m["type"].(string)
		switch typ {
		case "ethernet", "802-3-ethernet":
			p.typ = "ethernet"
		case "vlan":
			p.typ = "vlan"
			v, err := asMap(m["vlan"], where+": vlan")
			if err != nil {
				return err
			}
			if err := unknownKeys(v, where+": vlan", "base-iface", "id"); err != nil {
				return err
			}
			p.vlanParent, _ = v["base-iface"].(string)
			if p.vlanParent == "" {
				return fmt.Errorf("%s: vlan.base-iface is required", where)
			}
			if p.vlanID, err = asInt(v["id"], where+": vlan.id"); err != nil {
				return err
			}
			if p.vlanID < 0 || p.vlanID > 4094 {
				return fmt.Errorf("%s: vlan.id %d is outside 0-4094", where, p.vlanID)
			}
		case "bond":
			p.typ = "bond"
			la, err := asMap(m["link-aggregation"], where+": link-aggregation")
			if err != nil {
				return err
			}
			if err := unknownKeys(la, where+": link-aggregation", "mode", "port", "options"); err != nil {
				return err
			}
			p.bondMode, _ = la["mode"].(string)
			if p.bondMode == "" {
				return fmt.Errorf("%s: link-aggregation.mode is required", where)
			}
			opts, err := asMap(la["options"], where+": link-aggregation.options")
			if err != nil {
				return err
			}
			p.bondOpts = map[string]string{}
			for k, v := range opts {
				p.bondOpts[k] = fmt.Sprint(v)
			}
			ports, err := asStrings(la["port"], where+": link-aggregation.port")
			if err != nil {
				return err
			}
			for _, port := range ports {
				if !ifaceNameRE.MatchString(port) {
					return fmt.Errorf("%s: port %q is not an interface name", where, port)
				}
				pp := g.get(port)
				if pp.master != "" && pp.master != name {
					return fmt.Errorf("%s: port %q is already a port of bond %q", where, port, pp.master)
				}
				pp.master = name
			}
		case "":
			return fmt.Errorf("%s: type is required (ethernet, vlan or bond)", where)
		default:
			return fmt.Errorf("%s: type %q is not supported (add-nodes turns nmstate into NetworkManager keyfiles at build time and supports ethernet, vlan and bond)", where, typ)
		}
		if v, ok := m["mtu"]; ok {
			if p.mtu, err = asInt(v, where+": mtu"); err != nil {
				return err
			}
		}
		if mac, ok := m["mac-address"].(string); ok {
			p.mac = NormalizeMAC(mac)
		}
		for fi, fam := range []string{"ipv4", "ipv6"} {
			raw, ok := m[fam]
			if !ok {
				continue
			}
			c, err := asMap(raw, where+": "+fam)
			if err != nil {
				return err
			}
			allowed := []string{"enabled", "dhcp", "address"}
			if fam == "ipv6" {
				allowed = append(allowed, "autoconf")
			}
			if err := unknownKeys(c, where+": "+fam, allowed...); err != nil {
				return err
			}
			ic := &p.ip[fi]
			ic.present = true
			ic.enabled = true
			if v, ok := c["enabled"]; ok {
				if ic.enabled, err = asBool(v, where+": "+fam+".enabled"); err != nil {
					return err
				}
			}
			if v, ok := c["dhcp"]; ok {
				if ic.dhcp, err = asBool(v, where+": "+fam+".dhcp"); err != nil {
					return err
				}
			}
			if v, ok := c["autoconf"]; ok {
				if ic.autoconf, err = asBool(v, where+": "+fam+".autoconf"); err != nil {
					return err
				}
			}
			addrs, err := asList(c["address"], where+": "+fam+".address")
			if err != nil {
				return err
			}
			for k, a := range addrs {
				am, err := asMap(a, fmt.Sprintf("%s: %s.address[%d]", where, fam, k))
				if err != nil {
					return err
				}
				ip, _ := am["ip"].(string)
				parsed := net.ParseIP(ip)
				if parsed == nil || (fi == 0) != (parsed.To4() != nil) {
					return fmt.Errorf("%s: %s.address[%d].ip %q is not an %s address", where, fam, k, ip, fam)
				}
				pl, err := asInt(am["prefix-length"], fmt.Sprintf("%s: %s.address[%d].prefix-length", where, fam, k))
				if err != nil {
					return err
				}
				if max := map[bool]int{true: 32, false: 128}[fi == 0]; pl < 0 || pl > max {
					return fmt.Errorf("%s: %s.address[%d].prefix-length %d is outside 0-%d", where, fam, k, pl, max)
				}
				ic.addresses = append(ic.addresses, fmt.Sprintf("%s/%d", ip, pl))
			}
			ic.hasStaticAddress = len(ic.addresses) > 0
		}
	}
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
		if p.master != "" {
			if p.ip[0].present && (p.ip[0].enabled || p.ip[0].hasStaticAddress) || p.ip[1].present && (p.ip[1].enabled || p.ip[1].hasStaticAddress) {
				return fmt.Errorf("networkConfig interface %q is a port of bond %q and cannot have its own ipv4/ipv6 configuration", name, p.master)
			}
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
	if err := g.parseRoutes(nc["routes"]); err != nil {
		return err
	}
	return g.parseDNS(nc["dns-resolver"])
}

func (g *kfGen) parseRoutes(raw any) error {
	r, err := asMap(raw, "networkConfig.routes")
	if err != nil {
		return err
	}
	if err := unknownKeys(r, "networkConfig.routes", "config"); err != nil {
		return err
	}
	list, err := asList(r["config"], "networkConfig.routes.config")
	if err != nil {
		return err
	}
	for k, it := range list {
		where := fmt.Sprintf("networkConfig.routes.config[%d]", k)
		m, err := asMap(it, where)
		if err != nil {
			return err
		}
		if err := unknownKeys(m, where, "destination", "next-hop-address", "next-hop-interface", "metric", "table-id"); err != nil {
			return err
		}
		dst, _ := m["destination"].(string)
		ip, ipnet, err := net.ParseCIDR(dst)
		if err != nil {
			return fmt.Errorf("%s: destination %q is not an address/prefix", where, dst)
		}
		fi := 1
		if ip.To4() != nil {
			fi = 0
		}
		dev, _ := m["next-hop-interface"].(string)
		p, ok := g.profiles[dev]
		if !ok {
			return fmt.Errorf("%s: next-hop-interface %q is not an interface in state up of networkConfig.interfaces", where, dev)
		}
		gw, _ := m["next-hop-address"].(string)
		val := ipnet.String()
		if gw != "" {
			g := net.ParseIP(gw)
			if g == nil || (g.To4() != nil) != (fi == 0) {
				return fmt.Errorf("%s: next-hop-address %q is not an address of the destination's family", where, gw)
			}
			val += "," + gw
		}
		if v, ok := m["metric"]; ok {
			metric, err := asInt(v, where+": metric")
			if err != nil {
				return err
			}
			if gw == "" {
				val += ","
			}
			val += "," + strconv.Itoa(metric)
		}
		if v, ok := m["table-id"]; ok {
			t, err := asInt(v, where+": table-id")
			if err != nil {
				return err
			}
			val += " table=" + strconv.Itoa(t)
		}
		ic := &p.ip[fi]
		if !ic.present || !ic.enabled {
			return fmt.Errorf("%s: next-hop-interface %q has %s disabled", where, dev, []string{"ipv4", "ipv6"}[fi])
		}
		ic.routes = append(ic.routes, val)
		if ones, _ := ipnet.Mask.Size(); ones == 0 && gw != "" {
			ic.hasDefaultRoute = true
		}
	}
	return nil
}

func (g *kfGen) parseDNS(raw any) error {
	d, err := asMap(raw, "networkConfig.dns-resolver")
	if err != nil {
		return err
	}
	if err := unknownKeys(d, "networkConfig.dns-resolver", "config"); err != nil {
		return err
	}
	c, err := asMap(d["config"], "networkConfig.dns-resolver.config")
	if err != nil {
		return err
	}
	if err := unknownKeys(c, "networkConfig.dns-resolver.config", "server", "search"); err != nil {
		return err
	}
	servers, err := asStrings(c["server"], "networkConfig.dns-resolver.config.server")
	if err != nil {
		return err
	}
	search, err := asStrings(c["search"], "networkConfig.dns-resolver.config.search")
	if err != nil {
		return err
	}
	var byFam [2][]string
	for _, s := range servers {
		ip := net.ParseIP(s)
		if ip == nil {
			return fmt.Errorf("networkConfig.dns-resolver.config.server %q is not an IP address", s)
		}
		if ip.To4() != nil {
			byFam[0] = append(byFam[0], s)
		} else {
			byFam[1] = append(byFam[1], s)
		}
	}
	// DNS goes to the interface holding the family's default gateway, else
	// to the first interface with a static address of that family; the
	// search list goes with the IPv4 servers, else with the IPv6 ones.
	searchDone := len(search) == 0
	for fi := range byFam {
		if len(byFam[fi]) == 0 {
			continue
		}
		p := g.dnsHolder(fi)
		if p == nil {
			return fmt.Errorf("networkConfig.dns-resolver: no interface has a static %s address or default route to hold the DNS servers %s", []string{"ipv4", "ipv6"}[fi], strings.Join(byFam[fi], ", "))
		}
		p.ip[fi].dns = byFam[fi]
		if !searchDone {
			p.ip[fi].dnsSearch, searchDone = search, true
		}
	}
	if !searchDone {
		for fi := range byFam {
			if p := g.dnsHolder(fi); p != nil {
				p.ip[fi].dnsSearch, searchDone = search, true
				break
			}
		}
		if !searchDone {
			return fmt.Errorf("networkConfig.dns-resolver: no interface has a static address or default route to hold the search domains %s", strings.Join(search, ", "))
		}
	}
	return nil
}

func (g *kfGen) dnsHolder(fi int) *profile {
	for _, n := range g.order {
		if p := g.profiles[n]; p.ip[fi].hasDefaultRoute {
			return p
		}
	}
	for _, n := range g.order {
		if p := g.profiles[n]; p.ip[fi].hasStaticAddress {
			return p
		}
	}
	return nil
}

// keyfileNS makes profile UUIDs stable across builds (UUIDv5 of the name).
var keyfileNS = uuid.MustParse("1a4e4a2c-6d0e-5b77-9a8e-6b7a2d3c1f00")

func (g *kfGen) render() []Keyfile {
	var out []Keyfile
	for _, name := range g.order {
		p := g.profiles[name]
		var s strings.Builder
		w := func(k, v string) { fmt.Fprintf(&s, "%s=%s\n", k, v) }
		typ := map[string]string{"ethernet": "ethernet", "vlan": "vlan", "bond": "bond"}[p.typ]
		s.WriteString("[connection]\n")
		w("id", name)
		w("uuid", uuid.NewSHA1(keyfileNS, []byte(name)).String())
		w("type", typ)
		w("interface-name", name)
		w("autoconnect", "true")
		w("autoconnect-priority", "1")
		if p.master != "" {
			w("master", p.master)
			w("slave-type", "bond")
		}
		if p.typ == "bond" {
			w("autoconnect-slaves", "1")
		}
		s.WriteString("\n")
		switch p.typ {
		case "ethernet":
			s.WriteString("[ethernet]\n")
			if p.mac != "" {
				w("mac-address", strings.ToUpper(p.mac))
			}
			if p.mtu > 0 {
				w("mtu", strconv.Itoa(p.mtu))
			}
			s.WriteString("\n")
		case "vlan":
			s.WriteString("[vlan]\n")
			w("id", strconv.Itoa(p.vlanID))
			w("parent", p.vlanParent)
			if p.mtu > 0 {
				w("mtu", strconv.Itoa(p.mtu))
			}
			s.WriteString("\n")
		case "bond":
			s.WriteString("[bond]\n")
			w("mode", p.bondMode)
			keys := make([]string, 0, len(p.bondOpts))
			for k := range p.bondOpts {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				w(k, p.bondOpts[k])
			}
			s.WriteString("\n")
			if p.mtu > 0 || p.mac != "" {
				s.WriteString("[ethernet]\n")
				if p.mac != "" {
					w("cloned-mac-address", strings.ToUpper(p.mac))
				}
				if p.mtu > 0 {
					w("mtu", strconv.Itoa(p.mtu))
				}
				s.WriteString("\n")
			}
		}
		if p.master == "" {
			for fi, sect := range []string{"ipv4", "ipv6"} {
				ic := p.ip[fi]
				fmt.Fprintf(&s, "[%s]\n", sect)
				for k, a := range ic.addresses {
					w(fmt.Sprintf("address%d", k+1), a)
				}
				if len(ic.dns) > 0 {
					w("dns", strings.Join(ic.dns, ";")+";")
				}
				if len(ic.dnsSearch) > 0 {
					w("dns-search", strings.Join(ic.dnsSearch, ";")+";")
				}
				w("method", method(fi, ic))
				if ic.dhcp || ic.autoconf {
					if len(ic.dns) > 0 {
						w("ignore-auto-dns", "true")
					}
				}
				for k, r := range ic.routes {
					w(fmt.Sprintf("route%d", k+1), r)
				}
				s.WriteString("\n")
			}
		}
		out = append(out, Keyfile{Name: name + ".nmconnection", Content: []byte(strings.TrimRight(s.String(), "\n") + "\n")})
	}
	return out
}

// method maps nmstate's enabled/dhcp/autoconf/address to the keyfile's
// ipv4.method (auto, manual, disabled) and ipv6.method (auto, dhcp, manual,
// link-local, disabled).
func method(fi int, ic ipConf) string {
	switch {
	case !ic.present || !ic.enabled:
		return "disabled"
	case fi == 0 && ic.dhcp:
		return "auto"
	case fi == 0 && ic.hasStaticAddress:
		return "manual"
	case fi == 0:
		return "disabled"
	case ic.autoconf:
		return "auto"
	case ic.dhcp:
		return "dhcp"
	case ic.hasStaticAddress:
		return "manual"
	default:
		return "link-local"
	}
}
