"""Scenarios for every edge of the reference policy, each tested on both sides.

The expected outcomes are read off shared/spec/reference-policy.md, not off the
engine: figures are checked against an independent exact recomputation (conftest's
``oracle_*``) and counteroffers against a brute-force search of the policy's rule.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from conftest import (
    INCOME,
    POLICY,
    auto_case,
    band_of,
    card_case,
    debt_for_dti,
    decide,
    key_factor,
    new_payment,
    oracle_card_payment,
    oracle_dti,
    oracle_ltv,
    oracle_payment,
    with_changes,
)
from credit import InputError, NotInPolicyError, UndecidedCaseError, Underwriting, dumps
from credit.catalogue import default_catalogue

D = Decimal
TERMS = (36, 48, 60, 72)


def reasons(u: Underwriting) -> list[str]:
    return list(u.reason_codes)


# ----------------------------------------------------------------------------- oracles


def best_auto_offer(case: dict[str, Any]) -> tuple[Decimal, int] | None:
    """Brute force of the policy's auto counteroffer rule (step 3), from the text:
    among allowed terms no shorter than requested, the largest multiple of $100, at
    most the amount requested, at least $5,000, passing DTI 45.0 and LTV 120.0; ties
    go to the shortest term."""
    app = case["application"]
    apr = POLICY.pricing("auto", band_of(case["creditReport"]["score"])).apr.value
    requested, value = D(app["requestedAmount"]), D(app["vehicleValue"])
    debt, income = D(app["monthlyDebtPayments"]), D(app["annualIncome"])
    best: tuple[Decimal, int] | None = None
    for term in (t for t in TERMS if t >= app["termMonths"]):
        amount = (requested // 100) * 100
        while amount >= 5000:
            dti = oracle_dti(debt, oracle_payment(amount, apr, term), income)
            if dti <= D("45.0") and oracle_ltv(amount, value) <= D("120.0"):
                if best is None or amount > best[0]:
                    best = (amount, term)
                break
            amount -= 100
    return best


def best_card_offer(case: dict[str, Any]) -> Decimal | None:
    """Brute force of the card counteroffer rule: the largest multiple of $100, at
    least $500, strictly below the line that would have been granted, DTI <= 40.0."""
    app = case["application"]
    pricing = POLICY.pricing("card", band_of(case["creditReport"]["score"]))
    assert pricing.line is not None
    granted = min(pricing.line.value, D(app["requestedLine"]))
    debt, income = D(app["monthlyDebtPayments"]), D(app["annualIncome"])
    line = D(0)
    best = None
    while line + 100 < granted:  # every multiple of 100 strictly below granted
        line += 100
        if line >= 500 and oracle_dti(debt, oracle_card_payment(line, D("3.0")), income) <= D(
            "40.0"
        ):
            best = line
    return best


# ----------------------------------------------------------------------------- score


@pytest.mark.parametrize(
    ("score", "expected"),
    [(599, "decline"), (600, "refer"), (609, "refer"), (610, "approve")],
)
def test_an_auto_applicant_at_each_side_of_the_600_minimum_and_its_margin(
    score: int, expected: str
) -> None:
    """600 is the minimum (passes), 600..609 is within margin (refer), 610 approves."""
    u = decide(auto_case(score=score))
    assert u.decision.decision == expected


@pytest.mark.parametrize(
    ("score", "expected"),
    [(639, "decline"), (640, "refer"), (649, "refer"), (650, "approve")],
)
def test_a_card_applicant_at_each_side_of_the_640_minimum_and_its_margin(
    score: int, expected: str
) -> None:
    u = decide(card_case(score=score))
    assert u.decision.decision == expected


def test_a_score_one_below_the_minimum_is_declined_citing_score_and_minimum() -> None:
    u = decide(auto_case(score=599))
    assert reasons(u) == ["SCORE_BELOW_MINIMUM"]
    assert u.decision.factors == (
        "Your credit score of 599 is below our minimum of 600 for auto loans.",
    )
    assert u.decision.terms is None


def test_a_score_at_the_minimum_is_referred_within_margin_not_declined() -> None:
    u = decide(card_case(score=640))
    assert reasons(u) == ["REFER_SCORE_MARGIN"]
    assert "640" in u.decision.factors[0] and "649" in u.decision.factors[0]


# ----------------------------------------------------------------------------- bands


@pytest.mark.parametrize(
    ("score", "band", "apr"),
    [
        (659, "subprime", "15.99"),
        (660, "near-prime", "9.99"),
        (719, "near-prime", "9.99"),
        (720, "prime", "6.49"),
    ],
)
def test_an_auto_approval_is_priced_at_its_band_rate_on_both_sides_of_each_band_edge(
    score: int, band: str, apr: str
) -> None:
    u = decide(auto_case(score=score))
    d = u.decision
    assert (d.decision, d.score_band) == ("approve", band)
    assert d.terms is not None
    assert (d.terms.apr, d.terms.amount, d.terms.term_months) == (D(apr), D("20000.00"), 60)
    assert d.terms.credit_line is None


@pytest.mark.parametrize(
    ("score", "band", "apr", "line"),
    [
        (659, "subprime", "29.99", "1500.00"),
        (660, "near-prime", "24.99", "5000.00"),
        (719, "near-prime", "24.99", "5000.00"),
        (720, "prime", "19.99", "10000.00"),
    ],
)
def test_a_card_approval_gets_its_band_rate_and_line_on_both_sides_of_each_band_edge(
    score: int, band: str, apr: str, line: str
) -> None:
    u = decide(card_case(score=score, line="20000.00"))
    d = u.decision
    assert (d.decision, d.score_band) == ("approve", band)
    assert d.terms is not None
    assert (d.terms.apr, d.terms.credit_line) == (D(apr), D(line))
    assert d.terms.amount is None and d.terms.term_months is None


@pytest.mark.parametrize(
    ("score", "requested", "granted"),
    [
        (720, "3000.00", "3000.00"),
        (720, "10000.00", "10000.00"),
        (720, "10000.01", "10000.00"),
        (700, "4999.50", "4999.50"),
        (700, "5000.50", "5000.00"),
        (650, "1000.00", "1000.00"),
        (650, "1500.01", "1500.00"),
    ],
)
def test_a_card_line_is_the_band_line_capped_at_the_line_requested(
    score: int, requested: str, granted: str
) -> None:
    u = decide(card_case(score=score, line=requested))
    assert u.decision.decision == "approve"
    assert u.decision.terms is not None
    assert u.decision.terms.credit_line == D(granted)


# ----------------------------------------------------------------------------- DTI


@pytest.mark.parametrize(
    ("dti", "expected"),
    [("43.9", "approve"), ("44.0", "refer"), ("45.0", "refer"), ("45.1", "counteroffer")],
)
def test_an_auto_request_at_each_side_of_the_45_dti_cap_and_its_margin(
    dti: str, expected: str
) -> None:
    case = auto_case(debt=debt_for_dti(dti, "auto"))
    u = decide(case)
    assert u.decision.dti_pct == D(dti)
    assert u.decision.decision == expected
    if expected == "refer":
        assert reasons(u) == ["REFER_DTI_MARGIN"]


@pytest.mark.parametrize(
    ("dti", "expected"),
    [("38.9", "approve"), ("39.0", "refer"), ("40.0", "refer"), ("40.1", "counteroffer")],
)
def test_a_card_request_at_each_side_of_the_40_dti_cap_and_its_margin(
    dti: str, expected: str
) -> None:
    case = card_case(debt=debt_for_dti(dti, "card"))
    u = decide(case)
    assert u.decision.dti_pct == D(dti)
    assert u.decision.decision == expected


@pytest.mark.parametrize(
    ("total_monthly", "stated", "expected"),
    [("4504.99", "45.0", "refer"), ("4505.00", "45.1", "counteroffer")],
)
def test_the_rounded_dti_is_the_figure_compared_with_the_cap(
    total_monthly: str, stated: str, expected: str
) -> None:
    """Exact 45.0499% rounds to 45.0 (at the cap: refer); exact 45.05% rounds half-up
    to 45.1 (over the cap)."""
    payment = new_payment("auto", 750, amount="20000.00", term=60)
    u = decide(auto_case(debt=D(total_monthly) - payment))
    assert (u.decision.dti_pct, u.decision.decision) == (D(stated), expected)


def test_dti_is_rounded_half_up_not_to_even() -> None:
    """2,960.00 debt + 45.00 card payment on 10,000.00 a month is exactly 30.05%:
    half-up gives 30.1 (banker's rounding would give 30.0)."""
    u = decide(card_case(debt="2960.00", line="1500.00"))
    assert u.figures.new_payment == D("45.00")
    assert u.decision.dti_pct == D("30.1")
    u = decide(card_case(debt="2959.99", line="1500.00"))
    assert u.decision.dti_pct == D("30.0")


@pytest.mark.parametrize("product", ["auto", "card"])
def test_an_unscored_case_counts_existing_debt_only_and_is_referred(product: str) -> None:
    case = (auto_case if product == "auto" else card_case)(score=None, debt="1234.56")
    u = decide(case)
    assert u.decision.decision == "refer"
    assert u.decision.score_band == "unscored"
    assert u.figures.new_payment == 0
    assert u.decision.dti_pct == D("12.3")  # 1,234.56 / 10,000.00, no new payment
    assert u.decision.terms is None
    assert reasons(u) == ["REFER_NO_SCORE"]


# ----------------------------------------------------------------------------- LTV


@pytest.mark.parametrize(
    ("amount", "ltv", "expected"),
    [
        ("11790.00", "117.9", "approve"),
        ("11794.99", "117.9", "approve"),
        ("11795.00", "118.0", "refer"),  # 117.95 rounds half-up into the margin
        ("11800.00", "118.0", "refer"),
        ("12000.00", "120.0", "refer"),
        ("12004.99", "120.0", "refer"),
        ("12005.00", "120.1", "counteroffer"),  # 120.05 rounds half-up over the cap
        ("12010.00", "120.1", "counteroffer"),
    ],
)
def test_an_auto_request_at_each_side_of_the_120_ltv_cap_and_its_margin(
    amount: str, ltv: str, expected: str
) -> None:
    u = decide(auto_case(amount=amount, value="10000.00"))
    assert (u.decision.ltv_pct, u.decision.decision) == (D(ltv), expected)
    if expected == "refer":
        assert reasons(u) == ["REFER_LTV_MARGIN"]


def test_a_card_decision_has_no_ltv() -> None:
    assert decide(card_case()).decision.ltv_pct is None


# ----------------------------------------------------------------------------- thin file


def test_no_score_is_referred_never_guessed() -> None:
    u = decide(auto_case(score=None))
    assert u.decision.decision == "refer"
    assert u.decision.factors == ("Referred for review: the credit bureau returned no score.",)


@pytest.mark.parametrize(("tradelines", "expected"), [(2, "refer"), (3, "approve")])
def test_a_file_with_fewer_than_3_tradelines_is_thin_and_referred(
    tradelines: int, expected: str
) -> None:
    u = decide(card_case(tradelines=tradelines))
    assert u.decision.decision == expected
    if expected == "refer":
        assert reasons(u) == ["REFER_FEW_TRADELINES"]
        assert "2 tradelines" in u.decision.factors[0]


@pytest.mark.parametrize(("months", "expected"), [(11, "refer"), (12, "approve")])
def test_a_file_with_under_12_months_of_history_is_thin_and_referred(
    months: int, expected: str
) -> None:
    u = decide(auto_case(history_months=months))
    assert u.decision.decision == expected
    if expected == "refer":
        assert reasons(u) == ["REFER_SHORT_HISTORY"]
        assert "11 months" in u.decision.factors[0]


@pytest.mark.parametrize(("resolved", "expected"), [(False, "refer"), (True, "approve")])
def test_an_unresolved_dispute_is_referred_and_a_resolved_one_is_not(
    resolved: bool, expected: str
) -> None:
    u = decide(auto_case(disputes=[{"tradelineId": "T4", "resolved": resolved}]))
    assert u.decision.decision == expected
    if not resolved:
        assert reasons(u) == ["REFER_UNRESOLVED_DISPUTE"]
        assert "T4" in u.decision.factors[0]


def test_a_thin_file_is_referred_even_when_the_score_is_below_the_minimum() -> None:
    """Step 1 (refer) comes before step 2 (decline)."""
    u = decide(auto_case(score=550, tradelines=1, history_months=6))
    assert u.decision.decision == "refer"
    assert reasons(u) == ["REFER_FEW_TRADELINES", "REFER_SHORT_HISTORY"]


# ----------------------------------------------------------------------------- payments


@pytest.mark.parametrize("score", [650, 700, 750])
@pytest.mark.parametrize("term", TERMS)
def test_the_auto_payment_is_the_amortising_formula_rounded_half_up_to_the_cent(
    score: int, term: int
) -> None:
    apr = POLICY.pricing("auto", band_of(score)).apr.value
    u = decide(auto_case(score=score, amount="23456.78", term=term, value="30000.00"))
    assert u.figures.new_payment == oracle_payment(D("23456.78"), apr, term)


@pytest.mark.parametrize(
    ("amount", "score", "term", "payment"),
    [
        # exact 908.4150000513... : a hair over the half cent, up
        ("28157.00", 700, 36, "908.42"),
        # exact 1347.4149999729... : a hair under the half cent, down
        ("38331.00", 650, 36, "1347.41"),
        # exact 777.3250000507... : up
        ("35844.00", 650, 72, "777.33"),
    ],
)
def test_an_auto_payment_within_a_millionth_of_a_half_cent_rounds_the_right_way(
    amount: str, score: int, term: int, payment: str
) -> None:
    u = decide(auto_case(score=score, amount=amount, term=term, value="40000.00", debt="0.00"))
    assert u.figures.new_payment == D(payment)


def test_a_card_payment_of_exactly_a_half_cent_rounds_half_up() -> None:
    """3% of 1,001.50 is 30.045: half-up gives 30.05 (half-even would give 30.04)."""
    u = decide(card_case(score=680, line="1001.50", debt="0.00"))
    assert u.figures.new_payment == D("30.05")
    assert u.decision.terms is not None and u.decision.terms.credit_line == D("1001.50")


def test_the_card_payment_is_3_percent_of_the_line_assessed_not_requested() -> None:
    u = decide(card_case(score=650, line="9000.00"))
    assert u.figures.assessed_line == D("1500.00")
    assert u.figures.new_payment == D("45.00")


# ----------------------------------------------------------------------------- counteroffers


def test_an_auto_counteroffer_is_the_largest_100_multiple_across_terms_no_shorter() -> None:
    """30,000 over 36 months fails DTI at every term; the offer is the brute-force
    best: a multiple of 100, at most the request, at least 5,000, on a term >= 36."""
    case = auto_case(amount="30000.00", term=36, value="40000.00", debt="4200.00")
    u = decide(case)
    d = u.decision
    assert d.decision == "counteroffer" and d.terms is not None
    assert d.terms.amount is not None and d.terms.term_months is not None
    assert (d.terms.amount, d.terms.term_months) == best_auto_offer(case)
    assert d.terms.amount % 100 == 0
    assert D(5000) <= d.terms.amount <= D(30000)
    assert d.terms.term_months >= 36
    assert d.terms.apr == D("6.49")


def test_an_auto_counteroffer_amount_is_never_above_the_amount_requested() -> None:
    """At 72 months more than 20,000 would pass, but the offer is the request itself."""
    case = auto_case(debt=debt_for_dti("45.1", "auto"))
    u = decide(case)
    assert u.decision.terms is not None
    assert (u.decision.terms.amount, u.decision.terms.term_months) == (D("20000.00"), 72)
    assert best_auto_offer(case) == (D("20000.00"), 72)


def test_an_auto_counteroffer_rounds_down_to_a_100_multiple_of_an_odd_request() -> None:
    u = decide(auto_case(amount="12010.00", value="10000.00"))
    assert u.decision.terms is not None
    assert (u.decision.terms.amount, u.decision.terms.term_months) == (D("12000.00"), 60)


def test_a_counteroffer_on_a_whole_dollar_request_is_still_written_to_the_cent() -> None:
    """A JSON integer amount (12010) is read exactly; the offer is 12000.00."""
    case = with_changes(auto_case(value="10000.00"), "application.requestedAmount", 12010)
    u = decide(case)
    assert u.decision.terms is not None and u.decision.terms.amount is not None
    assert str(u.decision.terms.amount) == "12000.00"
    assert dumps(u.decision.to_wire()["terms"]) == '{"apr":6.49,"amount":12000.00,"termMonths":60}'


@pytest.mark.parametrize("term", TERMS)
def test_an_ltv_only_counteroffer_ties_go_to_the_shortest_term_which_is_the_request(
    term: int,
) -> None:
    """LTV does not depend on the term: 12,000 passes at every term from the request
    on, and the tie goes to the shortest, the term requested."""
    case = auto_case(amount="12500.00", term=term, value="10000.00")
    u = decide(case)
    assert u.decision.decision == "counteroffer"
    assert u.decision.terms is not None
    assert (u.decision.terms.amount, u.decision.terms.term_months) == (D("12000.00"), term)
    assert best_auto_offer(case) == (D("12000.00"), term)


def test_a_request_that_only_a_longer_term_cures_is_offered_at_the_shortest_such_term() -> None:
    """5,000 (the minimum) over 36 months is at DTI 45.1; no smaller amount is allowed;
    over 48 months it passes, and 60 and 72 tie with it, so 48."""
    debt = debt_for_dti("45.1", "auto", amount="5000.00", term=36)
    u = decide(auto_case(amount="5000.00", term=36, debt=debt))
    assert u.decision.decision == "counteroffer"
    assert u.decision.terms is not None
    assert (u.decision.terms.amount, u.decision.terms.term_months) == (D("5000.00"), 48)


def test_an_auto_request_whose_only_cure_is_below_the_5000_minimum_is_declined() -> None:
    """5,000 over 72 months is at exactly 45.05% (45.1); 4,900 would pass, but an offer
    must be at least the 5,000 minimum, so there is no counteroffer."""
    payment = new_payment("auto", 750, amount="5000.00", term=72)
    case = auto_case(amount="5000.00", term=72, debt=D("4505.00") - payment)
    u = decide(case)
    assert u.decision.dti_pct == D("45.1")
    assert u.decision.decision == "decline"
    assert reasons(u) == ["DTI_OVER_CAP"]
    assert best_auto_offer(case) is None
    # the other side: 0.01 less debt and 5,000 at 72 months passes (45.0, refer)
    u = decide(auto_case(amount="5000.00", term=72, debt=D("4504.99") - payment))
    assert u.decision.decision == "refer"


def test_an_auto_request_whose_ltv_no_amount_can_cure_is_declined() -> None:
    """5,000, the smallest amount allowed, is 125% of a 4,000 vehicle."""
    u = decide(auto_case(amount="6000.00", value="4000.00"))
    assert u.decision.decision == "decline"
    assert u.decision.ltv_pct == D("150.0")
    assert u.decision.factors == (
        "The amount you asked to finance is 150.0% of the vehicle's value, "
        "above our maximum of 120.0%.",
    )


def test_a_card_counteroffer_is_the_largest_100_multiple_that_passes_dti() -> None:
    """Prime, 5,000 requested at DTI 40.1: 4,800 (payment 144.00) is at 40.0."""
    case = card_case(debt=debt_for_dti("40.1", "card"))
    u = decide(case)
    assert u.decision.terms is not None
    assert u.decision.terms.credit_line == D("4800.00") == best_card_offer(case)
    assert u.decision.terms.apr == D("19.99")


def test_a_card_counteroffer_below_an_odd_assessed_line_is_the_100_multiple_just_under() -> None:
    """Near-prime, 1,550 requested (assessed 1,550, payment 46.50): 3,959.00 of debt
    puts it at 40.1; 1,500 (payment 45.00) is at 40.0 and strictly below 1,550."""
    case = card_case(score=700, line="1550.00", debt="3959.00")
    u = decide(case)
    assert u.decision.dti_pct == D("40.1")
    assert u.decision.decision == "counteroffer"
    assert u.decision.terms is not None
    assert u.decision.terms.credit_line == D("1500.00") == best_card_offer(case)


def test_a_card_counteroffer_may_be_the_500_minimum_line() -> None:
    """550 requested at 40.1 (payment 16.50); 500 (payment 15.00) is at 40.0."""
    case = card_case(line="550.00", debt="3988.50")
    u = decide(case)
    assert u.decision.dti_pct == D("40.1")
    assert u.decision.decision == "counteroffer"
    assert u.decision.terms is not None
    assert u.decision.terms.credit_line == D("500.00") == best_card_offer(case)


def test_a_card_request_for_the_500_minimum_that_fails_dti_is_declined() -> None:
    """No line is both at least 500 and strictly below the 500 that would be granted."""
    case = card_case(line="500.00", debt="3990.00")
    u = decide(case)
    assert u.decision.dti_pct == D("40.1")
    assert u.decision.decision == "decline"
    assert best_card_offer(case) is None


@pytest.mark.parametrize("product", ["auto", "card"])
def test_a_request_no_adjusted_terms_can_cure_is_declined_with_the_dti_stated(
    product: str,
) -> None:
    case = (auto_case if product == "auto" else card_case)(debt="5000.00")
    u = decide(case)
    d = u.decision
    assert d.decision == "decline" and d.terms is None
    assert reasons(u) == ["DTI_OVER_CAP"]
    cap = "45.0" if product == "auto" else "40.0"
    assert f"{d.dti_pct}%" in d.factors[0] and f"{cap}%" in d.factors[0]


def test_a_counteroffer_decision_states_the_dti_and_ltv_of_the_request_as_made() -> None:
    case = auto_case(amount="30000.00", term=36, value="24000.00", debt="3800.00")
    u = decide(case)
    d = u.decision
    assert d.decision == "counteroffer"
    app = case["application"]
    request_dti = oracle_dti(
        D(app["monthlyDebtPayments"]), oracle_payment(D(30000), D("6.49"), 36), INCOME
    )
    assert d.dti_pct == request_dti
    assert d.ltv_pct == D("125.0")
    assert d.terms is not None
    assert (d.terms.amount, d.terms.term_months) == best_auto_offer(case)
    assert u.counteroffer is not None
    assert u.counteroffer.dti_pct <= D("45.0") < d.dti_pct
    assert u.counteroffer.ltv_pct is not None and u.counteroffer.ltv_pct <= D("120.0")
    assert reasons(u) == ["DTI_OVER_CAP", "LTV_OVER_CAP"]
    assert f"{request_dti}%" in d.factors[0]
    assert "125.0%" in d.factors[1]


def test_a_counteroffer_is_judged_before_the_margin_rule_on_the_request() -> None:
    """A score within margin with a curable DTI failure gets a counteroffer (step 3
    precedes step 4), and the offer's own DTI is never judged against the margin."""
    u = decide(auto_case(score=605, debt=debt_for_dti("45.1", "auto", score=605)))
    assert u.decision.decision == "counteroffer"


# ----------------------------------------------------------------------------- factors


def test_decline_factors_are_score_then_dti_then_ltv_then_bureau_key_factors_at_most_4() -> None:
    kfs = [key_factor("10", "34%"), key_factor("14", "18 months"), key_factor("08", "6")]
    case = auto_case(score=590, amount="6000.00", value="4000.00", debt="5000.00", key_factors=kfs)
    u = decide(case)
    d = u.decision
    assert d.decision == "decline"
    assert reasons(u) == ["SCORE_BELOW_MINIMUM", "DTI_OVER_CAP", "LTV_OVER_CAP", "KF_10"]
    assert len(d.factors) == 4
    assert "590" in d.factors[0] and "600" in d.factors[0]
    assert f"{d.dti_pct}%" in d.factors[1] and "45.0%" in d.factors[1]
    assert "150.0%" in d.factors[2] and "120.0%" in d.factors[2]
    assert "(34%)" in d.factors[3]


def test_key_factors_follow_a_failed_score_in_the_bureaus_order_up_to_the_cap() -> None:
    kfs = [key_factor(c, f"v{c}") for c in ("38", "02", "01", "18", "05")]
    u = decide(card_case(score=600, key_factors=kfs))
    assert reasons(u) == ["SCORE_BELOW_MINIMUM", "KF_38", "KF_02", "KF_01"]
    assert ["(v38)" in u.decision.factors[1], "(v02)" in u.decision.factors[2]] == [True, True]


def test_key_factors_are_not_reasons_when_the_score_was_not_a_principal_reason() -> None:
    kfs = [key_factor("10"), key_factor("14")]
    declined = decide(card_case(debt="5000.00", key_factors=kfs))
    assert reasons(declined) == ["DTI_OVER_CAP"]
    countered = decide(auto_case(amount="12500.00", value="10000.00", key_factors=kfs))
    assert reasons(countered) == ["LTV_OVER_CAP"]
    approved = decide(auto_case(key_factors=kfs))
    assert approved.decision.factors == ()


def test_every_adverse_factor_states_the_applicants_actual_value() -> None:
    kfs = [key_factor("13", "5 months ago")]
    u = decide(auto_case(score=555, key_factors=kfs))
    for factor in u.decision.factors:
        assert any(ch.isdigit() for ch in factor), factor
        assert "internal standards" not in factor.lower()
        assert "score too low" not in factor.lower()
    assert u.decision.factors == (
        "Your credit score of 555 is below our minimum of 600 for auto loans.",
        "Key factor in your credit score: your most recent delinquency is too recent "
        "(5 months ago).",
    )


def test_an_approval_has_no_adverse_action_reasons() -> None:
    u = decide(card_case())
    assert (u.decision.decision, u.decision.factors, reasons(u)) == ("approve", (), [])


def test_a_referral_records_every_reason_it_was_referred() -> None:
    debt = debt_for_dti("44.5", "auto", score=605, amount="11900.00")
    u = decide(auto_case(score=605, amount="11900.00", value="10000.00", debt=debt))
    d = u.decision
    assert d.decision == "refer" and d.terms is None
    assert reasons(u) == ["REFER_SCORE_MARGIN", "REFER_DTI_MARGIN", "REFER_LTV_MARGIN"]
    assert "605" in d.factors[0]
    assert "44.5%" in d.factors[1] and "44.0% to 45.0%" in d.factors[1]
    assert "119.0%" in d.factors[2] and "118.0% to 120.0%" in d.factors[2]
    catalogue = default_catalogue()
    assert all(catalogue[code].kind == "referral" for code in reasons(u))


# ----------------------------------------------------------------------------- confidence


def test_confidence_is_not_a_constant_and_lies_in_0_to_1() -> None:
    cases = [
        auto_case(),
        auto_case(score=610),
        auto_case(score=850, debt="0.00"),
        card_case(score=700),
        card_case(score=639),
        auto_case(debt=debt_for_dti("44.0", "auto")),
        auto_case(debt="5000.00"),
    ]
    values = [decide(c).decision.confidence for c in cases]
    assert all(D(0) <= v <= D(1) for v in values)
    assert len(set(values)) >= 4


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(auto_case(score=600), id="score at the auto minimum"),
        pytest.param(card_case(score=640), id="score at the card minimum"),
        pytest.param(auto_case(debt=debt_for_dti("45.0", "auto")), id="DTI at the auto cap"),
        pytest.param(card_case(debt=debt_for_dti("40.0", "card")), id="DTI at the card cap"),
        pytest.param(auto_case(amount="12000.00", value="10000.00"), id="LTV at the cap"),
        pytest.param(auto_case(score=None), id="no score"),
    ],
)
def test_a_case_on_an_edge_has_confidence_one_half(case: dict[str, Any]) -> None:
    assert decide(case).decision.confidence == D("0.50")


