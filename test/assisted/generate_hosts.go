package assisted

import (
	"fmt"
	"strings"
)

// cpuFlags is the flag list of a real x86_64 host inventory.
var cpuFlags = strings.Fields(`fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse
sse2 ss syscall nx pdpe1gb rdtscp lm constant_tsc arch_perfmon rep_good nopl xtopology cpuid tsc_known_freq pni pclmulqdq
vmx ssse3 fma cx16 pdcm pcid sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand hypervisor
lahf_lm abm 3dnowprefetch cpuid_fault invpcid_single ssbd ibrs ibpb stibp ibrs_enhanced tpr_shadow vnmi flexpriority ept
vpid ept_ad fsgsbase tsc_adjust bmi1 hle avx2 smep bmi2 erms invpcid rtm mpx avx512f avx512dq rdseed adx smap clflushopt
clwb avx512cd avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves arat umip pku ospke avx512_vnni md_clear arch_capabilities`)

// inventoryHead is the fixed start of an inventory; %1$s is the host number.
func inventoryHead() string {
	return `{"bmc_address":"0.0.0.0","bmc_v6address":"::/0","boot":{"current_boot_mode":"uefi","pxe_interface":""},` +
		`"cpu":{"architecture":"x86_64","count":16,"flags":["` + strings.Join(cpuFlags, `","`) + `"],` +
		`"frequency":2095.076,"model_name":"Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz"},"disks":[`
}

// diskJSON is one disk; %1$s host number, %2$s disk number, %3$s a hex id.
const diskJSON = `{"by_id":"/dev/disk/by-id/wwn-0x%3$s","by_path":"/dev/disk/by-path/pci-0000:00:0%2$s.0-scsi-0:0:0:0",` +
	`"drive_type":"HDD","has_uuid":true,"hctl":"0:0:%2$s:0","id":"/dev/disk/by-id/wwn-0x%3$s",` +
	`"installation_eligibility":{"eligible":true,"not_eligible_reasons":null},"model":"QEMU HARDDISK","name":"sd%2$s",` +
	`"path":"/dev/sd%2$s","serial":"drive-scsi0-0-0-%2$s-%1$s","size_bytes":128849018880,` +
	`"smart":"{\"json_format_version\":[1,0],\"smartctl\":{\"version\":[7,1],\"exit_status\":0},\"device\":{\"name\":\"/dev/sd%2$s\",\"type\":\"scsi\"}}",` +
	`"vendor":"QEMU","wwn":"0x%3$s"}`

// inventoryTail closes the inventory: interfaces, memory, routes, vendor.
// %1$s host number, %2$s MAC suffix, %3$s IPv4 third octet, %4$s serial.
const inventoryTail = `],"gpus":[],"hostname":"host-%1$s.example.com","interfaces":[{"flags":["up","broadcast","multicast"],` +
	`"has_carrier":true,"ipv4_addresses":["192.168.%3$s.%5$s/24"],"ipv6_addresses":["fe80::5054:ff:fe%2$s/64"],` +
	`"mac_address":"52:54:00:%2$s","mtu":1500,"name":"enp1s0","product":"0x0001","speed_mbps":-1,"type":"physical","vendor":"0x1af4"},` +
	`{"flags":["up","broadcast","multicast"],"has_carrier":true,"ipv4_addresses":[],"ipv6_addresses":["2001:db8::%5$s/64"],` +
	`"mac_address":"52:54:01:%2$s","mtu":9000,"name":"enp2s0","product":"0x0001","speed_mbps":25000,"type":"physical","vendor":"0x1af4"}],` +
	`"memory":{"physical_bytes":34359738368,"physical_bytes_method":"dmidecode","usable_bytes":33675792384},` +
	`"routes":[{"destination":"0.0.0.0","family":2,"gateway":"192.168.%3$s.1","interface":"enp1s0","metric":100}],` +
	`"system_vendor":{"manufacturer":"Red Hat","product_name":"KVM","serial_number":"%4$s","virtual":true},"tpm_version":"none"}`

