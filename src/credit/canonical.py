"""Canonical JSON: the one byte form used on the wire, in hashes and in the journal.

Decimals are written as JSON numbers with exactly the digits they carry (``6.49``,
``28000.00``), never through a float, so a figure stated anywhere is byte-for-byte the
figure the decision used. Dates are ISO strings.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Mapping, Sequence
from decimal import Decimal
from json.encoder import encode_basestring, encode_basestring_ascii
from typing import Any

__all__ = ["canonical_bytes", "dumps", "loads", "sha256_hex"]


def _encode(obj: Any, sort_keys: bool, out: list[str]) -> None:
    # strings first, the commonest; ``encode_basestring`` is what ``json.dumps(s,
    # ensure_ascii=False)`` calls, without building an encoder for each string
    if isinstance(obj, str):
        out.append(encode_basestring(obj))
    elif obj is None:
        out.append("null")
    elif obj is True:
        out.append("true")
    elif obj is False:
        out.append("false")
    elif isinstance(obj, Decimal):
        if not obj.is_finite():
            raise ValueError(f"cannot encode non-finite decimal {obj!r}")
        out.append(format(obj, "f"))
    elif isinstance(obj, int):
        out.append(str(obj))
    elif isinstance(obj, float):
        out.append(json.dumps(obj, allow_nan=False))
    elif isinstance(obj, dt.date):
        out.append(encode_basestring_ascii(obj.isoformat()))
    elif isinstance(obj, Mapping):
        items = sorted(obj.items()) if sort_keys else list(obj.items())
        out.append("{")
        for i, (key, value) in enumerate(items):
            if not isinstance(key, str):
                raise TypeError(f"object keys must be strings, got {key!r}")
            if i:
                out.append(",")
            out.append(encode_basestring(key))
            out.append(":")
            _encode(value, sort_keys, out)
        out.append("}")
    elif isinstance(obj, Sequence) and not isinstance(obj, (bytes, bytearray)):
        out.append("[")
        for i, value in enumerate(obj):
            if i:
                out.append(",")
            _encode(value, sort_keys, out)
        out.append("]")
    else:
        raise TypeError(f"cannot encode {type(obj).__name__} as canonical JSON")


def dumps(obj: Any, *, sort_keys: bool = False) -> str:
    """Compact JSON text; Decimals keep their exact digits."""
    out: list[str] = []
    _encode(obj, sort_keys, out)
    return "".join(out)


def canonical_bytes(obj: Any) -> bytes:
    """The hashing form: keys sorted, compact, UTF-8."""
    return dumps(obj, sort_keys=True).encode("utf-8")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number")


def loads(text: str | bytes) -> Any:
    """Parse JSON reading every non-integer number as an exact Decimal."""
    return json.loads(text, parse_float=Decimal, parse_constant=_reject_constant)
