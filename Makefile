# cueop: a Kubernetes operator driven by CUE templates.
# `make help` lists the targets.

SHELL := /usr/bin/env bash -o pipefail
GO ?= go
BIN := bin/cueop
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
FUZZTIME ?= 10s
LONG_FUZZTIME ?= 5m

.DEFAULT_GOAL := help

include hack/k8s/k8s.mk

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} \
		/^[a-zA-Z0-9_-]+:.*?##/ { printf "  %-14s %s\n", $$1, $$2 } \
		/^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: build
build: ## Build bin/cueop.
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/cueop

.PHONY: run
run: k8s-bins build ## Run cueop on an embedded local control plane with the samples applied (Ctrl-C stops it).
	$(BIN) dev --templates ./templates --samples ./config/samples

.PHONY: crds
crds: ## Regenerate crds/, config/rbac/role.yaml, config/rbac/kinds.yaml and config/manager's generated files from the templates.
	$(GO) run ./cmd/cueop manifests --out-dir .

.PHONY: fmt
fmt: ## Format Go and CUE sources.
	gofmt -w $$(git ls-files '*.go')
	cd templates && $(GO) run cuelang.org/go/cmd/cue@v0.17.1 fmt ./...

.PHONY: vet
vet: ## go vet, gofmt check and `cueop vet` on the templates.
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed: $$out"; exit 1; fi
	$(GO) run ./cmd/cueop vet
	$(GO) run ./cmd/cueop --templates testdata/versions vet --testdata testdata/versions/cases

##@ Tests

.PHONY: test
test: k8s-bins vet build ## Run every test (with -race), the golden cases, a smoke run of `make run`, and each fuzz target briefly.
	$(GO) test -race -count=1 -timeout 45m ./...
	$(BIN) test
	$(BIN) --templates testdata/versions test --testdata testdata/versions/cases
	$(BIN) dev --exit-when-ready --timeout 3m --zap-log-level error --kubeconfig-out $$(mktemp -d)/kubeconfig
	$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZTIME)

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME each (make fuzz FUZZTIME=5m for a long run).
	GO=$(GO) FUZZTIME=$(FUZZTIME) hack/fuzz.sh

.PHONY: bench
bench: k8s-bins ## Run the benchmarks: engine micro-benchmarks, then cueop vs a hand-written operator on a local control plane with the 5-minute retry-storm test (BENCH_N=1000 by default; results: docs/benchmarks.md).
	$(GO) test -run '^$$' -bench . -benchmem -count 4 ./engine/... | tee bench.out
	$(GO) run ./bench/cmd/bench

.PHONY: bench-shards
bench-shards: k8s-bins ## Measure cueop sharded over 3 replicas against one replica: 3,000 CRs each, per-replica heap, writes per CR, a replica killed (results: docs/benchmarks.md).
	$(GO) run ./bench/cmd/bench shards

.PHONY: bench-identities
bench-identities: k8s-bins ## Measure cueop with per-kind identities against one shared identity: the four template kinds at 300 and 3,000 CRs, time to Ready, requests, peak RSS (BENCH_ID_POINTS; results: docs/benchmarks.md).
	$(GO) run ./bench/cmd/bench identities

.PHONY: bench-scale
bench-scale: k8s-bins ## Measure cueop at 3,000, 6,000 and 12,000 CRs on one replica, 12,000 over 3 shards, each against a no-operator floor, and its memory beside 200 unrelated CRDs (4 hours or more; results: docs/benchmarks.md).
	$(GO) run ./bench/cmd/bench scale
