#!/bin/bash
# Tell the console user when the ISO's token has expired.
now=$(date -u +%s)
exp=$(date -u -d "${AUTH_TOKEN_EXPIRY}" +%s)
if [ "$now" -ge "$exp" ]; then
  printf '\e[1;31mThe authentication token of this ISO expired at %s. Build a new ISO with "kubectl assisted add-nodes create" and reboot this host.\e[0m\n' "${AUTH_TOKEN_EXPIRY}" >/etc/issue.d/80_agent-auth-token-status.issue
fi
