#!/usr/bin/env bash
# lightbuild.sh: cold-build times of `make demo` and of a program using only
# kubestore, two commits side by side (docs/benchmarks.md, "Light build").
#
#   bash scripts/lightbuild.sh BEFORE AFTER [RUNS]
#
# Each commit gets a fresh clone of this repository. Every timed command
# starts with an empty build cache of its own (GOCACHE=$(mktemp -d)) and the
# shared, warm module cache, with GOPROXY=off so that nothing is downloaded
# (the module cache must already hold the modules both commits build with).
# Runs alternate BEFORE and AFTER so that
# a busy machine slows both alike. Prints one line per timed command and a
# summary (seconds, wall clock).
set -euo pipefail

before=${1:?usage: lightbuild.sh BEFORE AFTER [RUNS]}
after=${2:?usage: lightbuild.sh BEFORE AFTER [RUNS]}
runs=${3:-3}
repo=$(git rev-parse --path-format=absolute --git-common-dir)
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

# kubeonly writes a program that opens a kubestore Store and nothing else,
# the way the commit's kubestore.New wants its client.
kubeonly() {
	local dir=$1/internal/lightbuild
	mkdir -p "$dir"
	if grep -q 'client kubernetes.Interface, namespace' "$1/store/kubestore/kubestore.go"; then
		cat >"$dir/main.go" <<'EOF'
package main

import (
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tenure-go/tenure/store/kubestore"
)

func main() {
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: "http://127.0.0.1:1"})
	if err != nil {
		panic(err)
	}
	st, err := kubestore.New[struct{}](cs, "default")
	fmt.Println(st.Namespace(), err)
}
EOF
	else
		cat >"$dir/main.go" <<'EOF'
package main

import (
	"fmt"

	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"

	"github.com/tenure-go/tenure/store/kubestore"
)

func main() {
	c, err := coordinationv1.NewForConfig(&rest.Config{Host: "http://127.0.0.1:1"})
	if err != nil {
		panic(err)
	}
	st, err := kubestore.New[struct{}](c, "default")
	fmt.Println(st.Namespace(), err)
}
EOF
	fi
}

for side in before after; do
	rev=${!side}
	git clone -q "$repo" "$work/$side"
	git -C "$work/$side" checkout -q "$rev"
	kubeonly "$work/$side"
done

# timed SIDE WHAT CMD...: runs CMD in SIDE's clone with an empty build cache
# and prints "SIDE WHAT SECONDS".
timed() {
	local side=$1 what=$2
	shift 2
	local cache start end
	cache=$(mktemp -d)
	start=$(date +%s.%N)
	(cd "$work/$side" && GOCACHE=$cache GOPROXY=off "$@") >"$work/$side.$what.log" 2>&1 ||
		{ echo "$side $what failed:"; cat "$work/$side.$what.log"; exit 1; }
	end=$(date +%s.%N)
	chmod -R u+w "$cache"
	rm -rf "$cache"
	echo "$side $what $(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.2f", b - a}')" | tee -a "$work/results"
}

echo "before=$before ($(git -C "$work/before" rev-parse --short HEAD)) after=$after ($(git -C "$work/after" rev-parse --short HEAD)) runs=$runs go=$(go env GOVERSION) cpus=$(nproc)"
for i in $(seq "$runs"); do
	# Alternate which side goes first.
	if [ $((i % 2)) -eq 1 ]; then order="before after"; else order="after before"; fi
	for side in $order; do timed "$side" make-demo make demo; done
	for side in $order; do timed "$side" kubeonly go build -o /dev/null ./internal/lightbuild; done
done
echo "summary (seconds: each run, mean)"
for what in make-demo kubeonly; do
	for side in before after; do
		awk -v s="$side" -v w="$what" '$1==s && $2==w {t=t" "sprintf("%.1f",$3); n++; sum+=$3} END {printf "%-6s %-9s %s  mean %.1f\n", s, w, t, sum/n}' "$work/results"
	done
done
tail -n 3 "$work/after.make-demo.log" | sed 's/^/after make demo, last lines: /'
