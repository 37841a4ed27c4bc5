package e2e

import (
	"fmt"
	"maps"
	"os/exec"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-assisted/kubectl-assisted/day2/nodesconfig"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// TestAddNodes_BondOptionsAsNetworkManagerTakesThem puts every bond mode
// together with a value of every option nmstate knows (nmstate @614c66dc
// ifaces/bond.rs BondOptions), and the values NetworkManager cares about,
// through the keyfile generator, and asks NetworkManager 1.42 itself about
// each: nmcli --offline in the NetworkManager root reads a keyfile, applies
// its own checks and fails on a profile it would not load, or prints the
// profile as it holds it: an option it does not know or a value it cannot
// take is dropped there without a word (arp_missed_max=5, num_grat_arp=300,
// balance-slb=true all vanish from a balance-rr bond). The generator must
// only write bond profiles NetworkManager loads with every option kept as
// written, and must refuse every combination NetworkManager refuses or
// silently changes when given the same options.
func TestAddNodes_BondOptionsAsNetworkManagerTakesThem(t *testing.T) {
	root := harness.NMRoot(t)
	// nm returns the [bond] options NetworkManager holds for a keyfile, or
	// its refusal.
	nm := func(keyfile string) (map[string]string, error) {
		cmd := exec.Command("chroot", root, "nmcli", "--offline", "connection", "modify", "connection.autoconnect", "yes")
		cmd.Stdin = strings.NewReader(keyfile)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
		}
		return bondSection(string(out)), nil
	}
	// kept: NetworkManager loaded the profile with exactly these options.
	kept := func(got map[string]string, err error, want map[string]string) error {
		if err != nil {
			return err
		}
		if !maps.Equal(got, want) {
			return fmt.Errorf("NetworkManager holds [bond] %v, not %v", got, want)
		}
		return nil
	}
	// NetworkManager's verdict on the options as given, without our
	// generator: a bare bond keyfile.
	nmRaw := func(mode string, opts map[string]string) error {
		var s strings.Builder
		fmt.Fprintf(&s, "[connection]\nid=bond0\ntype=bond\ninterface-name=bond0\n\n[bond]\nmode=%s\n", mode)
		want := map[string]string{"mode": mode}
		for k, v := range opts {
			if k == "balance_slb" {
				k = "balance-slb"
			}
			fmt.Fprintf(&s, "%s=%s\n", k, v)
			want[k] = v
		}
		s.WriteString("\n[ipv4]\nmethod=disabled\n\n[ipv6]\nmethod=disabled\n")
		got, err := nm(s.String())
		return kept(got, err, want)
	}
	samples := []map[string]string{
		{"ad_actor_sys_prio": "100"}, {"ad_actor_system": "02:00:00:00:00:01"}, {"ad_select": "count"}, {"ad_user_port_key": "10"},
		{"all_slaves_active": "1"}, {"arp_all_targets": "all"}, {"arp_interval": "100"}, {"arp_ip_target": "192.0.2.1"},
		{"arp_interval": "100", "arp_ip_target": "192.0.2.1,192.0.2.2"}, {"arp_interval": "100", "arp_ip_target": "192.0.2.1", "arp_validate": "active"},
		{"arp_validate": "filter_backup"}, {"downdelay": "200", "miimon": "100"}, {"fail_over_mac": "follow"},
		{"lacp_rate": "fast"}, {"lacp_rate": "slow"}, {"lp_interval": "2"}, {"miimon": "100"}, {"min_links": "1"},
		{"num_grat_arp": "3"}, {"num_unsol_na": "3"}, {"packets_per_slave": "2"}, {"primary": "eth0"},
		{"primary_reselect": "better"}, {"resend_igmp": "2"}, {"tlb_dynamic_lb": "false"}, {"updelay": "200", "miimon": "100"},
		{"use_carrier": "true"}, {"xmit_hash_policy": "layer3+4"}, {"xmit_hash_policy": "vlan+srcmac"},
		{"balance_slb": "true"}, {"balance_slb": "false"}, {"arp_missed_max": "2"}, {"arp_missed_max": "5"},
		{"miimon": "100", "arp_interval": "100", "arp_ip_target": "192.0.2.1"},
	}
	modes := []string{"balance-rr", "active-backup", "balance-xor", "broadcast", "802.3ad", "balance-tlb", "balance-alb"}
	accepted, refused := 0, 0
	for _, mode := range modes {
		for _, opts := range samples {
			name := fmt.Sprintf("%s %v", mode, opts)
			doc, _ := yaml.Marshal(map[string]any{"interfaces": []any{map[string]any{
				"name": "bond0", "type": "bond", "state": "up",
				"link-aggregation": map[string]any{"mode": mode, "port": []string{"eth0", "eth1"}, "options": opts},
				"ipv4":             map[string]any{"enabled": false}}}})
			var nc map[string]any
			if err := yaml.Unmarshal(doc, &nc); err != nil {
				t.Fatal(err)
			}
			kfs, ourErr := nodesconfig.Host{Hostname: "w0", NetworkConfig: nc}.Keyfiles()
			if ourErr != nil {
				refused++
				// Ours refuses: NetworkManager must refuse or change the
				// same options written as they are.
				if err := nmRaw(mode, opts); err == nil {
					t.Errorf("%s: refused (%v) though NetworkManager keeps it", name, ourErr)
				}
				continue
			}
			accepted++
			for _, kf := range kfs {
				if kf.Name != "bond0.nmconnection" {
					continue
				}
				got, err := nm(string(kf.Content))
				if err := kept(got, err, bondSection(string(kf.Content))); err != nil {
					t.Errorf("%s: the generated profile: %v\n%s", name, err, kf.Content)
				}
			}
		}
	}
	t.Logf("%d combinations written and loaded by NetworkManager, %d refused by both", accepted, refused)
	if accepted == 0 || refused == 0 {
		t.Fatalf("the sample proves nothing: %d accepted, %d refused", accepted, refused)
	}
}

// bondSection reads the [bond] section of a keyfile.
func bondSection(keyfile string) map[string]string {
	m := map[string]string{}
	in := false
	for _, l := range strings.Split(keyfile, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "["):
			in = l == "[bond]"
		case in && l != "":
			if k, v, ok := strings.Cut(l, "="); ok {
				m[k] = v
			}
		}
	}
	return m
}
