"""The notice commands: ``credit notice`` renders, ``credit verify`` prints the report
(exit 0 all pass, 1 a check failed, 2 bad input naming the field), ``credit lock``
shows the diff to review and writes only with --accept, ``credit run`` renders,
verifies and sends."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from credit.canonical import loads
from credit.cli import app
from credit.guardrails import Verifier
from notice_helpers import (
    COUNTER_AUTO,
    COUNTER_CARD,
    DECLINE_DTI,
    GOLDEN,
    GOLDEN_CASES,
    changed,
    data_copy,
    golden_case,
    notice_and_expectation,
    pins_from,
)


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def write_batch(path: Path, cases: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    return path


def test_notice_prints_one_json_line_per_decline_or_counteroffer(tmp_path: Path) -> None:
    approval = changed(golden_case(COUNTER_CARD), "application.monthlyDebtPayments", "100.00")
    approval["caseId"] = "C-APPROVED"
    batch = write_batch(tmp_path / "b.jsonl", [golden_case(DECLINE_DTI), approval])
    result = invoke("notice", str(batch))
    assert result.exit_code == 0, result.output
    (line,) = result.stdout.splitlines()
    assert loads(line)["caseId"] == DECLINE_DTI
    assert loads(line)["format"] == "credit.notice/1"


def test_notice_writes_notice_and_expectation_files_that_verify(tmp_path: Path) -> None:
    result = invoke("notice", str(GOLDEN_CASES), "--out", str(tmp_path), "--text")
    assert result.exit_code == 0, result.output
    assert "4 notice(s) written" in result.stdout
    for name in ("G-COUNTER-AUTO.notice.json", "G-COUNTER-AUTO.expect.json"):
        assert (tmp_path / name).read_bytes() == (GOLDEN / name).read_bytes()
    verified = invoke(
        "verify",
        str(tmp_path / "G-COUNTER-AUTO.notice.json"),
        "--expect",
        str(tmp_path / "G-COUNTER-AUTO.expect.json"),
    )
    assert verified.exit_code == 0, verified.output
    report = json.loads(verified.stdout)
    assert report["passed"] is True
    assert list(report["checks"]) == [f"V{i}" for i in range(1, 9)]
    assert report["checks"]["V7"]["name"] == "legal_frame_intact"


def test_notice_reports_a_bad_case_and_exits_2(tmp_path: Path) -> None:
    bad = changed(golden_case(DECLINE_DTI), "application.requestedLine", "lots")
    bad["caseId"] = "C-BAD"
    batch = write_batch(tmp_path / "b.jsonl", [bad, golden_case(COUNTER_AUTO)])
    result = invoke("notice", str(batch))
    assert result.exit_code == 2
    assert len(result.stdout.splitlines()) == 1
    assert "line 1, case C-BAD, field application.requestedLine" in result.stderr


def _files(tmp_path: Path, case_id: str, edit: Any = None) -> tuple[Path, Path]:
    notice, expectation = notice_and_expectation(case_id)
    wire = notice.to_wire()
    if edit:
        edit(wire)
    notice_path = tmp_path / "n.json"
    expect_path = tmp_path / "x.json"
    notice_path.write_text(json.dumps(wire), encoding="utf-8")
    expect_path.write_bytes(expectation.canonical_bytes())
    return notice_path, expect_path


def test_verify_exits_1_and_names_the_failed_check(tmp_path: Path) -> None:
    def approve(wire: dict[str, Any]) -> None:
        wire["decision"] = "approve"

    notice_path, expect_path = _files(tmp_path, DECLINE_DTI, approve)
    result = invoke("verify", str(notice_path), "--expect", str(expect_path))
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["passed"] is False
    assert report["checks"]["V5"] == {
        "name": "decision_consistent",
        "passed": False,
        "detail": "the decision field says approve, the decision recorded is decline",
    }


def test_verify_exits_2_on_a_notice_missing_a_field_and_names_it(tmp_path: Path) -> None:
    def drop(wire: dict[str, Any]) -> None:
        del wire["reasons"][0]["code"]

    notice_path, expect_path = _files(tmp_path, DECLINE_DTI, drop)
    result = invoke("verify", str(notice_path), "--expect", str(expect_path))
    assert result.exit_code == 2
    assert result.stdout == ""
    assert f"{notice_path}, case G-DECLINE-DTI, field reasons[0].code: missing field" in (
        result.stderr
    )


def test_verify_exits_2_on_an_expectation_that_is_not_json(tmp_path: Path) -> None:
    notice_path, expect_path = _files(tmp_path, DECLINE_DTI)
    expect_path.write_text("{not json", encoding="utf-8")
    result = invoke("verify", str(notice_path), "--expect", str(expect_path))
    assert result.exit_code == 2
    assert f"error: {expect_path}: not valid JSON" in result.stderr


def test_verify_exits_2_on_a_missing_file(tmp_path: Path) -> None:
    notice_path, _ = _files(tmp_path, DECLINE_DTI)
    result = invoke("verify", str(notice_path), "--expect", str(tmp_path / "absent.json"))
    assert result.exit_code == 2
    assert "cannot read" in result.stderr


def test_lock_is_current_for_the_packaged_data() -> None:
    result = invoke("lock")
    assert result.exit_code == 0, result.output
    assert "is current: nothing to review" in result.stdout


def test_an_edited_template_fails_verification_until_the_lock_is_accepted(
    tmp_path: Path,
) -> None:
    sources = data_copy(tmp_path)
    data = str(sources.frame.parent)
    frame = sources.frame.read_text(encoding="utf-8")
    sources.frame.write_text(frame.replace("validDays: 30", "validDays: 45"), encoding="utf-8")
    notice, expectation = notice_and_expectation(COUNTER_AUTO)
    assert "V7" in Verifier(pins_from(sources)).verify(notice, expectation).failed

    shown = invoke("lock", "--data", data)
    assert shown.exit_code == 1
    assert "--- reviewed/legal-frame.yaml" in shown.stdout
    assert "-  validDays: 30\n+  validDays: 45" in shown.stdout
    assert "1 pinned item(s) changed since review (legal-frame.yaml)" in shown.stderr
    lock_before = sources.lock.read_bytes()

    no_reviewer = invoke("lock", "--data", data, "--accept")
    assert no_reviewer.exit_code == 2
    assert sources.lock.read_bytes() == lock_before

    accepted = invoke("lock", "--data", data, "--accept", "--by", "A. Reviewer")
    assert accepted.exit_code == 0, accepted.output
    assert "+  validDays: 45" in accepted.stdout
    assert "accepted by A. Reviewer: legal-frame.yaml" in accepted.stdout
    assert loads(sources.lock.read_bytes())["acceptedBy"] == "A. Reviewer"
    assert invoke("lock", "--data", data).exit_code == 0
    pins = pins_from(sources)
    assert pins.drift == ()
    report = Verifier(pins).verify(notice, expectation)
    assert report.failed == ("V7",)  # reviewed now, but this notice says 30 days
    assert "rendered from frame" in report.checks["V7"].detail


def test_an_edited_catalogue_shows_the_code_mapping_diff(tmp_path: Path) -> None:
    sources = data_copy(tmp_path)
    text = sources.catalogue.read_text(encoding="utf-8")
    sources.catalogue.write_text(
        text.replace("category: Loan-to-value ratio", "category: Collateral value", 1),
        encoding="utf-8",
    )
    shown = invoke("lock", "--data", str(sources.frame.parent))
    assert shown.exit_code == 1
    assert "--- reviewed/code-mapping" in shown.stdout
    assert '+      "category": "Collateral value",' in shown.stdout
    assert "(reasons.yaml, code-mapping)" in shown.stderr


def test_run_renders_verifies_and_sends_and_counts_the_notices(tmp_path: Path) -> None:
    batch = write_batch(
        tmp_path / "b.jsonl",
        [golden_case(DECLINE_DTI), golden_case(COUNTER_AUTO), golden_case(COUNTER_CARD)],
    )
    outbox = tmp_path / "outbox"
    result = invoke("run", str(batch), "--outbox", str(outbox))
    assert result.exit_code == 0, result.output
    rows = {
        cells[0]: cells[1]
        for line in result.stdout.splitlines()
        if line.startswith("│")
        and len(cells := [c.strip() for c in line.strip("│ ").split("│")]) == 2
    }
    assert rows["notices verified (V1-V8 pass)"] == "3"
    assert rows["notices sent"] == "3"
    assert rows["notices blocked"] == "0"
    assert sorted(p.name for p in outbox.glob("*.notice.json")) == [
        "G-COUNTER-AUTO.notice.json",
        "G-COUNTER-CARD.notice.json",
        "G-DECLINE-DTI.notice.json",
    ]
