"""Evals that grade: the reasons (codes, order, stated values, approved wordings) and the
boundary points added for them and for the payment's rounding, each grader check shown
to fail on a decision broken just there."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest

from credit.evals import BoundaryPoint, boundary_points, grade_boundary, grade_thin_file
from credit.evals.cases import build_case
from credit.evals.oracle import expected_outcome, reason_failures
from credit.evals.runner import rules_underwriter
from credit.models import Decision
from credit.policy import default_policy
from credit.secondline.exact import exact_payment

POLICY = default_policy()
POINTS = {p.name: p for p in boundary_points(POLICY) if isinstance(p, BoundaryPoint)}
KEY_FACTOR_POINT = "auto score min-1 with 5 bureau key factors states 4 reasons"
BOTH_CAPS_POINT = "auto DTI 46.0 and LTV 122.0 both over their caps"
ROUNDS_UP = "auto payment half a cent or more over a cent: DTI cap+0.05 states 45.1"
ROUNDS_DOWN = "auto payment under half a cent over a cent: DTI cap+0.05 states 45.1"


def changed(original: Decision, /, **update: object) -> Decision:
    return Decision.model_validate(original.model_copy(update=update).model_dump())


def real(name: str) -> tuple[BoundaryPoint, Decision]:
    point = POINTS[name]
    return point, rules_underwriter(point.case, POLICY)


def test_a_score_under_the_minimum_with_five_key_factors_expects_the_score_and_three_of_them() -> (
    None
):
    point = POINTS[KEY_FACTOR_POINT]
    assert point.expectation.decisions == {"decline"}
    assert [r.code for r in point.expectation.reasons] == [
        "SCORE_BELOW_MINIMUM",
        "KF_10",
        "KF_18",
        "KF_08",
    ]
    assert point.expectation.reasons[0].values == {
        "score": "599",
        "minScore": "600",
        "productName": "auto loans",
    }


def test_dti_and_ltv_both_over_their_caps_expect_a_counteroffer_stating_both_in_factor_order() -> (
    None
):
    point = POINTS[BOTH_CAPS_POINT]
    assert point.expectation.decisions == {"counteroffer"}
    assert [(r.code, r.values) for r in point.expectation.reasons] == [
        ("DTI_OVER_CAP", {"dtiPct": "46.0", "maxDtiPct": "45.0", "productName": "auto loans"}),
        ("LTV_OVER_CAP", {"ltvPct": "122.0", "maxLtvPct": "120.0"}),
    ]


@pytest.mark.parametrize(("name", "rounds_up"), [(ROUNDS_UP, True), (ROUNDS_DOWN, False)])
def test_the_payment_rounding_points_sit_either_side_of_half_a_cent(
    name: str, rounds_up: bool
) -> None:
    app = POINTS[name].case.application
    assert app.requested_amount is not None and app.term_months is not None
    over = exact_payment(app.requested_amount, Decimal("6.49"), app.term_months) * 100 % 1
    assert (over >= Fraction(1, 2)) is rounds_up and over != 0
    assert POINTS[name].dti_pct == Decimal("45.1")


@pytest.mark.parametrize("name", [KEY_FACTOR_POINT, BOTH_CAPS_POINT])
def test_the_real_underwriter_states_exactly_the_reasons_the_policy_gives(name: str) -> None:
    point, decision = real(name)
    assert reason_failures(decision, point.expectation) == []
    assert grade_boundary(point, decision, POLICY).passed


def test_a_dropped_reason_fails_the_boundary_grader_naming_the_reasons_due() -> None:
    point, decision = real(KEY_FACTOR_POINT)
    grade = grade_boundary(point, changed(decision, factors=decision.factors[:-1]), POLICY)
    assert (
        "3 reason(s) stated; the policy states 4 (SCORE_BELOW_MINIMUM, KF_10, KF_18, KF_08)"
        in grade.failures
    )


def test_reasons_in_another_order_fail_the_boundary_grader_at_each_moved_position() -> None:
    point, decision = real(BOTH_CAPS_POINT)
    grade = grade_boundary(point, changed(decision, factors=decision.factors[::-1]), POLICY)
    moved = [f for f in grade.failures if f.startswith("factors[")]
    assert len(moved) == 2
    assert moved[0].startswith("factors[0] is not DTI_OVER_CAP (dtiPct=46.0, maxDtiPct=45.0")


def test_another_approved_wording_passes_and_a_wrong_value_in_it_fails() -> None:
    point, decision = real(BOTH_CAPS_POINT)
    second = point.expectation.reasons[0].texts[1]
    other = changed(decision, factors=(second, decision.factors[1]))
    assert other.factors != decision.factors
    assert grade_boundary(point, other, POLICY).passed
    wrong = second.replace("46.0", "46.1")
    grade = grade_boundary(point, changed(decision, factors=(wrong, decision.factors[1])), POLICY)
    assert any(f.startswith("factors[0] is not DTI_OVER_CAP") for f in grade.failures)


def test_a_margin_referral_stating_the_wrong_margin_fails() -> None:
    point, decision = real("auto DTI cap = 45.0")
    ltv_text = expected_outcome(POINTS["auto LTV cap = 120.0"].case, POLICY).reasons[0].texts[0]
    grade = grade_boundary(point, changed(decision, factors=(ltv_text,)), POLICY)
    assert any(f.startswith("factors[0] is not REFER_DTI_MARGIN") for f in grade.failures)


def test_a_thin_file_referral_that_states_another_reason_fails_the_thin_file_grader() -> None:
    case = build_case(
        "T-1", POLICY, product="card", score=750, dti_raw=Decimal("20.0"), tradelines=2
    )
    decision = rules_underwriter(case, POLICY)
    assert grade_thin_file(case, decision, POLICY).passed
    no_score = expected_outcome(
        build_case("T-2", POLICY, product="card", score=None, dti_raw=Decimal("20.0")), POLICY
    ).reasons[0]
    grade = grade_thin_file(case, changed(decision, factors=no_score.texts), POLICY)
    assert any(f.startswith("factors[0] is not REFER_FEW_TRADELINES") for f in grade.failures)
