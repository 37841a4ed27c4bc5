#!/bin/bash
# Wait until the local assisted-service answers with this ISO's user token.
until curl -fsS -o /dev/null -H "Authorization: ${USER_AUTH_TOKEN}" "${SERVICE_BASE_URL%/}/api/assisted-install/v2/infra-envs"; do
  echo "waiting for assisted-service at ${SERVICE_BASE_URL}" >&2
  sleep 5
done
