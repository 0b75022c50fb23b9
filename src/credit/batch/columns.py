"""The columnar underwriter's core: every step on whole columns (numpy arrays).

The rows reaching this module passed every input and policy check
(:func:`credit.batch.engine.decide_frame`) and hold no money beyond
:data:`credit.batch.exact.FAST_LIMIT`. Each section follows a methodology step of
the scalar underwriter (:mod:`credit.underwriting.engine`) and reads every number
from the :class:`~credit.batch.plan.BatchPlan`:

* step 2, band: the highest band whose floor the score reaches; no score, unscored;
* step 3, capacity: the auto payment through the exact float-and-tie scheme of
  :mod:`credit.batch.exact`, the card payment, DTI and LTV as exact integer
  half-up quotients;
* step 4, decide: one boolean column a step, the scalar step's own condition; the
  first step in the policy's order whose condition holds decides;
* the counteroffer search (the scalar's ``_search_auto`` and ``_search_card``):
  for a monotone test ``ok(k)`` on [lo, hi] the scalar's binary search finds the
  largest passing ``k``; here the LTV and card tests are inverted in closed form in
  integers, and the auto DTI test by the payment bound ``P`` (the largest payment
  keeping the DTI within the cap) inverted in floating point, ``kf = (P + 1/2) /
  (step x F)``, within one of the true bound ``k*`` (``ok(k) <=> k < k*``):
  ``floor(kf)`` clipped to [lo - 1, hi] and the exact tests of it and the next
  multiple settle the answer (``ok(kc+1)``: kc+1; else ``ok(kc)``: kc; else kc-1);
* step 5, the reason codes and the confidence (see :func:`_reasons` and
  :func:`_confidence`).
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, getcontext
from fractions import Fraction
from functools import cache
from math import lcm
from typing import NamedTuple

import numpy as np
import numpy.typing as npt
import polars as pl
import pyarrow as pa

from credit.batch.exact import half_up, rounded_payments
from credit.batch.plan import BatchPlan
from credit.batch.schema import decision_schema, from_cents
from credit.errors import UndecidedCaseError
from credit.policy import BANDS
from credit.underwriting.capacity import amortised_payment

__all__ = ["STEP_ORDER", "decide_columns"]

I64 = npt.NDArray[np.int64]
Bool = npt.NDArray[np.bool_]

STEP_ORDER = (
    "referUnusableFile",
    "declineHardFailure",
    "counteroffer",
    "referWithinMargin",
    "approve",
)
_DECISION_OF_STEP = ("refer", "decline", "counteroffer", "refer", "approve")
_UNSCORED = len(BANDS)  # band code of an unscored row
_BAND_NAMES = (*BANDS, "unscored")
_UNUSABLE = (
    "REFER_NO_SCORE",
    "REFER_FEW_TRADELINES",
    "REFER_SHORT_HISTORY",
    "REFER_UNRESOLVED_DISPUTE",
)
_ADVERSE = (
    ("scoreBelowMinimum", "SCORE_BELOW_MINIMUM"),
    ("dtiOverCap", "DTI_OVER_CAP"),
    ("ltvOverCap", "LTV_OVER_CAP"),
)
_MARGIN = ("REFER_SCORE_MARGIN", "REFER_DTI_MARGIN", "REFER_LTV_MARGIN")
_KEY_FACTORS = "bureauKeyFactors"
_HALF = Decimal("0.5")
_ONE = Decimal(1)
_CONFIDENCE_QUANTUM = Decimal("0.01")
_DENSE_LIMIT = 1 << 22  # headrooms up to this are tabled densely


# ---------------------------------------------------------------- step 3: the payment


class _Payment:
    """The amortised payment in payment units: half-up(amount x F / u), exact."""

    def __init__(self, plan: BatchPlan) -> None:
        self.plan = plan
        self.terms = plan.auto.terms
        unit = Decimal(plan.money_unit)
        self.table = np.array(
            [float(plan.factors[(band, t)] / unit) for band in BANDS for t in self.terms],
            dtype=np.float64,
        )

    def key(self, band: npt.NDArray[np.int8], term_index: I64) -> I64:
        return band.astype(np.int64) * len(self.terms) + term_index

    def units(self, amount: I64, key: I64) -> I64:
        """See :mod:`credit.batch.exact`: rows within the tolerance of a half are
        recomputed with the scalar's Decimal function."""
        return rounded_payments(amount, self.table[key], key, self.exact)

    def exact(self, amount_cents: int, key: int) -> int:
        plan = self.plan
        band, term = BANDS[key // len(self.terms)], self.terms[key % len(self.terms)]
        payment = amortised_payment(
            from_cents(amount_cents),
            plan.apr[("auto", band)],
            term,
            plan.policy["rounding.money"].value,
        )
        return int(payment.scaleb(2)) // plan.money_unit


def _pay_bound(cap: I64, income: I64, debt: I64, plan: BatchPlan) -> I64:
    """The largest payment (payment units) keeping the DTI within the cap:
    half-up((debt + pay) x num / (income x den)) <= cap
    <=> debt + pay <= ((2 cap + 1) x income x den - 1) // (2 num)."""
    room = ((2 * cap + 1) * income * plan.dti_den - 1) // (2 * plan.dti_num) - debt
    return room // plan.money_unit


# ---------------------------------------------------------------- the counteroffer search


def _auto_offers(
    plan: BatchPlan,
    payment: _Payment,
    band: npt.NDArray[np.int8],
    asked_term: I64,
    amount: I64,
    value: I64,
    income: I64,
    debt: I64,
) -> tuple[I64, I64]:
    """(offer amount in cents, offer term), 0 where there is none: per allowed term
    no shorter than the one asked, the largest multiple of the step from the minimum
    to the amount asked passing the LTV and DTI caps; the largest amount over the
    terms, ties to the shortest term."""
    p = plan.auto
    assert p.ltv_cap is not None
    step = p.step_cents
    lo = -(-p.min_cents // step)
    hi = amount // step
    k_ltv = ((2 * p.ltv_cap + 1) * value * plan.ltv_den - 1) // (2 * step * plan.ltv_num)
    bound = _pay_bound(np.full(len(amount), p.dti_cap), income, debt, plan)
    best_amount = np.zeros(len(amount), dtype=np.int64)
    best_term = np.zeros(len(amount), dtype=np.int64)
    for ti, term in enumerate(p.terms):
        key = payment.key(band, np.full(len(amount), ti, dtype=np.int64))
        f = payment.table[key]
        kf = np.floor((bound.astype(np.float64) + 0.5) / (f * step))
        kc = np.clip(kf, lo - 1, hi.astype(np.float64)).astype(np.int64)
        ok_up = payment.units((kc + 1) * step, key) <= bound
        ok_at = payment.units(kc * step, key) <= bound
        k_dti = np.where(ok_up, kc + 1, np.where(ok_at, kc, kc - 1))
        k = np.minimum(np.minimum(hi, k_ltv), k_dti)
        found = (asked_term <= term) & (k >= lo)
        offer = np.where(found, k * step, 0)
        better = found & (offer > best_amount)  # strictly larger: ties keep the shorter
        best_amount = np.where(better, offer, best_amount)
        best_term = np.where(better, term, best_term)
    return best_amount, best_term


def _card_offers(plan: BatchPlan, line: I64, income: I64, debt: I64) -> I64:
    """The offer line in cents, 0 where there is none: the largest multiple of the
    step, at least the minimum line, below the line assessed, passing the DTI cap."""
    p = plan.card
    step = p.step_cents
    lo = -(-p.min_cents // step)
    hi = -(-line // step) - 1
    bound = _pay_bound(np.full(len(line), p.dti_cap), income, debt, plan)
    den = 100 * plan.money_unit * p.pct_den  # payment units = half-up(line x num / den)
    if p.pct_num > 0:
        k_dti = (den * (2 * bound + 1) - 1) // (2 * step * p.pct_num)
    else:
        k_dti = np.where(bound >= 0, hi, lo - 1)
    k = np.minimum(hi, k_dti)
    return np.where(k >= lo, k * step, 0)


# ---------------------------------------------------------------- step 5: reasons


def _adverse_parts(plan: BatchPlan, bits: int) -> tuple[list[str], list[str]]:
    """The adverse codes before and after the bureau's key factors, in the policy's
    factor order, for the failures in ``bits`` (score 1, DTI 2, LTV 4)."""
    failed = {group: code for i, (group, code) in enumerate(_ADVERSE) if bits >> i & 1}
    at = plan.factor_order.index(_KEY_FACTORS)
    before = [failed[g] for g in plan.factor_order[:at] if g in failed]
    after = [failed[g] for g in plan.factor_order[at + 1 :] if g in failed]
    return before, after


def _patterns(plan: BatchPlan) -> list[list[str]]:
    """Every reason list a row can have without key factors, by pattern
    (8 x step + the step's flag bits)."""
    out: list[list[str]] = []
    for step in STEP_ORDER:
        for bits in range(16):
            if step == "referUnusableFile":
                codes = [c for i, c in enumerate(_UNUSABLE) if bits >> i & 1]
            elif step in ("declineHardFailure", "counteroffer"):
                before, after = _adverse_parts(plan, bits & 7)
                codes = (before + after)[: plan.max_reasons]
            elif step == "referWithinMargin":
                codes = [c for i, c in enumerate(_MARGIN) if bits >> i & 1]
            else:
                codes = []
            out.append(codes)
    return out


class _ReasonTables(NamedTuple):
    """What :func:`_reasons` reads of the plan, made once per plan: the patterns as a
    list column, the codes' vocabulary and index, the adverse codes before and after
    the key factors for each set of failures (codes' indices, padded) and the key
    factors' reason codes by bureau code (indices)."""

    lists: pl.Series
    patterns: int  # how many
    vocab: list[str]
    to_index: dict[str, int]
    pre: npt.NDArray[np.int64]
    post: npt.NDArray[np.int64]
    pre_len: npt.NDArray[np.int64]
    post_len: npt.NDArray[np.int64]


def _reason_tables(plan: BatchPlan) -> _ReasonTables:
    patterns = _patterns(plan)
    lists = pl.Series("reasonCodes", patterns, dtype=pl.List(pl.String()))
    vocab = sorted({c for codes in patterns for c in codes} | set(plan.key_factor_codes.values()))
    index = {c: i for i, c in enumerate(vocab)}
    width = plan.max_reasons
    pre = np.zeros((8, width + 1), dtype=np.int64)
    post = np.zeros((8, width + 1), dtype=np.int64)
    pre_len, post_len = np.zeros(8, dtype=np.int64), np.zeros(8, dtype=np.int64)
    for bits in range(8):
        before, after = _adverse_parts(plan, bits)
        pre_len[bits], post_len[bits] = len(before), len(after)
        pre[bits, : len(before)] = [index[c] for c in before]
        post[bits, : len(after)] = [index[c] for c in after]
    to_index = {bureau: index[code] for bureau, code in plan.key_factor_codes.items()}
    for table in (pre, post, pre_len, post_len):
        table.flags.writeable = False  # shared by every batch of the plan
    return _ReasonTables(lists, len(patterns), vocab, to_index, pre, post, pre_len, post_len)


def _reasons(
    plan: BatchPlan,
    pattern: I64,
    adverse_bits: I64,
    with_factors: Bool,
    key_factors: pl.Series,
) -> pl.Series:
    """The reason codes of every row, in order.

    A row's codes follow from its step and the step's flags (16 patterns a step): they
    are gathered from the list of patterns. A decline on the score states the bureau's
    key factors too, in their place in the factor order (``before + key factors +
    after``, at most ``maxReasons``): those rows' lists are laid out from offsets,
    each value knowing its row and its slot, appended to the patterns and gathered
    the same way."""
    tables = plan.kept("reason tables", lambda: _reason_tables(plan))
    lists, vocab, width = tables.lists, tables.vocab, plan.max_reasons
    pre, post, pre_len, post_len = tables.pre, tables.post, tables.pre_len, tables.post_len
    rows = np.flatnonzero(with_factors)
    if not len(rows):
        return lists.gather(pl.Series(pattern))
    kf = key_factors.gather(pl.Series(rows))
    kf_len = kf.list.len().to_numpy().astype(np.int64)
    kf_codes = kf.explode().replace_strict(tables.to_index, return_dtype=pl.Int64()).to_numpy()
    kf_start = np.cumsum(kf_len) - kf_len
    b = adverse_bits[rows]
    length = np.minimum(pre_len[b] + kf_len + post_len[b], plan.max_reasons)
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(length, out=offsets[1:])
    row = np.repeat(np.arange(len(rows)), length)  # the (key-factor) row of each value
    j = np.arange(len(row)) - offsets[row]  # its slot in the row
    bits_r = b[row]
    j_kf = j - pre_len[bits_r]
    j_post = j_kf - kf_len[row]
    values = np.where(
        j_kf < 0,
        pre[bits_r, np.minimum(j, width)],
        np.where(
            j_post < 0,
            kf_codes[np.clip(kf_start[row] + j_kf, 0, max(len(kf_codes) - 1, 0))],
            post[bits_r, np.clip(j_post, 0, width)],
        ),
    )
    strings = pa.array(vocab, type=pa.large_string()).take(pa.array(values))
    built = pl.from_arrow(pa.LargeListArray.from_arrays(pa.array(offsets), strings))
    assert isinstance(built, pl.Series)
    at = pattern.copy()
    at[rows] = tables.patterns + np.arange(len(rows))
    # one chunk: a gather across chunks of a list column is many times slower
    return pl.concat([lists, built.rename("reasonCodes")], rechunk=True).gather(pl.Series(at))


# ---------------------------------------------------------------- step 5: confidence


def _confidence_scale(
    plan: BatchPlan,
) -> tuple[int, tuple[int, int], dict[bool, tuple[int, int]], tuple[int, int]]:
    """Integer coefficients putting each headroom over one common denominator D:
    score |s - min| / W_s = n_s / D; DTI |x 10^e - cap| / W_d = |a x - b| / D; LTV
    likewise. Returns (D, score (a, 0), DTI (a, b) by product, LTV (a, b))."""
    w_s, w_d, w_l = (Fraction(w) for w in plan.confidence_widths)
    unit = Fraction(10) ** plan.pct_exp
    policy = plan.policy
    caps = {
        True: Fraction(policy["products.auto.maxDtiPct"].value),
        False: Fraction(policy["products.card.maxDtiPct"].value),
    }
    ltv_cap = Fraction(policy["products.auto.maxLtvPct"].value)
    parts = [1 / w_s, unit / w_d, unit / w_l, ltv_cap / w_l, *(cap / w_d for cap in caps.values())]
    d = 1
    for part in parts:
        d = lcm(d, part.denominator)

    def whole(x: Fraction) -> int:
        y = x * d
        assert y.denominator == 1
        return int(y)

    return (
        d,
        (whole(1 / w_s), 0),
        {k: (whole(unit / w_d), whole(cap / w_d)) for k, cap in caps.items()},
        (whole(unit / w_l), whole(ltv_cap / w_l)),
    )


def _confidence(
    plan: BatchPlan,
    is_auto: Bool,
    scored: Bool,
    score: I64,
    min_score: I64,
    dti: I64,
    ltv: I64,
    unusable: Bool,
) -> I64:
    """The scalar's confidence in hundredths: 1 - 0.5 / (1 + m) half-up, m the
    smallest headroom (score, DTI, LTV), 0 for a referral of an unusable file.

    Each headroom is an exact rational n / D (D common): the row's smallest is the
    smallest n. The scalar computes each headroom as one correctly rounded Decimal
    division of exact operands, so its m is the correctly rounded n / D; the formula
    is then evaluated once per distinct n with the scalar's own Decimal arithmetic."""
    d, (s_a, _), dti_ab, (l_a, l_b) = plan.kept("confidence scale", lambda: _confidence_scale(plan))
    big = np.iinfo(np.int64).max
    n_s = np.where(scored, np.abs(score - min_score) * s_a, big)
    a_d = np.where(is_auto, dti_ab[True][0], dti_ab[False][0])
    b_d = np.where(is_auto, dti_ab[True][1], dti_ab[False][1])
    n_d = np.abs(dti * a_d - b_d)
    n_l = np.where(is_auto, np.abs(ltv * l_a - l_b), big)
    m = np.minimum(np.minimum(n_s, n_d), n_l)
    m = np.where(unusable, 0, m)
    context = getcontext()

    def hundredths(v: int) -> int:
        m_dec = context.divide(Decimal(v), Decimal(d))
        conf = (_ONE - _HALF / (_ONE + m_dec)).quantize(_CONFIDENCE_QUANTUM, ROUND_HALF_UP)
        return int(conf.scaleb(2))

    top = int(m.max()) if len(m) else 0
    if top <= _DENSE_LIMIT:  # a table over 0..max: no sort
        seen = np.zeros(top + 1, dtype=np.bool_)
        seen[m] = True
        table = np.zeros(top + 1, dtype=np.int64)
        for v in np.flatnonzero(seen):
            table[v] = hundredths(int(v))
        return table[m]
    distinct, inverse = np.unique(m, return_inverse=True)
    values = np.array([hundredths(int(v)) for v in distinct], dtype=np.int64)
    return values[inverse]


# ---------------------------------------------------------------- Arrow output


def _decimal(units: I64, scale: int, valid: Bool | None = None) -> pa.Array:
    """Integer units of 10^-scale as an Arrow decimal128(38, scale), no copy per value."""
    n = len(units)
    data = np.empty((n, 2), dtype=np.int64)
    data[:, 0] = units
    data[:, 1] = units >> 63  # sign extension to 128 bits (little-endian)
    buffers: list[pa.Buffer | None] = [None, pa.py_buffer(data)]
    if valid is not None and not valid.all():
        buffers[0] = pa.py_buffer(np.packbits(valid, bitorder="little"))
        return pa.Array.from_buffers(
            pa.decimal128(38, scale), n, buffers, null_count=int(n - valid.sum())
        )
    return pa.Array.from_buffers(pa.decimal128(38, scale), n, buffers, null_count=0)


@cache
def _vocabulary(vocab: tuple[str, ...]) -> pl.Series:
    return pl.Series(vocab, dtype=pl.String())


def _strings(vocab: tuple[str, ...], codes: npt.NDArray[np.integer]) -> pl.Series:
    return _vocabulary(vocab).gather(pl.Series(codes))


def _ints(values: I64, valid: Bool) -> pa.Array:
    return pa.array(values.astype(np.int32), mask=~valid)


# ---------------------------------------------------------------- the whole decision


def _arrays(df: pl.DataFrame, fills: dict[str, int]) -> list[I64]:
    """The columns ``fills`` names as integer arrays, in its order, each null as its
    fill: the columns with a null (a count each column keeps) filled in one select,
    each an expression of its own, one after another (each eager operation hands its
    work to polars' thread pool and back: on a small batch that is most of its cost)."""
    nulls = [name for name in fills if df[name].null_count()]
    filled = df.select_seq([pl.col(name).fill_null(fills[name]) for name in nulls])
    return [
        (filled[name] if name in nulls else df[name]).to_numpy().astype(np.int64, copy=False)
        for name in fills
    ]


def decide_columns(df: pl.DataFrame, plan: BatchPlan) -> pl.DataFrame:
    """Decide checked rows; the decision columns (without caseId and the error
    columns), one row per input row, in order."""
    n = df.height
    auto, card = plan.auto, plan.card
    is_auto = (df["product"] == "auto").to_numpy()
    scored = df["score"].is_not_null().to_numpy()
    score, income, debt, amount, term, value, asked_line, tradelines, history, disputes = _arrays(
        df,
        {
            "score": 0,
            "annualIncomeCents": 1,
            "monthlyDebtCents": 0,
            "requestedAmountCents": 0,
            "termMonths": 0,
            "vehicleValueCents": 1,
            "requestedLineCents": 0,
            "tradelines": 0,
            "historyMonths": 0,
            "unresolvedDisputes": 0,
        },
    )

    # methodology step 2: band the score
    band = np.full(n, _UNSCORED, dtype=np.int8)
    for name, floor in reversed(plan.bands):
        band[scored & (score >= floor)] = BANDS.index(name)
    priced = band != _UNSCORED

    # methodology step 3: capacity
    payment = _Payment(plan)
    term_index = np.zeros(max(auto.terms) + 1, dtype=np.int64)
    term_index[list(auto.terms)] = np.arange(len(auto.terms))
    pay = np.zeros(n, dtype=np.int64)
    auto_rows = np.flatnonzero(is_auto & priced)
    if len(auto_rows):
        key = payment.key(band[auto_rows], term_index[term[auto_rows]])
        pay[auto_rows] = payment.units(amount[auto_rows], key) * plan.money_unit
    band_line = np.array([plan.card_line_cents[b] for b in BANDS] + [0], dtype=np.int64)
    card_priced = ~is_auto & priced
    line = np.where(card_priced, np.minimum(band_line[band], asked_line), 0)
    card_den = 100 * plan.money_unit * card.pct_den
    card_pay = half_up(line * card.pct_num, card_den) * plan.money_unit
    pay = np.where(card_priced, card_pay, pay)
    dti = half_up((debt + pay) * plan.dti_num, income * plan.dti_den)
    ltv = np.where(is_auto, half_up(amount * plan.ltv_num, value * plan.ltv_den), 0)

    assert auto.ltv_cap is not None and auto.ltv_low is not None
    min_score = np.where(is_auto, auto.min_score, card.min_score)
    dti_cap = np.where(is_auto, auto.dti_cap, card.dti_cap)
    dti_low = np.where(is_auto, auto.dti_low, card.dti_low)
    score_fails = scored & (score < min_score)
    dti_fails = dti > dti_cap
    ltv_fails = is_auto & (ltv > auto.ltv_cap)
    fails = dti_fails | ltv_fails
    no_score = ~scored
    thin_tl = tradelines < plan.min_tradelines
    thin_hist = history < plan.min_history
    disputed = disputes > 0
    unusable = no_score | thin_tl | thin_hist | disputed
    in_score = scored & (score >= min_score) & (score <= min_score + plan.score_margin)
    in_dti = (dti >= dti_low) & (dti <= dti_cap)
    in_ltv = is_auto & (ltv >= auto.ltv_low) & (ltv <= auto.ltv_cap)
    any_margin = in_score | in_dti | in_ltv

    # the counteroffer search, where a counteroffer could decide
    needs = scored & ~score_fails & fails
    offer_amount = np.zeros(n, dtype=np.int64)
    offer_term = np.zeros(n, dtype=np.int64)
    offer_line = np.zeros(n, dtype=np.int64)
    rows = np.flatnonzero(needs & is_auto)
    if len(rows):
        a, t = _auto_offers(
            plan,
            payment,
            band[rows],
            term[rows],
            amount[rows],
            value[rows],
            income[rows],
            debt[rows],
        )
        offer_amount[rows], offer_term[rows] = a, t
    rows = np.flatnonzero(needs & ~is_auto)
    if len(rows):
        offer_line[rows] = _card_offers(plan, line[rows], income[rows], debt[rows])
    has_offer = (offer_term > 0) | (offer_line > 0)

    # methodology step 4: the policy's steps in order; the first that applies decides
    clean = scored & ~score_fails & ~fails
    condition = {
        "referUnusableFile": unusable,
        "declineHardFailure": scored & (score_fails | (fails & ~has_offer)),
        "counteroffer": scored & ~score_fails & fails & has_offer,
        "referWithinMargin": clean & any_margin,
        "approve": clean & ~any_margin,
    }
    step = np.select(
        [condition[s] for s in plan.steps], [STEP_ORDER.index(s) for s in plan.steps], -1
    ).astype(np.int64)
    if (step < 0).any():  # never by fallthrough: a row no step decides is an error
        at = int(np.flatnonzero(step < 0)[0])
        raise UndecidedCaseError(
            "no decision step applies", case_id=df["caseId"][at], rule=plan.policy["steps"].cite()
        )

    # step 5: the reasons and the confidence
    bits4 = no_score * 1 + thin_tl * 2 + thin_hist * 4 + disputed * 8
    adverse_bits = score_fails * 1 + dti_fails * 2 + ltv_fails * 4
    margin_bits = in_score * 1 + in_dti * 2 + in_ltv * 4
    flags = np.select(
        [step == 0, (step == 1) | (step == 2), step == 3], [bits4, adverse_bits, margin_bits], 0
    )
    pattern = np.maximum(step, 0) * 16 + flags
    with_factors = (step == 1) & score_fails & (df["keyFactorCodes"].list.len().to_numpy() > 0)
    reasons = _reasons(plan, pattern, adverse_bits, with_factors, df["keyFactorCodes"])
    confidence = _confidence(plan, is_auto, scored, score, min_score, dti, ltv, unusable)

    # the terms: approve at the band's rate (auto: as asked; card: the line assessed);
    # counteroffer at the band's rate with the offer
    approve = step == STEP_ORDER.index("approve")
    counter = step == STEP_ORDER.index("counteroffer")
    with_terms = approve | counter
    schema = decision_schema(plan.policy)
    apr_type = schema["apr"]
    assert isinstance(apr_type, pl.Decimal)
    apr_scale = apr_type.scale or 0
    apr_units = np.array(
        [[int(plan.apr[(p, b)].scaleb(apr_scale)) for b in BANDS] + [0] for p in ("card", "auto")],
        dtype=np.int64,
    )
    apr = apr_units[is_auto.astype(np.int64), band]
    terms_amount = np.where(approve & is_auto, amount, offer_amount)
    terms_term = np.where(approve & is_auto, term, offer_term)
    terms_line = np.where(approve & ~is_auto, line, offer_line)
    pct_scale = max(0, -plan.pct_exp)
    pct_units = 10 ** max(0, plan.pct_exp)
    table = pa.table(
        {
            "dtiPct": _decimal(dti * pct_units, pct_scale),
            "ltvPct": _decimal(ltv * pct_units, pct_scale, is_auto),
            "apr": _decimal(apr, apr_scale, with_terms),
            "amount": _decimal(terms_amount, 2, with_terms & is_auto),
            "termMonths": _ints(terms_term, with_terms & is_auto),
            "creditLine": _decimal(terms_line, 2, with_terms & ~is_auto),
            "confidence": _decimal(confidence, 2),
        }
    )
    out = pl.from_arrow(table)
    assert isinstance(out, pl.DataFrame)
    return out.with_columns(
        reasonCodes=reasons,
        decision=_strings(_DECISION_OF_STEP, step),
        scoreBand=_strings(_BAND_NAMES, band),
        step=_strings(STEP_ORDER, step),
    )
