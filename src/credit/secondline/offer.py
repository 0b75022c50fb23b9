"""Step 3's adjusted terms, found by inverting the caps exactly.

The policy text: "Auto: among the allowed terms no shorter than the one requested, the
largest amount that is a multiple of $100, at most the amount requested, at least the
product minimum, and passes every cap; ties go to the shortest term. Card: the largest
line that is a multiple of $100, at least $500, below the line that would have been
granted, and passes the DTI cap."

Where the underwriter searches, this solves. A rounded figure passes a cap exactly
when the raw figure is under the cap's *bound*, the largest quantum multiple not above
the cap plus half a quantum (half-up rounding); the DTI bound gives the largest
payment that passes, and that payment's own half-up rounding gives the largest raw
payment, hence the largest amount or line, in closed form. Each offer so found is then
*certified* by the forward formulas: it passes every cap and one step more does not
(or lies past the amount requested or the line assessed). A bound that the forward
formulas contradict is an :class:`~credit.errors.UndecidedCaseError`, never a silently
wrong offer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from credit.errors import UndecidedCaseError
from credit.models import Application, Terms
from credit.policy import Policy
from credit.secondline.exact import (
    MONTHS_PER_YEAR,
    PERCENT,
    amortised_payment,
    card_payment,
    dti_pct,
    ltv_pct,
    payment_factor,
    rational,
    to_decimal,
)

__all__ = ["Offer", "cap_bound", "find_offer", "largest_below", "offer_figures"]


@dataclass(frozen=True, slots=True)
class Offer:
    """Adjusted terms and the figures they give (DTI and LTV of the offer itself)."""

    apr: Decimal
    payment: Decimal
    dti_pct: Decimal
    ltv_pct: Decimal | None  # auto
    amount: Decimal | None = None  # auto
    term_months: int | None = None  # auto
    credit_line: Decimal | None = None  # card

    @property
    def terms(self) -> Terms:
        if self.credit_line is not None:
            return Terms(apr=self.apr, credit_line=self.credit_line)
        return Terms(apr=self.apr, amount=self.amount, term_months=self.term_months)


def cap_bound(cap: Decimal, quantum: Decimal) -> Fraction:
    """The raw figure below which a figure rounded half-up to ``quantum`` is at most
    ``cap`` (inclusive edges: the rounded figure may equal the cap)."""
    q = rational(quantum)
    return math.floor(rational(cap) / q) * q + q / 2


def largest_below(bound: Fraction, unit: Fraction) -> int:
    """The largest whole k with k x unit strictly below ``bound`` (unit > 0)."""
    return -(-bound // unit) - 1


def _payment_bound(app: Application, max_dti: Decimal, policy: Policy) -> Fraction:
    """The raw monthly payment below which the DTI passes ``max_dti``: the rounded
    payment must leave (debt + payment) / monthly income x 100 under the DTI bound, and
    a raw payment rounds to at most that payment when under it plus half a cent."""
    money = rational(policy["rounding.money"].value)
    bound = cap_bound(max_dti, policy["rounding.percent"].value)
    room = bound * rational(app.annual_income) / (MONTHS_PER_YEAR * PERCENT) - rational(
        app.monthly_debt_payments
    )
    largest_payment = largest_below(room, money) * money
    return largest_payment + money / 2


def offer_figures(
    app: Application, policy: Policy, apr: Decimal, size: Decimal, term: int | None
) -> Offer:
    """The forward figures of an amount over a term (auto) or a line (card)."""
    money: Decimal = policy["rounding.money"].value
    pct: Decimal = policy["rounding.percent"].value
    if app.product == "auto":
        assert term is not None and app.vehicle_value is not None
        payment = amortised_payment(size, apr, term, money)
        ltv: Decimal | None = ltv_pct(size, app.vehicle_value, pct)
        dti = dti_pct(app.monthly_debt_payments, payment, app.annual_income, pct)
        return Offer(apr, payment, dti, ltv, amount=size, term_months=term)
    pct_of_line: Decimal = policy["products.card.paymentPctOfLine"].value
    payment = card_payment(size, pct_of_line, money)
    dti = dti_pct(app.monthly_debt_payments, payment, app.annual_income, pct)
    return Offer(apr, payment, dti, None, credit_line=size)


def _passes(offer: Offer, policy: Policy, product: str) -> bool:
    p = f"products.{product}"
    if offer.dti_pct > policy[f"{p}.maxDtiPct"].value:
        return False
    return offer.ltv_pct is None or offer.ltv_pct <= policy[f"{p}.maxLtvPct"].value


def _certified(
    k: int,
    lo: int,
    hi: int,
    app: Application,
    policy: Policy,
    apr: Decimal,
    term: int | None,
    case_id: str,
) -> Offer | None:
    """The offer of k steps (None when k is under ``lo``), once the forward formulas
    agree that k is the edge: k passes every cap and k + 1 does not (within ``hi``);
    with no k, the smallest offer ``lo`` does not pass."""
    step_key = f"products.{app.product}.counterofferStep"
    step: Decimal = policy[step_key].value

    def passes(n: int) -> bool:
        return _passes(
            offer_figures(app, policy, apr, to_decimal(n, step), term), policy, app.product
        )

    if k < lo:
        if lo > hi or not passes(lo):
            return None
    elif passes(k) and (k == hi or not passes(k + 1)):
        return offer_figures(app, policy, apr, to_decimal(k, step), term)
    raise UndecidedCaseError(
        f"the closed-form counteroffer of {k} steps of {step} is not the edge of the caps by "
        "the forward formulas",
        case_id=case_id,
        rule=step_key,
    )


def _auto_offer(app: Application, policy: Policy, apr: Decimal, case_id: str) -> Offer | None:
    assert app.requested_amount is not None and app.vehicle_value is not None
    assert app.term_months is not None
    a = "products.auto"
    step = rational(policy[f"{a}.counterofferStep"].value)
    lo = math.ceil(rational(policy[f"{a}.minAmount"].value) / step)
    hi = math.floor(rational(app.requested_amount) / step)
    ltv_bound = cap_bound(policy[f"{a}.maxLtvPct"].value, policy["rounding.percent"].value)
    k_ltv = largest_below(ltv_bound * rational(app.vehicle_value) / PERCENT, step)
    pay_bound = _payment_bound(app, policy[f"{a}.maxDtiPct"].value, policy)
    best: Offer | None = None
    for term in sorted(t for t in policy[f"{a}.termsAllowed"].value if t >= app.term_months):
        k_dti = largest_below(pay_bound, step * payment_factor(apr, term))
        offer = _certified(min(hi, k_ltv, k_dti), lo, hi, app, policy, apr, term, case_id)
        if offer is None:
            continue
        assert offer.amount is not None
        # strictly larger only: a tie keeps the shorter term found first
        if best is None or (best.amount is not None and offer.amount > best.amount):
            best = offer
    return best


def _card_offer(
    app: Application, policy: Policy, apr: Decimal, assessed_line: Decimal, case_id: str
) -> Offer | None:
    c = "products.card"
    step = rational(policy[f"{c}.counterofferStep"].value)
    lo = math.ceil(rational(policy[f"{c}.minLine"].value) / step)
    hi = math.ceil(rational(assessed_line) / step) - 1  # strictly below the line assessed
    share = rational(policy[f"{c}.paymentPctOfLine"].value) / PERCENT
    pay_bound = _payment_bound(app, policy[f"{c}.maxDtiPct"].value, policy)
    if share > 0:
        k = min(hi, largest_below(pay_bound, step * share))
    else:  # no payment on any line: the existing debt alone decides
        k = hi if pay_bound > 0 else lo - 1
    return _certified(k, lo, hi, app, policy, apr, None, case_id)


def find_offer(
    app: Application,
    policy: Policy,
    apr: Decimal,
    assessed_line: Decimal | None,
    *,
    case_id: str,
) -> Offer | None:
    """The counteroffer the policy describes at the band's APR, or None if none passes."""
    if app.product == "auto":
        return _auto_offer(app, policy, apr, case_id)
    assert assessed_line is not None
    return _card_offer(app, policy, apr, assessed_line, case_id)
