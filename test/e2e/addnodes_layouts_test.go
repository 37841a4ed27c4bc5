package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
	"github.com/kubectl-assisted/kubectl-assisted/test/synthetic"
)

const oneHost = `hosts:
- hostname: extra-worker-0
  interfaces:
  - name: eth0
    macAddress: 00:f4:3d:a0:0e:2b
`

// Every x86_64 and s390x live-ISO layout of the fixtures: igninfo.json with and
// without offset/length, plain /images/ignition.img, the coreiso+ header era.
func TestAddNodesCreate_EveryFixtureLayout(t *testing.T) {
	groups := []struct {
		arch, platform string
		rpm            string
		fixtures       []string
	}{
		{"amd64", "BareMetal", "x86_64", []string{"embed-areas-2020-09.iso", "embed-areas-2021-01.iso", "embed-areas-2021-09.iso", "embed-areas-2021-12.iso",
			"embed-areas-2022-02.iso", "embed-areas-2022-09.iso", "embed-areas-2023-03.x86_64.iso", "embed-areas-2023-07.x86_64.iso"}},
		{"s390x", "None", "s390x", []string{"embed-areas-2023-03.s390x.iso", "embed-areas-2023-07.s390x.iso"}},
	}
	for _, g := range groups {
		t.Run(g.rpm, func(t *testing.T) {
			e := newDay2Env(t, map[string][]byte{g.rpm: []byte("unused: --base-iso")}, func(o *synthetic.ClusterOptions) {
				o.Arch, o.Platform = g.arch, g.platform
			})
			cfgFile := writeFile(t, "nodes-config.yaml", oneHost)
			for _, name := range g.fixtures {
				t.Run(name, func(t *testing.T) {
					base := fixtureISO(t, name)
					out := filepath.Join(t.TempDir(), "out")
					res := decodeResult(t, e.create(t, "-f", cfgFile, "--dir", out, "--base-iso", base, "-o", "json"))
					isoPath := filepath.Join(out, "node."+g.rpm+".iso")
					st, err := os.Stat(isoPath)
					bst, _ := os.Stat(base)
					if err != nil || st.Size() != bst.Size() || res.Artifacts[0].Size != bst.Size() {
						t.Fatalf("node ISO %v (size %d), base %d", err, st.Size(), bst.Size())
					}
					raw, _, _ := embeddedIgnition(t, isoPath)
					validateIgnition(t, raw)
					c := parseIgn(t, raw)
					if an := env(c.mustFile(t, "/etc/assisted/add-nodes.env")); an["CLUSTER_ID"] != testClusterID {
						t.Fatalf("add-nodes.env = %v", an)
					}
					want := `{"networking":{"userManagedNetworking":` + map[string]string{"None": "true", "BareMetal": "false"}[g.platform] + `}}`
					if s := c.mustFile(t, "/etc/assisted/clusterconfig/import-cluster-config.json"); s != want {
						t.Fatalf("import-cluster-config.json = %s, want %s", s, want)
					}
					// xorriso still reads the whole image as ISO9660.
					if _, ok := isoExtract(t, isoPath, "images/pxeboot/rootfs.img"); !ok {
						t.Fatal("node ISO lost /images/pxeboot/rootfs.img")
					}
				})
			}
		})
	}
}

