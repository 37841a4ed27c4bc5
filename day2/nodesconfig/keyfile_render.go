package nodesconfig

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

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
		case "vlan":
			s.WriteString("[vlan]\n")
			w("id", strconv.Itoa(p.vlanID))
			w("parent", p.vlanParent)
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
		}
		// MTU and MAC of every type are the wired setting's; nmstate's
		// mac-address (with the default identifier, the name) is the MAC
		// the interface takes (nmstate nm/settings/wired.rs).
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
		if p.master == "" {
			for fi, sect := range []string{"ipv4", "ipv6"} {
				fmt.Fprintf(&s, "[%s]\n", sect)
				p.ip[fi].write(fi, w)
				s.WriteString("\n")
			}
		}
		out = append(out, Keyfile{Name: name + ".nmconnection", Content: []byte(strings.TrimRight(s.String(), "\n") + "\n")})
	}
	return out
}

// write renders one [ipv4] or [ipv6] section as libnmstate's gen_conf does
// (nmstate nm/settings/ip.rs gen_nm_ipv4_setting, gen_nm_ipv6_setting): DHCP
// and router advertisements waited for without end, the client identified by
// its MAC, IPv6 addresses generated as EUI-64; routes with their table in
// routeN_options, the one place NetworkManager reads it.
func (ic ipConf) write(fi int, w func(k, v string)) {
	for k, a := range ic.addresses {
		w(fmt.Sprintf("address%d", k+1), a)
	}
	if fi == 1 && ic.present {
		w("addr-gen-mode", "eui64")
	}
	auto := ic.present && ic.enabled && (ic.dhcp || ic.autoconf)
	if auto && fi == 0 {
		w("dhcp-client-id", "mac")
	}
	if auto && fi == 1 {
		w("dhcp-duid", "ll")
		w("dhcp-iaid", "mac")
	}
	if auto {
		w("dhcp-send-hostname", "true")
		w("dhcp-timeout", "2147483647")
	}
	if len(ic.dns) > 0 {
		w("dns", strings.Join(ic.dns, ";")+";")
	}
	if ic.dnsPriority != 0 {
		w("dns-priority", strconv.Itoa(ic.dnsPriority))
	}
	if len(ic.dnsSearch) > 0 {
		w("dns-search", strings.Join(ic.dnsSearch, ";")+";")
	}
	w("method", method(fi, ic))
	if auto && fi == 1 {
		w("ra-timeout", "2147483647")
	}
	for k, r := range ic.routes {
		w(fmt.Sprintf("route%d", k+1), fmt.Sprintf("%s,%s,%d", r.dest, r.gateway, r.metric))
		w(fmt.Sprintf("route%d_options", k+1), fmt.Sprintf("table=%d", r.table))
	}
}

// method maps nmstate's enabled/dhcp/autoconf/address/routes to the keyfile's
// ipv4.method (auto, manual, disabled) and ipv6.method (auto, dhcp, manual,
// link-local, disabled), as nmstate's ip.rs does; IPv6 autoconf without DHCP
// was refused by the parser, as nmstate refuses it.
func method(fi int, ic ipConf) string {
	static := ic.hasStaticAddress || len(ic.routes) > 0
	switch {
	case !ic.present || !ic.enabled:
		return "disabled"
	case fi == 0 && ic.dhcp:
		return "auto"
	case fi == 0 && static:
		return "manual"
	case fi == 0:
		return "disabled"
	case ic.dhcp && ic.autoconf:
		return "auto"
	case ic.dhcp:
		return "dhcp"
	case static:
		return "manual"
	default:
		return "link-local"
	}
}
