package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
	"github.com/kubectl-assisted/kubectl-assisted/test/synthetic"
)

// TestAddNodes_NetworkManagerAppliesKeyfiles is NetworkManager as the judge
// of the ISO's static network. One nodes-config.yaml holds every nmstate
// shape add-nodes accepts, one host per shape; `add-nodes create` builds the
// ISO, and its Ignition's /etc/assisted/network, pre-network-manager-config.sh
// and pre-network-manager-config.service go into a Debian root with
// NetworkManager 1.42 (make tools). For each host the root boots under
// systemd in a container whose only NICs carry that host's MACs under other
// names, as on real hardware; starting NetworkManager.service runs the ISO's
// unit first (it is ordered before it), which installs the host's keyfiles
// renamed to those NICs. Then NetworkManager's own state (nmcli), the
// kernel's (ip -j addr/route/link, /proc/net/bonding) and /etc/resolv.conf as
// NetworkManager wrote it must show what the YAML says.
//
// The expected values are what the nmstate YAML means, with nmstate's
// defaults where it has them (nmstate/nmstate @614c66dc, rust/src/lib/nm/
// settings/route.rs: a route without metric gets metric 0; ip.rs: IPv6
// addresses generated as EUI-64; nm/dns.rs: the DNS servers of the family of
// the first server come first) and the kernel's (an IPv6 route of metric 0
// gets 1024, ip-route(8)).
//
// The kernel of the machines this suite runs on has no 802.1Q VLAN and no
// bonding driver (CONFIG_VLAN_8021Q, CONFIG_BONDING unset; no modules): for
// those shapes NetworkManager's loaded profiles are checked, and the links
// themselves only where the kernel can create them (probed, and logged).
func TestAddNodes_NetworkManagerAppliesKeyfiles(t *testing.T) {
	harness.NMRoot(t)
	if v := harness.NMVersion(t); !strings.HasPrefix(v, "1.42.") {
		t.Fatalf("network-manager %s in the root; this test is written for Debian bookworm's 1.42", v)
	}
	base := fixtureISO(t, "embed-areas-2023-07.x86_64.iso")
	baseBytes, _ := os.ReadFile(base)
	e := newDay2Env(t, map[string][]byte{"x86_64": baseBytes}, func(o *synthetic.ClusterOptions) { o.Version = "4.19.7" })

	var cfg strings.Builder
	cfg.WriteString("hosts:\n")
	for _, s := range nmCorpus {
		cfg.WriteString(s.host)
	}
	out := filepath.Join(t.TempDir(), "out")
	decodeResult(t, e.create(t, "-f", writeFile(t, "nodes-config.yaml", cfg.String()), "--dir", out, "-o", "json"))
	raw, _, _ := embeddedIgnition(t, filepath.Join(out, "node.x86_64.iso"))
	isoFiles := networkFilesOf(t, parseIgn(t, raw))

	kernelVLAN, kernelBond := kernelSupports(t)
	t.Logf("kernel: 802.1Q VLAN %v, bonding %v", kernelVLAN, kernelBond)
	t.Run("same settings as nmstate's output", func(t *testing.T) {
		t.Parallel()
		h := harness.StartNMHost(t, nil, nil)
		h.StartNetworkManager(t)
		for _, o := range nmstateOutputs {
			compareWithNmstate(t, h, isoFiles, o)
		}
	})
	for _, s := range nmCorpus {
		if s.nics == nil {
			continue // compared with nmstate's output only
		}
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			h := harness.StartNMHost(t, s.nics, isoFiles.install)
			if s.wire != nil {
				s.wire(t, h)
			}
			h.StartNetworkManager(t)
			j := &nmJudge{t: t, h: h, vlan: kernelVLAN, bond: kernelBond}
			j.everyKeyfileLoaded()
			s.want(j)
			if t.Failed() {
				t.Logf("pre-network-manager-config.service:\n%s\nNetworkManager:\n%s\n%s",
					h.Journal("pre-network-manager-config.service"), h.Journal("NetworkManager.service"), h.Logs())
			}
		})
	}
}