func TestAddNodesCreate_FIPSKernelArguments(t *testing.T) {
	groups := []struct {
		arch, platform, rpm string
		fixtures            []string
	}{
		{"amd64", "BareMetal", "x86_64", []string{"embed-areas-2021-01.iso", "embed-areas-2022-09.iso", "embed-areas-2023-07.x86_64.iso"}},
		{"s390x", "None", "s390x", []string{"embed-areas-2023-07.s390x.iso"}},
	}
	for _, g := range groups {
		t.Run(g.rpm, func(t *testing.T) {
			e := newDay2Env(t, map[string][]byte{g.rpm: []byte("unused")}, func(o *synthetic.ClusterOptions) {
				o.Arch, o.Platform, o.FIPS = g.arch, g.platform, true
			})
			cfgFile := writeFile(t, "nodes-config.yaml", oneHost)
			for _, name := range g.fixtures {
				t.Run(name, func(t *testing.T) {
					base := fixtureISO(t, name)
					before := kargRegions(t, base)
					out := filepath.Join(t.TempDir(), "out")
					res := decodeResult(t, e.create(t, "-f", cfgFile, "--dir", out, "--base-iso", base, "-o", "json"))
					if !res.FIPS || !strings.HasSuffix(res.KernelArguments, " fips=1") {
						t.Fatalf("result fips=%v kargs %q", res.FIPS, res.KernelArguments)
					}
					regions := kargRegions(t, filepath.Join(out, "node."+g.rpm+".iso"))
					if len(regions) == 0 || len(regions) != len(before) {
						t.Fatalf("%d kargs regions, base had %d", len(regions), len(before))
					}
					for i, r := range regions {
						if !strings.Contains(r, "ignition.platform.id=metal fips=1") || strings.Contains(before[i], "fips=1") {
							t.Fatalf("region %d:\n%q\nbase:\n%q", i, r, before[i])
						}
					}
				})
			}
			if g.rpm == "s390x" {
				// This layout has no kernel-argument area: FIPS cannot be set.
				t.Run("embed-areas-2023-03.s390x.iso has no kargs area", func(t *testing.T) {
					out := filepath.Join(t.TempDir(), "out")
					_ = e.kube.Clientset(t).CoreV1().Secrets("openshift-config").Delete(context.Background(), "agent-auth-token", metav1.DeleteOptions{})
					r := e.create(t, "-f", cfgFile, "--dir", out, "--base-iso", fixtureISO(t, "embed-areas-2023-03.s390x.iso"))
					if r.ExitCode != 1 || !strings.Contains(r.Stderr, "kernel arguments [fips=1] requested: ISO has no kernel-argument embed area") {
						t.Fatalf("exit %d\n%s", r.ExitCode, r.Combined())
					}
					assertNothingWritten(t, e, out)
				})
			}
		})
	}
}

func assertNothingWritten(t *testing.T, e *day2Env, out string) {
	t.Helper()
	if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 {
		var names []string
		for _, en := range entries {
			names = append(names, en.Name())
		}
		t.Fatalf("output dir holds %v after a failure", names)
	}
	if _, err := e.kube.Clientset(t).CoreV1().Secrets("openshift-config").Get(context.Background(), "agent-auth-token", metav1.GetOptions{}); err == nil {
		t.Fatal("agent-auth-token was created although validation failed")
	}
}

