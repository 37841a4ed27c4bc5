package ignition

import (
	"os"
	"os/exec"
	"path/filepath"
	"sigs.k8s.io/yaml"
	"sort"
	"strings"
	"testing"

	"github.com/kubectl-assisted/kubectl-assisted/day2/clusterinfo"
	"github.com/kubectl-assisted/kubectl-assisted/day2/nodesconfig"
)

// TestPreNetworkScript_RenamesProfilesByMAC runs the rendered
// pre-network-manager-config.sh on a fake root (ROOT_PREFIX) whose NICs carry
// the host's MACs under other names, including the two logical names swapped:
// every keyfile the build generated lands in system-connections named after
// the NIC that has its MAC, with interface-name, id and vlan parent rewritten.
func TestPreNetworkScript_RenamesProfilesByMAC(t *testing.T) {
	in := testInput(t, "4.19.7")
	in.Nodes.Hosts[0].NetworkConfig = map[string]any{
		"interfaces": []any{
			map[string]any{"name": "eth0", "type": "ethernet", "state": "up",
				"ipv4": map[string]any{"enabled": true, "dhcp": false, "address": []any{map[string]any{"ip": "192.168.111.90", "prefix-length": 24}}}},
			map[string]any{"name": "eth1.100", "type": "vlan", "state": "up", "vlan": map[string]any{"base-iface": "eth1", "id": 100},
				"ipv4": map[string]any{"enabled": true, "dhcp": true}},
		},
		"routes": map[string]any{"config": []any{map[string]any{"destination": "0.0.0.0/0", "next-hop-address": "192.168.111.1", "next-hop-interface": "eth0"}}},
	}
	if err := (&nodesconfig.Config{Hosts: in.Nodes.Hosts}).Validate(); err != nil {
		t.Fatal(err)
	}
	fs := files(t, render(t, in))
	script := fs["/usr/local/bin/pre-network-manager-config.sh"]
	for _, tc := range []struct {
		name string
		nics map[string]string // NIC name on the machine -> MAC
		want map[string][]string
	}{
		{"predictable names", map[string]string{"ens3": "00:EF:44:21:E6:A5", "ens4": "00:ef:44:21:e6:a6", "lo": "00:00:00:00:00:00"}, map[string][]string{
			"ens3.nmconnection":     {"id=ens3\n", "interface-name=ens3\n", "address1=192.168.111.90/24\n", "route1=0.0.0.0/0,192.168.111.1,0\nroute1_options=table=254\n"},
			"ens4.nmconnection":     {"id=ens4\n", "interface-name=ens4\n", "[ipv4]\nmethod=disabled\n"},
			"ens4.100.nmconnection": {"id=ens4.100\n", "interface-name=ens4.100\n", "parent=ens4\n", "id=100\n", "method=auto\n"},
		}},
		{"names swapped", map[string]string{"eth1": "00:ef:44:21:e6:a5", "eth0": "00:ef:44:21:e6:a6"}, map[string][]string{
			"eth1.nmconnection":     {"id=eth1\n", "interface-name=eth1\n", "address1=192.168.111.90/24\n"},
			"eth0.nmconnection":     {"id=eth0\n", "interface-name=eth0\n", "[ipv4]\nmethod=disabled\n"},
			"eth0.100.nmconnection": {"interface-name=eth0.100\n", "parent=eth0\n"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for p, body := range fs {
				if !strings.HasPrefix(p, NetworkDir+"/") {
					continue
				}
				dst := filepath.Join(root, p)
				if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(dst, []byte(body), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			for nic, mac := range tc.nics {
				d := filepath.Join(root, "sys/class/net", nic)
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(d, "address"), []byte(mac+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command("bash", "-c", script)
			cmd.Env = append(os.Environ(), "ROOT_PREFIX="+root)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("script: %v\n%s", err, out)
			}
			dir := filepath.Join(root, "etc/NetworkManager/system-connections")
			entries, _ := os.ReadDir(dir)
			var got []string
			for _, e := range entries {
				got = append(got, e.Name())
				info, _ := e.Info()
				if info.Mode().Perm() != 0o600 {
					t.Errorf("%s mode %v, want 0600", e.Name(), info.Mode().Perm())
				}
			}
			var want []string
			for n := range tc.want {
				want = append(want, n)
			}
			sort.Strings(want)
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("profiles %v, want %v\n%s", got, want, out)
			}
			for n, subs := range tc.want {
				b, _ := os.ReadFile(filepath.Join(dir, n))
				for _, s := range subs {
					if !strings.Contains(string(b), s) {
						t.Errorf("%s lacks %q:\n%s", n, s, b)
					}
				}
				if strings.Contains(string(b), "@@nic") {
					t.Errorf("%s keeps a placeholder:\n%s", n, b)
				}
			}
		})
	}
	t.Run("no matching MAC", func(t *testing.T) {
		root := t.TempDir()
		d := filepath.Join(root, "sys/class/net/ens9")
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "address"), []byte("52:54:00:00:00:09\n"), 0o644)
		for p, body := range fs {
			if strings.HasPrefix(p, NetworkDir+"/") {
				os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755)
				os.WriteFile(filepath.Join(root, p), []byte(body), 0o600)
			}
		}
		cmd := exec.Command("bash", "-c", script)
		cmd.Env = append(os.Environ(), "ROOT_PREFIX="+root)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "no static network configuration for this machine's MACs; using DHCP") {
			t.Fatalf("err %v\n%s", err, out)
		}
		if _, err := os.Stat(filepath.Join(root, "etc/NetworkManager/system-connections")); err == nil {
			t.Fatal("profiles installed on a machine without the host's MACs")
		}
	})
}

