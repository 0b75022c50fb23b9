"""The Spark runner (credit.batch.spark) in local mode: the same decisions as the local
columnar batch, row for row, on the same Parquet input.

One ``local[2]`` session serves the module (no UI, two shuffle partitions, the driver
on 127.0.0.1) and is stopped at teardown. The command-line adapters are driven with
that session handed to them, so the module starts one JVM only.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="pyspark is the optional 'spark' extra")

import polars as pl
from pyspark.sql import SparkSession
from typer.testing import CliRunner

import credit.batch.spark as spark_runner
from credit import default_policy
from credit.batch import decide_frame
from credit.batch.generate import generate_frame
from credit.cli import app
from credit.errors import PolicyError
from credit.policy import Policy, load_policy

POLICY = default_policy()
CASES = 2400


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPARK_LOCAL_IP", "127.0.0.1")  # no hostname-lookup warning
        mp.setenv("PYSPARK_PYTHON", sys.executable)  # the workers run this interpreter
        session = spark_runner.session(
            "local[2]",
            app_name="credit-test",
            config={
                "spark.ui.enabled": "false",
                "spark.sql.shuffle.partitions": "2",
                "spark.default.parallelism": "2",
            },
        )
        session.sparkContext.setLogLevel("ERROR")
        try:
            yield session
        finally:
            session.stop()


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pl.DataFrame]:
    """Generated case rows (the bundled generator's edges, stress rows, error rows) as
    one Parquet file."""
    frame = generate_frame(2026, CASES, examples=800)
    assert frame["caseId"].n_unique() == CASES
    path = tmp_path_factory.mktemp("spark") / "cases.parquet"
    frame.write_parquet(path)
    return path, frame


def _read(directory: Path) -> pl.DataFrame:
    parts = sorted(directory.glob("part-*.parquet"))
    assert parts, f"no part files in {directory}"
    return pl.read_parquet(parts).sort("caseId")


def _local(frame: pl.DataFrame, policy: Policy) -> pl.DataFrame:
    return decide_frame(frame, policy).sort("caseId")


def test_spark_decides_exactly_as_the_local_batch(
    spark: SparkSession, cases: tuple[Path, pl.DataFrame], tmp_path: Path
) -> None:
    source, frame = cases
    target = tmp_path / "decisions.parquet"
    spark_runner.decide_parquet(spark, source, target, POLICY, partitions=3)
    got, want = _read(target), _local(frame, POLICY)
    assert len(list(target.glob("part-*.parquet"))) >= 2  # really split
    assert got.schema == want.schema
    assert got.equals(want)
    # Every kind of row went through Spark: each decision, and the error rows.
    assert set(got["decision"].drop_nulls()) == {"approve", "decline", "counteroffer", "refer"}
    assert got["errorKind"].null_count() < len(got)


def test_the_executors_decide_under_the_policy_given(
    spark: SparkSession, cases: tuple[Path, pl.DataFrame], tmp_path: Path
) -> None:
    """A policy other than the bundled one reaches the executors intact."""
    text = Path(POLICY.source).read_text(encoding="utf-8").replace('value: "45.0"', 'value: "41.5"')
    path = tmp_path / "tighter.yaml"
    path.write_text(text, encoding="utf-8")
    tighter = load_policy(path)
    source, frame = cases
    target = tmp_path / "decisions.parquet"
    spark_runner.decide_parquet(spark, source, target, tighter)
    got = _read(target)
    assert got.equals(_local(frame, tighter))
    assert not got.equals(_local(frame, POLICY))


class _Shared:
    """The module's session, handed to a command that would stop its own."""

    def __init__(self, session: SparkSession) -> None:
        self._session = session
        self.stopped = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    def stop(self) -> None:
        self.stopped = True


@pytest.fixture
def shared(spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    def session(master: str | None = None, *args: object, **kwargs: object) -> _Shared:
        seen["master"] = master
        seen["session"] = handed = _Shared(spark)
        return handed

    monkeypatch.setattr(spark_runner, "session", session)
    return seen


def test_credit_spark_decide_command(
    shared: dict[str, Any], cases: tuple[Path, pl.DataFrame], tmp_path: Path
) -> None:
    source, frame = cases
    target = tmp_path / "out.parquet"
    args = ["spark", "decide", str(source), str(target), "--master", "local[2]"]
    result = CliRunner().invoke(app, [*args, "--partitions", "2"])
    # The generated rows include bad ones: each is named, the rest decided (exit 2).
    bad = int(frame.height - _local(frame, POLICY)["errorKind"].null_count())
    assert bad and result.exit_code == 2, result.output
    assert "decisions written to" in result.output
    assert f"{bad:,} row(s) not decided (bad input):" in result.stderr
    assert f"  {source}, case " in result.stderr
    assert shared["master"] == "local[2]" and shared["session"].stopped
    assert _read(target).equals(_local(frame, POLICY))
    # The output exists now: refused without --overwrite (exit 2, Spark's reason).
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 2
    assert "already exists" in again.output
    assert "\tat " not in again.output  # no JVM stack trace
    assert CliRunner().invoke(app, [*args, "--overwrite"]).exit_code == 2


def test_spark_submit_entry_point(
    shared: dict[str, Any], cases: tuple[Path, pl.DataFrame], tmp_path: Path, capsys: Any
) -> None:
    """``spark-submit .../credit/batch/spark.py IN OUT``: Spark's own master; exit 2
    with the generated bad rows named (the rest decided), and a missing input is bad
    input, exit 2."""
    source, frame = cases
    target = tmp_path / "out.parquet"
    assert spark_runner.main([str(source), str(target)]) == 2  # the bad rows are named
    assert "row(s) not decided (bad input):" in capsys.readouterr().err
    assert shared["master"] is None
    assert _read(target).equals(_local(frame, POLICY))
    assert spark_runner.main([str(tmp_path / "missing.parquet"), str(tmp_path / "o")]) == 2
    assert "error:" in capsys.readouterr().err


def test_a_policy_changed_on_disk_is_refused(tmp_path: Path) -> None:
    """The executors load the policy's file text; if it is no longer the bytes the
    driver's policy came from, nothing is shipped."""
    path = tmp_path / "policy.yaml"
    text = Path(POLICY.source).read_text(encoding="utf-8")
    path.write_text(text, encoding="utf-8")
    policy = load_policy(path)
    path.write_text(text.replace('value: "45.0"', 'value: "44.0"'), encoding="utf-8")
    with pytest.raises(PolicyError, match="changed since"):
        spark_runner.PolicySource.of(policy)
    assert spark_runner.PolicySource.of(load_policy(path)).load().sha256 != policy.sha256
