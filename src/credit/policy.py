"""The credit policy as versioned data (methodology step 1: "pull ... the policy").

A policy file carries a name, a version, an effective date and a reference, and every
parameter carries its ``value``, ``unit`` and ``reference`` (``description`` is
optional). The loader is strict: an unknown key, a missing key, a duplicate key, a
bad date, a missing reference or a value of the wrong kind is a
:class:`~credit.errors.PolicyError` naming the file and the dotted key.

No threshold lives in code: the underwriter reads every number through
:class:`Policy`, and cites the dotted key and value of each rule it applies.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator

from credit.errors import PolicyError
from credit.kept import ReadOnlyDict, read_only
from credit.yamldata import (
    expect_keys,
    load_yaml,
    read_date,
    read_decimal,
    read_int,
    read_source,
    read_str,
)

__all__ = [
    "BANDS",
    "DECISION_STEPS",
    "FACTOR_KINDS",
    "STEP_PRECEDENCE",
    "BandPricing",
    "Param",
    "Policy",
    "PolicyRegistry",
    "ProductPolicy",
    "default_policy",
    "default_policy_path",
    "load_policy",
    "parameter_tree",
    "read_parameters",
]

BANDS = ("prime", "near-prime", "subprime")
DECISION_STEPS = (
    "referUnusableFile",
    "declineHardFailure",
    "counteroffer",
    "referWithinMargin",
    "approve",
)
# The methodology's order of the steps, as the pairs that must come first. An unusable
# file is referred before anything judges it (never guess: a thin file declined or
# approved is a guess); a hard failure is declined and a curable one counteroffered
# before the margin rule, which judges only a request that passes every cap; approve is
# whatever is left. declineHardFailure and counteroffer commute (a counteroffer exists
# only where the request fails on DTI or LTV alone and the decline step declines only
# where none exists), so either order is the methodology's.
STEP_PRECEDENCE = (
    ("referUnusableFile", "declineHardFailure"),
    ("referUnusableFile", "counteroffer"),
    ("referUnusableFile", "referWithinMargin"),
    ("declineHardFailure", "referWithinMargin"),
    ("counteroffer", "referWithinMargin"),
)
FACTOR_KINDS = ("scoreBelowMinimum", "dtiOverCap", "ltvOverCap", "bureauKeyFactors")

Kind = Literal["int", "decimal", "int-list", "steps", "factor-order"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)


class Param(_Frozen):
    """One policy parameter: its dotted key, value, unit and source."""

    key: str
    value: Any
    unit: str
    reference: str
    description: str | None

    def cite(self) -> str:
        value = self.value
        if isinstance(value, (list, tuple)):
            value = ",".join(str(v) for v in value)
        return f"{self.key}={value}"


# The schema of a policy file: every parameter's dotted key and the kind of its value.
_SCHEMA: dict[str, Kind] = {
    "steps": "steps",
    "factorOrder": "factor-order",
    "maxReasons": "int",
    "confidenceFloor": "decimal",
    "noticeDeadlineDays": "int",
    "scoreScale.min": "int",
    "scoreScale.max": "int",
    "rounding.money": "decimal",
    "rounding.percent": "decimal",
    **{f"scoreBands.{band}": "int" for band in BANDS},
    "thinFile.minTradelines": "int",
    "thinFile.minHistoryMonths": "int",
    "margins.scorePoints": "int",
    "margins.dtiPct": "decimal",
    "margins.ltvPct": "decimal",
    "products.auto.minScore": "int",
    "products.auto.maxDtiPct": "decimal",
    "products.auto.maxLtvPct": "decimal",
    "products.auto.minAmount": "decimal",
    "products.auto.termsAllowed": "int-list",
    "products.auto.counterofferStep": "decimal",
    "products.card.minScore": "int",
    "products.card.maxDtiPct": "decimal",
    "products.card.minLine": "decimal",
    "products.card.paymentPctOfLine": "decimal",
    "products.card.counterofferStep": "decimal",
    **{f"pricing.auto.{band}.apr": "decimal" for band in BANDS},
    **{f"pricing.card.{band}.apr": "decimal" for band in BANDS},
    **{f"pricing.card.{band}.line": "decimal" for band in BANDS},
}
_HEADER_REQUIRED = frozenset({"policy", "version", "effectiveDate", "reference"})
_HEADER_OPTIONAL = frozenset({"description"})
_PARAM_REQUIRED = frozenset({"value", "unit", "reference"})
_PARAM_OPTIONAL = frozenset({"description"})


def parameter_tree(keys: Iterable[str]) -> dict[str, Any]:
    """Dotted parameter keys as the nested mapping a data file spells them in."""
    tree: dict[str, Any] = {}
    for key in keys:
        node = tree
        *parents, last = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = None
    return tree


_TREE = parameter_tree(_SCHEMA)


def _read_value(kind: Kind, value: Any, *, file: str, key: str) -> Any:
    if kind == "int":
        return read_int(value, file=file, key=key)
    if kind == "decimal":
        return read_decimal(value, file=file, key=key)
    if not isinstance(value, list) or not value:
        raise PolicyError(f"expected a non-empty list, got {value!r}", file=file, key=key)
    if kind == "int-list":
        items = tuple(read_int(v, file=file, key=key) for v in value)
        if list(items) != sorted(set(items)):
            raise PolicyError("terms must be distinct and ascending", file=file, key=key)
        return items
    allowed = DECISION_STEPS if kind == "steps" else FACTOR_KINDS
    names = tuple(read_str(v, file=file, key=key) for v in value)
    if sorted(names) != sorted(allowed):
        raise PolicyError(
            f"must list each of {', '.join(allowed)} exactly once, got {', '.join(names)}",
            file=file,
            key=key,
        )
    if kind == "steps":
        if names[-1] != "approve":
            raise PolicyError("approve must be the last step", file=file, key=key)
        for first, then in STEP_PRECEDENCE:
            if names.index(first) > names.index(then):
                raise PolicyError(
                    f"{then} comes before {first}, which breaks the methodology: "
                    f"{first} must be applied first (reference-policy.md, "
                    '"Decision, in this order")',
                    file=file,
                    key=key,
                )
    return names


def read_parameters(
    node: Any,
    tree: Mapping[str, Any],
    read_value: Callable[[str, Any, str], Any],
    *,
    file: str,
    prefix: str = "",
) -> dict[str, Param]:
    """Read a tree of parameters (``value``, ``unit``, ``reference``, optional
    ``description``) strictly: every key of ``tree`` must be there and no other.
    ``read_value(key, raw, value_key)`` reads and checks one parameter's value."""
    out: dict[str, Param] = {}
    data = expect_keys(node, required=set(tree), file=file, key=prefix)
    for name, sub in tree.items():
        key = f"{prefix}.{name}" if prefix else name
        if sub is not None:
            out.update(read_parameters(data[name], sub, read_value, file=file, prefix=key))
            continue
        entry = expect_keys(
            data[name], required=_PARAM_REQUIRED, optional=_PARAM_OPTIONAL, file=file, key=key
        )
        reference = read_str(entry["reference"], file=file, key=f"{key}.reference")
        unit = read_str(entry["unit"], file=file, key=f"{key}.unit")
        description = entry.get("description")
        if description is not None:
            description = read_str(description, file=file, key=f"{key}.description")
        value = read_value(key, entry["value"], f"{key}.value")
        out[key] = Param(
            key=key, value=value, unit=unit, reference=reference, description=description
        )
    return out


