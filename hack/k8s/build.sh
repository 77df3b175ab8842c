#!/usr/bin/env bash
# build.sh builds the local control plane (etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kwok) that localcluster runs, from the
# wrapper modules next to this script, into a cache directory outside the checkout:
#
#   ${CUEOP_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cueop/k8s}/<version-key>/bin/
#
# The version key is made from the versions pinned in the wrapper modules' go.mod
# files; localcluster.DefaultBinDir computes the same path. Binaries already in the
# cache are not rebuilt. Each binary is built into a temporary file and renamed into
# place, so an interrupted build leaves nothing half-written behind.
#
# Usage: build.sh [--print-bin-dir] [--force]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# pinned MODDIR MODULE prints the version of MODULE required by MODDIR/go.mod.
pinned() {
	awk -v m="$2" '$1 == m && $2 ~ /^v/ { print $2; exit } $1 == "require" && $2 == m { print $3; exit }' "$here/$1/go.mod"
}

kube_version="$(pinned kube k8s.io/kubernetes)"
etcd_version="$(pinned etcd go.etcd.io/etcd/server/v3)"
kwok_version="$(pinned kwok sigs.k8s.io/kwok)"
if [[ -z "$kube_version" || -z "$etcd_version" || -z "$kwok_version" ]]; then
	echo "build.sh: cannot read pinned versions from $here/*/go.mod" >&2
	exit 1
fi
key="kube-${kube_version}_etcd-${etcd_version}_kwok-${kwok_version}"
cache="${CUEOP_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cueop/k8s}"
bin="$cache/$key/bin"

force=0
for arg in "$@"; do
	case "$arg" in
	--print-bin-dir) echo "$bin"; exit 0 ;;
	--force) force=1 ;;
	*) echo "usage: $0 [--print-bin-dir] [--force]" >&2; exit 2 ;;
	esac
done

mkdir -p "$bin"
# One build at a time per cache key: a second caller waits, then finds the binaries.
if command -v flock >/dev/null; then
	exec 9>"$cache/$key/.lock"
	flock 9
fi

tmp=""   # the binary being built, removed if the build does not finish
child="" # the running go build
trap '[[ -n "$tmp" ]] && rm -f "$tmp"' EXIT
trap '[[ -n "$child" ]] && kill -TERM "$child" 2>/dev/null; wait; exit 130' INT TERM

export GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=mod"
export CGO_ENABLED=0
export GOWORK=off # build each wrapper module on its own

# kube_ldflags stamps the version that kubectl and the discovery API report.
kube_ldflags() {
	local v="${kube_version#v}" date
	date="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	local p=k8s.io/component-base/version
	echo "-X $p.gitVersion=$kube_version -X $p.gitMajor=${v%%.*}" \
		"-X $p.gitMinor=$(echo "$v" | cut -d. -f2) -X $p.gitTreeState=clean -X $p.buildDate=$date"
}

# build NAME MODDIR PACKAGE [LDFLAGS] builds PACKAGE in MODDIR into $bin/NAME.
build() {
	local name="$1" dir="$2" pkg="$3" ldflags="${4:-}"
	if [[ $force == 0 && -x "$bin/$name" ]]; then
		echo "$name: cached"
		return
	fi
	echo "$name: building $pkg ..."
	local start=$SECONDS
	tmp="$bin/.$name.tmp.$$"
	# In the background, so that a signal to this script is handled at once.
	(cd "$here/$dir" && exec go build -trimpath -ldflags "$ldflags" -o "$tmp" "$pkg") &
	child=$!
	wait "$child"
	child=""
	mv -f "$tmp" "$bin/$name"
	tmp=""
	echo "$name: built in $((SECONDS - start))s"
}

total=$SECONDS
build etcd etcd go.etcd.io/etcd/server/v3
build kwok kwok sigs.k8s.io/kwok/cmd/kwok
build kube-apiserver kube k8s.io/kubernetes/cmd/kube-apiserver "$(kube_ldflags)"
build kube-controller-manager kube k8s.io/kubernetes/cmd/kube-controller-manager "$(kube_ldflags)"
build kube-scheduler kube k8s.io/kubernetes/cmd/kube-scheduler "$(kube_ldflags)"
echo "binaries in $bin ($((SECONDS - total))s)"
