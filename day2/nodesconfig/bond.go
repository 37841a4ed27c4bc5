package nodesconfig

import (
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Bond modes and options as nmstate reads them (nmstate/nmstate @614c66dc
// rust/src/lib/ifaces/bond.rs: BondMode with its numeric aliases, BondOptions
// with deny_unknown_fields) and writes them for NetworkManager
// (nm/settings/bond.rs apply_bond_options: enum values by name, booleans and
// all_slaves_active as 0/1, empty values dropped, arp_missed_max only when
// not the default 2). What NetworkManager 1.42 then refuses is refused here
// too, so that no host boots with a profile NetworkManager will not load.

var bondModes = []string{"balance-rr", "active-backup", "balance-xor", "broadcast", "802.3ad", "balance-tlb", "balance-alb"}

type bondOptionKind struct {
	max    int      // integer options: the largest value (u8, u16, u32)
	enum   []string // enumerated options: the names, numeric aliases 0.. in this order
	toBits bool     // written as 0/1 (booleans; all_slaves_active)
	str    func(string) error
}

var bondOptionKinds = map[string]bondOptionKind{
	"ad_actor_sys_prio": {max: 65535},
	"ad_actor_system": {str: func(s string) error {
		if _, err := net.ParseMAC(s); err != nil || !macRE.MatchString(s) {
			return fmt.Errorf("is not a MAC address")
		}
		return nil
	}},
	"ad_select":         {enum: []string{"stable", "bandwidth", "count"}},
	"ad_user_port_key":  {max: 65535},
	"all_slaves_active": {enum: []string{"dropped", "delivered"}, toBits: true},
	"arp_all_targets":   {enum: []string{"any", "all"}},
	"arp_interval":      {max: 1<<32 - 1},
	"arp_ip_target": {str: func(s string) error {
		for _, ip := range strings.Split(s, ",") {
			if net.ParseIP(ip) == nil {
				return fmt.Errorf("is not a comma-separated list of IP addresses")
			}
		}
		return nil
	}},
	"arp_validate":      {enum: []string{"none", "active", "backup", "all", "filter", "filter_active", "filter_backup"}},
	"downdelay":         {max: 1<<32 - 1},
	"fail_over_mac":     {enum: []string{"none", "active", "follow"}},
	"lacp_rate":         {enum: []string{"slow", "fast"}},
	"lp_interval":       {max: 1<<32 - 1},
	"miimon":            {max: 1<<32 - 1},
	"min_links":         {max: 1<<32 - 1},
	"num_grat_arp":      {max: 255},
	"num_unsol_na":      {max: 255},
	"packets_per_slave": {max: 1<<32 - 1},
	"primary": {str: func(s string) error {
		if !ifaceNameRE.MatchString(s) {
			return fmt.Errorf("is not an interface name")
		}
		return nil
	}},
	"primary_reselect": {enum: []string{"always", "better", "failure"}},
	"resend_igmp":      {max: 1<<32 - 1},
	"tlb_dynamic_lb":   {enum: []string{"false", "true"}, toBits: true},
	"updelay":          {max: 1<<32 - 1},
	"use_carrier":      {enum: []string{"false", "true"}, toBits: true},
	"xmit_hash_policy": {enum: []string{"layer2", "layer3+4", "layer2+3", "encap2+3", "encap3+4", "vlan+srcmac"}},
	"balance_slb":      {enum: []string{"false", "true"}, toBits: true},
	"arp_missed_max":   {max: 255},
}

// bondOptions checks the mode and options of bond w and returns them as
// NetworkManager's keyfile takes them (option name -> value).
func bondOptions(mode string, opts map[string]string, w where) (string, map[string]string, error) {
	if i, err := strconv.Atoi(mode); err == nil && i >= 0 && i < len(bondModes) {
		mode = bondModes[i]
	}
	if !slices.Contains(bondModes, mode) {
		return "", nil, fmt.Errorf("%s: link-aggregation.mode %q is not a bond mode (%s)", w.base, mode, strings.Join(bondModes, ", "))
	}
	out := map[string]string{}
	names := make([]string, 0, len(opts))
	for k := range opts {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v := opts[k]
		kind, ok := bondOptionKinds[k]
		if !ok {
			known := make([]string, 0, len(bondOptionKinds))
			for n := range bondOptionKinds {
				known = append(known, n)
			}
			sort.Strings(known)
			return "", nil, fmt.Errorf("%s: link-aggregation.options.%s is not a bond option nmstate knows (%s)", w.base, k, strings.Join(known, ", "))
		}
		bad := func(why string) error {
			return fmt.Errorf("%s: link-aggregation.options.%s %q %s", w.base, k, v, why)
		}
		switch {
		case kind.str != nil:
			if err := kind.str(v); err != nil {
				return "", nil, bad(err.Error())
			}
		case kind.enum != nil:
			i := slices.Index(kind.enum, v)
			if n, err := strconv.Atoi(v); err == nil && n >= 0 && n < len(kind.enum) {
				i = n
			}
			if i < 0 {
				return "", nil, bad("is not one of " + strings.Join(kind.enum, ", "))
			}
			v = kind.enum[i]
			if kind.toBits {
				v = strconv.Itoa(i)
			}
		default:
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil || n > uint64(kind.max) {
				return "", nil, bad(fmt.Sprintf("is not a whole number from 0 to %d", kind.max))
			}
			v = strconv.FormatUint(n, 10)
		}
		if k == "balance_slb" {
			k = "balance-slb" // NetworkManager's name (nmstate nm/settings/bond.rs)
		}
		if v != "" {
			out[k] = v
		}
	}
	if out["arp_missed_max"] == "2" {
		delete(out, "arp_missed_max") // nmstate leaves the default out
	}
	return mode, out, nmBondRules(mode, out, w)
}

// bondOptionModes are the modes in which NetworkManager 1.42 keeps an option;
// in any other it drops the option from the profile without a word (nmcli
// --offline prints the profile without it), or refuses the profile
// ("'lacp_rate' option is only valid with mode '802.3ad'", "'mode=balance-tlb'
// is incompatible with 'arp_interval > 0'"). Options not listed are kept in
// every mode.
var bondOptionModes = map[string][]string{
	"ad_actor_sys_prio": {"802.3ad"},
	"ad_actor_system":   {"802.3ad"},
	"ad_user_port_key":  {"802.3ad"},
	"lacp_rate":         {"802.3ad"},
	"arp_interval":      {"balance-rr", "active-backup", "balance-xor", "broadcast"},
	"arp_ip_target":     {"balance-rr", "active-backup", "balance-xor", "broadcast"},
	"arp_validate":      {"balance-rr", "active-backup", "balance-xor", "broadcast"},
	"packets_per_slave": {"balance-rr"},
	"primary":           {"active-backup", "balance-tlb", "balance-alb"},
	"tlb_dynamic_lb":    {"balance-tlb", "balance-alb"},
}

// nmBondRules refuses what NetworkManager 1.42 would refuse or drop: an
// option of another mode (bondOptionModes), arp_interval without
// arp_ip_target or the reverse ("'arp_interval' option requires
// 'arp_ip_target' option to be set"), balance-slb outside balance-xor
// ("balance-slb requires bond mode \"balance-xor\""), and arp_missed_max,
// which it does not know ("not among [mode, miimon, ...]"). Each was seen
// with nmcli --offline of Debian's network-manager 1.42.4; the e2e test
// TestAddNodes_BondOptionsAsNetworkManagerTakesThem asks it again for every
// mode and option.
func nmBondRules(mode string, o map[string]string, w where) error {
	refuse := func(format string, a ...any) error {
		return fmt.Errorf("%s: bond mode %s: %s", w.base, mode, fmt.Sprintf(format, a...))
	}
	names := make([]string, 0, len(o))
	for k := range o {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if modes, ok := bondOptionModes[k]; ok && !slices.Contains(modes, mode) {
			return refuse("option %s applies to mode %s only (NetworkManager drops or refuses it)", k, strings.Join(modes, ", "))
		}
	}
	arp := o["arp_interval"] != "" && o["arp_interval"] != "0"
	switch {
	case o["arp_missed_max"] != "":
		return refuse("arp_missed_max is not an option NetworkManager 1.42 knows (it drops it)")
	case arp && o["arp_ip_target"] == "":
		return refuse("arp_interval needs arp_ip_target (NetworkManager refuses the profile)")
	case !arp && o["arp_ip_target"] != "":
		return refuse("arp_ip_target needs arp_interval (NetworkManager refuses the profile)")
	case o["balance-slb"] == "1" && mode != "balance-xor":
		return refuse("balance_slb true is only valid with mode balance-xor (NetworkManager refuses the profile)")
	}
	return nil
}