// The rehearsal against the real release-4.19 service showed both: a key the
// service's regexp rejects fails registerInfraEnv at boot ("SSH key is not
// valid"), a CA that does not parse fails the import ("unable to parse
// certificate"). Both are refused at build time instead.
func TestRenderRefusesWhatTheServiceRejects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Input)
		want   string
	}{
		{"fake cluster key", func(in *Input) {
			in.Cluster.SSHKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyFromCluster core@cluster"
		},
			"the cluster's SSH key (MachineConfig 99-worker-ssh) is not accepted by the host's assisted-service"},
		{"security-key type", func(in *Input) {
			in.Nodes.SSHKey = "sk-ssh-ed25519@openssh.com AAAAGnNrLXNzaC1lZDI1NTE5QG9wZW5zc2guY29tAAAAIHr2nFs7e4RkFHcBXt+ZfyqqS/3RlLTjHyk5qPpvHX8vAAAABHNzaDo= u@h"
		}, "sshKey of nodes-config.yaml is not accepted by the host's assisted-service (it takes ssh-rsa, ssh-ed25519, ecdsa-sha2-nistp256/384/521 or ssh-dss keys)"},
		{"user CA bundle not a certificate", func(in *Input) {
			in.Cluster.UserCABundle = "-----BEGIN CERTIFICATE-----\nMIIBmirrorca\n-----END CERTIFICATE-----\n"
		},
			"the cluster's user CA bundle (ConfigMap openshift-config/user-ca-bundle) holds a certificate that does not parse"},
		{"CA not PEM", func(in *Input) {
			in.Cluster.IgnitionEndpoint.CACertificate = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"
		},
			`the Machine Config Server CA read from the cluster holds no PEM certificate: the host's cluster import would fail (assisted-service answers "unable to parse certificate")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := testInput(t, "4.19.7")
			tc.mutate(&in)
			if _, err := Marshal(in); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant %q", err, tc.want)
			}
		})
	}
}

// Text around the certificates of the user CA bundle (which the service's
// ValidatePEMCertificateBundle rejects) is dropped from the infra-env's
// additionalTrustBundle; the certificates are kept.
func TestUserCABundleKeepsOnlyCertificates(t *testing.T) {
	in := testInput(t, "4.19.7")
	in.Cluster.UserCABundle = "# corporate CA\n" + testUserCA + "\n\n" + testCAPEM + "\n"
	fs := files(t, render(t, in))
	ie := fs[ManifestsDir+"/infraenv.yaml"]
	var obj struct {
		Spec struct {
			AdditionalTrustBundle string `json:"additionalTrustBundle"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(ie), &obj); err != nil {
		t.Fatal(err)
	}
	if obj.Spec.AdditionalTrustBundle != testUserCA+testCAPEM {
		t.Fatalf("additionalTrustBundle = %q\nwant the two certificates only", obj.Spec.AdditionalTrustBundle)
	}
}

