# Thin aliases over cargo (STYLE.md "Strictness"). Every target is one cargo command you can
# also type yourself; `make ci` is what .ci/run runs.

CARGO ?= cargo
SCENARIO ?= examples/scenarios/happy-path.json

.PHONY: help fmt fmt-check lint features doc test ci bench bench-peers bench-curves run reliability crash-test fuzz-smoke fuzz-replay

# The reliability suites (docs/RELIABILITY.md): the long crash test and real fuzzing.
CRASH_KILLS ?= 200
CRASH_SEED ?= 0x5EED
FUZZ_TIME ?= 10
FUZZ_TARGETS := ledger_line ledger_file decision ids policy shell scenario

help:
	@echo "make run        run the happy-path scenario with the rein CLI (data in target/rein-demo), then say how to see it with rein serve"
	@echo "make test       cargo test --workspace (after make mcp-servers), against a throwaway PostgreSQL (make pg-start)"
	@echo "make pg-start   start the throwaway PostgreSQL the rein-postgres tests use (installs Debian's postgresql if missing)"
	@echo "make pg-stop    stop it and delete its data"
	@echo "make pg-race    the long form of the lease-expiry race (PG_RACE_ROUNDS rounds, default 200)"
	@echo "make chaos-pg   the long form of the chaos test across worker processes (CHAOS_RUNS=200, CHAOS_KILLS=20)"
	@echo "make mcp-servers  the pinned MCP servers the MCP tests import, under target/mcp (npm, a Python venv)"
	@echo "make ci         fmt-check, lint, features, doc, test, reliability, fuzz-smoke, in that order; stops at the first failure"
	@echo "make fmt        cargo fmt --all"
	@echo "make package-check  cargo package --workspace --no-verify: every publishable crate packs as crates.io would take it"
	@echo "make fmt-check  cargo fmt --all --check"
	@echo "make lint       cargo clippy --workspace --all-targets -- -D warnings"
	@echo "make features   clippy on the facade's feature sets: none (the lean default), all, each feature alone"
	@echo "make doc        RUSTDOCFLAGS=\"-D warnings\" cargo doc --workspace --no-deps"
	@echo "make browser-test  the web console in headless Chromium (installs chromium and chromium-driver when missing)"
	@echo "make bench      the workloads of docs/BENCHMARKS.md (W1-W5), with their ratios"
	@echo "make build-size  build time and binary size of the lean facade (the quickstart) and the full CLI (LEAN_PROFILE=release)"
	@echo "make bench-peers  W1 in rein and in LangGraph, side by side (makes bench-peers/.venv)"
	@echo "make bench-curves W6 per step in rein and in LangGraph, drawn into docs/curves-w6.svg"
	@echo "make bench-pg   P1 and P2 of docs/BENCHMARKS.md: a durable step and worker throughput on a throwaway PostgreSQL"
	@echo "make bench-tools  fs.grep against rg, shell.run against a bare spawn (installs Debian's ripgrep if rg is missing)"
	@echo "make reliability  the short forms with their figures: hostile, faults, bypass, shell, properties, fuzz replay, crash (part of make ci)"
	@echo "make crash-test   the long crash test: CRASH_KILLS kills per scenario (default 200), CRASH_SEED"
	@echo "make fuzz-smoke   every cargo-fuzz target for FUZZ_TIME seconds (default 10; installs cargo-fuzz into target/tools)"
	@echo "make fuzz-replay  the fuzz seeds, their mutations and random bytes through the checks, under cargo test"
	@echo "make otel-smoke   a run's trace exported with --otlp to a real collector (Arize Phoenix from PyPI, under target/otelcol)"

fmt:
	$(CARGO) fmt --all

fmt-check:
	$(CARGO) fmt --all --check

