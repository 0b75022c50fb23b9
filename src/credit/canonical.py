"""Canonical JSON: the one byte form used on the wire, in hashes and in the journal.

Decimals are written as JSON numbers with exactly the digits they carry (``6.49``,
``28000.00``), never through a float, so a figure stated anywhere is byte-for-byte the
figure the decision used. Dates are ISO strings.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import secrets
import threading
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any, Final, NamedTuple, TypeGuard

import orjson

__all__ = [
    "Normal",
    "canonical_bytes",
    "dumps",
    "fragment",
    "is_mapping",
    "loads",
    "normal_form",
    "orjson_writes_alike",
    "read_back",
    "reference_dumps",
    "sha256_hex",
]


def _encode(obj: Any, sort_keys: bool, out: list[str]) -> None:
    """The reference encoder, value by value: :func:`dumps` is checked against it (a
    deliberate second implementation, ``tests/test_canonical.py``) and falls back to it
    in the one case its fast path cannot decide."""
    if obj is None:
        out.append("null")
    elif obj is True:
        out.append("true")
    elif obj is False:
        out.append("false")
    elif isinstance(obj, Decimal):
        out.append(_decimal_text(obj))
    elif isinstance(obj, int):
        out.append(str(obj))
    elif isinstance(obj, float):
        out.append(json.dumps(obj, allow_nan=False))
    elif isinstance(obj, str):
        out.append(json.dumps(obj, ensure_ascii=False))
    elif isinstance(obj, dt.date):
        out.append(json.dumps(obj.isoformat()))
    elif isinstance(obj, Mapping):
        items = sorted(obj.items()) if sort_keys else list(obj.items())
        out.append("{")
        for i, (key, value) in enumerate(items):
            if not isinstance(key, str):
                raise TypeError(f"object keys must be strings, got {key!r}")
            if i:
                out.append(",")
            out.append(json.dumps(key, ensure_ascii=False))
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


def _decimal_text(value: Decimal) -> str:
    if not value.is_finite():
        raise ValueError(f"cannot encode non-finite decimal {value!r}")
    return format(value, "f")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number")


def reference_dumps(obj: Any, *, sort_keys: bool = False) -> str:
    """:func:`dumps` by the reference encoder (slower; the same text)."""
    out: list[str] = []
    _encode(obj, sort_keys, out)
    return "".join(out)


# The fast path: the standard library's C encoder, each Decimal first written as a
# placeholder string that names this process's random nonce and the Decimal's index,
# then each placeholder (as the encoder writes it, quotes and escaped NULs) replaced by
# the Decimal's exact digits. The encoder meets the values in the order it writes them,
# so the placeholders stand in the text in the order of their indices. A string in the
# data that spells a placeholder makes the count differ: then the reference encoder
# writes the text.
#
# The encoder is the one json.dumps builds for these options (no indent, compact
# separators, circles refused), made here directly: the JSONEncoder object and its
# Python setup around the C encoder cost about as much as encoding a small object (a
# journal entry's reference, say).
_NONCE: Final = secrets.token_hex(16)
_OPEN: Final = '"\\u0000' + _NONCE + ":"  # a placeholder as written, up to its index
_CLOSE: Final = '\\u0000"'  # and after it


# orjson hands a subclass of dict, list, str or int, a date and a dataclass to
# ``default`` (which refuses each: json's encoder writes them, or refuses them, its
# own way); keys sorted where asked, as ``sorted`` sorts them (by code point).
_IN_ORDER: Final = (
    orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
)
_SORTED: Final = _IN_ORDER | orjson.OPT_SORT_KEYS


def _fast(obj: Any, sort_keys: bool) -> str | None:
    decimals: list[str] = []

    def default(value: Any) -> Any:
        if isinstance(value, Decimal):
            decimals.append(_decimal_text(value))
            return f"\x00{_NONCE}:{len(decimals) - 1}\x00"
        if isinstance(value, dt.date):
            return value.isoformat()
        if isinstance(value, Mapping):
            if not all(isinstance(key, str) for key in value):
                raise TypeError(f"object keys must be strings, got {value!r}")
            return dict(value)
        if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
            return list(value)
        raise TypeError(f"cannot encode {type(value).__name__} as canonical JSON")

    if c_make_encoder is None:  # an interpreter without json's C accelerator
        encoder = json.JSONEncoder(
            ensure_ascii=False,
            separators=(",", ":"),
            sort_keys=sort_keys,
            allow_nan=False,
            default=default,
        )
        text = encoder.encode(obj)
    else:
        chunks = c_make_encoder(
            {}, default, encode_basestring, None, ":", ",", sort_keys, False, False
        )(obj, 0)
        text = "".join(chunks)
    if not decimals:  # nothing put in: the encoder's text is the text (a string that
        return text  # spells the nonce is written by both encoders alike)
    parts = text.split(_OPEN)
    if len(parts) != len(decimals) + 1:
        return None
    # Each placeholder is then a real one (a string in the data holding one, even
    # within it, where its quote is escaped, would add a part), so each part after
    # the first begins with its placeholder's index and close, and the nonce anywhere
    # else is the data's own text, written by both encoders alike.
    out = [parts[0]]
    for index, part in enumerate(parts[1:]):
        out += (decimals[index], part.partition(_CLOSE)[2])
    return "".join(out)


def dumps(obj: Any, *, sort_keys: bool = False) -> str:
    """Compact JSON text; Decimals keep their exact digits; a value JSON cannot carry
    is a TypeError and a non-finite number a ValueError. Object keys are strings (a
    key that is a number, a boolean or null is written as its JSON text in quotes, as
    the json module does; the reference encoder refuses it).

    orjson writes the text where it writes what json's encoder writes
    (:func:`_orjson_alike`), about twice as fast; json's C encoder writes the rest."""
    alike = _orjson_alike(obj, sort_keys)
    return alike[0] if alike is not None else _json_text(obj, sort_keys)


