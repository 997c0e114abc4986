# streamkit — build and test entry points. See README.md.
GO        ?= go
BIN       ?= bin/streamkit
FUZZTIME  ?= 60s
STATICCHECK_VERSION ?= v0.8.2

# make e2e: rows of flights-3m.parquet the end-to-end job uses (3000000: all of them; ~6 min on
# the 2-core dev machine) and the kill -9 count of its chaos run; see e2e/flights_test.go.
# make test runs it on the first TEST_E2E_ROWS flights (January and February 2001, ~2-3 min).
E2E_ROWS      ?= 3000000
E2E_KILLS     ?= 30
TEST_E2E_ROWS ?= 1000000

# make chaos: sizes of the object-storage end-to-end tests (e2e/s3_test.go; make test runs them
# small: 4 writers × 100 epochs of 10 rows, 100 input files of 200 rows, 30 kills,
# 2,000 rows through the fault proxy): epochs per writer and rows per epoch of the concurrent
# writers, input files (of S3E2E_FILE_ROWS rows) and kill -9s of the chaos run, rows of the
# fault run.
S3E2E_EPOCHS     ?= 100
S3E2E_EPOCH_ROWS ?= 1000
S3E2E_FILES      ?= 1000
S3E2E_FILE_ROWS  ?= 1000
S3E2E_KILLS      ?= 100
S3E2E_FAULT_ROWS ?= 50000
# make chaos: kill -9s of expect's restart test (tools/expect/kill_test.go; make test: 4).
EXPECT_KILLS     ?= 40

.PHONY: build test unit e2e chaos chaos-group peers fuzz lint demo bench docs clean

build:
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/streamkit

# The main job on bundled real flights, run twice (needs only Go): see scripts/demo.sh.
demo: build
	scripts/demo.sh

# The full suite: installs the pinned real peers (Python venv with pyarrow, deltalake, DuckDB;
# Spark + delta-spark jars for the write-delta interop tests; Kafka broker jars and kcat; the
# Apicurio schema registry; S3Proxy), starts the Kafka broker, the schema registry and the
# S3-compatible object store (scripts/s3.sh, its exports in the tests' environment), runs every
# Go test with STREAMKIT_REQUIRE_PEERS=1, so a test whose peer is missing fails instead of
# skipping, and stops the broker, the registry and the object store again. Then the end-to-end
# job (make e2e).
test: peers
	scripts/kafka.sh start >/dev/null
	scripts/registry.sh start >/dev/null || { scripts/kafka.sh stop; exit 1; }
	scripts/s3.sh start >/dev/null || { scripts/registry.sh stop; scripts/kafka.sh stop; exit 1; }
	eval "$$(scripts/s3.sh env)" && \
	STREAMKIT_REQUIRE_PEERS=1 STREAMKIT_PYTHON=$(CURDIR)/.venv/bin/python $(GO) test -count=1 -timeout 40m ./... \
	  && $(MAKE) --no-print-directory e2e E2E_ROWS=$(TEST_E2E_ROWS); \
	  rc=$$?; scripts/s3.sh stop; scripts/registry.sh stop; scripts/kafka.sh stop; exit $$rc

# The end-to-end job of issue #10 (e2e/flights_test.go): real flights through the real Kafka
# broker into Delta — one-shot, cron-style in 10 parts, and under E2E_KILLS kill -9s with a
# Ctrl-C and a concurrent backfill flow — checked against DuckDB's GROUP BY, read by delta-rs and
# DuckDB. Starts the broker when it is not running (and then stops it again). Measurements go to
# the test log and to bin/e2e-report.json. Then TestBigWindowState (e2e/bigstate_test.go): a
# window with 2.3 GB of state (first(s) of 1 MiB strings) killed -9 during a snapshot and
# restarted, checked against DuckDB (~3+ GB of RAM).
e2e:
	scripts/peers.sh python kafka
	@mkdir -p bin; started=; scripts/kafka.sh status >/dev/null 2>&1 || { scripts/kafka.sh start >/dev/null && started=1; }; \
	STREAMKIT_E2E=1 STREAMKIT_E2E_ROWS=$(E2E_ROWS) STREAMKIT_E2E_KILLS=$(E2E_KILLS) STREAMKIT_REQUIRE_PEERS=1 \
	  STREAMKIT_E2E_REPORT=$(CURDIR)/bin/e2e-report.json STREAMKIT_PYTHON=$(CURDIR)/.venv/bin/python \
	  $(GO) test -count=1 -timeout 45m -v -run '^(TestFlights|TestBigWindowState)$$' ./e2e; \
	  rc=$$?; [ -z "$$started" ] || scripts/kafka.sh stop; exit $$rc

