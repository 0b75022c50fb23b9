"""Planted defects in the rules underwriter, and the two checks that must catch them.

For each defect of :mod:`planted_defects` (the brief's five: the broken monthly rate,
the DTI cap failing at equality, the missing LTV check, a dropped reason, reordered
reasons; and six more a real bug could cause), over the bundled cases and 5,000
generated ones:

- the second line: ``compare`` (against ``derive``, which the patch cannot reach)
  reports a difference on exactly the cases whose recorded outcome the defect changed
  (decision, terms, band, DTI, LTV, reason codes and values, factors, confidence),
  there is at least one such case, and it reports none on any other case;
- the evals: the real ``credit eval`` command, run in process with the defect in
  place, exits 1.
"""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

from credit.cli import app
from credit.evals import run_all
from credit.models import Case
from credit.policy import default_policy
from planted_defects import DEFECTS
from secondline_support import (
    DerivedOutcome,
    UnderwriterOutcome,
    bundled_cases,
    derived,
    differences,
    generated_cases,
    underwritten,
)

POLICY = default_policy()
SEED = 20_260_901
GENERATED = 5_000


def recorded(outcome: UnderwriterOutcome) -> Any:
    """What an underwriter records of a case, as the journal keeps it: the Decision
    (its policy basis aside: prose that cites the same figures) with its reason codes
    and values, or the refusal."""
    if isinstance(outcome, tuple):
        return outcome
    wire = outcome.decision.to_wire()
    wire.pop("policyBasis")
    return wire, tuple((r.code, tuple(r.values.items())) for r in outcome.reasons)


@pytest.fixture(scope="module")
def population() -> list[Case]:
    return bundled_cases() + generated_cases(SEED, GENERATED, POLICY)


Baseline = list[tuple[Any, DerivedOutcome]]


@pytest.fixture(scope="module")
def baseline(population: list[Case]) -> Baseline:
    """Each case's record by the sound underwriter, and its derivation (which agree),
    by position (the bundled and the generated cases reuse case ids)."""
    out: Baseline = []
    for case in population:
        got, want = underwritten(case, POLICY), derived(case, POLICY)
        assert not differences(got, want), case.case_id
        out.append((recorded(got), want))
    return out


@pytest.mark.parametrize("name", list(DEFECTS))
def test_the_second_line_reports_every_case_a_planted_defect_changes_and_no_other(
    name: str,
    population: list[Case],
    baseline: Baseline,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    DEFECTS[name](monkeypatch)
    changed: set[int] = set()
    reported: set[int] = set()
    for i, (case, (before, want)) in enumerate(zip(population, baseline, strict=True)):
        got = underwritten(case, POLICY)
        if recorded(got) != before:
            changed.add(i)
        if differences(got, want):
            reported.add(i)
    assert changed, f"{name}: no case reaches the defect"
    assert reported == changed, (
        f"{name}: {len(changed)} changed, {len(reported)} reported; missed "
        f"{sorted(changed - reported)[:5]}, spurious {sorted(reported - changed)[:5]}"
    )


@pytest.mark.parametrize("name", list(DEFECTS))
def test_credit_eval_exits_1_under_each_planted_defect(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    DEFECTS[name](monkeypatch)
    result = CliRunner().invoke(app, ["eval"])
    assert result.exit_code == 1, result.output
    report = run_all(POLICY)
    assert report.failed, name
    summary = f"{len(report.results) - len(report.failed)} passed, {len(report.failed)} failed"
    assert summary in result.output


def test_with_no_defect_planted_credit_eval_passes_every_row() -> None:
    result = CliRunner().invoke(app, ["eval"])
    assert result.exit_code == 0, result.output
    assert f"{len(run_all(POLICY).results)} passed, 0 failed" in result.output


# ---------------------------------------------------------------------- Backstop itself


def _payload(outcome: Any) -> dict[str, Any]:
    """The decision entry's payload the governed turn records for an underwriting."""
    payload: dict[str, Any] = {
        "decision": outcome.decision.to_wire(),
        "reasons": [{"code": r.code, "values": dict(r.values)} for r in outcome.reasons],
        "status": "held",
        "underwriter": "rules",
    }
    if outcome.counteroffer is not None:
        payload["offer"] = {"payment": outcome.counteroffer.payment}
    return payload


BACKSTOP_GENERATED = 1_500


@pytest.fixture(scope="module")
def renamed(population: list[Case]) -> list[tuple[Case, dict[str, Any] | None]]:
    """The bundled cases and some generated ones, each under an id of its own, with the
    sound underwriter's record (None where it refuses the case)."""
    cases = population[: len(bundled_cases()) + BACKSTOP_GENERATED]
    out: list[tuple[Case, dict[str, Any] | None]] = []
    for i, case in enumerate(cases):
        case = case.model_copy(update={"case_id": f"P{i:05d}"})
        outcome = underwritten(case, POLICY)
        out.append((case, None if isinstance(outcome, tuple) else _payload(outcome)))
    return out


@pytest.mark.parametrize("name", list(DEFECTS))
def test_backstop_holds_every_case_a_planted_defect_changes_and_no_other(
    name: str,
    renamed: list[tuple[Case, dict[str, Any] | None]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The defect in the underwriter: each case whose recorded decision (with its
    reasons and a counteroffer's payment) the defect changed is held by Backstop with a
    disagreement naming the field; a case it did not change gets none. (A case the
    defect leaves undecidable records no decision: the governed turn fails, a person's
    item; there is nothing for Backstop to review.)"""
    from credit.governance.backstop import Backstop
    from credit.governance.onramp import case_document
    from credit.journal import InMemoryStore

    cases = [case for case, _ in renamed]
    sound = {case.case_id: payload for case, payload in renamed}
    DEFECTS[name](monkeypatch)
    store = InMemoryStore()
    changed: set[str] = set()
    undecidable: set[str] = set()
    for case in cases:
        outcome = underwritten(case, POLICY)
        if isinstance(outcome, tuple):
            if sound[case.case_id] is not None:
                undecidable.add(case.case_id)
            continue
        payload = _payload(outcome)
        store.put_case(case.case_id, case_document(case)[0])
        store.record_decision(case.case_id, payload)
        want = sound[case.case_id]
        if want is None or {**payload, "decision": {**payload["decision"], "policyBasis": []}} != {
            **want,
            "decision": {**want["decision"], "policyBasis": []},
        }:
            changed.add(case.case_id)
    monkeypatch.undo()
    backstop = Backstop(store)
    disagreeing = {
        case_id
        for case_id in store.case_ids()
        if any(f.code == "backstop.disagreement" for f in backstop.review(case_id).findings)
    }
    assert changed or undecidable, f"{name} changed no case"
    assert disagreeing == changed
