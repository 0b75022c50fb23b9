"""The portfolio fair-lending report: approval rates and adverse impact ratios by group.

For each monitoring attribute (race, ethnicity, sex, age band, marital status, public
assistance income), each group's approval rate and its adverse impact ratio (AIR: the
group's rate over the most favoured group's rate), with seeded percentile-bootstrap
confidence intervals, flagged below the four-fifths line (0.80) and on watch below
0.90 (both data, ``data/fair-lending-review.yaml``). The flag is decided on the exact
ratio of counts. A group with fewer decided applications than the minimum is reported
as insufficient data (its rate shown, never flagged, never the reference), and
"not provided" is reported but never the reference group; nothing is dropped.

The rates come from fairlearn's ``MetricFrame`` with ``selection_rate`` by sensitive
feature (the ``fairness`` extra). fairlearn 0.15.0 can bootstrap too (``n_boot`` and
``ci_quantiles``), but it recomputes a pandas group-by for every resample (about 12 ms
a resample and an attribute: over a minute for 1000 resamples of six attributes) and
gives no interval for each group's ratio to the reference group. So the intervals come
from a seeded numpy bootstrap that draws each whole-portfolio resample's cell counts
(group x approved) from the multinomial, which is the distribution of the counts when
the rows are resampled with replacement; the tests check it against fairlearn's own
bootstrap. In a resample the AIR is over the reference group chosen on the data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

from credit.errors import MissingExtraError
from credit.governance.fair_lending import (
    NOT_PROVIDED,
    FairLendingConfig,
    default_fair_lending_config,
    group_of,
    group_sort_key,
    read_monitoring,
    recorded_decisions,
)
from credit.journal.base import Store
from credit.models import MonitoringData

__all__ = [
    "FLAG_ADVERSE_IMPACT",
    "FLAG_INSUFFICIENT",
    "FLAG_OK",
    "FLAG_REFERENCE",
    "FLAG_UNDEFINED",
    "FLAG_WATCH",
    "AttributeReport",
    "GroupStat",
    "PortfolioFinding",
    "PortfolioReport",
    "PortfolioRow",
    "adverse_impact_report",
    "portfolio_rows",
]

FLAG_REFERENCE = "reference"
FLAG_ADVERSE_IMPACT = "adverse impact"
FLAG_WATCH = "watch"
FLAG_OK = "ok"
FLAG_INSUFFICIENT = "insufficient data"
FLAG_UNDEFINED = "undefined"


@dataclass(frozen=True, slots=True)
class PortfolioRow:
    """One recorded decision with the applicant's monitoring data (None if absent)."""

    case_id: str
    outcome: str
    monitoring: MonitoringData | None


def portfolio_rows(store: Store) -> tuple[list[PortfolioRow], int, int]:
    """The rows of the portfolio report, and the numbers of decisions left out as
    rejected by a person and as unreadable."""
    recorded, rejected, unreadable = recorded_decisions(store)
    rows = [
        PortfolioRow(r.case_id, r.decision.decision, read_monitoring(store, r.case_id)[0])
        for r in recorded
    ]
    return rows, rejected, unreadable


Interval = tuple[float, float]


@dataclass(frozen=True, slots=True)
class GroupStat:
    """One group's approval rate and adverse impact ratio, with their intervals.

    ``applications`` counts every recorded decision in the group; ``decided`` those
    the rate is over (excluded outcomes, such as referrals, left out); ``approved``
    the favourable ones. ``air`` is the rate over the reference group's rate.
    """

    group: str
    applications: int
    decided: int
    approved: int
    rate: float | None
    rate_ci: Interval | None
    air: float | None
    air_ci: Interval | None
    flag: str

    @property
    def sufficient(self) -> bool:
        return self.flag != FLAG_INSUFFICIENT


@dataclass(frozen=True, slots=True)
class AttributeReport:
    attribute: str
    reference_group: str | None
    groups: tuple[GroupStat, ...]

    @property
    def flagged(self) -> tuple[GroupStat, ...]:
        """The groups below the four-fifths line or on watch."""
        return tuple(g for g in self.groups if g.flag in (FLAG_ADVERSE_IMPACT, FLAG_WATCH))

    def group(self, name: str) -> GroupStat:
        for stat in self.groups:
            if stat.group == name:
                return stat
        raise KeyError(name)


