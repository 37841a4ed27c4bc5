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
}

const podIDFile = "%t/assisted-service-pod.pod-id"

// containerUnit renders a podman-run unit in the assisted-service pod.
func containerUnit(desc, after, extraUnit, run, svcType string, extraService ...string) string {
	var s strings.Builder
	fmt.Fprintf(&s, "[Unit]\nDescription=%s\nWants=network-online.target\nAfter=network-online.target %s\n%s\n", desc, after, extraUnit)
	s.WriteString("[Service]\nEnvironment=PODMAN_SYSTEMD_UNIT=%n\n")
	fmt.Fprintf(&s, "EnvironmentFile=%s\nEnvironmentFile=%s\n", AgentImagesEnv, RendezvousEnv)
	for _, l := range extraService {
		s.WriteString(l + "\n")
	}
	s.WriteString("ExecStartPre=/bin/rm -f %t/%n.ctr-id\n")
	fmt.Fprintf(&s, "ExecStart=/usr/bin/podman run --net host --cidfile=%%t/%%n.ctr-id --cgroups=no-conmon --log-driver=journald --rm --pod-id-file=%s --replace %s\n", podIDFile, run)
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

func (b *builder) units(in Input) {
	mounts := ""
	if len(in.Cluster.ImageDigestSources) > 0 {
		mounts += " -v /etc/containers:/etc/containers:ro"
	}
	if in.Cluster.UserCABundle != "" {
		mounts += " -v " + CABundlePath + ":" + CABundlePath + ":ro"
	}
	clientEnv := fmt.Sprintf("--env-file=%s --env-file=%s --env-file=%s", RendezvousEnv, ServiceEnv, AddNodesEnv)

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
		fmt.Sprintf("--sdnotify=conmon -d --name=assisted-db --user=postgres --env-file=%s --tmpfs /var/run/postgresql:rw,mode=0777 $SERVICE_IMAGE /bin/bash start_db.sh", DBEnv),
		"notify"), true)
	b.unit("assisted-service.service", containerUnit("Local assisted-service (add-nodes)",
		"assisted-service-pod.service assisted-service-db.service", "Requires=assisted-service-db.service\nBindsTo=assisted-service-pod.service",
		fmt.Sprintf("--sdnotify=conmon -d --name=service%s --env-file=%s --env-file=%s --env-file=%s $SERVICE_IMAGE", mounts, RendezvousEnv, ServiceEnv, AgentImagesEnv),
		"notify"), true)
	b.unit("agent-import-cluster.service", containerUnit("Import the existing cluster into the local assisted-service",
		"assisted-service.service", "Wants=assisted-service.service\nConditionPathExists="+AddNodesEnv,
		fmt.Sprintf("--name=agent-import-cluster -v %s:/clusterconfig:z%s %s --env CLUSTER_CONFIG_DIR=/clusterconfig --env OPENSHIFT_INSTALL_RELEASE_IMAGE_MIRROR $SERVICE_IMAGE /usr/local/bin/agent-installer-client importCluster", ClusterConfigDir, mounts, clientEnv),
		"oneshot", "ExecStartPre=/usr/local/bin/wait-for-assisted-service.sh"), true)
	b.unit("agent-register-infraenv.service", containerUnit("Register the infra-env of the new hosts",
		"agent-import-cluster.service", "Requires=agent-import-cluster.service",
		fmt.Sprintf("--name=agent-register-infraenv -v %s:/manifests:z%s %s --env IMAGE_TYPE_ISO=full-iso $SERVICE_IMAGE /usr/local/bin/agent-installer-client registerInfraEnv", ManifestsDir, mounts, clientEnv),
		"oneshot", "ExecStartPre=/usr/local/bin/wait-for-assisted-service.sh"), true)
	b.unit("agent.service", `[Unit]
Description=Assisted installer agent (registers this host with the local service)
Wants=network-online.target agent-register-infraenv.service
After=network-online.target agent-register-infraenv.service

[Service]
EnvironmentFile=`+AgentImagesEnv+`
EnvironmentFile=`+RendezvousEnv+`
EnvironmentFile=`+ServiceEnv+`
ExecStart=/usr/local/bin/start-agent.sh
Restart=always
RestartSec=3
TimeoutStartSec=3000

[Install]
WantedBy=multi-user.target
`, true)
	b.unit("apply-host-config.service", containerUnit("Apply the per-MAC host configuration (role, root device hints)",
		"agent-register-infraenv.service", "Requires=agent-register-infraenv.service",
		fmt.Sprintf("--name=apply-host-config -v %s:/etc/assisted/hostconfig:z %s --env WORKFLOW_TYPE $SERVICE_IMAGE /usr/local/bin/agent-installer-client configure", HostConfigDir, clientEnv),
		"oneshot"), true)
	b.unit("agent-add-node.service", `[Unit]
Description=Install this host into the existing cluster once it is ready
Wants=agent-import-cluster.service apply-host-config.service
After=agent-import-cluster.service apply-host-config.service
Conflicts=start-cluster-installation.service
ConditionPathExists=`+AddNodesEnv+`

[Service]
EnvironmentFile=`+RendezvousEnv+`
EnvironmentFile=`+ServiceEnv+`
EnvironmentFile=`+AddNodesEnv+`
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
Before=NetworkManager.service agent.service
DefaultDependencies=no

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
	b.scripts()
}

func (b *builder) scripts() {
	b.file("/usr/local/bin/wait-for-assisted-service.sh", 0o755, []byte(`#!/bin/bash
# Wait until the local assisted-service answers.
until curl -fsS -o /dev/null -H "Authorization: ${USER_AUTH_TOKEN}" "${SERVICE_BASE_URL}api/assisted-install/v2/infra-envs"; do
  echo "waiting for assisted-service at ${SERVICE_BASE_URL}" >&2
  sleep 5
done
`))
	b.file("/usr/local/bin/start-agent.sh", 0o755, []byte(`#!/bin/bash
# Run the agent against the local service once the infra-env exists.
set -eu
api="${SERVICE_BASE_URL}api/assisted-install/v2"
infra_env_id=""
until [ -n "$infra_env_id" ]; do
  infra_env_id=$(curl -fsS -H "Authorization: ${USER_AUTH_TOKEN}" "$api/infra-envs" | jq -r '.[0].id // empty' || true)
  [ -n "$infra_env_id" ] || sleep 5
done
exec /usr/bin/podman run --privileged --pid=host --net=host --rm \
  -v /dev:/dev:rw -v /opt:/opt:rw -v /run/systemd/journal/socket:/run/systemd/journal/socket \
  -v /var/log:/var/log:rw -v /run/media:/run/media:rw -v /etc/pki:/etc/pki:ro \
  --env PULL_SECRET_TOKEN="${AGENT_AUTH_TOKEN}" --name agent "${AGENT_DOCKER_IMAGE}" \
  next_step_runner --url "${SERVICE_BASE_URL%/}" --infra-env-id "$infra_env_id" \
  --agent-version "${AGENT_DOCKER_IMAGE}" --insecure=true
`))
	b.file("/usr/local/bin/add-node.sh", 0o755, []byte(`#!/bin/bash
# Start the installation of this host once the local service says it is known.
set -u
api="${SERVICE_BASE_URL}api/assisted-install/v2"
auth=(-H "Authorization: ${USER_AUTH_TOKEN}")
issue=/etc/issue.d/90_add-node.issue
while :; do
  infra_env_id=$(curl -fsS "${auth[@]}" "$api/infra-envs" | jq -r '.[0].id // empty')
  if [ -n "$infra_env_id" ]; then
    host=$(curl -fsS "${auth[@]}" "$api/infra-envs/$infra_env_id/hosts" | jq -c '.[0] // empty')
    status=$(jq -r '.status // empty' <<<"$host")
    if [ "$status" = known ]; then
      host_id=$(jq -r .id <<<"$host")
      code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "${auth[@]}" "$api/infra-envs/$infra_env_id/hosts/$host_id/actions/install")
      if [ "$code" = 202 ]; then
        echo "Host installation started" | tee "$issue"
        exit 0
      fi
      echo "install request failed with HTTP $code" >&2
      exit 1
    fi
  fi
  echo "Waiting for the host to be ready (status: ${status:-unknown})" >"$issue"
  sleep 10
