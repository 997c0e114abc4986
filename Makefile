# streamkit — build and test entry points. See README.md.
GO        ?= go
BIN       ?= bin/streamkit
FUZZTIME  ?= 60s
STATICCHECK_VERSION ?= v0.8.2

.PHONY: build test unit peers fuzz lint demo clean

build:
	$(GO) build -o $(BIN) ./cmd/streamkit

# The main job on bundled real flights, run twice (needs only Go): see scripts/demo.sh.
demo: build
	scripts/demo.sh

# The full suite: installs the pinned real peers (Python venv with pyarrow, deltalake, DuckDB;
# Spark + delta-spark jars for the write-delta interop tests; Kafka broker jars and kcat), starts the Kafka broker, runs every Go test with
# STREAMKIT_REQUIRE_PEERS=1, so a test whose peer is missing fails instead of skipping, and
# stops the broker again.
test: peers
	scripts/kafka.sh start >/dev/null
	STREAMKIT_REQUIRE_PEERS=1 STREAMKIT_PYTHON=$(CURDIR)/.venv/bin/python $(GO) test -count=1 -timeout 25m ./...; \
	  rc=$$?; scripts/kafka.sh stop; exit $$rc

# Quick Go-only run; tests that need a peer skip when it is missing.
unit:
	$(GO) test ./...

peers:
	scripts/peers.sh python spark kafka kcat

# Each fuzz target for FUZZTIME (not part of `make test`); corpora live in testdata/fuzz.
fuzz:
	$(GO) test ./codec -run '^$$' -fuzz '^FuzzReader$$' -fuzztime $(FUZZTIME)
	$(GO) test ./codec/csvrow -run '^$$' -fuzz '^FuzzCSV$$' -fuzztime $(FUZZTIME)
	$(GO) test ./codec/jsonrow -run '^$$' -fuzz '^FuzzJSON$$' -fuzztime $(FUZZTIME)

lint:
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo 'gofmt needed'; exit 1; }

clean:
	rm -rf bin
