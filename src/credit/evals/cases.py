"""Building eval cases that sit exactly where a point needs them.

Incomes, debts, amounts and vehicle values are solved for with the capacity
arithmetic (the second line's exact arithmetic, :mod:`credit.secondline.exact`, never
the underwriter's) and the policy's own numbers, so that the rounded DTI or LTV the policy
states is exactly the edge under test. The fixture facts that are not thresholds (the
bureau, the score scale, a file well clear of the thin-file rule, the vehicle value
scale) are written here once.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal

from credit.errors import CreditError
from credit.evals.oracle import band_of
from credit.models import Application, Bureau, Case, CreditReport, Dispute, KeyFactor
from credit.policy import BANDS, Policy
from credit.secondline.exact import amortised_payment, card_payment

__all__ = [
    "KEY_FACTORS",
    "SCORE_RANGE",
    "CannotConstructError",
    "Request",
    "build_case",
    "make_case",
    "solve_amount_value",
    "solve_income_debt",
]

SCORE_RANGE = (300, 850)  # the bureau's scale in these fixtures
# Key factors a bureau reports with a low score, in its order (codes the reason
# catalogue maps): more than a notice may state beside the score itself.
KEY_FACTORS = (
    ("10", "Proportion of balances to credit limits on revolving accounts is too high", "61%"),
    ("18", "Number of accounts with delinquency", "3 accounts"),
    ("08", "Too many inquiries last 12 months", "6 inquiries"),
    ("14", "Length of time accounts have been established", "2 years"),
    ("01", "Amount owed on accounts is too high", "$41,200"),
)
_BUREAU = Bureau(
    name="Example Credit Bureau",
    address="PO Box 1000, Springfield, ST 00000",
    phone="1-800-555-0100",
)
_MONTHLY_INCOME_UNIT = Decimal(10000)  # monthly income is a multiple of this
_VEHICLE_VALUE_UNIT = Decimal(20000)  # vehicle value is a multiple of this
_SEARCH = 1000


class CannotConstructError(CreditError, ValueError):
    """The policy leaves no case at the point asked for (a score off the bureau's scale,
    a figure that no whole-cent amount reaches)."""


@dataclass(frozen=True, slots=True)
class Request:
    """What the applicant asks for: auto amount/term/value, or a card line."""

    amount: Decimal | None = None
    term_months: int | None = None
    vehicle_value: Decimal | None = None
    line: Decimal | None = None


def solve_income_debt(
    payment: Decimal, raw_dti_pct: Decimal, money_quantum: Decimal
) -> tuple[Decimal, Decimal]:
    """Annual income and existing monthly debt at which (debt + payment) / (income / 12)
    x 100 is exactly ``raw_dti_pct`` before rounding, with the debt not negative."""
    if raw_dti_pct <= 0:
        raise CannotConstructError(f"no case has a DTI of {raw_dti_pct}")
    for k in range(1, _SEARCH + 1):
        monthly = _MONTHLY_INCOME_UNIT * k
        total = raw_dti_pct * monthly / 100
        if total != total.quantize(money_quantum):
            raise CannotConstructError(f"a DTI of {raw_dti_pct} is not reached in whole cents")
        debt = total - payment
        if debt >= 0:
            return (monthly * 12).quantize(money_quantum), debt.quantize(money_quantum)
    raise CannotConstructError(f"a payment of {payment} is too large for a DTI of {raw_dti_pct}")


def solve_amount_value(
    raw_ltv_pct: Decimal, min_amount: Decimal, money_quantum: Decimal
) -> tuple[Decimal, Decimal]:
    """An amount financed and a vehicle value whose ratio x 100 is exactly
    ``raw_ltv_pct`` before rounding, the amount at least the product minimum."""
    if raw_ltv_pct <= 0:
        raise CannotConstructError(f"no case has an LTV of {raw_ltv_pct}")
    for j in range(1, _SEARCH + 1):
        value = _VEHICLE_VALUE_UNIT * j
        amount = raw_ltv_pct * value / 100
        if amount != amount.quantize(money_quantum):
            raise CannotConstructError(f"an LTV of {raw_ltv_pct} is not reached in whole cents")
        if amount >= min_amount:
            return amount.quantize(money_quantum), value.quantize(money_quantum)
    raise CannotConstructError(f"no vehicle value reaches the minimum amount {min_amount}")


def make_case(
    case_id: str,
    policy: Policy,
    *,
    product: str,
    score: int | None,
    annual_income: Decimal,
    monthly_debt: Decimal,
    request: Request,
    tradelines: int | None = None,
    history_months: int | None = None,
    unresolved_dispute: bool = False,
    key_factors: tuple[tuple[str, str, str], ...] = (),
) -> Case:
    """A valid case dated the day the policy takes effect. Unless given, the file is
    well clear of the thin-file rule."""
    if score is not None and not SCORE_RANGE[0] <= score <= SCORE_RANGE[1]:
        raise CannotConstructError(f"score {score} is off the bureau's scale {SCORE_RANGE}")
    as_of: dt.date = policy.effective_date
    if product == "auto":
        application = Application(
            product="auto",
            annual_income=annual_income,
            monthly_debt_payments=monthly_debt,
            requested_amount=request.amount,
            term_months=request.term_months,
            vehicle_value=request.vehicle_value,
        )
    else:
        application = Application(
            product="card",
            annual_income=annual_income,
            monthly_debt_payments=monthly_debt,
            requested_line=request.line,
        )
    report = CreditReport(
        bureau=_BUREAU,
        score=score,
        score_model="Example Score 8" if score is not None else None,
        score_range=SCORE_RANGE,
        score_date=as_of if score is not None else None,
        tradelines=(
            tradelines if tradelines is not None else policy["thinFile.minTradelines"].value + 4
        ),
        history_months=(
            history_months
            if history_months is not None
            else policy["thinFile.minHistoryMonths"].value + 72
        ),
        utilisation_pct=Decimal("25.0"),
        inquiries12m=1,
        disputes=(Dispute(tradeline_id="T2", resolved=False),) if unresolved_dispute else (),
        key_factors=tuple(KeyFactor(code=c, text=t, value=v) for c, t, v in key_factors),
    )
    return Case(case_id=case_id, as_of=as_of, application=application, credit_report=report)


def build_case(
    case_id: str,
    policy: Policy,
    *,
    product: str,
    score: int | None,
    dti_raw: Decimal,
    ltv_raw: Decimal | None = None,
    dti_cents_below: int = 0,
    ltv_cents_below: int = 0,
    line_requested: Decimal | None = None,
    tradelines: int | None = None,
    history_months: int | None = None,
    unresolved_dispute: bool = False,
    key_factors: tuple[tuple[str, str, str], ...] = (),
) -> Case:
    """A case whose DTI (and, for auto, LTV) before rounding is exactly ``dti_raw``
    (``ltv_raw``), less the given number of cents of debt (of amount financed).

    Auto asks for the middle allowed term; a card asks for ``line_requested``, by
    default the largest band line, so the line assessed is the band's own.
    """
    money: Decimal = policy["rounding.money"].value
    band = band_of(score, policy)
    if product == "auto":
        if ltv_raw is None:
            raise CannotConstructError("an auto case needs an LTV")
        terms = policy["products.auto.termsAllowed"].value
        term: int = terms[len(terms) // 2]
        amount, value = solve_amount_value(
            ltv_raw, policy["products.auto.minAmount"].value + money * ltv_cents_below, money
        )
        amount -= money * ltv_cents_below
        request = Request(amount=amount, term_months=term, vehicle_value=value)
        payment = Decimal("0.00")
        if band != "unscored":
            apr = policy[f"pricing.auto.{band}.apr"].value
            payment = amortised_payment(amount, apr, term, money)
    else:
        lines = [policy[f"pricing.card.{b}.line"].value for b in BANDS]
        line = line_requested if line_requested is not None else max(lines)
        request = Request(line=line)
        payment = Decimal("0.00")
        if band != "unscored":
            assessed = min(policy[f"pricing.card.{band}.line"].value, line)
            payment = card_payment(assessed, policy["products.card.paymentPctOfLine"].value, money)
    income, debt = solve_income_debt(payment, dti_raw, money)
    debt -= money * dti_cents_below
    if debt < 0:
        raise CannotConstructError(f"no debt is {dti_cents_below} cents under the edge")
    return make_case(
        case_id,
        policy,
        product=product,
        score=score,
        annual_income=income,
        monthly_debt=debt,
        request=request,
        tradelines=tradelines,
        history_months=history_months,
        unresolved_dispute=unresolved_dispute,
        key_factors=key_factors,
    )