func TestAddNodesCreate_BadInputsWriteNothing(t *testing.T) {
	base := fixtureISO(t, "embed-areas-2023-07.x86_64.iso")
	e := newDay2Env(t, map[string][]byte{"x86_64": []byte("unused")}, nil)
	tests := []struct {
		name, config string
		want         []string
	}{
		{"duplicate MAC", `hosts:
- hostname: extra-worker-0
  interfaces: [{name: eth0, macAddress: "00:f4:3d:a0:0e:2b"}]
- hostname: extra-worker-1
  interfaces: [{name: eth0, macAddress: "00:F4:3D:A0:0E:2B"}]
`, []string{"host 1 (extra-worker-1): duplicate MAC address 00:f4:3d:a0:0e:2b (also on host 0)"}},
		{"hostname of an existing node", `hosts:
- hostname: ostest-worker-0
  interfaces: [{name: eth0, macAddress: "00:f4:3d:a0:0e:2b"}]
`, []string{"host 0 (ostest-worker-0): hostname conflict: ostest-worker-0 is already used by the cluster's node ostest-worker-0"}},
		{"static IP in use", `hosts:
- hostname: extra-worker-0
  interfaces: [{name: eth0, macAddress: "00:f4:3d:a0:0e:2b"}]
  networkConfig:
    interfaces:
    - name: eth0
      type: ethernet
      ipv4: {enabled: true, address: [{ip: 192.168.111.21, prefix-length: 24}]}
`, []string{"host 0 (extra-worker-0): address conflict: 192.168.111.21 is already used by the cluster's node ostest-master-1"}},
		{"malformed nmstate", `hosts:
- hostname: extra-worker-0
  interfaces: [{name: eth0, macAddress: "00:f4:3d:a0:0e:2b"}]
  networkConfig:
    interfaces: eth0
`, []string{"host 0 (extra-worker-0): networkConfig.interfaces must be a list"}},
		{"nmstate MAC of another machine", `hosts:
- hostname: extra-worker-0
  interfaces: [{name: eth0, macAddress: "00:f4:3d:a0:0e:2b"}]
  networkConfig:
    interfaces:
    - {name: eth0, type: ethernet, mac-address: "52:54:00:00:00:01", ipv4: {enabled: true, address: [{ip: 192.168.111.300, prefix-length: 24}]}}
`, []string{"2 problems", `networkConfig interface "eth0" has MAC 52:54:00:00:00:01, which is not among the host's interfaces`, `ipv4 address "192.168.111.300" is not an IP address`}},
		{"unknown root device hint", `hosts:
- hostname: extra-worker-0
  rootDeviceHints: {serial: S4X1}
  interfaces: [{name: eth0, macAddress: "00:f4:3d:a0:0e:2b"}]
`, []string{`unknown field "hosts[0].rootDeviceHints.serial": valid root device hints are deviceName, hctl, model`}},
		{"wrong architecture", `cpuArchitecture: s390x
hosts:
- hostname: extra-worker-0
  interfaces: [{name: eth0, macAddress: "00:f4:3d:a0:0e:2b"}]
`, []string{"cpuArchitecture s390x cannot join a x86_64 cluster: s390x nodes only join s390x clusters"}},
		{"arm64 on a single-architecture cluster", `cpuArchitecture: arm64
hosts:
- interfaces: [{name: eth0, macAddress: "00:f4:3d:a0:0e:2b"}]
`, []string{"cpuArchitecture arm64 does not match the cluster's architecture x86_64: only a multi-architecture cluster can add aarch64 nodes"}},
		{"everything at once", `hosts:
- hostname: ostest-master-0
  interfaces: [{name: eth0, macAddress: "00:f4:3d:a0:0e:2b"}, {name: eth1, macAddress: "00:f4:3d:a0:0e:2b"}]
- hostname: Bad_Name
  interfaces: [{name: eth0, macAddress: "00-f4-3d-a0-0e-2c"}]
`, []string{"4 problems", "duplicate MAC", "hostname conflict: ostest-master-0", `hostname "Bad_Name" is not a valid lowercase DNS name`, `MAC address "00-f4-3d-a0-0e-2c" of interface "eth0" is malformed`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			r := e.create(t, "-f", writeFile(t, "nodes-config.yaml", tt.config), "--dir", out, "--base-iso", base)
			if r.ExitCode != 1 {
				t.Fatalf("exit %d, want 1\n%s", r.ExitCode, r.Combined())
			}
			for _, w := range tt.want {
				if !strings.Contains(r.Stderr, w) {
					t.Fatalf("stderr lacks %q:\n%s", w, r.Stderr)
				}
			}
			if r.Stdout != "" {
				t.Fatalf("stdout on failure: %q", r.Stdout)
			}
			assertNothingWritten(t, e, out)
		})
	}
	t.Run("single-host flag without --mac-address", func(t *testing.T) {
		r := e.create(t, "--hostname", "extra-worker-0", "--dir", t.TempDir())
		if r.ExitCode != 2 || !strings.Contains(r.Stderr, "flag --hostname describes a single host and requires --mac-address") {
			t.Fatalf("exit %d\n%s", r.ExitCode, r.Combined())
		}
	})
	t.Run("unknown --root-device-hint", func(t *testing.T) {
		r := e.create(t, "--mac-address", "00:f4:3d:a0:0e:2b", "--root-device-hint", "serial:S4X1", "--dir", t.TempDir())
		if r.ExitCode != 2 || !strings.Contains(r.Stderr, `unknown root device hint "serial"`) {
			t.Fatalf("exit %d\n%s", r.ExitCode, r.Combined())
		}
	})
	t.Run("not a live ISO", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "out")
		r := e.create(t, "-f", writeFile(t, "nodes-config.yaml", oneHost), "--dir", out, "--base-iso", fixtureISO(t, "synthetic.iso"))
		if r.ExitCode != 1 || !strings.Contains(r.Stderr, "ISO has no Ignition embed area") {
			t.Fatalf("exit %d\n%s", r.ExitCode, r.Combined())
		}
		assertNothingWritten(t, e, out)
	})
}

