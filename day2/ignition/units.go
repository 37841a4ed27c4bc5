package ignition

import (
	"fmt"
	"strings"
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

const podIDFile = "%t/assisted-service-pod.pod-id"

// containerUnit renders a podman-run unit in the assisted-service pod. Every
// such unit loads the three env files the installer's units load
// (rendezvous-host.env, agent-images.env, assisted-service.env) plus extra.
func containerUnit(desc, after, extraUnit, exec, svcType string, extraService ...string) string {
	var s strings.Builder
	fmt.Fprintf(&s, "[Unit]\nDescription=%s\nWants=network-online.target\nAfter=network-online.target %s\n%s\n", desc, after, extraUnit)
	s.WriteString("[Service]\nEnvironment=PODMAN_SYSTEMD_UNIT=%n\n")
	fmt.Fprintf(&s, "EnvironmentFile=%s\nEnvironmentFile=%s\nEnvironmentFile=%s\n", RendezvousEnv, AgentImagesEnv, ServiceEnv)
	for _, l := range extraService {
		s.WriteString(l + "\n")
	}
	s.WriteString("ExecStartPre=/bin/rm -f %t/%n.ctr-id\n")
	s.WriteString("ExecStart=" + exec + "\n")
	s.WriteString("ExecStop=/usr/bin/podman stop --ignore --cidfile=%t/%n.ctr-id\nExecStopPost=/usr/bin/podman rm -f --ignore --cidfile=%t/%n.ctr-id\n")
	fmt.Fprintf(&s, "Type=%s\n", svcType)
	if svcType == "oneshot" {
		s.WriteString("RemainAfterExit=true\nRestart=on-failure\nRestartSec=30\n")
	} else {
		s.WriteString("NotifyAccess=all\nRestart=on-failure\n")
	}
	s.WriteString("\n[Install]\nWantedBy=multi-user.target\n")
	return s.String()
}

// podmanRun is the start of every container command in the pod.
const podmanRun = "/usr/bin/podman run --net host --cidfile=%t/%n.ctr-id --cgroups=no-conmon --log-driver=journald --rm --pod-id-file=" + podIDFile + " --replace"

// clientEnv passes the agent-installer-client the variables it reads, by
// name from the unit's environment (never on the command line): 4.17's
// client authenticates with AGENT_AUTH_TOKEN, 4.18+'s with USER_AUTH_TOKEN
// (assisted-service cmd/agentbasedinstaller/client/main.go, release-4.17 and
// release-4.18).
const clientEnv = "--env SERVICE_BASE_URL --env AGENT_AUTH_TOKEN --env USER_AUTH_TOKEN --env WORKFLOW_TYPE"

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

	b.unit("assisted-service-pod.service", `[Unit]
Description=Pod of the local assisted-service (add-nodes)
Wants=network-online.target
After=network-online.target
ConditionPathExists=/etc/assisted/node0

[Service]
Environment=PODMAN_SYSTEMD_UNIT=%n
Restart=on-failure
ExecStartPre=/bin/rm -f `+podIDFile+`
ExecStartPre=/usr/bin/podman pod create --infra-conmon-pidfile %t/assisted-service-pod.pid --pod-id-file `+podIDFile+` --name assisted-service --network host --replace
ExecStart=/usr/bin/podman pod start --pod-id-file `+podIDFile+`
ExecStop=/usr/bin/podman pod stop --ignore --pod-id-file `+podIDFile+` -t 10
ExecStopPost=/usr/bin/podman pod rm --ignore -f --pod-id-file `+podIDFile+`
PIDFile=%t/assisted-service-pod.pid
Type=forking

[Install]
WantedBy=multi-user.target
`, true)
	b.unit("assisted-service-db.service", containerUnit("Database of the local assisted-service",
		"assisted-service-pod.service", "BindsTo=assisted-service-pod.service",
		fmt.Sprintf("%s --sdnotify=conmon -d --name=assisted-db --user=postgres --env-file=%s --tmpfs /var/run/postgresql:rw,mode=0777 $SERVICE_IMAGE /bin/bash start_db.sh", podmanRun, DBEnv),
		"notify"), true)
	b.unit("assisted-service.service", containerUnit("Local assisted-service (add-nodes)",
		"assisted-service-pod.service assisted-service-db.service", "Requires=assisted-service-db.service\nBindsTo=assisted-service-pod.service",
		fmt.Sprintf("%s --sdnotify=conmon -d --name=service%s --env-file=%s --env-file=%s --env-file=%s $SERVICE_IMAGE", podmanRun, mounts, RendezvousEnv, ServiceEnv, AgentImagesEnv),
		"notify"), true)
	// The import goes through a script that imports only when no cluster
	// with this OpenShift cluster id exists: V2ImportCluster creates a new
	// cluster on every call, so a plain retry after a failed update would
	// leave duplicates.
	b.unit("agent-import-cluster.service", containerUnit("Import the existing cluster into the local assisted-service",
		"assisted-service.service", "Wants=assisted-service.service\nConditionPathExists="+AddNodesEnv,
		"/usr/local/bin/import-cluster.sh",
		"oneshot", "EnvironmentFile="+AddNodesEnv, "Environment=CLUSTER_CONFIG_DIR="+ClusterConfigDir, fmt.Sprintf("Environment=%q", "CONTAINER_MOUNTS="+strings.TrimSpace(mounts)),
		"ExecStartPre=/usr/local/bin/wait-for-assisted-service.sh"), true)
	b.unit("agent-register-infraenv.service", containerUnit("Register the infra-env of the new hosts",
		"agent-import-cluster.service", "Requires=agent-import-cluster.service",
		fmt.Sprintf("%s --name=agent-register-infraenv -v %s:/manifests:z%s %s --env IMAGE_TYPE_ISO $SERVICE_IMAGE /usr/local/bin/agent-installer-client registerInfraEnv", podmanRun, ManifestsDir, mounts, clientEnv),
		"oneshot", "Environment=IMAGE_TYPE_ISO=full-iso", "ExecStartPre=/usr/local/bin/wait-for-assisted-service.sh"), true)
	b.unit("agent.service", `[Unit]
Description=Assisted installer agent (registers this host with the local service)
Wants=network-online.target agent-register-infraenv.service
After=network-online.target agent-register-infraenv.service

[Service]
EnvironmentFile=`+RendezvousEnv+`
EnvironmentFile=`+AgentImagesEnv+`
EnvironmentFile=`+ServiceEnv+`
Environment=HTTP_PROXY=
Environment=http_proxy=
Environment=HTTPS_PROXY=
Environment=https_proxy=
Environment=NO_PROXY=
Environment=no_proxy=
ExecStartPre=/usr/bin/podman run --privileged --rm -v /usr/local/bin:/hostbin $AGENT_DOCKER_IMAGE cp /usr/bin/agent /hostbin
ExecStart=/usr/local/bin/start-agent.sh
Type=simple
Restart=always
RestartSec=3
StartLimitInterval=0
TimeoutStartSec=3000

[Install]
WantedBy=multi-user.target
`, true)
	b.unit("apply-host-config.service", containerUnit("Apply the per-MAC host configuration (role, root device hints)",
		"agent-register-infraenv.service", "Requires=agent-register-infraenv.service",
		fmt.Sprintf("%s --name=apply-host-config -v %s:/etc/assisted/hostconfig:z -v %%t/agent-installer:/var/run/agent-installer:z %s --env INFRA_ENV_ID $SERVICE_IMAGE /usr/local/bin/agent-installer-client configure", podmanRun, HostConfigDir, clientEnv),
		"oneshot", "ExecStartPre=/bin/mkdir -p %t/agent-installer", "ExecStartPre=/usr/local/bin/wait-for-assisted-service.sh"), true)
	b.unit("agent-add-node.service", `[Unit]
Description=Install this host into the existing cluster once it is ready
Wants=network-online.target
Requires=apply-host-config.service
After=network-online.target agent-import-cluster.service apply-host-config.service
Conflicts=start-cluster-installation.service
ConditionPathExists=`+AddNodesEnv+`

[Service]
EnvironmentFile=`+RendezvousEnv+`
EnvironmentFile=`+ServiceEnv+`
EnvironmentFile=`+AddNodesEnv+`
ExecStartPre=/usr/local/bin/wait-for-assisted-service.sh
ExecStart=/usr/local/bin/add-node.sh
Type=oneshot
RemainAfterExit=true
Restart=on-failure
RestartSec=30

[Install]
WantedBy=multi-user.target
`, true)
	b.unit("set-hostname.service", `[Unit]
Description=Set the hostname that nodes-config.yaml gives this machine's MAC
Wants=network-online.target
After=local-fs.target

[Service]
ExecStart=/usr/local/bin/set-hostname.sh
Type=oneshot
RemainAfterExit=true

[Install]
WantedBy=multi-user.target
`, true)
	b.unit("pre-network-manager-config.service", `[Unit]
Description=Apply this machine's static network configuration (nmstate, by MAC)
Before=NetworkManager.service
DefaultDependencies=no

[Service]
ExecStart=/usr/local/bin/pre-network-manager-config.sh
Type=oneshot
RemainAfterExit=true

[Install]
WantedBy=multi-user.target NetworkManager.service
`, true)
	b.unit("agent-auth-token-status.service", `[Unit]
Description=Warn on the console when this ISO's authentication token has expired
After=network-online.target

[Service]
EnvironmentFile=`+AddNodesEnv+`
ExecStart=/usr/local/bin/agent-auth-token-status.sh
Type=oneshot
RemainAfterExit=true

[Install]
WantedBy=multi-user.target
`, true)
	// chronyd must answer the chronyc of the agent's NTP step, which runs in
	// a privileged container (spc_t) with its socket on a container volume:
	// without this policy the host's NTP validation fails (installer
	// data/data/agent/files/root/assisted.te and systemd/units/selinux.service).
	b.file(selinuxModulePath, 0o644, []byte(`module kubectl_assisted_ntp 1.0;

require {
	type chronyd_t;
	type container_file_t;
	type spc_t;
	class dir search;
	class sock_file write;
	class unix_dgram_socket sendto;
}

# chronyd replies to chronyc running in the agent's container.
allow chronyd_t container_file_t:dir search;
allow chronyd_t container_file_t:sock_file write;
allow chronyd_t spc_t:unix_dgram_socket sendto;
`))
	b.unit("assisted-selinux-policy.service", `[Unit]
Description=SELinux policy letting chronyd answer the agent's NTP check
Before=agent.service

[Service]
Type=oneshot
RemainAfterExit=true
ExecStartPre=/usr/bin/checkmodule -M -m -o /run/kubectl_assisted_ntp.mod `+selinuxModulePath+`
ExecStartPre=/usr/bin/semodule_package -o /run/kubectl_assisted_ntp.pp -m /run/kubectl_assisted_ntp.mod
ExecStart=/usr/sbin/semodule -i /run/kubectl_assisted_ntp.pp

[Install]
WantedBy=multi-user.target
`, true)
	// Multipath disks are seen as one disk by the agent's inventory
	// (installer data/data/agent/files/etc/multipath.conf, multipathd enabled).
	b.file("/etc/multipath.conf", 0o644, []byte("defaults {\n    user_friendly_names yes\n    find_multipaths yes\n}\n"))
	b.unit("multipathd.service", "", true)
	// iSCSI boot (iBFT): log in to the firmware's iSCSI target and keep its
	// sessions, as the installer's add-nodes ISO does (data/data/agent/systemd/
	// units/iscsistart.service and iscsiadm.service @de45fedd, enabled by
	// pkg/asset/agent/image/ignition.go getDefaultEnabledServices). Every
	// command may fail: a machine without iBFT is left alone.
	b.unit("iscsistart.service", `[Unit]
Description=Log in to the iSCSI boot target the firmware names (iBFT), if any

[Service]
Type=oneshot
ExecStartPre=-/usr/sbin/modprobe iscsi_ibft
ExecStartPre=-/usr/sbin/iscsistart -f
ExecStart=-/usr/sbin/iscsistart -b

[Install]
WantedBy=multi-user.target
`, true)
	b.unit("iscsiadm.service", `[Unit]
Description=Start iscsid and list the iSCSI sessions
After=iscsistart.service

[Service]
Type=oneshot
ExecStart=-/usr/sbin/iscsiadm -m session -P3

[Install]
WantedBy=multi-user.target
`, true)
	// The console shows which add-nodes services are still waiting and why
	// apply-host-config cannot proceed, as the installer's install-status.sh
	// (data/data/agent/files/usr/local/bin/install-status.sh and
	// systemd/units/install-status.service @de45fedd) does in add-nodes mode.
	b.file("/usr/local/bin/install-status.sh", 0o755, []byte(`#!/bin/bash
# Keep the console's issue files up to date: add-nodes services not active
# yet, and the host-configuration failures apply-host-config reported.
set -u
services="assisted-service.service agent-import-cluster.service agent-register-infraenv.service apply-host-config.service agent-add-node.service"
set_issue() { # name; the text on stdin
  local f="/etc/issue.d/$1.issue" tmp
  tmp=$(mktemp)
  cat >"$tmp"
  if ! cmp -s "$tmp" "$f"; then
    mv "$tmp" "$f"
    agetty --reload 2>/dev/null || true
  else
    rm -f "$tmp"
  fi
}
clear_issue() {
  if [ -e "/etc/issue.d/$1.issue" ]; then
    rm -f "/etc/issue.d/$1.issue"
    agetty --reload 2>/dev/null || true
  fi
}
while :; do
  waiting=""
  for s in $services; do
    systemctl is-active --quiet "$s" || waiting+="$s "
  done
  if [ -z "$waiting" ]; then
    clear_issue 70_agent-services
  else
    # shellcheck disable=SC2086
    { printf 'Waiting for services:'; systemctl --no-legend list-units --all $waiting | awk '{printf("\n[%s] %s", $4, $1)}'; echo; } | set_issue 70_agent-services
  fi
  if [ -s /run/agent-installer/host-config-failures ]; then
    { echo "Installation cannot proceed:"; cat /run/agent-installer/host-config-failures; } | set_issue 80_host-config
  else
    clear_issue 80_host-config
  fi
  sleep 5
done
`))
	b.unit("install-status.service", `[Unit]
Description=Show the add-nodes services' progress on the console
Wants=network-online.target assisted-service-pod.service
After=network-online.target assisted-service-pod.service

[Service]
ExecStart=/usr/local/bin/install-status.sh
Type=simple
Restart=always

[Install]
WantedBy=multi-user.target
`, true)
	// podman builds the pod's infra container locally instead of pulling a
	// pause image, which a disconnected host could not reach (installer
	// data/data/agent/files/etc/containers/containers.conf).
	b.file("/etc/containers/containers.conf", 0o644, []byte("[engine]\ninfra_image = \"\"\n"))
	b.scripts()
}