// isoNetwork is what the ISO's Ignition puts on the host for static
// networking: the keyfile directories, the script and its unit.
type isoNetwork struct {
	files map[string]string // path -> content
	modes map[string]int
	unit  string
}

func networkFilesOf(t *testing.T, c *ign) *isoNetwork {
	t.Helper()
	n := &isoNetwork{files: map[string]string{}, modes: map[string]int{}}
	for _, f := range c.Storage.Files {
		if strings.HasPrefix(f.Path, "/etc/assisted/network/") || f.Path == "/usr/local/bin/pre-network-manager-config.sh" {
			n.files[f.Path] = c.mustFile(t, f.Path)
			n.modes[f.Path] = f.Mode
		}
	}
	for _, u := range c.Systemd.Units {
		if u.Name == "pre-network-manager-config.service" {
			n.unit = u.Contents
		}
	}
	if n.unit == "" || n.files["/usr/local/bin/pre-network-manager-config.sh"] == "" {
		t.Fatal("the Ignition lacks pre-network-manager-config.service or its script")
	}
	return n
}

// install lays the ISO's files into a root as Ignition would and enables the
// unit for NetworkManager.service (the ISO enables it for multi-user.target
// too; here the NICs appear after boot, so only NetworkManager pulls it in).
func (n *isoNetwork) install(root string) {
	write := func(p, body string, mode os.FileMode) {
		dst := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			panic(err)
		}
		if err := os.WriteFile(dst, []byte(body), mode); err != nil {
			panic(err)
		}
	}
	for p, body := range n.files {
		write(p, body, os.FileMode(n.modes[p]))
	}
	write("/etc/systemd/system/pre-network-manager-config.service", n.unit, 0o644)
	wants := filepath.Join(root, "etc/systemd/system/NetworkManager.service.wants")
	if err := os.MkdirAll(wants, 0o755); err != nil {
		panic(err)
	}
	if err := os.Symlink("/etc/systemd/system/pre-network-manager-config.service", filepath.Join(wants, "pre-network-manager-config.service")); err != nil {
		panic(err)
	}
}

// kernelSupports probes, in a network namespace of its own, whether this
// kernel can make VLAN and bond links.
func kernelSupports(t *testing.T) (vlan, bond bool) {
	t.Helper()
	probe := func(args string) bool {
		out, err := runCmd("unshare", "--net", "sh", "-c", "ip link add kat0 type veth peer name kat1 && "+args)
		if err != nil {
			t.Logf("kernel probe %q: %s", args, strings.TrimSpace(out))
		}
		return err == nil
	}
	return probe("ip link add link kat0 name kat0.5 type vlan id 5"), probe("ip link add kat2 type bond")
}

// nmJudge checks one host's network against NetworkManager and the kernel.
type nmJudge struct {
	t          *testing.T
	h          *harness.NMHost
	vlan, bond bool // the kernel can make such links
}

// everyKeyfileLoaded: NetworkManager loaded every file the ISO's script
// installed (a file it refuses is logged and skipped, not an error of its
// start-up) and logged no keyfile warning (it drops a setting it cannot read
// and loads the rest of the profile).
func (j *nmJudge) everyKeyfileLoaded() {
	t := j.t
	dir := filepath.Join(j.h.Root, "etc/NetworkManager/system-connections")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("the ISO's script installed nothing: %v", err)
	}
	loaded := map[string]bool{}
	for _, p := range nmProfiles(t, j.h) {
		loaded[filepath.Base(p.File)] = true
	}
	for _, e := range entries {
		if !loaded[e.Name()] {
			t.Errorf("NetworkManager did not load %s", e.Name())
		}
	}
	for _, l := range lines(j.h.Journal("NetworkManager.service")) {
		if strings.Contains(l, "keyfile:") && (strings.Contains(l, "<warn>") || strings.Contains(l, "<error>")) {
			t.Errorf("NetworkManager: %s", l)
		}
	}
}

// profiles: exactly these profiles are loaded from keyfiles (by id; not
// NetworkManager's own in-memory profile of lo).
func (j *nmJudge) profiles(ids ...string) {
	var got []string
	for _, p := range nmProfiles(j.t, j.h) {
		if strings.HasPrefix(p.File, "/etc/NetworkManager/system-connections/") {
			got = append(got, p.Name)
		}
	}
	sort.Strings(got)
	sort.Strings(ids)
	if !slices.Equal(got, ids) {
		j.t.Errorf("profiles %q, want %q", got, ids)
	}
}

