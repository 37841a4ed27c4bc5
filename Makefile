# kubectl-assisted: `make help` lists the targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

MODULE   := github.com/kubectl-assisted/kubectl-assisted
BIN_DIR  ?= $(CURDIR)/bin
BIN      := $(BIN_DIR)/kubectl-assisted
CACHE    ?= $(or $(KUBECTL_ASSISTED_CACHE),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/kubectl-assisted)
TOOLS    := $(CACHE)/bin
PREFIX   ?= $(HOME)/.local
# make dist: where the archives go, the krew manifest, and the platforms
# (space-separated OS/ARCH; empty = all release platforms).
DIST_DIR       ?= $(CURDIR)/dist
DIST_MANIFEST  ?= $(CURDIR)/krew/assisted.yaml
DIST_PLATFORMS ?=

# Version stamping: a tag when there is one; the build date is the commit date so
# two builds of one commit are byte-identical.
VERSION    ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
COMMIT     ?= $(shell git rev-parse HEAD 2>/dev/null)
BUILD_DATE ?= $(shell git log -1 --format=%cI 2>/dev/null)
LDFLAGS    := -s -w -buildid= \
	-X $(MODULE)/plugin.version=$(VERSION) \
	-X $(MODULE)/plugin.commit=$(COMMIT) \
	-X $(MODULE)/plugin.buildDate=$(BUILD_DATE)
GOBUILD    := CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)'

E2E_TIMEOUT ?= 75m
# Parallel e2e subtests at once: most wait on child processes and servers.
E2E_PARALLEL ?= 4
# Test packages of the test module run at once: go test's default (one per
# core) started the e2e package, the longest, only after demo and harness.
E2E_PACKAGES ?= 4
# The long self-contained e2e tests (their own databases, directories and
# namespaces), run in a process of their own from the start, beside the rest;
# with them the day-2 and signature tests (sequential, ~65 s alone), which
# would otherwise lengthen the main process's chain of sequential tests (~200 s
# alone, the longest path of make test) while this one finishes early. The
# at-reboot tests (parallel; node 0 a systemd container, the installer's
# one-minute reboot delay) run here too, beside the main process's sequential
# chain, with this process's own kube-apiserver (TestAtReboot_Migrates... makes
# the cluster-scoped AgentServiceConfig, as the sequential migrate tests do).
# The tests on the test cluster's node (TestCluster_*, TestJobMode_*) run
# here as well: the node is one per machine (its kube-proxy owns the host's
# KUBE-* rules), and, sequential, they run one after another in this process.
E2E_APART    ?= TestPostgresMajors|TestDist|TestHostileSQL_RefusedEverywhere|TestAddNodes.*|TestHostileSign_.*|TestAtReboot_.*|TestCluster_.*|TestJobMode_.*
FUZZ_TIME   ?= 10s
# Targets that compile PostgreSQL's grammar (wasm) before their first input
# spend 5-15 s (more on a loaded machine) of a coverage-instrumented process on
# it and on their baseline coverage (FuzzSchemaReader, idle: 7 s, then 2,600
# inputs in the next 13 s): they get FUZZ_TIME plus that start-up.
FUZZ_TIME_SLOW_START ?= 20s
# One fuzzing worker per target: make test runs the end-to-end suite beside
# the fuzz targets on the same cores, and every worker pays the start-up.
FUZZ_PARALLEL ?= 1
# Minimizing each new-coverage input may take up to 60 s by default, which is
# where a 10 s fuzz run used to go (19 inputs executed); a bounded minimization
# leaves the time to fuzzing. A failing input is still written, less minimized.
FUZZ_MINIMIZE_TIME ?= 100x
# `go test` links every test binary again on every run (the build cache keeps
# compiled packages, not linked binaries), ~80 links in a make test; without
# DWARF a link takes about a third less CPU (bundle/pg: 1.8 s -> 1.2 s). Stack
# traces are unaffected; only a debugger would miss it.
GOTEST_LDFLAGS ?= -w
# gotest turns `go test -json` into plain output plus a summary, and fails a
# CI=true run on any skipped test.
GOTEST := $(BIN_DIR)/gotest

.PHONY: help
help: ## Show this help
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*##/ {printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build bin/kubectl-assisted
	$(GOBUILD) -o $(BIN) ./cmd/kubectl-assisted

.PHONY: install
install: build ## Install kubectl-assisted into $(PREFIX)/bin (for users without krew)
	install -d $(PREFIX)/bin
	install -m 0755 $(BIN) $(PREFIX)/bin/kubectl-assisted
	@echo "installed $(PREFIX)/bin/kubectl-assisted; make sure $(PREFIX)/bin is on PATH, then run: kubectl assisted version"

.PHONY: tools
tools: ## Install test components (apt packages; Go-built kube-apiserver, kubectl, etcd, oras, krew, age, ignition-validate; generated CRDs; the Debian root systemd-nspawn boots) into $(CACHE)
	test/tools/install.sh all

