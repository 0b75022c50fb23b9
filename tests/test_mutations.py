"""The mutation suite's own rules: each mutator kills its intended checks; one that
cannot apply is not applicable (never a kill); one that leaves a notice unchanged, or a
genuine notice that fails, stops the run; survivors, unapplied mutators and a
meta-mutation the gate misses all fail the gate. (The full suite over the bundled
cases runs as ``credit mutate`` in ``make test``.)"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from credit.catalogue import default_catalogue
from credit.cli import app
from credit.errors import MutationHarnessError
from credit.guardrails import Verifier
from credit.legal_frame import default_frame
from credit.notice_format import Notice
from notice_helpers import (
    COUNTER_AUTO,
    COUNTER_CARD,
    DECLINE_DTI,
    DECLINE_SCORE,
    GOLDEN_CASES,
    GOLDEN_IDS,
    data_copy,
    golden_case,
    notice_and_expectation,
    pins_from,
    replace_once,
)

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from evals import mutations as M  # noqa: E402

CTX = M.Context(default_frame(), default_catalogue())


def _genuine(*case_ids: str) -> list[M.Genuine]:
    out = []
    for case_id in case_ids:
        notice, expectation = notice_and_expectation(case_id)
        out.append(M.Genuine(case_id, notice, expectation))
    return out


def test_the_suite_has_the_fourteen_mutators_of_the_spec_with_their_intended_checks() -> None:
    assert [(m.id, m.intended) for m in M.MUTATORS] == [
        ("M1", ("V1",)),
        ("M2", ("V1",)),
        ("M3", ("V1", "V2")),
        ("M4", ("V3",)),
        ("M5", ("V4",)),
        ("M6", ("V5",)),
        ("M7", ("V1",)),
        ("M8", ("V6",)),
        ("M9", ("V7",)),
        ("M10", ("V8",)),
        ("M11", ("V4",)),
        ("M12", ("V8",)),
        ("M13", ("V8",)),
        ("M14", ("V8", "V6")),
    ]


@pytest.mark.parametrize("mutator", M.MUTATORS, ids=lambda m: m.id)
def test_each_mutator_is_killed_by_its_intended_checks_on_a_golden_notice(
    mutator: M.Mutator,
) -> None:
    applied = 0
    for g in _genuine(*GOLDEN_IDS):
        mutant = mutator.apply(g.notice, CTX)
        if mutant is None:
            continue
        applied += 1
        assert mutant.sha256 != g.notice.sha256
        failed = Verifier().verify(mutant, g.expectation).failed
        assert set(mutator.intended) <= set(failed), (g.case_id, failed)
    assert applied


def test_a_fifth_reason_applies_only_to_a_notice_with_four() -> None:
    (four,) = _genuine(DECLINE_SCORE)
    (one,) = _genuine(DECLINE_DTI)
    assert len(four.notice.reasons) == 4 and len(one.notice.reasons) == 1
    mutant = M.m3_fifth_reason(four.notice, CTX)
    assert mutant is not None and len(mutant.reasons) == 5
    assert "\n5. " in mutant.text
    assert M.m3_fifth_reason(one.notice, CTX) is None
    assert M.m1_reorder(one.notice, CTX) is None  # nothing to reorder


def _without_numbers(notice: Notice) -> Notice:
    """A notice whose only reason states no number (a key factor given in words)."""
    top = notice.reasons[0]
    sentence = "Key factor in your credit score: too many accounts with balances (several)."
    text = notice.text.split("\n   ", 1)
    rest = text[1].split("\n", 1)[1]
    return notice.model_copy(
        update={
            "reasons": (
                top.model_copy(
                    update={
                        "code": "KF_05",
                        "category": "Credit score key factor",
                        "values": {"keyFactorValue": "several"},
                    }
                ),
            ),
            "text": (text[0] + "\n   " + sentence + "\n" + rest).replace(
                "1. Debt-to-income ratio", "1. Credit score key factor"
            ),
        }
    )


def test_a_number_mutator_does_not_apply_to_a_notice_whose_reasons_state_no_number() -> None:
    (g,) = _genuine(DECLINE_DTI)
    wordy = _without_numbers(g.notice)
    assert M.m8_number_changed(wordy, CTX) is None
    assert M.m14_unapproved_variant(wordy, CTX) is None
    assert M.m12_negated(wordy, CTX) is not None  # "Not a key factor ..."


def test_a_number_changed_is_changed_in_the_sentence_and_the_machine_values_alike() -> None:
    (g,) = _genuine(DECLINE_SCORE)
    mutant = M.m8_number_changed(g.notice, CTX)
    assert mutant is not None
    assert dict(mutant.reasons[0].values)["score"] == "576"
    assert "Your credit score of 576 is below" in mutant.text
    failed = Verifier().verify(mutant, g.expectation).failed
    assert "V6" in failed and "V8" not in failed


def test_a_mutator_that_leaves_the_notice_unchanged_stops_the_run() -> None:
    lazy = M.Mutator("MX", "does nothing", ("V1",), lambda notice, ctx: notice)
    with pytest.raises(MutationHarnessError) as info:
        M.run_suite(_genuine(DECLINE_DTI), mutators=[lazy])
    assert str(info.value) == ("case G-DECLINE-DTI, MX: the mutator returned the notice unchanged")


def test_a_genuine_notice_that_fails_stops_the_run(tmp_path: Path) -> None:
    sources = data_copy(tmp_path)
    rules = sources.rules.read_text(encoding="utf-8")
    sources.rules.write_text(rules.replace("value: 4", "value: 3"), encoding="utf-8")
    with pytest.raises(MutationHarnessError) as info:
        M.genuine_notices(GOLDEN_CASES, verifier=Verifier(pins_from(sources)))
    assert info.value.case_id == DECLINE_SCORE
    assert "the genuine notice fails before any mutation" in str(info.value)


def test_a_survivor_and_a_mutator_never_applied_fail_the_gate() -> None:
    def approved_variant(notice: Notice, ctx: M.Context) -> Notice | None:
        first = "Your debt-to-income ratio of 44.7% is above our maximum of 40.0% for credit cards."
        if first not in notice.text:
            return None
        second = (
            "Your monthly debt payments, including the new payment, are 44.7% of your monthly "
            "income; our maximum for credit cards is 40.0%."
        )
        return replace_once(notice, first, second)

    weak = M.Mutator("MX", "an approved variant", ("V8",), approved_variant)
    never = M.Mutator("MY", "never applies", ("V1",), lambda notice, ctx: None)
    results, meta = M.run_suite(_genuine(DECLINE_DTI, COUNTER_CARD), mutators=[weak, never])
    result = M.SuiteResult("test", 2, 2, results, meta)
    mx, my = results
    assert (mx.applied, mx.killed, mx.not_applicable) == (1, 0, 1)
    assert [s.case_id for s in mx.survivors] == [DECLINE_DTI]
    assert (my.applied, my.not_applicable) == (0, 2)
    assert not result.passed
    assert "MX (an approved variant): 1 survivor(s): G-DECLINE-DTI" in result.problems
    assert "MY (never applies) never applied" in result.problems
    assert "switching V2 (reason_count) off did not fail the gate" in result.problems


def test_the_meta_mutation_fails_the_gate_for_each_check() -> None:
    genuine = _genuine(*GOLDEN_IDS)
    results, meta = M.run_suite(genuine)
    assert [c.check for c in meta] == [f"V{i}" for i in range(1, 9)]
    for c in meta:
        assert c.mutants > 0 and c.survivors == c.mutants, c
        assert c.caught
    result = M.SuiteResult("golden", 4, 4, results, meta)
    assert result.passed, result.problems


def test_the_results_are_written_as_json_and_markdown_tables(tmp_path: Path) -> None:
    results, meta = M.run_suite(_genuine(*GOLDEN_IDS))
    json_path, md_path = M.write_results(
        M.SuiteResult("tests/golden/cases.jsonl", 4, 4, results, meta), tmp_path
    )
    doc = json.loads(json_path.read_text(encoding="utf-8"))
    assert doc["passed"] is True
    assert [m["id"] for m in doc["mutators"]] == [f"M{i}" for i in range(1, 15)]
    m3 = doc["mutators"][2]
    assert (m3["applied"], m3["killed"], m3["notApplicable"], m3["survivors"]) == (1, 1, 3, [])
    assert doc["meta"][0] == {
        "check": "V1",
        "name": "reasons_match_derivation",
        "switchedOff": True,
        "mutators": ["M1", "M2", "M3", "M7"],
        "mutantsRun": 10,
        "survivors": 10,
        "gateFailed": True,
    }
    md = md_path.read_text(encoding="utf-8")
    assert "| M3 | append a fifth, otherwise-approved reason | V1, V2 | 1 | 1 | 3 | none |" in md
    assert "| V2 | reason_count | M3 | 1 | 1 | fails (caught) |" in md


def test_credit_mutate_fails_when_a_mutator_never_applies(tmp_path: Path) -> None:
    batch = tmp_path / "cases.jsonl"
    batch.write_text(
        "".join(json.dumps(golden_case(c)) + "\n" for c in (DECLINE_DTI, COUNTER_AUTO)),
        encoding="utf-8",
    )
    result = CliRunner().invoke(
        app, ["mutate", "--cases", str(batch), "--results", str(tmp_path / "results")]
    )
    assert result.exit_code == 1, result.output
    assert "FAIL: M1 (reorder two reasons) never applied" in result.stderr
    assert "FAIL: M3 (append a fifth, otherwise-approved reason) never applied" in result.stderr
    assert json.loads((tmp_path / "results" / "mutations.json").read_text())["passed"] is False


def test_credit_mutate_passes_on_the_golden_cases(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["mutate", "--cases", str(GOLDEN_CASES), "--results", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "mutations.md").exists()
