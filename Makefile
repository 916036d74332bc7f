# The two commands the README promises: `make demo` and `make test`.
# Each creates .venv when it is missing and installs what it needs.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PIP_FLAGS := --disable-pip-version-check --quiet

.PHONY: demo test lint typecheck importlint docs unit bench-lexical clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install $(PIP_FLAGS) --upgrade pip

ADAPTERS := adapters/langchain adapters/llamaindex

$(STAMP): pyproject.toml $(foreach a,$(ADAPTERS),$(a)/pyproject.toml) | $(BIN)/python
	$(BIN)/python -m pip install $(PIP_FLAGS) -e '.[dev]' $(foreach a,$(ADAPTERS),-e '$(a)[test]')
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/embedmind demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check embedmind tests scripts adapters

typecheck: $(STAMP)
	$(BIN)/mypy

importlint: $(STAMP)
	$(BIN)/lint-imports

unit: $(STAMP)
	$(BIN)/python -m pytest
	cd notebooks && ../$(BIN)/python -m pytest --nbmake -q -p no:cacheprovider .
	for adapter in $(ADAPTERS); do (cd $$adapter && $(CURDIR)/$(BIN)/python -m pytest) || exit 1; done

docs: $(STAMP)
	$(BIN)/mkdocs build --strict --quiet -d build/site

test: lint typecheck importlint docs unit

bench-lexical: $(STAMP)
	$(BIN)/python -m pip install $(PIP_FLAGS) -e '.[dev,bench]'
	$(BIN)/python scripts/bench_lexical.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build *.egg-info
