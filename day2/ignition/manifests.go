package ignition

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-assisted/kubectl-assisted/day2/clusterinfo"
	"github.com/kubectl-assisted/kubectl-assisted/day2/nodesconfig"
)

// manifests writes the ZTP manifests the on-host assisted-service client
// registers: the release (ClusterImageSet), the pull secret, the InfraEnv and
// one NMStateConfig per host with static networking.
func (b *builder) manifests(in Input, sshKey string) error {
	c := in.Cluster
	name := c.ClusterName
	labels := map[string]string{"infraenvs.agent-install.openshift.io": name}
	objs := []struct {
		file string
		obj  map[string]any
	}{
		{"cluster-image-set.yaml", map[string]any{
			"apiVersion": "hive.openshift.io/v1", "kind": "ClusterImageSet",
			"metadata": map[string]any{"name": "openshift-" + c.Version},
			"spec":     map[string]any{"releaseImage": c.ReleaseImage},
		}},
		{"pull-secret.yaml", map[string]any{
			"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
			"metadata":   map[string]any{"name": "pull-secret", "namespace": ZTPNamespace},
			"stringData": map[string]any{".dockerconfigjson": c.PullSecret},
		}},
	}
	spec := map[string]any{
		"clusterRef":                 map[string]any{"name": name, "namespace": ZTPNamespace},
		"pullSecretRef":              map[string]any{"name": "pull-secret"},
		"cpuArchitecture":            in.Arch,
		"nmStateConfigLabelSelector": map[string]any{"matchLabels": labels},
	}
	if sshKey != "" {
		spec["sshAuthorizedKey"] = sshKey
	}
	if p := c.Proxy; p != nil {
		spec["proxy"] = map[string]any{"httpProxy": p.HTTPProxy, "httpsProxy": p.HTTPSProxy, "noProxy": p.NoProxy}
	}
	if c.UserCABundle != "" {
		bundle, err := certBundle(c.UserCABundle)
		if err != nil {
			return fmt.Errorf("the cluster's user CA bundle (ConfigMap openshift-config/user-ca-bundle) %v: the host's infra-env registration would fail; fix the ConfigMap", err)
		}
		spec["additionalTrustBundle"] = bundle
	}
	objs = append(objs, struct {
		file string
		obj  map[string]any
	}{"infraenv.yaml", map[string]any{
		"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "InfraEnv",
		"metadata": map[string]any{"name": name, "namespace": ZTPNamespace},
		"spec":     spec,
	}})
	for _, o := range objs {
		y, err := yaml.Marshal(o.obj)
		if err != nil {
			return fmt.Errorf("render %s: %w", o.file, err)
		}
		mode := 0o644
		if o.file == "pull-secret.yaml" {
			mode = 0o600
		}
		b.file(path.Join(ManifestsDir, o.file), mode, y)
	}
	var nmstate []string
	for i, h := range in.Nodes.Hosts {
		if h.NetworkConfig == nil {
			continue
		}
		var ifaces []map[string]any
		for _, nic := range h.Interfaces {
			ifaces = append(ifaces, map[string]any{"name": nic.Name, "macAddress": nodesconfig.NormalizeMAC(nic.MACAddress)})
		}
		y, err := yaml.Marshal(map[string]any{
			"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "NMStateConfig",
			"metadata": map[string]any{"name": hostDir(h, i), "namespace": ZTPNamespace, "labels": labels},
			"spec":     map[string]any{"config": h.NetworkConfig, "interfaces": ifaces},
		})
		if err != nil {
			return fmt.Errorf("render NMStateConfig of %s: %w", h.Label(i), err)
		}
		nmstate = append(nmstate, string(y))
	}
	if len(nmstate) > 0 {
		b.file(path.Join(ManifestsDir, "nmstateconfig.yaml"), 0o644, []byte(strings.Join(nmstate, "---\n")))
	}
	return nil
}

// hostDir names a host's configuration directory: its hostname, else its index.
func hostDir(h nodesconfig.Host, i int) string {
	if h.Hostname != "" {
		return h.Hostname
	}
	return fmt.Sprintf("host-%d", i)
}

// hosts writes, per host, what assisted-service's host-config loader reads
// (mac_addresses, role, root-device-hints.yaml), the hostname keyed by every
// MAC, and the nmstate the pre-network step applies on the matching machine.
func (b *builder) hosts(in Input) error {
	for i, h := range in.Nodes.Hosts {
		dir := path.Join(HostConfigDir, hostDir(h, i))
		macs := h.MACs()
		b.file(path.Join(dir, "mac_addresses"), 0o644, []byte(strings.Join(macs, "\n")+"\n"))
		role := h.Role
		if role == "" {
			role = "worker"
		}
		b.file(path.Join(dir, "role"), 0o644, []byte(role+"\n"))
		if h.RootDeviceHints != nil {
			y, err := yaml.Marshal(h.RootDeviceHints)
			if err != nil {
				return fmt.Errorf("root device hints of %s: %w", h.Label(i), err)
			}
			b.file(path.Join(dir, "root-device-hints.yaml"), 0o644, y)
		}
		if h.Hostname != "" && len(macs) > 0 {
			// Keyed by the first interface's MAC only, as the installer does:
			// one file per host, so one machine never matches two names.
			b.file(path.Join(HostnamesDir, macs[0]), 0o644, []byte(h.Hostname+"\n"))
		}
		if h.NetworkConfig != nil {
			// As node-joiner: NetworkManager keyfiles generated at build time
			// plus mac_interface.ini (MAC=name as in nodes-config.yaml), which
			// pre-network-manager-config.sh uses to find this machine's
			// directory and rename each profile to the NIC that has the MAC.
			ndir := path.Join(NetworkDir, hostDir(h, i))
			kfs, err := h.Keyfiles()
			if err != nil {
				return fmt.Errorf("networkConfig of %s: %w", h.Label(i), err)
			}
			for _, kf := range kfs {
				b.file(path.Join(ndir, kf.Name), 0o600, kf.Content)
			}
			var mi strings.Builder
			for _, nic := range h.Interfaces {
				fmt.Fprintf(&mi, "%s=%s\n", nodesconfig.NormalizeMAC(nic.MACAddress), nic.Name)
			}
			b.file(path.Join(ndir, "mac_interface.ini"), 0o644, []byte(mi.String()))
		}
	}
	return nil
}