class BandPricing(_Frozen):
    band: str
    apr: Param
    line: Param | None  # card only


class ProductPolicy(_Frozen):
    product: str
    min_score: Param
    max_dti_pct: Param
    counteroffer_step: Param
    max_ltv_pct: Param | None = None  # auto
    min_amount: Param | None = None  # auto
    terms_allowed: Param | None = None  # auto
    min_line: Param | None = None  # card
    payment_pct_of_line: Param | None = None  # card


class Params(ReadOnlyDict[str, Param]):
    """A policy's parameters by key, read-only (:class:`~credit.kept.ReadOnlyDict`): the
    underwriter's lookups, the figures a reason states and a batch plan are kept by the
    policy object, so its parameters cannot change under them. A policy with other
    values is another policy: load it, or build it from ``{**policy.params, key: ...}``."""

    __slots__ = ()
    _REFUSAL = (
        "a policy's parameters are read-only: a policy with other values is another "
        "policy (load it, or build it from {**policy.params, ...})"
    )


class Policy(_Frozen):
    """A loaded, validated policy version. Immutable: its fields cannot be set, and its
    parameters are :class:`Params` (read-only)."""

    name: str
    version: str
    effective_date: dt.date
    reference: str
    description: str | None
    source: str
    sha256: str
    params: Mapping[str, Param]

    @field_validator("params", mode="after")
    @classmethod
    def _read_only_params(cls, value: Mapping[str, Param]) -> Params:
        return read_only(value, Params)

    def __getitem__(self, key: str) -> Param:
        try:
            return self.params[key]
        except KeyError:
            raise PolicyError("no such policy parameter", file=self.source, key=key) from None

    @property
    def label(self) -> str:
        return f"{self.name} v{self.version}"

    def product(self, product: str) -> ProductPolicy:
        p = f"products.{product}"
        if product == "auto":
            return ProductPolicy(
                product=product,
                min_score=self[f"{p}.minScore"],
                max_dti_pct=self[f"{p}.maxDtiPct"],
                counteroffer_step=self[f"{p}.counterofferStep"],
                max_ltv_pct=self[f"{p}.maxLtvPct"],
                min_amount=self[f"{p}.minAmount"],
                terms_allowed=self[f"{p}.termsAllowed"],
            )
        return ProductPolicy(
            product=product,
            min_score=self[f"{p}.minScore"],
            max_dti_pct=self[f"{p}.maxDtiPct"],
            counteroffer_step=self[f"{p}.counterofferStep"],
            min_line=self[f"{p}.minLine"],
            payment_pct_of_line=self[f"{p}.paymentPctOfLine"],
        )

    def pricing(self, product: str, band: str) -> BandPricing:
        base = f"pricing.{product}.{band}"
        return BandPricing(
            band=band,
            apr=self[f"{base}.apr"],
            line=self[f"{base}.line"] if product == "card" else None,
        )

    def in_force_on(self, day: dt.date) -> bool:
        return day >= self.effective_date

    def to_document(self) -> dict[str, Any]:
        """The policy as a JSON-ready document (what ``get_policy`` serves)."""

        def plain(value: Any) -> Any:
            return list(value) if isinstance(value, tuple) else value

        return {
            "policy": self.name,
            "version": self.version,
            "effectiveDate": self.effective_date.isoformat(),
            "reference": self.reference,
            "sha256": self.sha256,
            "parameters": {
                key: {
                    "value": plain(p.value),
                    "unit": p.unit,
                    "reference": p.reference,
                    **({"description": p.description} if p.description else {}),
                }
                for key, p in self.params.items()
            },
        }


