package assisted

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Wide hosts: the JSON and text columns of a `hosts` row as a real
// assisted-service writes them, several KB each, different for every host
// (serials, MACs, WWNs, addresses, timings), so that they compress about as
// little as real ones do. The shapes follow openshift/assisted-service:
//
//   - inventory: models/inventory.go and the models it nests (boot.go,
//     cpu.go, disk.go, interface.go, route.go, memory.go, system_vendor.go,
//     gpu.go); the agent (openshift/assisted-installer-agent,
//     src/inventory/*.go) fills it from the host's hardware, disks without
//     SMART data since it stopped collecting it.
//   - validations_info: internal/host/validator.go and validation_id.go,
//     the host validations grouped by category (hardware, network,
//     operators), each {id, status, message}; models/host_validation_id.go
//     lists some 70 ids.
//   - connectivity: models/connectivity_report.go, connectivity_remote_host.go,
//     l2_connectivity.go, l3_connectivity.go and mtu_report.go: one entry
//     per other host of the cluster.
//   - domain_name_resolutions: models/domain_resolution_response.go.
//   - images_status: models/container_image_availability.go, a map by image.
//   - ntp_sources: models/ntp_source.go; free_addresses:
//     models/free_network_addresses.go; disks_info: models/disk_info.go.
//
// Field names and key order are those of the models (go-swagger writes the
// fields in alphabetical order); the values are made up here, from a
// generator seeded by the host's number, so the same scale always gives the
// same rows. Nothing here comes from a real host.

// wideColumns are the hosts columns that wideHost fills, in its order.
var wideColumns = []string{"inventory", "validations_info", "connectivity", "disks_info", "free_addresses",
	"ntp_sources", "images_status", "domain_name_resolutions", "api_vip_connectivity"}

// loadWideHosts fills the temporary table wide_hosts (g, then wideColumns)
// with the wide columns of hosts 1 to s.Hosts; hostsSQL joins it on g.
func loadWideHosts(ctx context.Context, tx pgx.Tx, s Scale) error {
	cols := strings.Join(wideColumns, " text, ") + " text"
	if _, err := tx.Exec(ctx, "CREATE TEMPORARY TABLE wide_hosts (g integer, "+cols+") ON COMMIT DROP"); err != nil {
		return err
	}
	src := &wideSource{s: s}
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"wide_hosts"}, append([]string{"g"}, wideColumns...), src)
	return err
}

// wideSource is the rows of wide_hosts, made as COPY asks for them.
type wideSource struct {
	s   Scale
	g   int
	row []any
}

func (w *wideSource) Next() bool {
	if w.g >= w.s.Hosts {
		return false
	}
	w.g++
	h := newWideHost(w.g, w.s)
	w.row = append(w.row[:0], int32(w.g), h.inventory(), h.validations(), h.connectivity(), h.disksInfo(),
		h.freeAddresses(), h.ntpSources(), h.imagesStatus(), h.domainResolutions(), h.apiVIPConnectivity())
	return true
}

func (w *wideSource) Values() ([]any, error) { return w.row, nil }
func (w *wideSource) Err() error             { return nil }

// wideHost is one host's hardware and situation, from which its columns
// are written.
type wideHost struct {
	g, cluster, rank, clusterSize int
	clusters                      int
	r                             *rand.Rand
	hostname, domain, clusterName string
	nics                          []wideNIC
	disks                         []wideDisk
	cpuModel                      int
	cores                         int
	memory                        int64
	vendor                        int
	status                        int // index into hostStatuses, as hostsSQL picks it
}

type wideNIC struct {
	name, mac, ipv4, ipv6, linkLocal string
	speed, mtu                       int
	vendor, product                  string
}

type wideDisk struct {
	name, serial, wwn, model, vendor, kind, byPath string
	size                                           int64
}

