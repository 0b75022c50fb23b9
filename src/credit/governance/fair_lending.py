"""The fair-lending review's parameters as versioned data, and the applicant groups.

``data/fair-lending-review.yaml`` carries every number Equipoise reads (the order of
outcomes, the DTI and LTV bucket widths of the comparative file review, the
four-fifths and watch lines, the minimum group size, the bootstrap's resamples, seed
and level, the age bands), each with its unit and reference. The loader is strict like
the policy loader: unknown, missing and duplicate keys, bad dates and incoherent values
are :class:`~credit.errors.PolicyError` naming the file and the key.

Groups come from government-monitoring information (12 CFR 1002.13), which only the
fair-lending review reads: :func:`group_of` maps an applicant to a group of one
attribute, ``not provided`` when the applicant did not give it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from importlib import resources
from itertools import pairwise
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from credit.errors import InputError, PolicyError
from credit.journal.base import Entry, Store
from credit.journal.naming import decision_id_of, names_decision
from credit.kept import read_only_fields
from credit.kinds import DECISION_KINDS, KEYSTONE_REJECTED
from credit.models import DECISIONS, Decision, MonitoringData, parse_decision
from credit.policy import Param, parameter_tree, read_parameters
from credit.yamldata import (
    expect_keys,
    load_yaml,
    read_decimal,
    read_int,
    read_source,
    read_str,
    versioned,
)

__all__ = [
    "ATTRIBUTES",
    "FACTORS",
    "NOT_PROVIDED",
    "ComparedFactor",
    "FairLendingConfig",
    "RecordedDecision",
    "age_band_labels",
    "default_fair_lending_config",
    "default_fair_lending_config_path",
    "group_of",
    "group_sort_key",
    "load_fair_lending_config",
    "read_monitoring",
    "recorded_decisions",
]

# The monitoring attributes a review can group by: the fields of MonitoringData, with
# age grouped into bands. (Field names, not thresholds: the bands are data.)
ATTRIBUTES = ("race", "ethnicity", "sex", "ageBand", "maritalStatus", "publicAssistanceIncome")
NOT_PROVIDED = "not provided"

# ---------------------------------------------------------------- the parameters (data)

Kind = Literal["decimal", "int", "outcomes", "attributes", "int-list", "str-list", "factors"]

# The factors of a file the comparative review can weigh (field names, not thresholds:
# which are weighed, in which direction and how close counts as equal is data).
FACTORS = (
    "score",
    "dtiPct",
    "ltvPct",
    "requested",
    "termMonths",
    "existingDebtPct",
    "annualIncome",
    "vehicleValue",
    "tradelines",
    "historyMonths",
    "unresolvedDisputes",
)


@dataclass(frozen=True, slots=True)
class ComparedFactor:
    """One factor of the comparative file review: a file is stronger when the factor
    is ``higher`` (or ``lower``); values within ``tolerance`` count as equal."""

    name: str
    stronger: Literal["higher", "lower"]
    tolerance: Decimal


_SCHEMA: dict[str, Kind] = {
    "outcomeOrder": "outcomes",
    "comparative.attributes": "attributes",
    "comparative.excludedOutcomes": "outcomes",
    "comparative.factors": "factors",
    "portfolio.attributes": "attributes",
    "portfolio.favourableOutcomes": "outcomes",
    "portfolio.excludedOutcomes": "outcomes",
    "portfolio.minGroupSize": "int",
    "portfolio.adverseImpactRatio": "decimal",
    "portfolio.watchRatio": "decimal",
    "portfolio.bootstrapResamples": "int",
    "portfolio.bootstrapSeed": "int",
    "portfolio.confidenceLevel": "decimal",
    "groups.ageBands": "int-list",
    "groups.notProvided": "str-list",
}
_HEADER_REQUIRED = frozenset({"name", "version", "effectiveDate", "reference"})
_HEADER_OPTIONAL = frozenset({"description"})


def _read_list(kind: Kind, value: Any, *, file: str, key: str) -> tuple[Any, ...]:
    if not isinstance(value, list):
        raise PolicyError(f"expected a list, got {value!r}", file=file, key=key)
    if kind == "int-list":
        ints = tuple(read_int(v, file=file, key=key) for v in value)
        if not ints or list(ints) != sorted(set(ints)) or ints[0] <= 0:
            raise PolicyError("must be distinct, positive and ascending", file=file, key=key)
        return ints
    items = tuple(read_str(v, file=file, key=key) for v in value)
    if len(set(items)) != len(items):
        raise PolicyError("an item is listed twice", file=file, key=key)
    allowed = {"outcomes": DECISIONS, "attributes": ATTRIBUTES}.get(kind)
    if allowed is not None:
        for item in items:
            if item not in allowed:
                raise PolicyError(
                    f"{item!r} is not one of {', '.join(allowed)}", file=file, key=key
                )
    return items


def _read_factors(value: Any, *, file: str, key: str) -> tuple[ComparedFactor, ...]:
    if not isinstance(value, list) or not value:
        raise PolicyError("expected a non-empty list of factors", file=file, key=key)
    out: list[ComparedFactor] = []
    for i, item in enumerate(value):
        where = f"{key}[{i}]"
        entry = expect_keys(
            item, required={"factor", "stronger", "tolerance"}, file=file, key=where
        )
        name = read_str(entry["factor"], file=file, key=f"{where}.factor")
        if name not in FACTORS:
            raise PolicyError(
                f"{name!r} is not one of {', '.join(FACTORS)}", file=file, key=f"{where}.factor"
            )
        if any(f.name == name for f in out):
            raise PolicyError(f"{name!r} is listed twice", file=file, key=f"{where}.factor")
        stronger = entry["stronger"]
        if stronger not in ("higher", "lower"):
            raise PolicyError(
                f"stronger is higher or lower, got {stronger!r}", file=file, key=f"{where}.stronger"
            )
        tolerance = read_decimal(entry["tolerance"], file=file, key=f"{where}.tolerance")
        if tolerance < 0:
            raise PolicyError("must not be negative", file=file, key=f"{where}.tolerance")
        out.append(ComparedFactor(name, stronger, tolerance))
    return tuple(out)


def _read_param(kind: Kind, value: Any, *, file: str, key: str) -> Any:
    if kind == "factors":
        return _read_factors(value, file=file, key=key)
    if kind == "decimal":
        return read_decimal(value, file=file, key=key)
    if kind == "int":
        return read_int(value, file=file, key=key)
    return _read_list(kind, value, file=file, key=key)


@dataclass(frozen=True)
class FairLendingConfig:
    """The fair-lending review's parameters, loaded and validated. Immutable."""

    name: str
    version: str
    effective_date: dt.date
    reference: str
    source: str
    sha256: str
    params: Mapping[str, Param]

    def __post_init__(self) -> None:
        read_only_fields(self, "params")

    def __getitem__(self, key: str) -> Param:
        try:
            return self.params[key]
        except KeyError:
            raise PolicyError("no such parameter", file=self.source, key=key) from None

    @property
    def label(self) -> str:
        return f"{self.name} v{self.version}"

    @property
    def outcome_order(self) -> tuple[str, ...]:
        return tuple(self["outcomeOrder"].value)

    def rank(self, outcome: str) -> int:
        """The outcome's place in ``outcomeOrder``: higher is more favourable."""
        return self.outcome_order.index(outcome)

    @property
    def comparative_attributes(self) -> tuple[str, ...]:
        return tuple(self["comparative.attributes"].value)

    @property
    def comparative_factors(self) -> tuple[ComparedFactor, ...]:
        return tuple(self["comparative.factors"].value)

    @property
    def comparative_excluded(self) -> tuple[str, ...]:
        return tuple(self["comparative.excludedOutcomes"].value)

    @property
    def portfolio_attributes(self) -> tuple[str, ...]:
        return tuple(self["portfolio.attributes"].value)

    @property
    def favourable_outcomes(self) -> tuple[str, ...]:
        return tuple(self["portfolio.favourableOutcomes"].value)

    @property
    def excluded_outcomes(self) -> tuple[str, ...]:
        return tuple(self["portfolio.excludedOutcomes"].value)

    @property
    def min_group_size(self) -> int:
        value: int = self["portfolio.minGroupSize"].value
        return value

    @property
    def adverse_impact_ratio(self) -> Decimal:
        value: Decimal = self["portfolio.adverseImpactRatio"].value
        return value

    @property
    def watch_ratio(self) -> Decimal:
        value: Decimal = self["portfolio.watchRatio"].value
        return value

    @property
    def bootstrap_resamples(self) -> int:
        value: int = self["portfolio.bootstrapResamples"].value
        return value

    @property
    def bootstrap_seed(self) -> int:
        value: int = self["portfolio.bootstrapSeed"].value
        return value

    @property
    def confidence_level(self) -> Decimal:
        value: Decimal = self["portfolio.confidenceLevel"].value
        return value

    @property
    def age_bands(self) -> tuple[int, ...]:
        return tuple(self["groups.ageBands"].value)

    @property
    def not_provided(self) -> tuple[str, ...]:
        return tuple(self["groups.notProvided"].value)

    def cite(self) -> dict[str, str]:
        return {"config": self.label, "sha256": self.sha256}


