"""Policy what-if: the same cases decided under two policies, side by side.

:func:`backtest` decides a flat case frame under policy A and policy B with the
columnar underwriter and reports

* which decisions change: the count of each transition ``A -> B`` (``approve ->
  counteroffer``, ...; a case one policy cannot decide counts as ``error``) with a
  sample of the case ids, in input order, for each;
* the approval rate by product and score band under each policy (each case in the
  band its own policy gives it);
* the adverse impact ratio by group under each policy, from the cases' monitoring
  columns, by the fair-lending review's own report
  (:func:`credit.governance.portfolio.adverse_impact_report`, the ``fairness``
  extra): the same groups, reference group, four-fifths and watch lines and seeded
  intervals the review states for the recorded portfolio.

An approval rate is the review's: favourable outcomes over decided applications,
the excluded outcomes (a referral awaits a person) left out of the denominator, both
read from ``data/fair-lending-review.yaml``.

:func:`plot_backtest` draws the approval rate by score band and group for one
monitoring attribute, policy A's panel beside policy B's (matplotlib, Agg backend).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from credit.batch.engine import decide_frame
from credit.batch.schema import MONITORING_COLUMNS
from credit.governance.fair_lending import (
    FairLendingConfig,
    default_fair_lending_config,
    group_of,
    group_sort_key,
)
from credit.governance.portfolio import PortfolioReport, PortfolioRow, adverse_impact_report
from credit.models import MonitoringData
from credit.policy import Policy

__all__ = ["ERROR", "Backtest", "RateRow", "Transition", "backtest", "plot_backtest"]

ERROR = "error"  # the outcome of a case a policy could not decide
_BANDS = ("prime", "near-prime", "subprime", "unscored")
_PRODUCTS = ("auto", "card")
_MONITORING_FIELDS = {
    "race": "race",
    "ethnicity": "ethnicity",
    "sex": "sex",
    "age": "age",
    "maritalStatus": "marital_status",
    "publicAssistanceIncome": "public_assistance_income",
}


@dataclass(frozen=True, slots=True)
class Transition:
    before: str
    after: str
    count: int
    sample: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RateRow:
    """One product and band's outcomes under one policy."""

    product: str
    band: str
    applications: int
    decided: int  # applications less the excluded outcomes
    approved: int

    @property
    def rate(self) -> float | None:
        return self.approved / self.decided if self.decided else None


@dataclass(frozen=True, slots=True)
class Backtest:
    policy_a: Policy
    policy_b: Policy
    cases: int
    transitions: tuple[Transition, ...]  # changed decisions, most frequent first
    unchanged: int
    rates_a: tuple[RateRow, ...]
    rates_b: tuple[RateRow, ...]
    fairness_a: PortfolioReport | None  # None when no case carries monitoring data
    fairness_b: PortfolioReport | None
    decisions_a: pl.DataFrame
    decisions_b: pl.DataFrame
    groups: pl.DataFrame  # caseId and the group of each monitoring attribute

    @property
    def changed(self) -> int:
        return sum(t.count for t in self.transitions)

    def transition(self, before: str, after: str) -> Transition | None:
        return next((t for t in self.transitions if (t.before, t.after) == (before, after)), None)


def _outcome() -> pl.Expr:
    return pl.when(pl.col("errorKind").is_not_null()).then(pl.lit(ERROR)).otherwise("decision")


def _rates(decisions: pl.DataFrame, config: FairLendingConfig) -> tuple[RateRow, ...]:
    decided = decisions.filter(pl.col("errorKind").is_null())
    counts = decided.group_by("product", "scoreBand").agg(
        pl.len().alias("applications"),
        (~pl.col("decision").is_in(list(config.excluded_outcomes))).sum().alias("decided"),
        pl.col("decision").is_in(list(config.favourable_outcomes)).sum().alias("approved"),
    )
    found = {(r["product"], r["scoreBand"]): r for r in counts.iter_rows(named=True)}
    rows = []
    for product in _PRODUCTS:
        for band in _BANDS:
            r = found.get((product, band))
            if r is not None:
                rows.append(RateRow(product, band, r["applications"], r["decided"], r["approved"]))
    return tuple(rows)


def _monitoring(frame: pl.DataFrame) -> list[MonitoringData | None]:
    """Each case's monitoring data (one object per distinct combination)."""
    present = [c for c in MONITORING_COLUMNS if c in frame.columns]
    if not present:
        return [None] * frame.height
    cache: dict[tuple[Any, ...], MonitoringData | None] = {}
    out: list[MonitoringData | None] = []
    for values in frame.select(present).iter_rows():
        data = cache.get(values)
        if data is None and values not in cache:
            fields = {
                _MONITORING_FIELDS[c]: v
                for c, v in zip(present, values, strict=True)
                if v is not None
            }
            data = MonitoringData(**fields) if fields else None
            cache[values] = data
        out.append(data)
    return out