// hostsSQL inserts $1 hosts spread over $2 clusters: with s.Wide, their
// wide columns from wide_hosts (loadWideHosts), else each with an inventory
// of about s.InventoryBytes (narrowColumns).
func hostsSQL(s Scale) string {
	wide, apiVIP, from := narrowColumns(s.InventoryBytes)+",", "''", ""
	if s.Wide {
		wide = "w." + strings.Join(wideColumns[:len(wideColumns)-1], ", w.") + ","
		apiVIP, from = "w.api_vip_connectivity", " JOIN wide_hosts w USING (g)"
	}
	return fmt.Sprintf(`INSERT INTO hosts (id, infra_env_id, cluster_id, status, status_info, status_updated_at, role, suggested_role,
    bootstrap, inventory, validations_info, connectivity, disks_info, free_addresses, ntp_sources, images_status,
    domain_name_resolutions, created_at, updated_at, deleted_at, checked_in_at, registered_at, stage_started_at, stage_updated_at,
    progress_current_stage, progress_installation_percentage, progress_progress_info, progress_stage_started_at,
    requested_hostname, installation_disk_id, installation_disk_path, installer_args, installer_version, discovery_agent_version,
    kube_key_namespace, approved, ignition_endpoint_token, ignition_endpoint_token_set, logs_info, kind, href, user_name, "timestamp",
    node_labels, api_vip_connectivity, tang_connectivity, media_status, machine_config_pool_name, skip_formatting_disks,
    disks_to_be_formatted, connection_timed_out, ignition_config_overrides)
SELECT `+id(hostID, "g")+`, `+id(infraEnvID, "c")+`, `+id(clusterID, "c")+`,
    (ARRAY['known', 'installed', 'installing-in-progress', 'insufficient', 'disconnected', 'added-to-existing-cluster'])[1 + g %% 6],
    CASE g %% 6 WHEN 0 THEN 'Host is ready to be installed' WHEN 3 THEN E'Host cannot be installed due to following failing validation(s): Require at least 16.00 GiB RAM\t(detected 8.00 GiB)' ELSE '' END,
    ts + interval '20 minutes', (ARRAY['master', 'worker', 'auto-assign'])[1 + g %% 3], (ARRAY['master', 'worker'])[1 + g %% 2],
    g %% 50 = 1,
%s
    ts, ts + interval '30 minutes', CASE WHEN g %% 23 = 0 THEN ts + interval '1 day' END, ts + interval '29 minutes', ts + interval '1 minute',
    ts + interval '25 minutes', ts + interval '26 minutes', (ARRAY['Starting installation', 'Writing image to disk', 'Rebooting', 'Done', ''])[1 + g %% 5],
    (g * 7) %% 101, CASE WHEN g %% 4 = 0 THEN '42%%' END, ts + interval '25 minutes',
    CASE g %% 3 WHEN 0 THEN NULL WHEN 1 THEN '' ELSE 'master-' || g END,
    '/dev/disk/by-id/wwn-0x' || md5(g || '-1'), '/dev/sda', CASE WHEN g %% 9 = 0 THEN '["--append-karg","ip=dhcp"]' END,
    'quay.io/edge-infrastructure/assisted-installer:latest', 'quay.io/edge-infrastructure/assisted-installer-agent:latest',
    CASE WHEN g %% 2 = 0 THEN 'ns-' || (c %% 9) ELSE '' END, g %% 3 = 0,
    CASE WHEN g %% 8 = 0 THEN md5('token' || g) END, g %% 8 = 0, '', 'Host', '/api/assisted-install/v2/infra-envs/' || `+id(infraEnvID, "c")+` || '/hosts/' || `+id(hostID, "g")+`,
    'admin', 1735689600 + g, CASE WHEN g %% 10 = 0 THEN '{"node-role.kubernetes.io/infra":""}' END,
    %s, '', CASE WHEN g %% 11 = 0 THEN 'disconnected' END, '', '', '', false, NULL
FROM (SELECT g, 1 + (g - 1) %% $2 AS c, timestamptz '2025-01-01 01:00:00+00' + g * interval '7 minutes 3.5 seconds' AS ts
      FROM generate_series(1, $1) g) s%s`,
		wide, apiVIP, from)
}

