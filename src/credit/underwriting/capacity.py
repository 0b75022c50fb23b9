"""Methodology step 3: capacity (reference policy, "Capacity").

All arithmetic is exact ``Decimal``. A payment is rounded half-up to the policy's
money quantum; a percentage is rounded half-up to the policy's percent quantum, and
that rounded figure is both the one compared with a cap and the one stated.
"""

from __future__ import annotations

from decimal import (
    ROUND_HALF_EVEN,
    ROUND_HALF_UP,
    Context,
    Decimal,
    DivisionByZero,
    InvalidOperation,
    Overflow,
    localcontext,
)
from functools import lru_cache

__all__ = [
    "amortised_payment",
    "card_payment",
    "dti_pct",
    "ltv_pct",
    "payment_factor",
    "round_half_up",
]

_PRECISION = 34  # digits carried before the final rounding (IEEE decimal128)
# The context every operation below runs in: 34 digits, Python's default rounding and
# traps. Calling its methods is the same arithmetic as operators inside
# ``localcontext(prec=34)``, without entering a context per call (a hot path).
_CTX = Context(
    prec=_PRECISION,
    rounding=ROUND_HALF_EVEN,
    traps=[InvalidOperation, DivisionByZero, Overflow],
)
_HUNDRED = Decimal(100)
_TWELVE_HUNDRED = Decimal(1200)
# The same context rounding halves away from zero: its quantize is ``value.quantize(
# quantum, rounding=ROUND_HALF_UP, context=_CTX)`` without the keywords read per call.
_HALF_UP = _CTX.copy()
_HALF_UP.rounding = ROUND_HALF_UP
_quantize_half_up = _HALF_UP.quantize


def round_half_up(value: Decimal, quantum: Decimal) -> Decimal:
    """Round to the quantum (0.01, 0.1), halves away from zero."""
    return _quantize_half_up(value, quantum)


@lru_cache(maxsize=256)
def payment_factor(apr_pct: Decimal, term_months: int) -> Decimal:
    """r / (1 - (1 + r)^-n) with r = APR / 12, carried to 34 significant digits."""
    with localcontext() as ctx:
        ctx.prec = _PRECISION
        r = apr_pct / _TWELVE_HUNDRED
        if r == 0:
            return Decimal(1) / Decimal(term_months)
        return r / (1 - (1 + r) ** -term_months)


def amortised_payment(
    amount: Decimal, apr_pct: Decimal, term_months: int, money_quantum: Decimal
) -> Decimal:
    """The fully amortising monthly payment P * r / (1 - (1 + r)^-n), half-up to the cent."""
    return round_half_up(_CTX.multiply(amount, payment_factor(apr_pct, term_months)), money_quantum)


def card_payment(line: Decimal, payment_pct: Decimal, money_quantum: Decimal) -> Decimal:
    """The assessed card payment: a percentage of the line, half-up to the cent."""
    return round_half_up(_CTX.divide(_CTX.multiply(line, payment_pct), _HUNDRED), money_quantum)


def dti_pct(
    monthly_debt: Decimal, new_payment: Decimal, annual_income: Decimal, pct_quantum: Decimal
) -> Decimal:
    """(existing debt + new payment) / (annual income / 12) x 100, half-up.

    Computed as (debt + payment) x 1200 / annual income, which is the same quantity
    without rounding the monthly income first.
    """
    numerator = _CTX.multiply(_CTX.add(monthly_debt, new_payment), _TWELVE_HUNDRED)
    return round_half_up(_CTX.divide(numerator, annual_income), pct_quantum)


def ltv_pct(amount: Decimal, vehicle_value: Decimal, pct_quantum: Decimal) -> Decimal:
    """Amount financed / vehicle value x 100, half-up."""
    return round_half_up(_CTX.divide(_CTX.multiply(amount, _HUNDRED), vehicle_value), pct_quantum)