@dataclass(frozen=True, slots=True)
class PortfolioReport:
    config: str
    config_sha256: str
    applications: int
    decided: int
    excluded: Mapping[str, int]
    rejected_by_person: int
    unreadable: int
    adverse_impact_ratio: Decimal
    watch_ratio: Decimal
    confidence_level: Decimal
    resamples: int
    seed: int
    attributes: tuple[AttributeReport, ...]

    def attribute(self, name: str) -> AttributeReport:
        for report in self.attributes:
            if report.attribute == name:
                return report
        raise KeyError(name)

    @property
    def flagged(self) -> tuple[tuple[str, GroupStat], ...]:
        return tuple((a.attribute, g) for a in self.attributes for g in a.flagged)

    @property
    def findings(self) -> tuple[PortfolioFinding, ...]:
        """A finding for each group (with enough data) whose adverse impact ratio's
        interval lies wholly under the four-fifths line: the disparity is not chance at
        the report's confidence level, and a person must answer for it."""
        out: list[PortfolioFinding] = []
        line = float(self.adverse_impact_ratio)
        for attribute in self.attributes:
            for stat in attribute.groups:
                if not stat.sufficient or stat.air_ci is None or stat.group == NOT_PROVIDED:
                    continue
                if stat.air_ci[1] < line:
                    out.append(
                        PortfolioFinding(
                            attribute=attribute.attribute,
                            group=stat.group,
                            reference=attribute.reference_group,
                            air=stat.air,
                            interval=stat.air_ci,
                            message=(
                                f"{attribute.attribute} {stat.group}: adverse impact ratio "
                                f"{stat.air:.2f}, its {float(self.confidence_level) * 100:.0f}% "
                                f"interval [{stat.air_ci[0]:.2f}, {stat.air_ci[1]:.2f}] lies "
                                f"wholly under the four-fifths line {self.adverse_impact_ratio} "
                                f"(against {attribute.reference_group})"
                            ),
                        )
                    )
        return tuple(out)


@dataclass(frozen=True, slots=True)
class PortfolioFinding:
    """A group whose adverse impact ratio's interval lies wholly under the line."""

    attribute: str
    group: str
    reference: str | None
    air: float | None
    interval: tuple[float, float]
    message: str

    @property
    def code(self) -> str:
        return "equipoise.portfolio_adverse_impact"


def _fairness_libs() -> tuple[Any, Any]:
    try:
        from fairlearn.metrics import MetricFrame, selection_rate
    except ImportError as err:
        raise MissingExtraError(
            "the portfolio fairness report needs fairlearn", extra="fairness", package="fairlearn"
        ) from err
    return MetricFrame, selection_rate


def _rates_by_group(groups: Sequence[str], approved: Sequence[int]) -> dict[str, float]:
    """Each group's selection rate, by fairlearn's MetricFrame."""
    metric_frame, selection_rate = _fairness_libs()
    frame = metric_frame(
        metrics={"selection_rate": selection_rate},
        y_true=list(approved),
        y_pred=list(approved),
        sensitive_features={"group": list(groups)},
    )
    by_group = frame.by_group["selection_rate"].to_dict()
    return {str(k): float(v) for k, v in by_group.items()}


def _bootstrap(
    names: Sequence[str],
    decided: Sequence[int],
    approved: Sequence[int],
    reference: int | None,
    config: FairLendingConfig,
) -> tuple[list[Interval | None], list[Interval | None]]:
    """Percentile intervals of each group's rate and of its ratio to the reference
    group, over seeded whole-portfolio resamples (multinomial cell counts)."""
    try:
        import numpy as np
    except ImportError as err:  # pragma: no cover - numpy comes with fairlearn
        raise MissingExtraError(
            "the portfolio fairness report needs numpy", extra="fairness", package="numpy"
        ) from err
    n_groups = len(names)
    cells = np.array(
        [c for d, a in zip(decided, approved, strict=True) for c in (a, d - a)], dtype=np.int64
    )
    total = int(cells.sum())
    none: list[Interval | None] = [None] * n_groups
    if total == 0:
        return none, list(none)
    rng = np.random.default_rng(config.bootstrap_seed)
    draws = rng.multinomial(total, cells / total, size=config.bootstrap_resamples)
    yes = draws[:, 0::2].astype(np.float64)
    size = yes + draws[:, 1::2]
    rates = np.full_like(yes, np.nan)
    np.divide(yes, size, out=rates, where=size > 0)
    level = float(config.confidence_level)
    quantiles = [(1 - level) / 2, 1 - (1 - level) / 2]

    def interval(values: Any) -> Interval | None:
        finite = values[np.isfinite(values)]
        if finite.size == 0:
            return None
        low, high = np.quantile(finite, quantiles)
        return float(low), float(high)

    rate_ci = [interval(rates[:, g]) for g in range(n_groups)]
    if reference is None:
        return rate_ci, list(none)
    ref = rates[:, reference]
    ratios = np.full_like(rates, np.nan)
    np.divide(rates, ref[:, None], out=ratios, where=np.isfinite(ref)[:, None] & (ref[:, None] > 0))
    ratios[~np.isfinite(rates)] = np.nan
    return rate_ci, [interval(ratios[:, g]) for g in range(n_groups)]


