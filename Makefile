# The two set-up commands: `make demo` and `make test`. Each creates .venv and
# installs what it needs; nothing else is assumed on the machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test bench lint typecheck contracts unit mutate clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/credit run

lint: $(STAMP)
	$(BIN)/ruff format --check src tests evals benchmarks
	$(BIN)/ruff check src tests evals benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy --strict src

contracts: $(STAMP)
	$(BIN)/lint-imports

unit: $(STAMP)
	$(BIN)/python -m pytest -W error

test: lint typecheck contracts unit
	$(BIN)/credit eval
	$(BIN)/credit mutate

mutate: $(STAMP)
	$(BIN)/credit mutate

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