def _json_text(obj: Any, sort_keys: bool) -> str:
    """:func:`dumps`' text as json's C encoder writes it (the fast path), or the
    reference encoder where that path cannot decide."""
    text = _fast(obj, sort_keys)
    return text if text is not None else reference_dumps(obj, sort_keys=sort_keys)


class _Numbers(threading.local):
    """A thread's note of the numbers with a fraction :func:`_orjson_alike` wrote (each
    Decimal's) and read back (each number's), and the decoder it reads with (:func:`loads`'
    options, each such number noted as it is read): made once a thread, not once a
    text."""

    def __init__(self) -> None:
        self.written: list[str] = []
        self.read: list[str] = []
        self.negative_zero = False  # a Decimal written as -0 (it reads back as the int 0)
        self.decoder = json.JSONDecoder(parse_float=self.fraction, parse_constant=_reject_constant)

    def decimal_only(self, value: Any) -> Any:
        if type(value) is Decimal:
            text = _decimal_text(value)
            if "." in text:
                self.written.append(text)
            elif text == "-0":
                self.negative_zero = True
            return orjson.Fragment(text)
        raise TypeError(f"not written alike: {type(value).__name__}")

    def fraction(self, number: str) -> Decimal:
        self.read.append(number)
        return Decimal(number)


_NUMBERS: Final = _Numbers()


def _orjson_alike(obj: Any, sort_keys: bool) -> tuple[str, Any] | None:
    """The value's text as orjson writes it, where that is the text json's encoder
    writes (and so the reference encoder's), and what it reads back as (:func:`loads`
    of it); None where the text may not be json's.

    orjson writes some values otherwise than json's encoder or where json's refuses:
    a float (in its own notation, a non-finite one as null), an enum (by its value), a
    UUID and an ``orjson.Fragment``; a subclass of dict, list, str or int, a date and a
    dataclass it is made to hand to ``default``, which refuses them (json's encoder
    writes them, or refuses them, its own way). So the text is read back and kept
    only where (1) the numbers with a fraction it holds are exactly the Decimals it
    was given, in order (a float always has a fraction or an exponent in orjson's
    text, a Decimal never an exponent: so no float was written), and (2) what it
    reads back equals the value (an enum that is not a str or an int, a UUID, a
    fragment and a non-finite float do not; a tuple does not either, and goes the
    other way). Then each part of the value is a dict with str keys, a list, a str,
    an int, a bool, None or a finite Decimal (or a str or int enum, written as the str
    or int it is), which both write alike, keys sorted by code point where asked
    (``tests/test_canonical.py``)."""
    numbers = _NUMBERS
    written, read = numbers.written, numbers.read
    written.clear()
    read.clear()
    numbers.negative_zero = False
    try:
        data = orjson.dumps(
            obj, default=numbers.decimal_only, option=_SORTED if sort_keys else _IN_ORDER
        )
    except TypeError:  # orjson.JSONEncodeError is one
        return None
    text = data.decode("utf-8")
    # the decoder's own scanner (set by its __init__; typeshed omits it): orjson writes no
    # whitespace for decode's to skip
    value, end = numbers.decoder.scan_once(text, 0)  # type: ignore[attr-defined]
    if end != len(text) or read != written:
        return None
    try:
        same = bool(value == obj)
    except Exception:  # a comparison that cannot be made (json's encoder decides)
        return None
    return (text, value) if same else None


def canonical_bytes(obj: Any) -> bytes:
    """The hashing form: keys sorted, compact, UTF-8."""
    return dumps(obj, sort_keys=True).encode("utf-8")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# One decoder for every read: json.loads with these options builds a new one per call
