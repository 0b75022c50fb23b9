"""The safety boundary helpers and the ethics pack: safety refuses, ethics never does."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

import pytest

from conftest import auto_case, card_case, decide
from credit.errors import PolicyError
from credit.governance.refusal import (
    BOUNDARY_DECISION_CITES_PROHIBITED_BASIS,
    BOUNDARY_PROHIBITED_BASIS_REACHED_UNDERWRITER,
    BOUNDARY_SECOND_RECORD_DECISION,
    BOUNDARY_UNVERIFIED_NOTICE_SEND,
    TYPED_REFUSAL_PREFIX,
    BoundaryResult,
    SafetyVerdict,
    build_refusal_surface,
    is_typed_refusal,
)
from credit.governance.safety import (
    ETHICS_FINDING_KIND,
    EthicsContext,
    decision_cites_prohibited_basis,
    default_ethics_pack,
    default_ethics_pack_path,
    ethics_context_from_journal,
    evaluate_ethics,
    govern_surface,
    journal_ethics,
    load_ethics_pack,
    prohibited_basis_reached_underwriter,
    safety_verdict,
    second_record_decision,
    unverified_notice_send,
)
from credit.guardrails.report import CHECK_NAMES, CheckResult, VerificationReport
from credit.journal import InMemoryStore
from credit.models import Decision
from governance_support import record

SURFACE = "Decision recorded: counteroffer at a 3,400.00 line."
NOTICE_SHA = "a" * 64


# ---------------------------------------------------------------- safety boundaries


def test_tool_data_without_a_prohibited_field_upholds_the_underwriter_blindness() -> None:
    case = auto_case()
    result = prohibited_basis_reached_underwriter(
        {"application": case["application"], "creditReport": case["creditReport"]}
    )
    assert result == BoundaryResult(
        boundary_id=BOUNDARY_PROHIBITED_BASIS_REACHED_UNDERWRITER,
        runtime_checkable=True,
        upheld=True,
    )


def test_a_prohibited_field_anywhere_in_what_the_underwriter_saw_violates_the_boundary() -> None:
    seen = {"application": {"product": "card", "applicant": {"Date_Of-Birth": "1960-01-01"}}}
    result = prohibited_basis_reached_underwriter(seen)
    assert (result.runtime_checkable, result.upheld) == (True, False)
    assert result.detail == "application.applicant.Date_Of-Birth carries basis age"


def test_no_evidence_of_what_the_underwriter_saw_is_not_runtime_checkable() -> None:
    result = prohibited_basis_reached_underwriter(None)
    assert (result.runtime_checkable, result.upheld) == (False, True)


def test_a_rules_decision_does_not_cite_a_prohibited_basis() -> None:
    result = decision_cites_prohibited_basis(decide(auto_case(score=560)).decision)
    assert (result.boundary_id, result.runtime_checkable, result.upheld) == (
        BOUNDARY_DECISION_CITES_PROHIBITED_BASIS,
        True,
        True,
    )


def test_a_decision_citing_a_prohibited_basis_violates_the_boundary_even_unvalidated() -> None:
    wire = decide(auto_case(score=560)).decision.to_wire()
    wire["factors"] = [*wire["factors"], "Applicant is retired."]
    wire["confidence"] = "not a number"  # invalid, still checked field by field
    result = decision_cites_prohibited_basis(wire)
    assert not result.upheld and result.runtime_checkable
    assert result.detail == "factors[1]: prohibited basis age ('retired')"
    assert not decision_cites_prohibited_basis(None).runtime_checkable


def test_a_second_record_decision_for_a_case_violates_the_boundary() -> None:
    store = InMemoryStore()
    assert second_record_decision(store, "S1").upheld
    record(store, auto_case(case_id="S1"))
    result = second_record_decision(store, "S1")
    assert (result.boundary_id, result.runtime_checkable, result.upheld) == (
        BOUNDARY_SECOND_RECORD_DECISION,
        True,
        False,
    )
    assert result.detail == "case S1 already has its decision (entry 1)"


def report(
    *, sha: str = NOTICE_SHA, passed: bool = True, case_id: str = "N1"
) -> VerificationReport:
    checks = [
        CheckResult(id=i, name=n, passed=passed or i != "V3", detail="")
        for i, n in CHECK_NAMES.items()
    ]
    return VerificationReport.of(
        case_id=case_id, notice_sha256=sha, expectation_sha256="e" * 64, checks=checks
    )


def test_a_notice_whose_exact_bytes_passed_verification_may_be_sent() -> None:
    result = unverified_notice_send(NOTICE_SHA, report(), case_id="N1")
    assert (result.boundary_id, result.runtime_checkable, result.upheld) == (
        BOUNDARY_UNVERIFIED_NOTICE_SEND,
        True,
        True,
    )


@pytest.mark.parametrize(
    ("verification", "detail"),
    [
        (None, "no verification report"),
        (report(passed=False), "the verification report did not pass"),
        (report(sha="b" * 64), "is not the verified bbbbbbbbbbbb... (stale or tampered)"),
        (report(case_id="N2"), "the report is for case N2, not N1"),
    ],
)
def test_an_unverified_stale_or_failed_notice_send_violates_the_boundary(
    verification: VerificationReport | None, detail: str
) -> None:
    result = unverified_notice_send(NOTICE_SHA, verification, case_id="N1")
    assert (result.runtime_checkable, result.upheld) == (True, False)
    assert detail in result.detail


def test_no_notice_about_to_be_sent_is_not_runtime_checkable() -> None:
    assert not unverified_notice_send(None, None).runtime_checkable


def test_a_violated_boundary_replaces_the_surface_and_keeps_the_audited_one() -> None:
    verdict = safety_verdict(
        second_record_decision(InMemoryStore(), "X"),
        prohibited_basis_reached_underwriter({"race": "Asian"}),
        unverified_notice_send(None, None),
    )
    governed = govern_surface(SURFACE, verdict)
    assert governed.refused
    assert governed.surface == TYPED_REFUSAL_PREFIX + BOUNDARY_PROHIBITED_BASIS_REACHED_UNDERWRITER
    assert governed.audited_surface == SURFACE
    assert governed.violated == (BOUNDARY_PROHIBITED_BASIS_REACHED_UNDERWRITER,)


def test_a_verdict_with_every_boundary_upheld_leaves_the_surface_unchanged() -> None:
    verdict = safety_verdict(
        second_record_decision(InMemoryStore(), "X"),
        decision_cites_prohibited_basis(decide(card_case()).decision),
    )
    governed = govern_surface(SURFACE, verdict)
    assert (governed.surface, governed.refused, governed.violated) == (SURFACE, False, ())


# ---------------------------------------------------------------- the ethics pack


def counteroffer_with_jargon() -> Decision:
    decision = decide(card_case(debt="3900.00")).decision
    assert decision.decision == "counteroffer"
    return decision.model_copy(
        update={
            "factors": (
                "Your DTI of 40.5% exceeds the cap per tradeline analysis.",
                " ".join(["word"] * 31),
            )
        }
    )


def all_violated() -> EthicsContext:
    return EthicsContext(
        case_id="E1",
        decision=counteroffer_with_jargon(),
        notice_text="We can offer a 3,400.00 line. Act now: this is a limited time, final offer!",
        decided_on=dt.date(2026, 11, 1),
        notified_on=dt.date(2026, 12, 11),
    )


def test_the_ethics_pack_is_versioned_data_with_a_reference_for_every_commitment() -> None:
    pack = default_ethics_pack()
    assert pack.label == "reference-ethics-pack v2026.1"
    assert [c.id for c in pack.commitments] == [
        "plainLanguageReasons",
        "noPressureSelling",
        "timelyNotices",
    ]
    for commitment in pack.commitments:
        assert commitment.reference and commitment.statement
        assert all(p.reference and p.unit for p in commitment.parameters.values())


def test_a_pack_whose_every_commitment_is_violated_never_refuses() -> None:
    findings = evaluate_ethics(all_violated())
    assert [(f.commitment, f.evaluable, f.upheld) for f in findings] == [
        ("plainLanguageReasons", True, False),
        ("noPressureSelling", True, False),
        ("timelyNotices", True, False),
    ]
    governed = govern_surface(SURFACE, None, findings)
    assert (governed.surface, governed.audited_surface, governed.refused) == (
        SURFACE,
        SURFACE,
        False,
    )
    assert build_refusal_surface(None) is None
    upheld = SafetyVerdict(
        results=(
            BoundaryResult(
                boundary_id=BOUNDARY_SECOND_RECORD_DECISION, runtime_checkable=True, upheld=True
            ),
        )
    )
    assert govern_surface(SURFACE, upheld, findings).surface == SURFACE
    assert build_refusal_surface(upheld) is None


def test_ethics_findings_are_journaled_and_nothing_else_happens() -> None:
    store = InMemoryStore()
    entries = journal_ethics(store, evaluate_ethics(all_violated()))
    assert [e.kind for e in store.entries()] == [ETHICS_FINDING_KIND] * 3
    assert entries[1].payload == {
        "pack": "reference-ethics-pack v2026.1",
        "commitment": "noPressureSelling",
        "check": "no-pressure",
        "evaluable": True,
        "upheld": False,
        "detail": "pressure language: 'act now', 'final offer', 'limited time'",
        "reference": default_ethics_pack().commitments[1].reference,
    }


def test_the_plain_language_commitment_names_jargon_and_long_reasons() -> None:
    finding = evaluate_ethics(all_violated())[0]
    assert finding.detail == (
        "factors[0] uses jargon: dti, tradeline; factors[1] has 31 words (at most 30)"
    )


def test_the_rules_underwriters_adverse_reasons_keep_the_plain_language_commitment() -> None:
    for case in (auto_case(score=560, key_factors=None), card_case(debt="3900.00")):
        decision = decide(case).decision
        finding = evaluate_ethics(EthicsContext(case_id="E", decision=decision))[0]
        assert (finding.evaluable, finding.upheld) == (True, True), finding.detail


def test_commitments_that_do_not_apply_are_recorded_as_not_evaluable() -> None:
    approve = decide(auto_case()).decision
    findings = evaluate_ethics(EthicsContext(case_id="E", decision=approve))
    assert [(f.evaluable, f.upheld) for f in findings] == [(False, True)] * 3
    assert journal_ethics(InMemoryStore(), findings) == []


@pytest.mark.parametrize(("days", "upheld"), [(0, True), (5, True), (6, False), (30, False)])
def test_a_notice_is_timely_within_the_packs_five_days(days: int, upheld: bool) -> None:
    decided = dt.date(2026, 11, 2)
    context = EthicsContext(
        case_id="E",
        decision=decide(auto_case(score=560)).decision,
        decided_on=decided,
        notified_on=decided + dt.timedelta(days=days),
    )
    assert evaluate_ethics(context)[2].upheld is upheld


def test_a_deployment_swapping_the_pack_changes_what_is_recorded_never_the_surface() -> None:
    text = default_ethics_pack_path().read_text(encoding="utf-8")
    strict = load_ethics_pack(
        "strict.yaml", text.replace("        value: 5\n", "        value: 0\n")
    )
    context = dataclasses.replace(
        all_violated(), notified_on=dt.date(2026, 11, 2), notice_text="A plain offer."
    )
    default_findings = evaluate_ethics(context)
    strict_findings = evaluate_ethics(context, strict)
    assert default_findings[2].upheld and not strict_findings[2].upheld
    for findings in (default_findings, strict_findings):
        assert govern_surface(SURFACE, None, findings).surface == SURFACE


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ("check: timely-notice", "check: be-nice", "commitments.timelyNotices.check"),
        ("      maxDays:\n", "      maxDayz:\n", "commitments.timelyNotices.parameters.maxDayz"),
        ("deployment: reference", "deploymentName: reference", "deploymentName"),
    ],
)
def test_the_ethics_pack_is_loaded_strictly(old: str, new: str, key: str) -> None:
    text = default_ethics_pack_path().read_text(encoding="utf-8")
    assert old in text
    with pytest.raises(PolicyError) as caught:
        load_ethics_pack("pack.yaml", text.replace(old, new, 1))
    assert caught.value.key == key


def test_the_ethics_context_of_a_recorded_case_comes_from_the_journal() -> None:
    store = InMemoryStore()
    record(store, auto_case(case_id="J1", score=560))
    context = ethics_context_from_journal(store, "J1", notified_on=dt.date(2026, 12, 1))
    assert context.decision is not None and context.decision.decision == "decline"
    assert (
        context.decided_on
        == dt.datetime.fromisoformat(
            store.decision_entry("J1").recorded_at  # type: ignore[union-attr]
        ).date()
    )
    assert ethics_context_from_journal(store, "none").decision is None


def test_an_ethics_finding_carries_no_refusal_in_its_payload() -> None:
    payload: dict[str, Any] = evaluate_ethics(all_violated())[0].to_payload()
    assert set(payload) == {
        "pack",
        "commitment",
        "check",
        "evaluable",
        "upheld",
        "detail",
        "reference",
    }
    assert not any(is_typed_refusal(str(v)) for v in payload.values())
