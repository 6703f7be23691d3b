# intercom — run `make help` for targets.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
STAMP   := github.com/intercom-dev/intercom/internal/buildinfo
LDFLAGS := -s -w -X $(STAMP).version=$(VERSION) -X $(STAMP).commit=$(COMMIT)
BINS    := intercom intercom-hook intercom-broker agent-runs intercom-bridge
TARGETS := darwin/arm64 darwin/amd64 linux/amd64 linux/arm64
DIST    ?= dist
BINDIR  ?= bin
GO      ?= go
PREFIX  ?= $(HOME)/.local
BENCH_OUT ?= bench-results.json
BENCH_FLAGS ?=

.DEFAULT_GOAL := help

help: ## Show this help.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## Build the binaries into BINDIR (bin/), stamped with VERSION and COMMIT; static (CGO_ENABLED=0), as released.
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o $(BINDIR)/ $(addprefix ./cmd/,$(BINS))

TESTFLAGS ?=
TESTARGS  ?=
test: ## Unit and e2e tests, with the race detector; one line per test as it ends (gotestsum), skips listed at the end.
	$(GO) vet ./...
	$(GO) tool gotestsum --format testname -- $(TESTFLAGS) -race -count=1 -timeout 30m ./... $(TESTARGS)

cross: ## Vet and build every binary for darwin/arm64, darwin/amd64, linux/amd64, linux/arm64 (into bin/OS-ARCH/).
	@for t in $(TARGETS); do os=$${t%/*}; arch=$${t#*/}; echo "== $$os/$$arch: vet, build"; \
		GOOS=$$os GOARCH=$$arch CGO_ENABLED=0 $(GO) vet ./... && \
		GOOS=$$os GOARCH=$$arch CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/$$os-$$arch/ $(addprefix ./cmd/,$(BINS)) || exit 1; \
	done

dist: cross ## Archives for the four targets and a checksums file in DIST (dist/), named as goreleaser names them.
	VERSION='$(VERSION)' DIST='$(DIST)' TARGETS='$(TARGETS)' BINS='$(BINS)' ./scripts/dist.sh

HARNESS_FLAGS ?=
MATRIX_OUT ?= $(CURDIR)/.matrix

test-harness: ## Real Claude Code (current + oldest supported), Codex, Pi 1.6/0.73, Gemini CLI and OpenCode (npm, cached outside the repo) against stand-in model APIs, the cross-harness matrix included; skips if npm is unreachable.
	cd e2e/harness && $(GO) test -tags harness -race -count=1 -timeout 60m $(HARNESS_FLAGS)

test-matrix: ## Only the cross-harness matrix (20 pairs and an ask/reply ring over the five real harnesses); its table is printed and saved as matrix.md under $(MATRIX_OUT).
	mkdir -p $(MATRIX_OUT) && cd e2e/harness && $(GO) test -tags harness -race -count=1 -timeout 20m -run 'TestCrossHarnessMatrix$$' -v -artifacts -outputdir $(MATRIX_OUT)

schemas: ## Regenerate docs/schemas/*.json and the reference in docs/json.md from the Go types (internal/schema).
	$(GO) test ./internal/schema -run 'TestSchemasAreCurrent|TestJSONDocIsCurrent' -count=1 -update

test-fault: ## Crash-consistency fault test, the hook storm and the partition test, long variants (FAULT_LONG=1; FAULT_SHORT=1 for the ~35 s one that make test runs), then the soak again built without -race (its RSS check).
	FAULT_LONG=$${FAULT_LONG:-1} $(GO) test -race -run 'TestFault|TestHookStorm|TestPartition' -count=1 -timeout 30m ./e2e/
	E2E_NORACE=1 FAULT_LONG=$${FAULT_LONG:-1} $(GO) test -run 'TestFaultLoadAndLeaks$$' -count=1 -timeout 10m ./e2e/

COVERDIR ?= $(CURDIR)/coverage
COVERPKG := github.com/intercom-dev/intercom/cmd/...,github.com/intercom-dev/intercom/internal/...,github.com/intercom-dev/intercom/pkg/...
cover: ## make test with coverage: unit tests and the -cover e2e binaries write to COVERDIR; merged per-package figures checked against coverage-floors.txt.
	rm -rf $(COVERDIR) && mkdir -p $(COVERDIR)/unit $(COVERDIR)/e2e
	INTERCOM_E2E_COVERDIR=$(COVERDIR)/e2e $(MAKE) test TESTFLAGS='-covermode=atomic -coverpkg=$(COVERPKG)' TESTARGS='-args -test.gocoverdir=$(COVERDIR)/unit'
	$(GO) tool covdata percent -i=$(COVERDIR)/unit,$(COVERDIR)/e2e > $(COVERDIR)/percent.txt
	$(GO) tool covdata textfmt -i=$(COVERDIR)/unit,$(COVERDIR)/e2e -o $(COVERDIR)/cover.out
	./scripts/coverfloors.sh coverage-floors.txt $(COVERDIR)/percent.txt

bench: build ## Benchmark vs the raw floor (minutes): Markdown table, JSON to BENCH_OUT (bench-results.json).
	INTERCOM_BROKER=$(abspath $(BINDIR))/intercom-broker INTERCOM_BRIDGE=$(abspath $(BINDIR))/intercom-bridge INTERCOM_CLI=$(abspath $(BINDIR))/intercom BENCH_OUT=$(BENCH_OUT) $(GO) run ./e2e/bench $(BENCH_FLAGS)

web-screenshots: ## Regenerate docs/web/*.png: the browser test of intercom web (needs chromium) saves its views.
	INTERCOM_WEB_SCREENSHOTS=$(abspath docs/web) $(GO) test ./e2e -run TestWebInBrowser -count=1

bench-quick: build ## Reduced benchmark, under a minute (same outputs).
	INTERCOM_BROKER=$(abspath $(BINDIR))/intercom-broker INTERCOM_BRIDGE=$(abspath $(BINDIR))/intercom-bridge INTERCOM_CLI=$(abspath $(BINDIR))/intercom BENCH_OUT=$(BENCH_OUT) $(GO) run ./e2e/bench -quick $(BENCH_FLAGS)

FUZZTIME ?= 20s
fuzz: ## Run every fuzz target (each func Fuzz* in internal/ and pkg/) for FUZZTIME each (seeds also run in make test).
	GO=$(GO) ./scripts/fuzz.sh $(FUZZTIME)

demo: build ## Non-interactive tour on a temporary INTERCOM_HOME.
	./scripts/demo.sh

install: ## Install the binaries into $(PREFIX)/bin.
	install -d $(PREFIX)/bin
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o $(PREFIX)/bin/ $(addprefix ./cmd/,$(BINS))

clean: ## Remove build output.
	rm -rf bin $(DIST)

.PHONY: help build test test-harness test-matrix cross dist test-fault cover schemas bench bench-quick web-screenshots demo install clean
