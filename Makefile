# Thin aliases over cargo (STYLE.md "Strictness"). Every target is one cargo command you can
# also type yourself; `make ci` is what .ci/run runs.

CARGO ?= cargo
SCENARIO ?= examples/scenarios/happy-path.json

.PHONY: help fmt fmt-check lint doc test ci bench run

help:
	@echo "make run        run the happy-path scenario with the rein CLI (data in target/rein-demo)"
	@echo "make test       cargo test --workspace"
	@echo "make ci         fmt-check, lint, doc, test, in that order; stops at the first failure"
	@echo "make fmt        cargo fmt --all"
	@echo "make fmt-check  cargo fmt --all --check"
	@echo "make lint       cargo clippy --workspace --all-targets -- -D warnings"
	@echo "make doc        RUSTDOCFLAGS=\"-D warnings\" cargo doc --workspace --no-deps"
	@echo "make bench      cargo bench --workspace"

fmt:
	$(CARGO) fmt --all

fmt-check:
	$(CARGO) fmt --all --check

lint:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

doc:
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps

test:
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
	@echo "==> ci: all checks passed"

bench:
	$(CARGO) bench --workspace

run:
	$(CARGO) run -q -p rein-cli -- run $(SCENARIO) --data-dir target/rein-demo
