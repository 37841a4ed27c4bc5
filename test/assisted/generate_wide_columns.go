package assisted

import (
	"crypto/md5" // #nosec G501 -- the same derivation as hostsSQL's md5() ids
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// The columns of a wide host (generate_wide.go says where each shape comes
// from). Each is compact JSON, as assisted-service marshals it.

func (h *wideHost) inventory() string {
	r, cpu, v := h.r, wideCPUs[h.cpuModel], wideVendors[h.vendor]
	var b strings.Builder
	b.Grow(16 << 10)
	bmc := fmt.Sprintf("10.%d.%d.%d", 200+h.cluster%50, r.IntN(256), 1+r.IntN(254))
	fmt.Fprintf(&b, `{"bmc_address":%q,"bmc_v6address":"::/0","boot":{"command_line":%q,"current_boot_mode":"uefi","pxe_interface":%q,"secure_boot_state":"Disabled"},`,
		bmc, "BOOT_IMAGE=(hd0,gpt3)/boot/ostree/rhcos-"+randHex(r, 64)+"/vmlinuz-5.14.0-427.el9_4.x86_64 rw ostree=/ostree/boot.1/rhcos/"+
			randHex(r, 64)+"/0 ignition.platform.id=metal console=tty0 console=ttyS0,115200n8 root=UUID="+randUUID(r)+" rw rootflags=prjquota boot=UUID="+randUUID(r),
		h.nics[0].name)
	fmt.Fprintf(&b, `"cpu":{"architecture":"x86_64","count":%d,"flags":%s,"frequency":%.3f,"model_name":%q},"disks":[`,
		h.cores, quotedList(cpu.flags), cpu.freq+float64(r.IntN(1000))/1000, cpu.model)
	for i, d := range h.disks {
		if i > 0 {
			b.WriteByte(',')
		}
		h.writeDisk(&b, i, d)
	}
	b.WriteString(`],"gpus":[`)
	if r.IntN(8) == 0 {
		for i := range 1 + r.IntN(2) {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"address":"0000:%02x:00.0","device_id":"20b5","name":"GA100 [A100 PCIe 80GB]","vendor":"NVIDIA Corporation","vendor_id":"10de"}`, 0x30+r.IntN(0x90))
		}
	}
	fmt.Fprintf(&b, `],"hostname":%q,"interfaces":[`, h.hostname)
	for i, n := range h.nics {
		if i > 0 {
			b.WriteByte(',')
		}
		v4, v6 := []string{}, []string{n.linkLocal + "/64"}
		if n.ipv4 != "" {
			v4 = append(v4, n.ipv4+"/24")
		}
		if n.ipv6 != "" {
			v6 = append([]string{n.ipv6 + "/64"}, v6...)
		}
		carrier := n.ipv4 != "" || r.IntN(2) == 0
		flags := `["up","broadcast","multicast"]`
		if !carrier {
			flags = `["broadcast","multicast"]`
		}
		fmt.Fprintf(&b, `{"biosdevname":"em%d","client_id":"","flags":%s,"has_carrier":%t,"ipv4_addresses":%s,"ipv6_addresses":%s,"mac_address":%q,"mtu":%d,"name":%q,"product":%q,"speed_mbps":%d,"type":"physical","vendor":%q}`,
			i+1, flags, carrier, quotedList(v4), quotedList(v6), n.mac, n.mtu, n.name, n.product, n.speed, n.vendor)
	}
	usable := h.memory - int64(1+r.IntN(4))<<30 - int64(r.IntN(1<<20))<<10
	fmt.Fprintf(&b, `],"memory":{"physical_bytes":%d,"physical_bytes_method":"dmidecode","usable_bytes":%d},"routes":[`, h.memory, usable)
	routes := []string{fmt.Sprintf(`{"destination":"0.0.0.0","family":2,"gateway":"192.168.%d.1","interface":%q,"metric":100}`, h.cluster%256, h.nics[0].name)}
	for _, n := range h.nics {
		if n.ipv4 != "" {
			net := n.ipv4[:strings.LastIndexByte(n.ipv4, '.')] + ".0"
			routes = append(routes, fmt.Sprintf(`{"destination":%q,"family":2,"interface":%q,"metric":%d}`, net, n.name, 100+len(routes)))
		}
		routes = append(routes, fmt.Sprintf(`{"destination":"fe80::","family":10,"interface":%q,"metric":1024}`, n.name))
	}
	routes = append(routes, fmt.Sprintf(`{"destination":"::","family":10,"gateway":"fe80::%x:%xff:fe%x:1","interface":%q,"metric":100}`,
		r.IntN(65536), r.IntN(256), r.IntN(256), h.nics[0].name))
	fmt.Fprintf(&b, `%s],"system_vendor":{"manufacturer":%q,"product_name":%q,"serial_number":%q,"virtual":false},"tpm_version":"2.0"}`,
		strings.Join(routes, ","), v.manufacturer, v.product, randAlnum(r, 7))
	return b.String()
}

// writeDisk writes one disk. The agent stopped collecting SMART data
// (assisted-installer-agent, src/inventory/disks.go), so "smart" is empty
// and, as omitempty, absent.
func (h *wideHost) writeDisk(b *strings.Builder, i int, d wideDisk) {
	r := h.r
	eligible := i == 0 || r.IntN(3) > 0
	reasons := "null"
	if !eligible {
		reasons = fmt.Sprintf(`["Disk has partition '%s1' mounted on '/var/lib/containers'"]`, d.name)
	}
	id := "/dev/disk/by-id/wwn-" + d.wwn
	if strings.HasPrefix(d.wwn, "eui.") {
		id = "/dev/disk/by-id/nvme-" + d.wwn
	}
	boot := ""
	if i == 0 {
		boot = `"bootable":true,`
	}
	fmt.Fprintf(b, `{%s"by_id":%q,"by_path":"/dev/disk/by-path/%s","drive_type":%q,"has_uuid":true,"hctl":"%d:0:%d:0","id":%q,`+
		`"installation_eligibility":{"eligible":%t,"not_eligible_reasons":%s},"model":%q,"name":%q,"path":"/dev/%s","serial":%q,"size_bytes":%d,"vendor":%q,"wwn":%q}`,
		boot, id, d.byPath, d.kind, r.IntN(4), i, id, eligible, reasons, d.model, d.name, d.name, d.serial, d.size, d.vendor, d.wwn)
}

// hostValidations are the host validations by category, with the message
// a passing one carries (%s: the host name).
var hostValidations = []struct{ category, id, ok string }{
	{"hardware", "has-inventory", "Valid inventory exists for the host"},
	{"hardware", "has-min-cpu-cores", "Sufficient CPU cores"},
	{"hardware", "has-min-memory", "Sufficient minimum RAM"},
	{"hardware", "has-min-valid-disks", "Sufficient disk capacity"},
	{"hardware", "has-cpu-cores-for-role", "Sufficient CPU cores for role %r"},
	{"hardware", "has-memory-for-role", "Sufficient RAM for role %r"},
	{"hardware", "hostname-unique", "Hostname %s is unique in cluster"},
	{"hardware", "hostname-valid", "Hostname %s is allowed"},
	{"hardware", "valid-platform-network-settings", "Platform %p is allowed"},
	{"hardware", "sufficient-installation-disk-speed", "Speed of installation disk is sufficient"},
	{"hardware", "compatible-with-cluster-platform", "Host is compatible with cluster platform baremetal"},
	{"hardware", "disk-encryption-requirements-satisfied", "Installation disk encryption is disabled"},
	{"hardware", "compatible-agent", "Host agent compatibility checking is disabled"},
	{"hardware", "no-skip-installation-disk", "No request to skip formatting of the installation disk"},
	{"hardware", "no-skip-missing-disk", "All disks that have skipped formatting are present in the host inventory"},
	{"hardware", "inventory-not-partially-truncated", "Inventory is not truncated"},
	{"hardware", "inventory-not-fully-truncated", "Inventory is not truncated"},
	{"network", "connected", "Host is connected"},
	{"network", "media-connected", "Media device is connected"},
	{"network", "machine-cidr-defined", "Machine Network CIDR is defined"},
	{"network", "belongs-to-machine-cidr", "Host belongs to all machine network CIDRs"},
	{"network", "ignition-downloadable", "validation is disabled for day-1 host"},
	{"network", "belongs-to-majority-group", "Host has connectivity to the majority of hosts in the cluster"},
	{"network", "ntp-synced", "Host NTP is synced"},
	{"network", "time-synced-between-host-and-service", "Host clock is synchronized with service"},
	{"network", "container-images-available", "All required container images were either pulled successfully or no attempt was made to pull them"},
	{"network", "sufficient-network-latency-requirement-for-role", "Network latency requirement has been satisfied."},
	{"network", "sufficient-packet-loss-requirement-for-role", "Packet loss requirement has been satisfied."},
	{"network", "has-default-route", "Host has been configured with at least one default route."},
	{"network", "api-domain-name-resolved-correctly", "Domain name resolution for the api.%d domain was successful or not required"},
	{"network", "api-int-domain-name-resolved-correctly", "Domain name resolution for the api-int.%d domain was successful or not required"},
	{"network", "apps-domain-name-resolved-correctly", "Domain name resolution for the *.apps.%d domain was successful or not required"},
	{"network", "release-domain-name-resolved-correctly", "Domain name resolution for the quay.io domain was successful or not required"},
	{"network", "dns-wildcard-not-configured", "DNS wildcard check was successful"},
	{"network", "non-overlapping-subnets", "Host subnets are not overlapping"},
	{"network", "no-ip-collisions-in-network", "No IP collisions were detected by host %s"},
	{"network", "no-iscsi-nic-belongs-to-machine-cidr", "Network interface connected to iSCSI disk does not belong to machine network CIDR"},
	{"network", "mtu-valid", "MTU is ok"},
}

func (h *wideHost) validations() string {
	r := h.r
	role := []string{"master", "worker", "auto-assign"}[h.g%3]
	repl := strings.NewReplacer("%s", h.hostname, "%r", role, "%p", wideVendors[h.vendor].product, "%d", h.domain)
	byCat := map[string][]string{}
	for _, v := range hostValidations {
		status, msg := "success", repl.Replace(v.ok)
		switch {
		case h.status == 3 && v.id == "has-memory-for-role":
			status, msg = "failure", fmt.Sprintf("Require at least 16.00 GiB RAM for role %s, found only %d.00 GiB", role, 8+r.IntN(8))
		case h.status == 4 && v.category == "network" && r.IntN(4) == 0:
			status, msg = "pending", "Missing inventory or machine network CIDR"
		case v.id == "sufficient-network-latency-requirement-for-role" && r.IntN(10) == 0:
			status, msg = "failure", fmt.Sprintf("Network latency requirement of less than or equals 100.00 ms was not met. Host has a latency of %.2f ms to host-%d.example.com", 100+float64(r.IntN(5000))/100, 1+r.IntN(h.g))
		}
		byCat[v.category] = append(byCat[v.category], fmt.Sprintf(`{"id":%q,"status":%q,"message":%q}`, v.id, status, msg))
	}
	for _, op := range wideOperDis {
		byCat["operators"] = append(byCat["operators"], fmt.Sprintf(`{"id":"%s-requirements-satisfied","status":"success","message":"%s is disabled"}`, op, op))
	}
	return fmt.Sprintf(`{"hardware":%s,"network":%s,"operators":%s}`, jsonList(byCat["hardware"]), jsonList(byCat["network"]), jsonList(byCat["operators"]))
}

// connectivity lists the other hosts of the cluster (at most 8), as this
// host's agent last checked them.
func (h *wideHost) connectivity() string {
	r := h.r
	var remotes []string
	for k := 0; k < h.clusterSize && len(remotes) < 8; k++ {
		if k == h.rank {
			continue
		}
		rg := h.cluster + k*h.clusters // the cluster's host of rank k
		rip := hostIPv4(h.cluster, k)
		mac := fmt.Sprintf("%s:%02x:%02x:%02x", wideVendors[(h.vendor+k)%len(wideVendors)].oui, r.IntN(256), r.IntN(256), r.IntN(256))
		l2 := fmt.Sprintf(`{"outgoing_ip_address":%q,"outgoing_nic":%q,"remote_ip_address":%q,"remote_mac":%q,"successful":true}`,
			h.nics[0].ipv4, h.nics[0].name, rip, mac)
		l3 := []string{fmt.Sprintf(`{"average_rtt_ms":%.3f,"outgoing_nic":%q,"packet_loss_percentage":0,"remote_ip_address":%q,"successful":true}`,
			0.05+float64(r.IntN(900))/1000, h.nics[0].name, rip)}
		mtu := []string{fmt.Sprintf(`{"mtu_successful":true,"outgoing_nic":%q,"remote_ip_address":%q}`, h.nics[0].name, rip)}
		v6 := eui64(fmt.Sprintf("2001:db8:%x::", h.cluster%65536), mac)
		l3 = append(l3, fmt.Sprintf(`{"average_rtt_ms":%.3f,"outgoing_nic":%q,"packet_loss_percentage":0,"remote_ip_address":%q,"successful":true}`,
			0.05+float64(r.IntN(900))/1000, h.nics[0].name, v6))
		mtu = append(mtu, fmt.Sprintf(`{"mtu_successful":true,"outgoing_nic":%q,"remote_ip_address":%q}`, h.nics[0].name, v6))
		remotes = append(remotes, fmt.Sprintf(`{"host_id":"%s","l2_connectivity":[%s],"l3_connectivity":%s,"mtu_report":%s}`,
			hostUUID(rg), l2, jsonList(l3), jsonList(mtu)))
	}
	return `{"remote_hosts":` + jsonList(remotes) + `}`
}

// hostUUID is hostsSQL's host id of host g: md5('host-' || g)::uuid.
func hostUUID(g int) string {
	x := md5hex("host-" + strconv.Itoa(g))
	return x[:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:]
}

func (h *wideHost) disksInfo() string {
	var parts []string
	for i, d := range h.disks {
		if i > 0 && h.r.IntN(2) == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf(`"/dev/disk/by-id/wwn-%s":{"disk_speed":{"speed_ms":%d,"tested":true},"path":"/dev/%s"}`, d.wwn, 1+h.r.IntN(15), d.name))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// freeAddresses: the addresses of the machine network that answered no
// ping, for hosts not yet bound to a cluster's install (one in four).
func (h *wideHost) freeAddresses() string {
	if h.g%4 != 0 {
		return ""
	}
	var free []string
	for a := 2; a < 255; a++ {
		if h.r.IntN(3) > 0 {
			free = append(free, fmt.Sprintf("192.168.%d.%d", h.cluster%256, a))
		}
	}
	return fmt.Sprintf(`[{"free_addresses":%s,"network":"192.168.%d.0/24"}]`, quotedList(free), h.cluster%256)
}

func (h *wideHost) ntpSources() string {
	r := h.r
	states := []string{"synced", "combined", "not_combined", "unreachable", "variable"}
	src := []string{fmt.Sprintf(`{"source_name":"clock%d.example.com","source_state":"synced"}`, h.cluster%7)}
	for range 1 + r.IntN(5) {
		src = append(src, fmt.Sprintf(`{"source_name":"%d.%d.%d.%d","source_state":%q}`, 10+r.IntN(200), r.IntN(256), r.IntN(256), 1+r.IntN(254), states[1+r.IntN(4)]))
	}
	return jsonList(src)
}

func (h *wideHost) imagesStatus() string {
	r := h.r
	images := []string{
		"quay.io/openshift-release-dev/ocp-release:4.1" + strconv.Itoa(h.cluster%8) + ".3-x86_64",
		"quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:" + md5hex("mcp"+strconv.Itoa(h.cluster%8)) + md5hex("mcp2"+strconv.Itoa(h.cluster%8)),
		"quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:" + md5hex("must"+strconv.Itoa(h.cluster%8)) + md5hex("must2"+strconv.Itoa(h.cluster%8)),
		"registry.redhat.io/rhai-tech-preview/assisted-installer-rhel8:v1.0.0-" + strconv.Itoa(300+h.cluster%8),
	}
	var parts []string
	for _, im := range images {
		size := 100e6 + float64(r.IntN(900e6))
		t := 1 + float64(r.IntN(60000))/1000
		parts = append(parts, fmt.Sprintf(`%q:{"download_rate":%.6f,"name":%q,"result":"success","size_bytes":%.0f,"time":%.6f}`, im, size/t/1e6, im, size, t))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func (h *wideHost) domainResolutions() string {
	r := h.r
	res := []string{
		fmt.Sprintf(`{"cnames":[],"domain_name":"api.%s","ipv4_addresses":["192.168.%d.5"],"ipv6_addresses":[]}`, h.domain, h.cluster%256),
		fmt.Sprintf(`{"cnames":[],"domain_name":"api-int.%s","ipv4_addresses":["192.168.%d.5"],"ipv6_addresses":[]}`, h.domain, h.cluster%256),
		fmt.Sprintf(`{"cnames":[],"domain_name":"console-openshift-console.apps.%s","ipv4_addresses":["192.168.%d.7"],"ipv6_addresses":[]}`, h.domain, h.cluster%256),
		fmt.Sprintf(`{"cnames":[],"domain_name":"validateNoWildcardDNS.%s","ipv4_addresses":[],"ipv6_addresses":[]}`, h.domain),
		fmt.Sprintf(`{"cnames":[],"domain_name":"validateNoWildcardDNS.%s.","ipv4_addresses":[],"ipv6_addresses":[]}`, h.domain),
	}
	var quay []string
	for range 2 + r.IntN(4) {
		quay = append(quay, fmt.Sprintf("%d.%d.%d.%d", 3+r.IntN(50), r.IntN(256), r.IntN(256), 1+r.IntN(254)))
	}
	res = append(res, fmt.Sprintf(`{"cnames":["quay.io.cdn.example.net."],"domain_name":"quay.io","ipv4_addresses":%s,"ipv6_addresses":["2600:1f18:%x:%x::%x"]}`,
		quotedList(quay), r.IntN(65536), r.IntN(65536), r.IntN(65536)))
	return `{"resolutions":` + jsonList(res) + `}`
}

func (h *wideHost) apiVIPConnectivity() string {
	if h.status != 5 { // added-to-existing-cluster
		return ""
	}
	return fmt.Sprintf(`{"is_success":true,"url":"http://api-int.%s:22624/config/worker"}`, h.domain)
}

func md5hex(s string) string {
	sum := md5.Sum([]byte(s)) // #nosec G401
	return hex.EncodeToString(sum[:])
}