def test_a_case_far_from_every_edge_is_decided_with_high_confidence() -> None:
    u = decide(auto_case(score=820, debt="0.00", amount="10000.00"))
    assert u.decision.decision == "approve"
    assert u.decision.confidence >= D("0.90")


# ----------------------------------------------------------------------------- bad requests


@pytest.mark.parametrize("term", [24, 30, 84])
def test_a_term_the_product_does_not_offer_is_an_input_error_naming_the_field(term: int) -> None:
    with pytest.raises(NotInPolicyError) as info:
        decide(auto_case(term=term))
    assert info.value.field == "application.termMonths"
    assert info.value.case_id == "C-AUTO"
    assert f"term of {term} months is not offered" in str(info.value)


@pytest.mark.parametrize(("amount", "ok"), [("4999.99", False), ("5000.00", True)])
def test_an_auto_amount_under_the_5000_minimum_is_an_input_error(amount: str, ok: bool) -> None:
    case = auto_case(amount=amount, value="10000.00")
    if ok:
        assert decide(case).decision.decision == "approve"
        return
    with pytest.raises(InputError) as info:
        decide(case)
    assert info.value.field == "application.requestedAmount"
    assert "4999.99" in str(info.value)


@pytest.mark.parametrize(("line", "ok"), [("499.99", False), ("500.00", True)])
def test_a_card_line_under_the_500_minimum_is_an_input_error(line: str, ok: bool) -> None:
    case = card_case(line=line)
    if ok:
        assert decide(case).decision.decision == "approve"
        return
    with pytest.raises(InputError) as info:
        decide(case)
    assert info.value.field == "application.requestedLine"


