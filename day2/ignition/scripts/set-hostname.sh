#!/bin/bash
# Set the hostname configured for this machine's MAC (nodes-config.yaml's
# first interface of the host).
for nic in /sys/class/net/*; do
  mac=$(cat "$nic/address" 2>/dev/null) || continue
  f="/etc/assisted/hostnames/$mac"
  if [ -s "$f" ]; then
    hostnamectl set-hostname "$(cat "$f")"
    exit 0
  fi
done
echo "no hostname configured for this machine's MACs; keeping the DHCP/reverse-DNS name" >&2
