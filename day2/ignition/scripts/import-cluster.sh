#!/bin/bash
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
