"""``credit batch decide``: a case file in, one decision row per case read out, in any
of the three formats; bad rows named on stderr by line and field, every other row
still decided, exit 2. And the parallel runs that must equal the serial ones: the
notices of a batch and ``credit mutate --workers``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner

from conftest import POLICY
from credit.batch import decide_frame, decision_schema
from credit.batch.generate import generate_frame, stress_frame
from credit.batch.io import read_decisions, write_cases
from credit.batch.notices import verify_notices
from credit.cli import app
from credit.examples import generate_cases
from credit.models import parse_case
from notice_helpers import GOLDEN_CASES

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from evals import mutations as M  # noqa: E402


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


@pytest.fixture(scope="module")
def clean() -> pl.DataFrame:
    return pl.concat(
        [generate_frame(9, 600), stress_frame(9, 1_400, anomalies=False)], how="vertical"
    )


@pytest.mark.parametrize(
    ("source", "target"), [("parquet", "csv"), ("csv", "jsonl"), ("jsonl", "parquet")]
)
def test_batch_decide_writes_one_decision_row_per_case_in_any_format(
    source: str, target: str, clean: pl.DataFrame, tmp_path: Path
) -> None:
    cases = tmp_path / f"cases.{source}"
    write_cases(clean, cases)
    out = tmp_path / f"decisions.{target}"
    result = invoke("batch", "decide", str(cases), "--out", str(out), "--chunk-size", "450")
    assert result.exit_code == 0, result.output
    assert f"{clean.height:,} decided of {clean.height:,} rows read" in result.stdout
    assert "Outcomes by product and score band" in result.stdout
    assert read_decisions(out, decision_schema(POLICY)).equals(decide_frame(clean, POLICY))


def test_batch_decide_names_each_bad_row_by_line_and_field_and_decides_the_rest(
    clean: pl.DataFrame, tmp_path: Path
) -> None:
    cases = tmp_path / "cases.csv"
    head = clean.head(20)
    auto = head["product"].to_list().index("auto")  # its term is made one not offered
    bad = head.with_columns(
        termMonths=pl.when(pl.int_range(pl.len()) == auto)
        .then(pl.lit(84, dtype=pl.Int32))
        .otherwise(pl.col("termMonths"))
    )
    write_cases(bad, cases)
    lines = cases.read_text(encoding="utf-8").splitlines()
    unreadable = 10 if auto != 9 else 11  # a line (data row) other than the auto row's
    header = lines[0].split(",")
    cells = lines[unreadable - 1].split(",")
    cells[header.index("tradelines")] = "many"
    lines[unreadable - 1] = ",".join(cells)
    cases.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    result = invoke("batch", "decide", str(cases), "--out", str(out), "--format", "jsonl")
    assert result.exit_code == 2
    assert "2 of 20 row(s) not decided (bad input)" in result.stderr
    assert (
        f"{cases}, line {auto + 2}, case {bad['caseId'][auto]}, field application.termMonths: "
        "term of 84 months is not offered" in result.stderr
    )
    assert (
        f"{cases}, line {unreadable}, case {bad['caseId'][unreadable - 2]}, field tradelines: "
        "tradelines must be a whole number (got 'many')" in result.stderr
    )
    written = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(written) == 19  # the unreadable row is not written; the others are


def test_batch_decide_refuses_an_unknown_format_and_a_missing_file(tmp_path: Path) -> None:
    result = invoke("batch", "decide", str(tmp_path / "none.csv"), "--out", str(tmp_path / "o.csv"))
    assert result.exit_code == 2 and "no such file" in result.stderr
    result = invoke(
        "batch", "decide", "x.csv", "--out", str(tmp_path / "o.out"), "--format", "xlsx"
    )
    assert result.exit_code == 2 and "unknown format 'xlsx'" in result.stderr


def test_the_notices_of_a_batch_verified_on_two_processes_are_the_serial_result() -> None:
    cases = [parse_case(d) for d in generate_cases(12, 400)]
    serial = verify_notices(cases, POLICY, workers=1, chunk_size=60)
    parallel = verify_notices(cases, POLICY, workers=2, chunk_size=60)
    assert serial.notices > 100 and serial.verified == serial.notices and serial.passed
    assert (parallel.cases, parallel.notices, parallel.verified, parallel.failures) == (
        serial.cases,
        serial.notices,
        serial.verified,
        serial.failures,
    )


FORKED = """
import pickle, sys
from credit.batch.notices import process_context, verify_notices
from credit.examples import generate_cases
from credit.models import Case

class Sealed(Case):  # a case that cannot be pickled
    def __reduce_ex__(self, protocol):
        raise TypeError("a sealed case was pickled")

assert "polars" not in sys.modules and process_context().get_start_method() == "fork"
cases = [Sealed.model_validate(d) for d in generate_cases(12, 400)]
serial = verify_notices(cases, workers=1, chunk_size=60)
parallel = verify_notices(cases, workers=2, chunk_size=60)
assert serial.notices > 100 and serial.verified == serial.notices
assert (parallel.cases, parallel.notices, parallel.verified, parallel.failures) == (
    serial.cases, serial.notices, serial.verified, serial.failures)
try:
    pickle.dumps(cases[0])
except TypeError as err:
    print("forked workers read the cases unpickled;", err)
"""


def test_forked_workers_read_the_batch_as_the_fork_left_it_never_pickled() -> None:
    """Pickling validated cases to the workers took longer than deciding them: forked
    workers take positions in the batch instead, and give the serial result."""
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", FORKED], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ("forked workers read the cases unpickled; a sealed case was pickled\n")


def test_the_mutation_suite_on_two_workers_gives_the_serial_results() -> None:
    serial = M.run(GOLDEN_CASES)
    parallel = M.run(GOLDEN_CASES, workers=2)
    assert M.to_wire(parallel) == M.to_wire(serial)
    assert serial.passed