// Made-up hardware catalogues, in the spirit of what real hosts report.
var (
	wideCPUs = []struct {
		model string
		freq  float64
		flags []string
	}{
		{"Intel(R) Xeon(R) Gold 6330 CPU @ 2.00GHz", 2000, cpuFlags},
		{"Intel(R) Xeon(R) Silver 4314 CPU @ 2.40GHz", 2400, cpuFlags[:len(cpuFlags)-6]},
		{"AMD EPYC 7543 32-Core Processor", 2794.748, strings.Fields(`fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca
cmov pat pse36 clflush mmx fxsr sse sse2 ht syscall nx mmxext fxsr_opt pdpe1gb rdtscp lm constant_tsc rep_good nopl
nonstop_tsc cpuid extd_apicid aperfmperf rapl pni pclmulqdq monitor ssse3 fma cx16 pcid sse4_1 sse4_2 movbe popcnt aes
xsave avx f16c rdrand lahf_lm cmp_legacy svm extapic cr8_legacy abm sse4a misalignsse 3dnowprefetch osvw ibs skinit wdt
tce topoext perfctr_core perfctr_nb bpext perfctr_llc mwaitx cpb cat_l3 cdp_l3 invpcid_single hw_pstate ssbd mba ibrs
ibpb stibp vmmcall fsgsbase bmi1 avx2 smep bmi2 invpcid cqm rdt_a rdseed adx smap clflushopt clwb sha_ni xsaveopt xsavec
xgetbv1 xsaves cqm_llc cqm_occup_llc cqm_mbm_total cqm_mbm_local clzero irperf xsaveerptr rdpru wbnoinvd amd_ppin brs
arat npt lbrv svm_lock nrip_save tsc_scale vmcb_clean flushbyasid decodeassists pausefilter pfthreshold v_vmsave_vmload
vgif v_spec_ctrl umip pku ospke vaes vpclmulqdq rdpid overflow_recov succor smca fsrm`)},
	}
	wideVendors = []struct{ manufacturer, product, nicVendor, nicProduct, oui string }{
		{"Dell Inc.", "PowerEdge R650", "0x14e4", "0x16d7", "b0:7b:25"},
		{"HPE", "ProLiant DL360 Gen10 Plus", "0x8086", "0x1593", "94:40:c9"},
		{"Supermicro", "SYS-1029U-TRT", "0x8086", "0x1572", "3c:ec:ef"},
		{"Lenovo", "ThinkSystem SR650 V2", "0x15b3", "0x1017", "b8:ce:f6"},
	}
	wideDiskModels = []struct {
		model, vendor, kind string
		size                int64
	}{
		{"ST2000NM003A-2J9101", "ATA", "HDD", 2000398934016},
		{"MZ7LH960HAJR0D3", "ATA", "SSD", 960197124096},
		{"Dell Ent NVMe v2 AGN RI U.2 1.92TB", "", "SSD", 1920383410176},
		{"PERC H755 Front", "DELL", "HDD", 479559942144},
		{"SAMSUNG MZQL23T8HCLS-00A07", "", "SSD", 3840755982336},
	}
	wideMemory  = []int64{68719476736, 137438953472, 274877906944, 549755813888}
	wideCores   = []int{16, 24, 32, 48, 64, 96, 128}
	wideOperDis = []string{"amd-gpu", "authorino", "cluster-observability", "cnv", "fence-agents-remediation", "kmm",
		"kube-descheduler", "loki", "lso", "lvm", "mce", "metallb", "mtv", "nmstate", "node-feature-discovery",
		"node-healthcheck", "node-maintenance", "numa-resources", "nvidia-gpu", "oadp", "ocs", "odf", "openshift-ai",
		"openshift-logging", "osc", "pipelines", "self-node-remediation", "serverless", "servicemesh"}
)

