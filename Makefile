# fleetgate — build, generate, test.
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
export GOTOOLCHAIN := local

BIN := $(CURDIR)/bin
TOOLS_MOD := tests/tools
K8S_VERSION := v1.36.3
K8S_LDFLAGS := -X k8s.io/component-base/version.gitVersion=$(K8S_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=36

CONTROLLER_GEN_VERSION := v0.21.0
KUSTOMIZE_VERSION := v5.8.2
GOLANGCI_LINT_VERSION := v2.15.0
GOTESTSUM_VERSION := v1.13.0

CONTROLLER_GEN := $(BIN)/controller-gen-$(CONTROLLER_GEN_VERSION)
KUSTOMIZE := $(BIN)/kustomize-$(KUSTOMIZE_VERSION)
GOLANGCI_LINT := $(BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
GOTESTSUM := $(BIN)/gotestsum-$(GOTESTSUM_VERSION)

# The test control plane, built from the pinned Go modules in tests/tools. The stamp names the pins,
# so the binaries are rebuilt only when tests/tools/go.mod changes.
TESTBED_STAMP := $(BIN)/.testbed-$(shell sha256sum $(TOOLS_MOD)/go.mod | cut -c1-12)
TESTBED_BINS := $(BIN)/kube-apiserver $(BIN)/etcd $(BIN)/kube-controller-manager
# A node's binaries (kubelet, kube-proxy, kube-scheduler), from the same pins but with their own stamp:
# only tests that run pods need them. Not .testbed-*: the control plane's rule removes those.
NODE_STAMP := $(BIN)/.node-$(shell sha256sum $(TOOLS_MOD)/go.mod | cut -c1-12)
# The Debian packages a node runs on: container runtime, CNI plugins, packet filter tools.
NODE_PACKAGES := containerd runc containernetworking-plugins iptables nftables conntrack

# moto, the AWS API fake the AWS provider's tests run against (providers/aws/mototest), in a venv in
# bin/moto. The stamp names the pin, so the venv is made once and remade only when the pin changes.
MOTO_VERSION := 5.2.5
MOTO_DIR := $(BIN)/moto
MOTO_SERVER := $(MOTO_DIR)/bin/moto_server
MOTO_STAMP := $(MOTO_DIR)/.installed-$(MOTO_VERSION)
# The tests' moto_server: ours when installed; otherwise mototest falls back to one on PATH, or skips.
MOTO_ENV = FLEETGATE_MOTO_SERVER=$$(test -x $(MOTO_SERVER) && echo $(MOTO_SERVER) || true)

# Test packages that start kube-apiservers.
API_SERVER_PKGS := /tests/|/providers/incluster

# Ops per case of make bench-aws.
AWS_BENCH_N ?= 50
# Ops per case of make bench-gcp.
GCP_BENCH_N ?= 50

# The release: VERSION is the CSV's version, the binary's main.version and (as v$(VERSION)) the
# image tag that config/manager and the bundle name. `make image VERSION=1.2.3` rewrites those.
VERSION ?= 0.1.0
IMAGE_REPO ?= fleetgate
IMG ?= $(IMAGE_REPO):v$(VERSION)
BUNDLE_IMG ?= $(IMAGE_REPO)-bundle:v$(VERSION)
BUNDLE_VERSION ?= $(VERSION)
BUNDLE_GEN = go run ./bundle/gen --version $(BUNDLE_VERSION) --image $(IMG) --config config --out bundle
# Where make image writes the OCI layouts (oci/, bundle/) and the amd64 docker archive (fleetgate.tar).
IMAGE_OUT ?= $(BIN)/image

.PHONY: all
all: build

##@ Development

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code for our API types.
	$(CONTROLLER_GEN) object paths=./api/...

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs and RBAC from kubebuilder markers.
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=manager-role paths=./controllers/... output:rbac:artifacts:config=config/rbac

.PHONY: testbed-crds
testbed-crds: ## Copy the third-party CRDs the test bed installs from the pinned modules.
	rm -f tests/testbed/crds/*.yaml
	gw=$$(go list -m -f '{{.Dir}}' sigs.k8s.io/gateway-api); \
	  cp $$gw/config/crd/experimental/gateway.networking.k8s.io_*routes.yaml \
	     $$gw/config/crd/experimental/gateway.networking.k8s.io_gateway*.yaml \
	     $$gw/config/crd/experimental/gateway.networking.k8s.io_referencegrants.yaml \
	     $$gw/config/crd/experimental/gateway.networking.k8s.io_backendtlspolicies.yaml \
	     $$gw/config/crd/experimental/gateway.networking.k8s.io_listenersets.yaml tests/testbed/crds/
	mcs=$$(go list -m -f '{{.Dir}}' sigs.k8s.io/mcs-api); cp $$mcs/config/crd/*.yaml tests/testbed/crds/
	edns=$$(go mod download -json sigs.k8s.io/external-dns@v0.22.0 | sed -n 's/.*"Dir": "\(.*\)".*/\1/p'); \
	  cp $$edns/config/crd/standard/dnsendpoints.externaldns.k8s.io.yaml tests/testbed/crds/
	chmod 644 tests/testbed/crds/*.yaml

.PHONY: fmt
fmt: ## gofmt the tree.
	gofmt -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## go vet.
	go vet ./...

.PHONY: lint
lint: $(GOLANGCI_LINT) ## golangci-lint.
	$(GOLANGCI_LINT) run ./...

.PHONY: verify
verify: generate manifests ## Fail when generated files are stale or go.mod is not tidy.
	$(BUNDLE_GEN)
	git diff --exit-code -- api config bundle
	@# -e: the module proxy refuses a module that nothing we build needs (external-dns's graph).
	go mod tidy -e -diff

##@ Build

.PHONY: bundle
bundle: manifests ## Generate and validate the OLM bundle in bundle/ from config/ (and point config/manager at IMG).
	$(BUNDLE_GEN)

# No daemon, no registry: go-containerregistry writes the images (image/). Every timestamp is the
# commit time, so a clean checkout of a commit gives the same digests on any machine; the revision
# label says -dirty when the tree is not that commit (a VERSION override rewrites the bundle).
.PHONY: image
image: ## Build the operator image (linux/amd64+arm64 OCI index), its amd64 docker archive and the bundle image into IMAGE_OUT.
	$(BUNDLE_GEN)
	rev=$$(git rev-parse HEAD)$$(git diff --quiet HEAD -- . || echo -dirty); \
	  SOURCE_DATE_EPOCH=$${SOURCE_DATE_EPOCH:-$$(git log -1 --format=%ct)} \
	  go run ./image --version $(VERSION) --revision $$rev --image $(IMG) --bundle-image $(BUNDLE_IMG) \
	    --bundle bundle --out $(IMAGE_OUT)

.PHONY: build
build: ## Build the operator binary into bin/.
	go build -o $(BIN)/fleetgate .

.PHONY: testbed
testbed: $(TESTBED_STAMP) ## Build kube-apiserver, etcd and kube-controller-manager from source (cached).

# The stamp's name carries a hash of go.mod, so no file times: a fresh checkout must not rebuild.
$(TESTBED_STAMP):
	@echo ">> building the test control plane ($(K8S_VERSION)) from source; ~10 min the first time on 2 cores"
	cd $(TOOLS_MOD) && go build -ldflags "$(K8S_LDFLAGS)" -o $(BIN)/etcd ./etcd
	cd $(TOOLS_MOD) && go build -ldflags "$(K8S_LDFLAGS)" -o $(BIN)/kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
	cd $(TOOLS_MOD) && go build -ldflags "$(K8S_LDFLAGS)" -o $(BIN)/kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
	rm -f $(BIN)/.testbed-* && touch $@

.PHONY: testbed-node
testbed-node: $(NODE_STAMP) node-packages ## Build kubelet, kube-proxy and kube-scheduler from source (cached) and install a node's Debian packages.

$(NODE_STAMP):
	@echo ">> building the test node ($(K8S_VERSION)) from source; ~4 min with a warm Go cache on 2 cores"
	cd $(TOOLS_MOD) && go build -ldflags "$(K8S_LDFLAGS)" -o $(BIN)/kubelet k8s.io/kubernetes/cmd/kubelet
	cd $(TOOLS_MOD) && go build -ldflags "$(K8S_LDFLAGS)" -o $(BIN)/kube-proxy k8s.io/kubernetes/cmd/kube-proxy
	cd $(TOOLS_MOD) && go build -ldflags "$(K8S_LDFLAGS)" -o $(BIN)/kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler
	rm -f $(BIN)/.node-* && touch $@

##@ Run

.PHONY: demo
demo: testbed build ## Start a local control plane, run the operator against it, and show what it does.
	go build -o $(BIN)/fleetgate-demo ./tests/demo
	@# exec, not `go run`: go run's child would miss the signals sent to its parent and outlive it.
	exec $(BIN)/fleetgate-demo --operator $(BIN)/fleetgate

.PHONY: run
run: ## Run the operator against the current kubeconfig.
	go run . --leader-elect=false

##@ Test

.PHONY: test
test: testbed testbed-node image moto bind9 ## Run every test (unit, golden, AWS on moto, integration on real API servers).
	$(MOTO_ENV) go test -count=1 $$(go list ./... | grep -vE '$(API_SERVER_PKGS)')
	@# Packages that start API servers run one at a time: two cores do not start six at once reliably.
	$(MOTO_ENV) KUBEBUILDER_ASSETS=$(BIN) go test -count=1 -p 1 -timeout 60m $$(go list ./... | grep -E '$(API_SERVER_PKGS)')

# How many times `make aws-kill` SIGKILLs the AWS provider mid-provisioning; `make test` kills it 10 times.
AWS_KILLS ?= 100

.PHONY: aws-kill
aws-kill: moto ## AWS kill test on moto: SIGKILL the provider AWS_KILLS (default 100) times, then 0 leaks and a clean run's state.
	$(MOTO_ENV) FLEETGATE_AWS_KILLS=$(AWS_KILLS) go test -count=1 -timeout 60m -v -run '^TestKillDuringProvisioning$$' ./providers/aws/

# How many times `make gcp-kill` SIGKILLs the GCP provider mid-provisioning; `make test` kills it 10 times.
GCP_KILLS ?= 100

.PHONY: gcp-kill
gcp-kill: ## GCP kill test on the compute fake: SIGKILL the provider GCP_KILLS (default 100) times, then 0 leaks and a clean run's state.
	FLEETGATE_GCP_KILLS=$(GCP_KILLS) go test -count=1 -timeout 60m -v -run '^TestKillDuringProvisioning$$' ./providers/gcp/

# How long `make soak` churns; `make test` runs the soak test's short default.
SOAK ?= 10m

.PHONY: soak
soak: testbed ## Status soak: hundreds of objects, churn and conflicting writers for SOAK (default 10m) on a real API server.
	FLEETGATE_SOAK=$(SOAK) KUBEBUILDER_ASSETS=$(BIN) go test -count=1 -timeout 0 -v -run TestStatusSoak ./tests/integration/

.PHONY: conformance
conformance: testbed ## Run the upstream Gateway API conformance suite (all gateway profiles); report in tests/conformance/reports/.
	FLEETGATE_CONFORMANCE=full KUBEBUILDER_ASSETS=$(BIN) go test -count=1 -timeout 40m -v -run TestConformance ./tests/conformance/ \
	  | tee $(CURDIR)/tests/conformance/reports/last-run.log | grep -E '^(=== RUN|\s*--- (PASS|FAIL)|FAIL|ok)'

.PHONY: conformance-node
conformance-node: testbed testbed-node ## The same suite with its backends as real pods on a real node (root); report ...-node.yaml in tests/conformance/reports/.
	FLEETGATE_CONFORMANCE=full FLEETGATE_CONFORMANCE_NODE=1 KUBEBUILDER_ASSETS=$(BIN) go test -count=1 -timeout 60m -v -run TestConformance ./tests/conformance/ \
	  | tee $(CURDIR)/tests/conformance/reports/last-run-node.log | grep -E '^(=== RUN|\s*--- (PASS|FAIL)|FAIL|ok)'

.PHONY: bench-serve
bench-serve: testbed ## Time from applying a route to its first 200 through the local-mode proxy (p50/p99).
	KUBEBUILDER_ASSETS=$(BIN) go test -run xxx -bench TimeToServe -benchtime 1x ./tests/integration/

.PHONY: bench-aws
bench-aws: moto ## The AWS provider's call budget and Ensure p50/p99 on moto (AWS_BENCH_N ops per case) → tests/bench/results/aws-calls.md.
	$(MOTO_ENV) go test -count=1 -run xxx -bench Ensure -benchtime $(AWS_BENCH_N)x ./providers/aws/ 2>&1 | grep -v 'proxy error' | tee $(BIN)/bench-aws.txt
	tests/bench/aws/report.sh $(MOTO_SERVER) < $(BIN)/bench-aws.txt > tests/bench/results/aws-calls.md

.PHONY: bench-gcp
bench-gcp: ## The GCP provider's call budget and Ensure p50/p99 on the compute fake (GCP_BENCH_N ops per case) → tests/bench/results/gcp-calls.md.
	go test -count=1 -run xxx -bench Ensure -benchtime $(GCP_BENCH_N)x ./providers/gcp/ 2>&1 | tee $(BIN)/bench-gcp.txt
	tests/bench/gcp/report.sh < $(BIN)/bench-gcp.txt > tests/bench/results/gcp-calls.md

.PHONY: bench-convergence
bench-convergence: testbed ## Fleet convergence: MEMBERS (3, hub included) members, routes added one at a time (ROUTES=3000), cold start (COLD_ROUTES=5000).
	KUBEBUILDER_ASSETS=$(BIN) go test -run xxx -bench Convergence -benchtime 1x -timeout 60m ./tests/bench/convergence/

# The proxy's framing fuzz targets: `make test` runs their seed corpora; this runs each for FUZZTIME.
FUZZTIME ?= 10m
FUZZ_TARGETS := FuzzForward FuzzParseHead

.PHONY: fuzz
fuzz: ## Run the proxy's framing fuzz targets for FUZZTIME each (default 10m); new crashers land in testdata/fuzz.
	for t in $(FUZZ_TARGETS); do go test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) ./dataplane/proxy/ || exit 1; done

.PHONY: test-race
test-race: testbed
	KUBEBUILDER_ASSETS=$(BIN) go test -race -count=1 -timeout 40m ./...

##@ Tools

.PHONY: moto
moto: $(MOTO_STAMP) ## Install moto[server] $(MOTO_VERSION) into bin/moto (once; make test does it).

# Without python3, its venv module or pip, CI ($$CI set) fails here; elsewhere a warning, and the AWS
# tests use a moto_server on PATH or skip. A python3 without ensurepip gets python3-venv from apt
# when we are root.
$(MOTO_STAMP):
	@fail() { if [ -n "$$CI" ]; then echo "ERROR: $$1" >&2; exit 1; fi; \
	  echo "WARNING: $$1; the AWS tests use a moto_server on PATH or skip" >&2; exit 0; }; \
	command -v python3 >/dev/null || fail "python3 not found: cannot install moto"; \
	if ! python3 -c 'import ensurepip' 2>/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    { apt-get update -q && apt-get install -y -q python3-venv; } || fail "apt-get install python3-venv failed"; \
	  else fail "python3 has no venv support (ensurepip): install python3-venv"; fi; \
	fi; \
	echo ">> installing moto[server]==$(MOTO_VERSION) into $(MOTO_DIR) (~40 s, 320 MB)"; \
	rm -rf $(MOTO_DIR); \
	python3 -m venv $(MOTO_DIR) || fail "python3 -m venv $(MOTO_DIR) failed"; \
	$(MOTO_DIR)/bin/pip install -q --disable-pip-version-check 'moto[server]==$(MOTO_VERSION)' \
	  || fail "pip install moto[server]==$(MOTO_VERSION) failed"; \
	touch $@

# BIND9, the name server the embedded DNS publisher's tests update (providers/dns/bindtest), from
# Debian's bind9 package, when named is missing. Without root or apt-get, CI ($$CI set) fails here;
# elsewhere a warning, and those tests skip.
.PHONY: bind9
bind9: ## Install BIND9 (named) from the Debian package when it is missing (make test does it).
	@fail() { if [ -n "$$CI" ]; then echo "ERROR: $$1" >&2; exit 1; fi; \
	  echo "WARNING: $$1; the DNS publisher's BIND9 tests skip" >&2; exit 0; }; \
	if [ -x /usr/sbin/named ] || command -v named >/dev/null; then exit 0; fi; \
	if [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then fail "named not found: install the bind9 package"; fi; \
	echo ">> installing bind9 (named) with apt-get"; \
	{ apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends bind9; } \
	  || fail "apt-get install bind9 failed"

# containerd, runc, the CNI plugins and the packet filter tools a test node runs on (tests/testbed's
# node.go), from Debian's packages, when any is missing. Without root or apt-get, CI ($$CI set) fails
# here; elsewhere a warning, and the node tests skip.
.PHONY: node-packages
node-packages: ## Install containerd, runc, CNI plugins, iptables, nftables and conntrack when missing (make testbed-node does it).
	@fail() { if [ -n "$$CI" ]; then echo "ERROR: $$1" >&2; exit 1; fi; \
	  echo "WARNING: $$1; the node tests skip" >&2; exit 0; }; \
	missing=; for p in $(NODE_PACKAGES); do dpkg-query -W -f '$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then fail "missing packages:$$missing"; fi; \
	echo ">> installing$$missing with apt-get"; \
	{ apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; } \
	  || fail "apt-get install$$missing failed"

$(CONTROLLER_GEN):
	GOBIN=$(BIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION) && mv $(BIN)/controller-gen $@
$(KUSTOMIZE):
	GOBIN=$(BIN) go install sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION) && mv $(BIN)/kustomize $@
$(GOLANGCI_LINT):
	GOBIN=$(BIN) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION) && mv $(BIN)/golangci-lint $@
$(GOTESTSUM):
	GOBIN=$(BIN) go install gotest.tools/gotestsum@$(GOTESTSUM_VERSION) && mv $(BIN)/gotestsum $@

include tests/bench/dataplane/bench.mk

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*?##/ { printf "  %-16s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)