def _check_coherent(config: FairLendingConfig) -> None:
    file = config.source
    checks: list[tuple[bool, str, str]] = [
        (
            sorted(config.outcome_order) == sorted(DECISIONS),
            "outcomeOrder",
            f"must list each of {', '.join(DECISIONS)} exactly once",
        ),
        (
            len(set(config.comparative_excluded)) < len(config.outcome_order) - 1,
            "comparative.excludedOutcomes",
            "must leave at least two outcomes to compare",
        ),
        (
            bool(config.favourable_outcomes),
            "portfolio.favourableOutcomes",
            "must name at least one outcome",
        ),
        (
            not set(config.favourable_outcomes) & set(config.excluded_outcomes),
            "portfolio.excludedOutcomes",
            "an outcome cannot be both favourable and excluded",
        ),
        (config.min_group_size >= 1, "portfolio.minGroupSize", "must be at least 1"),
        (
            Decimal(0) < config.adverse_impact_ratio <= config.watch_ratio <= 1,
            "portfolio.watchRatio",
            "must satisfy 0 < adverseImpactRatio <= watchRatio <= 1",
        ),
        (config.bootstrap_resamples >= 1, "portfolio.bootstrapResamples", "must be at least 1"),
        (
            Decimal(0) < config.confidence_level < 1,
            "portfolio.confidenceLevel",
            "must lie strictly between 0 and 1",
        ),
    ]
    for ok, key, message in checks:
        if not ok:
            raise PolicyError(message, file=file, key=key)