def _attribute_report(
    attribute: str, rows: Sequence[PortfolioRow], config: FairLendingConfig
) -> AttributeReport:
    excluded = set(config.excluded_outcomes)
    favourable = set(config.favourable_outcomes)
    apps: dict[str, int] = {}
    decided_groups: list[str] = []
    decided_approved: list[int] = []
    for row in rows:
        group = group_of(attribute, row.monitoring, config)
        apps[group] = apps.get(group, 0) + 1
        if row.outcome in excluded:
            continue
        decided_groups.append(group)
        decided_approved.append(1 if row.outcome in favourable else 0)
    names = sorted(apps, key=lambda g: group_sort_key(attribute, g, config))
    decided = [sum(1 for g in decided_groups if g == name) for name in names]
    approved = [
        sum(a for g, a in zip(decided_groups, decided_approved, strict=True) if g == name)
        for name in names
    ]
    rates: dict[str, float] = (
        _rates_by_group(decided_groups, decided_approved) if decided_groups else {}
    )
    sufficient = [d >= config.min_group_size for d in decided]
    candidates = [
        i
        for i, name in enumerate(names)
        if sufficient[i] and name != NOT_PROVIDED and name in rates
    ]
    reference: int | None = None
    if candidates:
        # The highest rate; a tie goes to the larger group, then to the first in report order.
        reference = max(candidates, key=lambda i: (rates[names[i]], decided[i]))
    rate_ci, air_ci = _bootstrap(names, decided, approved, reference, config)
    ref_rate = rates[names[reference]] if reference is not None else None
    stats: list[GroupStat] = []
    for i, name in enumerate(names):
        rate = rates.get(name)
        air = rate / ref_rate if rate is not None and ref_rate else None
        # The flag is decided on the exact ratio of counts, never on a rounded float.
        exact: Fraction | None = None
        if air is not None and reference is not None:
            exact = Fraction(approved[i], decided[i]) / Fraction(
                approved[reference], decided[reference]
            )
        if not sufficient[i]:
            flag = FLAG_INSUFFICIENT
        elif i == reference:
            flag = FLAG_REFERENCE
        elif exact is None:
            flag = FLAG_UNDEFINED
        elif exact < Fraction(config.adverse_impact_ratio):
            flag = FLAG_ADVERSE_IMPACT
        elif exact < Fraction(config.watch_ratio):
            flag = FLAG_WATCH
        else:
            flag = FLAG_OK
        stats.append(
            GroupStat(
                group=name,
                applications=apps[name],
                decided=decided[i],
                approved=approved[i],
                rate=rate,
                rate_ci=rate_ci[i],
                air=air,
                air_ci=air_ci[i] if air is not None else None,
                flag=flag,
            )
        )
    return AttributeReport(
        attribute=attribute,
        reference_group=names[reference] if reference is not None else None,
        groups=tuple(stats),
    )


def adverse_impact_report(
    rows: Sequence[PortfolioRow],
    config: FairLendingConfig | None = None,
    *,
    rejected_by_person: int = 0,
    unreadable: int = 0,
) -> PortfolioReport:
    """Approval rates and adverse impact ratios by group for each monitoring attribute,
    with seeded bootstrap intervals; the same rows always give the same report."""
    config = config or default_fair_lending_config()
    excluded: dict[str, int] = {o: 0 for o in config.excluded_outcomes}
    for row in rows:
        if row.outcome in excluded:
            excluded[row.outcome] += 1
    return PortfolioReport(
        config=config.label,
        config_sha256=config.sha256,
        applications=len(rows),
        decided=len(rows) - sum(excluded.values()),
        excluded=excluded,
        rejected_by_person=rejected_by_person,
        unreadable=unreadable,
        adverse_impact_ratio=config.adverse_impact_ratio,
        watch_ratio=config.watch_ratio,
        confidence_level=config.confidence_level,
        resamples=config.bootstrap_resamples,
        seed=config.bootstrap_seed,
        attributes=tuple(_attribute_report(a, rows, config) for a in config.portfolio_attributes),
    )
