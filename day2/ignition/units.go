package ignition

import (
	"bytes"
	"embed"
	"fmt"
	"path"
	"strings"
	"sync"
	"text/template"
)

// Units are the systemd units of the add-nodes live system, enabled ones first.
var Units = []string{
	"assisted-service-pod.service",
	"assisted-service-db.service",
	"assisted-service.service",
	"agent-import-cluster.service",
	"agent-register-infraenv.service",
	"agent.service",
	"apply-host-config.service",
	"agent-add-node.service",
	"set-hostname.service",
	"pre-network-manager-config.service",
	"agent-auth-token-status.service",
	"install-status.service",
	"iscsistart.service",
	"iscsiadm.service",
}

// The units, scripts and configuration files the ISO's Ignition carries are
// files in this package, embedded as they are: units/ (systemd units, text
// templates whose only variable part is the container mounts), scripts/
// (bash, checked by shellcheck in make lint) and files/. The paths they name
// are this package's constants (RendezvousEnv, NetworkDir, ...); the tests
// check that they agree.
//
//go:embed units/*.service scripts/*.sh files/*
var hostFiles embed.FS

// unitData is what the unit templates are rendered with.
type unitData struct {
	// Mounts are podman -v options, each with a leading space ("" for none).
	Mounts string
	// ContainerMounts is Mounts without its leading space, for
	// import-cluster.sh's CONTAINER_MOUNTS.
	ContainerMounts string
}

// unitTemplates parses units/ on first use (not at start-up: most commands
// never build an ISO).
var unitTemplates = sync.OnceValues(func() (*template.Template, error) {
	return template.New("units").Option("missingkey=error").ParseFS(hostFiles, "units/*.service")
})

func embedded(name string) []byte {
	b, err := hostFiles.ReadFile(name)
	if err != nil {
		panic(fmt.Sprintf("embedded file %s: %v", name, err)) // a build defect: the file list is fixed
	}
	return b
}

func (b *builder) embeddedUnit(name string, data unitData) {
	t, err := unitTemplates()
	if err != nil {
		panic(fmt.Sprintf("unit templates: %v", err))
	}
	var s bytes.Buffer
	if err := t.ExecuteTemplate(&s, name, data); err != nil {
		panic(fmt.Sprintf("unit %s: %v", name, err))
	}
	b.unit(name, s.String(), true)
}

func (b *builder) script(name string) {
	b.file(path.Join("/usr/local/bin", name), 0o755, embedded("scripts/"+name))
}

func (b *builder) units(in Input) {
	mounts := ""
	if len(in.Cluster.ImageDigestSources) > 0 {
		mounts += " -v /etc/containers:/etc/containers:ro"
	}
	if in.Cluster.UserCABundle != "" {
		// The host's extracted trust store (which update-ca-trust builds from
		// the anchors, the user CA included) replaces the container's, so the
		// service and its client trust a mirror signed by the private CA.
		mounts += " -v " + TrustBundlePath + ":" + TrustBundlePath + ":ro"
	}
	data := unitData{Mounts: mounts, ContainerMounts: strings.TrimSpace(mounts)}

	// The service, its database and pod; the client steps run as podman
	// containers in the pod. Every container unit loads the three env files
	// the installer's units load (rendezvous-host.env, agent-images.env,
	// assisted-service.env); the clients get their variables by name, never
	// on the command line: 4.17's client authenticates with AGENT_AUTH_TOKEN,
	// 4.18+'s with USER_AUTH_TOKEN (assisted-service
	// cmd/agentbasedinstaller/client/main.go, release-4.17 and release-4.18).
	b.embeddedUnit("assisted-service-pod.service", data)
	b.embeddedUnit("assisted-service-db.service", data)
	b.embeddedUnit("assisted-service.service", data)
	// The import goes through import-cluster.sh, which imports only when no
	// cluster with this OpenShift cluster id exists: V2ImportCluster creates
	// a new cluster on every call, so a plain retry after a failed update
	// would leave duplicates.
	b.embeddedUnit("agent-import-cluster.service", data)
	b.embeddedUnit("agent-register-infraenv.service", data)
	b.embeddedUnit("agent.service", data)
	b.embeddedUnit("apply-host-config.service", data)
	b.embeddedUnit("agent-add-node.service", data)
	b.embeddedUnit("set-hostname.service", data)
	b.embeddedUnit("pre-network-manager-config.service", data)
	b.embeddedUnit("agent-auth-token-status.service", data)
	// chronyd must answer the chronyc of the agent's NTP step, which runs in
	// a privileged container (spc_t) with its socket on a container volume:
	// without this policy the host's NTP validation fails (installer
	// data/data/agent/files/root/assisted.te and systemd/units/selinux.service).
	b.file(selinuxModulePath, 0o644, embedded("files/kubectl_assisted_ntp.te"))
	b.embeddedUnit("assisted-selinux-policy.service", data)
	// Multipath disks are seen as one disk by the agent's inventory
	// (installer data/data/agent/files/etc/multipath.conf, multipathd enabled).
	b.file("/etc/multipath.conf", 0o644, embedded("files/multipath.conf"))
	b.unit("multipathd.service", "", true)
	// iSCSI boot (iBFT): log in to the firmware's iSCSI target and keep its
	// sessions, as the installer's add-nodes ISO does (data/data/agent/systemd/
	// units/iscsistart.service and iscsiadm.service @de45fedd, enabled by
	// pkg/asset/agent/image/ignition.go getDefaultEnabledServices). Every
	// command may fail: a machine without iBFT is left alone.
	b.embeddedUnit("iscsistart.service", data)
	b.embeddedUnit("iscsiadm.service", data)
	// The console shows which add-nodes services are still waiting and why
	// apply-host-config cannot proceed, as the installer's install-status.sh
	// (data/data/agent/files/usr/local/bin/install-status.sh and
	// systemd/units/install-status.service @de45fedd) does in add-nodes mode.
	b.script("install-status.sh")
	b.embeddedUnit("install-status.service", data)
	// podman builds the pod's infra container locally instead of pulling a
	// pause image, which a disconnected host could not reach (installer
	// data/data/agent/files/etc/containers/containers.conf).
	b.file("/etc/containers/containers.conf", 0o644, embedded("files/containers.conf"))
	b.scripts()
}

const selinuxModulePath = "/usr/local/share/kubectl-assisted/kubectl_assisted_ntp.te"

// scripts are the programs the units run (scripts/*.sh):
//   - wait-for-assisted-service.sh: until the service answers the ISO's user token;
//   - import-cluster.sh: safe to restart: the client's importCluster both
//     creates the cluster and updates it; when a cluster with this OpenShift
//     cluster id already exists (a previous run created it and then failed),
//     only the update is made again, with the same two settings the client sends;
//   - start-agent.sh: the installer's looks the infra-env up; this ISO knows
//     its id (INFRA_ENV_ID) and waits until the service has it;
//   - add-node.sh: starts the installation once the host is known;
//   - set-hostname.sh: the hostname nodes-config.yaml gives this machine's MAC;
//   - pre-network-manager-config.sh: installs the host's NetworkManager
//     keyfiles renamed to this machine's NICs (docs/add-nodes.md);
//   - agent-auth-token-status.sh: a console warning once the token expired.
func (b *builder) scripts() {
	for _, s := range []string{"wait-for-assisted-service.sh", "import-cluster.sh", "start-agent.sh", "add-node.sh",
		"set-hostname.sh", "pre-network-manager-config.sh", "agent-auth-token-status.sh"} {
		b.script(s)
	}
}