const selinuxModulePath = "/usr/local/share/kubectl-assisted/kubectl_assisted_ntp.te"

func (b *builder) scripts() {
	b.file("/usr/local/bin/wait-for-assisted-service.sh", 0o755, []byte(`#!/bin/bash
# Wait until the local assisted-service answers with this ISO's user token.
until curl -fsS -o /dev/null -H "Authorization: ${USER_AUTH_TOKEN}" "${SERVICE_BASE_URL%/}/api/assisted-install/v2/infra-envs"; do
  echo "waiting for assisted-service at ${SERVICE_BASE_URL}" >&2
  sleep 5
done
`))
	// Safe to restart: the client's importCluster both creates the cluster
	// and updates it; when a cluster with this OpenShift cluster id already
	// exists (a previous run created it and then failed), only the update is
	// made again, with the same two settings the client sends.
	b.file("/usr/local/bin/import-cluster.sh", 0o755, []byte(`#!/bin/bash
set -euo pipefail
api="${SERVICE_BASE_URL%/}/api/assisted-install/v2"
auth="Authorization: ${USER_AUTH_TOKEN}"
existing=$(curl -fsS -H "$auth" "$api/clusters" | jq -r --arg id "$CLUSTER_ID" '[.[] | select(.openshift_cluster_id == $id)][0].id // empty')
if [ -z "$existing" ]; then
  # shellcheck disable=SC2086
  exec /usr/bin/podman run --net host --cidfile="/run/agent-import-cluster.service.ctr-id" --cgroups=no-conmon --log-driver=journald --rm \
    --pod-id-file=/run/assisted-service-pod.pod-id --replace --name=agent-import-cluster \
    -v "${CLUSTER_CONFIG_DIR}:/clusterconfig:z" ${CONTAINER_MOUNTS} \
    --env SERVICE_BASE_URL --env AGENT_AUTH_TOKEN --env USER_AUTH_TOKEN --env WORKFLOW_TYPE \
    --env CLUSTER_ID --env CLUSTER_NAME --env CLUSTER_API_VIP_DNS_NAME --env OPENSHIFT_INSTALL_RELEASE_IMAGE_MIRROR \
    --env CLUSTER_CONFIG_DIR=/clusterconfig \
    "$SERVICE_IMAGE" /usr/local/bin/agent-installer-client importCluster
fi
echo "cluster ${CLUSTER_ID} already imported as ${existing}; applying its configuration again" >&2
body=$(jq -c '{user_managed_networking: .networking.userManagedNetworking}' "${CLUSTER_CONFIG_DIR}/import-cluster-config.json")
if [ -f "${CLUSTER_CONFIG_DIR}/worker-ignition-endpoint.json" ]; then
  body=$(jq -c --slurpfile ep "${CLUSTER_CONFIG_DIR}/worker-ignition-endpoint.json" '. + {ignition_endpoint: $ep[0]}' <<<"$body")
fi
curl -fsS -o /dev/null -X PATCH -H "$auth" -H "Content-Type: application/json" -d "$body" "$api/clusters/$existing"
`))
	// The installer's start-agent.sh looks the infra-env up; this ISO knows
	// its id (INFRA_ENV_ID), and waits until the service has it.
	b.file("/usr/local/bin/start-agent.sh", 0o755, []byte(`#!/bin/bash
set -eu
api="${SERVICE_BASE_URL%/}/api/assisted-install/v2"
until curl -fsS -o /dev/null -H "Authorization: ${USER_AUTH_TOKEN}" "$api/infra-envs/${INFRA_ENV_ID}"; do
  echo "waiting for infra-env ${INFRA_ENV_ID}" >&2
  sleep 5
done
export PULL_SECRET_TOKEN="${AGENT_AUTH_TOKEN}"
exec /usr/local/bin/agent --url "${SERVICE_BASE_URL%/}" --infra-env-id "${INFRA_ENV_ID}" --agent-version "${AGENT_DOCKER_IMAGE}" --insecure=true
`))
	b.file("/usr/local/bin/add-node.sh", 0o755, []byte(`#!/bin/bash
# Start the installation of this host once the local service says it is known.
set -u
api="${SERVICE_BASE_URL%/}/api/assisted-install/v2"
auth="Authorization: ${USER_AUTH_TOKEN}"
issue=/etc/issue.d/90_add-node.issue
status=""
while :; do
  host=$(curl -fsS -H "$auth" "$api/infra-envs/${INFRA_ENV_ID}/hosts" | jq -c '.[0] // empty')
  status=$(jq -r '.status // empty' <<<"$host")
  case "$status" in
  known)
    host_id=$(jq -r .id <<<"$host")
    code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "$auth" "$api/infra-envs/${INFRA_ENV_ID}/hosts/$host_id/actions/install")
    if [ "$code" = 202 ]; then
      echo "Host installation started" | tee "$issue"
      exit 0
    fi
    echo "install request failed with HTTP $code" >&2
    exit 1
    ;;
  installing*|added-to-existing-cluster|preparing*)
    # A restart after the install request: nothing more to do.
    echo "Host installation started" | tee "$issue"
    exit 0
    ;;
  esac
  echo "Waiting for the host to be ready (status: ${status:-unknown})" >"$issue"
  sleep 10
done
`))
	b.file("/usr/local/bin/set-hostname.sh", 0o755, []byte(`#!/bin/bash
# Set the hostname configured for this machine's MAC (nodes-config.yaml's
# first interface of the host).
for nic in /sys/class/net/*; do
  mac=$(cat "$nic/address" 2>/dev/null) || continue
  f="`+HostnamesDir+`/$mac"
  if [ -s "$f" ]; then
    hostnamectl set-hostname "$(cat "$f")"
    exit 0
  fi
done
echo "no hostname configured for this machine's MACs; keeping the DHCP/reverse-DNS name" >&2
`))
	b.file("/usr/local/bin/pre-network-manager-config.sh", 0o755, []byte(`#!/bin/bash
# Before NetworkManager starts: find the host directory whose mac_interface.ini
# names a MAC of this machine and install its NetworkManager keyfiles (made at
# build time from nodes-config.yaml's nmstate), each renamed from the
# interface name in nodes-config.yaml to the NIC that has its MAC here.
# ROOT_PREFIX is for tests only.
set -eu
shopt -s nullglob
root="${ROOT_PREFIX:-}"
declare -A nic_by_mac
for nic in "$root"/sys/class/net/*; do
  mac=$(tr '[:upper:]' '[:lower:]' <"$nic/address" 2>/dev/null) || continue
  [ -n "$mac" ] && nic_by_mac[$mac]=${nic##*/}
done
out="$root/etc/NetworkManager/system-connections"
for dir in "$root`+NetworkDir+`"/*/; do
  [ -f "$dir/mac_interface.ini" ] || continue
  found=""
  while IFS='=' read -r mac name; do
    if [ -n "${nic_by_mac[$mac]:-}" ]; then found=1; fi
  done <"$dir/mac_interface.ini"
  [ -n "$found" ] || continue
  echo "static network configuration: using $dir" >&2
  # logical name -> placeholder -> NIC name, so swapped names cannot collide.
  to_ph=() to_nic=() names=() nics=()
  i=0
  while IFS='=' read -r mac name; do
    real="${nic_by_mac[$mac]:-}"
    if [ -z "$real" ]; then
      echo "warning: no NIC with MAC $mac (interface $name in nodes-config.yaml) on this machine" >&2
      continue
    fi
    re=${name//./\\.}
    to_ph+=(-e "s/=${re}\$/=@@nic${i}@@/" -e "s/=${re}\\./=@@nic${i}@@./")
    to_nic+=(-e "s/@@nic${i}@@/${real}/")
    names+=("$name") nics+=("$real")
    echo "interface $name is $real (MAC $mac)" >&2
    i=$((i + 1))
  done <"$dir/mac_interface.ini"
  mkdir -p "$out"
  for f in "$dir"/*.nmconnection; do
    base=${f##*/}
    stem=${base%.nmconnection}
    for k in "${!names[@]}"; do
      if [ "$stem" = "${names[$k]}" ] || [ "${stem#"${names[$k]}".}" != "$stem" ]; then
        stem=${nics[$k]}${stem#"${names[$k]}"}
        break
      fi
    done
    if [ ${#to_ph[@]} -gt 0 ]; then
      sed "${to_ph[@]}" "$f" | sed "${to_nic[@]}" >"$out/$stem.nmconnection"
    else
      cp "$f" "$out/$stem.nmconnection"
    fi
    chmod 600 "$out/$stem.nmconnection"
    echo "installed $out/$stem.nmconnection" >&2
  done
  exit 0
done
echo "no static network configuration for this machine's MACs; using DHCP" >&2
`))
	b.file("/usr/local/bin/agent-auth-token-status.sh", 0o755, []byte(`#!/bin/bash
# Tell the console user when the ISO's token has expired.
now=$(date -u +%s)
exp=$(date -u -d "${AUTH_TOKEN_EXPIRY}" +%s)
if [ "$now" -ge "$exp" ]; then
  printf '\e[1;31mThe authentication token of this ISO expired at %s. Build a new ISO with "kubectl assisted add-nodes create" and reboot this host.\e[0m\n' "${AUTH_TOKEN_EXPIRY}" >/etc/issue.d/80_agent-auth-token-status.issue
fi
`))
}