// narrowColumns are the expressions of hostsSQL's wide columns for hosts of
// the Bench kind: an inventory of about inventoryBytes that differs between
// hosts in a few values, the other columns short and alike.
func narrowColumns(inventoryBytes int) string {
	disks := max(1, (inventoryBytes-2300)/620)
	return fmt.Sprintf(`    format(%s, g) || (SELECT string_agg(format(%s, g, d, md5(g || '-' || d)), ',') FROM generate_series(1, %d) d)
      || format(%s, g, lpad(to_hex((g / 256) %% 256), 2, '0') || ':' || lpad(to_hex(g %% 256), 2, '0'), g %% 256, md5('sn' || g), 1 + g %% 250),
    '{"hardware":[{"id":"has-inventory","status":"success","message":"Valid inventory exists for the host"},{"id":"has-min-cpu-cores","status":"success","message":"Sufficient CPU cores"},{"id":"has-min-memory","status":"success","message":"Sufficient minimum RAM"}],"network":[{"id":"connected","status":"success","message":"Host is connected"},{"id":"ntp-synced","status":"success","message":"Host NTP is synced"}]}',
    '{"remote_hosts":[{"host_id":"' || `+id(hostID, "(g + 1)")+` || '","l2_connectivity":[{"outgoing_ip_address":"192.168.1.' || (g %% 250) || '","remote_mac":"52:54:00:00:00:01","successful":true}],"l3_connectivity":[{"average_rtt_ms":0.2,"packet_loss_percentage":0,"remote_ip_address":"192.168.1.1","successful":true}]}]}',
    CASE WHEN g %% 2 = 0 THEN '{"/dev/disk/by-id/wwn-0x1":{"disk_speed":{"speed_ms":5,"tested":true},"path":"/dev/sda"}}' END,
    CASE WHEN g %% 5 = 0 THEN '[{"network":"192.168.1.0/24","free_addresses":["192.168.1.20","192.168.1.21"]}]' ELSE '' END,
    '[{"source_name":"clock.example.com","source_state":"synced"}]', '{"quay.io/openshift/image":{"download_rate":100.5,"name":"quay.io/openshift/image","result":"success","size_bytes":1000000,"time":1.2}}',
    '{"resolutions":[{"domain_name":"api.cluster.example.com","ipv4_addresses":["192.168.1.5"],"ipv6_addresses":[]}]}'`,
		literal(inventoryHead()), literal(diskJSON), disks, literal(inventoryTail))
}

// eventsSQL inserts $1 events over $2 clusters and $3 hosts; ids come from
// events_id_seq, as assisted-service's own inserts do.
var eventsSQL = `INSERT INTO events (created_at, updated_at, deleted_at, category, cluster_id, host_id, infra_env_id, event_time,
    message, name, props, request_id, severity)
SELECT ts, ts, CASE WHEN g % 97 = 0 THEN ts + interval '3 days' END, CASE WHEN g % 10 = 0 THEN 'metrics' ELSE 'user' END,
    ` + id(clusterID, "c") + `, CASE WHEN g % 4 <> 0 THEN ` + id(hostID, "h") + ` END, ` + id(infraEnvID, "c") + `, ts,
    CASE g % 8
      WHEN 0 THEN 'Host host-' || h || '.example.com: updated status from discovering to known (Host is ready to be installed)'
      WHEN 1 THEN 'Host host-' || h || '.example.com: validation ''ntp-synced'' is now fixed'
      WHEN 2 THEN 'Updated status of the cluster to installing'
      WHEN 3 THEN 'Host host-' || h || E'.example.com: reached installation stage Writing image to disk: 42%\t(sda)'
      WHEN 4 THEN 'Cluster validation ''api-vips-valid'' that used to succeed is now failing'
      WHEN 5 THEN 'Successfully registered host host-' || h || ' with id ' || ` + id(hostID, "h") + `
      WHEN 6 THEN 'Host host-' || h || E': failed to download image "quay.io/x/y:z" \\ retrying'
      ELSE '' END,
    (ARRAY['host_status_updated', 'host_validation_fixed', 'cluster_status_updated', 'host_install_progress_updated',
           'cluster_validation_failed', 'host_registration_succeeded', 'image_download_failed', 'generic'])[1 + g % 8],
    CASE WHEN g % 10 = 0 THEN '{"host_id":"' || ` + id(hostID, "h") + ` || '","duration_ms":' || (g % 1000) || '}' WHEN g % 3 = 0 THEN '' END,
    md5('req-' || (g / 5))::uuid::text,
    (ARRAY['info', 'info', 'info', 'info', 'warning', 'error', 'info', 'critical'])[1 + g % 8]
FROM (SELECT g, h, 1 + (h - 1) % $2 AS c, timestamptz '2025-01-01 02:00:00+00' + g * interval '250 milliseconds' AS ts
      FROM (SELECT g, 1 + ((g::bigint * 7919) % $3)::int AS h FROM generate_series(1, $1) g) x) s`

// literal quotes s as a SQL string constant (standard_conforming_strings on).
func literal(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