lint:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# The facade's feature sets, each checked with clippy -D warnings (a check, not a build: it
# proves the cfgs and imports line up at a fraction of the cost): no features (the lean
# default), all of them, and each feature alone. Not every combination: each feature adds
# one module and the dependencies only it needs, so features do not interact.
# Each feature alone is checked beside rein-feature-floor (tests/feature-floor), which
# depends on every integration the features add: the third-party crates then resolve the
# features they have in the all-features check, keep its hashes, and only the facade and
# rein-tools are checked again (docs/BENCHMARKS.md, "Checking each feature alone").
# `make features FEATURE_FLOOR=` checks each on its own graph instead: tens of minutes cold,
# and it also finds an integration relying on a third-party feature only another one turns on.
REIN_FEATURES := llm fake-server mcp tools-shell tools-http postgres otel
FEATURE_FLOOR ?= -p rein-feature-floor
features:
	$(CARGO) clippy -p rein --no-default-features -- -D warnings
	$(CARGO) clippy -p rein --all-features -- -D warnings
	@for f in $(REIN_FEATURES); do \
		echo "$(CARGO) clippy -p rein $(FEATURE_FLOOR) --no-default-features --features $$f -- -D warnings"; \
		$(CARGO) clippy -p rein $(FEATURE_FLOOR) --no-default-features --features $$f -- -D warnings || exit 1; \
	done

# Every publishable crate packs as crates.io would take it: manifest fields, version
# requirements on each other (resolved against the registry index plus the workspace's own
# packages), the files each .crate holds. --no-verify skips rebuilding each packed crate
# alone, which `make lint` and `make test` already cover at a fraction of the cost.
.PHONY: package-check
package-check:
	$(CARGO) package --workspace --exclude rein-examples --exclude rein-workspace-tests --exclude rein-feature-floor --no-verify --allow-dirty

doc:
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps

# The PostgreSQL suites run against a throwaway cluster started here and stopped afterwards,
# pass or fail (scripts/pg-test-cluster.sh; docs/POSTGRES.md).
test: mcp-servers
	@scripts/pg-test-cluster.sh start
	@REIN_TEST_PG_URL="$$(scripts/pg-test-cluster.sh url)" REIN_TEST_PG_TLS_URL="$$(scripts/pg-test-cluster.sh tls-url)" \
		$(CARGO) test --workspace; \
		status=$$?; scripts/pg-test-cluster.sh stop; exit $$status

# A throwaway PostgreSQL for `cargo test -p rein-postgres` by hand: the tests find it through
# target/pg/ (or REIN_TEST_PG_URL, and REIN_TEST_PG_TLS_URL for the TLS tests). `make pg-stop`
# stops it and deletes its data.
.PHONY: pg-start pg-stop
pg-start:
	@scripts/pg-test-cluster.sh start
pg-stop:
	@scripts/pg-test-cluster.sh stop

# The long form of the lease-expiry race (docs/POSTGRES.md): PG_RACE_ROUNDS rounds (default
# 200) against a throwaway cluster, stopped afterwards.
PG_RACE_ROUNDS ?= 200
.PHONY: pg-race
pg-race:
	@scripts/pg-test-cluster.sh start
	@REIN_TEST_PG_URL="$$(scripts/pg-test-cluster.sh url)" REIN_PG_RACE_ROUNDS=$(PG_RACE_ROUNDS) \
		$(CARGO) test -p rein-postgres --test lease -- --nocapture; \
		status=$$?; scripts/pg-test-cluster.sh stop; exit $$status

# The long form of the chaos test across processes (docs/POSTGRES.md): CHAOS_RUNS submitted
# runs (default 200), CHAOS_KILLS workers killed with SIGKILL (default 20), one database
# restart, against a throwaway cluster, stopped afterwards.
CHAOS_RUNS ?= 200
CHAOS_KILLS ?= 20
.PHONY: chaos-pg
chaos-pg:
	@scripts/pg-test-cluster.sh start
	@REIN_TEST_PG_URL="$$(scripts/pg-test-cluster.sh url)" REIN_CHAOS_RUNS=$(CHAOS_RUNS) REIN_CHAOS_KILLS=$(CHAOS_KILLS) \
		$(CARGO) test -p rein-cli --test worker_chaos -- --nocapture; \
		status=$$?; scripts/pg-test-cluster.sh stop; exit $$status

# The PostgreSQL workloads of docs/BENCHMARKS.md (P1 a durable step, P2 workers), against a
# throwaway cluster, stopped afterwards. PG_FSYNC=on (after `make pg-stop`) starts it with
# fsync on, so that a commit costs what a durable commit costs.
PG_FSYNC ?= off
.PHONY: bench-pg
bench-pg:
	@REIN_PG_FSYNC=$(PG_FSYNC) scripts/pg-test-cluster.sh start
	@REIN_TEST_PG_URL="$$(scripts/pg-test-cluster.sh url)" $(CARGO) bench -p rein-worker --bench postgres; \
		status=$$?; scripts/pg-test-cluster.sh stop; exit $$status

