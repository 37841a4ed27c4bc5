#!/bin/bash
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
for dir in "$root/etc/assisted/network"/*/; do
  [ -f "$dir/mac_interface.ini" ] || continue
  found=""
  while IFS='=' read -r mac name; do
    if [ -n "${nic_by_mac[$mac]:-}" ]; then found=1; fi
  done <"$dir/mac_interface.ini"
  [ -n "$found" ] || continue
  echo "static network configuration: using $dir" >&2
  # logical name -> placeholder -> NIC name, so swapped names cannot collide.
  # (sed -e '' is a no-op: every list has one expression.)
  to_ph=(-e '') to_nic=(-e '') names=() nics=()
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
  # Each profile's name on this machine: the logical NIC name replaced by the
  # NIC's. A VLAN named <NIC>.<id> that would then pass NetworkManager's 15
  # characters is cut at the end of the NIC part (enp94s0f0np0.2507 becomes
  # enp94s0f0n.2507), as assisted-service's script does; its parent stays.
  declare -A target
  trim=(-e '')
  for f in "$dir"/*.nmconnection; do
    base=${f##*/}
    stem=${base%.nmconnection}
    for k in "${!names[@]}"; do
      if [ "$stem" = "${names[$k]}" ] || [ "${stem#"${names[$k]}".}" != "$stem" ]; then
        stem=${nics[$k]}${stem#"${names[$k]}"}
        break
      fi
    done
    if [ ${#stem} -gt 15 ] && [ "${stem#*.}" != "$stem" ]; then
      rest=${stem#*.}
      short=${stem%%.*}
      short=${short:0:$((15 - ${#rest} - 1))}.$rest
      trim+=(-e "s/=${stem//./\\.}\$/=${short}/")
      echo "interface name $stem is longer than 15 characters: using $short" >&2
      stem=$short
    fi
    target[$f]=$stem
  done
  mkdir -p "$out"
  for f in "$dir"/*.nmconnection; do
    dst="$out/${target[$f]}.nmconnection"
    sed "${to_ph[@]}" "$f" | sed "${to_nic[@]}" | sed "${trim[@]}" >"$dst"
    chmod 600 "$dst"
    echo "installed $dst" >&2
  done
  exit 0
done
echo "no static network configuration for this machine's MACs; using DHCP" >&2
