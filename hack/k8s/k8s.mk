# k8s.mk: the local Kubernetes control plane (etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kwok) that localcluster runs.
# Include it from the root Makefile:
#
#	include hack/k8s/k8s.mk
#
# and pass the binaries to tests with
#
#	test: k8s-bins
#		CUEOP_K8S_BIN_DIR=$(K8S_BIN_DIR) go test ./...

K8S_HACK_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))

# K8S_BIN_DIR is where hack/k8s/build.sh puts the binaries (the cache directory
# keyed by the pinned versions; see localcluster.DefaultBinDir).
K8S_BIN_DIR := $(shell $(K8S_HACK_DIR)/build.sh --print-bin-dir)

# Recipes (go test, cueop dev) find the binaries through CUEOP_K8S_BIN_DIR,
# unless it is already set in the environment.
CUEOP_K8S_BIN_DIR ?= $(K8S_BIN_DIR)
export CUEOP_K8S_BIN_DIR

##@ Local control plane

.PHONY: k8s-bins
k8s-bins: ## Build etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok into K8S_BIN_DIR (cold: ~7 min; then cached).
	$(K8S_HACK_DIR)/build.sh

.PHONY: k8s-bins-dir
k8s-bins-dir: ## Print K8S_BIN_DIR.
	@echo $(K8S_BIN_DIR)
