"""The bundled example cases: reproducible, valid, decided, and on every policy edge.

Every threshold is read from the default policy; every edge is checked on the
figures the underwriter actually used (``Underwriting.figures``), not on the inputs.
"""

from __future__ import annotations

import random
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pytest

from credit.canonical import dumps, loads
from credit.catalogue import default_catalogue
from credit.examples import AS_OF, generate_cases, main
from credit.models import Case, parse_case
from credit.policy import BANDS, Policy, default_policy
from credit.underwriting import Underwriting, decide_case

BUNDLED = Path(__file__).resolve().parents[1] / "examples" / "cases.jsonl"
PRODUCTS = ("auto", "card")
OUTCOMES = ("approve", "decline", "counteroffer", "refer")

Decided = list[tuple[Case, Underwriting]]


@pytest.fixture(scope="module")
def policy() -> Policy:
    return default_policy()


@pytest.fixture(scope="module")
def decided(policy: Policy) -> Decided:
    out: Decided = []
    for line in BUNDLED.read_text(encoding="utf-8").splitlines():
        case = parse_case(loads(line))
        out.append((case, decide_case(case, policy)))
    return out


def _pct(policy: Policy, key: str) -> Decimal:
    value: Decimal = policy[key].value
    return value


def _clear_of_score(u: Underwriting, policy: Policy) -> bool:
    f = u.figures
    return f.score is not None and f.score > f.min_score + policy["margins.scorePoints"].value


def _clear_of_dti(u: Underwriting, policy: Policy) -> bool:
    f = u.figures
    return f.dti_pct < f.max_dti_pct - _pct(policy, "margins.dtiPct")


def _clear_of_ltv(u: Underwriting, policy: Policy) -> bool:
    f = u.figures
    if f.ltv_pct is None or f.max_ltv_pct is None:
        return True
    return f.ltv_pct < f.max_ltv_pct - _pct(policy, "margins.ltvPct")


def _automated(u: Underwriting) -> bool:
    """Decided past step 1 (not referred for no score, a thin file or a dispute)."""
    return u.step != "referUnusableFile"


# ---------------------------------------------------------------- the file itself


def test_the_bundled_cases_are_exactly_what_the_seeded_generator_produces() -> None:
    expected = "".join(dumps(case) + "\n" for case in generate_cases())
    assert BUNDLED.read_bytes() == expected.encode("utf-8")


def test_the_command_line_writes_the_bundled_file_byte_for_byte(tmp_path: Path) -> None:
    out = tmp_path / "cases.jsonl"
    assert main(["--seed", "2026", "--count", "600", "--out", str(out)]) == 0
    assert out.read_bytes() == BUNDLED.read_bytes()


def test_there_are_at_least_500_cases_numbered_in_order(decided: Decided) -> None:
    assert len(decided) >= 500
    assert [c.case_id for c, _ in decided] == [f"C-{n:06d}" for n in range(1, len(decided) + 1)]


def test_every_bundled_case_validates_and_is_decided_under_the_default_policy(
    decided: Decided,
) -> None:
    for case, u in decided:
        assert u.case_id == case.case_id
        assert u.decision.decision in OUTCOMES
        assert u.decision.product == case.application.product


def test_the_same_seed_gives_the_same_cases_and_another_seed_different_ones() -> None:
    assert generate_cases(7, 120) == generate_cases(7, 120)
    assert generate_cases(7, 120) != generate_cases(8, 120)
    assert len(generate_cases(7, 120)) == 120


def test_the_generator_ignores_the_global_random_state() -> None:
    random.seed(1)
    first = generate_cases(11, 200)
    random.seed(2)
    assert generate_cases(11, 200) == first


def test_a_count_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="count must be at least 1, got 0"):
        generate_cases(1, 0)


# ---------------------------------------------------------------- realism and format


