"""Strict YAML reading for governed data files (policy, reason catalogue, ...).

The loader refuses to guess: duplicate keys are errors, no value is silently turned
into a float (``45.0`` stays the text "45.0", read later as an exact Decimal) and no
date is parsed implicitly (dates are checked where they are read, so a bad date is an
error that names its key).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, TypedDict

import yaml

from credit.errors import PolicyError

__all__ = [
    "Versioned",
    "expect_keys",
    "load_yaml",
    "read_date",
    "read_decimal",
    "read_int",
    "read_source",
    "read_str",
    "versioned",
]


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader without implicit floats or timestamps, rejecting duplicate keys."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    mapping: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in mapping:
            line = key_node.start_mark.line + 1
            raise PolicyError(f"duplicate key on line {line}", file=loader.name, key=str(key))
        mapping[key] = loader.construct_object(value_node, deep=True)
    return mapping


def _strict(loader: type[Any]) -> None:
    """Make ``loader`` strict: no implicit floats or timestamps, no duplicate keys."""
    loader.yaml_implicit_resolvers = {
        first: [
            (tag, regexp)
            for tag, regexp in resolvers
            if tag not in ("tag:yaml.org,2002:float", "tag:yaml.org,2002:timestamp")
        ]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


_strict(_StrictLoader)

# The same strict loader over libyaml's parser (when PyYAML was built with it): the same
# resolvers and constructors in Python, the scanning and parsing in C, several times
# faster. It reads every governed file that is well formed; a file it refuses is read
# again by the pure-Python loader, whose error (quoting the text) is the one stated.
_FastStrictLoader: type[Any] | None = None
if getattr(yaml, "__with_libyaml__", False):

    class _CStrictLoader(yaml.CSafeLoader):
        """CSafeLoader without implicit floats or timestamps, rejecting duplicate keys."""

    _strict(_CStrictLoader)
    _FastStrictLoader = _CStrictLoader


def _parse(loader_class: type[Any], text: str, name: str) -> Any:
    loader = loader_class(text)
    loader.name = name
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def read_source(path: Path | str, text: str | None = None) -> tuple[str, bytes]:
    """A governed file's text and exact bytes (what its SHA-256 is taken of).

    With ``text`` given (a test, an upload), the bytes are its UTF-8 encoding."""
    if text is not None:
        return text, text.encode("utf-8")
    try:
        raw = Path(path).read_bytes()
    except OSError as err:
        raise PolicyError(f"cannot read: {err.strerror}", file=str(path)) from None
    try:
        return raw.decode("utf-8"), raw
    except UnicodeDecodeError:
        raise PolicyError("not UTF-8 text", file=str(path)) from None


def load_yaml(path: Path | str, text: str | None = None) -> Any:
    """Parse a governed YAML file strictly; syntax errors name the file."""
    path = Path(path)
    if text is None:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as err:
            raise PolicyError(f"cannot read: {err.strerror}", file=str(path)) from None
    if _FastStrictLoader is not None:
        try:
            return _parse(_FastStrictLoader, text, str(path))
        except (yaml.YAMLError, PolicyError):
            pass  # read again below: the pure-Python loader states the error
    try:
        return _parse(_StrictLoader, text, str(path))
    except yaml.YAMLError as err:
        raise PolicyError(f"not valid YAML: {err}", file=str(path)) from None


def expect_keys(
    mapping: Any,
    *,
    required: set[str] | frozenset[str],
    optional: set[str] | frozenset[str] = frozenset(),
    file: str,
    key: str,
) -> dict[str, Any]:
    """Check a mapping has exactly the keys allowed: unknown and missing keys are errors."""
    where = key or "(top level)"
    if not isinstance(mapping, dict):
        raise PolicyError(f"expected a mapping, got {type(mapping).__name__}", file=file, key=where)
    for name in mapping:
        if name not in required and name not in optional:
            full = f"{key}.{name}" if key else str(name)
            raise PolicyError("unknown key", file=file, key=full)
    for name in sorted(required):
        if name not in mapping:
            full = f"{key}.{name}" if key else name
            raise PolicyError("missing key", file=file, key=full)
    return mapping


_DECIMAL = re.compile(r"^-?\d+(\.\d+)?$")


def read_decimal(value: Any, *, file: str, key: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise PolicyError(f"expected a decimal number, got {value!r}", file=file, key=key)
    text = str(value).strip()
    if not _DECIMAL.match(text):
        raise PolicyError(f"expected a decimal number, got {value!r}", file=file, key=key)
    try:
        return Decimal(text)
    except InvalidOperation:  # pragma: no cover - the pattern already rules this out
        raise PolicyError(f"expected a decimal number, got {value!r}", file=file, key=key) from None


def read_int(value: Any, *, file: str, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise PolicyError(f"expected an integer, got {value!r}", file=file, key=key)
    return value


def read_str(value: Any, *, file: str, key: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise PolicyError(f"expected non-empty text, got {value!r}", file=file, key=key)
    return value


def read_date(value: Any, *, file: str, key: str) -> dt.date:
    if not isinstance(value, str) or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        raise PolicyError(f"expected a date YYYY-MM-DD, got {value!r}", file=file, key=key)
    try:
        return dt.date.fromisoformat(value)
    except ValueError as err:
        raise PolicyError(f"bad date {value!r}: {err}", file=file, key=key) from None


class Versioned(TypedDict):
    """What every governed data file states about itself, and where it came from."""

    name: str
    version: str
    effective_date: dt.date
    reference: str
    source: str
    sha256: str


def versioned(doc: Any, name_key: str, *, file: str, raw: bytes) -> Versioned:
    """The header of a governed data file (its name under ``name_key``, version,
    effectiveDate, reference), with the file it was read from and the SHA-256 of its
    bytes: the fields every loader's result carries (``**versioned(...)``)."""
    return Versioned(
        name=read_str(doc[name_key], file=file, key=name_key),
        version=read_str(str(doc["version"]), file=file, key="version"),
        effective_date=read_date(doc["effectiveDate"], file=file, key="effectiveDate"),
        reference=read_str(doc["reference"], file=file, key="reference"),
        source=file,
        sha256=hashlib.sha256(raw).hexdigest(),
    )
