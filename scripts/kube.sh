#!/usr/bin/env bash
# Provides the two servers the Kubernetes backend tests start themselves:
#
#   kube-apiserver  built from k8s.io/kubernetes with the tools module in
#                   tools/kube, cached by version in
#                   ${TENURE_CACHE:-$HOME/.cache/tenure}/kube-apiserver-<version>
#                   (the first build takes several minutes, later runs nothing);
#   etcd            Debian's etcd-server, installed with apt-get when missing.
#
# It never fails the build: a test whose server cannot be had skips with a
# message, or fails when TENURE_REQUIRE_BACKENDS=1. Set TENURE_KUBE_BUILD=0 to
# skip the kube-apiserver build (the tests then skip unless a binary is found).
set -u

KUBE_VERSION=v1.37.2
KUBE_MINOR=37
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${TENURE_CACHE:-$HOME/.cache/tenure}
bin=$cache/kube-apiserver-$KUBE_VERSION
log=$cache/kube-apiserver-$KUBE_VERSION.log

if [ ! -x "$bin" ] && [ -z "${TENURE_KUBE_APISERVER:-}" ] && [ "${TENURE_KUBE_BUILD:-1}" != 0 ]; then
	if ! command -v "${GO:-go}" >/dev/null 2>&1; then
		echo "kube: no go command; not building kube-apiserver, the Kubernetes tests will skip" >&2
	elif ! mkdir -p "$cache"; then
		echo "kube: cannot create $cache; the Kubernetes tests will skip" >&2
	else
		echo "kube: building kube-apiserver $KUBE_VERSION into $bin (several minutes the first time; log: $log)" >&2
		start=$(date +%s)
		tmp=$bin.tmp.$$
		if (cd "$root/tools/kube" && "${GO:-go}" build -mod=readonly -o "$tmp" \
			-ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$KUBE_MINOR" \
			k8s.io/kubernetes/cmd/kube-apiserver) >"$log" 2>&1 && mv -f "$tmp" "$bin"; then
			echo "kube: built kube-apiserver in $(($(date +%s) - start))s" >&2
		else
			rm -f "$tmp"
			echo "kube: building kube-apiserver failed (see $log); the Kubernetes tests will skip" >&2
		fi
	fi
fi

if ! command -v etcd >/dev/null 2>&1 && [ -z "${TENURE_ETCD:-}" ]; then
	if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
		echo "kube: etcd missing; not root or no apt-get, so the Kubernetes tests will skip" >&2
	else
		echo "kube: installing etcd-server" >&2
		export DEBIAN_FRONTEND=noninteractive
		{ apt-get install -y -qq --no-install-recommends etcd-server ||
			{ apt-get update -qq && apt-get install -y -qq --no-install-recommends etcd-server; }; } >/tmp/tenure-apt-etcd.log 2>&1 ||
			echo "kube: apt-get install etcd-server failed (see /tmp/tenure-apt-etcd.log); the Kubernetes tests will skip" >&2
	fi
fi
exit 0