func TestAddNodesCreate_SingleHostFlagsAndPXE(t *testing.T) {
	base := fixtureISO(t, "embed-areas-2023-07.x86_64.iso")
	e := newDay2Env(t, map[string][]byte{"x86_64": []byte("unused")}, func(o *synthetic.ClusterOptions) { o.FIPS = true })
	nm := writeFile(t, "nmstate.yaml", "interfaces:\n- name: eth0\n  type: ethernet\n  ipv4: {enabled: true, address: [{ip: 192.168.111.40, prefix-length: 24}]}\n")
	key := writeFile(t, "id.pub", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGthdDBIb3N0S2V5MDAwMDAwMDAwMDAwMDAwMDAwMDAw user@host\n")
	out := filepath.Join(t.TempDir(), "out")
	res := decodeResult(t, e.create(t, "--mac-address", "00:f4:3d:a0:0e:99", "--hostname", "extra-worker-9", "--root-device-hint", "minSizeGigabytes:100",
		"--network-config-path", nm, "--ssh-key-path", key, "--dir", out, "--base-iso", base, "-o", "json"))
	raw, _, _ := embeddedIgnition(t, filepath.Join(out, "node.x86_64.iso"))
	validateIgnition(t, raw)
	c := parseIgn(t, raw)
	if s := c.mustFile(t, "/etc/assisted/hostconfig/extra-worker-9/root-device-hints.yaml"); !strings.Contains(s, "minSizeGigabytes: 100") {
		t.Fatalf("hints = %q", s)
	}
	if s := c.mustFile(t, "/etc/assisted/network/extra-worker-9/mac_interface.ini"); s != "00:f4:3d:a0:0e:99=eth0\n" {
		t.Fatalf("mac_interface.ini = %q", s)
	}
	if s := c.mustFile(t, "/etc/assisted/network/extra-worker-9/eth0.nmconnection"); !strings.Contains(s, "address1=192.168.111.40/24\nmethod=manual\n") {
		t.Fatalf("eth0.nmconnection = %q", s)
	}
	if k := c.Passwd.Users[0].SSHAuthorizedKeys[0]; !strings.Contains(k, "AAAAIGthdDBIb3N0S2V5MDAw") {
		t.Fatalf("ssh key %q: --ssh-key-path must override the cluster's", k)
	}
	_ = res

	// PXE with bootArtifactsBaseURL: kernel, initrd+ignition, rootfs, iPXE.
	cfg := writeFile(t, "nodes-config.yaml", "bootArtifactsBaseURL: http://pxe.test/boot\n"+oneHost)
	pxeOut := filepath.Join(t.TempDir(), "pxe")
	pres := decodeResult(t, e.create(t, "-f", cfg, "--dir", pxeOut, "--base-iso", base, "--pxe", "--checksum", "-o", "json"))
	kinds := map[string]string{}
	for _, a := range pres.Artifacts {
		kinds[a.Kind] = a.Path
		if a.SHA256 == "" {
			t.Errorf("%s has no sha256", a.Path)
		}
	}
	dir := filepath.Join(pxeOut, "boot-artifacts")
	want := map[string]string{"kernel": "node.x86_64-vmlinuz", "initrd": "node.x86_64-initrd.img", "rootfs": "node.x86_64-rootfs.img", "ipxe": "node.x86_64.ipxe"}
	for k, f := range want {
		if kinds[k] != filepath.Join(dir, f) {
			t.Fatalf("artifact %s = %q, want %s", k, kinds[k], f)
		}
	}
	origInitrd, _ := isoExtract(t, base, "images/pxeboot/initrd.img")
	initrd, _ := os.ReadFile(kinds["initrd"])
	if len(initrd) <= len(origInitrd) || string(initrd[:len(origInitrd)]) != string(origInitrd) {
		t.Fatal("initrd does not start with the ISO's initrd")
	}
	ignRaw, _, _ := unpackArchive(t, initrd[align4(len(origInitrd)):])
	validateIgnition(t, ignRaw)
	if pc := parseIgn(t, ignRaw); pc.mustFile(t, "/etc/assisted/hostnames/00:f4:3d:a0:0e:2b") != "extra-worker-0\n" {
		t.Fatal("PXE ignition lacks the host's hostname")
	}
	rootfs, _ := os.ReadFile(kinds["rootfs"])
	origRootfs, _ := isoExtract(t, base, "images/pxeboot/rootfs.img")
	if string(rootfs) != string(origRootfs) {
		t.Fatal("rootfs differs from the ISO's")
	}
	ipxe, _ := os.ReadFile(kinds["ipxe"])
	for _, w := range []string{"initrd --name initrd http://pxe.test/boot/node.x86_64-initrd.img", "kernel http://pxe.test/boot/node.x86_64-vmlinuz initrd=initrd coreos.live.rootfs_url=http://pxe.test/boot/node.x86_64-rootfs.img", "fips=1"} {
		if !strings.Contains(string(ipxe), w) {
			t.Fatalf("ipxe lacks %q:\n%s", w, ipxe)
		}
	}
}

func TestAddNodesCreate_OfflineFromClusterProfile(t *testing.T) {
	base := fixtureISO(t, "embed-areas-2023-07.x86_64.iso")
	e := newDay2Env(t, map[string][]byte{"x86_64": []byte("unused")}, nil)
	cfgFile := writeFile(t, "nodes-config.yaml", oneHost)
	profile := filepath.Join(t.TempDir(), "cluster.json")
	first := decodeResult(t, e.create(t, "-f", cfgFile, "--dir", filepath.Join(t.TempDir(), "a"), "--base-iso", base, "--save-cluster-profile", profile, "-o", "json"))
	st, err := os.Stat(profile)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("profile: %v mode %v, want 0600", err, st.Mode())
	}
	var p map[string]any
	b, _ := os.ReadFile(profile)
	if err := json.Unmarshal(b, &p); err != nil || p["kind"] != "ClusterProfile" || p["clusterID"] != testClusterID {
		t.Fatalf("profile = %s", b)
	}
	// Offline: the kubeconfig points nowhere, the profile has everything.
	dead := filepath.Join(t.TempDir(), "kubeconfig")
	_ = os.WriteFile(dead, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: x, cluster: {server: 'https://127.0.0.1:1'}}]\ncontexts: [{name: x, context: {cluster: x}}]\ncurrent-context: x\n"), 0o600)
	out := filepath.Join(t.TempDir(), "b")
	r := e.plugin.Run(t, "add-nodes", "create", "--kubeconfig", dead, "--plain-http", "-f", cfgFile, "--dir", out, "--base-iso", base, "--cluster-profile", profile, "-o", "json")
	res := decodeResult(t, r)
	if !res.TokenReused || !res.TokenExpiresAt.Equal(first.TokenExpiresAt) || res.Cluster.ID != testClusterID {
		t.Fatalf("offline result = %+v (first token %v)", res, first.TokenExpiresAt)
	}
	raw, _, _ := embeddedIgnition(t, filepath.Join(out, "node.x86_64.iso"))
	validateIgnition(t, raw)
}

func TestAddNodesCreate_PermissionsNamed(t *testing.T) {
	e := newDay2Env(t, map[string][]byte{"x86_64": []byte("unused")}, nil)
	kc := e.kube.KubeconfigFor(t, harness.NobodyUser, "default")
	out := filepath.Join(t.TempDir(), "out")
	r := e.plugin.Run(t, "add-nodes", "create", "--kubeconfig", kc, "-f", writeFile(t, "n.yaml", oneHost), "--dir", out)
	for _, w := range []string{"4 required cluster objects could not be read", "grant get on clusterversions.config.openshift.io",
		"grant get on infrastructures.config.openshift.io", "grant get on secrets in namespace openshift-config", "grant list on nodes"} {
		if !strings.Contains(r.Stderr, w) {
			t.Fatalf("stderr lacks %q (exit %d):\n%s", w, r.ExitCode, r.Stderr)
		}
	}
	if r.ExitCode != 1 {
		t.Fatalf("exit %d", r.ExitCode)
	}
	assertNothingWritten(t, e, out)
}
