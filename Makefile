# Tenure: the two commands that matter are `make demo` and `make test`.
GO          ?= go
GOTESTFLAGS ?=
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: demo build test backends kube bench lint cross mutants mutants-fast

## demo: several workers on the in-memory store, leaders handing over
demo:
	$(GO) run ./cmd/tenure-demo

## build: the tenure command, without gRPC's x/net/trace (see docs/backends/etcd.md, "Build cost")
build:
	$(GO) build -tags grpcnotrace -o tenure ./cmd/tenure

## test: every test, real backends included (servers are started by the tests)
test: backends kube
	$(GO) test $(GOTESTFLAGS) -timeout 20m ./...
	cd examples/simuser && $(GO) test $(GOTESTFLAGS) ./...
	cd examples/customstore && $(GO) test $(GOTESTFLAGS) ./...
	cd examples/gocron && $(GO) test $(GOTESTFLAGS) ./...
	cd controllerruntime && $(GO) test $(GOTESTFLAGS) ./...
	mkdir -p $(CURDIR)/.artifacts
	cd tools/browser && $(GO) test $(GOTESTFLAGS) -artifacts -outputdir $(CURDIR)/.artifacts ./...
	cd otel && $(GO) test $(GOTESTFLAGS) ./...
	cd deploy && $(GO) test $(GOTESTFLAGS) ./...

## mutants: apply each deliberate unsafe change of the catalogue in
## internal/mutants, one at a time in a scratch copy, and fail unless
## make test's tests catch every one (MUTANTS=fast, or make mutants-fast:
## the fast subset CI runs; GOTESTFLAGS as for make test)
MUTANTS ?=
mutants: backends kube
	GOTESTFLAGS="$(GOTESTFLAGS)" MUTANTS="$(MUTANTS)" $(GO) run ./internal/mutants/cmd/mutants

mutants-fast: backends kube
	GOTESTFLAGS="$(GOTESTFLAGS)" $(GO) run ./internal/mutants/cmd/mutants -fast

## backends: install the server binaries the backend tests start, and promtool (best effort)
backends:
	@bash scripts/backends.sh

## kube: build kube-apiserver (cached by version) and install etcd for the Kubernetes tests (best effort)
kube:
	@bash scripts/kube.sh

## bench: the benchmarks behind the figures in docs/benchmarks.md
bench: backends kube
	$(GO) test -run '^$$' -bench . -benchmem -timeout 20m ./...

## lint: gofmt, go vet, staticcheck
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	cd examples/simuser && $(GO) vet ./...
	cd examples/customstore && $(GO) vet ./...
	cd examples/customstore && $(GO) run $(STATICCHECK) ./...
	cd examples/gocron && $(GO) vet ./...
	cd examples/gocron && $(GO) run $(STATICCHECK) ./...
	cd controllerruntime && $(GO) vet ./...
	cd controllerruntime && $(GO) run $(STATICCHECK) ./...
	cd tools/browser && $(GO) vet ./...
	cd tools/browser && $(GO) run $(STATICCHECK) ./...
	cd otel && $(GO) vet ./...
	cd otel && $(GO) run $(STATICCHECK) ./...
	cd deploy && $(GO) vet ./...
	cd deploy && $(GO) run $(STATICCHECK) ./...

## cross: go vet ./... (tests included) and go build ./cmd/tenure for Linux, macOS and Windows on amd64 and arm64
CROSS_TARGETS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
cross:
	@set -e; for t in $(CROSS_TARGETS); do \
		os=$${t%/*}; arch=$${t#*/}; \
		echo "cross: $$os/$$arch"; \
		GOOS=$$os GOARCH=$$arch $(GO) vet ./...; \
		GOOS=$$os GOARCH=$$arch $(GO) build -o /dev/null ./cmd/tenure; \
	done

.PHONY: sim chaos

## chaos: long chaos runs on the real servers: every backend (CHAOS_BACKENDS,
## comma-separated, to pick) runs schedules of network and server faults
## drawn from CHAOS_SEED for CHAOS_DURATION each, then prints a summary
## table (docs/reliability.md)
CHAOS_DURATION ?= 30m
CHAOS_BACKENDS ?= memstore,redis,postgres,kube,etcd
CHAOS_SEED     ?=
chaos: backends kube
	TENURE_REQUIRE_BACKENDS=1 TENURE_CHAOS_DURATION=$(CHAOS_DURATION) TENURE_CHAOS_BACKENDS=$(CHAOS_BACKENDS) \
		TENURE_CHAOS_SEED=$(CHAOS_SEED) $(GO) test -count=1 -timeout 0 -run 'TestChaos$$' -v ./internal/testing/chaos/

## sim: long sweeps of the simulator: model mode (100,000 random schedules,
## 25,000 of the adversary, 25,000 each with forged releases, with forged
## renewals ahead, with resigns and with handovers, 10,000 each on the
## gated and authentic-watch stores), runtime mode (2,000 seeds of the real
## electors on memstore, and 2,000 each with resigns and with handovers;
## 400 of lead.Shards) and the exhaustive check's large bounds
## (sim/internal/exhaust)
sim:
	TENURE_SIM_SEEDS=1-100000 $(GO) test -count=1 -timeout 60m -run 'TestSimSeedSweep|TestSimAuthenticWatchSweep|TestSimCreateGateSweep|TestSimForgedReleaseSweep|TestSimResignSweep|TestSimHandOverSweep$$|TestSimForgedRenewal' -v ./sim/
	TENURE_SIM_SEEDS=1-2000 $(GO) test -count=1 -timeout 60m -run 'TestRuntimeSweep$$|TestRuntimeResignSweep|TestRuntimeHandOverSweep' -v ./sim/simtest/
	TENURE_SIM_SEEDS=1-400 $(GO) test -count=1 -timeout 60m -run 'TestSimShards$$' -v ./sim/simtest/
	TENURE_EXHAUSTIVE=large $(GO) test -count=1 -timeout 60m -run 'TestExhaustive' -v ./sim/internal/exhaust/
