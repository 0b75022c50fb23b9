"""Exact rounding on columns: the amortised payment and the half-up quotients.

**Half-up of an integer quotient.** For integers ``N >= 0`` and ``D > 0``,
half-up(N / D) is ``(2N + D) // 2D``, computed in 64-bit integers: exact. The DTI
and LTV (and the card payment) are such quotients (:mod:`credit.batch.plan`).

**The amortised payment.** The scalar underwriter computes
``half-up(P x F)`` to the money quantum, where ``F = r / (1 - (1 + r)^-n)`` is a
34-digit ``Decimal`` (``payment_factor``) and ``P x F`` is rounded to 34
significant digits before the half-up. In payment units (``u`` cents a quantum)
the exact figure is ``y = A x F / u`` for ``A`` the amount in cents.

The columns compute ``x = fl(A x fl(F / u))`` in IEEE double. With ``A < 2^53``
(exact as a double; the batch sends larger amounts to the scalar underwriter) and
unit roundoff ``2^-53``, ``fl(F / u) = (F / u)(1 + e1)`` and the product adds
``(1 + e2)``, ``|e1|, |e2| <= 2^-53``, so ``|x - y| <= (2^-52 + 2^-106) y < 2^-51 y``.
The scalar's own 34-digit rounding moves ``y`` by at most ``10^-33 y``.

Half-up differs between two values only if a half (``k + 1/2``) lies between them.
So wherever ``x`` is farther than ``2^-40 (|x| + 1)`` from the nearest half -- 2,048
times the worst float error -- ``floor(x + 1/2)`` is the scalar's result: the float
``x + 1/2`` is then more than ``2^-41`` from an integer and its own rounding error
(``2^-53 (|x| + 1/2)``) cannot cross one. A row within that distance of a half is
*flagged* and recomputed with the scalar's own ``Decimal`` function
(:func:`credit.underwriting.capacity.amortised_payment`). Random figures land there
with probability about ``2^-39 |x|`` (none in a million cases); an exact half, which
a factor with a short decimal expansion can give (a zero APR over 40 months), is
always flagged and always exact.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

__all__ = ["FAST_LIMIT", "TIE_TOLERANCE", "half_up", "rounded_payments"]

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

# A money figure (in cents) up to this is exact as a double, and every product the
# columns form stays inside Int64; a row with a larger figure goes to the scalar
# underwriter (an implementation limit, not a policy threshold: about $11 billion).
FAST_LIMIT = 2**40
TIE_TOLERANCE = 2.0**-40


def half_up(numerator: I64, denominator: I64 | int) -> I64:
    """half-up(N / D) for integers N >= 0, D > 0: ``(2N + D) // 2D`` (exact)."""
    return (2 * numerator + denominator) // (2 * denominator)


def rounded_payments(
    amount_cents: I64,
    factor: F64,
    key: I64,
    exact: Callable[[int, int], int],
) -> I64:
    """half-up(amount x F / u) for each row, exactly as the scalar computes it.

    ``factor`` holds ``float(F / u)`` for each row's (band, term), ``key`` an integer
    naming that pair, and ``exact(amount_cents, key)`` is the scalar's own Decimal
    computation in payment units, called only for the rows within the tie tolerance
    of a half (see the module docstring for why every other row is exact).
    """
    x = amount_cents.astype(np.float64) * factor
    out: I64 = np.floor(x + 0.5).astype(np.int64)
    tie = np.abs(x - np.floor(x) - 0.5) <= (np.abs(x) + 1.0) * TIE_TOLERANCE
    for i in np.flatnonzero(tie):
        out[i] = exact(int(amount_cents[i]), int(key[i]))
    return out
