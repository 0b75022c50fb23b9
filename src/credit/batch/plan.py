"""The policy in exact integer units, for the columnar underwriter.

Every threshold still comes from the :class:`~credit.policy.Policy`; this module only
restates each one in the integer units the columns are computed in, once per policy:

* money in integer cents, a payment in units of the policy's money quantum
  (``rounding.money``: ``u`` cents, 1 for 0.01);
* a percentage in units of the percent quantum (``rounding.percent``: tenths for
  0.1). A rounded percentage ``x`` (an integer number of units) passes a cap ``C``
  exactly when ``x <= floor(C)`` in those units, fails it when ``x > floor(C)``, and
  sits at or above a margin's low end ``L`` when ``x >= ceil(L)``: the comparisons
  of the scalar underwriter, with no rounding of their own;
* ``DTI units = half-up((debt + payment) x dtiNum / (income x dtiDen))`` and
  ``LTV units = half-up(amount x ltvNum / (value x ltvDen))`` with all four integers,
  half-up of ``N / D`` (N >= 0, D > 0) being ``(2N + D) // 2D``: exact, as the
  scalar's 34-digit ``Decimal`` is for these quotients (a quotient of integers up to
  10^15 is at least 1 / 2D from a half, far beyond 34 digits' error).

The amortised payment's factor ``r / (1 - (1 + r)^-n)`` is the scalar's own
34-digit ``Decimal`` (:func:`credit.underwriting.capacity.payment_factor`), taken
once per (band, term); see :mod:`credit.batch.exact` for how it is applied.

A policy the columnar underwriter cannot restate exactly (a money quantum finer
than a cent, a counteroffer step or a minimum that is not whole cents) is refused
with a :class:`~credit.errors.PolicyError` naming the key; the scalar underwriter
still decides its cases.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Any, TypeVar

from credit.catalogue import Catalogue, default_catalogue
from credit.errors import PolicyError
from credit.kept import KeptPer
from credit.policy import BANDS, Policy
from credit.underwriting.capacity import payment_factor

_T = TypeVar("_T")

__all__ = ["BatchPlan", "ProductPlan", "plan_for"]

_CENTS_PER_DOLLAR = 100
_PCT = 100  # a percentage is a ratio x 100
_MONTHS = 12  # monthly income is annual income / 12 (reference policy, "Capacity")


def _exponent(value: Decimal) -> int:
    exponent = value.as_tuple().exponent
    assert isinstance(exponent, int)
    return exponent


def _whole_cents(policy: Policy, key: str) -> int:
    value: Decimal = policy[key].value
    scaled = value.scaleb(2)
    if scaled != scaled.to_integral_value():
        raise PolicyError(
            f"{value} is not a whole number of cents: the batch underwriter computes in cents",
            file=policy.source,
            key=key,
        )
    return int(scaled)


@dataclass(frozen=True, slots=True)
class ProductPlan:
    """One product's thresholds in integer units."""

    product: str
    min_score: int
    dti_cap: int  # floor(maxDtiPct) in percent units
    dti_low: int  # ceil(maxDtiPct - margins.dtiPct)
    step_cents: int
    min_cents: int  # minAmount (auto) or minLine (card)
    ltv_cap: int | None = None  # auto
    ltv_low: int | None = None  # auto
    terms: tuple[int, ...] = ()  # auto
    pct_num: int = 0  # card: paymentPctOfLine = pct_num / pct_den
    pct_den: int = 1


@dataclass(frozen=True, slots=True)
class BatchPlan:
    """A policy (and catalogue) restated for the columnar underwriter."""

    policy: Policy
    catalogue: Catalogue
    effective_date: dt.date
    bands: tuple[tuple[str, int], ...]  # (band, floor), highest floor first
    pct_exp: int  # exponent of the percent quantum (-1 for 0.1)
    money_unit: int  # cents in one money quantum
    dti_num: int
    dti_den: int
    ltv_num: int
    ltv_den: int
    auto: ProductPlan
    card: ProductPlan
    steps: tuple[str, ...]
    factor_order: tuple[str, ...]
    max_reasons: int
    min_tradelines: int
    min_history: int
    score_margin: int
    apr: dict[tuple[str, str], Decimal]  # (product, band) -> APR %
    card_line_cents: dict[str, int]  # band -> line
    factors: dict[tuple[str, int], Decimal]  # (band, term) -> r / (1 - (1 + r)^-n)
    key_factor_codes: dict[str, str]  # bureau code -> reason code
    confidence_widths: tuple[Decimal, Decimal, Decimal]  # score, DTI, LTV margins
    # What the columnar underwriter derives from the plan alone, made on first use
    # (:meth:`kept`): not part of the plan's value, and not carried to a plan made
    # from this one by dataclasses.replace (each plan starts with its own, empty).
    _kept: dict[str, Any] = field(default_factory=dict, init=False, compare=False, repr=False)

    def product(self, name: str) -> ProductPlan:
        return self.auto if name == "auto" else self.card

    def kept(self, name: str, make: Callable[[], _T]) -> _T:
        """What ``make`` builds from this plan alone (the reason patterns' list
        column, the row checks as expressions, ...), built once per plan: a batch's
        fixed cost, paid on every call of a small one before."""
        found = self._kept.get(name)
        if found is None:
            found = self._kept[name] = make()
        return found

    def pct_of_units(self, units: int) -> Decimal:
        """A percentage in units as the Decimal the scalar states (``264`` -> 26.4)."""
        return Decimal(units).scaleb(self.pct_exp)


