# liqo-janitor — run `make help` for the targets a newcomer needs.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

BIN          := $(CURDIR)/bin
K8S_BIN      := $(BIN)/k8s
K8S_VERSION  := 1.37.2
CP_DIR       := test/controlplane
K8S_MINOR    := $(word 2,$(subst ., ,$(K8S_VERSION)))
# Without the version stamp the apiserver reports v0.0.0-master and clients print skew warnings.
K8S_LDFLAGS  := -s -w \
  -X k8s.io/component-base/version.gitVersion=v$(K8S_VERSION) \
  -X k8s.io/component-base/version.gitMajor=1 \
  -X k8s.io/component-base/version.gitMinor=$(K8S_MINOR) \
  -X k8s.io/component-base/version.gitTreeState=clean \
  -X k8s.io/client-go/pkg/version.gitVersion=v$(K8S_VERSION) \
  -X k8s.io/client-go/pkg/version.gitMajor=1 \
  -X k8s.io/client-go/pkg/version.gitMinor=$(K8S_MINOR)
K8S_STAMP    := $(K8S_BIN)/.version-$(K8S_VERSION)
LIQO_DIR     := test/liqo
LIQO_BIN     := $(BIN)/liqo
# The Liqo release whose webhook the tools module builds: the one its go.mod requires.
LIQO_VERSION := $(shell awk '$$1 == "github.com/liqotech/liqo" {print $$2}' $(LIQO_DIR)/go.mod)
LIQO_STAMP   := $(LIQO_BIN)/.version-$(LIQO_VERSION)
LIQO_CM_STAMP := $(LIQO_BIN)/.controller-manager-$(LIQO_VERSION)

.PHONY: help
help: ## Show this help
	@awk 'BEGIN{FS=":.*## "} /^[a-zA-Z0-9_-]+:.*## /{printf "  \033[36m%-15s\033[0m %s\n",$$1,$$2}' $(MAKEFILE_LIST)

##@ Try it

.PHONY: demo
demo: control-plane ## Play out a dead provider on a local control plane (KEEP=1 leaves it running)
	@cd test/e2e && go run ./demo $(if $(KEEP),--keep)

.PHONY: demo-stop
demo-stop: ## Stop what `make demo KEEP=1` left running and remove its files
	@# KEEP=1 keeps the harness's directory (kubeconfig, logs, the binaries it built) under bin/; the [x]yz
	@# patterns match the processes but not this recipe's own command line
	@pat='$(BIN)/liqo-janitor-harness-[^/ ]+/bin/[l]iqo-janitor --kubeconfig|$(K8S_BIN)/[ek][tu][cb]'; pkill -TERM -f "$$pat" || true; \
	  for i in $$(seq 30); do pgrep -f "$$pat" >/dev/null || break; sleep 0.5; done; pkill -KILL -f "$$pat" || true; \
	  rm -rf $(BIN)/liqo-janitor-harness-*

##@ Node lane

NODE_BIN   := $(BIN)/node
NODE_STAMP := $(NODE_BIN)/.version-$(K8S_VERSION)

.PHONY: node
node: $(NODE_STAMP) ## Build kubelet, kube-scheduler, kube-proxy v$(K8S_VERSION) and the pod sandbox image into bin/node (cached)

# From the control plane's tools module (test/controlplane), so the node runs the same Kubernetes release
# as the API server; the sandbox (pause) image is built from manifests/pause, since the lane pulls nothing.
$(NODE_STAMP): $(CP_DIR)/go.mod $(CP_DIR)/go.sum manifests/pause/main.go
	@echo ">> building kubelet, kube-scheduler, kube-proxy v$(K8S_VERSION) into $(NODE_BIN) (first time: ~5 min)"
	@rm -f $(NODE_BIN)/.version-*
	@mkdir -p $(NODE_BIN)
	@cd $(CP_DIR) && go build -trimpath -ldflags '$(K8S_LDFLAGS)' -o $(NODE_BIN)/ \
	  k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kube-proxy
	@cd manifests && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o $(NODE_BIN)/pause ./pause
	@$(NODE_BIN)/pause --image $(NODE_BIN)/pause.tar
	@touch $@

E2E_FLAGS ?= -count=1 -timeout=40m