# Sequential on purpose (also under `make -j`): each step runs only if the one before passed.
ci:
	@echo "==> ci: fmt-check"
	@$(MAKE) --no-print-directory fmt-check
	@echo "==> ci: lint"
	@$(MAKE) --no-print-directory lint
	@echo "==> ci: features (the facade with no features, with all, and with each alone)"
	@$(MAKE) --no-print-directory features
	@echo "==> ci: doc"
	@$(MAKE) --no-print-directory doc
	@echo "==> ci: test"
	@$(MAKE) --no-print-directory test
	@echo "==> ci: reliability (short forms, with their figures)"
	@$(MAKE) --no-print-directory reliability
	@echo "==> ci: fuzz-smoke (every fuzz target, FUZZ_TIME seconds each)"
	@$(MAKE) --no-print-directory fuzz-smoke
	@echo "==> ci: all checks passed"

# The workloads of docs/BENCHMARKS.md, each printed with its baseline and ratio (a few
# minutes with the build). The other benches (`cargo bench --workspace`) are criterion's.
bench:
	$(CARGO) bench -p rein --bench workloads --bench memory
	$(CARGO) bench -p rein-cli --bench curves
	$(CARGO) bench -p rein-cli --bench long_llm

# The built-in tools against their baselines (docs/BENCHMARKS.md, "Built-in tools"): fs.grep
# against ripgrep on the same generated tree, shell.run against a bare tokio spawn.
.PHONY: bench-tools
bench-tools:
	@command -v rg >/dev/null || (apt-get update && apt-get install -y ripgrep)
	$(CARGO) bench -p rein-tools --bench tools

# docs/BENCHMARKS.md, "Build size": the quickstart example on the facade's lean default, built
# as a downstream crate builds it (its own folder, lock and target; the workspace's versions
# and debug-info profile), and the full CLI. Debug builds; LEAN_PROFILE=release for release.
LEAN_DIR := $(CURDIR)/target/lean
LEAN_PROFILE ?= dev
LEAN_OUT := $(if $(filter release,$(LEAN_PROFILE)),release,debug)
.PHONY: build-size
build-size:
	rm -rf $(LEAN_DIR) && mkdir -p $(LEAN_DIR)/src
	cp examples/quickstart.rs $(LEAN_DIR)/src/main.rs
	cp Cargo.lock $(LEAN_DIR)/Cargo.lock
	printf '%s\n' '[package]' 'name = "lean"' 'version = "0.0.0"' 'edition = "2024"' 'publish = false' \
	  '[dependencies]' 'rein = { path = "$(CURDIR)/crates/rein" }' \
	  'tokio = { version = "1", features = ["rt-multi-thread", "macros"] }' 'serde_json = "1"' '[workspace]' \
	  '[profile.dev]' 'debug = "line-tables-only"' '[profile.dev.package."*"]' 'debug = false' \
	  > $(LEAN_DIR)/Cargo.toml
	cd $(LEAN_DIR) && time $(CARGO) build --profile $(LEAN_PROFILE)
	@echo "lean: $$(cd $(LEAN_DIR) && $(CARGO) tree -e normal --prefix none | sed 's/ (.*//' | sort -u | wc -l) packages"
	ls -l $(LEAN_DIR)/target/$(LEAN_OUT)/lean
	time $(CARGO) build -p rein-cli --profile $(LEAN_PROFILE)
	@echo "cli: $$($(CARGO) tree -p rein-cli -e normal --prefix none | sed 's/ (.*//' | sort -u | wc -l) packages"
	ls -l target/$(LEAN_OUT)/rein

# W1 in rein and as a LangGraph StateGraph (pinned in bench-peers/requirements.txt).
PEERS_VENV := bench-peers/.venv
bench-peers:
	@test -x $(PEERS_VENV)/bin/python || python3 -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/pip install -q -r bench-peers/requirements.txt
	CARGO=$(CARGO) $(PEERS_VENV)/bin/python bench-peers/compare.py