// system writes host-wide settings taken from the cluster: registries.conf
// from the mirror sets, the CA bundle, chrony, proxy and the pull secret.
func (b *builder) system(in Input) {
	c := in.Cluster
	if conf := RegistriesConf(c.ImageDigestSources); conf != "" {
		b.file(RegistriesConfPath, 0o644, []byte(conf))
	}
	if c.UserCABundle != "" {
		b.file(CABundlePath, 0o644, []byte(c.UserCABundle))
	}
	if c.ChronyConf != "" {
		b.file(ChronyConfPath, 0o644, []byte(c.ChronyConf))
	}
	if p := c.Proxy; p != nil {
		var s strings.Builder
		s.WriteString("[Manager]\n")
		for _, kv := range [][2]string{{"HTTP_PROXY", p.HTTPProxy}, {"HTTPS_PROXY", p.HTTPSProxy}, {"NO_PROXY", hostNoProxy(p)}} {
			if kv[1] != "" {
				fmt.Fprintf(&s, "DefaultEnvironment=\"%s=%s\" \"%s=%s\"\n", kv[0], kv[1], strings.ToLower(kv[0]), kv[1])
			}
		}
		b.file(ProxyDropIn, 0o644, []byte(s.String()))
	}
	b.file(PullSecretPath, 0o600, []byte(c.PullSecret))
}

// hostNoProxy is the cluster's noProxy plus the address every unit of the ISO
// reaches the host's own assisted-service at (SERVICE_BASE_URL), when the
// cluster has a proxy: without it curl and the client send their calls to
// 127.0.0.1 to the proxy, and wait-for-assisted-service.sh waits forever
// (seen in the release-4.18 rehearsal). The installer adds its rendezvous IP
// to NO_PROXY for the same reason (openshift/installer PR #9083,
// OCPBUGS-30292, in 4.17+); node-joiner's add-nodes ISO, whose rendezvous is
// 127.0.0.1 too, keeps the cluster's value (joiner/clusterinfo.go
// retrieveProxy: Proxy.Spec.NoProxy).
func hostNoProxy(p *clusterinfo.Proxy) string {
	if p.HTTPProxy == "" && p.HTTPSProxy == "" {
		return p.NoProxy
	}
	var entries []string
	if p.NoProxy != "" {
		entries = strings.Split(p.NoProxy, ",")
	}
	for _, local := range []string{nodeZeroIP, "localhost"} {
		if !slices.Contains(entries, local) {
			entries = append(entries, local)
		}
	}
	return strings.Join(entries, ",")
}

// RegistriesConf renders containers-registries.conf(5) v2 with one digest-only
// registry entry per mirrored source, or "" when there are no mirrors.
func RegistriesConf(sources []clusterinfo.ImageDigestSource) string {
	if len(sources) == 0 {
		return ""
	}
	srcs := append([]clusterinfo.ImageDigestSource(nil), sources...)
	sort.Slice(srcs, func(i, j int) bool { return srcs[i].Source < srcs[j].Source })
	var s strings.Builder
	s.WriteString("unqualified-search-registries = []\nshort-name-mode = \"\"\n")
	for _, src := range srcs {
		fmt.Fprintf(&s, "\n[[registry]]\n  prefix = \"\"\n  location = %q\n  mirror-by-digest-only = true\n", src.Source)
		for _, m := range src.Mirrors {
			fmt.Fprintf(&s, "\n  [[registry.mirror]]\n    location = %q\n", m)
		}
	}
	return s.String()
}

// certBundle re-encodes a PEM bundle as its certificates only, one after the
// other: the on-host service accepts an additionalTrustBundle only when every
// PEM block is a certificate and nothing follows the last one (assisted-service
// release-4.17..4.20 internal/cluster/validations/validations.go,
// ValidatePEMCertificateBundle), so text around the blocks (comments, blank
// lines) is dropped here and a block that is not a certificate is an error.
func certBundle(s string) (string, error) {
	var out []byte
	rest := []byte(s)
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return "", fmt.Errorf("holds a %q PEM block, not only certificates", block.Type)
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return "", fmt.Errorf("holds a certificate that does not parse (%v)", err)
		}
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: block.Bytes})...)
	}
	if len(out) == 0 {
		return "", fmt.Errorf("holds no PEM certificate")
	}
	return string(out), nil
}
