package recreate

import (
	"net/netip"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// networks makes updateNetworkParams' comparisons: the network lists by
// index, the network type, the VIPs and user-managed networking.
func (d *differ) networks(cd, aci *unstructured.Unstructured, c *Cluster) {
	var cn []ClusterNetwork
	for _, e := range getSlice(aci, "spec.networking.clusterNetwork") {
		em, _ := e.(map[string]any)
		hp, _ := getInt(&unstructured.Unstructured{Object: em}, "hostPrefix")
		cidr, _ := em["cidr"].(string)
		cn = append(cn, ClusterNetwork{CIDR: cidr, HostPrefix: hp})
	}
	if len(cn) > 0 && !sameClusterNetworks(cn, c.ClusterNetworks) {
		d.add(aci, "spec.networking.clusterNetwork", "cluster_networks", cn, c.ClusterNetworks)
	}
	if sn := getStrings(aci, "spec.networking.serviceNetwork"); len(sn) > 0 && !sameStrings(sn, c.ServiceNetworks) {
		d.add(aci, "spec.networking.serviceNetwork", "service_networks", sn, c.ServiceNetworks)
	}
	var mn []string
	for _, e := range getSlice(aci, "spec.networking.machineNetwork") {
		em, _ := e.(map[string]any)
		cidr, _ := em["cidr"].(string)
		mn = append(mn, cidr)
	}
	if len(mn) > 0 && !sameStrings(mn, c.MachineNetworks) {
		d.add(aci, "spec.networking.machineNetwork", "machine_networks", mn, c.MachineNetworks)
	}

	networkType := getString(aci, "spec.networking.networkType")
	installed, _ := getBool(cd, "spec.installed")
	switch {
	case networkType != "":
		d.str(aci, "spec.networking.networkType", "clusters.network_type", networkType, c.NetworkType)
	case !installed:
		if def := defaultNetworkType(c); def != c.NetworkType {
			d.note(aci, "spec.networking.networkType", "clusters.network_type", nil, c.NetworkType,
				"unset: the controller would choose "+def)
		}
	}

	if !c.VIPDHCPAllocation {
		api := vipList(getString(aci, "spec.apiVIP"), getStrings(aci, "spec.apiVIPs"))
		ingress := vipList(getString(aci, "spec.ingressVIP"), getStrings(aci, "spec.ingressVIPs"))
		for _, v := range []struct{ single, list string }{{"apiVIP", "apiVIPs"}, {"ingressVIP", "ingressVIPs"}} {
			single, list := getString(aci, "spec."+v.single), getStrings(aci, "spec."+v.list)
			if single != "" && len(list) > 0 && !sameVIPs([]string{single}, list[:1]) {
				d.note(aci, "spec."+v.single, "-", single, list[0], "must equal the first of spec."+v.list+": the controller fails")
			}
		}
		if len(api) > 0 || len(ingress) > 0 {
			if !sameVIPs(api, c.APIVIPs) {
				d.add(aci, "spec.apiVIPs", "api_vips", api, c.APIVIPs)
			}
			if !sameVIPs(ingress, c.IngressVIPs) {
				d.add(aci, "spec.ingressVIPs", "ingress_vips", ingress, c.IngressVIPs)
			}
		}
	}

	umn, _ := getBool(aci, "spec.networking.userManagedNetworking")
	cp, _ := getInt(aci, "spec.provisionRequirements.controlPlaneAgents")
	workers, _ := getInt(aci, "spec.provisionRequirements.workerAgents")
	if effective := umn || (cp == 1 && workers == 0); effective != c.UserManagedNetworking {
		d.add(aci, "spec.networking.userManagedNetworking", "clusters.user_managed_networking", effective, c.UserManagedNetworking)
	}
	if lb := getString(aci, "spec.loadBalancer.type"); lb != "" {
		want := map[string]string{"ClusterManaged": "cluster-managed", "UserManaged": "user-managed"}[lb]
		if want != "" && want != c.LoadBalancerType {
			d.add(aci, "spec.loadBalancer.type", "clusters.load_balancer_type", lb, c.LoadBalancerType)
		}
	}
}

// vipList is the controller's backwards compatibility: the old single VIP
// counts when the list is empty.
func vipList(single string, list []string) []string {
	if len(list) == 0 && single != "" {
		return []string{single}
	}
	return list
}

func sameClusterNetworks(a, b []ClusterNetwork) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func sameStrings(a, b []string) bool {
	return strings.Join(a, "\x00") == strings.Join(b, "\x00") && len(a) == len(b)
}

// sameVIPs compares as network.AreApiVipsIdentical: in order when both lists
// are dual-stack, as sets otherwise, by address value.
func sameVIPs(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	eq := func(x, y string) bool {
		px, ex := netip.ParseAddr(x)
		py, ey := netip.ParseAddr(y)
		if ex != nil || ey != nil {
			return x == y
		}
		return px == py
	}
	if dualStack(a) && dualStack(b) {
		for i := range a {
			if !eq(a[i], b[i]) {
				return false
			}
		}
		return true
	}
	used := make([]bool, len(b))
	for _, x := range a {
		found := false
		for j, y := range b {
			if !used[j] && eq(x, y) {
				used[j], found = true, true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func dualStack(ips []string) bool {
	var v4, v6 bool
	for _, ip := range ips {
		if a, err := netip.ParseAddr(ip); err == nil {
			v4 = v4 || a.Is4()
			v6 = v6 || (a.Is6() && !a.Is4In6())
		}
	}
	return v4 && v6
}

// defaultNetworkType is the controller's choice when networkType is unset:
// OVN-Kubernetes for IPv6, single-node, or OpenShift 4.12 and later.
func defaultNetworkType(c *Cluster) string {
	cidrs := append(append([]string{}, c.ServiceNetworks...), c.MachineNetworks...)
	for _, n := range c.ClusterNetworks {
		cidrs = append(cidrs, n.CIDR)
	}
	for _, cidr := range cidrs {
		if strings.Contains(cidr, ":") {
			return "OVNKubernetes"
		}
	}
	if c.ControlPlaneCount == 1 || versionAtLeast(c.OpenshiftVersion, 4, 12) {
		return "OVNKubernetes"
	}
	return "OpenShiftSDN"
}

func versionAtLeast(v string, major, minor int) bool {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(strings.SplitN(parts[1], "-", 2)[0])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}