def load_fair_lending_config(path: Path | str, text: str | None = None) -> FairLendingConfig:
    """Load and validate the fair-lending review's parameters (strict, like a policy)."""
    path = Path(path)
    file = str(path)
    text, raw = read_source(path, text)
    tree = parameter_tree(_SCHEMA)
    doc = expect_keys(
        load_yaml(path, text),
        required=_HEADER_REQUIRED | set(tree),
        optional=_HEADER_OPTIONAL,
        file=file,
        key="",
    )
    params = read_parameters(
        {k: doc[k] for k in tree},
        tree,
        lambda key, raw, value_key: _read_param(_SCHEMA[key], raw, file=file, key=value_key),
        file=file,
    )
    config = FairLendingConfig(
        **versioned(doc, "name", file=file, raw=raw),
        params=params,
    )
    _check_coherent(config)
    return config


def default_fair_lending_config_path() -> Path:
    return Path(str(resources.files("credit") / "data" / "fair-lending-review.yaml"))


_DEFAULT: dict[str, FairLendingConfig] = {}


def default_fair_lending_config() -> FairLendingConfig:
    """The parameters the product ships (loaded once)."""
    if "c" not in _DEFAULT:
        _DEFAULT["c"] = load_fair_lending_config(default_fair_lending_config_path())
    return _DEFAULT["c"]


# ---------------------------------------------------------------- groups


def _age_band(age: int, bands: Sequence[int]) -> str:
    if age < bands[0]:
        return f"under {bands[0]}"
    for low, high in pairwise(bands):
        if low <= age < high:
            return f"{low}-{high - 1}"
    return f"{bands[-1]} and over"


