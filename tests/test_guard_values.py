"""The guard reads values: a prohibited basis carried in a field's text (not its name)
never reaches the underwriter; it is redacted, journaled and the case held for the
fair-lending reviewer. And the bureau fields a notice prints are checked at intake
against the formats the bureau uses, so free text never stands where a figure goes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import auto_case, key_factor, with_changes
from credit.cases import read_case_bytes
from credit.cli import app
from credit.errors import InputError
from credit.governance.governor import Governor
from credit.governance.guard import REDACTED_VALUE, FairLendingGuard
from credit.governance.onramp import intake
from credit.journal import InMemoryStore
from credit.notices.outbox import InMemoryOutbox
from credit.pipeline import BatchLine, Pipeline
from credit.tools import CaseTools

KF0 = "creditReport.keyFactors[0]"
MARRIED = [{"kind": "late30; the applicant is married", "monthsAgo": 14}]


@pytest.mark.parametrize(
    ("text", "basis"),
    [
        ("late30; the applicant is married", "maritalStatus"),
        ("collection (applicant receives welfare)", "publicAssistanceIncome"),
        ("account opened at age 19", "age"),
        ("ｍａｒｒｉｅｄ", "maritalStatus"),  # full-width: NFKC folds it
    ],
)
def test_a_value_citing_a_basis_is_redacted_and_recorded_as_a_value_match(
    text: str, basis: str
) -> None:
    cleaned, found = FairLendingGuard().redact({"derogatories": [{"kind": text}]})
    assert cleaned == {"derogatories": [{"kind": REDACTED_VALUE}]}
    assert [(r.path, r.key, r.basis, r.match) for r in found] == [
        ("derogatories[0].kind", "kind", basis, "value")
    ]


@pytest.mark.parametrize(
    "text",
    ["late30", "Number of accounts with delinquency", "Average age of accounts", "34%"],
)
def test_ordinary_credit_file_text_is_left_as_it_is(text: str) -> None:
    value = {"caseId": text, "keyFactors": [{"text": text}]}
    cleaned, found = FairLendingGuard().redact(value)
    assert (cleaned, found) == (value, [])


@pytest.mark.parametrize("field", ["caseId", "tradelineId", "code", "sha256"])
def test_an_identifier_that_happens_to_spell_a_basis_is_left_but_the_same_text_is_not(
    field: str,
) -> None:
    cleaned, found = FairLendingGuard().redact({field: "C-AGE-1"})
    assert (cleaned, found) == ({field: "C-AGE-1"}, [])
    cleaned, found = FairLendingGuard().redact({"text": "C-AGE-1"})
    assert cleaned == {"text": REDACTED_VALUE} and [r.basis for r in found] == ["age"]


def test_the_underwriter_never_reads_the_text_and_the_case_is_held_for_a_person() -> None:
    store = InMemoryStore()
    case = with_changes(auto_case(case_id="V-1"), "creditReport.derogatories", MARRIED)
    intake(case, store)
    tools = CaseTools(store, "V-1", Governor(store, "V-1", underwriter="rules"))
    report = tools.get_credit_report()
    assert report["creditReport"]["derogatories"][0]["kind"] == REDACTED_VALUE
    assert "married" not in json.dumps(report)
    (redacted,) = store.entries("V-1", kinds=["guard.redacted"])
    assert (redacted.payload["match"], redacted.payload["basis"]) == ("value", "maritalStatus")
    assert "married" not in json.dumps(redacted.payload)  # never the value itself


def test_a_value_carrying_a_basis_holds_the_case_for_the_fair_lending_reviewer() -> None:
    store = InMemoryStore()
    case = with_changes(auto_case(case_id="V-2"), "creditReport.derogatories", MARRIED)
    Pipeline(store, InMemoryOutbox()).run([BatchLine(1, case)])
    from credit.casework import CaseWork

    life = CaseWork(store, InMemoryOutbox()).life("V-2")
    assert life.state == "held" and life.item is not None and life.item.role == "reviewer"
    codes = [f.code for f in life.gate.holding_findings]
    assert codes == ["equipoise.prohibited_basis_in_data"]
    # each redaction named by its place among the case's guard.redacted entries, not
    # by seq (the turn writes them in the review's own group: ADR-0002)
    redactions = store.entries("V-2", kinds=["guard.redacted"])
    (finding,) = life.gate.holding_findings
    assert finding.detail["redactions"] == [
        {"redaction": place, **{k: r.payload[k] for k in ("tool", "path", "basis")}}
        for place, r in enumerate(redactions, 1)
        if r.payload["match"] == "value"
    ]
    assert finding.detail["redactions"][0]["basis"] == "maritalStatus"


def _case_bytes(case: dict[str, Any]) -> bytes:
    return json.dumps(case).encode()


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        (
            "creditReport.keyFactors",
            [key_factor("10", "34%; call 1-900-555-0199")],
            "creditReport.keyFactors[0].value",
        ),
        (
            "creditReport.keyFactors",
            [key_factor("18", "two accounts")],
            "creditReport.keyFactors[0].value",
        ),
        (
            "creditReport.keyFactors",
            [key_factor("99", "3 accounts")],
            "creditReport.keyFactors[0].code",
        ),
        ("creditReport.bureau.phone", "call us", "creditReport.bureau.phone"),
        ("creditReport.scoreModel", "Score <b>8</b>", "creditReport.scoreModel"),
    ],
)
def test_a_bureau_field_a_notice_prints_in_another_form_is_an_intake_error(
    path: str, value: Any, field: str
) -> None:
    case = with_changes(auto_case(case_id="B-1"), path, value)
    with pytest.raises(InputError) as caught:
        read_case_bytes(_case_bytes(case))
    assert caught.value.field == field
    assert caught.value.case_id == "B-1"
    store = InMemoryStore()
    with pytest.raises(InputError):
        intake(case, store)
    assert store.entries() == []


def test_credit_decide_names_the_bureau_field_and_decides_the_other_cases(tmp_path: Path) -> None:
    bad = with_changes(
        auto_case(case_id="B-2"), "creditReport.keyFactors", [key_factor("10", "34%; call 1-900")]
    )
    lines = [auto_case(case_id="G-1"), bad, auto_case(case_id="G-2")]
    path = tmp_path / "mixed.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in lines), encoding="utf-8")
    result = CliRunner().invoke(app, ["decide", str(path)])
    assert result.exit_code == 2
    decided = [json.loads(line)["caseId"] for line in result.stdout.splitlines()]
    assert decided == ["G-1", "G-2"]
    assert "line 2, case B-2, field creditReport.keyFactors[0].value" in result.stderr
