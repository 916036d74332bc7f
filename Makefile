# The two commands the README promises: `make demo` and `make test`.
# Each creates .venv when it is missing and installs what it needs.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PIP_FLAGS := --disable-pip-version-check --quiet
# Bytecode caches stay on even where the environment sets PYTHONDONTWRITEBYTECODE: without
# them each of the suites' several hundred Python processes recompiles every module it imports
# (about 3.5 CPU-seconds for the engine with numpy, LangChain and LlamaIndex), and pytest
# re-rewrites every test module in each worker.
unexport PYTHONDONTWRITEBYTECODE
# Each phase prints its wall and CPU time (scripts/phase.py).
PHASE := $(PYTHON) $(CURDIR)/scripts/phase.py

.PHONY: demo test checks lint typecheck importlint docs unit unit-parallel unit-serial dist check-dist bench bench-all bench-100k bench-1m bench-lexical clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install $(PIP_FLAGS) --upgrade pip

ADAPTERS := adapters/langchain adapters/llamaindex
# Separate distributions beside the engine, installed editable with their tests:
# the adapters and the benchmarks (embedmind-bench, `embedmind bench`).
DISTRIBUTIONS := $(ADAPTERS) bench

# `make demo` needs the engine only (no dev tools): not editable, because every
# editable mode of setuptools prints a warning for this layout, so it is reinstalled
# when a file of the engine changes. Once `make test` has installed the dev chain
# (the engine editable), the demo keeps that install current instead.
DEMO_STAMP := $(VENV)/.demo-installed
ENGINE_FILES := $(shell find embedmind -type f -not -path '*/__pycache__/*')

$(DEMO_STAMP): pyproject.toml $(ENGINE_FILES) | $(BIN)/python
	if [ -f $(STAMP) ]; then $(MAKE) --no-print-directory $(STAMP); \
	else $(BIN)/python -m pip install $(PIP_FLAGS) .; fi
	touch $(DEMO_STAMP)

# --no-compile: Python compiles a module when it is first imported (and keeps it: see above); byte-compiling all
# ~10,000 modules up front cost ~55 CPU-seconds, mostly for modules no test imports.
$(STAMP): pyproject.toml $(foreach d,$(DISTRIBUTIONS),$(d)/pyproject.toml) | $(BIN)/python
	$(PHASE) install $(BIN)/python -m pip install $(PIP_FLAGS) --no-compile -e '.[dev]' $(foreach d,$(DISTRIBUTIONS),-e '$(d)[test]')
	touch $(STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/embedmind demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check embedmind tests scripts adapters bench

typecheck: $(STAMP)
	$(PHASE) mypy $(BIN)/mypy

importlint: $(STAMP)
	$(BIN)/lint-imports

# The suites run on every core (pytest-xdist, one worker per core, at most 8: each
# worker imports the engine and starts its own throwaway PostgreSQL server), except
# the tests marked `serial` (stall budgets, kill -9, power loss, many processes):
# those run alone, one at a time, afterwards. `make unit WORKERS=1` runs one worker.
WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); echo $$(( n > 8 ? 8 : n )))
XDIST := -n $(WORKERS) --dist loadscope
PYTEST := $(CURDIR)/$(BIN)/python -m pytest

unit-parallel: $(STAMP)
	$(PHASE) engine $(PYTEST) $(XDIST) -m 'not slow and not bench and not serial'
	cd notebooks && $(PHASE) notebooks $(PYTEST) --nbmake -q -p no:cacheprovider $(XDIST) .
	for dist in $(DISTRIBUTIONS); do (cd $$dist && $(PHASE) $$dist $(PYTEST) $(XDIST)) || exit 1; done

unit-serial: $(STAMP)
	$(PHASE) engine-serial $(PYTEST) -m 'serial and not slow and not bench'

unit: $(STAMP)
	$(MAKE) --no-print-directory unit-parallel
	$(MAKE) --no-print-directory unit-serial

docs: $(STAMP)
	$(PHASE) docs $(BIN)/mkdocs build --strict --quiet -d build/site

# The four wheels (embedmind, langchain-embedmind, llama-index-vector-stores-embedmind,
# embedmind-bench) into dist/, built offline; check-dist installs each README "Install" line from them
# into a fresh venv with --no-index and runs the README tour (third-party wheels are
# downloaded once into build/wheelhouse).
dist: $(STAMP)
	$(BIN)/python scripts/check_dist.py --build-only

check-dist: $(STAMP)
	$(PHASE) check-dist $(BIN)/python scripts/check_dist.py

# The checks that are not test suites, one after another: beside the parallel suites
# in `make test`.
checks: lint typecheck importlint docs check-dist

# The checks and the parallel suites at once (neither times anything, and the checks
# mostly wait on one core or the disk), their output after the suites'; then the
# serial tests alone, on an otherwise idle machine.
test: $(STAMP)
	@mkdir -p build
	@$(PHASE) checks $(MAKE) --no-print-directory checks > build/checks.log 2>&1 & checks=$$!; \
	$(MAKE) --no-print-directory unit-parallel; suites=$$?; \
	wait $$checks; checked=$$?; \
	echo "--- make checks (ran beside the suites; build/checks.log) ---"; cat build/checks.log; \
	[ $$suites -eq 0 ] && [ $$checked -eq 0 ]
	$(MAKE) --no-print-directory unit-serial

# Benchmarks (docs/benchmarks.md): the bench/ distribution, installed editable by
# $(STAMP); its peers come from its `peers` extra, installed once into the same
# environment (never by `make test`). Each target prints tables and writes JSON
# under build/bench/. `bench` is the acceptance pair (under 15 minutes each);
# the 100k and 1M targets are for a quiet machine (each run under an hour).
BENCH_STAMP := $(VENV)/.bench-installed

$(BENCH_STAMP): $(STAMP) bench/pyproject.toml
	$(BIN)/python -m pip install $(PIP_FLAGS) -e '.[dev]' -e 'bench[test,peers]'
	touch $(BENCH_STAMP)

# Exit code 5 is "skipped" (no LoCoMo data here), not a failure.
bench: $(BENCH_STAMP)
	$(BIN)/embedmind bench locomo || [ $$? -eq 5 ]
	$(BIN)/embedmind bench peers --size 10k

bench-all: $(BENCH_STAMP)
	for w in locomo lexical vector ingest recall peers embedder fragments; do \
		$(BIN)/embedmind bench $$w || [ $$? -eq 5 ] || exit 1; done

bench-100k: $(BENCH_STAMP)
	for w in lexical vector peers; do $(BIN)/embedmind bench $$w --size 100k || exit 1; done
	$(BIN)/embedmind bench ingest --sizes 10k,100k
	$(BIN)/embedmind bench recall --sizes 10k,100k

bench-1m: $(BENCH_STAMP)
	for w in lexical vector; do $(BIN)/embedmind bench $$w --size 1M || exit 1; done
	$(BIN)/embedmind bench peers --size 1M --no-locomo
	$(BIN)/embedmind bench ingest --sizes 10k,100k,1M
	$(BIN)/embedmind bench recall --sizes 10k,100k,1M

bench-lexical: $(BENCH_STAMP)
	$(BIN)/embedmind bench lexical --sizes 100k,1M

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build dist *.egg-info
