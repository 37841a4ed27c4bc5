#!/bin/bash
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
