"""Backstop, the model-risk review: an independent re-derivation by the rules
underwriter from the tool data, the policy version in force, and the confidence floor."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import pytest

from conftest import POLICY, auto_case, card_case, debt_for_dti, decide
from credit.errors import GovernanceError
from credit.governance.backstop import Backstop, parse_policy_citation
from credit.journal import InMemoryStore
from credit.policy import Policy, PolicyRegistry, default_policy_path, load_policy
from governance_support import CASE_FIELDS, record


def _policy_text() -> str:
    return default_policy_path().read_text(encoding="utf-8")


def policy_version(
    version: str, effective: str, *, replace: tuple[str, str] | None = None
) -> Policy:
    """The reference policy re-issued as another version (same numbers unless told)."""
    text = _policy_text().replace('version: "2026.1"', f'version: "{version}"')
    text = text.replace("effectiveDate: 2026-01-01", f"effectiveDate: {effective}")
    if replace is not None:
        assert replace[0] in text
        text = text.replace(*replace)
    return load_policy(f"policies/reference-{version}.yaml", text)


def _record_wire(store: InMemoryStore, case: Mapping[str, Any], wire: Mapping[str, Any]) -> None:
    """Record a decision as another underwriter would have (not re-decided here)."""
    store.put_case(case["caseId"], {k: case[k] for k in CASE_FIELDS})
    store.record_decision(case["caseId"], {"decision": dict(wire), "underwriter": "llm"})


def codes(review: Any) -> list[str]:
    return [f.code for f in review.findings]


@pytest.fixture
def store() -> InMemoryStore:
    return InMemoryStore()


@pytest.mark.parametrize(
    "case",
    [
        auto_case(case_id="B-approve"),
        auto_case(case_id="B-decline", score=560),
        card_case(case_id="B-card"),
        auto_case(case_id="B-thin", tradelines=2),
        card_case(case_id="B-counter", debt="3900.00"),
    ],
    ids=lambda c: c["caseId"],
)
def test_a_rules_decision_re_derived_from_the_tool_data_passes_backstop(
    store: InMemoryStore, case: dict[str, Any]
) -> None:
    record(store, case)
    review = Backstop(store).review(case["caseId"])
    assert review.passed, review.findings
    assert codes(review) == []
    assert review.basis["policyInForce"] == POLICY.label
    assert review.basis["derivedDecision"] == decide(case).decision.decision


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("decision", "counteroffer"),
        ("terms", {"apr": Decimal("5.99"), "amount": Decimal("20000.00"), "termMonths": 60}),
        ("scoreBand", "near-prime"),
        ("dtiPct", Decimal("13.0")),
        ("ltvPct", Decimal("79.9")),
        ("factors", ["Referred for review: manual check."]),
    ],
)
def test_each_tampered_field_is_a_disagreement_that_holds_naming_the_field(
    store: InMemoryStore, field: str, value: Any
) -> None:
    case = auto_case(case_id="T")
    wire = decide(case).decision.to_wire()
    wire[field] = value
    _record_wire(store, case, wire)
    review = Backstop(store).review("T")
    assert not review.passed
    assert codes(review) == ["backstop.disagreement"]
    finding = review.findings[0]
    assert finding.holds
    # the field named exactly: terms.apr, factors[0], ...
    assert finding.detail["field"].startswith(field)
    assert finding.message.startswith(f"{finding.detail['field']}: recorded ")


def test_an_approval_of_a_case_the_rules_decline_holds_with_every_differing_field(
    store: InMemoryStore,
) -> None:
    case = auto_case(case_id="T", score=560)
    approved = decide(auto_case(case_id="X", score=650)).decision.to_wire()
    _record_wire(store, case, approved)
    review = Backstop(store).review("T")
    assert [f.detail["field"] for f in review.holding] == [
        "decision",
        "terms.amount",
        "terms.apr",
        "terms.termMonths",
        "factors[0]",
    ]
    assert review.findings[0].detail == {
        "field": "decision",
        "recorded": "approve",
        "derived": "decline",
    }


def test_a_decline_one_point_under_the_minimum_is_held_by_the_confidence_floor(
    store: InMemoryStore,
) -> None:
    u = record(store, auto_case(case_id="F", score=599))
    assert u.decision.decision == "decline"
    assert u.decision.confidence == Decimal("0.55")
    review = Backstop(store).review("F")
    assert codes(review) == ["backstop.confidence_floor"]
    assert review.findings[0].message == (
        "a decline at confidence 0.55 is below the floor (confidenceFloor=0.60)"
    )


def test_a_decline_far_under_the_minimum_is_above_the_floor_and_passes(
    store: InMemoryStore,
) -> None:
    u = record(store, auto_case(case_id="F", score=580))
    assert u.decision.confidence > POLICY["confidenceFloor"].value
    assert Backstop(store).review("F").passed


@pytest.mark.parametrize(("confidence", "held"), [("0.59", True), ("0.60", False), ("0.61", False)])
def test_an_approval_is_held_below_the_floor_and_passes_at_it(
    store: InMemoryStore, confidence: str, held: bool
) -> None:
    record(store, auto_case(case_id="F"), changes={"confidence": Decimal(confidence)})
    review = Backstop(store).review("F")
    assert [f.code for f in review.holding] == (["backstop.confidence_floor"] if held else [])
    # the confidence is not the methodology's: recorded, for information only
    assert codes(review)[-1] == "backstop.confidence_differs"


def test_a_referral_below_the_floor_is_not_held_by_it(store: InMemoryStore) -> None:
    u = record(store, auto_case(case_id="F", tradelines=1))
    assert (u.decision.decision, u.decision.confidence) == ("refer", Decimal("0.50"))
    assert Backstop(store).review("F").passed


def test_a_decision_citing_a_policy_version_not_in_force_on_the_case_date_is_held(
    store: InMemoryStore,
) -> None:
    newer = policy_version("2026.2", "2026-06-01")
    registry = PolicyRegistry([POLICY, newer])
    record(store, auto_case(case_id="V"))  # decided under 2026.1, dated 2026-11-30
    review = Backstop(store, registry).review("V")
    assert codes(review) == ["backstop.policy_version"]
    finding = review.findings[0]
    assert finding.detail["inForce"]["version"] == "2026.2"
    assert finding.detail["cited"]["version"] == "2026.1"
    assert "version 2026.1 is not 2026.2" in finding.message
    assert "sha256" in finding.message


def test_a_decision_under_the_version_in_force_passes_with_several_versions_adopted(
    store: InMemoryStore,
) -> None:
    newer = policy_version("2026.2", "2026-06-01")
    registry = PolicyRegistry([POLICY, newer])
    record(store, auto_case(case_id="V"), policy=newer)
    record(store, auto_case(case_id="W", as_of="2026-03-01"), policy=POLICY)
    backstop = Backstop(store, registry)
    assert backstop.review("V").passed
    assert backstop.review("W").passed


def test_a_citation_with_the_right_version_but_another_sha256_is_held(
    store: InMemoryStore,
) -> None:
    u = decide(auto_case(case_id="V"))
    basis = list(u.decision.policy_basis)
    basis[0] = basis[0][:-64] + "0" * 64
    record(store, auto_case(case_id="V"), changes={"policyBasis": basis})
    review = Backstop(store).review("V")
    assert codes(review) == ["backstop.policy_version"]
    assert "version" not in review.findings[0].message.split(": ", 1)[1]


def test_a_policy_basis_without_a_policy_citation_is_held(store: InMemoryStore) -> None:
    u = decide(auto_case(case_id="V"))
    record(
        store, auto_case(case_id="V"), changes={"policyBasis": list(u.decision.policy_basis[1:])}
    )
    review = Backstop(store).review("V")
    assert codes(review) == ["backstop.policy_version"]
    assert review.findings[0].detail["cited"] == u.decision.policy_basis[1]


def test_the_policy_citation_is_read_exactly() -> None:
    cited = parse_policy_citation(decide(auto_case()).decision.policy_basis[0])
    assert cited is not None
    assert (cited.name, cited.version, cited.effective) == (
        "reference-credit-policy",
        "2026.1",
        "2026-01-01",
    )
    assert cited.sha256 == POLICY.sha256
    assert parse_policy_citation("policy=x v1 effective 2026-01-01 sha256:abc") is None


def test_a_different_policy_in_force_re_derives_a_different_decision_and_holds(
    store: InMemoryStore,
) -> None:
    stricter = policy_version(
        "2026.2",
        "2026-06-01",
        replace=("      value: 600\n    maxDtiPct", "      value: 700\n    maxDtiPct"),
    )
    assert stricter["products.auto.minScore"].value == 700
    record(store, auto_case(case_id="S", score=680), policy=stricter)
    review = Backstop(store, PolicyRegistry([POLICY, stricter])).review("S")
    assert review.passed
    loose = InMemoryStore()
    record(loose, auto_case(case_id="S", score=680))
    review = Backstop(loose, PolicyRegistry([POLICY, stricter])).review("S")
    assert "backstop.policy_version" in codes(review)
    assert "backstop.disagreement" in codes(review)


def test_a_within_margin_referral_is_flagged_for_the_reviewer_without_holding(
    store: InMemoryStore,
) -> None:
    debt = debt_for_dti("44.5", "auto")
    u = record(store, auto_case(case_id="M", debt=debt))
    assert u.decision.decision == "refer"
    review = Backstop(store).review("M")
    assert review.passed
    assert codes(review) == ["backstop.within_margin"]
    assert not review.findings[0].holds
    assert review.findings[0].detail == {"reasonCodes": ["REFER_DTI_MARGIN"]}


def test_a_case_dated_before_any_adopted_policy_is_held(store: InMemoryStore) -> None:
    newer = policy_version("2027.1", "2027-01-01")
    record(store, auto_case(case_id="E"))
    review = Backstop(store, PolicyRegistry([newer])).review("E")
    assert codes(review) == ["backstop.no_policy_in_force"]


def test_a_missing_case_document_is_held_because_nothing_can_be_re_derived(
    store: InMemoryStore,
) -> None:
    wire = decide(auto_case(case_id="N")).decision.to_wire()
    store.record_decision("N", {"decision": wire, "underwriter": "llm"})
    review = Backstop(store).review("N")
    assert codes(review) == ["backstop.case_unreadable"]


def test_an_invalid_recorded_decision_is_held(store: InMemoryStore) -> None:
    record(store, auto_case(case_id="I"), changes={"confidence": Decimal("1.5")})
    review = Backstop(store).review("I")
    assert codes(review) == ["backstop.decision_unreadable"]
    assert "decision.confidence" in review.findings[0].message


def test_a_case_the_rules_underwriter_cannot_decide_is_held(store: InMemoryStore) -> None:
    case = auto_case(case_id="U")
    wire = decide(case).decision.to_wire()
    case["application"]["termMonths"] = 84  # a term the policy does not offer
    _record_wire(store, case, wire)
    review = Backstop(store).review("U")
    assert codes(review) == ["backstop.rederivation_failed"]
    assert "84 months is not among products.auto.termsAllowed" in review.findings[0].message


def test_backstop_never_reads_monitoring_data(store: InMemoryStore) -> None:
    class NoMonitoring(InMemoryStore):
        def get_monitoring(self, case_id: str) -> Mapping[str, Any] | None:
            raise AssertionError("Backstop read monitoring data")

    blind = NoMonitoring()
    record(blind, auto_case(case_id="B"), monitor={"race": "Asian"})
    assert Backstop(blind).review("B").passed


def test_backstop_refuses_a_case_with_no_recorded_decision(store: InMemoryStore) -> None:
    with pytest.raises(GovernanceError, match="case Z, backstop: no decision is recorded"):
        Backstop(store).review("Z")
