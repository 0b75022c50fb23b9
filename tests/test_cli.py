"""The ``credit`` command line: ``decide`` prints one JSON line per case in input order;
bad input names source, line, case and field on stderr, exits 2, and every other case
is still decided; ``run`` prints a summary table."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import auto_case, card_case
from credit import loads, parse_decision
from credit.cli import app

BIN = Path(sys.executable).parent / "credit"


def write_batch(path: Path, lines: list[Any]) -> Path:
    text = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    path.write_text(text, encoding="utf-8")
    return path


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def output_lines(stdout: str) -> list[dict[str, Any]]:
    rows = [loads(line) for line in stdout.splitlines() if line.strip()]
    for row in rows:
        assert list(row) == ["caseId", "decision", "reasonCodes"]
        parse_decision(row["decision"], case_id=row["caseId"])  # validates as a Decision
    return rows


def test_deciding_one_json_case_prints_one_json_line(tmp_path: Path) -> None:
    path = tmp_path / "case.json"
    path.write_text(json.dumps(auto_case(case_id="C-ONE"), indent=2), encoding="utf-8")
    result = invoke("decide", str(path))
    assert result.exit_code == 0, result.output
    (row,) = output_lines(result.stdout)
    assert row["caseId"] == "C-ONE"
    assert row["decision"]["decision"] == "approve"
    assert row["reasonCodes"] == []
    assert result.stderr == ""


def test_deciding_a_batch_prints_json_lines_in_input_order(tmp_path: Path) -> None:
    cases = [
        card_case(case_id="C-3", score=500),
        auto_case(case_id="C-1"),
        auto_case(case_id="C-2", score=None),
        card_case(case_id="C-0", debt="5000.00"),
    ]
    result = invoke("decide", str(write_batch(tmp_path / "batch.jsonl", cases)))
    assert result.exit_code == 0, result.output
    rows = output_lines(result.stdout)
    assert [r["caseId"] for r in rows] == ["C-3", "C-1", "C-2", "C-0"]
    assert [r["decision"]["decision"] for r in rows] == ["decline", "approve", "refer", "decline"]
    assert rows[0]["reasonCodes"] == ["SCORE_BELOW_MINIMUM"]
    assert rows[2]["reasonCodes"] == ["REFER_NO_SCORE"]


def test_decided_numbers_are_printed_exactly(tmp_path: Path) -> None:
    path = tmp_path / "case.json"
    path.write_text(json.dumps(auto_case()), encoding="utf-8")
    result = invoke("decide", str(path))
    assert '"terms":{"apr":6.49,"amount":20000.00,"termMonths":60}' in result.stdout
    assert '"ltvPct":80.0' in result.stdout


def test_blank_lines_in_a_batch_are_skipped_but_line_numbers_are_kept(tmp_path: Path) -> None:
    bad = auto_case(case_id="C-BAD", score=None)
    bad["creditReport"]["colour"] = "red"
    path = write_batch(tmp_path / "batch.jsonl", [auto_case(case_id="C-1"), "", bad])
    result = invoke("decide", str(path))
    assert result.exit_code == 2
    assert f"{path}, line 3, case C-BAD, field creditReport.colour" in result.stderr
    assert [r["caseId"] for r in output_lines(result.stdout)] == ["C-1"]


def test_a_request_the_policy_does_not_offer_names_line_case_and_field(tmp_path: Path) -> None:
    bad = auto_case(case_id="C-BAD", term=30)
    path = write_batch(tmp_path / "batch.jsonl", [auto_case(case_id="C-1"), bad])
    result = invoke("decide", str(path))
    assert result.exit_code == 2
    assert "line 2, case C-BAD, field application.termMonths: term of 30 months" in result.stderr


def test_a_request_the_policy_does_not_offer_also_names_the_source(tmp_path: Path) -> None:
    bad = auto_case(case_id="C-BAD", term=30)
    path = write_batch(tmp_path / "batch.jsonl", [bad])
    result = invoke("decide", str(path))
    assert f"{path}, line 1, case C-BAD, field application.termMonths" in result.stderr


@pytest.fixture
def mixed_batch(tmp_path: Path) -> Path:
    unknown = auto_case(case_id="C-UNK")
    unknown["application"]["downPayment"] = "1000.00"
    return write_batch(
        tmp_path / "mixed.jsonl",
        [
            auto_case(case_id="C-1"),
            '{"caseId": "C-2", "asOf": "2026-11-30", "application": {',  # malformed JSON
            unknown,
            card_case(case_id="C-4"),
            auto_case(case_id="C-5", amount="4000.00"),  # under the product minimum
            card_case(case_id="C-6", score=600),
        ],
    )


def test_a_batch_with_bad_lines_exits_2_naming_line_case_and_field_and_decides_the_rest(
    mixed_batch: Path,
) -> None:
    result = invoke("decide", str(mixed_batch))
    assert result.exit_code == 2
    rows = output_lines(result.stdout)
    assert [r["caseId"] for r in rows] == ["C-1", "C-4", "C-6"]
    err = result.stderr
    assert "3 of 6 case(s) not decided" in err
    assert f"{mixed_batch}, line 2, case C-2: not valid JSON" in err
    assert (
        f"{mixed_batch}, line 3, case C-UNK, field application.downPayment: "
        "unknown field 'application.downPayment' is not part of the case format"
    ) in err
    assert "line 5, case C-5, field application.requestedAmount" in err


def test_the_installed_command_exits_2_on_bad_input_and_still_prints_good_cases(
    mixed_batch: Path,
) -> None:
    proc = subprocess.run(
        [str(BIN), "decide", str(mixed_batch)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 2
    assert [r["caseId"] for r in output_lines(proc.stdout)] == ["C-1", "C-4", "C-6"]
    assert "line 3, case C-UNK, field application.downPayment" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_missing_file_is_bad_input(tmp_path: Path) -> None:
    result = invoke("decide", str(tmp_path / "nowhere.jsonl"))
    assert result.exit_code == 2
    assert "nowhere.jsonl" in result.stderr and "cannot read" in result.stderr


def test_run_on_a_small_batch_prints_a_summary_table(tmp_path: Path) -> None:
    cases = [
        auto_case(case_id="A-1"),  # approve, prime
        auto_case(case_id="A-2", score=650),  # approve, subprime
        auto_case(case_id="A-3", amount="12500.00", value="10000.00"),  # counteroffer
        card_case(case_id="K-1", score=600),  # decline, subprime
        card_case(case_id="K-2", score=None),  # refer, unscored
    ]
    result = invoke("run", str(write_batch(tmp_path / "batch.jsonl", cases)))
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Outcomes by product and score band" in out
    assert "reference-credit-policy v2026.1" in out
    rows = {
        tuple(cell.strip() for cell in line.strip("│┃ ").split("│")[:2]): [
            cell.strip() for cell in line.strip("│┃ ").split("│")[2:]
        ]
        for line in out.splitlines()
        if line.startswith("│")
    }
    # columns: approve, counteroffer, decline, refer, total
    assert rows[("auto", "prime")] == ["1", "1", "0", "0", "2"]
    assert rows[("auto", "subprime")] == ["1", "0", "0", "0", "1"]
    assert rows[("card", "subprime")] == ["0", "0", "1", "0", "1"]
    assert rows[("card", "unscored")] == ["0", "0", "0", "1", "1"]
    assert rows[("all", "")] == ["2", "1", "1", "1", "5"]


def test_run_reports_bad_lines_and_exits_2(mixed_batch: Path) -> None:
    result = invoke("run", str(mixed_batch))
    assert result.exit_code == 2
    assert "Outcomes by product and score band" in result.stdout
    assert "line 3, case C-UNK, field application.downPayment" in result.stderr


def test_every_bundled_case_decided_by_the_cli_validates_against_the_decision_schema() -> None:
    bundled = Path(__file__).resolve().parents[1] / "examples" / "cases.jsonl"
    result = invoke("decide", str(bundled))
    assert result.exit_code == 0, result.stderr
    rows = output_lines(result.stdout)  # each line's decision validates as a Decision
    ids = [loads(line)["caseId"] for line in bundled.read_text().splitlines() if line.strip()]
    assert [row["caseId"] for row in rows] == ids