def load_policy(path: Path | str, text: str | None = None) -> Policy:
    """Load and validate a policy file; its SHA-256 is of the file's exact bytes."""
    path = Path(path)
    text, raw = read_source(path, text)
    file = str(path)
    document = load_yaml(path, text)
    header = expect_keys(
        document,
        required=_HEADER_REQUIRED | set(_TREE),
        optional=_HEADER_OPTIONAL,
        file=file,
        key="",
    )
    params = read_parameters(
        {k: header[k] for k in _TREE},
        _TREE,
        lambda key, raw, value_key: _read_value(_SCHEMA[key], raw, file=file, key=value_key),
        file=file,
    )
    policy = Policy(
        name=read_str(header["policy"], file=file, key="policy"),
        version=read_str(str(header["version"]), file=file, key="version"),
        effective_date=read_date(header["effectiveDate"], file=file, key="effectiveDate"),
        reference=read_str(header["reference"], file=file, key="reference"),
        description=header.get("description"),
        source=file,
        sha256=hashlib.sha256(raw).hexdigest(),
        params=params,
    )
    _check_coherent(policy)
    return policy


def _check_coherent(policy: Policy) -> None:
    """Relations between parameters that a typo would break."""
    file = policy.source
    checks: list[tuple[bool, str, str]] = [
        (
            policy["scoreBands.prime"].value
            > policy["scoreBands.near-prime"].value
            > policy["scoreBands.subprime"].value,
            "scoreBands",
            "band minimums must descend: prime > near-prime > subprime",
        ),
        (policy["maxReasons"].value >= 1, "maxReasons", "must be at least 1"),
        (policy["noticeDeadlineDays"].value >= 1, "noticeDeadlineDays", "must be at least 1"),
        (
            policy["scoreScale.min"].value
            <= policy["scoreBands.subprime"].value
            < policy["scoreScale.max"].value,
            "scoreScale",
            "the scale must hold every band: scoreScale.min <= subprime floor < scoreScale.max",
        ),
        (
            Decimal(0) <= policy["confidenceFloor"].value <= 1,
            "confidenceFloor",
            "must lie in 0..1",
        ),
    ]
    for key in ("rounding.money", "rounding.percent"):
        value: Decimal = policy[key].value
        checks.append(
            (value > 0 and value == value.scaleb(0).normalize(), key, "must be a positive quantum")
        )
    for product in ("auto", "card"):
        step: Decimal = policy[f"products.{product}.counterofferStep"].value
        checks.append((step > 0, f"products.{product}.counterofferStep", "must be positive"))
    for ok, key, message in checks:
        if not ok:
            raise PolicyError(message, file=file, key=key)