def test_every_key_factor_is_a_catalogued_bureau_code_stating_an_ascii_value(
    decided: Decided,
) -> None:
    known = set(default_catalogue().by_bureau_code)
    for case, _ in decided:
        for kf in case.credit_report.key_factors:
            assert kf.code in known
            assert kf.text.isascii() and kf.value.isascii()
    assert BUNDLED.read_bytes().isascii()


def test_every_scored_file_is_dated_before_the_case_and_on_the_bureau_scale(
    decided: Decided,
) -> None:
    for case, _ in decided:
        report = case.credit_report
        assert case.as_of == AS_OF
        assert report.score_range == (300, 850)
        if report.score is not None:
            assert report.score_date is not None and report.score_date < case.as_of
            assert report.key_factors
        else:
            assert not report.key_factors


def test_requests_are_ones_the_products_offer_with_money_in_cents(
    decided: Decided, policy: Policy
) -> None:
    auto, card = policy.product("auto"), policy.product("card")
    assert auto.min_amount and auto.terms_allowed and card.min_line
    for case, _ in decided:
        app = case.application
        assert app.annual_income.as_tuple().exponent == -2
        if app.product == "auto":
            assert app.requested_amount is not None and app.vehicle_value is not None
            assert app.requested_amount >= auto.min_amount.value
            assert app.term_months in auto.terms_allowed.value
            assert app.requested_amount.as_tuple().exponent == -2
        else:
            assert app.requested_line is not None
            assert app.requested_line >= card.min_line.value


def test_most_cases_carry_monitoring_data_with_a_mix_of_values(decided: Decided) -> None:
    monitored = [c.monitoring for c, _ in decided if c.monitoring is not None]
    assert len(monitored) >= len(decided) * 3 // 4
    assert len({m.race for m in monitored}) >= 5
    assert len({m.sex for m in monitored}) >= 3
    assert any(m.public_assistance_income for m in monitored)
    assert all(m.age is not None and m.age >= 18 for m in monitored)


def test_an_applicants_age_leaves_room_for_their_credit_history(decided: Decided) -> None:
    for case, _ in decided:
        if case.monitoring is not None and case.monitoring.age is not None:
            assert case.credit_report.history_months <= (case.monitoring.age - 18 + 1) * 12


# ---------------------------------------------------------------- outcome coverage


@pytest.mark.parametrize("outcome", OUTCOMES)
@pytest.mark.parametrize("product", PRODUCTS)
def test_each_product_reaches_each_outcome(decided: Decided, product: str, outcome: str) -> None:
    hits = [
        u for c, u in decided if c.application.product == product and u.decision.decision == outcome
    ]
    assert len(hits) >= 5


def test_ordinary_approvals_are_the_largest_outcome(decided: Decided) -> None:
    counts = Counter(u.decision.decision for _, u in decided)
    assert counts.most_common(1)[0][0] == "approve"


# ---------------------------------------------------------------- step 1: unusable files


@pytest.mark.parametrize("product", PRODUCTS)
def test_files_with_no_score_are_present_and_referred(decided: Decided, product: str) -> None:
    hits = [
        u for c, u in decided if c.application.product == product and c.credit_report.score is None
    ]
    assert len(hits) >= 3
    assert all(u.decision.decision == "refer" and "REFER_NO_SCORE" in u.reason_codes for u in hits)


@pytest.mark.parametrize("product", PRODUCTS)
def test_too_few_tradelines_refers_and_the_minimum_count_does_not(
    decided: Decided, policy: Policy, product: str
) -> None:
    floor = policy["thinFile.minTradelines"].value
    mine = [(c, u) for c, u in decided if c.application.product == product]
    under = [u for c, u in mine if c.credit_report.tradelines == floor - 1]
    at = [u for c, u in mine if c.credit_report.tradelines == floor]
    assert under and at
    assert all("REFER_FEW_TRADELINES" in u.reason_codes for u in under)
    assert all("REFER_FEW_TRADELINES" not in u.reason_codes for u in at)
    assert any(_automated(u) for u in at)


