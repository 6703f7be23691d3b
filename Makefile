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

test-fault: ## Crash-consistency fault test, long variant (FAULT_LONG=1; FAULT_SHORT=1 for the ~35 s one that make test runs).
	FAULT_LONG=$${FAULT_LONG:-1} $(GO) test -race -run TestFault -count=1 -timeout 30m ./e2e/

bench: build ## Benchmark vs the raw floor (minutes): Markdown table, JSON to BENCH_OUT (bench-results.json).
	INTERCOM_BROKER=$(CURDIR)/bin/intercom-broker INTERCOM_BRIDGE=$(CURDIR)/bin/intercom-bridge BENCH_OUT=$(BENCH_OUT) $(GO) run ./e2e/bench $(BENCH_FLAGS)

bench-quick: build ## Reduced benchmark, under a minute (same outputs).
	INTERCOM_BROKER=$(CURDIR)/bin/intercom-broker INTERCOM_BRIDGE=$(CURDIR)/bin/intercom-bridge BENCH_OUT=$(BENCH_OUT) $(GO) run ./e2e/bench -quick $(BENCH_FLAGS)

FUZZTIME ?= 20s
fuzz: ## Run every fuzz target for FUZZTIME each (seeds also run in make test).
	@for spec in internal/config:FuzzParse internal/pidfile:FuzzParse internal/runs:FuzzParseInterview \
		internal/runs:FuzzParseStructuredReply internal/hooks:FuzzParse internal/broker:FuzzValidateSend \
		internal/broker:FuzzValidatePublish; do \
		pkg=$${spec%%:*}; fn=$${spec##*:}; echo "== $$pkg $$fn"; \
		$(GO) test ./$$pkg -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) || exit 1; \
	done

demo: build ## Non-interactive tour on a temporary INTERCOM_HOME.
	./scripts/demo.sh

install: ## Install the binaries into $(PREFIX)/bin.
	install -d $(PREFIX)/bin
	$(GO) build -ldflags '$(LDFLAGS)' -o $(PREFIX)/bin/ $(addprefix ./cmd/,$(BINS))

clean: ## Remove build output.
	rm -rf bin

.PHONY: help build test test-fault bench bench-quick demo install clean