def default_policy_path() -> Path:
    ref = resources.files("credit") / "data" / "policies" / "reference-2026.1.yaml"
    return Path(str(ref))


_DEFAULT: dict[str, Policy] = {}


def default_policy() -> Policy:
    """The reference policy the product ships (loaded once)."""
    if "p" not in _DEFAULT:
        _DEFAULT["p"] = load_policy(default_policy_path())
    return _DEFAULT["p"]


class PolicyRegistry:
    """The policy versions a lender has adopted; picks the one in force on a date.

    The version in force on a day is the one with the latest effective date on or
    before it. Two versions with the same effective date are a conflict (an error).
    """

    def __init__(self, policies: list[Policy]) -> None:
        if not policies:
            raise PolicyError("a policy registry needs at least one policy")
        by_date: dict[dt.date, Policy] = {}
        for policy in policies:
            other = by_date.get(policy.effective_date)
            if other is not None and other.sha256 != policy.sha256:
                raise PolicyError(
                    f"{other.label} ({other.source}) takes effect the same day",
                    file=policy.source,
                    key="effectiveDate",
                )
            by_date[policy.effective_date] = policy
        self._policies = sorted(by_date.values(), key=lambda p: p.effective_date)

    @classmethod
    def from_directory(cls, directory: Path | str) -> PolicyRegistry:
        files = sorted(Path(directory).glob("*.yaml"))
        return cls([load_policy(f) for f in files])

    @classmethod
    def bundled(cls) -> PolicyRegistry:
        return cls([default_policy()])

    @property
    def policies(self) -> tuple[Policy, ...]:
        return tuple(self._policies)

    def in_force(self, day: dt.date) -> Policy:
        chosen: Policy | None = None
        for policy in self._policies:
            if policy.effective_date <= day:
                chosen = policy
        if chosen is None:
            first = self._policies[0]
            raise PolicyError(
                f"no policy is in force on {day}; the earliest takes effect {first.effective_date}",
                file=first.source,
                key="effectiveDate",
            )
        return chosen

    def by_sha256(self, sha256: str) -> Policy | None:
        return next((p for p in self._policies if p.sha256 == sha256), None)