def test_an_unknown_bureau_key_factor_code_is_an_error_naming_its_position() -> None:
    kfs = [key_factor("10"), key_factor("99")]
    with pytest.raises(InputError) as info:
        decide(auto_case(score=590, key_factors=kfs))
    assert info.value.field == "creditReport.keyFactors[1].code"
    assert "'99'" in str(info.value)


def test_an_unknown_key_factor_is_an_error_even_when_the_score_passes() -> None:
    with pytest.raises(InputError) as info:
        decide(auto_case(key_factors=[key_factor("XX")]))
    assert info.value.field == "creditReport.keyFactors[0].code"


@pytest.mark.parametrize(("as_of", "ok"), [("2025-12-31", False), ("2026-01-01", True)])
def test_a_case_dated_before_the_policy_takes_effect_is_an_error(as_of: str, ok: bool) -> None:
    case = auto_case(as_of=as_of)
    if ok:
        assert decide(case).decision.decision == "approve"
        return
    with pytest.raises(InputError) as info:
        decide(case)
    assert info.value.field == "asOf"
    assert "2026-01-01" in str(info.value)


def test_a_score_in_no_band_raises_rather_than_being_decided_by_fallthrough() -> None:
    """A bureau range wider than 300-850 can report a score the bands do not cover."""
    with pytest.raises(UndecidedCaseError):
        decide(auto_case(score=280, score_range=(250, 900)))