# The node lane: the image of `make image` (its host's platform, the tarball) run by a real kubelet with
# containerd (test/e2e/node). Needs Linux, root and the Debian packages .ci/run installs; the tests fail,
# not skip, when something is missing. `make test` runs the package too but it returns at once without
# LIQO_JANITOR_NODE_LANE.
.PHONY: e2e
e2e: control-plane node image ## The node lane (Linux, root): the chart's pods on a real kubelet and containerd, from `make image`
	@cd test/e2e && LIQO_JANITOR_NODE_LANE=1 KUBEBUILDER_ASSETS=$(K8S_BIN) go test $(E2E_FLAGS) -v ./node 2>&1 \
	  | tee $(BIN)/e2e.log | grep -vE '$(TEST_OUTPUT)'; exit $${PIPESTATUS[0]}

##@ Control plane for tests

.PHONY: control-plane
control-plane: $(K8S_STAMP) ## Build kube-apiserver, etcd, kube-controller-manager v$(K8S_VERSION) into bin/k8s (cached)

# One go build for both Kubernetes binaries (they share most packages); etcd 3.7.0 comes from the same
# tools module because k8s.io/kubernetes requires it. Rebuilt only when the pinned version or the tools
# module changes; a first build on an empty Go cache takes about five minutes on two cores.
$(K8S_STAMP): $(CP_DIR)/go.mod $(CP_DIR)/go.sum
	@echo ">> building Kubernetes v$(K8S_VERSION) control plane into $(K8S_BIN) (first time: ~5 min)"
	@rm -f $(K8S_BIN)/.version-*
	@mkdir -p $(K8S_BIN)
	@cd $(CP_DIR) && go build -trimpath -ldflags '$(K8S_LDFLAGS)' -o $(K8S_BIN)/ \
	  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager
	@cd $(CP_DIR) && go build -trimpath -ldflags '-s -w' -o $(K8S_BIN)/etcd go.etcd.io/etcd/server/v3
	@touch $@

.PHONY: liqo-webhook
liqo-webhook: $(LIQO_STAMP) ## Build the admission webhook of the Liqo release test/liqo pins into bin/liqo/webhook (cached)

# Liqo's real webhook binary (cmd/webhook of the Liqo module), which the harness runs against its API
# server for tests of what the janitor does while Liqo's webhook is down (harness.StartLiqoWebhook). Built
# from the tools module test/liqo, with Liqo's own dependencies, and rebuilt only when that module changes;
# a first build on an empty Go cache takes about five minutes on two cores.
$(LIQO_STAMP): $(LIQO_DIR)/go.mod $(LIQO_DIR)/go.sum
	@echo ">> building Liqo $(LIQO_VERSION)'s webhook into $(LIQO_BIN) (first time: ~5 min)"
	@rm -f $(LIQO_BIN)/.version-*
	@mkdir -p $(LIQO_BIN)
	@cd $(LIQO_DIR) && go build -trimpath -ldflags '-s -w' -o $(LIQO_BIN)/webhook github.com/liqotech/liqo/cmd/webhook
	@touch $@

.PHONY: liqo-controller-manager
liqo-controller-manager: $(LIQO_CM_STAMP) ## Build the controller manager of the Liqo release test/liqo pins into bin/liqo/controller-manager (cached)

# Liqo's real controller manager (cmd/liqo-controller-manager of the Liqo module), which the harness runs
# against a provider's API server for tests of what Liqo's own controllers do there: its tenant, quota,
# namespacemap and shadowpod controllers (harness.StartLiqoControllerManager). Built from the same tools
# module as the webhook, with its own stamp, and rebuilt only when that module changes; on a Go cache warm
# from the webhook's build it takes under a minute.
$(LIQO_CM_STAMP): $(LIQO_DIR)/go.mod $(LIQO_DIR)/go.sum
	@echo ">> building Liqo $(LIQO_VERSION)'s controller manager into $(LIQO_BIN) (first time: ~5 min)"
	@rm -f $(LIQO_BIN)/.controller-manager-*
	@mkdir -p $(LIQO_BIN)
	@cd $(LIQO_DIR) && go build -trimpath -ldflags '-s -w' -o $(LIQO_BIN)/controller-manager github.com/liqotech/liqo/cmd/liqo-controller-manager
	@touch $@

CM_DIR     := test/certmanager
CM_BIN     := $(BIN)/cert-manager
# The cert-manager release the tools module builds: the one its go.mod requires (test/e2e's too).
CM_VERSION := $(shell awk '$$1 == "github.com/cert-manager/cert-manager" {print $$2}' $(CM_DIR)/go.mod)
CM_STAMP   := $(CM_BIN)/.version-$(CM_VERSION)

