package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// What NetworkManager and the kernel of an NMHost show, read with their own
// tools: nmcli (NetworkManager's view of profiles and devices), ip -j
// (addresses, routes, links), /etc/resolv.conf (written by NetworkManager).

// nmProfile is one profile NetworkManager loaded.
type nmProfile struct{ Name, Type, Device, File string }

func nmProfiles(t *testing.T, h *harness.NMHost) []nmProfile {
	t.Helper()
	var out []nmProfile
	for _, l := range lines(h.Run(t, "nmcli", "-t", "-f", "NAME,TYPE,DEVICE,FILENAME", "connection", "show")) {
		f := splitTerse(l)
		if len(f) == 4 {
			out = append(out, nmProfile{f[0], f[1], f[2], f[3]})
		}
	}
	return out
}

// nmSettings are the settings of one profile as NetworkManager holds them
// ("ipv4.method" -> "manual"), after its own parsing and normalization.
func nmSettings(t *testing.T, h *harness.NMHost, id string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, l := range lines(h.Run(t, "nmcli", "-t", "connection", "show", "id", id)) {
		if k, v, ok := strings.Cut(l, ":"); ok {
			m[k] = strings.ReplaceAll(v, `\:`, ":")
		}
	}
	return m
}

// nmDevices maps device -> "state connection" (nmcli device).
func nmDevices(t *testing.T, h *harness.NMHost) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, l := range lines(h.Run(t, "nmcli", "-t", "-f", "DEVICE,STATE,CONNECTION", "device")) {
		if f := splitTerse(l); len(f) == 3 {
			m[f[0]] = f[1] + " " + f[2]
		}
	}
	return m
}

type ipLink struct {
	Name    string `json:"ifname"`
	MTU     int    `json:"mtu"`
	Address string `json:"address"`
	Addrs   []struct {
		Family string `json:"family"`
		Local  string `json:"local"`
		Prefix int    `json:"prefixlen"`
		Scope  string `json:"scope"`
	} `json:"addr_info"`
	LinkInfo *struct {
		Kind string         `json:"info_kind"`
		Data map[string]any `json:"info_data"`
	} `json:"linkinfo"`
	Master string `json:"master"`
}

// ipLinks reads `ip -d -j addr`: every link with its MTU, MAC, addresses and
// link details (VLAN id, bond mode).
func ipLinks(t *testing.T, h *harness.NMHost) map[string]ipLink {
	t.Helper()
	var links []ipLink
	if err := json.Unmarshal([]byte(h.Run(t, "ip", "-d", "-j", "addr", "show")), &links); err != nil {
		t.Fatal(err)
	}
	m := map[string]ipLink{}
	for _, l := range links {
		m[l.Name] = l
	}
	return m
}

// addrs lists a link's addresses of global scope as ip/prefix, and
// "link-local" for an IPv6 link-local address.
func (l ipLink) addrs() []string {
	var out []string
	for _, a := range l.Addrs {
		switch {
		case a.Scope == "global":
			out = append(out, fmt.Sprintf("%s/%d", a.Local, a.Prefix))
		case a.Family == "inet6" && a.Scope == "link":
			out = append(out, "link-local")
		}
	}
	sort.Strings(out)
	return out
}

// ipRoutes lists the kernel's unicast routes of every table, IPv4 and IPv6,
// as "DEST via GW dev DEV metric M table T" (no "via" without a gateway;
// metric 0 and table main spelled out, which ip leaves out).
func ipRoutes(t *testing.T, h *harness.NMHost) []string {
	t.Helper()
	var out []string
	for _, fam := range []string{"-4", "-6"} {
		var routes []struct {
			Type    string `json:"type"`
			Dst     string `json:"dst"`
			Gateway string `json:"gateway"`
			Dev     string `json:"dev"`
			Metric  *int   `json:"metric"`
			Table   string `json:"table"`
		}
		if err := json.Unmarshal([]byte(h.Run(t, "ip", "-j", fam, "route", "show", "table", "all")), &routes); err != nil {
			t.Fatal(err)
		}
		for _, r := range routes {
			if r.Type != "" && r.Type != "unicast" {
				continue
			}
			s := r.Dst
			if r.Gateway != "" {
				s += " via " + r.Gateway
			}
			metric, table := 0, "main"
			if r.Metric != nil {
				metric = *r.Metric
			}
			if r.Table != "" {
				table = r.Table
			}
			out = append(out, fmt.Sprintf("%s dev %s metric %d table %s", s, r.Dev, metric, table))
		}
	}
	sort.Strings(out)
	return out
}

// resolvConf reads /etc/resolv.conf as NetworkManager wrote it: nameservers
// in order and the search list.
func resolvConf(t *testing.T, h *harness.NMHost) (servers, search []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(h.Root, "etc/resolv.conf"))
	if err != nil {
		t.Fatalf("/etc/resolv.conf: %v", err)
	}
	for _, l := range lines(string(b)) {
		f := strings.Fields(l)
		switch {
		case len(f) >= 2 && f[0] == "nameserver":
			servers = append(servers, f[1])
		case len(f) >= 2 && f[0] == "search":
			search = append(search, f[1:]...)
		}
	}
	return servers, search
}

// eventually retries check until it returns "" or 30 s pass: addresses from
// DHCP and router advertisements arrive after NetworkManager's start-up.
func eventually(t *testing.T, what string, check func() string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		msg := check()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: %s", what, msg)
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// splitTerse splits an nmcli -t line at the colons it did not escape.
func splitTerse(l string) []string {
	var out []string
	var cur strings.Builder
	for i := 0; i < len(l); i++ {
		switch {
		case l[i] == '\\' && i+1 < len(l):
			i++
			cur.WriteByte(l[i])
		case l[i] == ':':
			out = append(out, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(l[i])
		}
	}
	return append(out, cur.String())
}

func containsAll(have []string, want ...string) string {
	set := map[string]bool{}
	for _, h := range have {
		set[h] = true
	}
	var missing []string
	for _, w := range want {
		if !set[w] {
			missing = append(missing, w)
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("missing %q in %q", missing, have)
	}
	return ""
}
