"""The second line (credit.secondline): the methodology derived a second time.

Scenarios at each rule's edges (both sides), the laws its exact arithmetic and its
closed-form counteroffer obey over all inputs (hypothesis, against a plain scan), the
field-by-field comparison with a recorded decision, and the independence the import
contract proves, each shown to fail on a planted defect.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import credit.secondline
import credit.secondline.offer as offer_module
from batch_support import policy_with
from conftest import auto_case, card_case, credit_report, key_factor, with_changes
from credit.errors import NotInPolicyError, PolicyError, UndecidedCaseError
from credit.models import Application, Decision, Terms, parse_case
from credit.policy import Policy, default_policy
from credit.secondline import Derivation, Difference, compare, derive
from credit.secondline.exact import amortised_payment, half_up, rational
from credit.secondline.offer import Offer, cap_bound, find_offer, largest_below, offer_figures

POLICY = default_policy()
ROOT = Path(__file__).resolve().parents[1]
D = Decimal


def derived(doc: dict[str, Any], policy: Policy = POLICY) -> Derivation:
    case = parse_case(doc)
    return derive(
        case.application, case.credit_report, policy, case_id=case.case_id, as_of=case.as_of
    )


def codes_and_values(d: Derivation) -> list[tuple[str, dict[str, str]]]:
    return [(code, dict(values)) for code, values in d.reasons]


def test_the_public_surface_is_pinned() -> None:
    assert credit.secondline.__all__ == [
        "Derivation",
        "DerivedFigures",
        "Difference",
        "Offer",
        "Reason",
        "compare",
        "derive",
    ]


# ---------------------------------------------------------------- caps and margins


def test_a_card_applicant_with_dti_exactly_at_the_40_cap_is_referred_within_margin() -> None:
    # income 120,000: DTI % is (debt + payment) / 100; the prime line 5,000 pays 150.00
    d = derived(card_case(debt="3850.00"))
    assert (d.decision, d.step, d.dti_pct) == ("refer", "referWithinMargin", D("40.0"))
    assert codes_and_values(d) == [
        ("REFER_DTI_MARGIN", {"dtiPct": "40.0", "marginLowDtiPct": "39.0", "maxDtiPct": "40.0"})
    ]
    assert d.confidence == D("0.50") and d.terms is None


def test_a_card_applicant_one_tenth_over_the_cap_is_offered_the_largest_passing_line() -> None:
    d = derived(card_case(debt="3860.00"))
    assert (d.decision, d.dti_pct) == ("counteroffer", D("40.1"))
    # 4,800 pays 144.00: DTI 40.04 states 40.0; 4,900 pays 147.00: 40.07 states 40.1
    assert d.terms == Terms(apr=D("19.99"), credit_line=D("4800.00"))
    assert d.offer is not None and (d.offer_payment, d.offer.dti_pct) == (D("144.00"), D("40.0"))
    assert codes_and_values(d) == [
        ("DTI_OVER_CAP", {"dtiPct": "40.1", "maxDtiPct": "40.0", "productName": "credit cards"})
    ]
    assert d.factors == (
        "Your debt-to-income ratio of 40.1% is above our maximum of 40.0% for credit cards.",
    )


@pytest.mark.parametrize(
    ("score", "line", "assessed"),
    [(750, "12000.00", "10000.00"), (750, "9900.00", "9900.00"), (700, "12000.00", "5000.00")],
)
def test_a_card_line_is_the_bands_line_capped_at_the_line_requested(
    score: int, line: str, assessed: str
) -> None:
    d = derived(card_case(line=line, score=score, debt="500.00"))
    assert d.figures.assessed_line == D(assessed)
    assert d.decision == "approve" and d.terms is not None
    assert d.terms.credit_line == D(assessed)


@pytest.mark.parametrize(("score", "decision"), [(649, "refer"), (650, "approve")])
def test_a_card_score_at_the_top_of_the_margin_is_referred_and_one_above_is_approved(
    score: int, decision: str
) -> None:
    d = derived(card_case(score=score, debt="500.00"))
    assert d.decision == decision
    if decision == "refer":
        assert codes_and_values(d) == [
            ("REFER_SCORE_MARGIN", {"score": "649", "minScore": "640", "marginTopScore": "649"})
        ]


@pytest.mark.parametrize(
    ("score", "band"), [(659, "subprime"), (660, "near-prime"), (720, "prime")]
)
def test_a_score_on_a_band_floor_is_in_that_band_and_one_under_is_not(
    score: int, band: str
) -> None:
    assert derived(auto_case(score=score)).score_band == band


def test_an_auto_request_over_the_ltv_cap_is_offered_the_largest_amount_at_the_term_asked() -> None:
    # LTV binds whatever the term: 24,000 on 20,000 is 120.0; every term ties, the
    # shortest allowed term no shorter than the one asked is the one asked
    d = derived(auto_case(amount="30000.00", value="20000.00", debt="500.00"))
    assert d.decision == "counteroffer" and d.ltv_pct == D("150.0")
    assert d.terms == Terms(apr=D("6.49"), amount=D("24000.00"), term_months=60)
    assert codes_and_values(d) == [("LTV_OVER_CAP", {"ltvPct": "150.0", "maxLtvPct": "120.0"})]


def test_an_auto_request_over_the_dti_cap_at_36_months_is_offered_the_amount_at_48() -> None:
    # 20,000 pays 612.89 over 36 months (DTI 46.1) and 474.21 over 48 (44.7): the full
    # amount passes at 48, 60 and 72, and the tie goes to the shortest of them
    d = derived(auto_case(amount="20000.00", term=36, debt="4000.00"))
    assert d.decision == "counteroffer" and d.dti_pct == D("46.1")
    assert d.terms == Terms(apr=D("6.49"), amount=D("20000.00"), term_months=48)
    assert d.offer_payment == D("474.21")


def test_a_case_with_no_score_is_referred_unscored_with_existing_debt_only() -> None:
    d = derived(auto_case(score=None, debt="1000.00"))
    assert (d.decision, d.score_band, d.dti_pct, d.terms) == ("refer", "unscored", D("10.0"), None)
    assert d.figures.new_payment == D("0.00") and d.figures.apr is None
    assert d.reason_codes == ("REFER_NO_SCORE",) and d.confidence == D("0.50")


@pytest.mark.parametrize(
    ("report", "code", "values"),
    [
        ({"tradelines": 2}, "REFER_FEW_TRADELINES", {"tradelines": "2", "minTradelines": "3"}),
        (
            {"history_months": 11},
            "REFER_SHORT_HISTORY",
            {"historyMonths": "11", "minHistoryMonths": "12"},
        ),
        (
            {"disputes": [{"tradelineId": "T9", "resolved": False}]},
            "REFER_UNRESOLVED_DISPUTE",
            {"disputedTradelines": "T9"},
        ),
    ],
)
def test_an_unusable_file_is_referred_with_the_reason_stated(
    report: dict[str, Any], code: str, values: dict[str, str]
) -> None:
    d = derived(auto_case(**report))
    assert (d.decision, d.step) == ("refer", "referUnusableFile")
    assert codes_and_values(d) == [(code, values)]


@pytest.mark.parametrize("report", [{"tradelines": 3}, {"history_months": 12}])
def test_a_file_at_the_thin_file_minimums_is_decided_on_its_merits(report: dict[str, Any]) -> None:
    assert derived(auto_case(**report)).decision == "approve"


# ---------------------------------------------------------------- reasons


def test_a_score_under_the_minimum_states_the_score_then_the_bureaus_key_factors_up_to_four() -> (
    None
):
    factors = [key_factor(c, f"v{c}") for c in ("10", "18", "08", "14", "01")]
    d = derived(auto_case(score=590, key_factors=factors))
    assert d.decision == "decline"
    assert codes_and_values(d) == [
        ("SCORE_BELOW_MINIMUM", {"score": "590", "minScore": "600", "productName": "auto loans"}),
        ("KF_10", {"keyFactorValue": "v10"}),
        ("KF_18", {"keyFactorValue": "v18"}),
        ("KF_08", {"keyFactorValue": "v08"}),
    ]


def test_the_bureaus_key_factors_are_not_stated_where_the_score_was_no_reason() -> None:
    d = derived(card_case(debt="9000.00", key_factors=[key_factor("10")]))
    assert d.decision == "decline" and d.reason_codes == ("DTI_OVER_CAP",)


def test_the_policys_factor_order_and_reason_count_are_followed(tmp_path: Path) -> None:
    policy = policy_with(
        {
            "factorOrder": ["bureauKeyFactors", "ltvOverCap", "dtiOverCap", "scoreBelowMinimum"],
            "maxReasons": 2,
        },
        tmp_path,
    )
    doc = auto_case(score=590, debt="9000.00", value="10000.00", key_factors=[key_factor("10")])
    assert derived(doc, policy).reason_codes == ("KF_10", "LTV_OVER_CAP")
    assert derived(doc).reason_codes == (
        "SCORE_BELOW_MINIMUM",
        "DTI_OVER_CAP",
        "LTV_OVER_CAP",
        "KF_10",
    )


def test_a_step_order_that_would_decline_a_thin_file_never_reaches_the_second_line(
    tmp_path: Path,
) -> None:
    steps = ["declineHardFailure", "referUnusableFile", "counteroffer", "referWithinMargin"]
    with pytest.raises(PolicyError) as info:
        policy_with({"steps": [*steps, "approve"]}, tmp_path)
    assert info.value.key == "steps.value"


@pytest.mark.parametrize(
    ("doc", "decision"),
    [
        (auto_case(score=590, tradelines=2), "refer"),
        (auto_case(score=590), "decline"),
        (auto_case(amount="30000.00", value="20000.00", debt="500.00"), "counteroffer"),
    ],
)
def test_the_other_order_the_methodology_allows_decides_alike(
    tmp_path: Path, doc: dict[str, Any], decision: str
) -> None:
    steps = ["referUnusableFile", "counteroffer", "declineHardFailure", "referWithinMargin"]
    policy = policy_with({"steps": [*steps, "approve"]}, tmp_path)
    assert derived(doc, policy).decision == derived(doc).decision == decision


# ---------------------------------------------------------------- confidence


@pytest.mark.parametrize(
    ("debt", "confidence"),
    [("3850.00", "0.50"), ("3750.00", "0.75"), ("3450.00", "0.90")],
)
def test_the_confidence_is_a_half_on_an_edge_three_quarters_a_margin_away_nine_tenths_at_four(
    debt: str, confidence: str
) -> None:
    # card DTI 40.0, 39.0, 36.0 against the 40.0 cap and its 1.0 margin; score far off
    assert derived(card_case(debt=debt, score=800)).confidence == D(confidence)


# ---------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        (auto_case(as_of="2025-12-31"), "asOf"),
        (auto_case(term=40), "application.termMonths"),
        (auto_case(amount="4999.99", value="10000.00"), "application.requestedAmount"),
        (card_case(line="499.99"), "application.requestedLine"),
        (
            auto_case(key_factors=[key_factor("10"), key_factor("99")]),
            "creditReport.keyFactors[1].code",
        ),
    ],
)
def test_a_request_the_policy_has_no_rule_for_is_refused_naming_the_field(
    doc: dict[str, Any], field: str
) -> None:
    with pytest.raises(NotInPolicyError) as err:
        derived(doc)
    assert err.value.field == field and err.value.case_id == doc["caseId"]


@pytest.mark.parametrize(("score", "refused"), [(299, True), (300, False)])
def test_a_score_under_every_bands_floor_is_undecided_and_the_floor_itself_is_banded(
    score: int, refused: bool
) -> None:
    doc = with_changes(
        auto_case(), "creditReport", credit_report(score=score, score_range=(250, 850))
    )
    if not refused:
        assert derived(doc).score_band == "subprime"
        return
    with pytest.raises(UndecidedCaseError) as err:
        derived(doc)
    assert err.value.rule == "scoreBands"


# ---------------------------------------------------------------- the counteroffer, solved


def _plain_scan(
    app: Application, policy: Policy, apr: Decimal, line: Decimal | None
) -> Offer | None:
    """The policy text's search, literally: every multiple of the step in range, every
    term no shorter than the one asked, the largest passing amount, ties shortest."""
    p = f"products.{app.product}"
    step: Decimal = policy[f"{p}.counterofferStep"].value
    best: Offer | None = None
    if app.product == "auto":
        assert app.requested_amount is not None and app.term_months is not None
        terms = [t for t in policy[f"{p}.termsAllowed"].value if t >= app.term_months]
        sizes = [step * k for k in range(0, int(app.requested_amount / step) + 1)]
        sizes = [s for s in sizes if policy[f"{p}.minAmount"].value <= s <= app.requested_amount]
    else:
        assert line is not None
        terms = [None]  # type: ignore[list-item]
        sizes = [step * k for k in range(0, int(line / step) + 2)]
        sizes = [s for s in sizes if policy[f"{p}.minLine"].value <= s < line]
    for term in terms:
        for size in sizes:
            o = offer_figures(app, policy, apr, size, term)
            passes = o.dti_pct <= policy[f"{p}.maxDtiPct"].value and (
                o.ltv_pct is None or o.ltv_pct <= policy[f"{p}.maxLtvPct"].value
            )
            if passes and (best is None or size > (best.amount or best.credit_line or 0)):
                best = o
    return best


def _cents(low: int, high: int) -> st.SearchStrategy[Decimal]:
    return st.integers(low * 100, high * 100).map(lambda c: D(c).scaleb(-2))


@settings(max_examples=120, deadline=None)
@given(
    income=_cents(20_000, 200_000),
    debt_share=st.integers(0, 60),
    amount=_cents(5_000, 14_000),
    term=st.sampled_from((36, 48, 60, 72)),
    value=_cents(3_000, 16_000),
    apr=st.sampled_from((D("6.49"), D("9.99"), D("15.99"), D("0.00"))),
)
def test_the_closed_form_auto_counteroffer_is_the_plain_scans_for_any_request(
    income: Decimal, debt_share: int, amount: Decimal, term: int, value: Decimal, apr: Decimal
) -> None:
    debt = (income / 12 * debt_share / 100).quantize(D("0.01"))
    app = Application(
        product="auto",
        annual_income=income,
        monthly_debt_payments=debt,
        requested_amount=amount,
        term_months=term,
        vehicle_value=value,
    )
    assert find_offer(app, POLICY, apr, None, case_id="H") == _plain_scan(app, POLICY, apr, None)


@settings(max_examples=120, deadline=None)
@given(
    income=_cents(12_000, 150_000),
    debt_share=st.integers(0, 60),
    line=_cents(500, 10_000),
    pct=st.sampled_from((D("3.0"), D("2.75"), D("0"))),
)
def test_the_closed_form_card_counteroffer_is_the_plain_scans_for_any_request(
    income: Decimal, debt_share: int, line: Decimal, pct: Decimal, tmp_path_factory: Any
) -> None:
    policy = _card_pct_policy(pct, tmp_path_factory)
    debt = (income / 12 * debt_share / 100).quantize(D("0.01"))
    app = Application(
        product="card", annual_income=income, monthly_debt_payments=debt, requested_line=line
    )
    apr = D("19.99")
    assert find_offer(app, policy, apr, line, case_id="H") == _plain_scan(app, policy, apr, line)


_POLICIES: dict[Decimal, Policy] = {}


def _card_pct_policy(pct: Decimal, factory: Any) -> Policy:
    if pct not in _POLICIES:
        directory = factory.mktemp("pct")
        _POLICIES[pct] = policy_with({"products.card.paymentPctOfLine": str(pct)}, directory)
    return _POLICIES[pct]


@pytest.mark.parametrize(
    ("doc", "rule"),
    [
        (
            auto_case(amount="30000.00", value="20000.00", debt="500.00"),
            "products.auto.counterofferStep",
        ),
        (card_case(debt="3860.00"), "products.card.counterofferStep"),
    ],
)
def test_a_closed_form_bound_the_forward_formulas_contradict_is_undecided_never_offered(
    doc: dict[str, Any], rule: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert derived(doc).decision == "counteroffer"
    monkeypatch.setattr(offer_module, "largest_below", lambda b, u: largest_below(b, u) + 1)
    with pytest.raises(UndecidedCaseError) as err:
        derived(doc)
    assert err.value.rule == rule


# ---------------------------------------------------------------- exact arithmetic


@given(
    st.decimals(
        allow_nan=False, allow_infinity=False, min_value=-(10**9), max_value=10**9, places=6
    ),
    st.sampled_from((D("0.01"), D("0.1"), D("1"))),
)
def test_half_up_rounds_exactly_as_decimal_rounds_half_up(value: Decimal, quantum: Decimal) -> None:
    got = half_up(rational(value), quantum)
    want = value.quantize(quantum, rounding=ROUND_HALF_UP)
    assert got == want and got.as_tuple().exponent == want.as_tuple().exponent


@given(
    st.fractions(min_value=0, max_value=200, max_denominator=10**6),
    st.sampled_from((D("45.0"), D("43.55"), D("120.0"), D("38.5"))),
    st.sampled_from((D("0.1"), D("0.01"), D("1"))),
)
def test_a_figure_rounds_to_at_most_the_cap_exactly_when_it_is_under_the_caps_bound(
    raw: Fraction, cap: Decimal, quantum: Decimal
) -> None:
    assert (half_up(raw, quantum) <= cap) == (raw < cap_bound(cap, quantum))


@given(
    st.fractions(min_value=-1000, max_value=1000),
    st.fractions(min_value=Fraction(1, 1000), max_value=100),
)
def test_largest_below_is_the_largest_whole_multiple_strictly_under_the_bound(
    bound: Fraction, unit: Fraction
) -> None:
    k = largest_below(bound, unit)
    assert k * unit < bound <= (k + 1) * unit


def test_a_payment_is_the_amortising_formula_rounded_once() -> None:
    # 20,000 at 6.49% over 60 months: 391.2306... -> 391.23; at 0% over 40: 500.00 exactly
    assert amortised_payment(D("20000.00"), D("6.49"), 60, D("0.01")) == D("391.23")
    assert amortised_payment(D("20000.00"), D("0"), 40, D("0.01")) == D("500.00")
    assert amortised_payment(D("20000.20"), D("0"), 40, D("0.01")) == D("500.01")  # half-up


# ---------------------------------------------------------------- compare


def _recorded(d: Derivation) -> Decision:
    """The Decision an underwriter that agrees with the derivation records."""
    return Decision(
        product=d.product,  # type: ignore[arg-type]
        decision=d.decision,  # type: ignore[arg-type]
        terms=d.terms,
        score_band=d.score_band,  # type: ignore[arg-type]
        dti_pct=d.dti_pct,
        ltv_pct=d.ltv_pct,
        policy_basis=("policy=reference",),
        factors=d.factors,
        confidence=d.confidence,
    )


AUTO_OFFER = derived(
    auto_case(score=590, debt="9000.00", value="10000.00", key_factors=[key_factor("10")])
)
CARD_OFFER = derived(card_case(debt="3860.00"))
AUTO_COUNTER = derived(auto_case(amount="20000.00", term=36, debt="4000.00"))


def test_a_recorded_decision_that_agrees_with_its_derivation_has_no_difference() -> None:
    for d in (AUTO_OFFER, CARD_OFFER, AUTO_COUNTER):
        assert compare(_recorded(d), d.reasons, d) == []
        assert compare(_recorded(d), None, d) == []


@pytest.mark.parametrize(
    ("derivation", "update", "field", "recorded"),
    [
        (AUTO_COUNTER, {"decision": "decline", "terms": None}, "decision", "decline"),
        (AUTO_COUNTER, {"score_band": "near-prime"}, "scoreBand", "near-prime"),
        (AUTO_COUNTER, {"dti_pct": D("46.0")}, "dtiPct", D("46.0")),
        (AUTO_COUNTER, {"ltv_pct": D("80.1")}, "ltvPct", D("80.1")),
        (AUTO_COUNTER, {"confidence": D("0.51")}, "confidence", D("0.51")),
        (
            AUTO_COUNTER,
            {"terms": Terms(apr=D("6.49"), amount=D("19900.00"), term_months=48)},
            "terms.amount",
            D("19900.00"),
        ),
        (
            AUTO_COUNTER,
            {"terms": Terms(apr=D("9.99"), amount=D("20000.00"), term_months=48)},
            "terms.apr",
            D("9.99"),
        ),
        (
            AUTO_COUNTER,
            {"terms": Terms(apr=D("6.49"), amount=D("20000.00"), term_months=72)},
            "terms.termMonths",
            72,
        ),
        (
            CARD_OFFER,
            {"terms": Terms(apr=D("19.99"), credit_line=D("4900.00"))},
            "terms.creditLine",
            D("4900.00"),
        ),
    ],
)
def test_each_differing_field_is_named_with_both_values(
    derivation: Derivation, update: dict[str, Any], field: str, recorded: Any
) -> None:
    decision = _recorded(derivation).model_copy(update=update)
    diffs = compare(decision, derivation.reasons, derivation)
    derived_value = {
        "decision": derivation.decision,
        "scoreBand": derivation.score_band,
        "dtiPct": derivation.dti_pct,
        "ltvPct": derivation.ltv_pct,
        "confidence": derivation.confidence,
    }.get(field)
    if field.startswith("terms."):
        assert derivation.terms is not None
        name = {
            "amount": "amount",
            "apr": "apr",
            "termMonths": "term_months",
            "creditLine": "credit_line",
        }
        derived_value = getattr(derivation.terms, name[field.removeprefix("terms.")])
    assert Difference(field, recorded, derived_value) in diffs
    assert all(d.field == field or d.field.startswith("terms.") for d in diffs)


def _reasons_with(
    d: Derivation, i: int, code: str | None = None, **values: str
) -> list[tuple[str, Mapping[str, str]]]:
    out = [(c, dict(v)) for c, v in d.reasons]
    c, v = out[i]
    out[i] = (code or c, {**v, **values})
    return out


def test_a_stated_value_that_differs_is_named_by_reason_and_value() -> None:
    reasons = _reasons_with(AUTO_OFFER, 1, dtiPct="61.0")
    assert compare(_recorded(AUTO_OFFER), reasons, AUTO_OFFER) == [
        Difference("reasons[1].values.dtiPct", "61.0", AUTO_OFFER.reasons[1][1]["dtiPct"])
    ]


def test_reasons_in_another_order_differ_in_their_codes_and_factor_texts() -> None:
    decision = _recorded(AUTO_OFFER)
    swapped = decision.model_copy(update={"factors": decision.factors[::-1]})
    reasons = list(AUTO_OFFER.reasons)[::-1]
    fields = [d.field for d in compare(swapped, reasons, AUTO_OFFER)]
    assert fields == ["reasonCodes", "factors[0]", "factors[1]", "factors[2]", "factors[3]"]


def test_a_dropped_reason_leaves_the_last_factor_recorded_as_none() -> None:
    decision = _recorded(AUTO_OFFER)
    dropped = decision.model_copy(update={"factors": decision.factors[:-1]})
    diffs = compare(dropped, list(AUTO_OFFER.reasons)[:-1], AUTO_OFFER)
    assert [d.field for d in diffs] == ["reasonCodes", "factors[3]"]
    assert diffs[1] == Difference("factors[3]", None, AUTO_OFFER.factors[3])


def test_any_approved_wording_of_the_reason_is_accepted_and_any_other_text_is_not() -> None:
    second = CARD_OFFER.wordings[0][1]
    assert second.startswith("Your monthly debt payments, including the new payment, are 40.1%")
    decision = _recorded(CARD_OFFER)
    assert compare(decision.model_copy(update={"factors": (second,)}), None, CARD_OFFER) == []
    generic = decision.model_copy(update={"factors": ("Your debt is too high.",)})
    assert compare(generic, None, CARD_OFFER) == [
        Difference("factors[0]", "Your debt is too high.", CARD_OFFER.factors[0])
    ]


def test_with_no_recorded_codes_only_the_factor_texts_are_compared() -> None:
    wrong_codes = _reasons_with(CARD_OFFER, 0, code="LTV_OVER_CAP")
    assert [d.field for d in compare(_recorded(CARD_OFFER), wrong_codes, CARD_OFFER)] == [
        "reasonCodes"
    ]
    assert compare(_recorded(CARD_OFFER), None, CARD_OFFER) == []


# ---------------------------------------------------------------- independence


def _lint(root: Path, contract: str) -> subprocess.CompletedProcess[str]:
    """lint-imports, one contract, on the tree under ``root``."""
    return subprocess.run(
        [str(Path(sys.executable).with_name("lint-imports")), "--no-cache", "--contract", contract],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root / "src")},
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize(
    ("contract", "path", "planted"),
    [
        (
            "secondline-independent",
            "secondline/exact.py",
            "from credit.underwriting import capacity",
        ),
        ("secondline-independent", "secondline/derive.py", "import credit.evals.oracle"),
        ("secondline-independent", "secondline/offer.py", "from credit.batch import plan"),
        (
            "evals-independent",
            "evals/oracle.py",
            "from credit.underwriting.capacity import dti_pct",
        ),
        ("evals-independent", "evals/cases.py", "import credit.underwriters.rules"),
    ],
)
def test_the_import_contracts_keep_the_checks_apart_and_break_on_a_planted_import(
    contract: str, path: str, planted: str, tmp_path: Path
) -> None:
    kept = _lint(ROOT, contract)
    assert kept.returncode == 0, kept.stdout
    shutil.copytree(ROOT / "src", tmp_path / "src", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / ".importlinter", tmp_path / ".importlinter")
    target = tmp_path / "src" / "credit" / path
    target.write_text(target.read_text("utf-8") + f"\n{planted}  # noqa\n", "utf-8")
    broken = _lint(tmp_path, contract)
    assert broken.returncode != 0
    assert "Broken contracts" in broken.stdout, broken.stdout


# ------------------------------------------------------------------ asked twice


def test_a_case_derived_twice_in_one_review_with_the_same_file_is_derived_once() -> None:
    """The Keystone review asks for a case's derivation twice (Equipoise's weighing
    against the policy, then Backstop): inside shared_derivations the second, with the
    same file read apart (equal, not the same objects), gets the first's Derivation;
    another policy object, another catalogue object or a changed file is derived
    afresh, and gives what a first derivation gives; outside it, every call derives."""
    from credit.catalogue import default_catalogue
    from credit.policy import default_policy_path, load_policy
    from credit.secondline.derive import shared_derivations

    doc = auto_case(case_id="C-TWICE")
    assert derived(doc) is not derived(doc)  # no review: each call derives
    with shared_derivations():
        first = derived(doc)
        assert derived(doc) is first
        again = load_policy(default_policy_path())  # the same policy, another object
        assert derived(doc, again) is not first and derived(doc, again) == first
        case = parse_case(doc)
        catalogue = default_catalogue().model_copy()
        fresh = derive(
            case.application,
            case.credit_report,
            POLICY,
            case_id="C-TWICE",
            as_of=case.as_of,
            catalogue=catalogue,
        )
        assert fresh is not first and fresh == first
        poorer = with_changes(doc, "application.annualIncome", "12000.00")
        changed = derived(poorer)
        assert changed != first
    assert changed == derived(poorer)
