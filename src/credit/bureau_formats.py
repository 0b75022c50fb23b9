"""The formats of the bureau fields a notice prints, as versioned data.

The data file (``data/bureau-formats.yaml``) gives each key-factor code's value format
(a percentage "59%", a count with its unit "3 accounts", whole dollars "$1,250", a
duration "14 months") and a pattern for the bureau's name, address and telephone and
for the score model, each with a reference and an example. A value in any other form
("34%; call 1-900-555-0199") is not the bureau's value as reported.

Two readers use it: intake, which rejects a case whose bureau value does not match,
and the notice verifier (check V8), which refuses a notice that states such a value in
a reason or in the credit-score disclosure.

The loader is strict like the other governed-data loaders (:mod:`credit.yamldata`):
unknown, missing and duplicate keys, a kind it does not know, a pattern that does not
compile or has groups, and an example that its own format rejects are
:class:`~credit.errors.PolicyError` naming the file and the key.

Public API: :meth:`BureauFormats.check_key_factor` and :meth:`BureauFormats.check_field`
return ``None`` when a value matches, else what is wrong; :func:`default_bureau_formats`.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from credit.errors import PolicyError
from credit.kept import read_only_fields
from credit.yamldata import expect_keys, load_yaml, read_source, read_str, versioned

__all__ = [
    "FIELDS",
    "KINDS",
    "BureauFormats",
    "FieldFormat",
    "KeyFactorFormat",
    "default_bureau_formats",
    "default_bureau_formats_path",
    "load_bureau_formats",
]

Kind = Literal["percentage", "count", "dollars", "duration"]
KINDS: tuple[Kind, ...] = ("percentage", "count", "dollars", "duration")
# The bureau fields a notice prints besides the key factors (the file lists exactly these).
FIELDS = ("bureau.name", "bureau.address", "bureau.phone", "scoreModel")

_KIND_SHAPES: Mapping[str, str] = MappingProxyType(
    {
        "percentage": r"(?:0|[1-9][0-9]{0,2})%",
        "dollars": r"\$(?:0|[1-9][0-9]{0,2}(?:,[0-9]{3})*)",
    }
)
_KIND_WORDS: Mapping[str, str] = MappingProxyType(
    {
        "percentage": "a whole percentage",
        "count": "a whole count with its unit",
        "dollars": "whole dollars with thousands separators",
        "duration": "a whole number of",
    }
)
_HEADER = frozenset({"formats", "version", "effectiveDate", "reference", "keyFactors", "fields"})
_FACTOR_COMMON = frozenset({"label", "kind", "example", "reference"})
_FACTOR_EXTRA: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "percentage": frozenset(),
        "dollars": frozenset(),
        "count": frozenset({"unit", "plural"}),
        "duration": frozenset({"units"}),
    }
)
_FIELD_KEYS = frozenset({"description", "pattern", "example", "reference"})
_UNIT = re.compile(r"[a-z]+")


def _counted(units: Mapping[str, str]) -> str:
    """A whole number and a unit, singular for exactly 1: ``1 month``, ``14 months``."""
    singular = "|".join(re.escape(u) for u in units)
    plural = "|".join(re.escape(p) for p in units.values())
    return rf"(?:1 (?:{singular})|(?:0|[2-9]|[1-9][0-9]+) (?:{plural}))"


@dataclass(frozen=True, slots=True)
class KeyFactorFormat:
    """The format of one key-factor code's value."""

    code: str
    label: str
    kind: Kind
    units: Mapping[str, str]  # singular -> plural (count, duration); empty otherwise
    example: str
    reference: str
    pattern: re.Pattern[str]

    def __post_init__(self) -> None:
        read_only_fields(self, "units")

    def describe(self) -> str:
        """The format in words, with its example: ``a whole percentage such as "59%"``."""
        words = _KIND_WORDS[self.kind]
        if self.kind == "duration":
            words += " " + " or ".join(self.units.values())
        return f"{words} such as {self.example!r}"


@dataclass(frozen=True, slots=True)
class FieldFormat:
    """The format of one bureau field (``bureau.name``, ``bureau.phone``, ...)."""

    field: str
    description: str
    example: str
    reference: str
    pattern: re.Pattern[str]


@dataclass(frozen=True)
class BureauFormats:
    """A loaded, validated bureau-formats file. Immutable."""

    name: str
    version: str
    effective_date: dt.date
    reference: str
    source: str
    sha256: str
    key_factors: Mapping[str, KeyFactorFormat]
    fields: Mapping[str, FieldFormat]

    def __post_init__(self) -> None:
        read_only_fields(self, "key_factors", "fields")

    def check_key_factor(self, code: str, value: str) -> str | None:
        """None when ``value`` is in the format of key-factor ``code``, else what is wrong."""
        fmt = self.key_factors.get(code)
        if fmt is None:
            return f"key-factor code {code!r} has no format in {self.name} {self.version}"
        if fmt.pattern.fullmatch(value) is None:
            return f"key factor {code} value {value!r} is not {fmt.describe()}"
        return None

    def check_field(self, field: str, value: str) -> str | None:
        """None when ``value`` is in the format of ``field`` (one of :data:`FIELDS`),
        else what is wrong."""
        fmt = self.fields.get(field)
        if fmt is None:
            raise KeyError(f"no bureau field {field!r} (one of {', '.join(FIELDS)})")
        if fmt.pattern.fullmatch(value) is None:
            return f"{field} {value!r} is not {fmt.description} (such as {fmt.example!r})"
        return None

    def key_factor_pattern(self, code: str) -> str:
        """The regular expression of a code's value (to embed in a larger one)."""
        return self.key_factors[code].pattern.pattern

    def field_pattern(self, field: str) -> str:
        return self.fields[field].pattern.pattern


