# The two set-up commands: `make demo` and `make test`. Each creates .venv and
# installs what it needs; nothing else is assumed on the machine.
# The interpreter the virtual environment is made from: the operating system's own
# Python (/usr/bin/python3) when it is 3.11 or newer and can make a virtual environment
# (ensurepip: Debian's python3-venv), else the first python3 on PATH. A distribution's
# interpreter is built with profile-guided and link-time optimisation and kept patched
# by its security updates; on these machines python3 on PATH is pyenv's 3.11.7, built
# without either, and Debian's 3.11 runs a governed case about 13% faster, the bare
# underwriter and the verifier about 18% (docs/performance.md). `make PYTHON=...`
# chooses another; an existing .venv keeps the interpreter it was made from.
SYSTEM_PYTHON := /usr/bin/python3
PYTHON ?= $(shell $(SYSTEM_PYTHON) -c 'import sys, ensurepip, venv; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1 && echo $(SYSTEM_PYTHON) || echo python3)
VENV := .venv
BIN := $(VENV)/bin
CORE := $(VENV)/.installed-core
STAMP := $(VENV)/.installed-dev

.PHONY: demo test bench bytecode lint typecheck contracts unit llm-real-path browser mutate clean

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

# Commands start from compiled bytecode, as from an installed package: an editable
# install leaves none for src/, and where PYTHONDONTWRITEBYTECODE is set (these machines)
# Python never writes it, so every command compiled each module it imported from source
# (about 20 ms of `credit verify`'s start). compileall rewrites only what changed.
bytecode: $(CORE)
	$(BIN)/python -m compileall -q src

# The main job on the embedded default: SQLite journal ./credit.db, the bundled cases,
# notices to ./outbox/; then the journal's hash chain is walked.
demo: $(CORE) bytecode
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

# The LLM underwriter's real path (tests/test_llm_real_path.py): the Claude Agent SDK's
# loop and the CLI it bundles, against the scripted stand-in of the Messages API on
# loopback, in a network namespace of its own where only `lo` is up (unshare -n as
# root, else with a user namespace: unshare -rn), so the CLI can reach nothing else.
# PostgreSQL is not reachable in there: only these tests run in it (41 tests, about
# 140 real CLI sessions, 77 of them `credit eval --underwriter claude` over every eval
# row: 4m30s on the shared 2-core machine at load 3.5). `ip` (iproute2) brings lo up.
IP := /usr/sbin/ip
UNSHARE := unshare $(if $(filter 0,$(shell id -u)),-n,-rn)

$(IP):
	apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y iproute2

REAL_PATH_TESTS := env -u CREDIT_TEST_DATABASE_URL CREDIT_LLM_REAL_PATH=1 \
	$(BIN)/python -m pytest -W error tests/test_llm_real_path.py

llm-real-path: $(STAMP) | $(IP)
	$(UNSHARE) sh -c '$(IP) link set lo up && exec $(REAL_PATH_TESTS)'

unit: $(STAMP) bytecode | $(CHROMIUM)
	$(BIN)/python -m pytest -W error --ignore=tests/test_llm_real_path.py
	$(MAKE) llm-real-path

test: lint typecheck contracts unit
	$(BIN)/credit eval
	$(BIN)/credit mutate

mutate: $(STAMP)
	$(BIN)/credit mutate

# The peer engines (zen-engine) are installed for the benchmarks only.
bench: $(STAMP) bytecode
	$(BIN)/python -m pip install --quiet -e '.[batch,peers]'
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache credit.db credit.db-wal credit.db-shm outbox transcripts checkpoints credit-journal.key credit-journal.key.pub