# The object-storage end-to-end tests of issue #19 (e2e/s3_test.go) at the S3E2E_* sizes above:
# concurrent writers with delta optimize, the kill -9 chaos run with checkpoints on s3://, the
# fault-proxy run, two owners, refusals and the Spark/delta-rs/DuckDB readers, against the
# S3-compatible server of scripts/s3.sh (started when it is not running, and stopped again).
# Then expect's kill -9 restart test with EXPECT_KILLS kills.
chaos:
	scripts/peers.sh python spark s3
	@started=; scripts/s3.sh status >/dev/null 2>&1 || { scripts/s3.sh start >/dev/null && started=1; }; \
	eval "$$(scripts/s3.sh env)" && \
	STREAMKIT_S3E2E_EPOCHS=$(S3E2E_EPOCHS) STREAMKIT_S3E2E_EPOCH_ROWS=$(S3E2E_EPOCH_ROWS) \
	  STREAMKIT_S3E2E_FILES=$(S3E2E_FILES) STREAMKIT_S3E2E_FILE_ROWS=$(S3E2E_FILE_ROWS) \
	  STREAMKIT_S3E2E_KILLS=$(S3E2E_KILLS) STREAMKIT_S3E2E_FAULT_ROWS=$(S3E2E_FAULT_ROWS) \
	  STREAMKIT_REQUIRE_PEERS=1 STREAMKIT_PYTHON=$(CURDIR)/.venv/bin/python \
	  $(GO) test -count=1 -timeout 60m -v -run '^TestS3' ./e2e; \
	  rc=$$?; [ -z "$$started" ] || scripts/s3.sh stop; if [ $$rc -ne 0 ]; then exit $$rc; fi; \
	STREAMKIT_EXPECT_KILLS=$(EXPECT_KILLS) STREAMKIT_REQUIRE_PEERS=1 STREAMKIT_PYTHON=$(CURDIR)/.venv/bin/python \
	  $(GO) test -count=1 -timeout 30m -v -run '^TestKillRestartCountsExact$$' ./tools/expect

# Consumer groups at scale (issue #20, tools/readkafka TestGroupChurn): 3 member slots on a
# 12-partition topic, GROUP_CHURN membership changes (join, SIGINT, kill -9) while GROUP_RECORDS
# records are produced, checked exactly once with streamkit, delta-rs and DuckDB. Starts the
# broker when it is not running (and then stops it again).
GROUP_CHURN ?= 30
GROUP_RECORDS ?= 200000
chaos-group:
	scripts/peers.sh python kafka
	@started=; scripts/kafka.sh status >/dev/null 2>&1 || { scripts/kafka.sh start >/dev/null && started=1; }; \
	STREAMKIT_GROUP_CHURN=$(GROUP_CHURN) STREAMKIT_GROUP_RECORDS=$(GROUP_RECORDS) STREAMKIT_REQUIRE_PEERS=1 \
	  STREAMKIT_PYTHON=$(CURDIR)/.venv/bin/python \
	  $(GO) test -count=1 -timeout 30m -v -run '^TestGroupChurn$$' ./tools/readkafka; \
	  rc=$$?; [ -z "$$started" ] || scripts/kafka.sh stop; exit $$rc

# Side-by-side benchmarks (issue #11): streamkit vs Spark Structured Streaming, kcat | delta-rs
# and Flink on the same data and cores, W1 also with the tables on the S3 test server, written to
# docs/benchmarks.md; installs its peers, starts the broker and the S3 test server when they are
# not running (and stops them again). BENCH_SCALE=0.01 for a quick smoke run, reported in
# .it/bench/benchmarks-scale-0.01.md: only a BENCH_SCALE 1 run writes docs/benchmarks.md
# (BENCH_REPORT=FILE names another file); see
# scripts/bench/run.sh. Not part of make test (the full run takes an hour or more).
# BENCH_WORKLOADS=group runs the consumer-group workload alone (issue #20: scaling 1 → 2 pinned
# members, 1 to 4 members, rebalance pauses; scripts/bench/group.py) and rewrites only its section.
bench:
	scripts/bench/run.sh

# Regenerates docs/cli/<tool>.md and docs/cli/README.md from the tools' specs (cli.Spec);
# TestCLIDocs, part of make test and make unit, fails while the committed pages differ.
docs:
	$(GO) test -count=1 -run '^TestCLIDocs$$' ./cmd/streamkit -update

# Quick Go-only run; tests that need a peer skip when it is missing.
unit:
	$(GO) test ./...

peers:
	scripts/peers.sh python spark kafka kcat registry s3

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
