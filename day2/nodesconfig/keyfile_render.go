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