// settings: profile id has these settings in NetworkManager ("vlan.id" -> "20").
func (j *nmJudge) settings(id string, want map[string]string) {
	got := nmSettings(j.t, j.h, id)
	for k, v := range want {
		if got[k] != v {
			j.t.Errorf("profile %s: %s = %q, want %q", id, k, got[k], v)
		}
	}
}

// connected: these devices are activated with the profile of their name.
func (j *nmJudge) connected(devs ...string) {
	eventually(j.t, "devices", func() string {
		got := nmDevices(j.t, j.h)
		for _, d := range devs {
			if got[d] != "connected "+d {
				return fmt.Sprintf("%s is %q, want connected with profile %s (all: %v)", d, got[d], d, got)
			}
		}
		return ""
	})
}

// addrs: the link has exactly these global addresses (and "link-local").
func (j *nmJudge) addrs(dev string, want ...string) {
	sort.Strings(want)
	eventually(j.t, dev+" addresses", func() string {
		got := ipLinks(j.t, j.h)[dev].addrs()
		if !slices.Equal(got, want) {
			return fmt.Sprintf("%q, want %q", got, want)
		}
		return ""
	})
}

// routes: the kernel has these routes (among others).
func (j *nmJudge) routes(want ...string) {
	eventually(j.t, "routes", func() string { return containsAll(ipRoutes(j.t, j.h), want...) })
}

// dns: /etc/resolv.conf names these servers, in this order, and search list.
func (j *nmJudge) dns(servers, search []string) {
	eventually(j.t, "resolv.conf", func() string {
		s, d := resolvConf(j.t, j.h)
		if !slices.Equal(s, servers) || !slices.Equal(d, search) {
			return fmt.Sprintf("nameservers %q search %q, want %q %q", s, d, servers, search)
		}
		return ""
	})
}

func (j *nmJudge) mtu(dev string, want int) {
	if got := ipLinks(j.t, j.h)[dev].MTU; got != want {
		j.t.Errorf("%s MTU %d, want %d", dev, got, want)
	}
}

func runCmd(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return string(out), err
}

// bonding reads /proc/net/bonding/NAME inside the container: the mode, the
// MII polling interval (-1: not checked) and the ports.
func (j *nmJudge) bonding(name, mode string, miimon int, ports ...string) {
	eventually(j.t, "/proc/net/bonding/"+name, func() string {
		out, err := j.h.Output("cat", "/proc/net/bonding/"+name)
		if err != nil {
			return out
		}
		want := []string{"Bonding Mode: " + mode}
		if miimon >= 0 {
			want = append(want, fmt.Sprintf("MII Polling Interval (ms): %d", miimon))
		}
		for _, p := range ports {
			want = append(want, "Slave Interface: "+p)
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				return fmt.Sprintf("lacks %q:\n%s", w, out)
			}
		}
		return ""
	})
}

// vlanLink: the kernel has link name, a VLAN of id on parent.
func (j *nmJudge) vlanLink(name, parent string, id int) {
	eventually(j.t, "VLAN link "+name, func() string {
		out, err := j.h.Output("ip", "-d", "-j", "link", "show", name)
		if err != nil {
			return out
		}
		var links []struct {
			Link     string `json:"link"`
			LinkInfo struct {
				Kind string `json:"info_kind"`
				Data struct {
					ID int `json:"id"`
				} `json:"info_data"`
			} `json:"linkinfo"`
		}
		if err := json.Unmarshal([]byte(out), &links); err != nil || len(links) != 1 {
			return fmt.Sprintf("ip -d -j link show %s: %v %s", name, err, out)
		}
		l := links[0]
		if l.LinkInfo.Kind != "vlan" || l.LinkInfo.Data.ID != id || l.Link != parent {
			return fmt.Sprintf("kind %q id %d on %q, want vlan %d on %s", l.LinkInfo.Kind, l.LinkInfo.Data.ID, l.Link, id, parent)
		}
		return ""
	})
}