def _fairness(
    decisions: pl.DataFrame, monitoring: Sequence[MonitoringData | None], config: FairLendingConfig
) -> PortfolioReport | None:
    if all(m is None for m in monitoring):
        return None
    rows = [
        PortfolioRow(case_id, outcome, m)
        for case_id, outcome, error, m in zip(
            decisions["caseId"],
            decisions["decision"],
            decisions["errorKind"],
            monitoring,
            strict=True,
        )
        if error is None
    ]
    return adverse_impact_report(rows, config)


def backtest(
    frame: pl.DataFrame,
    policy_a: Policy,
    policy_b: Policy,
    *,
    sample: int = 5,
    config: FairLendingConfig | None = None,
    fairness: bool = True,
) -> Backtest:
    """Decide ``frame`` under both policies and compare (see the module docstring)."""
    config = config or default_fair_lending_config()
    a = decide_frame(frame, policy_a)
    b = decide_frame(frame, policy_b)
    pairs = pl.DataFrame(
        {
            "caseId": a["caseId"],
            "before": a.select(_outcome()).to_series(),
            "after": b.select(_outcome()).to_series(),
        }
    )
    moved = pairs.filter(pl.col("before") != pl.col("after"))
    grouped = (
        moved.group_by("before", "after", maintain_order=True)
        .agg(pl.len().alias("count"), pl.col("caseId").head(sample).alias("sample"))
        .sort("count", "before", "after", descending=[True, False, False])
    )
    transitions = tuple(
        Transition(r["before"], r["after"], r["count"], tuple(r["sample"]))
        for r in grouped.iter_rows(named=True)
    )
    monitoring = _monitoring(frame)
    groups = pl.DataFrame(
        {
            "caseId": frame["caseId"],
            **{
                attribute: [group_of(attribute, m, config) for m in monitoring]
                for attribute in config.portfolio_attributes
            },
        }
    )
    return Backtest(
        policy_a=policy_a,
        policy_b=policy_b,
        cases=frame.height,
        transitions=transitions,
        unchanged=frame.height - moved.height,
        rates_a=_rates(a, config),
        rates_b=_rates(b, config),
        fairness_a=_fairness(a, monitoring, config) if fairness else None,
        fairness_b=_fairness(b, monitoring, config) if fairness else None,
        decisions_a=a,
        decisions_b=b,
        groups=groups,
    )


def _band_group_rates(
    decisions: pl.DataFrame, groups: pl.DataFrame, attribute: str, config: FairLendingConfig
) -> dict[tuple[str, str], float]:
    joined = pl.concat([decisions, groups.select(attribute)], how="horizontal").filter(
        pl.col("errorKind").is_null() & ~pl.col("decision").is_in(list(config.excluded_outcomes))
    )
    rates = joined.group_by("scoreBand", attribute).agg(
        pl.col("decision").is_in(list(config.favourable_outcomes)).mean().alias("rate")
    )
    return {(r["scoreBand"], r[attribute]): r["rate"] for r in rates.iter_rows(named=True)}


def plot_backtest(
    result: Backtest,
    path: Path | str,
    *,
    attribute: str = "race",
    config: FairLendingConfig | None = None,
) -> Path:
    """A PNG: approval rate by score band (x) and group (bars) for ``attribute``,
    policy A's panel beside policy B's, on the same scale."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    config = config or default_fair_lending_config()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    names = sorted(
        set(result.groups[attribute].to_list()),
        key=lambda g: group_sort_key(attribute, g, config),
    )
    panels = (
        (result.policy_a, result.decisions_a),
        (result.policy_b, result.decisions_b),
    )
    rates = [
        _band_group_rates(decisions, result.groups, attribute, config) for _, decisions in panels
    ]
    bands = [b for b in _BANDS if any(band == b for r in rates for band, _ in r)]
    figure, axes = plt.subplots(1, 2, figsize=(14, 6.5), sharey=True)
    width = 0.8 / max(len(names), 1)
    for ax, label, (policy, _), panel in zip(axes, "AB", panels, rates, strict=True):
        for i, name in enumerate(names):
            xs = [j + (i - (len(names) - 1) / 2) * width for j in range(len(bands))]
            ys = [panel.get((band, name), 0.0) or 0.0 for band in bands]
            ax.bar(xs, ys, width=width, label=name if label == "A" else None)
        ax.set_xticks(range(len(bands)), bands)
        ax.set_title(f"Policy {label}: {policy.label}")
        ax.set_xlabel("score band")
        ax.set_ylim(0, 1)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("approval rate (approved / decided; referrals left out)")
    figure.legend(
        title=attribute, fontsize=8, loc="lower center", ncol=min(len(names), 4), frameon=False
    )
    figure.suptitle(f"Approval rate by score band and {attribute}: policy A beside policy B")
    figure.tight_layout(rect=(0, 0.12, 1, 1))
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path
