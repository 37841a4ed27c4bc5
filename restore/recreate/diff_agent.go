package recreate

import (
	"encoding/json"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// agent makes the Agent controller's comparisons (the binding check in
// Reconcile and updateIfNeeded) for one Agent.
func (d *differ) agent(o *unstructured.Unstructured) error {
	ns := o.GetNamespace()
	h := d.rows.hostByKubeKey(ns, o.GetName())
	if h == nil {
		d.note(o, "(object)", "hosts.kube_key_namespace", o.GetName(), nil,
			"no host row has this ID and namespace: the controller would restore a minimal host from the Agent")
		return nil
	}
	d.markSeen(&d.seen.hosts, h.ID+"/"+h.InfraEnvID)
	d.binding(o, h)

	if args := getString(o, "spec.installerArgs"); args != h.InstallerArgs {
		// The service stores the marshalled list, so the same list written
		// with other spacing is no update.
		var list []string
		if args != "" {
			if err := json.Unmarshal([]byte(args), &list); err != nil {
				d.note(o, "spec.installerArgs", "hosts.installer_args", args, h.InstallerArgs, "not a JSON list: the controller fails")
				list = nil
			}
		}
		if list == nil {
			list = []string{}
		}
		if b, _ := json.Marshal(list); string(b) != h.InstallerArgs {
			d.add(o, "spec.installerArgs", "hosts.installer_args", args, h.InstallerArgs)
		}
	}
	d.str(o, "spec.ignitionConfigOverrides", "hosts.ignition_config_overrides", getString(o, "spec.ignitionConfigOverrides"), h.IgnitionConfigOverrides)
	d.stringMaps(o, "spec.nodeLabels", "hosts.node_labels", h.NodeLabels, true)
	if v := getString(o, "spec.hostname"); v != "" {
		d.str(o, "spec.hostname", "hosts.requested_hostname", v, h.RequestedHostname)
	}
	if v := getString(o, "spec.machineConfigPool"); v != "" {
		d.str(o, "spec.machineConfigPool", "hosts.machine_config_pool_name", v, h.MachineConfigPoolName)
	}
	if v := getString(o, "spec.role"); v != "" {
		d.str(o, "spec.role", "hosts.role", v, h.Role)
	}
	d.installationDisk(o, h)
	d.ignitionToken(o, h)
	if get(o, "spec.ignitionEndpointHTTPHeaders") != nil {
		d.stringMaps(o, "spec.ignitionEndpointHTTPHeaders", "hosts.ignition_endpoint_http_headers", h.IgnitionEndpointHTTPHeaders, false)
	} else if h.IgnitionEndpointHTTPHeaders != "" {
		d.add(o, "spec.ignitionEndpointHTTPHeaders", "hosts.ignition_endpoint_http_headers", nil, h.IgnitionEndpointHTTPHeaders)
	}
	if approved, _ := getBool(o, "spec.approved"); approved != h.Approved {
		d.add(o, "spec.approved", "hosts.approved", approved, h.Approved)
	}
	return nil
}

// binding checks spec.clusterDeploymentName names the cluster the host is
// bound to: a missing binding unbinds the host (and may reclaim the node), a
// different one unbinds and rebinds it.
func (d *differ) binding(o *unstructured.Unstructured, h *Host) {
	ref := getMap(o, "spec.clusterDeploymentName")
	var got string
	if ref != nil {
		ns, _ := ref["namespace"].(string)
		name, _ := ref["name"].(string)
		got = ns + "/" + name
		c := d.rows.clusterByKubeKey(ns, name)
		if c != nil && c.ID == h.ClusterID {
			return
		}
	}
	if ref == nil && h.ClusterID == "" {
		return
	}
	want := ""
	if c := d.rows.cluster(h.ClusterID); c != nil {
		want = c.KubeKeyNamespace + "/" + c.KubeKeyName
	}
	note := "the controller would unbind the host from its cluster (an installed node may be reclaimed)"
	if ref != nil && h.ClusterID == "" {
		note = "the controller would bind the host to this cluster"
	}
	d.note(o, "spec.clusterDeploymentName", "hosts.cluster_id", nullIfEmpty(got), nullIfEmpty(want), note)
}

// stringMaps compares a map field with a JSON object column; an absent map
// equals an empty column when emptyIsAbsent.
func (d *differ) stringMaps(o *unstructured.Unstructured, field, column, db string, emptyIsAbsent bool) {
	spec := map[string]string{}
	for k, v := range getMap(o, field) {
		spec[k], _ = v.(string)
	}
	stored := map[string]string{}
	if db != "" && json.Unmarshal([]byte(db), &stored) != nil {
		d.add(o, field, column, spec, db)
		return
	}
	if !reflect.DeepEqual(spec, stored) && (len(spec) > 0 || len(stored) > 0 || !emptyIsAbsent) {
		d.add(o, field, column, spec, stored)
	}
}

// installationDisk is the controller's updateInstallDisk: the desired disk
// matches when it names the host's current installation disk (found in the
// inventory by ID, by-path or device name) by any of those three.
func (d *differ) installationDisk(o *unstructured.Unstructured, h *Host) {
	field, want := "spec.installation_disk_id", getString(o, "spec.installation_disk_id")
	if p := getString(o, "spec.installation_disk_path"); p != "" {
		field, want = "spec.installation_disk_path", p
	}
	if want == "" {
		return
	}
	current := h.InstallationDiskID
	if current == "" {
		current = h.InstallationDiskPath
	}
	if current == "" {
		d.add(o, field, "hosts.installation_disk_id", want, nil)
		return
	}
	names := func(disk Disk) []string { return []string{disk.ID, disk.ByPath, "/dev/" + disk.Name} }
	for _, disk := range h.Disks {
		for _, n := range names(disk) {
			if n != current {
				continue
			}
			for _, w := range names(disk) {
				if w == want {
					return
				}
			}
			d.add(o, field, "hosts.installation_disk_id", want, current)
			return
		}
	}
	d.note(o, field, "hosts.inventory", want, current, "the installation disk is not in the host's inventory: the controller fails")
}

func (d *differ) ignitionToken(o *unstructured.Unstructured, h *Host) {
	ref := getMap(o, "spec.ignitionEndpointTokenReference")
	if ref == nil {
		if h.IgnitionEndpointToken != "" {
			d.add(o, "spec.ignitionEndpointTokenReference", "hosts.ignition_endpoint_token", nil, Redacted)
		}
		return
	}
	ns, _ := ref["namespace"].(string)
	name, _ := ref["name"].(string)
	s := d.lookup(kindSecret, ns, name)
	if s == nil {
		d.note(o, "spec.ignitionEndpointTokenReference", "hosts.ignition_endpoint_token", name, redact(h.IgnitionEndpointToken), "the referenced Secret is missing")
		return
	}
	token, _ := secretData(s, ignitionTokenKey)
	d.secret(o, "spec.ignitionEndpointTokenReference("+ignitionTokenKey+")", "hosts.ignition_endpoint_token", token, h.IgnitionEndpointToken)
}