@pytest.mark.parametrize("product", PRODUCTS)
def test_too_short_a_history_refers_and_the_minimum_history_does_not(
    decided: Decided, policy: Policy, product: str
) -> None:
    floor = policy["thinFile.minHistoryMonths"].value
    mine = [(c, u) for c, u in decided if c.application.product == product]
    under = [u for c, u in mine if c.credit_report.history_months == floor - 1]
    at = [u for c, u in mine if c.credit_report.history_months == floor]
    assert under and at
    assert all("REFER_SHORT_HISTORY" in u.reason_codes for u in under)
    assert all("REFER_SHORT_HISTORY" not in u.reason_codes for u in at)
    assert any(_automated(u) for u in at)


@pytest.mark.parametrize("product", PRODUCTS)
def test_unresolved_disputes_are_present_and_referred_while_resolved_ones_are_not(
    decided: Decided, product: str
) -> None:
    mine = [(c, u) for c, u in decided if c.application.product == product]
    unresolved = [u for c, u in mine if c.credit_report.unresolved_disputes]
    resolved_only = [
        u for c, u in mine if c.credit_report.disputes and not c.credit_report.unresolved_disputes
    ]
    assert len(unresolved) >= 4 and resolved_only
    assert all("REFER_UNRESOLVED_DISPUTE" in u.reason_codes for u in unresolved)
    assert all(u.decision.decision == "refer" for u in unresolved)
    assert any(
        u.figures.score is not None and u.figures.score < u.figures.min_score for u in unresolved
    )
    assert all("REFER_UNRESOLVED_DISPUTE" not in u.reason_codes for u in resolved_only)


# ---------------------------------------------------------------- score edges


@pytest.mark.parametrize("product", PRODUCTS)
@pytest.mark.parametrize(
    ("offset", "outcome", "reason"),
    [
        (-1, "decline", "SCORE_BELOW_MINIMUM"),
        (0, "refer", "REFER_SCORE_MARGIN"),
        ("margin", "refer", "REFER_SCORE_MARGIN"),
        ("margin+1", "approve", None),
    ],
)
def test_a_score_on_each_side_of_the_product_minimum_and_its_margin_is_decided_by_it(
    decided: Decided,
    policy: Policy,
    product: str,
    offset: int | str,
    outcome: str,
    reason: str | None,
) -> None:
    margin = policy["margins.scorePoints"].value
    delta = {"margin": margin, "margin+1": margin + 1}.get(str(offset), offset)
    assert isinstance(delta, int)
    target = policy[f"products.{product}.minScore"].value + delta
    hits = [
        u
        for c, u in decided
        if c.application.product == product
        and u.figures.score == target
        and _automated(u)
        and _clear_of_dti(u, policy)
        and _clear_of_ltv(u, policy)
    ]
    assert len(hits) >= 2
    for u in hits:
        assert u.decision.decision == outcome
        if reason is None:
            assert u.reason_codes == ()
        else:
            assert u.reason_codes[0] == reason


@pytest.mark.parametrize("product", PRODUCTS)
@pytest.mark.parametrize("band", BANDS[:-1])
def test_a_band_floor_prices_in_that_band_and_one_point_below_in_the_band_beneath(
    decided: Decided, policy: Policy, product: str, band: str
) -> None:
    floor = policy[f"scoreBands.{band}"].value
    beneath = BANDS[BANDS.index(band) + 1]
    for score, expected in ((floor, band), (floor - 1, beneath)):
        hits = [
            u
            for c, u in decided
            if c.application.product == product and u.figures.score == score and _automated(u)
        ]
        assert hits, f"no {product} case at score {score}"
        for u in hits:
            assert u.decision.score_band == expected
            assert u.figures.apr == policy.pricing(product, expected).apr.value


@pytest.mark.parametrize("product", PRODUCTS)
def test_both_ends_of_the_bureau_scale_appear(decided: Decided, product: str) -> None:
    scores = {u.figures.score for c, u in decided if c.application.product == product}
    assert {300, 850} <= scores


# ---------------------------------------------------------------- DTI edges


