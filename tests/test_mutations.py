"""The mutation suite's own rules: each mutator kills its intended checks; one that
cannot apply is not applicable (never a kill); one that leaves a notice unchanged, or a
genuine notice that fails, stops the run; survivors, unapplied mutators and a check
with no proof that it is needed all fail the gate, and a check silently disabled makes
it fail. (The full suite over the bundled cases runs as ``credit mutate`` in ``make
test``.)"""

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
from credit.guardrails.verifier import Check
from credit.legal_frame import default_frame
from credit.notice_format import Notice
from credit.notices.outbox import check_sendable
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


def test_the_suite_has_the_spec_mutators_and_the_upstream_ones_with_their_intended_checks() -> None:
    assert [(m.id, m.intended, m.changes) for m in M.MUTATORS] == [
        ("M1", ("V1",), "notice"),
        ("M2", ("V1",), "notice"),
        ("M3", ("V1", "V2"), "notice"),
        ("M4", ("V3",), "notice"),
        ("M5", ("V4",), "notice"),
        ("M6", ("V5",), "notice"),
        ("M7", ("V1",), "notice"),
        ("M8", ("V6",), "notice"),
        ("M9", ("V7",), "notice"),
        ("M10", ("V8",), "notice"),
        ("M11", ("V4",), "notice"),
        ("M12", ("V8",), "notice"),
        ("M13", ("V8",), "notice"),
        ("M14", ("V8", "V6"), "notice"),
        ("M15", ("V2",), "notice and expectation"),
        ("M16", ("V3",), "notice and expectation"),
        ("M17", ("V8",), "notice and expectation"),
        ("M18", ("V4",), "notice"),
    ]


def test_a_mutator_has_exactly_one_way_to_apply() -> None:
    with pytest.raises(ValueError, match="needs exactly one of apply and upstream"):
        M.Mutator("MX", "nothing", ("V1",))
    with pytest.raises(ValueError, match="needs exactly one of apply and upstream"):
        M.Mutator("MX", "both", ("V1",), lambda n, c: n, upstream=lambda n, x, c: (n, x))


@pytest.mark.parametrize("mutator", M.MUTATORS, ids=lambda m: m.id)
def test_each_mutator_is_killed_by_its_intended_checks_on_a_golden_notice(
    mutator: M.Mutator,
) -> None:
    applied = 0
    for g in _genuine(*GOLDEN_IDS):
        mutated = mutator.mutate(g.notice, g.expectation, CTX)
        if mutated is None:
            continue
        applied += 1
        mutant, expectation = mutated
        assert mutant.sha256 != g.notice.sha256
        assert (expectation == g.expectation) == (mutator.upstream is None)
        failed = Verifier().verify(mutant, expectation).failed
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
    assert M.m18_other_product(wordy, CTX) is None  # no reason names the product
    assert M.m12_negated(wordy, CTX) is not None  # "Not a key factor ..."


def test_a_number_changed_is_changed_in_the_sentence_and_the_machine_values_alike() -> None:
    (g,) = _genuine(DECLINE_SCORE)
    mutant = M.m8_number_changed(g.notice, CTX)
    assert mutant is not None
    assert dict(mutant.reasons[0].values)["score"] == "576"
    assert "Your credit score of 576 is below" in mutant.text
    assert Verifier().verify(mutant, g.expectation).failed == ("V6",)


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
    assert any(p.startswith("V2 (reason_count): no mutant fails it alone") for p in result.problems)


def test_every_check_has_a_proof_that_would_have_been_sent_with_the_check_off() -> None:
    genuine = {g.case_id: g for g in _genuine(*GOLDEN_IDS)}
    results, meta = M.run_suite(list(genuine.values()))
    assert [c.check for c in meta] == [f"V{i}" for i in range(1, 9)]
    by_id = {m.id: m for m in M.MUTATORS}
    for c in meta:
        assert c.needed and c.proofs >= 1 and c.first is not None, c
        g = genuine[c.first.case_id]
        mutated = by_id[c.first.mutator].mutate(g.notice, g.expectation, CTX)
        assert mutated is not None
        mutant, expectation = mutated
        assert Verifier().verify(mutant, expectation).failed == (c.check,)
        without = Verifier(checks={c.check: M._switched_off}).verify(mutant, expectation)
        assert without.passed
        assert check_sendable(mutant, without) == mutant.sha256
    assert M.SuiteResult("golden", 4, 4, results, meta).passed


