#!/usr/bin/env bash
# coldbuild.sh: time cold builds (an empty Go build cache; the module cache
# is used as it is, so fill it first with `go mod download`) of
#   lead+memstore   a program importing only lead and memstore
#   lead+redisstore a program importing lead, redisstore and go-redis
#   cmd/tenure      go build ./cmd/tenure
#   make build      go build -tags grpcnotrace ./cmd/tenure
# with the load average before and after each. Run from the repository
# root; pass the names of the builds to time (default: all four).
set -euo pipefail
root=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

program() { # program DIR IMPORTS... -> a module in DIR whose main imports them
	local dir=$1
	shift
	mkdir -p "$dir"
	cp "$root/go.sum" "$dir/go.sum"
	cat >"$dir/go.mod" <<MOD
module example.com/coldbuild

go 1.26.0

require github.com/tenure-go/tenure v0.0.0

replace github.com/tenure-go/tenure => $root
MOD
	cat >"$dir/main.go"
}

program "$work/memstore" <<'GO'
package main

import (
	"context"
	"os"

	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/store/memstore"
)

func main() {
	e, err := lead.New("job", memstore.New[struct{}](), lead.WithIdentity("a"))
	if err != nil {
		os.Exit(1)
	}
	_ = e.Run(context.Background())
}
GO

program "$work/redisstore" <<'GO'
package main

import (
	"context"
	"os"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/store/redisstore"
)

func main() {
	st, err := redisstore.New[struct{}](redis.NewClient(&redis.Options{Addr: os.Getenv("REDIS_ADDR")}))
	if err != nil {
		os.Exit(1)
	}
	e, err := lead.New("job", st, lead.WithIdentity("a"))
	if err != nil {
		os.Exit(1)
	}
	_ = e.Run(context.Background())
}
GO

one() { # one LABEL DIR GO-BUILD-ARGS...
	local label=$1 dir=$2
	shift 2
	local cache start end
	cache=$(mktemp -d)
	echo "$label: load before: $(cut -d' ' -f1-3 /proc/loadavg)"
	start=$(date +%s.%N)
	(cd "$dir" && GOCACHE=$cache GOFLAGS="-mod=mod -buildvcs=false" GOPROXY=off go build -o /dev/null "$@")
	end=$(date +%s.%N)
	echo "$label: load after: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "$label: $(echo "$end - $start" | bc) s, $(du -sh "$cache" | cut -f1) of build cache"
	rm -rf "$cache"
}

builds=("$@")
[ ${#builds[@]} -gt 0 ] || builds=(lead+memstore lead+redisstore cmd/tenure "make build")
echo "go: $(go version); $(nproc) cores"
for b in "${builds[@]}"; do
	case $b in
	lead+memstore) one "$b" "$work/memstore" . ;;
	lead+redisstore) one "$b" "$work/redisstore" . ;;
	cmd/tenure) one "$b" "$root" ./cmd/tenure ;;
	"make build") one "$b" "$root" -tags grpcnotrace ./cmd/tenure ;;
	*) echo "unknown build $b" >&2; exit 2 ;;
	esac
done