@pytest.mark.parametrize("product", PRODUCTS)
@pytest.mark.parametrize(
    ("edge", "outcomes", "reason"),
    [
        ("cap", {"refer"}, "REFER_DTI_MARGIN"),
        ("cap-margin", {"refer"}, "REFER_DTI_MARGIN"),
        ("cap-margin-q", {"approve"}, None),
        ("cap+q", {"counteroffer", "decline"}, "DTI_OVER_CAP"),
    ],
)
def test_a_dti_at_just_under_and_just_over_each_edge_is_decided_by_it(
    decided: Decided,
    policy: Policy,
    product: str,
    edge: str,
    outcomes: set[str],
    reason: str | None,
) -> None:
    cap = _pct(policy, f"products.{product}.maxDtiPct")
    margin, q = _pct(policy, "margins.dtiPct"), _pct(policy, "rounding.percent")
    target = {
        "cap": cap,
        "cap-margin": cap - margin,
        "cap-margin-q": cap - margin - q,
        "cap+q": cap + q,
    }[edge]
    hits = [
        u
        for c, u in decided
        if c.application.product == product
        and u.figures.dti_pct == target
        and _automated(u)
        and _clear_of_score(u, policy)
        and _clear_of_ltv(u, policy)
    ]
    assert len(hits) >= 3, f"{product} DTI {target}: {len(hits)} cases"
    for u in hits:
        assert u.decision.decision in outcomes
        assert u.decision.dti_pct == target
        if reason is None:
            assert u.reason_codes == ()
        else:
            assert reason in u.reason_codes


@pytest.mark.parametrize("product", PRODUCTS)
def test_a_dti_exactly_at_the_cap_before_rounding_is_present(
    decided: Decided, policy: Policy, product: str
) -> None:
    cap = _pct(policy, f"products.{product}.maxDtiPct")
    exact = [
        u
        for c, u in decided
        if c.application.product == product
        and u.figures.score is not None
        and (c.application.monthly_debt_payments + u.figures.new_payment)
        * 1200
        / c.application.annual_income
        == cap
    ]
    assert exact
    assert all(u.decision.decision == "refer" for u in exact if _automated(u))


# ---------------------------------------------------------------- LTV edges


@pytest.mark.parametrize(
    ("edge", "outcomes", "reason"),
    [
        ("cap", {"refer"}, "REFER_LTV_MARGIN"),
        ("cap-margin", {"refer"}, "REFER_LTV_MARGIN"),
        ("cap-margin-q", {"approve"}, None),
        ("cap+q", {"counteroffer"}, "LTV_OVER_CAP"),
    ],
)
def test_an_ltv_at_just_under_and_just_over_each_edge_is_decided_by_it(
    decided: Decided, policy: Policy, edge: str, outcomes: set[str], reason: str | None
) -> None:
    cap = _pct(policy, "products.auto.maxLtvPct")
    margin, q = _pct(policy, "margins.ltvPct"), _pct(policy, "rounding.percent")
    target = {
        "cap": cap,
        "cap-margin": cap - margin,
        "cap-margin-q": cap - margin - q,
        "cap+q": cap + q,
    }[edge]
    hits = [
        u
        for _, u in decided
        if u.figures.ltv_pct == target
        and _automated(u)
        and _clear_of_score(u, policy)
        and _clear_of_dti(u, policy)
    ]
    assert len(hits) >= 3, f"LTV {target}: {len(hits)} cases"
    for u in hits:
        assert u.decision.decision in outcomes
        assert u.decision.ltv_pct == target
        if reason is None:
            assert u.reason_codes == ()
        else:
            assert reason in u.reason_codes


