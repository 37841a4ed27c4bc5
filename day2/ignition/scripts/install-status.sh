#!/bin/bash
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
