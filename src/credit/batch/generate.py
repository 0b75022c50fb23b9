"""Large seeded case sets for the differential runs and the benchmarks.

``generate_frame(seed, count)`` returns flat case rows (:mod:`credit.batch.schema`)
of two kinds:

* the bundled generator's cases (:func:`credit.examples.generate_cases`): every
  constructed edge of the policy (score, DTI and LTV at, under and over each cap
  and margin and either side of each rounding half; thin files; disputes; longer-
  term cures; counteroffers; more reasons than a notice may state) and the
  synthetic population around them -- ``examples`` of them (all the constructed
  edges whenever ``examples`` is at least their number);
* stress rows drawn in columns (numpy, seeded): scores on and beside every band
  floor, product minimum and margin; files on and beside each thin-file minimum;
  disputes; DTIs aimed at each cap, each margin's low end and the rounding halves
  around them (exactly, on incomes that are a multiple of $1,200), and far over the
  cap so that the counteroffer search runs; LTVs aimed at the cap and margin and
  their halves; requested lines on and off the step around each band's line; and a
  few rows of each error the underwriter reports (a date before the policy, a term
  not offered, an amount or line under the minimum, an unknown key-factor code, a
  score under every band) and of money too large for the fast path.

Every threshold is read from the policy. The same seed, count and policy give the
same rows on every platform (numpy's PCG64 and IEEE arithmetic only).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np
import polars as pl

from credit.batch.exact import FAST_LIMIT
from credit.batch.plan import plan_for
from credit.batch.schema import CASE_COLUMNS, MONITORING_COLUMNS, cases_to_frame
from credit.examples import (
    _ETHNICITIES,
    _MARITAL,
    _RACES,
    _SEXES,
    SCORE_RANGE,
    generate_cases,
)
from credit.models import parse_case
from credit.policy import BANDS, Policy, default_policy

__all__ = ["DEFAULT_EXAMPLES", "generate_frame", "stress_frame"]

DEFAULT_EXAMPLES = 1000


def generate_frame(
    seed: int,
    count: int,
    *,
    policy: Policy | None = None,
    examples: int = DEFAULT_EXAMPLES,
) -> pl.DataFrame:
    """``count`` flat case rows: ``min(examples, count)`` from the bundled generator
    (all its constructed edges first), the rest stress rows."""
    policy = policy or default_policy()
    n_examples = min(examples, count)
    parts = []
    if n_examples:
        documents = generate_cases(seed, n_examples, policy=policy)
        parts.append(cases_to_frame(parse_case(d) for d in documents))
    if count > n_examples:
        parts.append(stress_frame(seed, count - n_examples, policy=policy))
    return pl.concat(parts, how="vertical")


def _pick(rng: np.random.Generator, options: tuple[tuple[object, int], ...], n: int) -> np.ndarray:
    values = np.array([v for v, _ in options], dtype=object)
    weights = np.array([w for _, w in options], dtype=np.float64)
    return values[rng.choice(len(values), size=n, p=weights / weights.sum())]


def stress_frame(
    seed: int, count: int, *, policy: Policy | None = None, anomalies: bool = True
) -> pl.DataFrame:
    """``count`` stress rows aimed at the policy's edges (see the module docstring);
    with ``anomalies`` false, no error rows and no money beyond the fast path (a
    clean portfolio, for timing the decisions themselves)."""
    policy = policy or default_policy()
    plan = plan_for(policy)
    rng = np.random.default_rng([seed, 0x5EED])
    n = count
    odd = 1.0 if anomalies else 0.0  # scales the rate of every anomaly
    auto, card = plan.auto, plan.card
    is_auto = rng.random(n) < 0.55

    # the date: a few before the policy takes effect
    days = rng.integers(0, 700, n)
    days = np.where(rng.random(n) < 0.002 * odd, -rng.integers(1, 60, n), days)
    as_of = [plan.effective_date + dt.timedelta(days=int(d)) for d in days]

    # the score: null, anywhere on the scale, on and beside every edge, under every band
    min_score = np.where(is_auto, auto.min_score, card.min_score)
    floors = [floor for _, floor in plan.bands]
    edges = np.stack(
        [
            min_score,
            min_score + plan.score_margin,
            min_score + plan.score_margin + 1,
            *[np.full(n, f) for f in floors[:-1]],
        ],
        axis=1,
    )
    edge = edges[np.arange(n), rng.integers(0, edges.shape[1], n)] + rng.integers(-2, 3, n)
    kind = rng.random(n)
    score = np.where(kind < 0.5, rng.integers(SCORE_RANGE[0], SCORE_RANGE[1] + 1, n), edge)
    lowest = floors[-1]
    score = np.where(kind > 1 - 0.001 * odd, lowest - rng.integers(1, 40, n), score)
    no_score = kind < 0.04

    # the file: on and beside each thin-file minimum; disputes
    near = rng.random(n) < 0.1
    tradelines = np.where(
        near,
        np.maximum(0, plan.min_tradelines + rng.integers(-2, 2, n)),
        plan.min_tradelines + rng.integers(0, 25, n),
    )
    history = np.where(
        rng.random(n) < 0.1,
        np.maximum(0, plan.min_history + rng.integers(-2, 2, n)),
        plan.min_history + rng.integers(0, 300, n),
    )
    disputes = np.where(rng.random(n) < 0.03, rng.integers(1, 3, n), 0)
    known = sorted(plan.key_factor_codes)
    order = rng.random((n, len(known))).argsort(axis=1)[:, :4]
    how_many = rng.integers(0, 5, n)
    unknown = rng.random(n) < 0.001 * odd
    codes_all = np.array(known, dtype=object)[order]
    key_factors = [
        [*row[:k], "ZZ"] if bad else list(row[:k])
        for row, k, bad in zip(codes_all.tolist(), how_many.tolist(), unknown.tolist(), strict=True)
    ]

    # the band each scored row lands in (to aim the DTI with the band's payment)
    band = np.full(n, -1)
    for name, floor in reversed(plan.bands):
        band = np.where(score >= floor, BANDS.index(name), band)
    band = np.where(no_score, -1, band)

    # auto: term, amount, vehicle value (LTV aimed at the cap, the margin and halves)
    terms = np.array(auto.terms)
    term = terms[rng.integers(0, len(terms), n)]
    term = np.where(rng.random(n) < 0.002 * odd, terms[-1] + 12, term)
    amount = rng.integers(auto.min_cents, 9_000_000, n)
    amount = np.where(rng.random(n) < 0.5, amount // auto.step_cents * auto.step_cents, amount)
    amount = np.where(
        rng.random(n) < 0.002 * odd, auto.min_cents - rng.integers(1, 10_000, n), amount
    )
    huge = rng.random(n) < 0.001 * odd
    amount = np.where(huge & is_auto, FAST_LIMIT + rng.integers(1, 10**6, n), amount)
    assert auto.ltv_cap is not None and auto.ltv_low is not None
    ltv_edges = np.array([auto.ltv_cap, auto.ltv_low, auto.ltv_cap + 1, auto.ltv_low - 1])
    target_ltv = np.where(
        rng.random(n) < 0.4,
        rng.uniform(0.4, 1.5, n) * auto.ltv_cap,
        ltv_edges[rng.integers(0, 4, n)] + rng.choice([-0.5, -0.49, 0.0, 0.49, 0.5], n),
    )
    target_ltv = np.maximum(target_ltv, 1.0)
    value = np.maximum(
        1, np.rint(amount.astype(np.float64) * plan.ltv_num / (target_ltv * plan.ltv_den))
    ).astype(np.int64)
    value = np.where(huge, amount // 2, value)

    # card: lines on and off the step around each band's line, a few under the minimum
    band_lines = np.array([plan.card_line_cents[b] for b in BANDS])
    around = band_lines[rng.integers(0, len(BANDS), n)] * rng.choice([0.6, 1.0, 1.0, 2.0], n)
    line = np.where(
        rng.random(n) < 0.5,
        around.astype(np.int64),
        rng.integers(card.min_cents // card.step_cents, 300, n) * card.step_cents,
    )
    line = np.where(rng.random(n) < 0.2, line + rng.integers(1, card.step_cents, n), line)
    line = np.where(rng.random(n) < 0.002 * odd, card.min_cents - rng.integers(1, 100, n), line)

    # the payment each row is assessed at, to aim its DTI (a float estimate is enough
    # to aim; the exact figure is the underwriter's business)
    unit = Decimal(plan.money_unit)
    factor = np.zeros(n)
    for bi, name in enumerate(BANDS):
        for t in auto.terms:
            f = float(plan.factors[(name, t)] / unit)
            factor = np.where((band == bi) & (term == t), f, factor)
    auto_pay = np.floor(amount * factor + 0.5) * plan.money_unit
    assessed = np.where(band >= 0, np.minimum(line, band_lines[np.maximum(band, 0)]), 0)
    card_pay = np.floor(assessed * card.pct_num / (100 * card.pct_den * plan.money_unit) + 0.5)
    pay = np.where(is_auto, auto_pay, card_pay * plan.money_unit).astype(np.int64)

    # income and debt: DTI aimed at the cap, the margin's low end, the halves beside
    # them (exact on incomes of $1,200 x k), far over the cap, or anywhere
    k = rng.integers(20, 200, n)
    exact_income = rng.random(n) < 0.5
    income = np.where(exact_income, k * 120_000, rng.integers(2_000_000, 30_000_000, n))
    cap = np.where(is_auto, auto.dti_cap, card.dti_cap)
    low = np.where(is_auto, auto.dti_low, card.dti_low)
    to_hundredths = 10.0 ** (2 + plan.pct_exp)  # a percent unit in hundredths of a percent
    centre = np.where(rng.random(n) < 0.5, cap, low) * to_hundredths
    style = rng.random(n)
    hundredths = np.where(
        style < 0.55,
        centre + rng.integers(-20, 21, n),
        np.where(
            style < 0.8,
            cap * to_hundredths + rng.integers(10, 1500, n),
            rng.integers(0, 6500, n),
        ),
    ).astype(np.int64)
    debt = np.where(
        exact_income,
        hundredths * k - pay,
        np.floor(hundredths / 10_000 * income / 12).astype(np.int64) - pay,
    )
    debt = np.maximum(debt, 0)

    columns: dict[str, object] = {
        "caseId": [f"S-{i:07d}" for i in range(1, n + 1)],
        "asOf": as_of,
        "product": np.where(is_auto, "auto", "card").tolist(),
        "annualIncomeCents": income,
        "monthlyDebtCents": debt,
        "requestedAmountCents": amount,
        "termMonths": term,
        "vehicleValueCents": value,
        "requestedLineCents": line,
        "score": score,
        "tradelines": tradelines,
        "historyMonths": history,
        "unresolvedDisputes": disputes,
        "keyFactorCodes": key_factors,
    }
    auto_only = ("requestedAmountCents", "termMonths", "vehicleValueCents")
    frame = pl.DataFrame(columns, schema=CASE_COLUMNS).with_columns(
        *(pl.when(pl.col("product") == "auto").then(pl.col(c)).alias(c) for c in auto_only),
        pl.when(pl.col("product") == "card")
        .then(pl.col("requestedLineCents"))
        .alias("requestedLineCents"),
        pl.when(pl.lit(pl.Series(no_score))).then(None).otherwise(pl.col("score")).alias("score"),
    )
    provided = rng.random(n) >= 0.12
    monitoring: dict[str, object] = {
        "race": _pick(rng, _RACES, n).tolist(),
        "ethnicity": _pick(rng, _ETHNICITIES, n).tolist(),
        "sex": _pick(rng, _SEXES, n).tolist(),
        "age": rng.integers(18, 85, n),
        "maritalStatus": _pick(rng, _MARITAL, n).tolist(),
        "publicAssistanceIncome": rng.random(n) < 0.06,
    }
    extra = pl.DataFrame(monitoring, schema=MONITORING_COLUMNS).with_columns(
        pl.when(pl.lit(pl.Series(provided))).then(pl.col(c)).alias(c) for c in MONITORING_COLUMNS
    )
    return pl.concat([frame, extra], how="horizontal")