# W6's per-step curve in rein and in LangGraph at 10 / 100 / 1,000 / 10,000 steps, drawn
# into docs/curves-w6.svg (LangGraph's 10,000-step run takes about a minute and ~2 GB).
bench-curves:
	@test -x $(PEERS_VENV)/bin/python || python3 -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/pip install -q -r bench-peers/requirements.txt
	@mkdir -p target/bench
	$(CARGO) bench -q -p rein-cli --bench curves -- w6 | tee target/bench/rein-w6.txt
	$(PEERS_VENV)/bin/python bench-peers/langgraph_w6.py | tee target/bench/langgraph-w6.txt
	python3 bench-peers/plot_w6.py target/bench/rein-w6.txt target/bench/langgraph-w6.txt --out docs/curves-w6.svg

# Ends by saying how to look at the run in the web console, whatever the run's outcome (the
# exit status is the run's).
run:
	@echo "$(CARGO) run -q -p rein-cli -- run $(SCENARIO) --data-dir target/rein-demo"
	@$(CARGO) run -q -p rein-cli -- run $(SCENARIO) --data-dir target/rein-demo; status=$$?; \
	echo; \
	echo "See the run (its path, its ledger verified by the server, what it waits for) in the web console:"; \
	echo "  $(CARGO) run -q -p rein-cli -- serve --data-dir target/rein-demo"; \
	echo "  then open http://127.0.0.1:7077/ (Ctrl-C stops it)"; \
	exit $$status

# The console in a real browser: Debian's Chromium, headless, through chromedriver (installed
# here when missing). Screenshots go to target/console-screenshots/.
.PHONY: browser-deps browser-test
browser-deps:
	@command -v chromedriver >/dev/null && test -x /usr/bin/chromium || (apt-get update && apt-get install -y --no-install-recommends chromium chromium-driver)
browser-test: browser-deps
	$(CARGO) test -p rein-console --features browser-tests --test browser -- --nocapture

# The short forms of docs/RELIABILITY.md, printing their figures: hostile input (table),
# store faults, policy bypasses, the shell guard, property tests, the fuzz corpus replay, and
# the crash test with 12 kills per scenario.
reliability:
	$(CARGO) test --workspace --test hostile --test faults --test bypass --test shell --test properties --test fuzz_replay --test crash --test crash_subruns -- --nocapture

# SIGKILL `rein run`/`rein resume` at seeded random points, CRASH_KILLS times per scenario.
crash-test:
	REIN_CRASH_KILLS=$(CRASH_KILLS) REIN_CRASH_SEED=$(CRASH_SEED) $(CARGO) test --workspace --test crash --test crash_subruns -- --nocapture

# Real fuzzing, bounded: each target for FUZZ_TIME seconds, new inputs kept in fuzz/corpus/.
# cargo-fuzz is installed at a pinned version into target/tools (once; ~30 s), so nothing
# outside the checkout is needed or changed. CI runs this with FUZZ_TIME=10.
CARGO_FUZZ_VERSION := 0.13.2
TOOLS := $(CURDIR)/target/tools
fuzz-smoke:
	$(CARGO) install cargo-fuzz --version $(CARGO_FUZZ_VERSION) --locked --quiet --root $(TOOLS)
	cd fuzz && RUSTC_BOOTSTRAP=1 $(TOOLS)/bin/cargo-fuzz build
	@for t in $(FUZZ_TARGETS); do \
		mkdir -p fuzz/corpus/$$t && \
		(cd fuzz && RUSTC_BOOTSTRAP=1 $(TOOLS)/bin/cargo-fuzz run $$t corpus/$$t seeds/$$t -- -max_total_time=$(FUZZ_TIME)) || exit 1; \
	done

fuzz-replay:
	$(CARGO) test --workspace --test fuzz_replay -- --nocapture