# ---------------------------------------------------------------- loading


def _compile(source: str, *, file: str, key: str) -> re.Pattern[str]:
    try:
        compiled = re.compile(source)
    except re.error as err:
        raise PolicyError(f"not a valid pattern: {err}", file=file, key=key) from None
    if compiled.groups:
        raise PolicyError(
            "a pattern may not have capturing groups (use (?:...))", file=file, key=key
        )
    if compiled.fullmatch("") is not None:
        raise PolicyError("a pattern may not match empty text", file=file, key=key)
    return compiled


def _unit(value: Any, *, file: str, key: str) -> str:
    unit = read_str(value, file=file, key=key)
    if _UNIT.fullmatch(unit) is None:
        raise PolicyError(f"a unit is lower-case letters, got {unit!r}", file=file, key=key)
    return unit


def _key_factor(code: Any, body: Any, *, file: str) -> KeyFactorFormat:
    prefix = f"keyFactors.{code}"
    if not isinstance(code, str) or re.fullmatch(r"[0-9A-Z]{1,4}", code) is None:
        raise PolicyError(
            f"a key-factor code is 1 to 4 digits or capitals, quoted, got {code!r}",
            file=file,
            key=prefix,
        )
    if not isinstance(body, dict) or body.get("kind") not in KINDS:
        got = body.get("kind") if isinstance(body, dict) else body
        raise PolicyError(
            f"kind must be one of {', '.join(KINDS)}, got {got!r}", file=file, key=f"{prefix}.kind"
        )
    kind: Kind = body["kind"]
    data = expect_keys(body, required=_FACTOR_COMMON | _FACTOR_EXTRA[kind], file=file, key=prefix)
    units: dict[str, str] = {}
    if kind == "count":
        unit = _unit(data["unit"], file=file, key=f"{prefix}.unit")
        units[unit] = _unit(data["plural"], file=file, key=f"{prefix}.plural")
        shape = _counted(units)
    elif kind == "duration":
        raw = data["units"]
        if not isinstance(raw, dict) or not raw:
            raise PolicyError("expected a mapping unit: plural", file=file, key=f"{prefix}.units")
        for singular, plural in raw.items():
            key = f"{prefix}.units.{singular}"
            units[_unit(singular, file=file, key=key)] = _unit(plural, file=file, key=key)
        shape = _counted(units)
    else:
        shape = _KIND_SHAPES[kind]
    if len(set(units) | set(units.values())) != 2 * len(units):
        raise PolicyError("a unit is listed twice", file=file, key=prefix)
    fmt = KeyFactorFormat(
        code=code,
        label=read_str(data["label"], file=file, key=f"{prefix}.label"),
        kind=kind,
        units=dict(units),
        example=read_str(data["example"], file=file, key=f"{prefix}.example"),
        reference=read_str(data["reference"], file=file, key=f"{prefix}.reference"),
        pattern=re.compile(shape),
    )
    if fmt.pattern.fullmatch(fmt.example) is None:
        raise PolicyError(
            f"the example {fmt.example!r} is not {_KIND_WORDS[kind]}",
            file=file,
            key=f"{prefix}.example",
        )
    return fmt


def _field(name: str, body: Any, *, file: str) -> FieldFormat:
    prefix = f"fields.{name}"
    data = expect_keys(body, required=_FIELD_KEYS, file=file, key=prefix)
    fmt = FieldFormat(
        field=name,
        description=read_str(data["description"], file=file, key=f"{prefix}.description"),
        example=read_str(data["example"], file=file, key=f"{prefix}.example"),
        reference=read_str(data["reference"], file=file, key=f"{prefix}.reference"),
        pattern=_compile(
            read_str(data["pattern"], file=file, key=f"{prefix}.pattern"),
            file=file,
            key=f"{prefix}.pattern",
        ),
    )
    if fmt.pattern.fullmatch(fmt.example) is None:
        raise PolicyError(
            f"the example {fmt.example!r} does not match its own pattern",
            file=file,
            key=f"{prefix}.example",
        )
    return fmt


def load_bureau_formats(path: Path | str, text: str | None = None) -> BureauFormats:
    """Load and validate a bureau-formats file; its SHA-256 is of the exact bytes."""
    path = Path(path)
    file = str(path)
    text, raw = read_source(path, text)
    doc = expect_keys(load_yaml(path, text), required=_HEADER, file=file, key="")
    factors_raw = doc["keyFactors"]
    if not isinstance(factors_raw, dict) or not factors_raw:
        raise PolicyError("expected a non-empty mapping of codes", file=file, key="keyFactors")
    factors = {str(code): _key_factor(code, body, file=file) for code, body in factors_raw.items()}
    fields_raw = expect_keys(doc["fields"], required=set(FIELDS), file=file, key="fields")
    fields = {name: _field(name, fields_raw[name], file=file) for name in FIELDS}
    return BureauFormats(
        **versioned(doc, "formats", file=file, raw=raw),
        key_factors=factors,
        fields=fields,
    )


def default_bureau_formats_path() -> Path:
    return Path(str(resources.files("credit") / "data" / "bureau-formats.yaml"))


@cache
def default_bureau_formats() -> BureauFormats:
    """The bureau formats the product ships (loaded once)."""
    return load_bureau_formats(default_bureau_formats_path())
