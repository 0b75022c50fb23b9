"""The evals: graders that take any underwriter's Decision, and ``run_all``."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from typer.testing import CliRunner

from credit.cli import app
from credit.evals import (
    BOUNDARY,
    FAIRNESS,
    THIN_FILE,
    BoundaryPoint,
    EvalReport,
    EvalResult,
    Unbuildable,
    boundary_points,
    grade_boundary,
    grade_fairness,
    grade_thin_file,
    rules_underwriter,
    run_all,
)
from credit.evals.cases import Request, build_case, make_case
from credit.evals.oracle import expected_outcome
from credit.models import Case, Decision, Terms
from credit.policy import Policy, default_policy, default_policy_path, load_policy

POLICY = default_policy()
POINTS = {p.name: p for p in boundary_points(POLICY) if isinstance(p, BoundaryPoint)}


def point(name: str) -> BoundaryPoint:
    return POINTS[name]


def decide(case: Case, policy: Policy = POLICY) -> Decision:
    return rules_underwriter(case, policy)


def changed(original: Decision, /, **update: object) -> Decision:
    """A copy of a decision with fields changed, validated again (still a Decision)."""
    return Decision.model_validate(original.model_copy(update=update).model_dump())


# ---------------------------------------------------------------- run_all


def test_run_all_under_the_reference_policy_passes_every_row() -> None:
    report = run_all(POLICY)
    assert report.passed, [(r.name, r.detail) for r in report.failed]
    assert report.suites == (BOUNDARY, THIN_FILE, FAIRNESS)
    assert len({(r.suite, r.name) for r in report.results}) == len(report.results)


def test_every_row_is_computed_and_says_what_it_checked() -> None:
    report = run_all(POLICY)
    assert len(report.suite(BOUNDARY)) >= 40
    assert len(report.suite(THIN_FILE)) >= 10
    assert len(report.suite(FAIRNESS)) >= 30
    for row in report.results:
        assert isinstance(row.passed, bool) and row.detail


def test_the_boundary_points_follow_a_changed_policy(tmp_path: Path) -> None:
    text = default_policy_path().read_text("utf-8")
    text = text.replace('value: "45.0"', 'value: "43.5"').replace("value: 720", "value: 740")
    variant = load_policy(tmp_path / "variant.yaml", text)
    report = run_all(variant)
    assert report.passed, [(r.name, r.detail) for r in report.failed]
    names = [r.name for r in report.suite(BOUNDARY)]
    assert "auto DTI cap = 43.5" in names and "auto DTI cap+0.1 = 43.6" in names
    assert "card band prime floor-1 = 739" in names


def test_a_point_the_policy_leaves_no_case_for_is_a_failing_row_never_skipped(
    tmp_path: Path,
) -> None:
    text = default_policy_path().read_text("utf-8").replace("value: 640", "value: 300")
    report = run_all(load_policy(tmp_path / "low.yaml", text))
    failed = {r.name: r.detail for r in report.failed}
    assert "card score min-1 = 299" in failed
    assert "no case" in failed["card score min-1 = 299"]
    assert not report.passed


def test_an_empty_report_has_not_passed() -> None:
    assert not EvalReport(()).passed
    assert EvalReport((EvalResult("s", "n", True, "ok"),)).passed


def test_credit_eval_prints_every_row_and_exits_zero() -> None:
    result = CliRunner().invoke(app, ["eval"])
    assert result.exit_code == 0, result.output
    assert f"{len(run_all(POLICY).results)} passed, 0 failed" in result.output


# ---------------------------------------------------------------- the boundary points


@pytest.mark.parametrize(
    ("name", "decisions"),
    [
        ("auto score min-1 = 599", {"decline"}),
        ("auto score min = 600", {"refer"}),
        ("auto score min+9 = 609", {"refer"}),
        ("auto score min+10 = 610", {"approve"}),
        ("card score min-1 = 639", {"decline"}),
        ("card score min = 640", {"refer"}),
        ("card score min+9 = 649", {"refer"}),
        ("card score min+10 = 650", {"approve"}),
        ("auto DTI cap-1.1 = 43.9", {"approve"}),
        ("auto DTI cap-1.0 = 44.0", {"refer"}),
        ("auto DTI cap = 45.0", {"refer"}),
        ("auto DTI cap+0.1 = 45.1", {"counteroffer"}),
        ("auto DTI cap+0.05 less a cent states 45.0", {"refer"}),
        ("auto DTI cap+0.05 states 45.1", {"counteroffer"}),
        ("card DTI cap-1.1 = 38.9", {"approve"}),
        ("card DTI cap-1.0 = 39.0", {"refer"}),
        ("card DTI cap = 40.0", {"refer"}),
        ("card DTI cap+0.1 = 40.1", {"counteroffer"}),
        ("auto LTV cap-2.1 = 117.9", {"approve"}),
        ("auto LTV cap-2.0 = 118.0", {"refer"}),
        ("auto LTV cap = 120.0", {"refer"}),
        ("auto LTV cap+0.1 = 120.1", {"counteroffer"}),
        ("auto tradelines min-1 = 2", {"refer"}),
        ("auto tradelines min = 3", {"approve"}),
        ("auto history min-1 = 11 months", {"refer"}),
        ("auto history min = 12 months", {"approve"}),
        ("card tradelines min-1 = 2", {"refer"}),
        ("card history min = 12 months", {"approve"}),
    ],
)
def test_each_edge_expects_what_the_reference_policy_text_says(
    name: str, decisions: set[str]
) -> None:
    assert point(name).expectation.decisions == decisions


@pytest.mark.parametrize(
    ("name", "band"),
    [
        ("auto band near-prime floor-1 = 659", "subprime"),
        ("auto band near-prime floor = 660", "near-prime"),
        ("auto band prime floor-1 = 719", "near-prime"),
        ("auto band prime floor = 720", "prime"),
        ("card band near-prime floor-1 = 659", "subprime"),
        ("card band prime floor = 720", "prime"),
    ],
)
def test_the_band_edges_sit_in_the_band_the_policy_names(name: str, band: str) -> None:
    assert point(name).band == band
    assert point(name).expectation.decisions == {"approve"}


@pytest.mark.parametrize(
    ("name", "dti", "ltv"),
    [
        ("auto DTI cap = 45.0", "45.0", "59.0"),
        ("auto DTI cap+0.05 less a cent states 45.0", "45.0", "59.0"),
        ("auto DTI cap+0.05 states 45.1", "45.1", "59.0"),
        ("card DTI cap+0.1 = 40.1", "40.1", None),
        ("auto LTV cap+0.05 less a cent states 120.0", "22.0", "120.0"),
        ("auto LTV cap+0.05 states 120.1", "22.0", "120.1"),
    ],
)
def test_each_case_is_built_so_the_rounded_figure_is_exactly_the_edge(
    name: str, dti: str, ltv: str | None
) -> None:
    p = point(name)
    assert p.dti_pct == Decimal(dti)
    assert p.ltv_pct == (Decimal(ltv) if ltv else None)


def test_an_auto_applicant_with_dti_exactly_at_the_45_cap_is_referred_not_approved() -> None:
    p = point("auto DTI cap = 45.0")
    decision = decide(p.case)
    assert decision.decision == "refer" and decision.dti_pct == Decimal("45.0")
    assert grade_boundary(p, decision, POLICY).passed


def test_approving_the_dti_cap_edge_fails_the_boundary_grader() -> None:
    p = point("auto DTI cap = 45.0")
    real = decide(p.case)
    app_ = p.case.application
    broken = changed(
        real,
        decision="approve",
        factors=(),
        terms=Terms(apr=Decimal("6.49"), amount=app_.requested_amount, term_months=60),
    )
    grade = grade_boundary(p, broken, POLICY)
    assert not grade.passed
    assert grade.failures[0].startswith("decided approve, the policy says refer")


@pytest.mark.parametrize("name", ["auto DTI cap+0.1 = 45.1", "card DTI cap+0.1 = 40.1"])
def test_referring_a_request_over_the_cap_fails_the_boundary_grader(name: str) -> None:
    p = point(name)
    broken = changed(decide(p.case), decision="refer", terms=None)
    assert any(
        "the policy says counteroffer" in f for f in grade_boundary(p, broken, POLICY).failures
    )


def test_declining_the_score_minimum_fails_and_approving_score_min_minus_one_fails() -> None:
    at_min = point("card score min = 640")
    declined = changed(decide(at_min.case), decision="decline")
    assert not grade_boundary(at_min, declined, POLICY).passed
    below = point("card score min-1 = 639")
    real = decide(below.case)
    approved = changed(
        real,
        decision="approve",
        factors=(),
        terms=Terms(apr=Decimal("29.99"), credit_line=Decimal("1500.00")),
    )
    assert "decided approve" in grade_boundary(below, approved, POLICY).detail


def test_a_stated_dti_off_the_edge_fails_even_with_the_right_decision() -> None:
    p = point("auto DTI cap = 45.0")
    broken = changed(decide(p.case), dti_pct=Decimal("44.9"))
    grade = grade_boundary(p, broken, POLICY)
    assert grade.failures == ("stated DTI 44.9 is not the edge's 45.0",)


def test_a_stated_ltv_off_the_edge_fails() -> None:
    p = point("auto LTV cap = 120.0")
    broken = changed(decide(p.case), ltv_pct=Decimal("119.9"))
    assert grade_boundary(p, broken, POLICY).failures == (
        "stated LTV 119.9 is not the edge's 120.0",
    )


def test_the_wrong_band_at_a_band_edge_fails() -> None:
    p = point("auto band prime floor-1 = 719")
    broken = changed(decide(p.case), score_band="prime")
    assert (
        "band prime, the score's band is near-prime" in grade_boundary(p, broken, POLICY).failures
    )


def test_an_approval_at_the_wrong_band_rate_fails() -> None:
    p = point("auto band near-prime floor = 660")
    real = decide(p.case)
    assert real.terms is not None
    broken = changed(real, terms=real.terms.model_copy(update={"apr": Decimal("6.49")}))
    assert (
        "APR 6.49 is not the near-prime band's 9.99" in grade_boundary(p, broken, POLICY).failures
    )


def test_a_card_approval_above_the_line_requested_fails() -> None:
    p = next(v for k, v in POINTS.items() if k.startswith("card line requested"))
    real = decide(p.case)
    assert real.terms is not None and real.terms.credit_line == Decimal("9900.00")
    broken = changed(real, terms=real.terms.model_copy(update={"credit_line": Decimal("10000.00")}))
    assert not grade_boundary(p, broken, POLICY).passed


def test_a_counteroffer_smaller_than_the_largest_passing_amount_fails() -> None:
    p = point("auto DTI cap+0.1 = 45.1")
    real = decide(p.case)
    assert real.terms is not None and real.terms.amount is not None
    smaller = real.terms.model_copy(update={"amount": real.terms.amount - Decimal(100)})
    failures = grade_boundary(p, changed(real, terms=smaller), POLICY).failures
    assert any(f.startswith("a larger amount") for f in failures)


def test_a_counteroffer_over_a_longer_term_than_needed_fails() -> None:
    p = point("auto LTV cap+0.1 = 120.1")
    real = decide(p.case)
    assert real.terms is not None and real.terms.term_months == 60
    longer = real.terms.model_copy(update={"term_months": 72})
    failures = grade_boundary(p, changed(real, terms=longer), POLICY).failures
    assert any("shorter term (60) passes" in f for f in failures)


def test_a_card_counteroffer_at_the_line_assessed_fails() -> None:
    p = point("card DTI cap+0.1 = 40.1")
    real = decide(p.case)
    assert real.terms is not None
    at_line = real.terms.model_copy(update={"credit_line": Decimal("10000.00")})
    failures = grade_boundary(p, changed(real, terms=at_line), POLICY).failures
    assert any("is not below the line assessed" in f for f in failures)


def test_a_decline_whose_reasons_do_not_state_the_score_fails() -> None:
    p = point("auto score min-1 = 599")
    broken = changed(decide(p.case), factors=("Your credit score is too low.",))
    assert (
        "no reason states the score 599 and the limit 600"
        in grade_boundary(p, broken, POLICY).failures
    )


def test_an_approval_with_adverse_reasons_fails() -> None:
    p = point("auto DTI cap-1.1 = 43.9")
    broken = changed(decide(p.case), factors=("Your debt-to-income ratio is high.",))
    assert not grade_boundary(p, broken, POLICY).passed


# ---------------------------------------------------------------- thin file


def _thin(
    product: str,
    *,
    score: int | None = 750,
    tradelines: int | None = None,
    history_months: int | None = None,
) -> Case:
    return build_case(
        "T-1",
        POLICY,
        product=product,
        score=score,
        dti_raw=Decimal("20.0"),
        ltv_raw=Decimal("80.0"),
        tradelines=tradelines,
        history_months=history_months,
    )


@pytest.mark.parametrize("product", ["auto", "card"])
def test_a_case_with_no_score_is_referred_unscored(product: str) -> None:
    case = _thin(product, score=None)
    decision = decide(case)
    grade = grade_thin_file(case, decision, POLICY)
    assert grade.passed, grade.failures
    assert decision.decision == "refer" and decision.score_band == "unscored"


@pytest.mark.parametrize(("tradelines", "history"), [(2, None), (None, 11), (0, 0)])
def test_too_few_tradelines_or_too_short_a_history_is_referred(
    tradelines: int | None, history: int | None
) -> None:
    case = _thin("auto", tradelines=tradelines, history_months=history)
    assert grade_thin_file(case, decide(case), POLICY).passed


def test_guessing_on_a_thin_file_fails_the_thin_file_grader() -> None:
    case = _thin("card", score=None)
    real = decide(case)
    declined = changed(real, decision="decline")
    grade = grade_thin_file(case, declined, POLICY)
    assert grade.failures[0] == (
        "decided decline; a thin file (the bureau returned no score) is referred"
    )


def test_a_band_given_to_a_case_with_no_score_fails() -> None:
    case = _thin("auto", score=None)
    broken = changed(decide(case), score_band="subprime")
    assert "band subprime, expected unscored" in grade_thin_file(case, broken, POLICY).failures


def test_an_unscored_dti_that_counts_a_new_payment_fails() -> None:
    case = _thin("auto", score=None)
    broken = changed(decide(case), dti_pct=Decimal("24.5"))
    assert (
        "stated DTI 24.5, existing debt only gives 20.0"
        in grade_thin_file(case, broken, POLICY).failures
    )


def test_a_referral_that_records_no_reason_fails() -> None:
    case = _thin("auto", tradelines=1)
    broken = changed(decide(case), factors=())
    assert (
        "a referral records no reason for the reviewer"
        in grade_thin_file(case, broken, POLICY).failures
    )


def test_the_thin_file_grader_refuses_a_case_that_is_not_thin() -> None:
    case = _thin("auto")
    with pytest.raises(ValueError, match="is not a thin file"):
        grade_thin_file(case, decide(case), POLICY)


def test_a_thin_file_is_referred_even_when_the_score_is_under_the_minimum() -> None:
    case = _thin("auto", score=599, tradelines=2)
    assert expected_outcome(case, POLICY).decisions == {"refer"}
    assert grade_thin_file(case, decide(case), POLICY).passed


# ---------------------------------------------------------------- fairness guard


def _declined() -> Decision:
    case = make_case(
        "F-1",
        POLICY,
        product="auto",
        score=580,
        annual_income=Decimal("90000.00"),
        monthly_debt=Decimal("500.00"),
        request=Request(
            amount=Decimal("20000.00"), term_months=60, vehicle_value=Decimal("25000.00")
        ),
        key_factors=(("10", "Revolving balances too high", "34%"),),
    )
    return decide(case)


def test_a_real_decision_cites_no_prohibited_basis() -> None:
    decision = _declined()
    assert decision.decision == "decline" and decision.factors
    assert grade_fairness(decision).passed


def test_because_of_your_age_appended_to_a_factor_fails_outright() -> None:
    real = _declined()
    broken = changed(real, factors=(real.factors[0] + " because of your age", *real.factors[1:]))
    grade = grade_fairness(broken)
    assert not grade.passed
    assert grade.cited == ("age",)
    assert grade.failures[0].startswith("factors[0] cites prohibited basis age ('age')")


def test_a_zip_code_in_the_policy_basis_fails_as_a_proxy() -> None:
    real = _declined()
    broken = changed(real, policy_basis=(*real.policy_basis, "zip code 90210 is high risk"))
    grade = grade_fairness(broken)
    assert grade.cited == ("zipCode",)
    assert f"policyBasis[{len(real.policy_basis)}] cites proxy zipCode" in grade.failures[0]


def test_a_near_miss_in_a_factor_is_not_a_citation() -> None:
    real = _declined()
    fine = changed(real, factors=(*real.factors, "Your mortgage is a high percentage of income."))
    assert grade_fairness(fine).passed


# ---------------------------------------------------------------- broken underwriters


def test_an_underwriter_that_approves_its_referrals_fails_the_boundary_and_thin_file_rows() -> None:
    def approve_referrals(case: Case, policy: Policy) -> Decision:
        decision = rules_underwriter(case, policy)
        if decision.decision != "refer":
            return decision
        return changed(decision, decision="approve", factors=(), terms=Terms(apr=Decimal(0)))

    report = run_all(POLICY, approve_referrals)
    failed_suites = {r.suite for r in report.failed}
    assert failed_suites == {BOUNDARY, THIN_FILE}
    assert all(r.passed for r in report.suite(FAIRNESS))
    failed = {r.name for r in report.failed}
    assert "auto DTI cap = 45.0" in failed and "auto DTI cap+0.1 = 45.1" not in failed
    assert all(r.name in failed for r in report.suite(THIN_FILE))


def test_an_underwriter_that_cites_age_fails_every_fairness_row_and_only_those() -> None:
    def cites_age(case: Case, policy: Policy) -> Decision:
        decision = rules_underwriter(case, policy)
        return changed(decision, policy_basis=(*decision.policy_basis, "applicant age considered"))

    report = run_all(POLICY, cites_age)
    assert all(r.passed for r in report.suite(BOUNDARY))
    assert all(r.passed for r in report.suite(THIN_FILE))
    real_rows = [r for r in report.suite(FAIRNESS) if not r.name.startswith("control:")]
    assert real_rows and not any(r.passed for r in real_rows)


def test_an_underwriter_that_raises_fails_its_rows_without_stopping_the_run() -> None:
    def broken(case: Case, policy: Policy) -> Decision:
        raise RuntimeError("model timed out")

    report = run_all(POLICY, broken)
    assert report.results and not any(r.passed for r in report.results)
    assert "the underwriter raised RuntimeError: model timed out" in report.results[0].detail


def test_every_boundary_point_is_built_under_the_reference_policy() -> None:
    points = list(boundary_points(POLICY))
    assert not [p for p in points if isinstance(p, Unbuildable)]
    assert len(POINTS) == len(points)