func newWideHost(g int, s Scale) *wideHost {
	h := &wideHost{g: g, cluster: 1 + (g-1)%s.Clusters, r: rand.New(rand.NewPCG(uint64(g), 0x5769646548)), status: g % 6, clusters: s.Clusters}
	h.rank = (g - 1) / s.Clusters
	h.clusterSize = (s.Hosts + s.Clusters - h.cluster) / s.Clusters
	h.clusterName = "cluster-" + strconv.Itoa(h.cluster)
	h.domain = h.clusterName + ".example" + strconv.Itoa(h.cluster%5) + ".com"
	h.hostname = "host-" + strconv.Itoa(g) + ".example.com"
	r := h.r
	h.vendor = r.IntN(len(wideVendors))
	h.cpuModel = r.IntN(len(wideCPUs))
	h.cores = wideCores[r.IntN(len(wideCores))]
	h.memory = wideMemory[r.IntN(len(wideMemory))]
	v := wideVendors[h.vendor]
	names := []string{"eno1", "eno2", "ens1f0", "ens1f1", "ens2f0", "ens2f1"}
	for i := range 2 + r.IntN(4) {
		mac := fmt.Sprintf("%s:%02x:%02x:%02x", v.oui, r.IntN(256), r.IntN(256), r.IntN(256))
		n := wideNIC{name: names[i], mac: mac, mtu: 1500, speed: []int{1000, 10000, 25000, 100000}[r.IntN(4)],
			vendor: v.nicVendor, product: v.nicProduct, linkLocal: eui64("fe80::", mac)}
		if i == 0 {
			n.ipv4 = hostIPv4(h.cluster, h.rank)
			n.ipv6 = eui64(fmt.Sprintf("2001:db8:%x::", h.cluster%65536), mac)
		} else if r.IntN(3) == 0 {
			n.ipv4 = fmt.Sprintf("10.%d.%d.%d", 10+i, r.IntN(256), 1+r.IntN(254))
			n.mtu = 9000
		}
		h.nics = append(h.nics, n)
	}
	for i := range 2 + r.IntN(3) + r.IntN(3)*r.IntN(5) {
		m := wideDiskModels[r.IntN(len(wideDiskModels))]
		d := wideDisk{name: "sd" + string(rune('a'+i)), model: m.model, vendor: m.vendor, kind: m.kind, size: m.size,
			serial: randAlnum(r, 8+r.IntN(10)), wwn: "0x5" + randHex(r, 15)}
		d.byPath = fmt.Sprintf("pci-0000:%02x:00.0-scsi-0:2:%d:0", 0x18+r.IntN(0x60), i)
		if m.vendor == "" {
			d.name = fmt.Sprintf("nvme%dn1", i)
			d.byPath = fmt.Sprintf("pci-0000:%02x:00.0-nvme-1", 0x60+r.IntN(0x40))
			d.wwn = "eui." + randHex(r, 32)
		}
		h.disks = append(h.disks, d)
	}
	return h
}

// hostIPv4 is the machine-network address of a cluster's rank-th host
// (clusters' machine networks are 192.168.<cluster % 256>.0/24).
func hostIPv4(cluster, rank int) string {
	return fmt.Sprintf("192.168.%d.%d", cluster%256, 10+rank%240)
}

// eui64 is the SLAAC address of mac in prefix (a "x::" string).
func eui64(prefix, mac string) string {
	b := make([]byte, 0, 6)
	for _, p := range strings.Split(mac, ":") {
		v, _ := strconv.ParseUint(p, 16, 8)
		b = append(b, byte(v))
	}
	return fmt.Sprintf("%s%x:%xff:fe%x:%x", prefix, uint16(b[0]^2)<<8|uint16(b[1]), b[2], b[3], uint16(b[4])<<8|uint16(b[5]))
}

func randHex(r *rand.Rand, n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[r.IntN(16)]
	}
	return string(b)
}

func randAlnum(r *rand.Rand, n int) string {
	const chars = "0123456789ABCDEFGHJKLMNPQRSTUVWXYZ"
	b := make([]byte, n)
	for i := range b {
		b[i] = chars[r.IntN(len(chars))]
	}
	return string(b)
}

func randUUID(r *rand.Rand) string {
	x := randHex(r, 32)
	return x[:8] + "-" + x[8:12] + "-4" + x[13:16] + "-a" + x[17:20] + "-" + x[20:]
}

// jsonList joins items as a JSON array.
func jsonList(items []string) string { return "[" + strings.Join(items, ",") + "]" }

// quoted is s as a JSON string (the values here need no escapes but quotes).
func quoted(s string) string { return strconv.Quote(s) }

func quotedList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = quoted(s)
	}
	return jsonList(q)
}
