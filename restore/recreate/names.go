package recreate

import (
	"strings"
)

// KubeKeys is the mapping from rows to CR names that restore/kubekeys writes
// into the database before any CR exists on cluster 0; the controllers find
// rows only by these keys, and the names here are the names of the CRs Build
// returns.
type KubeKeys struct {
	Clusters  []ClusterKey  `json:"clusters"`
	InfraEnvs []InfraEnvKey `json:"infraEnvs"`
	Hosts     []HostKey     `json:"hosts"`
}

// ClusterKey sets clusters.kube_key_name and kube_key_namespace of row ID to
// the ClusterDeployment's name and namespace.
type ClusterKey struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

// InfraEnvKey sets infra_envs.name and kube_key_namespace of row ID to the
// InfraEnv's name and namespace (the controller looks infra-envs up by name).
type InfraEnvKey struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

// HostKey sets hosts.kube_key_namespace of row (ID, InfraEnvID); the Agent is
// named after the host ID.
type HostKey struct {
	ID         string `json:"id"`
	InfraEnvID string `json:"infraEnvID"`
	Namespace  string `json:"namespace"`
}

// Apply writes the keys into rows in memory, as restore/kubekeys writes them
// into the database, so Diff can find rows by kube key like the controllers.
func (k KubeKeys) Apply(rows *Rows) {
	for _, ck := range k.Clusters {
		if c := rows.cluster(ck.ID); c != nil {
			c.KubeKeyName, c.KubeKeyNamespace = ck.Name, ck.Namespace
		}
	}
	for _, ik := range k.InfraEnvs {
		if ie := rows.infraEnv(ik.ID); ie != nil {
			ie.Name, ie.KubeKeyNamespace = ik.Name, ik.Namespace
		}
	}
	for _, hk := range k.Hosts {
		for _, h := range rows.Hosts {
			if h.ID == hk.ID && h.InfraEnvID == hk.InfraEnvID {
				h.KubeKeyNamespace = hk.Namespace
			}
		}
	}
}

// dnsLabel turns a name from the database (a cluster name, an infra-env name
// such as "demo_infra-env" from the UI) into a DNS-1123 label.
func dnsLabel(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), "-")
	for strings.Contains(out, "--") {
		out = strings.ReplaceAll(out, "--", "-")
	}
	if len(out) > 63 {
		out = strings.TrimRight(out[:63], "-")
	}
	return out
}

// namer hands out names that are unique per kind.
type namer map[string]bool

// take returns base, or base with the first characters of id appended when
// base is empty or already taken by an object of the same kind in namespace ns.
func (n namer) take(kind, ns, base, id string) string {
	name := base
	short := strings.ReplaceAll(id, "-", "")
	if len(short) > 8 {
		short = short[:8]
	}
	if name == "" {
		name = kind + "-" + short
	}
	if n[kind+"/"+ns+"/"+name] {
		if len(name) > 54 {
			name = strings.TrimRight(name[:54], "-")
		}
		name += "-" + short
	}
	n[kind+"/"+ns+"/"+name] = true
	return name
}
