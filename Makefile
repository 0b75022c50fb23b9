# The two set-up commands: `make demo` and `make test`. Each creates .venv and
# installs what it needs; nothing else is assumed on the machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CORE := $(VENV)/.installed-core
STAMP := $(VENV)/.installed-dev

.PHONY: demo test bench lint typecheck contracts unit browser mutate clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(CORE): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $(CORE)

# Tests install the optional extras too (the LLM adapter's tests need its SDK; the
# batch and Spark tests need polars, pyarrow and pyspark).
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev,llm,batch,spark]'
	touch $(CORE) $(STAMP)

# The main job on the embedded default: SQLite journal ./credit.db, the bundled cases,
# notices to ./outbox/; then the journal's hash chain is walked.
demo: $(CORE)
	$(BIN)/credit run
	$(BIN)/credit journal verify

lint: $(STAMP)
	$(BIN)/ruff format --check src tests evals benchmarks
	$(BIN)/ruff check src tests evals benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy --strict src

contracts: $(STAMP)
	$(BIN)/lint-imports

# The reviewer console's end-to-end tests drive Debian's chromium through Playwright,
# which never downloads a browser: install the package only when it is missing (root).
CHROMIUM := /usr/bin/chromium

$(CHROMIUM):
	apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium

browser: | $(CHROMIUM)

unit: $(STAMP) | $(CHROMIUM)
	$(BIN)/python -m pytest -W error

test: lint typecheck contracts unit
	$(BIN)/credit eval
	$(BIN)/credit mutate

mutate: $(STAMP)
	$(BIN)/credit mutate

# The peer engines (zen-engine) are installed for the benchmarks only.
bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[batch,peers]'
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache credit.db credit.db-wal credit.db-shm outbox