// A VLAN named <NIC>.<id> whose name on the machine would pass
// NetworkManager's 15 characters is cut at the end of the NIC part, its parent
// kept: the case and the expected names are assisted-service's own
// (internal/constants/scripts_test.go "truncates vlan interface names",
// release-4.17 to master: NIC enp94s0f0np0 with MAC b6:6f:12:c4:4e:fc,
// eth0.2507 -> enp94s0f0n.2507, eth0 -> enp94s0f0np0; PR #5389, MGMT-15340:
// NetworkManager otherwise refuses the profile, "interface name is longer
// than 15 characters").
func TestPreNetworkScript_TrimsLongVLANNames(t *testing.T) {
	in := testInput(t, "4.19.7")
	in.Nodes.Hosts[0].Interfaces = []nodesconfig.Interface{{Name: "eth0", MACAddress: "B6:6F:12:C4:4E:FC"}}
	in.Nodes.Hosts[0].NetworkConfig = map[string]any{
		"interfaces": []any{
			map[string]any{"name": "eth0", "type": "ethernet", "state": "up", "mac-address": "b6:6f:12:c4:4e:fc",
				"ipv4": map[string]any{"enabled": true, "address": []any{map[string]any{"ip": "192.0.2.50", "prefix-length": 24}}}},
			map[string]any{"name": "eth0.2507", "type": "vlan", "state": "up", "vlan": map[string]any{"base-iface": "eth0", "id": 2507},
				"ipv4": map[string]any{"enabled": true, "address": []any{map[string]any{"ip": "192.0.2.111", "prefix-length": 24}}}},
		},
	}
	if err := (&nodesconfig.Config{Hosts: in.Nodes.Hosts}).Validate(); err != nil {
		t.Fatal(err)
	}
	fs := files(t, render(t, in))
	for _, tc := range []struct {
		nic  string
		want map[string][]string
	}{
		{"enp94s0f0np0", map[string][]string{
			"enp94s0f0np0.nmconnection":    {"id=enp94s0f0np0\n", "interface-name=enp94s0f0np0\n"},
			"enp94s0f0n.2507.nmconnection": {"id=enp94s0f0n.2507\n", "interface-name=enp94s0f0n.2507\n", "[vlan]\nid=2507\nparent=enp94s0f0np0\n"},
		}},
		// Exactly 15 characters: kept.
		{"enp94s0f0n", map[string][]string{
			"enp94s0f0n.nmconnection":      {"interface-name=enp94s0f0n\n"},
			"enp94s0f0n.2507.nmconnection": {"interface-name=enp94s0f0n.2507\n", "parent=enp94s0f0n\n"},
		}},
	} {
		t.Run(tc.nic, func(t *testing.T) {
			got := runPreNetwork(t, fs, map[string]string{tc.nic: "b6:6f:12:c4:4e:fc"})
			if len(got) != len(tc.want) {
				t.Fatalf("profiles %v, want %d", keys(got), len(tc.want))
			}
			for name, subs := range tc.want {
				body, ok := got[name]
				if !ok {
					t.Fatalf("no %s among %v", name, keys(got))
				}
				for _, s := range subs {
					if !strings.Contains(body, s) {
						t.Errorf("%s lacks %q:\n%s", name, s, body)
					}
				}
				for _, l := range strings.Split(body, "\n") {
					if v, ok := strings.CutPrefix(l, "interface-name="); ok && len(v) > 15 {
						t.Errorf("%s: interface-name %q longer than 15 characters", name, v)
					}
				}
			}
		})
	}
}

// runPreNetwork runs the rendered pre-network-manager-config.sh on a fake
// root holding the rendered /etc/assisted/network and NICs (name -> MAC), and
// returns the profiles it installed (file name -> content).
func runPreNetwork(t *testing.T, fs map[string]string, nics map[string]string) map[string]string {
	t.Helper()
	root := t.TempDir()
	for p, body := range fs {
		if !strings.HasPrefix(p, NetworkDir+"/") {
			continue
		}
		dst := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for nic, mac := range nics {
		d := filepath.Join(root, "sys/class/net", nic)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "address"), []byte(mac+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("bash", "-c", fs["/usr/local/bin/pre-network-manager-config.sh"])
	cmd.Env = append(os.Environ(), "ROOT_PREFIX="+root)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("script: %v\n%s", err, out)
	}
	dir := filepath.Join(root, "etc/NetworkManager/system-connections")
	entries, _ := os.ReadDir(dir)
	got := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		got[e.Name()] = string(b)
	}
	return got
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// With a cluster proxy, every unit gets it (systemd DefaultEnvironment); the
// host's own assisted-service at 127.0.0.1 must not be reached through it:
// the release-4.18 rehearsal's wait-for-assisted-service.sh waited forever
// with the cluster's noProxy alone (the installer adds its rendezvous IP to
// NO_PROXY for the same reason, openshift/installer PR #9083).
func TestProxyDropInSparesTheLocalService(t *testing.T) {
	for _, tc := range []struct{ noProxy, want string }{
		{".cluster.local,192.168.111.0/24", `"NO_PROXY=.cluster.local,192.168.111.0/24,127.0.0.1,localhost" "no_proxy=.cluster.local,192.168.111.0/24,127.0.0.1,localhost"`},
		{"", `"NO_PROXY=127.0.0.1,localhost"`},
		{"localhost,127.0.0.1,.svc", `"NO_PROXY=localhost,127.0.0.1,.svc"`},
	} {
		in := testInput(t, "4.19.7")
		in.Cluster.Proxy = &clusterinfo.Proxy{HTTPProxy: "http://proxy.example.com:3128", HTTPSProxy: "http://proxy.example.com:3128", NoProxy: tc.noProxy}
		got := files(t, render(t, in))[ProxyDropIn]
		if !strings.Contains(got, tc.want) || !strings.Contains(got, `"HTTPS_PROXY=http://proxy.example.com:3128"`) {
			t.Errorf("noProxy %q:\n%s\nwant %s", tc.noProxy, got, tc.want)
		}
	}
	in := testInput(t, "4.19.7")
	if _, ok := files(t, render(t, in))[ProxyDropIn]; ok {
		t.Error("a drop-in without a cluster proxy")
	}
}