def _units(value: Decimal, pct_exp: int) -> Fraction:
    return Fraction(value) / Fraction(10) ** pct_exp


def _build(policy: Policy, catalogue: Catalogue) -> BatchPlan:
    money_exp = _exponent(policy["rounding.money"].value)
    if money_exp < -2:
        raise PolicyError(
            "a money quantum finer than a cent: the batch underwriter computes in cents",
            file=policy.source,
            key="rounding.money",
        )
    pct_exp = _exponent(policy["rounding.percent"].value)
    # DTI % = (debt + payment) x 1200 / income; in units of 10^pct_exp percent.
    scale_up, scale_down = 10 ** max(0, -pct_exp), 10 ** max(0, pct_exp)
    dti_num, dti_den = _MONTHS * _PCT * scale_up, scale_down
    ltv_num, ltv_den = _PCT * scale_up, scale_down
    dti_margin: Decimal = policy["margins.dtiPct"].value
    ltv_margin: Decimal = policy["margins.ltvPct"].value

    auto, card = policy.product("auto"), policy.product("card")
    assert auto.max_ltv_pct and auto.min_amount and auto.terms_allowed
    assert card.min_line and card.payment_pct_of_line
    auto_cap: Decimal = auto.max_dti_pct.value
    ltv_cap: Decimal = auto.max_ltv_pct.value
    card_cap: Decimal = card.max_dti_pct.value
    pct: Decimal = card.payment_pct_of_line.value
    pct_fraction = Fraction(pct)
    auto_plan = ProductPlan(
        product="auto",
        min_score=auto.min_score.value,
        dti_cap=math.floor(_units(auto_cap, pct_exp)),
        dti_low=math.ceil(_units(auto_cap - dti_margin, pct_exp)),
        step_cents=_whole_cents(policy, "products.auto.counterofferStep"),
        min_cents=_whole_cents(policy, "products.auto.minAmount"),
        ltv_cap=math.floor(_units(ltv_cap, pct_exp)),
        ltv_low=math.ceil(_units(ltv_cap - ltv_margin, pct_exp)),
        terms=tuple(auto.terms_allowed.value),
    )
    card_plan = ProductPlan(
        product="card",
        min_score=card.min_score.value,
        dti_cap=math.floor(_units(card_cap, pct_exp)),
        dti_low=math.ceil(_units(card_cap - dti_margin, pct_exp)),
        step_cents=_whole_cents(policy, "products.card.counterofferStep"),
        min_cents=_whole_cents(policy, "products.card.minLine"),
        pct_num=pct_fraction.numerator,
        pct_den=pct_fraction.denominator,
    )
    apr = {(p, b): policy.pricing(p, b).apr.value for p in ("auto", "card") for b in BANDS}
    lines = {b: _whole_cents(policy, f"pricing.card.{b}.line") for b in BANDS}
    factors = {(b, t): payment_factor(apr[("auto", b)], t) for b in BANDS for t in auto_plan.terms}
    floors = sorted(
        ((b, int(policy[f"scoreBands.{b}"].value)) for b in BANDS), key=lambda bf: -bf[1]
    )
    return BatchPlan(
        policy=policy,
        catalogue=catalogue,
        effective_date=policy.effective_date,
        bands=tuple(floors),
        pct_exp=pct_exp,
        money_unit=10 ** (money_exp + 2),
        dti_num=dti_num,
        dti_den=dti_den,
        ltv_num=ltv_num,
        ltv_den=ltv_den,
        auto=auto_plan,
        card=card_plan,
        steps=tuple(policy["steps"].value),
        factor_order=tuple(policy["factorOrder"].value),
        max_reasons=policy["maxReasons"].value,
        min_tradelines=policy["thinFile.minTradelines"].value,
        min_history=policy["thinFile.minHistoryMonths"].value,
        score_margin=policy["margins.scorePoints"].value,
        apr=apr,
        card_line_cents=lines,
        factors=factors,
        key_factor_codes=dict(catalogue.by_bureau_code),
        confidence_widths=(
            Decimal(policy["margins.scorePoints"].value + 1),
            dti_margin,
            ltv_margin,
        ),
    )


# each policy object's plans, by catalogue (the catalogue held with its plan, so its id
# stands for it while the entry does). A plan holds its policy, so the entry keeps the
# policy alive: the plans of the policies planned most recently are kept, no more.
PLANNED_POLICIES = 8
_PLANS: KeptPer[Policy, dict[int, tuple[Catalogue, BatchPlan]]] = KeptPer(
    lambda _: {}, most=PLANNED_POLICIES
)


def plan_for(policy: Policy, catalogue: Catalogue | None = None) -> BatchPlan:
    """The plan of a policy (built once per policy and catalogue object)."""
    catalogue = catalogue or default_catalogue()
    plans = _PLANS(policy)
    entry = plans.get(id(catalogue))
    if entry is None:
        entry = plans[id(catalogue)] = (catalogue, _build(policy, catalogue))
    return entry[1]