def test_a_check_that_is_never_the_only_failure_has_no_proof_and_fails_the_gate() -> None:
    """The old meta-mutation passed whenever a mutant listing the check "survived" with
    it off, which every mutant does by definition: here every mutant is killed, yet no
    check is shown to be needed, and the gate says so for each."""
    m5 = next(m for m in M.MUTATORS if m.id == "M5")  # fails V4, V6 and V8 together
    results, meta = M.run_suite(_genuine(*GOLDEN_IDS), mutators=[m5])
    result = M.SuiteResult("golden", 4, 4, results, meta)
    assert results[0].killed == results[0].applied == 4
    assert [c.proofs for c in meta] == [0] * 8
    assert not result.passed
    assert (
        "V4 (specific_reasons): no mutant fails it alone and gets through with it switched "
        "off: nothing shows it is needed" in result.problems
    )
    assert len(result.problems) == 8


def _always_passes(_: object) -> tuple[bool, str]:
    return True, "looks fine"


@pytest.mark.parametrize("check", [f"V{i}" for i in range(1, 9)])
def test_a_verifier_with_any_one_check_silently_disabled_fails_the_suite(check: str) -> None:
    disabled: dict[str, Check] = {check: _always_passes}
    genuine = _genuine(*GOLDEN_IDS)
    results, meta = M.run_suite(genuine, checks=disabled)
    result = M.SuiteResult("golden", 4, 4, results, meta)
    assert not result.passed
    (entry,) = [c for c in meta if c.check == check]
    assert not entry.needed and entry.first is None
    assert any(p.startswith(f"{check} (") and "nothing shows" in p for p in result.problems)
    assert any("survivor(s)" in p for p in result.problems)  # its mutants get through


def test_credit_mutate_fails_with_no_prohibited_basis_check_silently_disabled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_run = M.run

    def run_with_v3_disabled(cases: Path | str, **kwargs: object) -> M.SuiteResult:
        return real_run(cases, checks={"V3": _always_passes})

    monkeypatch.setattr(M, "run", run_with_v3_disabled)
    result = CliRunner().invoke(
        app, ["mutate", "--cases", str(GOLDEN_CASES), "--results", str(tmp_path)]
    )
    assert result.exit_code == 1, result.output
    assert "FAIL: V3 (no_prohibited_basis): no mutant fails it alone" in result.stderr
    assert "FAIL: M16 (" in result.stderr and "FAIL: M4 (" in result.stderr
    doc = json.loads((tmp_path / "mutations.json").read_text(encoding="utf-8"))
    v3 = next(c for c in doc["meta"] if c["check"] == "V3")
    assert v3 == {
        "check": "V3",
        "name": "no_prohibited_basis",
        "needed": False,
        "proofs": 0,
        "proof": None,
        "mutators": [],
    }


def test_the_results_are_written_as_json_and_markdown_tables(tmp_path: Path) -> None:
    results, meta = M.run_suite(_genuine(*GOLDEN_IDS))
    changes = {m.id: m.changes for m in M.MUTATORS}
    json_path, md_path = M.write_results(
        M.SuiteResult("tests/golden/cases.jsonl", 4, 4, results, meta, changes), tmp_path
    )
    doc = json.loads(json_path.read_text(encoding="utf-8"))
    assert doc["passed"] is True
    assert [m["id"] for m in doc["mutators"]] == [f"M{i}" for i in range(1, 19)]
    m3 = doc["mutators"][2]
    assert (m3["applied"], m3["killed"], m3["notApplicable"], m3["survivors"]) == (1, 1, 3, [])
    assert doc["mutators"][14]["changes"] == "notice and expectation"
    assert doc["meta"][1] == {
        "check": "V2",
        "name": "reason_count",
        "needed": True,
        "proofs": 4,
        "proof": {"mutator": "M15", "caseId": "G-DECLINE-SCORE"},
        "mutators": ["M15"],
    }
    md = md_path.read_text(encoding="utf-8")
    assert (
        "| M3 | append a fifth, otherwise-approved reason | V1, V2 | notice | 1 | 1 | 3 | none |"
        in md
    )
    assert "| V2 | reason_count | 4 | M15, G-DECLINE-SCORE | M15 | needed |" in md


def test_the_committed_results_name_a_real_proof_for_every_check() -> None:
    doc = json.loads((ROOT / "results" / "mutations.json").read_text(encoding="utf-8"))
    assert doc["passed"] is True and doc["problems"] == []
    assert [c["check"] for c in doc["meta"]] == [f"V{i}" for i in range(1, 9)]
    lines = {
        json.loads(line)["caseId"]: json.loads(line)
        for line in (ROOT / "examples" / "cases.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    }
    by_id = {m.id: m for m in M.MUTATORS}
    for c in doc["meta"]:
        assert c["needed"] and c["proofs"] >= 1, c
        proof = c["proof"]
        notice, expectation = notice_and_expectation(lines[proof["caseId"]])
        mutated = by_id[proof["mutator"]].mutate(notice, expectation, CTX)
        assert mutated is not None
        mutant, mutant_expectation = mutated
        assert Verifier().verify(mutant, mutant_expectation).failed == (c["check"],)
        without = Verifier(checks={c["check"]: _always_passes})
        assert without.verify(mutant, mutant_expectation).passed


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
