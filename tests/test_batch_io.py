"""Case and decision files: JSON Lines, CSV and Parquet round trips, chunked reading,
and a bad row named by its file, line (or row), case and field."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from conftest import POLICY, auto_case, card_case
from credit.batch import decide_frame, decision_schema
from credit.batch.generate import generate_frame
from credit.batch.io import (
    DecisionWriter,
    count_rows,
    read_case_chunks,
    read_cases,
    read_decisions,
    write_cases,
)
from credit.canonical import dumps
from credit.errors import InputError

FORMATS = ("jsonl", "csv", "parquet")


@pytest.fixture(scope="module")
def frame() -> pl.DataFrame:
    return generate_frame(5, 2_500)


@pytest.mark.parametrize("fmt", FORMATS)
def test_cases_written_and_read_back_are_the_same_rows(
    fmt: str, frame: pl.DataFrame, tmp_path: Path
) -> None:
    path = tmp_path / f"cases.{fmt}"
    write_cases(frame, path)
    back, problems = read_cases(path)
    assert problems == []
    assert back.equals(frame)
    assert count_rows(path) == frame.height


@pytest.mark.parametrize("fmt", FORMATS)
def test_decisions_written_in_chunks_and_read_back_are_the_same_rows(
    fmt: str, frame: pl.DataFrame, tmp_path: Path
) -> None:
    decisions = decide_frame(frame, POLICY)
    path = tmp_path / f"decisions.{fmt}"
    with DecisionWriter(path) as writer:
        for start in range(0, decisions.height, 1_000):
            writer.write(decisions.slice(start, 1_000))
    assert read_decisions(path, decision_schema(POLICY)).equals(decisions)


def test_decisions_in_json_lines_state_every_figure_with_its_exact_digits(
    frame: pl.DataFrame, tmp_path: Path
) -> None:
    decisions = decide_frame(frame.head(50), POLICY)
    path = tmp_path / "decisions.jsonl"
    with DecisionWriter(path) as writer:
        writer.write(decisions)
    first = path.read_text(encoding="utf-8").splitlines()[0]
    row = decisions.row(0, named=True)
    assert f'"dtiPct":{row["dtiPct"]}' in first  # a JSON number, e.g. 26.4, never 26.400001
    assert first == dumps(row)


@pytest.mark.parametrize("fmt", FORMATS)
def test_chunked_reading_gives_the_whole_file_in_order(
    fmt: str, frame: pl.DataFrame, tmp_path: Path
) -> None:
    path = tmp_path / f"cases.{fmt}"
    write_cases(frame, path)
    chunks = list(read_case_chunks(path, chunk_size=700))
    assert [c.frame.height for c in chunks][:-1] == [700] * (len(chunks) - 1)
    assert pl.concat([c.frame for c in chunks]).equals(frame)
    assert sum(c.rows_read for c in chunks) == frame.height


def test_a_bad_csv_cell_names_the_line_case_and_field_and_the_other_rows_are_read(
    frame: pl.DataFrame, tmp_path: Path
) -> None:
    path = tmp_path / "cases.csv"
    write_cases(frame.head(10), path)
    lines = path.read_text(encoding="utf-8").splitlines()
    header = lines[0].split(",")
    cells = lines[4].split(",")  # data row 4, line 5
    cells[header.index("monthlyDebtCents")] = "1234.50"
    lines[4] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    back, problems = read_cases(path)
    assert back.height == 9
    [problem] = problems
    assert (problem.source, problem.line, problem.field) == (
        str(path),
        5,
        "monthlyDebtCents",
    )
    assert problem.case_id == frame["caseId"][3]
    assert str(problem).startswith(
        f"{path}, line 5, case {frame['caseId'][3]}, field monthlyDebtCents"
    )
    assert "'1234.50'" in problem.message


def test_a_bad_parquet_value_names_the_row_case_and_field(tmp_path: Path) -> None:
    frame = generate_frame(6, 20).with_columns(pl.col("asOf").cast(pl.String))
    frame = frame.with_columns(
        pl.when(pl.int_range(pl.len()) == 6)
        .then(pl.lit("2026-13-40"))
        .otherwise("asOf")
        .alias("asOf")
    )
    path = tmp_path / "cases.parquet"
    frame.write_parquet(path)
    back, problems = read_cases(path)
    assert back.height == 19
    [problem] = problems
    assert (problem.source, problem.field, problem.case_id) == (
        f"{path} row 7",
        "asOf",
        frame["caseId"][6],
    )


def test_a_parquet_column_of_another_type_is_refused_naming_it(tmp_path: Path) -> None:
    frame = generate_frame(6, 5).with_columns(pl.col("annualIncomeCents").cast(pl.Float64))
    path = tmp_path / "cases.parquet"
    frame.write_parquet(path)
    with pytest.raises(InputError) as caught:
        read_cases(path)
    assert caught.value.field == "annualIncomeCents"


def test_json_lines_may_carry_case_documents_flat_rows_and_bad_lines_together(
    tmp_path: Path,
) -> None:
    flat = generate_frame(8, 3).with_columns(pl.col("asOf").cast(pl.String))
    rows = flat.to_dicts()
    rows[1]["termMonths"] = "sixty"
    bad_case = card_case(case_id="BAD-DOC")
    bad_case["application"]["requestedLine"] = "-5.00"
    text = [
        dumps(auto_case(case_id="DOC-1")),
        json.dumps(rows[0]),
        "{not json",
        json.dumps(rows[1]),
        "",
        dumps(bad_case),
        json.dumps(rows[2]),
    ]
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    back, problems = read_cases(path)
    assert back["caseId"].to_list() == ["DOC-1", rows[0]["caseId"], rows[2]["caseId"]]
    assert [(p.line, p.field) for p in problems] == [
        (3, None),
        (4, "termMonths"),
        (6, "application.requestedLine"),
    ]
    assert problems[0].message.startswith("not valid JSON")


def test_a_file_with_an_unknown_or_missing_column_is_refused_naming_it(
    frame: pl.DataFrame, tmp_path: Path
) -> None:
    path = tmp_path / "extra.csv"
    write_cases(frame.head(3).with_columns(pl.lit(1).alias("favouriteColour")), path)
    with pytest.raises(InputError, match="unknown column 'favouriteColour'"):
        read_cases(path)
    path = tmp_path / "short.csv"
    write_cases(frame.head(3).drop("tradelines"), path)
    with pytest.raises(InputError) as caught:
        read_cases(path)
    assert caught.value.field == "tradelines"


def test_a_file_whose_format_cannot_be_told_is_refused() -> None:
    with pytest.raises(InputError, match="cannot tell the format"):
        list(read_case_chunks("cases.txt"))


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_writer_closed_twice_keeps_its_rows_and_an_empty_one_keeps_its_header(
    fmt: str, frame: pl.DataFrame, tmp_path: Path
) -> None:
    schema = decision_schema(POLICY)
    decisions = decide_frame(frame.head(5), POLICY)
    path = tmp_path / f"some.{fmt}"
    with DecisionWriter(path) as writer:
        writer.write(decisions)
        writer.close(schema)
    assert read_decisions(path, schema).equals(decisions)
    empty = tmp_path / f"none.{fmt}"
    DecisionWriter(empty).close(schema)
    if fmt != "jsonl":
        assert read_decisions(empty, schema).columns == list(schema)
    assert read_decisions(empty, schema).height == 0
