# Thin aliases over cargo (STYLE.md "Strictness"). Every target is one cargo command you can
# also type yourself; `make ci` is what .ci/run runs.

CARGO ?= cargo
SCENARIO ?= examples/scenarios/happy-path.json

.PHONY: help fmt fmt-check lint doc test ci bench bench-peers run reliability crash-test fuzz-smoke fuzz-replay

# The reliability suites (docs/RELIABILITY.md): the long crash test and real fuzzing.
CRASH_KILLS ?= 200
CRASH_SEED ?= 0x5EED
FUZZ_TIME ?= 10
FUZZ_TARGETS := ledger_line ledger_file decision ids policy shell scenario

help:
	@echo "make run        run the happy-path scenario with the rein CLI (data in target/rein-demo)"
	@echo "make test       cargo test --workspace (after make mcp-servers)"
	@echo "make mcp-servers  the pinned MCP servers the MCP tests import, under target/mcp (npm, a Python venv)"
	@echo "make ci         fmt-check, lint, doc, test, reliability, fuzz-smoke, in that order; stops at the first failure"
	@echo "make fmt        cargo fmt --all"
	@echo "make package-check  cargo package --workspace --no-verify: every publishable crate packs as crates.io would take it"
	@echo "make fmt-check  cargo fmt --all --check"
	@echo "make lint       cargo clippy --workspace --all-targets -- -D warnings"
	@echo "make doc        RUSTDOCFLAGS=\"-D warnings\" cargo doc --workspace --no-deps"
	@echo "make bench      the workloads of docs/BENCHMARKS.md (W1-W5), with their ratios"
	@echo "make bench-peers  W1 in rein and in LangGraph, side by side (makes bench-peers/.venv)"
	@echo "make bench-tools  fs.grep against rg, shell.run against a bare spawn (installs Debian's ripgrep if rg is missing)"
	@echo "make reliability  the short forms with their figures: hostile, faults, bypass, shell, properties, fuzz replay, crash (part of make ci)"
	@echo "make crash-test   the long crash test: CRASH_KILLS kills per scenario (default 200), CRASH_SEED"
	@echo "make fuzz-smoke   every cargo-fuzz target for FUZZ_TIME seconds (default 10; installs cargo-fuzz into target/tools)"
	@echo "make fuzz-replay  the fuzz seeds, their mutations and random bytes through the checks, under cargo test"

fmt:
	$(CARGO) fmt --all

fmt-check:
	$(CARGO) fmt --all --check

lint:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# Every publishable crate packs as crates.io would take it: manifest fields, version
# requirements on each other (resolved against the registry index plus the workspace's own
# packages), the files each .crate holds. --no-verify skips rebuilding each packed crate
# alone, which `make lint` and `make test` already cover at a fraction of the cost.
.PHONY: package-check
package-check:
	$(CARGO) package --workspace --exclude rein-examples --exclude rein-workspace-tests --no-verify --allow-dirty

doc:
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps

test: mcp-servers
	$(CARGO) test --workspace

# Sequential on purpose (also under `make -j`): each step runs only if the one before passed.
ci:
	@echo "==> ci: fmt-check"
	@$(MAKE) --no-print-directory fmt-check
	@echo "==> ci: lint"
	@$(MAKE) --no-print-directory lint
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

# The built-in tools against their baselines (docs/BENCHMARKS.md, "Built-in tools"): fs.grep
# against ripgrep on the same generated tree, shell.run against a bare tokio spawn.
.PHONY: bench-tools
bench-tools:
	@command -v rg >/dev/null || (apt-get update && apt-get install -y ripgrep)
	$(CARGO) bench -p rein-tools --bench tools

# W1 in rein and as a LangGraph StateGraph (pinned in bench-peers/requirements.txt).
PEERS_VENV := bench-peers/.venv
bench-peers:
	@test -x $(PEERS_VENV)/bin/python || python3 -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/pip install -q -r bench-peers/requirements.txt
	CARGO=$(CARGO) $(PEERS_VENV)/bin/python bench-peers/compare.py

run:
	$(CARGO) run -q -p rein-cli -- run $(SCENARIO) --data-dir target/rein-demo

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
MCP_NPM := @modelcontextprotocol/server-everything@2026.8.31 @modelcontextprotocol/server-filesystem@2026.8.31
MCP_PY := mcp==2.3.0
MCP_STAMP := $(MCP_DIR)/installed-everything-2026.8.31-filesystem-2026.8.31-py-mcp-2.3.0
mcp-servers: $(MCP_STAMP)
$(MCP_STAMP):
	@command -v npm >/dev/null || { echo "mcp-servers: npm (Node.js 18+) is needed to install the reference MCP servers" >&2; exit 1; }
	@command -v python3 >/dev/null || { echo "mcp-servers: python3 (with venv) is needed for the MCP Python SDK" >&2; exit 1; }
	npm install --prefix $(MCP_DIR)/npm --no-audit --no-fund --save-exact $(MCP_NPM)
	test -x $(MCP_DIR)/venv/bin/python || python3 -m venv $(MCP_DIR)/venv
	$(MCP_DIR)/venv/bin/pip install -q $(MCP_PY)
	touch $@
