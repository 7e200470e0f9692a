# DistCache — developer entry points. Run `make` or `make help` for the list.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --no-builtin-rules

GO ?= go

# Tools are cached outside the repository, keyed by version.
TOOLS_DIR ?= $(HOME)/.cache/distcache

GOLANGCI_LINT_VERSION ?= v2.11.0
GOLANGCI_LINT_DIR := $(abspath $(TOOLS_DIR))/golangci-lint/$(GOLANGCI_LINT_VERSION)
GOLANGCI_LINT := $(GOLANGCI_LINT_DIR)/golangci-lint
LINT_FLAGS ?=

CONTROLLER_GEN_VERSION ?= v0.23.0
CONTROLLER_GEN_DIR := $(abspath $(TOOLS_DIR))/controller-gen/$(CONTROLLER_GEN_VERSION)
CONTROLLER_GEN := $(CONTROLLER_GEN_DIR)/controller-gen

# The envtest control plane (kube-apiserver, etcd, kubectl), built from the Go
# module proxy by hack/envtest-assets.sh into TOOLS_DIR/envtest/<versions>.
K8S_VERSION ?= 1.37.1
ETCD_VERSION ?= 3.7.0
ENVTEST_ASSETS := $(abspath $(TOOLS_DIR))/envtest/k8s-$(K8S_VERSION)-etcd-$(ETCD_VERSION)/bin
export KUBEBUILDER_ASSETS ?= $(ENVTEST_ASSETS)
export CONTROLLER_GEN

# Upstream Prometheus (module v0.316.0 is Prometheus 3.16.0), built from the
# Go module proxy for test/localkube: Debian's build (make prometheus) leaves
# out Kubernetes service discovery. The tests find it through
# DISTCACHE_PROMETHEUS.
PROMETHEUS_VERSION ?= v0.316.0
# Only the service discoveries the tests use (Kubernetes; file and http are
# always in): the cloud providers' SDKs took most of the build's time.
PROMETHEUS_TAGS := remove_all_sd,enable_kubernetes_sd
PROMETHEUS_DIR := $(abspath $(TOOLS_DIR))/prometheus/$(PROMETHEUS_VERSION)-kubernetes-sd
export DISTCACHE_PROMETHEUS ?= $(PROMETHEUS_DIR)/prometheus

