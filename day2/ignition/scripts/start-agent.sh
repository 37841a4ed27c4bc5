#!/bin/bash
set -eu
api="${SERVICE_BASE_URL%/}/api/assisted-install/v2"
until curl -fsS -o /dev/null -H "Authorization: ${USER_AUTH_TOKEN}" "$api/infra-envs/${INFRA_ENV_ID}"; do
  echo "waiting for infra-env ${INFRA_ENV_ID}" >&2
  sleep 5
done
export PULL_SECRET_TOKEN="${AGENT_AUTH_TOKEN}"
exec /usr/local/bin/agent --url "${SERVICE_BASE_URL%/}" --infra-env-id "${INFRA_ENV_ID}" --agent-version "${AGENT_DOCKER_IMAGE}" --insecure=true
