# intercom — run `make help` for targets.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/intercom-dev/intercom/internal/cli.Version=$(VERSION) -X github.com/intercom-dev/intercom/internal/brokercmd.Version=$(VERSION)
BINS    := intercom intercom-broker agent-runs intercom-bridge
GO      ?= go
PREFIX  ?= $(HOME)/.local
BENCH_OUT ?= bench-results.json
BENCH_FLAGS ?=

.DEFAULT_GOAL := help

help: ## Show this help.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## Build the binaries into bin/.
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/ $(addprefix ./cmd/,$(BINS))

test: ## Unit and e2e tests, with the race detector.
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 20m ./...

HARNESS_FLAGS ?=
test-harness: ## Real Claude Code + Codex (npm, cached outside the repo) against stand-in model APIs; skips if npm is unreachable.
	cd e2e/harness && $(GO) test -tags harness -race -count=1 -timeout 30m $(HARNESS_FLAGS)

test-fault: ## Crash-consistency fault test, long variant (FAULT_LONG=1; FAULT_SHORT=1 for the ~35 s one that make test runs).
	FAULT_LONG=$${FAULT_LONG:-1} $(GO) test -race -run TestFault -count=1 -timeout 30m ./e2e/

COVERDIR ?= $(CURDIR)/coverage
TESTFLAGS ?=
COVERPKG := github.com/intercom-dev/intercom/cmd/...,github.com/intercom-dev/intercom/internal/...,github.com/intercom-dev/intercom/pkg/...
cover: ## make test with coverage: unit tests and the -cover e2e binaries write to COVERDIR; merged per-package figures checked against coverage-floors.txt.
	rm -rf $(COVERDIR) && mkdir -p $(COVERDIR)/unit $(COVERDIR)/e2e
	$(GO) vet ./...
	INTERCOM_E2E_COVERDIR=$(COVERDIR)/e2e $(GO) test $(TESTFLAGS) -race -count=1 -timeout 30m -covermode=atomic -coverpkg=$(COVERPKG) ./... -args -test.gocoverdir=$(COVERDIR)/unit
	$(GO) tool covdata percent -i=$(COVERDIR)/unit,$(COVERDIR)/e2e > $(COVERDIR)/percent.txt
	$(GO) tool covdata textfmt -i=$(COVERDIR)/unit,$(COVERDIR)/e2e -o $(COVERDIR)/cover.out
	./scripts/coverfloors.sh coverage-floors.txt $(COVERDIR)/percent.txt

bench: build ## Benchmark vs the raw floor (minutes): Markdown table, JSON to BENCH_OUT (bench-results.json).
	INTERCOM_BROKER=$(CURDIR)/bin/intercom-broker BENCH_OUT=$(BENCH_OUT) $(GO) run ./e2e/bench $(BENCH_FLAGS)

bench-quick: build ## Reduced benchmark, under a minute (same outputs).
	INTERCOM_BROKER=$(CURDIR)/bin/intercom-broker BENCH_OUT=$(BENCH_OUT) $(GO) run ./e2e/bench -quick $(BENCH_FLAGS)

FUZZTIME ?= 20s
fuzz: ## Run every fuzz target (each func Fuzz* in internal/ and pkg/) for FUZZTIME each (seeds also run in make test).
	@set -e; for file in $$(grep -rlE '^func Fuzz[A-Za-z0-9_]*\(' --include='*_test.go' internal pkg | sort); do \
		pkg=./$$(dirname $$file); \
		for fn in $$(sed -nE 's/^func (Fuzz[A-Za-z0-9_]*)\(.*/\1/p' $$file); do \
			echo "== $$pkg $$fn"; $(GO) test $$pkg -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME); \
		done; \
	done

demo: build ## Non-interactive tour on a temporary INTERCOM_HOME.
	./scripts/demo.sh

install: ## Install the binaries into $(PREFIX)/bin.
	install -d $(PREFIX)/bin
	$(GO) build -ldflags '$(LDFLAGS)' -o $(PREFIX)/bin/ $(addprefix ./cmd/,$(BINS))

clean: ## Remove build output.
	rm -rf bin

.PHONY: help build test test-harness test-fault cover bench bench-quick demo install clean
