"""The governor at its three seams: context, tool results, commit; and the verdict it
hands the runtime."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import auto_case, card_case
from credit.canonical import dumps
from credit.errors import InputError, SafetyBoundaryError
from credit.evals import grade_fairness
from credit.governance.governor import (
    CONTEXT_VIOLATION,
    DECISION_REFUSED,
    GUARD_POST_CHECK_FAILED,
    GUARD_REDACTED,
    Governor,
    decision_citations,
)
from credit.governance.guard import FairLendingGuard, Redacted
from credit.governance.onramp import intake
from credit.governance.refusal import (
    BOUNDARY_DECISION_CITES_PROHIBITED_BASIS,
    BOUNDARY_PROHIBITED_BASIS_REACHED_UNDERWRITER,
    BOUNDARY_SECOND_RECORD_DECISION,
    TYPED_REFUSAL_PREFIX,
    BoundaryResult,
    SafetyVerdict,
    build_refusal_surface,
)
from credit.journal import DECISION_KIND, InMemoryStore
from credit.journal.naming import decision_id
from credit.models import parse_case, parse_decision
from credit.policy import default_policy
from credit.tools import jsonable
from credit.underwriters import SPARK_METHODOLOGY
from credit.underwriting import decide_case

POLICY = default_policy()


def setup(case: dict[str, Any] | None = None) -> tuple[InMemoryStore, Governor, dict[str, Any]]:
    case = case or auto_case(case_id="C-GOV")
    store = InMemoryStore()
    intake(case, store)
    governor = Governor(store, case["caseId"], underwriter="rules", turn="t-1")
    wire: dict[str, Any] = jsonable(decide_case(parse_case(case), POLICY).decision.to_wire())
    return store, governor, wire


def verdict_of(governor: Governor) -> dict[str, BoundaryResult]:
    return {r.boundary_id: r for r in governor.verdict().results}


class LeakyGuard(FairLendingGuard):
    """A guard whose redaction is broken: it removes nothing (the post-check must bite)."""

    def redact(self, value: Any, *, path: str = "") -> Redacted:
        return Redacted(value, [])


# ------------------------------------------------------------------ seam 1: context


def test_a_clean_context_upholds_the_boundary_and_the_methodology_text_is_not_a_hit() -> None:
    store, governor, _ = setup()
    document = store.get_case("C-GOV")
    assert document is not None
    context = {
        "methodology": SPARK_METHODOLOGY,  # names "age", "sex", "prohibited basis" as text
        **document,
        "policy": POLICY.to_document(),
    }
    result = governor.check_context(context)
    assert result == BoundaryResult(
        boundary_id=BOUNDARY_PROHIBITED_BASIS_REACHED_UNDERWRITER,
        runtime_checkable=True,
        upheld=True,
        detail="context carries no prohibited basis",
    )
    assert governor.context_upheld
    assert store.entries(kinds=[CONTEXT_VIOLATION]) == []


def test_a_prohibited_field_in_the_context_violates_the_boundary_and_is_journaled() -> None:
    store, governor, _ = setup()
    context = {"application": {"product": "auto", "applicant": {"Date-Of-Birth": "1961"}}}
    result = governor.check_context(context)
    assert not result.upheld and result.runtime_checkable
    assert "application.applicant.Date-Of-Birth (age)" in result.detail
    (entry,) = store.entries(kinds=[CONTEXT_VIOLATION])
    assert entry.payload["found"] == [
        {"path": "application.applicant.Date-Of-Birth", "basis": "age", "kind": "basis"}
    ]
    assert "1961" not in dumps(entry.payload)
    assert governor.verdict().violated == (BOUNDARY_PROHIBITED_BASIS_REACHED_UNDERWRITER,)


# ------------------------------------------------------------------ seam 2: tool results


def test_each_redaction_is_its_own_journal_entry_with_tool_path_and_basis() -> None:
    store, governor, _ = setup()
    result = {"application": {"dob": "1961", "gender": "F", "spouse": {"name": "n"}}}
    cleaned = governor.guard_result("get_application", result)
    assert cleaned == {"application": {}}
    entries = store.entries(kinds=[GUARD_REDACTED])
    assert [(e.payload["tool"], e.payload["path"], e.payload["basis"]) for e in entries] == [
        ("get_application", "application.dob", "age"),
        ("get_application", "application.gender", "sex"),
        ("get_application", "application.spouse", "maritalStatus"),
    ]
    assert all(e.payload["layer"] == "tool" for e in entries)
    assert "1961" not in "".join(dumps(e.payload) for e in entries)
    assert len(governor.redactions) == 3
    assert verdict_of(governor)[BOUNDARY_PROHIBITED_BASIS_REACHED_UNDERWRITER].upheld


def test_json_inside_a_text_block_is_guarded_too() -> None:
    store, governor, _ = setup()
    response = [{"type": "text", "text": '{"application": {"DOB": "1961", "product": "auto"}}'}]
    cleaned = governor.guard_result("get_application", response, layer="hook")
    assert cleaned == [{"type": "text", "text": '{"application":{"product":"auto"}}'}]
    (entry,) = store.entries(kinds=[GUARD_REDACTED])
    assert entry.payload["path"] == "[0].text.application.DOB"
    assert entry.payload["layer"] == "hook"


def test_a_result_that_still_carries_a_prohibited_key_is_withheld_and_violates() -> None:
    store = InMemoryStore()
    intake(auto_case(case_id="C-LEAK"), store)
    governor = Governor(store, "C-LEAK", underwriter="rules", guard=LeakyGuard())
    with pytest.raises(SafetyBoundaryError) as caught:
        governor.guard_result("get_credit_report", {"creditReport": {"age": 41}})
    assert caught.value.boundary_id == BOUNDARY_PROHIBITED_BASIS_REACHED_UNDERWRITER
    assert caught.value.tool == "get_credit_report"
    (entry,) = store.entries(kinds=[GUARD_POST_CHECK_FAILED])
    assert entry.payload["paths"] == ["creditReport.age"]
    assert build_refusal_surface(governor.verdict()) == (
        TYPED_REFUSAL_PREFIX + BOUNDARY_PROHIBITED_BASIS_REACHED_UNDERWRITER
    )


# ------------------------------------------------------------------ seam 3: commit


def test_a_valid_decision_is_recorded_held_with_who_decided_and_under_which_policy() -> None:
    store, governor, wire = setup()
    governor.policy = {"name": POLICY.name, "version": POLICY.version, "sha256": POLICY.sha256}
    entry = governor.commit(wire)
    assert entry.kind == DECISION_KIND
    assert entry.payload == {
        "decision": parse_decision(wire).to_wire(),
        "reasons": [],
        "status": "held",
        "heldFor": "keystone",
        "underwriter": "rules",
        "policy": {"name": POLICY.name, "version": POLICY.version, "sha256": POLICY.sha256},
        "turn": "t-1",
        "decisionNumber": 1,  # the case's first decision, named by its content:
        "decisionId": decision_id("C-GOV", DECISION_KIND, entry.payload),
    }
    assert len(entry.payload["decisionId"]) == 64
    assert governor.committed == entry == store.decision_entry("C-GOV")
    results = verdict_of(governor)
    assert results[BOUNDARY_DECISION_CITES_PROHIBITED_BASIS].runtime_checkable
    assert results[BOUNDARY_DECISION_CITES_PROHIBITED_BASIS].upheld
    assert governor.verdict().violated == ()


@pytest.mark.parametrize(
    ("field", "text", "name"),
    [
        ("factors", "Applicant age is outside our preferred range", "age"),
        ("factors", "Marital status: single", "maritalStatus"),
        ("factors", "Receives public assistance income", "publicAssistanceIncome"),
        ("policyBasis", "zip code risk overlay", "zipCode"),
    ],
)
def test_a_decision_citing_a_prohibited_basis_or_proxy_is_refused_and_not_committed(
    field: str, text: str, name: str
) -> None:
    store, governor, wire = setup()
    wire[field] = [*wire[field], text]
    before = store.entries()

    with pytest.raises(SafetyBoundaryError) as caught:
        governor.commit(wire)

    assert caught.value.boundary_id == BOUNDARY_DECISION_CITES_PROHIBITED_BASIS
    assert store.decision_entry("C-GOV") is None
    assert governor.committed is None
    (refused,) = store.entries()[len(before) :]
    assert refused.kind == DECISION_REFUSED
    assert [c["name"] for c in refused.payload["citations"]] == [name]
    assert refused.payload["decision"][field] == wire[field]  # the decision as refused
    assert build_refusal_surface(governor.verdict()) == (
        TYPED_REFUSAL_PREFIX + BOUNDARY_DECISION_CITES_PROHIBITED_BASIS
    )


def test_after_a_refused_decision_nothing_more_is_recorded_in_that_turn() -> None:
    store, governor, wire = setup()
    with pytest.raises(SafetyBoundaryError):
        governor.commit({**wire, "factors": ["the applicant's age"]})
    entries = store.entries()
    with pytest.raises(SafetyBoundaryError, match="nothing more is recorded"):
        governor.commit(wire)
    assert store.decision_entry("C-GOV") is None
    assert store.entries() == entries


def test_a_malformed_decision_is_an_input_error_and_no_boundary_is_violated() -> None:
    store, governor, wire = setup()
    with pytest.raises(InputError) as caught:
        governor.commit({**wire, "decision": "maybe"})
    assert caught.value.field == "decision.decision"
    assert store.decision_entry("C-GOV") is None
    assert governor.verdict().violated == ()
    assert governor.commit(wire).kind == DECISION_KIND  # the underwriter may correct it


def test_a_second_record_decision_violates_its_boundary_and_changes_nothing() -> None:
    store, governor, wire = setup()
    first = governor.commit(wire)
    entries = store.entries()
    with pytest.raises(SafetyBoundaryError) as caught:
        governor.commit(wire)
    assert caught.value.boundary_id == BOUNDARY_SECOND_RECORD_DECISION
    assert store.entries() == entries
    assert store.decision_entry("C-GOV") == first
    assert store.verify().ok
    assert build_refusal_surface(governor.verdict()) == (
        TYPED_REFUSAL_PREFIX + "commit.second_record_decision"
    )


def test_a_later_turn_cannot_record_a_second_decision_for_the_case() -> None:
    store, governor, wire = setup()
    governor.commit(wire)
    later = Governor(store, "C-GOV", underwriter="claude")
    with pytest.raises(SafetyBoundaryError) as caught:
        later.commit(wire)
    assert caught.value.boundary_id == BOUNDARY_SECOND_RECORD_DECISION
    assert later.committed is None


def test_a_float_confidence_from_a_model_is_recorded_as_the_decimal_it_prints_as() -> None:
    _, governor, wire = setup(card_case(case_id="C-FLOAT"))
    entry = governor.commit({**wire, "confidence": 0.85, "dtiPct": float(wire["dtiPct"])})
    assert dumps(entry.payload["decision"]["confidence"]) == "0.85"


def test_the_commit_seam_and_the_fairness_grader_agree() -> None:
    _, _, wire = setup()
    clean = parse_decision(wire)
    dirty = parse_decision({**wire, "factors": ["Too young", "Is a woman", "Good history"]})
    for decision in (clean, dirty):
        grade = grade_fairness(decision)
        assert grade.passed == (decision_citations(decision) == [])
        assert set(grade.cited) == {m.name for _, m in decision_citations(decision)}


# ------------------------------------------------------------------ the verdict


def test_a_turn_with_no_decision_reports_the_commit_boundaries_as_not_checkable() -> None:
    _, governor, _ = setup()
    results = verdict_of(governor)
    for boundary in (BOUNDARY_DECISION_CITES_PROHIBITED_BASIS, BOUNDARY_SECOND_RECORD_DECISION):
        assert results[boundary].runtime_checkable is False
        assert results[boundary].upheld is True
    assert [r.boundary_id for r in governor.verdict().results] == sorted(results)


def test_the_same_verdict_gives_the_same_refusal_bytes() -> None:
    def violated() -> SafetyVerdict:
        _, governor, wire = setup()
        governor.commit(wire)
        with pytest.raises(SafetyBoundaryError):
            governor.commit(wire)
        return governor.verdict()

    first, second = violated(), violated()
    assert first == second
    surface = build_refusal_surface(first)
    assert surface is not None
    assert surface.encode() == (build_refusal_surface(second) or "").encode()


def test_a_violation_reported_not_runtime_checkable_never_refuses() -> None:
    verdict = SafetyVerdict(
        results=(
            BoundaryResult(
                boundary_id=BOUNDARY_DECISION_CITES_PROHIBITED_BASIS,
                runtime_checkable=False,
                upheld=False,
            ),
        )
    )
    assert verdict.violated == ()
    assert build_refusal_surface(verdict) is None


# ------------------------------------------------------------------ embedded JSON


_texts = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["{}", "[]", ' {"sex": "F"}', "\\n[1, 2]", "{not json", "[", "  ", "married"]),
)
_json_like = st.recursive(
    st.one_of(_texts, st.integers(), st.none()),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(["a", "note", "sex", "kind"]), inner, max_size=4),
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(_json_like)
def test_a_value_said_to_hold_no_json_text_has_none_and_is_guarded_the_same(value: Any) -> None:
    from credit.governance import governor as seam

    if not seam._may_hold_json(value):
        assert all(seam._json_container(t) is None for _, t in seam._strings(value, ""))
    governor = Governor(InMemoryStore(), "C-EMB", underwriter="rules")
    fast = governor._redact_embedded(value, "")
    cleaned, found = governor.guard.redact(value, path="")
    slow = governor._embedded(cleaned, "", found)  # the full walk, never skipped
    assert fast.value == slow and fast.redactions == found


@settings(max_examples=200, deadline=None)
@given(_json_like, _json_like)
def test_the_context_seam_finds_what_a_key_walk_and_a_value_walk_find(
    application: Any, report: Any
) -> None:
    # one walk per part of the case (names and values at once) instead of two
    store = InMemoryStore()
    governor = Governor(store, "C-CTX", underwriter="rules")
    context = {"application": application, "creditReport": report, "methodology": "m"}
    governor.check_context(context)
    guard = governor.guard
    keys = [
        (hit.path, hit.basis)
        for name in ("application", "creditReport")
        for hit in guard.find_prohibited_keys(context[name], path=name, values=False)
    ]
    values = [
        (hit.path, hit.basis)
        for name in ("application", "creditReport")
        for hit in guard.find_prohibited_keys(context[name], path=name)
        if hit.match == "value"
    ]
    violation = [
        e.payload for e in store.entries("C-CTX") if e.kind == "governor.context_violation"
    ]
    found = [(f["path"], f["basis"]) for f in violation[0]["found"]] if violation else []
    assert found == keys
    redacted = [e.payload for e in store.entries("C-CTX") if e.kind == "guard.redacted"]
    assert [(r["path"], r["basis"]) for r in redacted] == values