# (about a fifth of reading a journal entry).
_DECODER: Final = json.JSONDecoder(parse_float=Decimal, parse_constant=_reject_constant)


def loads(text: str | bytes) -> Any:
    """Parse JSON reading every non-integer number as an exact Decimal: what
    ``json.loads(text, parse_float=Decimal, parse_constant=...)`` gives, bytes and a
    leading byte-order mark included (a test compares the two over any text)."""
    if not isinstance(text, str):
        if not isinstance(text, (bytes, bytearray)):
            raise TypeError(f"the JSON object must be str or bytes, not {type(text).__name__}")
        text = text.decode(json.detect_encoding(text), "surrogatepass")
    elif text.startswith("\ufeff"):
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    return _DECODER.decode(text)


class Normal(NamedTuple):
    """What :func:`normal_form` gives: a value as it reads back from canonical JSON,
    and that value's canonical text. Made by :func:`normal_form` alone (never built by
    hand): a store handed one (intake's case document and vault rows,
    :meth:`credit.journal.base.Store.put_case`) stores its text as it is, the value's
    canonical text by construction, instead of writing the value again."""

    value: Any
    text: str


def normal_form(value: Any) -> Normal:
    """The value as it reads back from canonical JSON (``loads(dumps(value,
    sort_keys=True))``: dates as text, exact decimals, a float as the decimal it prints
    as) and that value's canonical text, keys sorted: what the journal stores and
    hashes. A value :func:`dumps` refuses is refused here alike.

    The text is written by orjson: the value is one :func:`loads` just gave, so it
    holds only dicts, lists, strings, ints, Decimals, booleans and None (never a float,
    which orjson writes otherwise than json does, a non-finite one as null), and for
    these orjson writes what :func:`dumps` writes (a hypothesis property,
    ``tests/test_canonical.py``), about eight times as fast. Its keys are in order
    already (``loads`` keeps the order of the sorted text it read), so they are not
    sorted again. What orjson cannot write (an int beyond 64 bits, a lone surrogate)
    :func:`dumps` writes.

    Where orjson wrote :func:`dumps`' text, the value it read back to check it is the
    one kept (:func:`_orjson_alike`): the text is not read twice, and it is kept as
    the value's own text where it is that (:func:`_read_back`); only where it is not
    is the value written again."""
    own, normal = _read_back(value, True)
    if own is not None:
        return Normal(normal, own)
    try:
        text = orjson.dumps(normal, default=fragment)
    except TypeError:  # orjson.JSONEncodeError is one
        return Normal(normal, _json_text(normal, True))
    return Normal(normal, text.decode("utf-8"))


def read_back(value: Any, *, sort_keys: bool = False) -> Any:
    """``loads(dumps(value, sort_keys=...))``: the value as its canonical JSON reads back
    (a float as the exact decimal it prints as, a date as its text), without parsing
    the text again where orjson wrote it (:func:`_orjson_alike` read it back already).
    A value :func:`dumps` refuses is refused alike."""
    return _read_back(value, sort_keys)[1]


def _read_back(value: Any, sort_keys: bool) -> tuple[str | None, Any]:
    """What :func:`read_back` gives, and with it orjson's text where that is also the
    text of the value read back (each part reads back as what writes its text again),
    else None: where json's encoder wrote the text, or where a Decimal was written as
    ``-0``, which reads back as the int 0."""
    alike = _orjson_alike(value, sort_keys)
    if alike is None:
        return None, loads(_json_text(value, sort_keys))
    return (None if _NUMBERS.negative_zero else alike[0]), alike[1]


def fragment(value: Any) -> Any:
    """orjson's ``default``: a Decimal as its exact digits, as :func:`dumps` writes
    them (a TypeError for anything else, a ValueError for a non-finite Decimal)."""
    if type(value) is Decimal:
        return orjson.Fragment(_decimal_text(value))
    raise TypeError(f"not a value loads gives: {type(value).__name__}")


# The scalar types orjson writes as dumps does (a Decimal through fragment); it writes a
# float otherwise (1e-7, a non-finite one as null) and some types dumps refuses.
_ORJSON_ALIKE: Final = frozenset({str, int, bool, type(None), Decimal})


def orjson_writes_alike(leaves: Iterable[Any]) -> bool:
    """Whether each of these scalars is of a type orjson (with :func:`fragment`)
    writes as :func:`dumps` does: a writer that hands orjson values of no known type
    checks their leaves with this first (checked at C speed)."""
    return _ORJSON_ALIKE.issuperset(map(type, leaves))


def is_mapping(value: Any) -> TypeGuard[Mapping[Any, Any]]:
    """``isinstance(value, Mapping)`` for a JSON-like value, a dict and None answered
    without the ABC's check (slow next to the rest of a walk over a document: the
    guard's, a path's values, folding an entry)."""
    return type(value) is dict or (value is not None and isinstance(value, Mapping))