# The real MCP servers rein-mcp's tests import (crates/infra/mcp/tests): the reference
# servers from npm (run with the machine's Node.js) and the Python SDK in a venv. Pinned,
# installed under target/mcp (nothing global); the stamp names the versions, so changing a
# pin reinstalls. `make test` runs this first.
.PHONY: mcp-servers
MCP_DIR := $(CURDIR)/target/mcp
# The TypeScript SDK is pinned too: its example server with a demo authorization server
# (`simpleStreamableHttp.js --oauth`) is what the OAuth tests log in to.
MCP_NPM := @modelcontextprotocol/server-everything@2026.8.31 @modelcontextprotocol/server-filesystem@2026.8.31 @modelcontextprotocol/sdk@1.32.2
MCP_PY := mcp==2.3.0
MCP_STAMP := $(MCP_DIR)/installed-everything-2026.8.31-filesystem-2026.8.31-sdk-1.32.2-py-mcp-2.3.0
mcp-servers: $(MCP_STAMP)
$(MCP_STAMP):
	@command -v npm >/dev/null || { echo "mcp-servers: npm (Node.js 18+) is needed to install the reference MCP servers" >&2; exit 1; }
	@command -v python3 >/dev/null || { echo "mcp-servers: python3 (with venv) is needed for the MCP Python SDK" >&2; exit 1; }
	npm install --prefix $(MCP_DIR)/npm --no-audit --no-fund --save-exact $(MCP_NPM)
	test -x $(MCP_DIR)/venv/bin/python || python3 -m venv $(MCP_DIR)/venv
	$(MCP_DIR)/venv/bin/pip install -q $(MCP_PY)
	touch $@

# A collector nobody here wrote: Arize Phoenix (PyPI) receives OTLP/HTTP protobuf at
# /v1/traces and serves what it stored over REST. A run's spans must arrive there with
# their GenAI names and kinds, one trace under its invoke_agent span.
.PHONY: otel-collector otel-smoke
OTELCOL_DIR := $(CURDIR)/target/otelcol
OTELCOL_PY := arize-phoenix==20.26.1
OTELCOL_STAMP := $(OTELCOL_DIR)/installed-arize-phoenix-20.26.1
OTELCOL_PORT ?= 16006
otel-collector: $(OTELCOL_STAMP)
$(OTELCOL_STAMP):
	@command -v python3 >/dev/null || { echo "otel-collector: python3 (with venv) is needed" >&2; exit 1; }
	test -x $(OTELCOL_DIR)/venv/bin/python || python3 -m venv $(OTELCOL_DIR)/venv
	$(OTELCOL_DIR)/venv/bin/pip install -q $(OTELCOL_PY)
	touch $@

otel-smoke: otel-collector
	$(CARGO) build -q -p rein-cli
	rm -rf $(OTELCOL_DIR)/smoke && mkdir -p $(OTELCOL_DIR)/smoke/db && cp -r examples/scenarios $(OTELCOL_DIR)/smoke/
	PHOENIX_WORKING_DIR=$(OTELCOL_DIR)/smoke/db PHOENIX_HOST=127.0.0.1 PHOENIX_PORT=$(OTELCOL_PORT) \
	  PHOENIX_GRPC_PORT=$$(( $(OTELCOL_PORT) + 1 )) $(OTELCOL_DIR)/venv/bin/phoenix serve \
	  > $(OTELCOL_DIR)/smoke/phoenix.log 2>&1 & echo $$! > $(OTELCOL_DIR)/smoke/phoenix.pid
	@for i in $$(seq 120); do curl -sf http://127.0.0.1:$(OTELCOL_PORT)/healthz >/dev/null && break; sleep 1; done
	OTEL_SERVICE_NAME=rein-smoke target/debug/rein --otlp http://127.0.0.1:$(OTELCOL_PORT) \
	  run $(OTELCOL_DIR)/smoke/scenarios/happy-path.json --data-dir $(OTELCOL_DIR)/smoke/data --quiet
	sleep 2
	curl -sf "http://127.0.0.1:$(OTELCOL_PORT)/v1/projects/default/spans?limit=200" > $(OTELCOL_DIR)/smoke/spans.json; \
	  status=$$?; kill $$(cat $(OTELCOL_DIR)/smoke/phoenix.pid); test $$status -eq 0
	python3 -c 'import json,sys; spans=json.load(open(sys.argv[1]))["data"]; \
	  names={s["name"]: s for s in spans}; \
	  need=["invoke_agent rein","execute_tool fs.list","execute_tool fs.write","rein.step 0"]; \
	  missing=[n for n in need if n not in names]; \
	  assert not missing, f"missing spans {missing} among {sorted(names)}"; \
	  assert names["invoke_agent rein"]["span_kind"] == "AGENT", names["invoke_agent rein"]; \
	  assert names["execute_tool fs.list"]["span_kind"] == "TOOL"; \
	  assert len({s["context"]["trace_id"] for s in spans}) == 1, "one trace"; \
	  print(f"otel-smoke: {len(spans)} spans in one trace reached Phoenix, kinds AGENT and TOOL")' \
	  $(OTELCOL_DIR)/smoke/spans.json