.PHONY: test
test: ## Run all tests: unit, fuzz (short), integration and end-to-end against real components
	@start=$$(date +%s); \
	echo "== make tools and compiling the tests, side by side"; \
	$(MAKE) --no-print-directory -j2 --output-sync=line tools test-compile; \
	echo "== end-to-end tests beside unit tests and fuzzing"; \
	$(MAKE) --no-print-directory -j2 --output-sync=line test-e2e test-unit-fuzz; \
	echo "== make test passed in $$(( $$(date +%s) - start )) s"

# Compiling is what the build cache keeps; linking a test binary it does not:
# `go test` links every binary again when it runs it. So this compiles every
# package and test package (export data, no link): a warm run spends ~3 s
# here instead of ~35 s linking ~45 binaries that would be linked again.
.PHONY: test-compile
test-compile: build $(GOTEST) ## Check gofmt, then compile every package and its tests into the build cache (make test overlaps it with make tools)
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed (gofmt -w):"; echo "$$out"; exit 1; fi
	go list -test -export -deps ./... >/dev/null
	cd test && go list -test -export -deps ./... >/dev/null

$(GOTEST): test/tools/gotest/main.go
	cd test && CGO_ENABLED=0 go build -o $(GOTEST) ./tools/gotest

.PHONY: test-unit-fuzz
test-unit-fuzz:
	@$(MAKE) --no-print-directory test-unit
	@$(MAKE) --no-print-directory test-fuzz

.PHONY: test-unit
test-unit: $(GOTEST) ## Run the fast unit tests (no external components)
	go test -json -count=1 -ldflags='$(GOTEST_LDFLAGS)' ./... | $(GOTEST)

.PHONY: test-fuzz
test-fuzz: ## Run every fuzz target for FUZZ_TIME each; a failure prints its output and the reproducer
	@FUZZ_TIME=$(FUZZ_TIME) FUZZ_TIME_SLOW_START=$(FUZZ_TIME_SLOW_START) FUZZ_PARALLEL=$(FUZZ_PARALLEL) \
	  FUZZ_MINIMIZE_TIME=$(FUZZ_MINIMIZE_TIME) FUZZ_LDFLAGS='$(GOTEST_LDFLAGS)' test/tools/fuzz.sh

.PHONY: test-e2e
test-e2e: build $(GOTEST) ## Run integration and end-to-end tests (real PostgreSQL, registries, kube-apiserver, kubectl)
	@# The longest tests (E2E_APART) run in a process of their own from the
	@# start, beside the rest of the suite, instead of waiting for the
	@# sequential tests; their events join the stream when they end.
	cd test && export KUBECTL_ASSISTED_BIN=$(BIN) KUBECTL_ASSISTED_VERSION=$(VERSION); \
	  majors=$$(mktemp); \
	  { go test -json -count=1 -ldflags='$(GOTEST_LDFLAGS)' -parallel $(E2E_PARALLEL) -timeout $(E2E_TIMEOUT) -run '^($(E2E_APART))$$' ./e2e > $$majors 2>&1 & \
	    go test -json -count=1 -ldflags='$(GOTEST_LDFLAGS)' -p $(E2E_PACKAGES) -parallel $(E2E_PARALLEL) -timeout $(E2E_TIMEOUT) -skip '^($(E2E_APART))$$' ./...; \
	    wait; cat $$majors; rm -f $$majors; } | $(GOTEST)

.PHONY: bench
bench: tools build ## Benchmarks: ratios against pg_dump/pg_restore, oras and cp on the same data
	cd test && KUBECTL_ASSISTED_BIN=$(BIN) go run ./bench $(BENCH_ARGS)

.PHONY: lint
lint: ## gofmt, go vet (both modules), shellcheck (the ISO's scripts, every level; the repo's other scripts, warnings), staticcheck when installed
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet ./...
	cd test && go vet ./...
	@command -v shellcheck >/dev/null || { echo "shellcheck is required (Debian package shellcheck; make tools installs it)"; exit 1; }
	shellcheck day2/ignition/scripts/*.sh
	shellcheck -S warning $$(git ls-files '*.sh' | grep -v '^day2/ignition/scripts/')
	@if command -v staticcheck >/dev/null; then staticcheck ./...; else echo "staticcheck not installed; skipped"; fi

.PHONY: demo
demo: tools build ## Migrate node 0 into cluster 0 and build a day-2 ISO, on local components (KEEP=1 leaves them running)
	cd test && KUBECTL_ASSISTED_BIN=$(BIN) go run ./demo $(DEMO_ARGS)

.PHONY: demo-clean
demo-clean: ## Stop and remove everything make demo started (also a KEEP=1 demo)
	cd test && go run ./demo clean

.PHONY: dist
dist: ## Reproducible release archives, sha256sums.txt and the krew manifest (krew/assisted.yaml)
	VERSION=$(VERSION) COMMIT=$(COMMIT) BUILD_DATE=$(BUILD_DATE) \
	DIST_DIR='$(DIST_DIR)' DIST_MANIFEST='$(DIST_MANIFEST)' DIST_PLATFORMS='$(DIST_PLATFORMS)' krew/dist.sh

.PHONY: clean
clean: ## Remove build outputs (not the tool cache)
	rm -rf $(BIN_DIR) $(DIST_DIR) $(DIST_MANIFEST)