def test_ltv_only_failures_are_countered_where_a_smaller_amount_passes_and_declined_where_not(
    decided: Decided, policy: Policy
) -> None:
    ltv_only = [
        (c, u)
        for c, u in decided
        if _automated(u)
        and u.figures.ltv_pct is not None
        and u.figures.max_ltv_pct is not None
        and u.figures.ltv_pct > u.figures.max_ltv_pct
        and u.figures.dti_pct <= u.figures.max_dti_pct
        and u.figures.score is not None
        and u.figures.score >= u.figures.min_score
    ]
    by_outcome = Counter(u.decision.decision for _, u in ltv_only)
    assert by_outcome["counteroffer"] >= 3 and by_outcome["decline"] >= 1
    for c, u in ltv_only:
        assert u.reason_codes == ("LTV_OVER_CAP",)
        if u.counteroffer is not None:
            cap = u.figures.max_ltv_pct
            assert u.counteroffer.ltv_pct is not None and cap is not None
            assert u.counteroffer.ltv_pct <= cap
            assert c.application.requested_amount is not None and u.counteroffer.amount is not None
            assert u.counteroffer.amount < c.application.requested_amount


# ---------------------------------------------------------------- counteroffers


def test_some_auto_counteroffers_are_cured_only_by_a_longer_term(
    decided: Decided, policy: Policy
) -> None:
    longer = [
        (c, u)
        for c, u in decided
        if u.counteroffer is not None
        and u.counteroffer.term_months is not None
        and c.application.term_months is not None
        and u.counteroffer.term_months > c.application.term_months
    ]
    full = [
        u
        for c, u in longer
        if u.counteroffer is not None and u.counteroffer.amount == c.application.requested_amount
    ]
    assert len(longer) >= 6
    pairs = {(u.figures.term_months, u.counteroffer.term_months) for u in full if u.counteroffer}
    allowed = policy["products.auto.termsAllowed"].value
    # every (asked, cured-at) pair of allowed terms appears
    assert pairs == {(a, b) for a in allowed for b in allowed if a < b}
    for u in full:
        offer = u.counteroffer
        assert offer is not None and offer.dti_pct <= u.figures.max_dti_pct
        # the request as made fails DTI; the full amount passes at the longer term, and
        # the Decision states the request's figure, not the offer's
        assert u.figures.dti_pct > u.figures.max_dti_pct
        assert u.decision.dti_pct == u.figures.dti_pct
        assert u.decision.terms is not None
        assert u.decision.terms.term_months == offer.term_months
        assert u.decision.terms.amount == offer.amount


@pytest.mark.parametrize("band", BANDS)
def test_card_counteroffers_offer_a_lower_line_that_passes_the_dti_cap(
    decided: Decided, policy: Policy, band: str
) -> None:
    step = _pct(policy, "products.card.counterofferStep")
    min_line = _pct(policy, "products.card.minLine")
    hits = [
        u
        for c, u in decided
        if c.application.product == "card"
        and u.decision.decision == "counteroffer"
        and u.figures.band == band
    ]
    assert len(hits) >= 2
    for u in hits:
        offer = u.counteroffer
        assert offer is not None and offer.credit_line is not None
        assert u.figures.assessed_line is not None
        assert min_line <= offer.credit_line < u.figures.assessed_line
        assert offer.credit_line % step == 0
        assert offer.dti_pct <= u.figures.max_dti_pct < u.figures.dti_pct
        assert u.reason_codes == ("DTI_OVER_CAP",)


@pytest.mark.parametrize("product", PRODUCTS)
def test_a_dti_no_adjusted_terms_can_cure_is_declined(
    decided: Decided, policy: Policy, product: str
) -> None:
    hits = [
        u
        for c, u in decided
        if c.application.product == product
        and u.decision.decision == "decline"
        and u.reason_codes == ("DTI_OVER_CAP",)
    ]
    assert len(hits) >= 3


@pytest.mark.parametrize("product", PRODUCTS)
def test_more_principal_reasons_than_a_notice_states_are_cut_to_the_maximum(
    decided: Decided, policy: Policy, product: str
) -> None:
    cap = policy["maxReasons"].value
    hits = [
        u
        for c, u in decided
        if c.application.product == product
        and u.decision.decision == "decline"
        and len(u.reason_codes) == cap
        and u.reason_codes[:2] == ("SCORE_BELOW_MINIMUM", "DTI_OVER_CAP")
    ]
    assert len(hits) >= 2