done
`))
	b.file("/usr/local/bin/set-hostname.sh", 0o755, []byte(`#!/bin/bash
# Set the hostname configured for one of this machine's MACs.
for nic in /sys/class/net/*; do
  mac=$(cat "$nic/address" 2>/dev/null) || continue
  f="`+HostnamesDir+`/$mac"
  if [ -s "$f" ]; then
    hostnamectl set-hostname --static --transient "$(cat "$f")"
    exit 0
  fi
done
echo "no hostname configured for this machine's MACs; keeping the DHCP/reverse-DNS name" >&2
`))
	b.file("/usr/local/bin/pre-network-manager-config.sh", 0o755, []byte(`#!/bin/bash
# Find the host whose MACs this machine has and turn its nmstate into
# NetworkManager keyfiles (nmstatectl gc), before NetworkManager starts.
set -eu
shopt -s nullglob
for dir in `+NetworkDir+`/*/; do
  while IFS='=' read -r mac name; do
    for nic in /sys/class/net/*; do
      if [ "$(cat "$nic/address" 2>/dev/null)" = "$mac" ]; then
        out=/etc/NetworkManager/system-connections
        mkdir -p "$out"
        cd "$out"
        nmstatectl gc --output-dir "$out" "$dir/nmstate.yaml" 2>/dev/null || nmstatectl gc "$dir/nmstate.yaml" >/dev/null
        chmod 600 "$out"/*.nmconnection 2>/dev/null || true
        exit 0
      fi
    done
  done <"$dir/mac_interface.ini"
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
