"""The columnar underwriter against the scalar one, case by case: 50,000 generated
cases with every edge of the policy (the bundled generator's constructed edges and a
stress population aimed at every cap, margin, rounding half, thin-file count, band
floor and error), and smaller runs under policies unlike the reference. Every column
of every decision row must be equal: decision, band, DTI, LTV, terms, reason codes
in order, confidence, step, or the error's kind, field and message. (``make bench``
runs the same comparison over a million cases.)"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from batch_support import VARIANTS, policy_with
from credit.batch import decide_frame, scalar_decide_frame
from credit.batch.columns import _Payment
from credit.batch.differential import differences
from credit.batch.generate import generate_frame, stress_frame
from credit.batch.plan import plan_for
from credit.catalogue import default_catalogue
from credit.policy import default_policy

COUNT = 50_000
SEED = 20_260_601


@pytest.fixture(scope="module")
def decided() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    policy = default_policy()
    frame = generate_frame(SEED, COUNT, policy=policy)
    return frame, decide_frame(frame, policy), scalar_decide_frame(frame, policy)


def test_fifty_thousand_generated_cases_are_decided_exactly_as_the_scalar_underwriter_decides(
    decided: tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame],
) -> None:
    _, columnar, scalar = decided
    assert columnar.height == COUNT
    assert columnar.equals(scalar), differences(columnar, scalar)


def test_the_fifty_thousand_cases_reach_every_step_outcome_reason_and_error(
    decided: tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame],
) -> None:
    frame, columnar, _ = decided
    steps = Counter(columnar["step"].drop_nulls().to_list())
    assert set(steps) == {
        "referUnusableFile",
        "declineHardFailure",
        "counteroffer",
        "referWithinMargin",
        "approve",
    }
    assert min(steps.values()) > 1_000
    codes = Counter(c for codes in columnar["reasonCodes"].drop_nulls() for c in codes)
    assert set(codes) == set(default_catalogue().rule_codes()), "every rule reason is stated"
    errors = Counter(zip(columnar["errorKind"], columnar["errorField"], strict=True))
    fields = {field for (kind, field) in errors if kind is not None}
    assert {
        "asOf",
        "application.termMonths",
        "application.requestedAmount",
        "application.requestedLine",
        "scoreBands",
    } <= fields
    assert any(f and f.startswith("creditReport.keyFactors[") for f in fields)
    # the counteroffer search: offers at a longer term than asked and smaller card
    # lines; and notices cut to the most reasons a notice may state
    offers = pl.DataFrame(
        {
            "asked": frame["termMonths"],
            "offered": columnar["termMonths"],
            "line": columnar["creditLine"],
            "decision": columnar["decision"],
        }
    ).filter(pl.col("decision") == "counteroffer")
    assert offers.filter(pl.col("offered") > pl.col("asked")).height > 100
    assert offers.filter(pl.col("line").is_not_null()).height > 100
    assert columnar.filter(pl.col("reasonCodes").list.len() == 4).height > 100


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_a_policy_unlike_the_reference_is_decided_exactly_as_the_scalar_underwriter_decides(
    name: str, tmp_path: Path
) -> None:
    policy = policy_with(VARIANTS[name], tmp_path, name)
    frame = stress_frame(SEED + 1, 6_000, policy=policy)
    columnar = decide_frame(frame, policy)
    scalar = scalar_decide_frame(frame, policy)
    assert columnar.equals(scalar), differences(columnar, scalar)
    assert columnar["step"].n_unique() >= 5


def test_payments_on_an_exact_half_cent_are_recomputed_with_the_scalar_decimal_arithmetic(
    tmp_path: Path,
) -> None:
    # at 0% APR over 40 months the factor is exactly 1/40: an amount of 40k + 20 cents
    # pays k + 1/2 cents, a tie that the float screen must send to the exact path
    policy = policy_with(VARIANTS["zero-apr"], tmp_path, "zero-apr")
    plan = plan_for(policy)
    payment = _Payment(plan)
    exact_calls: list[int] = []
    original = payment.exact

    def counting(amount: int, key: int) -> int:
        exact_calls.append(amount)
        return original(amount, key)

    payment.exact = counting  # type: ignore[method-assign]
    amounts = np.array([40 * k + 20 for k in range(12_500, 12_600)], dtype=np.int64)
    key = np.full(len(amounts), plan.auto.terms.index(40), dtype=np.int64)  # prime, 40
    units = payment.units(amounts, key)
    assert len(exact_calls) == len(amounts)
    assert units.tolist() == [k + 1 for k in range(12_500, 12_600)]  # half-up
