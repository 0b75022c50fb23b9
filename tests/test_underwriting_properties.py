"""Laws of the reference policy, checked over generated cases (hypothesis).

Decision order, worst to best: decline < counteroffer < refer < approve.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from conftest import (
    POLICY,
    RANK,
    auto_case,
    band_of,
    card_case,
    decide,
    oracle_card_payment,
    oracle_dti,
    oracle_ltv,
    oracle_payment,
    with_changes,
)
from credit import Decision, Underwriting, dumps, loads, parse_decision

D = Decimal
TERMS = (36, 48, 60, 72)
LAWS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.filter_too_much]
)


def cents(low: int, high: int) -> st.SearchStrategy[Decimal]:
    """Money from ``low`` to ``high`` dollars, to the cent."""
    return st.integers(low * 100, high * 100).map(lambda c: D(c).scaleb(-2))


@st.composite
def auto_kwargs(draw: st.DrawFn, *, score: st.SearchStrategy[int] | None = None) -> dict[str, Any]:
    income = draw(cents(20_000, 250_000))
    return {
        "score": draw(score if score is not None else st.integers(300, 850)),
        "income": income,
        "debt": draw(cents(0, int(income / 12 * D("0.55")))),
        "amount": draw(cents(5_000, 60_000)),
        "term": draw(st.sampled_from(TERMS)),
        "value": draw(cents(4_000, 70_000)),
    }


@st.composite
def card_kwargs(draw: st.DrawFn, *, score: st.SearchStrategy[int] | None = None) -> dict[str, Any]:
    income = draw(cents(15_000, 250_000))
    return {
        "score": draw(score if score is not None else st.integers(300, 850)),
        "income": income,
        "debt": draw(cents(0, int(income / 12 * D("0.5")))),
        "line": draw(cents(500, 15_000)),
    }


def build(product: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    return auto_case(**kwargs) if product == "auto" else card_case(**kwargs)


def rank(u: Underwriting) -> int:
    return RANK[u.decision.decision]


# ------------------------------------------------------------------ monotone in score


@LAWS
@given(kwargs=auto_kwargs(), scores=st.lists(st.integers(300, 850), min_size=2, max_size=2))
def test_all_else_equal_a_higher_auto_score_never_gives_a_worse_decision(
    kwargs: dict[str, Any], scores: list[int]
) -> None:
    low, high = sorted(scores)
    worse = decide(auto_case(**{**kwargs, "score": low}))
    better = decide(auto_case(**{**kwargs, "score": high}))
    assert rank(better) >= rank(worse), (low, high, worse.decision, better.decision)


BAND_SCORES = st.sampled_from([(300, 659), (660, 719), (720, 850)]).flatmap(
    lambda b: st.lists(st.integers(*b), min_size=2, max_size=2)
)


@LAWS
@given(kwargs=card_kwargs(), scores=BAND_SCORES)
def test_within_a_band_a_higher_card_score_never_gives_a_worse_decision(
    kwargs: dict[str, Any], scores: list[int]
) -> None:
    low, high = sorted(scores)
    assert band_of(low) == band_of(high)
    worse = decide(card_case(**{**kwargs, "score": low}))
    better = decide(card_case(**{**kwargs, "score": high}))
    assert rank(better) >= rank(worse)


@LAWS
@given(kwargs=card_kwargs(), scores=st.lists(st.integers(300, 850), min_size=2, max_size=2))
def test_a_higher_card_score_never_turns_a_non_decline_into_a_decline(
    kwargs: dict[str, Any], scores: list[int]
) -> None:
    """Across a band edge the card line assessed grows, so the new payment and the DTI
    can grow too (an approval may become a counteroffer): the law that holds is that
    a higher score is never declined where a lower one was not."""
    low, high = sorted(scores)
    worse = decide(card_case(**{**kwargs, "score": low}))
    better = decide(card_case(**{**kwargs, "score": high}))
    if worse.decision.decision != "decline":
        assert better.decision.decision != "decline"


# ------------------------------------------------------------------ monotone in debt


@LAWS
@given(
    product=st.sampled_from(["auto", "card"]),
    data=st.data(),
    less=st.integers(1, 300_000),
)
def test_all_else_equal_lower_existing_debt_never_gives_a_worse_decision(
    product: str, data: st.DataObject, less: int
) -> None:
    kwargs = data.draw(auto_kwargs() if product == "auto" else card_kwargs())
    lower = max(D(0), kwargs["debt"] - D(less).scaleb(-2))
    worse = decide(build(product, kwargs))
    better = decide(build(product, {**kwargs, "debt": lower}))
    assert rank(better) >= rank(worse), (worse.decision, better.decision)


# ------------------------------------------------------------------ stated figures


@LAWS
@given(
    product=st.sampled_from(["auto", "card"]),
    data=st.data(),
    unscored=st.booleans(),
)
def test_the_dti_stated_is_the_dti_recomputed_and_the_one_cited_everywhere(
    product: str, data: st.DataObject, unscored: bool
) -> None:
    kwargs = data.draw(auto_kwargs() if product == "auto" else card_kwargs())
    if unscored:
        kwargs["score"] = None
    u = decide(build(product, kwargs))
    d = u.decision
    if kwargs["score"] is None:
        payment = D("0.00")
    elif product == "auto":
        apr = POLICY.pricing("auto", band_of(kwargs["score"])).apr.value
        payment = oracle_payment(kwargs["amount"], apr, kwargs["term"])
    else:
        pricing = POLICY.pricing("card", band_of(kwargs["score"]))
        assert pricing.line is not None
        payment = oracle_card_payment(min(pricing.line.value, kwargs["line"]), D("3.0"))
    dti = oracle_dti(kwargs["debt"], payment, kwargs["income"])
    assert u.figures.new_payment == payment
    assert d.dti_pct == dti
    cap = "45.0" if product == "auto" else "40.0"
    assert f"products.{product}.maxDtiPct={cap}: DTI {dti}% " in "\n".join(d.policy_basis)
    for code, text in zip(u.reason_codes, d.factors, strict=True):
        if code in ("DTI_OVER_CAP", "REFER_DTI_MARGIN"):
            assert f"{dti}%" in text
    if product == "auto":
        ltv = oracle_ltv(kwargs["amount"], kwargs["value"])
        assert d.ltv_pct == ltv
        for code, text in zip(u.reason_codes, d.factors, strict=True):
            if code in ("LTV_OVER_CAP", "REFER_LTV_MARGIN"):
                assert f"{ltv}%" in text


# ------------------------------------------------------------------ counteroffers


@st.composite
def stretched_auto(draw: st.DrawFn) -> dict[str, Any]:
    """An auto request a little over the DTI cap and/or the LTV cap."""
    kwargs = draw(auto_kwargs(score=st.integers(600, 850)))
    apr = POLICY.pricing("auto", band_of(kwargs["score"])).apr.value
    payment = oracle_payment(kwargs["amount"], apr, kwargs["term"])
    monthly = kwargs["income"] / 12
    target = draw(st.decimals(D("45.05"), D("52"), places=2))
    kwargs["debt"] = max(D(0), (target * monthly / 100 - payment).quantize(D("0.01")))
    ltv = draw(st.decimals(D("70"), D("130"), places=1))
    kwargs["value"] = max(D("1.00"), (kwargs["amount"] * 100 / ltv).quantize(D("0.01")))
    return kwargs


def auto_passes(kwargs: dict[str, Any], amount: Decimal, term: int) -> bool:
    apr = POLICY.pricing("auto", band_of(kwargs["score"])).apr.value
    dti = oracle_dti(kwargs["debt"], oracle_payment(amount, apr, term), kwargs["income"])
    return dti <= D("45.0") and oracle_ltv(amount, kwargs["value"]) <= D("120.0")


@LAWS
@given(kwargs=stretched_auto())
def test_an_auto_counteroffer_passes_every_cap_and_100_more_does_not(
    kwargs: dict[str, Any],
) -> None:
    u = decide(auto_case(**kwargs))
    assume(u.decision.decision == "counteroffer")
    terms = u.decision.terms
    assert terms is not None and terms.amount is not None and terms.term_months is not None
    amount, term = terms.amount, terms.term_months
    requested, requested_term = kwargs["amount"], kwargs["term"]
    assert amount % 100 == 0 and D(5000) <= amount <= requested
    assert term in TERMS and term >= requested_term
    assert auto_passes(kwargs, amount, term)
    longer_or_equal = [t for t in TERMS if t >= requested_term]
    # the largest amount on any allowed term: $100 more passes on none of them
    if amount + 100 <= requested:
        assert not any(auto_passes(kwargs, amount + 100, t) for t in longer_or_equal)
    # ties go to the shortest term: no shorter allowed term carries the same amount
    assert not any(auto_passes(kwargs, amount, t) for t in longer_or_equal if t < term)
    # the Decision states the request as made, not the offer
    apr = POLICY.pricing("auto", band_of(kwargs["score"])).apr.value
    request_dti = oracle_dti(
        kwargs["debt"], oracle_payment(requested, apr, requested_term), kwargs["income"]
    )
    assert u.decision.dti_pct == request_dti
    assert u.decision.ltv_pct == oracle_ltv(requested, kwargs["value"])


@st.composite
def stretched_card(draw: st.DrawFn) -> dict[str, Any]:
    """A card request a little over the DTI cap."""
    kwargs = draw(card_kwargs(score=st.integers(640, 850)))
    pricing = POLICY.pricing("card", band_of(kwargs["score"]))
    assert pricing.line is not None
    payment = oracle_card_payment(min(pricing.line.value, kwargs["line"]), D("3.0"))
    # existing debt alone at 40.05% less a share of the new payment: over the cap as
    # requested, and often curable by a smaller line
    share = draw(st.decimals(D("0.4"), D("1"), places=2))
    debt = D("40.05") * kwargs["income"] / 1200 - payment * share
    kwargs["debt"] = max(D(0), debt.quantize(D("0.01")))
    return kwargs


@LAWS
@given(kwargs=stretched_card())
def test_a_card_counteroffer_passes_dti_and_100_more_fails_dti_or_reaches_the_line(
    kwargs: dict[str, Any],
) -> None:
    u = decide(card_case(**kwargs))
    assume(u.decision.decision == "counteroffer")
    terms = u.decision.terms
    assert terms is not None and terms.credit_line is not None
    line = terms.credit_line
    pricing = POLICY.pricing("card", band_of(kwargs["score"]))
    assert pricing.line is not None
    granted = min(pricing.line.value, kwargs["line"])

    def passes(candidate: Decimal) -> bool:
        payment = oracle_card_payment(candidate, D("3.0"))
        return oracle_dti(kwargs["debt"], payment, kwargs["income"]) <= D("40.0")

    assert line % 100 == 0 and D(500) <= line < granted
    assert passes(line)
    assert not passes(line + 100) or line + 100 >= granted
    assert terms.apr == pricing.apr.value
    assert u.decision.dti_pct > D("40.0")  # the request as made


# ------------------------------------------------------------------ the Decision contract


@st.composite
def any_case(draw: st.DrawFn) -> dict[str, Any]:
    product = draw(st.sampled_from(["auto", "card"]))
    kwargs = draw(auto_kwargs() if product == "auto" else card_kwargs())
    case = build(product, kwargs)
    report = case["creditReport"]
    if draw(st.integers(0, 9)) == 0:
        report["score"] = None
    report["tradelines"] = draw(st.integers(0, 30))
    report["historyMonths"] = draw(st.integers(0, 400))
    report["disputes"] = [
        {"tradelineId": f"T{i}", "resolved": draw(st.booleans())}
        for i in range(draw(st.integers(0, 2)))
    ]
    codes = draw(st.lists(st.sampled_from(["01", "02", "05", "08", "10", "13", "14", "18", "38"])))
    report["keyFactors"] = [
        {"code": c, "text": f"factor {c}", "value": f"{i}"} for i, c in enumerate(codes)
    ]
    return with_changes(case, "caseId", f"C-{draw(st.integers(0, 10**6))}")


@LAWS
@given(case=any_case())
def test_a_decision_always_validates_and_its_json_round_trips(case: dict[str, Any]) -> None:
    u = decide(case)
    wire = u.decision.to_wire()
    assert Decision.model_validate(wire) == u.decision
    text = dumps(wire)
    again = parse_decision(loads(text))
    assert again == u.decision
    assert dumps(again.to_wire()) == text
    assert D(0) <= u.decision.confidence <= D(1)
    assert len(u.decision.factors) <= 4 or u.decision.decision == "refer"
    if u.decision.decision in ("decline", "counteroffer"):
        assert 1 <= len(u.decision.factors) <= 4
    if u.decision.decision == "approve":
        assert u.decision.factors == ()


@settings(max_examples=300, deadline=None)
@given(
    lo=st.integers(-5, 50),
    width=st.integers(-3, 400),
    edge_offset=st.integers(-10, 420),
    guess=st.one_of(st.none(), st.integers(-100, 600)),
)
def test_the_counteroffer_search_finds_the_largest_passing_step_from_any_starting_guess(
    lo: int, width: int, edge_offset: int, guess: int | None
) -> None:
    """The search is exact whatever its closed-form guess: it only says where to start."""
    from credit.underwriting.engine import _largest_passing

    hi = lo + width
    edge = lo + edge_offset  # ok(k) holds exactly for k < edge
    calls: list[Decimal] = []

    def ok(k: Decimal) -> bool:
        calls.append(k)
        return k < edge

    found = _largest_passing(
        Decimal(lo), Decimal(hi), ok, None if guess is None else Decimal(guess)
    )
    passing = [k for k in range(lo, hi + 1) if k < edge]
    assert found == (Decimal(max(passing)) if passing else None)
    assert all(lo <= k <= hi for k in calls)


@given(
    st.decimals(allow_nan=False, allow_infinity=False, min_value=-(10**12), max_value=10**12),
    st.sampled_from((Decimal("0.01"), Decimal("0.1"), Decimal("1"), Decimal("0.001"))),
)
def test_the_underwriter_rounds_half_away_from_zero_at_34_digits(
    value: Decimal, quantum: Decimal
) -> None:
    # capacity's rounding (its own half-up context's quantize) is Decimal's half-up
    # quantize at 34 digits, halves away from zero, the quantum's exponent kept
    from decimal import ROUND_HALF_UP, Context

    from credit.underwriting.capacity import round_half_up

    want = value.quantize(quantum, rounding=ROUND_HALF_UP, context=Context(prec=34))
    got = round_half_up(value, quantum)
    assert got == want and got.as_tuple() == want.as_tuple()
    # both sides of a half: away from zero, never to the even neighbour
    assert round_half_up(Decimal("2.5"), Decimal("1")) == 3
    assert round_half_up(Decimal("-2.5"), Decimal("1")) == -3
    assert round_half_up(Decimal("0.125"), Decimal("0.01")) == Decimal("0.13")
    assert round_half_up(Decimal("0.12499"), Decimal("0.01")) == Decimal("0.12")