def age_band_labels(config: FairLendingConfig) -> tuple[str, ...]:
    """The age bands' labels, youngest first."""
    bands = config.age_bands
    return tuple(_age_band(age, bands) for age in (bands[0] - 1, *bands))


def group_sort_key(attribute: str, group: str, config: FairLendingConfig) -> tuple[int, int, str]:
    """Report order: age bands youngest first, other groups alphabetically, and
    ``not provided`` last."""
    if group == NOT_PROVIDED:
        return 1, 0, group
    if attribute == "ageBand":
        labels = age_band_labels(config)
        return 0, labels.index(group) if group in labels else len(labels), group
    return 0, 0, group


def group_of(attribute: str, monitoring: MonitoringData | None, config: FairLendingConfig) -> str:
    """The applicant's group for one attribute; ``not provided`` when it is unknown."""
    if attribute not in ATTRIBUTES:
        raise ValueError(f"unknown monitoring attribute {attribute!r}")
    if monitoring is None:
        return NOT_PROVIDED
    if attribute == "ageBand":
        return (
            NOT_PROVIDED if monitoring.age is None else _age_band(monitoring.age, config.age_bands)
        )
    if attribute == "publicAssistanceIncome":
        value = monitoring.public_assistance_income
        return NOT_PROVIDED if value is None else ("yes" if value else "no")
    text: str | None = {
        "race": monitoring.race,
        "ethnicity": monitoring.ethnicity,
        "sex": monitoring.sex,
        "maritalStatus": monitoring.marital_status,
    }[attribute]
    if text is None or not text.strip() or text in config.not_provided:
        return NOT_PROVIDED
    return text


def read_monitoring(store: Store, case_id: str) -> tuple[MonitoringData | None, str | None]:
    """The case's monitoring data, and why it could not be read (if it could not)."""
    return monitoring_from(store.get_monitoring(case_id))


def monitoring_from(raw: Mapping[str, Any] | None) -> tuple[MonitoringData | None, str | None]:
    """Monitoring data from a vault row as read, and why it is not valid (if not)."""
    if raw is None:
        return None, None
    try:
        return MonitoringData.model_validate(dict(raw)), None
    except ValidationError as err:
        first = err.errors()[0]
        return None, f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"


# ---------------------------------------------------------------- the recorded decisions


@dataclass(frozen=True, slots=True)
class RecordedDecision:
    case_id: str
    decision: Decision


def recorded_decisions(
    store: Store, cache: dict[str, Decision | None] | None = None
) -> tuple[list[RecordedDecision], int, int]:
    """Each case's current decision (the underwriter's, or the latest officer's) that a
    person has not rejected, in the order the cases were first decided; and the
    numbers left out as rejected by a person and as unreadable.

    ``cache`` (by entry hash: an entry never changes) saves parsing each decision again
    when one reviewer goes through many cases."""
    current: dict[str, tuple[Entry, Decision | None]] = {}
    rejected: set[str] = set()
    for entry in store.entries(kinds=[*DECISION_KINDS, KEYSTONE_REJECTED]):
        case_id = entry.case_id
        if case_id is None:
            continue
        if entry.kind == KEYSTONE_REJECTED:
            if case_id in current:
                decided = current[case_id][0]
                about = names_decision(entry.payload, decided.seq, decision_id_of(decided.payload))
                if about is not False:
                    rejected.add(case_id)
            continue
        if cache is not None and entry.hash in cache:
            decision = cache[entry.hash]
        else:
            try:
                decision = parse_decision(entry.payload.get("decision"), case_id=case_id)
            except InputError:
                decision = None
            if cache is not None:
                cache[entry.hash] = decision
        current[case_id] = (entry, decision)
        rejected.discard(case_id)
    out: list[RecordedDecision] = []
    unreadable = 0
    for case_id, (_, decision) in current.items():
        if case_id in rejected:
            continue
        if decision is None:
            unreadable += 1
            continue
        out.append(RecordedDecision(case_id, decision))
    return out, len(rejected), unreadable
