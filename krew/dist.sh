#!/usr/bin/env bash
# Release archives, sha256sums.txt and the krew manifest; `make dist` runs this.
# Inputs (environment): VERSION, COMMIT, BUILD_DATE (make derives them from git),
# DIST_DIR (default dist), DIST_MANIFEST (default krew/assisted.yaml),
# DIST_PLATFORMS (default: every release platform; e.g. "linux/amd64 windows/amd64").
set -euo pipefail
cd "$(dirname "$0")/.."
: "${VERSION:?VERSION is not set: run make dist}"
exec go run ./krew \
  -version "$VERSION" -commit "${COMMIT:-}" -build-date "${BUILD_DATE:-}" \
  -out "${DIST_DIR:-dist}" -manifest "${DIST_MANIFEST:-krew/assisted.yaml}" \
  -platforms "${DIST_PLATFORMS:-}"
