"""The policy's "Capacity" formulas in exact rational arithmetic.

Every quantity is a :class:`fractions.Fraction` (a Decimal converts to one exactly)
until the one rounding the policy prescribes: half-up to the policy's quantum,
``rounding.money`` for a payment and ``rounding.percent`` for a DTI or LTV. Nothing
is carried to a fixed number of digits, so no intermediate rounding can differ from
the text. Written apart from the underwriter's arithmetic, to check it.

The constants here belong to the formulas, not to the policy: twelve months in a
year (r = APR / 12, monthly income = annual income / 12) and a hundred to a percent.
"""

from __future__ import annotations

from decimal import Context, Decimal
from fractions import Fraction
from functools import lru_cache

__all__ = [
    "amortised_payment",
    "card_payment",
    "dti_pct",
    "exact_payment",
    "half_up",
    "half_up_ratio",
    "ltv_pct",
    "payment_factor",
    "rational",
    "to_decimal",
]

MONTHS_PER_YEAR = 12
PERCENT = 100
# Only turns a whole number of quanta back into a Decimal: wide enough to be exact.
_WIDE = Context(prec=80)


def to_decimal(quanta: int, quantum: Decimal) -> Decimal:
    """``quanta`` whole quanta as a Decimal written to the quantum's places."""
    return _WIDE.multiply(Decimal(quanta), quantum)


def rational(value: Decimal | int) -> Fraction:
    """A Decimal (or int) as the exact fraction it denotes."""
    if isinstance(value, int):
        return Fraction(value)
    return Fraction(*value.as_integer_ratio())


def half_up_ratio(num: int, den: int, quantum: Decimal) -> Decimal:
    """num / den (den > 0) rounded half-up (halves away from zero) to the quantum."""
    q_num, q_den = quantum.as_integer_ratio()
    num, den = num * q_den, den * q_num  # now in quanta
    whole = (2 * abs(num) + den) // (2 * den)
    return to_decimal(whole if num >= 0 else -whole, quantum)


def half_up(value: Fraction, quantum: Decimal) -> Decimal:
    """``value`` rounded half-up (away from zero) to the quantum, as a Decimal."""
    return half_up_ratio(value.numerator, value.denominator, quantum)


@lru_cache(maxsize=256)
def payment_factor(apr_pct: Decimal, term_months: int) -> Fraction:
    """r / (1 - (1 + r)^-n) with r = APR / 12, exactly; 1 / n when the APR is 0 (the
    formula's limit: an interest-free loan repays the amount in n equal parts)."""
    r = rational(apr_pct) / (MONTHS_PER_YEAR * PERCENT)
    if r == 0:
        return Fraction(1, term_months)
    growth = (1 + r) ** term_months
    return r * growth / (growth - 1)


def exact_payment(amount: Decimal, apr_pct: Decimal, term_months: int) -> Fraction:
    """The fully amortising monthly payment P * r / (1 - (1 + r)^-n), unrounded."""
    return rational(amount) * payment_factor(apr_pct, term_months)


# The four formulas below multiply out the integer ratios of their Decimal arguments
# (exact, as a Fraction would be, without reducing each intermediate).


def amortised_payment(
    amount: Decimal, apr_pct: Decimal, term_months: int, money_quantum: Decimal
) -> Decimal:
    """The auto payment, half-up to the money quantum."""
    a_num, a_den = amount.as_integer_ratio()
    factor = payment_factor(apr_pct, term_months)
    return half_up_ratio(a_num * factor.numerator, a_den * factor.denominator, money_quantum)


def card_payment(line: Decimal, payment_pct: Decimal, money_quantum: Decimal) -> Decimal:
    """The assessed card payment, ``payment_pct`` % of the line, half-up."""
    l_num, l_den = line.as_integer_ratio()
    p_num, p_den = payment_pct.as_integer_ratio()
    return half_up_ratio(l_num * p_num, l_den * p_den * PERCENT, money_quantum)


def dti_pct(
    monthly_debt: Decimal, new_payment: Decimal, annual_income: Decimal, pct_quantum: Decimal
) -> Decimal:
    """(existing monthly debt + new payment) / (annual income / 12) x 100, half-up."""
    d_num, d_den = monthly_debt.as_integer_ratio()
    p_num, p_den = new_payment.as_integer_ratio()
    i_num, i_den = annual_income.as_integer_ratio()  # monthly income: i_num / (12 i_den)
    owed_num, owed_den = d_num * p_den + p_num * d_den, d_den * p_den
    return half_up_ratio(
        owed_num * MONTHS_PER_YEAR * i_den * PERCENT, owed_den * i_num, pct_quantum
    )


def ltv_pct(amount: Decimal, vehicle_value: Decimal, pct_quantum: Decimal) -> Decimal:
    """Amount financed / vehicle value x 100, half-up."""
    a_num, a_den = amount.as_integer_ratio()
    v_num, v_den = vehicle_value.as_integer_ratio()
    return half_up_ratio(a_num * v_den * PERCENT, a_den * v_num, pct_quantum)