.PHONY: cert-manager
cert-manager: $(CM_STAMP) ## Build cert-manager's controller and cainjector of the release test/certmanager pins into bin/cert-manager (cached)

# cert-manager's real controller and CA injector, which the harness runs against its API server to issue
# the chart's certificates and inject their CA in cert-manager mode (harness.StartCertManager). Built from
# the tools module test/certmanager by its build.sh (which says why it builds without the Venafi issuer),
# and rebuilt only when that module changes. A first build on an empty Go cache took 27 minutes on two cores
# shared with two other builds (load average 20 to 30); the controller links every issuer's cloud SDK.
$(CM_STAMP): $(CM_DIR)/go.mod $(CM_DIR)/go.sum $(CM_DIR)/build.sh $(shell find $(CM_DIR) -name '*.go')
	@echo ">> building cert-manager $(CM_VERSION)'s controller and cainjector into $(CM_BIN) (first time: ~10 min or more)"
	@rm -f $(CM_BIN)/.version-*
	@$(CM_DIR)/build.sh $(CM_BIN)
	@touch $@

##@ Development

CONTROLLER_GEN_VERSION := v0.23.0
GOLANGCI_LINT_VERSION  := v2.15.0
CONTROLLER_GEN := $(BIN)/controller-gen-$(CONTROLLER_GEN_VERSION)
GOLANGCI_LINT  := $(BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
TEST_FLAGS     ?= -race -count=1 -timeout=30m
PKGS           ?= ./...
CHART          := manifests/chart/liqo-janitor

# Three Go modules, so that the product's go.mod holds only what the product imports: the root (the
# product, and the test harness its packages' tests use), manifests/ (the chart renderer and the image
# builder: Helm, ko) and test/e2e/ (the install, monitoring, release, bench and demo: Prometheus,
# cert-manager's CRDs, kustomize). PKGS names packages from the repository root; each module gets its own.
MODULES        := . manifests test/e2e
ROOT_PKGS       = $(filter-out ./manifests/% ./test/e2e/%,$(PKGS))
MANIFESTS_PKGS  = $(filter ./...,$(PKGS)) $(patsubst ./manifests/%,./%,$(filter ./manifests/%,$(PKGS)))
E2E_PKGS        = $(filter ./...,$(PKGS)) $(patsubst ./test/e2e/%,./%,$(filter ./test/e2e/%,$(PKGS)))

# go-test runs, in the module in $(1), the tests of its packages $(2) with the flags $(3), appends the full
# log to bin/$(4), shows it without the lines the pattern in the variable named $(5) matches, and keeps
# the first failing status in $$status.
define go-test
if [ -n "$(strip $(2))" ]; then \
	  (cd $(1) && KUBEBUILDER_ASSETS=$(K8S_BIN) CONTROLLER_GEN=$(CONTROLLER_GEN) go test $(3) -v $(strip $(2))) 2>&1 \
	    | tee -a $(BIN)/$(4) | grep -vE '$($(5))'; \
	  s=$${PIPESTATUS[0]}; [ "$$status" -ne 0 ] || status=$$s; \
	fi;
endef
# What the test output shows: failures and logs, not every passing (or, in the fast lane, skipped) test.
TEST_OUTPUT      := ^(=== (RUN|PAUSE|CONT|NAME)|    --- PASS|--- PASS)
TEST_UNIT_OUTPUT := ^(=== (RUN|PAUSE|CONT|NAME)|\s*--- (PASS|SKIP)|\s+\S+\.go:[0-9]+: .*: run make test$$)

.PHONY: build
build: ## Build bin/liqo-janitor, the kubectl plugin bin/kubectl-liqo_janitor and its completion helper
	@echo ">> building bin/liqo-janitor, bin/kubectl-liqo_janitor, bin/kubectl_complete-liqo_janitor"
	@CGO_ENABLED=0 go build -trimpath -ldflags '-s -w -X main.version=$(VERSION) -X main.revision=$(REVISION)' -o $(BIN)/liqo-janitor ./cmd/liqo-janitor
	@CGO_ENABLED=0 go build -trimpath -ldflags '-s -w -X main.version=$(VERSION)' -o $(BIN)/ ./cmd/kubectl-liqo_janitor ./cmd/kubectl_complete-liqo_janitor

IMAGE   ?= ghcr.io/liqo-janitor/liqo-janitor
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
ARCH    ?= $(shell go env GOARCH)
# One builder for CI and the release (manifests/image: ko's library on a base built from code): the image
# `make image` builds and tests is the one `make image PUSH=1` pushes, digest for digest.
PLATFORMS ?= linux/amd64,linux/arm64
PUSH    ?=

.PHONY: image
image: ## Build the image (linux/amd64, linux/arm64) into bin/image: an OCI layout, a docker-loadable tarball, its digest; PUSH=1 also pushes it (the release)
	@mkdir -p $(BIN)/image
	@cd manifests && go run ./image --root $(CURDIR) --out $(BIN)/image --platform $(PLATFORMS) --tarball-arch $(ARCH) \
	  --tag $(IMAGE):$(VERSION) --version $(VERSION) --revision "$$(git rev-parse HEAD 2>/dev/null)" \
	  --created "$$(git log -1 --format=%ct 2>/dev/null || echo 0)" $(if $(PUSH),--push)

# The two lanes share one switch, go test -short: a test that needs the API server gets it through
# harness.Require, which skips it under -short ("needs the API server: run make test"), and one that runs a
# binary the harness builds, through harness.RequireBinary (likewise). Without -short the control plane
# starts on a package's first such test, never for its pure ones. The harness builds the binaries it runs
# from the checkout (go build, cached), so neither lane needs `make build`.
.PHONY: test
test: control-plane liqo-webhook liqo-controller-manager cert-manager $(CONTROLLER_GEN) ## Run every test (unit and real-API-server) with the race detector
	@# the summary is printed on a failure too: each module's status is kept, not the recipe's shell's
	@set +e; status=0; : > $(BIN)/test.log; \
	  $(call go-test,.,$(ROOT_PKGS),$(TEST_FLAGS),test.log,TEST_OUTPUT) \
	  $(call go-test,manifests,$(MANIFESTS_PKGS),$(TEST_FLAGS),test.log,TEST_OUTPUT) \
	  $(call go-test,test/e2e,$(E2E_PKGS),$(TEST_FLAGS),test.log,TEST_OUTPUT) \
	  passed=$$(grep -cE '^\s*--- PASS' $(BIN)/test.log || true); failed=$$(grep -cE '^\s*--- FAIL' $(BIN)/test.log || true); \
	  echo "tests: $$passed passed, $$failed failed (full log: bin/test.log)"; exit $$status

# No race detector and no debug information (-s -w halves the link, which is most of this lane's time);
# go test's result cache stays on, so a package whose code and test inputs did not change is not run
# again (TEST_UNIT_FLAGS=-count=1 runs everything).
TEST_UNIT_FLAGS ?= -ldflags='-s -w' -timeout=5m

.PHONY: test-unit
test-unit: ## The fast lane: every pure test, with no API server, etcd or built binary (go test -short)
	@mkdir -p $(BIN)
	@set +e; status=0; : > $(BIN)/test-unit.log; \
	  $(call go-test,.,$(ROOT_PKGS),-short $(TEST_UNIT_FLAGS),test-unit.log,TEST_UNIT_OUTPUT) \
	  $(call go-test,manifests,$(MANIFESTS_PKGS),-short $(TEST_UNIT_FLAGS),test-unit.log,TEST_UNIT_OUTPUT) \
	  $(call go-test,test/e2e,$(E2E_PKGS),-short $(TEST_UNIT_FLAGS),test-unit.log,TEST_UNIT_OUTPUT) \
	  passed=$$(grep -cE '^\s*--- PASS' $(BIN)/test-unit.log || true); failed=$$(grep -cE '^\s*--- FAIL' $(BIN)/test-unit.log || true); \
	  skipped=$$(grep -cE '^\s*--- SKIP' $(BIN)/test-unit.log || true); \
	  echo "tests: $$passed passed, $$failed failed, $$skipped skipped for make test (full log: bin/test-unit.log)"; exit $$status

BENCHTIME ?= 3x

.PHONY: bench
bench: control-plane ## Benchmarks, each side by side with its reference (output: bin/bench.txt)
	@cd test/e2e && KUBEBUILDER_ASSETS=$(K8S_BIN) go test ./bench -run='^$$' -bench=Release1of3 -benchtime=$(BENCHTIME) -count=1 -timeout=60m 2>&1 \
	  | tee $(BIN)/bench.txt | grep -E '^(Benchmark|ok|FAIL|PASS)'
	@cd test/e2e && KUBEBUILDER_ASSETS=$(K8S_BIN) go test ./bench -run='^$$' -bench=ReleaseThreeDead -benchtime=3x -count=1 -timeout=60m 2>&1 \
	  | tee -a $(BIN)/bench.txt | grep -E '^(Benchmark|ok|FAIL|PASS)'
	@cd test/e2e && KUBEBUILDER_ASSETS=$(K8S_BIN) go test ./bench -run='^$$' -bench=Memory -benchtime=2x -count=1 -timeout=60m 2>&1 \
	  | tee -a $(BIN)/bench.txt | grep -E '^(Benchmark|ok|FAIL|PASS)'
	@cd test/e2e && KUBEBUILDER_ASSETS=$(K8S_BIN) go test ./bench -run='^$$' -bench=Gate -benchtime=2000x -count=1 2>&1 \
	  | tee -a $(BIN)/bench.txt | grep -E '^(Benchmark|ok|FAIL|PASS)'

FUZZTIME ?= 30s

.PHONY: fuzz
fuzz: ## Fuzz the gate's decision and its AdmissionReview handlers for FUZZTIME each (default 30s)
	go test ./webhook -run='^$$' -fuzz='^FuzzDecide$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=5s
	go test ./webhook -run='^$$' -fuzz='^FuzzAdmissionReview$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=5s

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run go vet and golangci-lint in every module
	@for m in $(MODULES); do echo ">> lint $$m"; (cd $$m && go vet ./... && $(GOLANGCI_LINT) run ./...) || exit 1; done

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate RBAC and webhooks from code markers (the gate's matchConditions from the root's key lists) into the chart, render the chart into manifests/, its values table into docs/chart-values.md and the binary's flags into docs/flags.md
	@# two roles: the consumer's (the gate, the janitor and its internal packages, the binary's metrics
	@# authentication) and the provider fence agent's, from janitor/providerfence's markers alone
	$(CONTROLLER_GEN) rbac:roleName=liqo-janitor paths=./janitor paths=./janitor/internal/... paths=./janitor/fencerenew/... paths=./webhook/... paths=./cmd/liqo-janitor/... output:rbac:dir=$(CHART)/files
	$(CONTROLLER_GEN) rbac:roleName=liqo-janitor-provider-fence paths=./janitor/providerfence/... output:rbac:dir=$(CHART)/files/provider-fence
	$(CONTROLLER_GEN) webhook paths=./webhook/... output:webhook:dir=$(CHART)/files
	@mv $(CHART)/files/manifests.yaml $(CHART)/files/webhooks.yaml
	@# the gate's matchConditions, built from the root package's key lists (webhook/matchconditions.go; a
	@# golden test: make test-unit fails too when they are stale)
	go test ./webhook -run '^TestMatchConditionsFile$$' -count=1 -args -update
	cd manifests && go run ./generate ..
	@# the flags table, from the flag set main binds (a golden test: make test-unit fails too when it is stale)
	go test ./cmd/liqo-janitor -run '^TestFlagsDoc$$' -count=1 -args -update

.PHONY: verify
verify: manifests ## Fail if regenerating manifests or tidying any module's go.mod changes a tracked file, or a comment or doc names a path that does not exist
	@for m in $(MODULES); do (cd $$m && go mod tidy) || exit 1; done
	@go run ./test/pathcheck
	@files="manifests docs README.md $(foreach m,$(MODULES),$(m)/go.mod $(m)/go.sum)"; if [ -n "$$(git status --porcelain -- $$files)" ]; then \
	  git status --porcelain -- $$files; git diff -- $$files | head -50; \
	  echo "generated files are out of date: run 'make manifests' and 'go mod tidy', then commit"; exit 1; fi

$(CONTROLLER_GEN):
	@mkdir -p $(BIN)/tmp
	GOBIN=$(BIN)/tmp go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	mv $(BIN)/tmp/controller-gen $@

$(GOLANGCI_LINT):
	@mkdir -p $(BIN)/tmp
	GOBIN=$(BIN)/tmp go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(BIN)/tmp/golangci-lint $@

.PHONY: deploy
deploy: ## Install on the cluster of the current kube context (kubectl apply -k manifests/default)
	kubectl apply -k manifests/default

.PHONY: undeploy
undeploy: ## Remove the install from the cluster of the current kube context
	kubectl delete -k manifests/default --ignore-not-found

.PHONY: clean
clean: ## Remove build output (keeps the cached control plane and tools in bin/)
	rm -f $(BIN)/liqo-janitor $(BIN)/kubectl-liqo_janitor $(BIN)/kubectl_complete-liqo_janitor \
	  $(BIN)/test.log $(BIN)/test-unit.log $(BIN)/e2e.log
