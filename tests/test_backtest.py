"""Policy what-if: the same cases under policy A and policy B. A policy B with a lower
DTI cap turns approvals into counteroffers and declines; the report counts each
transition exactly (checked against the scalar underwriter), samples its case ids in
input order, states the approval rates and adverse impact ratios under each policy,
and draws a valid PNG."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import matplotlib.image
import polars as pl
import pytest
from typer.testing import CliRunner

from batch_support import policy_with
from conftest import POLICY
from credit.batch import backtest, scalar_decide_frame
from credit.batch.generate import generate_frame
from credit.batch.io import write_cases
from credit.batch.whatif import ERROR, Backtest, plot_backtest
from credit.cli import app
from credit.governance.fair_lending import default_fair_lending_config
from credit.policy import Policy, default_policy_path

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def lower_cap(tmp_path_factory: pytest.TempPathFactory) -> Policy:
    directory = tmp_path_factory.mktemp("policies")
    return policy_with(
        {"products.auto.maxDtiPct": "40.0", "products.card.maxDtiPct": "35.0"},
        directory,
        "lower-dti",
    )


@pytest.fixture(scope="module")
def cases() -> pl.DataFrame:
    return generate_frame(31, 3_000, examples=3_000)


@pytest.fixture(scope="module")
def result(cases: pl.DataFrame, lower_cap: Policy) -> Backtest:
    return backtest(cases, POLICY, lower_cap, sample=4)


def _outcomes(frame: pl.DataFrame, policy: Policy) -> list[str]:
    decided = scalar_decide_frame(frame, policy)
    return [
        ERROR if kind is not None else decision
        for decision, kind in zip(decided["decision"], decided["errorKind"], strict=True)
    ]


@pytest.fixture(scope="module")
def scalar(cases: pl.DataFrame, lower_cap: Policy) -> tuple[list[str], list[str]]:
    """Each case's outcome under A and under B, from the scalar underwriter."""
    return _outcomes(cases, POLICY), _outcomes(cases, lower_cap)


def test_a_lower_dti_cap_turns_approvals_into_counteroffers_and_declines_and_counts_them(
    result: Backtest, cases: pl.DataFrame, scalar: tuple[list[str], list[str]]
) -> None:
    a, b = scalar
    want = Counter((x, y) for x, y in zip(a, b, strict=True) if x != y)
    assert {(t.before, t.after): t.count for t in result.transitions} == dict(want)
    assert result.transition("approve", "counteroffer") is not None
    assert result.transition("approve", "decline") is not None
    assert (
        result.changed == sum(want.values()) and result.unchanged == cases.height - result.changed
    )
    # a lower cap never treats anyone more favourably
    rank = default_fair_lending_config().rank
    assert all(rank(t.after) < rank(t.before) for t in result.transitions)


def test_each_transition_samples_its_first_case_ids_in_input_order(
    result: Backtest, cases: pl.DataFrame, scalar: tuple[list[str], list[str]]
) -> None:
    a, b = scalar
    ids = cases["caseId"].to_list()
    for t in result.transitions:
        first = [i for i, x, y in zip(ids, a, b, strict=True) if (x, y) == (t.before, t.after)]
        assert t.sample == tuple(first[:4])


def test_approval_rates_by_product_and_band_are_approvals_over_decided_cases(
    result: Backtest,
) -> None:
    decided = result.decisions_b.filter(pl.col("errorKind").is_null())
    for row in result.rates_b:
        cell = decided.filter(
            (pl.col("product") == row.product) & (pl.col("scoreBand") == row.band)
        )
        assert row.applications == cell.height
        assert row.approved == cell.filter(pl.col("decision") == "approve").height
        assert row.decided == cell.filter(pl.col("decision") != "refer").height
    rate = {(r.product, r.band): r.rate for r in result.rates_a}
    lower = {(r.product, r.band): r.rate for r in result.rates_b}
    assert all(lower[k] <= rate[k] for k in rate if rate[k] is not None)  # type: ignore[operator]


def test_adverse_impact_ratios_are_reported_by_group_under_each_policy(result: Backtest) -> None:
    assert result.fairness_a is not None and result.fairness_b is not None
    race_a = result.fairness_a.attribute("race")
    race_b = result.fairness_b.attribute("race")
    assert race_a.reference_group is not None and race_b.reference_group is not None
    assert {g.group for g in race_a.groups} == {g.group for g in race_b.groups}
    approvals_a = sum(g.approved for g in race_a.groups)
    approvals_b = sum(g.approved for g in race_b.groups)
    assert approvals_a == result.decisions_a.filter(pl.col("decision") == "approve").height
    assert approvals_b < approvals_a


def test_the_plot_is_a_valid_png_of_both_policies(result: Backtest, tmp_path: Path) -> None:
    path = plot_backtest(result, tmp_path / "what-if.png", attribute="sex")
    assert path.read_bytes()[:8] == PNG_SIGNATURE
    image = matplotlib.image.imread(path)
    assert image.shape[0] > 400 and image.shape[1] > 1000


def test_credit_backtest_shows_transitions_rates_and_ratios_and_writes_the_plot(
    cases: pl.DataFrame, lower_cap: Policy, tmp_path: Path
) -> None:
    path = tmp_path / "cases.parquet"
    write_cases(cases.head(1_200), path)
    plot = tmp_path / "plot.png"
    result = CliRunner().invoke(
        app,
        [
            "backtest",
            "--policy",
            str(default_policy_path()),
            "--policy",
            lower_cap.source,
            str(path),
            "--plot",
            str(plot),
        ],
    )
    assert result.exit_code == 0, result.output
    for heading in (
        "Decisions that change, A -> B",
        "Approval rate by product and score band",
        "Adverse impact ratio by race",
        "Adverse impact ratio by ageBand",
    ):
        assert heading in result.stdout
    assert "approve" in result.stdout and "counteroffer" in result.stdout
    assert plot.read_bytes()[:8] == PNG_SIGNATURE


def test_credit_backtest_needs_exactly_two_policies(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["backtest", "--policy", str(default_policy_path()), str(tmp_path / "c.csv")]
    )
    assert result.exit_code == 2
    assert "--policy must be given twice" in result.stderr