# redis-py from PyPI in a virtualenv of its own, for the gateway's
# conformance test with a client that is not Go; the tests find its
# python through DISTCACHE_REDIS_PY.
REDIS_PY_VERSION ?= 8.1.0
REDIS_PY_DIR := $(abspath $(TOOLS_DIR))/redis-py/$(REDIS_PY_VERSION)
export DISTCACHE_REDIS_PY ?= $(REDIS_PY_DIR)/bin/python
# The P4Runtime clients the software switch's conformance tests run
# (softswitch/conformance), each in a virtualenv of its own — their
# protobuf pins conflict — from the pinned requirements next to the tests.
FINSY_VERSION ?= 0.30.0
FINSY_DIR := $(abspath $(TOOLS_DIR))/finsy/$(FINSY_VERSION)
export DISTCACHE_FINSY_PY ?= $(FINSY_DIR)/bin/python
P4RUNTIME_SH_VERSION ?= 0.0.6
P4RUNTIME_SH_DIR := $(abspath $(TOOLS_DIR))/p4runtime-shell/$(P4RUNTIME_SH_VERSION)
export DISTCACHE_P4RUNTIME_SH_PY ?= $(P4RUNTIME_SH_DIR)/bin/python
# ONOS 2.7.0, which the onos fabric driver's requests are checked against
# (fabric/onos): its REST spec (swagger.json from Maven Central's
# org.onosproject:onos-rest jar, pinned by SHA-256) and a harness that
# decodes the request bodies with ONOS's own JSON codecs
# (fabric/onos/onoscodecs, built with Maven against onos-api and
# onos-core-common; its Maven repository is TOOLS_DIR/m2). The tests find
# them through DISTCACHE_ONOS_REST_SWAGGER and DISTCACHE_ONOS_CODECS_CLASSPATH
# (a file holding the harness's Java class path).
ONOS_VERSION ?= 2.7.0
ONOS_REST_SHA256 ?= 634fb51f6377e9eebef1678d19083a04030d496deffc46992230144ec62f3c0e
ONOS_REST_DIR := $(abspath $(TOOLS_DIR))/onos-rest/$(ONOS_VERSION)
export DISTCACHE_ONOS_REST_SWAGGER ?= $(ONOS_REST_DIR)/swagger.json
# The harness is built once per version of its sources (a clean checkout's
# files are all new, so their times cannot say).
ONOS_CODECS_SRC := fabric/onos/onoscodecs/pom.xml $(sort $(wildcard fabric/onos/onoscodecs/src/main/java/org/distcache/onoscodecs/*.java))
ONOS_CODECS_DIR := $(abspath $(TOOLS_DIR))/onos-codecs/$(ONOS_VERSION)-$(shell cat $(ONOS_CODECS_SRC) | sha256sum | cut -c1-12)
export DISTCACHE_ONOS_CODECS_CLASSPATH ?= $(ONOS_CODECS_DIR)/classpath
MAVEN_REPO := $(abspath $(TOOLS_DIR))/m2
# Jedis from Maven Central for the gateway's cluster face: gateway/jediscluster,
# built like the ONOS harness; the test reads DISTCACHE_JEDIS_CLASSPATH.
JEDIS_VERSION ?= 7.4.1
JEDIS_SRC := gateway/jediscluster/pom.xml $(sort $(wildcard gateway/jediscluster/src/main/java/org/distcache/jediscluster/*.java))
JEDIS_DIR := $(abspath $(TOOLS_DIR))/jedis-cluster/$(JEDIS_VERSION)-$(shell cat $(JEDIS_SRC) | sha256sum | cut -c1-12)
export DISTCACHE_JEDIS_CLASSPATH ?= $(JEDIS_DIR)/classpath

# The build's version, commit and date, linked into the binary
# (internal/buildinfo; `distcache version`). VERSION is the image tag: the
# release this tree is (buildinfo.Release) unless set.
VERSION ?= $(shell sed -n 's/^const Release = "\(.*\)"$$/\1/p' internal/buildinfo/buildinfo.go)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)$(shell git diff --quiet HEAD -- 2>/dev/null || echo -dirty)
COMMIT_EPOCH ?= $(shell git show -s --format=%ct HEAD 2>/dev/null || echo 0)
BUILDINFO := github.com/distcache/distcache/internal/buildinfo
LDFLAGS := -X $(BUILDINFO).version=$(VERSION) -X $(BUILDINFO).commit=$(COMMIT) \
	-X $(BUILDINFO).date=$(shell date -u -d @$(COMMIT_EPOCH) +%Y-%m-%dT%H:%M:%SZ 2>/dev/null)

# The container image (make image): built without a container runtime.
IMAGE_ARCH ?= $(shell $(GO) env GOARCH)
IMAGE_DIR ?= out/image
IMAGE_ARCHIVE ?= $(IMAGE_DIR)/distcache-$(VERSION)-linux-$(IMAGE_ARCH).tar

# Tests.
TEST_TIMEOUT ?= 25m
TEST_FLAGS ?=
# The allocation tests run again without the race detector, whose
# instrumentation allocates (TestServeDoesNotAllocate skips under it).
ALLOC_TESTS ?= DoesNotAllocate|Allocs
ALLOC_PACKAGES ?= ./dataplane/... ./routing/... ./hotkey/... ./workload/ ./placement/...
# Prerequisites that `make test` installs by itself before running the tests.
# Each entry is a target that must be idempotent (do nothing when the thing is
# already present): redis-server (with redis-benchmark and redis-cli) for the
# tests that run a real Redis through internal/testing/redistest; the envtest
# control plane for the operator's tests; controller-gen for the tests that
# keep crds/ in sync with the API types and the Chaos Mesh CRDs in sync with
# their pin (the tests of chaos/ also build hack/chaosmesh, a module of its
# own whose dependencies come from the Go module proxy on first use), and the
# prometheus-operator CRDs in sync with theirs (hack/promoperator, likewise);
# iptables-legacy for the fault-injection suite's delays (test/fault,
# standalone/faults); shellcheck for the test that checks every shell
# script (test/scripts); prometheus and promtool for the tests of the metrics
# and the alert rules; localkube's binaries and Debian packages for the
# test that brings a real node up and down (test/localkube); ONOS's REST
# spec and codec harness for the onos fabric driver's tests (fabric/onos);
# Jedis for the gateway's cluster face (gateway/jediscluster); tclsh and
# dpkg-source for the test that runs Redis's own Tcl test suite, from
# Debian's redis source package, against the gateway (test/rediscompat).
TEST_DEPS ?= redis-server nutcracker envtest controller-gen iptables shellcheck spin prometheus prometheus-kubernetes redis-py finsy p4runtime-shell onos-rest onos-codecs jedis-cluster localkube-deps tclsh dpkg-dev

# Simulator.
SIM_OUT ?= out/sim
SIM_FLAGS ?=

# Fuzzing: every decoder's fuzz target as Target:package.
FUZZ_TARGETS ?= FuzzDecode:./placement/partmap/ FuzzParse:./dataplane/wire/ FuzzReassemble:./dataplane/wire/ FuzzSplitBundle:./dataplane/wire/ FuzzDecodeSockaddr:./dataplane/transport/ \
	FuzzDecodeConfig:./standalone/controlloop/ FuzzDecodeEvents:./standalone/controlloop/ \
	FuzzAuthenticate:./dataplane/wireauth/ FuzzPipeline:./gateway/ FuzzParseRMW:./dataplane/wire/ FuzzParse:./stratum_pipelines/ \
	FuzzParse:./dataplane/redispipe/ FuzzFilter:./dataplane/antireplay/ FuzzRequest:./standalone/control/ FuzzWrite:./softswitch/ FuzzProcess:./softswitch/ \
	FuzzParseFrame:./stratum_pipelines/ FuzzConnection:./gateway/ FuzzCommandGuard:./gateway/ FuzzPlanFromAnswers:./layersizing/ \
	FuzzReadRDB:./snapshot/ FuzzAppendRESP3:./gateway/ FuzzLen:./dataplane/respframe/
FUZZ_TIME ?= 30s
# make test fuzzes every target for FUZZ_CI_TIME (make fuzz-ci); a new
# input the fuzzer finds interesting is minimized for at most
# FUZZ_CI_MINIMIZE, so the step's length stays about the targets' times.
FUZZ_CI_TIME ?= 4s
FUZZ_CI_MINIMIZE ?= 2s

.PHONY: help build image test test-deps vet fmt lint p4 sim bench bench-map-delivery bench-gateway bench-real-cpu demo fuzz fuzz-ci clean manifests api-docs dashboards chart-golden chaos-crds prometheus-crds envtest controller-gen chaos-local

help: ## Show this help
	@echo 'Usage: make <target> [VAR=value ...]'
	@echo
	@echo 'Targets:'
	@grep -hE '^[a-zA-Z0-9_.-]+:.*## ' $(MAKEFILE_LIST) \
		| awk 'BEGIN {FS = ":.*## "} {printf "  %-15s %s\n", $$1, $$2}'
	@echo
	@echo 'Variables: TOOLS_DIR=$(TOOLS_DIR) SIM_OUT=$(SIM_OUT) SIM_FLAGS=$(SIM_FLAGS)'
	@echo '           TEST_TIMEOUT=$(TEST_TIMEOUT) TEST_FLAGS=$(TEST_FLAGS) FUZZ_TIME=$(FUZZ_TIME)'

build: ## Build bin/distcache
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/distcache ./cmd/distcache

image: ## Build the container image without Docker into IMAGE_ARCHIVE (docker load, kind load image-archive, ctr images import)
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build -trimpath -ldflags '$(LDFLAGS) -s -w' \
		-o $(IMAGE_DIR)/distcache-linux-$(IMAGE_ARCH) ./cmd/distcache
	$(GO) run ./hack/image -binary $(IMAGE_DIR)/distcache-linux-$(IMAGE_ARCH) -arch $(IMAGE_ARCH) \
		-version $(VERSION) -revision $(COMMIT) -created $(COMMIT_EPOCH) -out $(IMAGE_ARCHIVE)

test-deps: $(TEST_DEPS) ## Install what the tests need (idempotent): redis-server, envtest, controller-gen, iptables, shellcheck, prometheus (Debian's and upstream), redis-py, finsy, p4runtime-shell, ONOS's REST spec and codecs, Jedis, localkube, tcl, dpkg-dev
	@echo 'test-deps: ok'

# The recipes that install what the tests need, one target each.
include mk/testdeps.mk

# The real-node test (test/localkube) runs after the others: its pods and
# their benchmark Job share the machine's cores with whatever else runs,
# and beside the other packages' race-detected tests a 2-core machine
# starved them. It leaves about half the machine idle, so the tests that
# take little CPU and measure no time run beside it: the allocation tests
# (without the race detector, whose instrumentation allocates) and the
# packages in NORACE_PACKAGES: single-threaded code that the race detector
# only slows (the simulator: 75 s with it, 5 s without).
SERIAL_PACKAGES ?= ./test/localkube/
NORACE_PACKAGES ?= ./sim/
# go vet runs with -race so that it reuses the race build of the tests'
# dependencies instead of compiling them once more (4.5 minutes cold).
# The real-node test's output is printed last, so that the end of a
# failed run's log shows its failure rather than the other packages' lines.

test: test-deps ## Install test prerequisites, then run go vet, all tests with -race (the real-node test last), the allocation tests without it, and every fuzz target for FUZZ_CI_TIME
	$(GO) vet -race ./...
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) $(TEST_FLAGS) \
		$$($(GO) list ./... | grep -v -x -F -f <($(GO) list $(SERIAL_PACKAGES) $(NORACE_PACKAGES)))
	log=$$(mktemp); serial_log=$$(mktemp); \
	{ $(GO) test -count=1 -timeout $(TEST_TIMEOUT) $(TEST_FLAGS) $(NORACE_PACKAGES) && \
	  $(GO) test -count=1 -timeout $(TEST_TIMEOUT) -run '$(ALLOC_TESTS)' $(ALLOC_PACKAGES); } >"$$log" 2>&1 & beside=$$!; \
	serial=0; $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) $(TEST_FLAGS) $(SERIAL_PACKAGES) >"$$serial_log" 2>&1 || serial=$$?; \
	wait $$beside && rc=0 || rc=$$?; cat "$$log" "$$serial_log"; rm -f "$$log" "$$serial_log"; \
	exit $$(( serial != 0 ? serial : rc ))
	$(MAKE) --no-print-directory fuzz-ci

vet: ## Run go vet
	$(GO) vet -race ./...

fmt: ## Format all Go files with gofmt -w
	find . -name '*.go' -not -path './.git/*' -not -path '*/testdata/*' -print0 \
		| xargs -0 -r gofmt -w

$(GOLANGCI_LINT):
	@echo 'Installing golangci-lint $(GOLANGCI_LINT_VERSION) into $(GOLANGCI_LINT_DIR)'
	mkdir -p '$(GOLANGCI_LINT_DIR)'
	GOBIN='$(GOLANGCI_LINT_DIR)' $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

controller-gen: $(CONTROLLER_GEN) ## Install controller-gen into TOOLS_DIR (idempotent)

$(CONTROLLER_GEN):
	@echo 'Installing controller-gen $(CONTROLLER_GEN_VERSION) into $(CONTROLLER_GEN_DIR)'
	mkdir -p '$(CONTROLLER_GEN_DIR)'
	GOBIN='$(CONTROLLER_GEN_DIR)' $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)

envtest: ## Build kube-apiserver, kubectl and etcd for envtest into TOOLS_DIR (idempotent; minutes the first time)
	K8S_VERSION=$(K8S_VERSION) ETCD_VERSION=$(ETCD_VERSION) DISTCACHE_CACHE='$(abspath $(TOOLS_DIR))' hack/envtest-assets.sh >/dev/null

# The Helm chart carries copies of the CRDs, of the RBAC (its templates
# read the rules from files/rbac/role.yaml) and of the alerting rules
# (alerts/, rendered as a PrometheusRule); the tests of charts/ check that
# they are the same bytes. The chart's golden renders, which show the rules,
# are rewritten too: review their diff with the markers'.
CHART_DIR := charts/distcache

# The operator's RBAC comes from two sets of +kubebuilder:rbac markers: its
# ClusterRole from the reconcilers and the manager, and its Secret
# permissions (bound per namespace) from package operator/secretaccess.
# TestRBACUpToDate in operator/manager uses the same paths.
OPERATOR_RBAC_PATHS := 'paths=./operator/controller/...;./operator/manager/...'
SECRETS_RBAC_PATHS := paths=./operator/secretaccess/...

manifests: $(CONTROLLER_GEN) ## Regenerate deep-copy code, the CRDs in crds/ and docs/api.md from api/, the operator's RBAC in config/rbac/ from operator/, and their copies (and the alerting rules') and golden renders in the chart
	'$(CONTROLLER_GEN)' object paths=./api/...
	'$(CONTROLLER_GEN)' crd paths=./api/... output:crd:artifacts:config=crds
	'$(CONTROLLER_GEN)' rbac:roleName=distcache-operator $(OPERATOR_RBAC_PATHS) output:rbac:artifacts:config=config/rbac
	'$(CONTROLLER_GEN)' rbac:roleName=distcache-operator-secrets $(SECRETS_RBAC_PATHS) output:rbac:artifacts:config=config/rbac/secrets
	$(GO) run ./hack/apidocs -api api/v1alpha1 -out docs/api.md
	rm -f $(CHART_DIR)/crds/*.yaml
	cp crds/*.yaml $(CHART_DIR)/crds/
	cp config/rbac/role.yaml $(CHART_DIR)/files/rbac/role.yaml
	mkdir -p $(CHART_DIR)/files/rbac/secrets
	cp config/rbac/secrets/role.yaml $(CHART_DIR)/files/rbac/secrets/role.yaml
	cp alerts/distcache.rules.yaml $(CHART_DIR)/files/alerts/distcache.rules.yaml
	$(GO) test -count=1 -run '^TestGoldenRenders$$' ./charts -update

# The API reference, docs/api.md, from the Go types' doc comments and
# markers (hack/apidocs); its tests check that it is up to date.
api-docs: ## Regenerate the API reference docs/api.md from the Go types in api/
	$(GO) run ./hack/apidocs -api api/v1alpha1 -out docs/api.md

dashboards: ## Render the Grafana dashboards (package dashboards) into dashboards/*.json and the chart's files/dashboards, and rewrite the chart's golden renders
	$(GO) test -count=1 -run '^TestCommittedJSON$$' ./dashboards -update
	rm -f $(CHART_DIR)/files/dashboards/*.json
	cp dashboards/*.json $(CHART_DIR)/files/dashboards/
	$(GO) test -count=1 -run '^TestGoldenRenders$$' ./charts -update

chart-golden: ## Rewrite the chart's golden renders (charts/testdata) after a deliberate change to the chart
	$(GO) test -count=1 -run '^TestGoldenRenders$$' ./charts -update

# The Chaos Mesh CRDs that the tests of chaos/ install into the envtest API
# server, generated from the Chaos Mesh API module pinned in
# hack/chaosmesh/go.mod (a module of its own: it needs other Kubernetes
# versions than the root module).
CHAOS_MESH_CRDS_DIR := internal/testing/kubetest/testdata/chaosmesh

chaos-crds: $(CONTROLLER_GEN) ## Regenerate the Chaos Mesh CRDs the chaos/ tests install, from the pin in hack/chaosmesh
	CONTROLLER_GEN='$(CONTROLLER_GEN)' hack/chaosmesh/crds.sh '$(CHAOS_MESH_CRDS_DIR)'

# The prometheus-operator CRDs (ServiceMonitor, PodMonitor, PrometheusRule)
# that the tests of charts/ install into the envtest API server, generated
# from the monitoring API module pinned in hack/promoperator/go.mod.
PROMETHEUS_CRDS_DIR := internal/testing/kubetest/testdata/promoperator

prometheus-crds: $(CONTROLLER_GEN) ## Regenerate the prometheus-operator CRDs the chart's tests install, from the pin in hack/promoperator
	CONTROLLER_GEN='$(CONTROLLER_GEN)' hack/promoperator/crds.sh '$(PROMETHEUS_CRDS_DIR)'

lint: $(GOLANGCI_LINT) ## Run golangci-lint (installed into TOOLS_DIR if missing)
	'$(GOLANGCI_LINT)' run $(LINT_FLAGS) ./...

sim: ## Run all simulator experiments into SIM_OUT (e.g. make sim SIM_FLAGS=--quick)
	$(GO) run ./cmd/distcache sim --experiment all --out $(SIM_OUT) $(SIM_FLAGS)

bench: ## Run all benchmarks, output also written to out/bench.txt
	mkdir -p out
	$(GO) test -run '^$$' -bench . -benchmem -count=1 ./... | tee out/bench.txt

# The gateway against twemproxy and Redis (docs/benchmarks.md): first
# redis-benchmark side by side on a cluster without emulated capacity
# (hack/gatewaybench), then the demo cluster with emulated capacity under a
# skewed workload, through Redis clients: DistCache behind the gateway, the
# same gateway with caching off, and twemproxy. Each mode warms up for 60 s:
# with 1,000,000 keys the nodes' caches are still filling after 15 s.
GATEWAY_BENCH_DIR ?= out/gatewaybench

bench-gateway: redis-server nutcracker build ## Measure the Redis-compatible gateway against twemproxy and Redis: redis-benchmark side by side, and a skewed run with emulated capacity
	$(GO) run ./hack/gatewaybench -distcache bin/distcache -floor -hit-keys 1000 -run-dir '$(GATEWAY_BENCH_DIR)/run' -out '$(GATEWAY_BENCH_DIR)/redis-benchmark.md'
	@bin/distcache down --run-dir '$(GATEWAY_BENCH_DIR)/skewed' >/dev/null 2>&1 || true
	bin/distcache up -f hack/demo/cluster.yaml --run-dir '$(GATEWAY_BENCH_DIR)/skewed' --shard-capacity $(DEMO_SHARD_CAPACITY) --bundle
	@trap "bin/distcache down --run-dir '$(GATEWAY_BENCH_DIR)/skewed'" EXIT; \
		bin/distcache bench --run-dir '$(GATEWAY_BENCH_DIR)/skewed' --keys 1000000 --skew 0.99 --write-ratio 0.05 \
		--via gateway --modes twemproxy,nocache,distcache --duration 20s --warmup 60s --out '$(GATEWAY_BENCH_DIR)/skewed-report'

# DistCache against twemproxy on real CPU, no emulation (docs/benchmarks.md,
# hack/realcpu): the bench-gateway cluster under distcache up --server-cpu
# (each storage server and each cache node in a cgroup limited to
# REAL_CPU_LIMIT CPUs) and as many plain redis-servers under the same limit
# behind twemproxy; Zipf 0.9, 0.99 and 1.2 over 1,000,000 keys with 5 %
# writes, a closed loop through the gateway and through twemproxy. Needs
# root (cgroups).
REAL_CPU_DIR ?= out/realcpu
REAL_CPU_LIMIT ?= 0.025
REAL_CPU_FLAGS ?=

bench-real-cpu: redis-server nutcracker build ## Measure DistCache against twemproxy on real CPU: every server under the same cgroup CPU limit (root)
	@[ "$$(id -u)" = 0 ] || { echo 'make bench-real-cpu needs root: it puts each server in a cgroup with a CPU limit'; exit 1; }
	$(GO) run ./hack/realcpu -distcache bin/distcache -cpu $(REAL_CPU_LIMIT) -run-dir '$(REAL_CPU_DIR)/run' -out '$(REAL_CPU_DIR)' $(REAL_CPU_FLAGS)

# Redis's own Tcl test suite against the gateway (hack/rediscompat,
# docs/gateway.md): the suite of the installed redis-server's Debian source
# package, downloaded once into TOOLS_DIR/redis-src-<version> by apt-get
# source with apt lists of its own; each unit against the gateway of a
# fresh standalone cluster (hack/rediscompat/cluster.yaml), bounded by 5
# minutes. It prints passed, failed and skipped tests per unit and writes
# the report, with the failures by cause, to REDIS_COMPAT_OUT and each
# unit's output to REDIS_COMPAT_LOGS. REDIS_COMPAT_FLAGS: more flags, e.g.
# -units unit/type/string,unit/expire.
REDIS_COMPAT_OUT ?= out/redis-compat.md
REDIS_COMPAT_LOGS ?= out/redis-compat
REDIS_COMPAT_FLAGS ?=

.PHONY: redis-compat
redis-compat: redis-server tclsh dpkg-dev build ## Run Redis's own test suite against the gateway of a standalone cluster; per-unit table, report in REDIS_COMPAT_OUT
	$(GO) run ./hack/rediscompat -distcache bin/distcache -cache '$(abspath $(TOOLS_DIR))' \
		-out '$(REDIS_COMPAT_OUT)' -logs '$(REDIS_COMPAT_LOGS)' $(REDIS_COMPAT_FLAGS)

# Partition-map delivery latency (docs/benchmarks.md): real shim and node
# processes read their map through envtest's API server as a ServiceAccount,
# and from a file for comparison; MAP_DELIVERY_VERSIONS versions each.
MAP_DELIVERY_VERSIONS ?= 200

bench-map-delivery: test-deps ## Measure publication → applied latency of the partition map through the Kubernetes API and through a file
	$(GO) test -count=1 -timeout 10m -run '^TestMapDelivery$$' -v ./cmd/distcache/ -args -map-delivery-versions=$(MAP_DELIVERY_VERSIONS)

# The demo: standalone mode on a real local cluster of processes
# (hack/demo/cluster.yaml: 8 racks × 4 Redis shards, 4 spine + 8 leaf cache
# nodes), a Zipf-0.99 workload with 5 % writes for NoCache and DistCache, one
# cache-node failure, and a report. Server capacities are emulated by rate
# limits (DistCache §6.1): DEMO_SHARD_CAPACITY work units per second per shard;
# DEMO_RATE operations per second are offered to both modes (0: probed per mode).
DEMO_DIR ?= out/demo
DEMO_RUN_DIR ?= $(DEMO_DIR)/run
DEMO_JSON ?=
DEMO_SHARD_CAPACITY ?= 200
DEMO_FLAGS ?=
DEMO_RATE ?= 0
DEMO_BENCH = bin/distcache bench --run-dir '$(DEMO_RUN_DIR)' --keys 100000 --skew 0.99 --write-ratio 0.05 \
	--rate $(DEMO_RATE) --duration 20s --warmup 15s --fail-node demo-spine-1@8s --down-for 6s --out '$(DEMO_DIR)' \
	$(if $(DEMO_JSON),--json '$(DEMO_JSON)') $(DEMO_FLAGS)

# After the report, the same cluster once more through Redis clients: a
# distcache gateway per client (--via gateway) against twemproxy in front of
# the cluster's own Redis servers, without a failure; its summary only.
DEMO_GATEWAY_BENCH = bin/distcache bench --run-dir '$(DEMO_RUN_DIR)' --keys 100000 --skew 0.99 --write-ratio 0.05 \
	--via gateway --modes twemproxy,distcache --duration 10s --warmup 8s --predict=false --out '$(DEMO_DIR)/gateway'

# The demo's headline, first: DistCache against twemproxy on real CPU
# (hack/realcpu, as make bench-real-cpu, one skew and shorter windows).
# It needs root for the cgroup CPU limits; without it the line says so.
DEMO_REAL_CPU = $(GO) run ./hack/realcpu -distcache bin/distcache -cpu $(REAL_CPU_LIMIT) -skews 0.99 \
	-duration 10s -warmup 10s -run-dir '$(DEMO_DIR)/realcpu/run' -out '$(DEMO_DIR)/realcpu' -headline '$(DEMO_DIR)/headline.txt'

demo: redis-server nutcracker build ## Run DistCache standalone on local processes: the real-CPU headline, then NoCache vs DistCache with a failure, report (DEMO_JSON=path for JSON)
	@mkdir -p '$(DEMO_DIR)'
	@if [ "$$(id -u)" = 0 ]; then \
		echo '==> $(DEMO_REAL_CPU)'; \
		$(DEMO_REAL_CPU) >'$(DEMO_DIR)/realcpu.log' 2>&1 || { cat '$(DEMO_DIR)/realcpu.log' >&2; exit 1; }; \
	else \
		echo 'Real CPU, no emulation: not measured (make demo needs root to give each server a cgroup CPU limit; make bench-real-cpu as root measures it)' >'$(DEMO_DIR)/headline.txt'; \
	fi
	@echo '==> Headline'; cat '$(DEMO_DIR)/headline.txt'
	@echo '==> Stopping a demo cluster left running, if any'
	@bin/distcache down --run-dir '$(DEMO_RUN_DIR)' >/dev/null 2>&1 || true
	@echo '==> bin/distcache up -f hack/demo/cluster.yaml --run-dir $(DEMO_RUN_DIR) --shard-capacity $(DEMO_SHARD_CAPACITY)'
	@bin/distcache up -f hack/demo/cluster.yaml --run-dir '$(DEMO_RUN_DIR)' --shard-capacity $(DEMO_SHARD_CAPACITY)
	@echo '==> $(DEMO_BENCH)'
	@set -o pipefail; trap "echo '==> bin/distcache down --run-dir $(DEMO_RUN_DIR)'; bin/distcache down --run-dir '$(DEMO_RUN_DIR)'" EXIT; \
		$(DEMO_BENCH) && \
		echo '==> $(DEMO_GATEWAY_BENCH)' && \
		{ $(DEMO_GATEWAY_BENCH) 2>'$(DEMO_DIR)/gateway.log' || { cat '$(DEMO_DIR)/gateway.log' >&2; exit 1; }; } | \
		awk '/^ *mode +throughput/{p=1} p==1{print} p==1 && /^ *distcache /{p=2}' && \
		echo '==> Headline (from the start of the demo; the throughput above is emulated capacity)' && cat '$(DEMO_DIR)/headline.txt'

# The long fault-injection run (test/fault, docs/reliability.md): SCHEDULES
# random schedules drawn from SEED, each a cluster in a network namespace of
# its own under a checked workload; a progress line per schedule and a report
# in CHAOS_REPORT (report.txt, report.json). Needs root (network namespaces).
SCHEDULES ?= 10
SEED ?= 1
CHAOS_REPORT ?= out/chaos
CHAOS_TIMEOUT ?= 6h
# CHAOS_FLAGS: more flags of the test, e.g. -bundle (the clusters send bundles).
CHAOS_FLAGS ?=

chaos-local: redis-server iptables ## Run SCHEDULES random fault schedules from SEED against local clusters, report in CHAOS_REPORT
	$(GO) test -count=1 -run '^TestChaosLocal$$' -v -timeout $(CHAOS_TIMEOUT) ./test/fault \
		-args -schedules=$(SCHEDULES) -seed=$(SEED) -report='$(abspath $(CHAOS_REPORT))' $(CHAOS_FLAGS)

p4: ## Compile the P4 pipelines into out/p4: v1model with p4c (or Docker's p4lang/p4c), TNA with bf-p4c; says plainly which it cannot
	hack/p4/build.sh

fuzz: ## Fuzz every decoder (FUZZ_TARGETS) for FUZZ_TIME each (default 30s)
	for t in $(FUZZ_TARGETS); do \
		$(GO) test -run '^$$' -fuzz "^$${t%%:*}$$" -fuzztime $(FUZZ_TIME) "$${t#*:}"; \
	done

# Every target in turn (go test -fuzz takes one package and one target);
# a failing target's output is printed with the path of the input that
# made it fail (testdata/fuzz/<Target>/<hash> under its package, which is
# where a regression seed goes), and the step fails once all have run.
fuzz-ci: ## Fuzz every decoder (FUZZ_TARGETS) for FUZZ_CI_TIME each, as make test does; fail on a crasher and print its input's path
	@GO='$(GO)' FUZZTIME='$(FUZZ_CI_TIME)' FUZZMINIMIZE='$(FUZZ_CI_MINIMIZE)' hack/fuzz-ci.sh $(FUZZ_TARGETS)

# The Kind workflow (hack/kind/kind.sh), for workstations with Docker: a
# cluster from hack/kind/cluster.yaml with a pinned kind and node image, the
# image loaded from its archive, the chart and the sample managed
# CacheCluster installed, and an end-to-end check. It cannot run on machines
# without a container runtime; make test covers what it applies instead.
.PHONY: kind-up kind-load kind-deploy kind-test kind-down print-version print-fuzz-targets print-envtest-assets
kind-up: ## Create the Kind cluster (Docker needed)
	hack/kind/kind.sh up
kind-load: ## Build the image and load it into the Kind cluster
	hack/kind/kind.sh load
kind-deploy: ## helm install the chart and apply the sample managed CacheCluster on Kind
	hack/kind/kind.sh deploy
kind-test: ## On Kind: wait for Ready, run distcache bench as a Job, delete a cache pod and check remap and restore
	hack/kind/kind.sh test
kind-down: ## Delete the Kind cluster
	hack/kind/kind.sh down

# localkube (hack/localkube): a real Kubernetes on this machine, built from
# the Go module proxy and Debian's containerd, without a registry: one node,
# or NODES (2 to 8) nodes, each in a network namespace. Needs root. See
# docs/localkube.md.
NODES ?= 1
# NETPOL=1: every node also runs a NetworkPolicy engine (kube-network-policies).
NETPOL ?= 0
.PHONY: localkube-up localkube-down localkube-load localkube-deps
localkube-deps: ## Install localkube's Debian packages and build its binaries into TOOLS_DIR (idempotent; minutes the first time)
	@$(call apt_install,containerd,containerd)
	@$(call apt_install,runc,runc)
	@$(call apt_install,/usr/lib/cni/bridge,containernetworking-plugins)
	@$(call apt_install,conntrack,conntrack)
	@$(call apt_install,socat,socat)
	@$(call apt_install,nft,nftables)
	DISTCACHE_CACHE='$(abspath $(TOOLS_DIR))' hack/localkube/assets.sh >/dev/null
	DISTCACHE_CACHE='$(abspath $(TOOLS_DIR))' hack/localkube/netpol-assets.sh >/dev/null
localkube-up: envtest localkube-deps ## Start localkube (root): control plane, then NODES nodes (containerd, kubelet, kube-proxy; NETPOL=1: a NetworkPolicy engine), CoreDNS; wait for the Nodes
	NODES='$(NODES)' NETPOL='$(NETPOL)' hack/localkube/localkube.sh up
localkube-down: ## Stop localkube by PID and restore the host (sysctls, addresses, links, namespaces, routes, mounts, iptables)
	hack/localkube/localkube.sh down
localkube-load: image ## Import the distcache image archive into every localkube node's containerd
	hack/localkube/localkube.sh load '$(IMAGE_ARCHIVE)'

print-version:
	@echo '$(VERSION)'
print-fuzz-targets:
	@echo '$(FUZZ_TARGETS)'
print-envtest-assets:
	@echo '$(ENVTEST_ASSETS)'

clean: ## Remove build and output directories (bin/, out/)
	rm -rf bin out
