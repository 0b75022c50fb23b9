"""Canonical JSON: the fast encoders write exactly the reference encoder's text.

orjson writes a value where its text is json's (checked by reading it back); else the
standard library's C encoder runs with each Decimal as a placeholder and puts the exact
digits back; the reference encoder walks the value itself (a deliberate second
implementation, kept only to check the others and to write what they cannot). Over all
JSON-shaped values with Decimals, dates, tuples and strings of any characters (NULs and
the nonce itself included), and values orjson writes its own way (floats, enums, UUIDs,
its fragments), each gives the same text or refuses alike."""

from __future__ import annotations

import datetime as dt
import enum
import math
import types
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import in_threads
from credit import canonical
from credit.canonical import (
    canonical_bytes,
    dumps,
    loads,
    normal_form,
    read_back,
    reference_dumps,
)

decimals = st.decimals(allow_nan=False, allow_infinity=False)
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
    | decimals
    | st.dates()
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=30,
)


@settings(max_examples=600)
@given(values, st.booleans())
def test_the_fast_encoder_writes_exactly_what_the_reference_writes(
    value: Any, sort_keys: bool
) -> None:
    assert dumps(value, sort_keys=sort_keys) == reference_dumps(value, sort_keys=sort_keys)


@given(st.dictionaries(st.text(max_size=8), decimals, max_size=6))
def test_a_decimal_reads_back_with_the_digits_it_was_written_with(value: Any) -> None:
    again = loads(dumps(value))
    for key, number in value.items():
        assert format(Decimal(str(again[key])), "f") == format(number, "f")


def test_money_keeps_its_trailing_zeros_and_never_takes_an_exponent() -> None:
    assert dumps({"amount": Decimal("28000.00"), "tiny": Decimal("0E-7")}) == (
        '{"amount":28000.00,"tiny":0.0000000}'
    )
    assert canonical_bytes({"b": Decimal("1.5"), "a": 1}) == b'{"a":1,"b":1.5}'


def test_a_string_that_spells_a_placeholder_is_written_as_the_string_it_is() -> None:
    nonce = canonical._NONCE
    forged = f"\x00{nonce}:0\x00"
    for value in (
        [forged, Decimal("1.25")],  # a placeholder's twin beside a real Decimal
        {forged: Decimal("7")},  # as a key
        [forged],  # with no Decimal at all
        [f"x{forged}", Decimal("2")],
        [Decimal("3"), f"\x00{nonce}:1\x00"],  # the next index, after a real one
        [f"\x00{nonce}:1\x00", Decimal("3"), Decimal("4")],  # an index out of order
        {"b": Decimal("5"), forged: "a"},  # a key that sorts before the real one
        [Decimal("6"), f"{nonce}"],  # the nonce alone
    ):
        assert dumps(value) == reference_dumps(value)
        assert loads(dumps(value)) == loads(reference_dumps(value))


@settings(max_examples=100)
@given(values, st.booleans())
def test_without_json_s_c_accelerator_the_fast_path_writes_the_same(
    value: Any, sort_keys: bool
) -> None:
    """An interpreter whose json has no C encoder takes JSONEncoder's own path."""
    expected = reference_dumps(value, sort_keys=sort_keys)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(canonical, "c_make_encoder", None)
        assert dumps(value, sort_keys=sort_keys) == expected


def test_a_value_that_holds_itself_is_refused() -> None:
    circle: list[Any] = [Decimal("1")]
    circle.append(circle)
    with pytest.raises(ValueError, match="Circular reference"):
        dumps(circle)


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (Decimal("NaN"), ValueError),
        ([Decimal("Infinity")], ValueError),
        (float("nan"), ValueError),
        ({"a": b"bytes"}, TypeError),
        ({"a": object()}, TypeError),
        ({"a": {1j: 1}}, TypeError),
    ],
)
def test_what_json_cannot_carry_is_refused(value: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        dumps(value)
    with pytest.raises(error):
        reference_dumps(value)
    with pytest.raises(error):
        normal_form(value)


class _Colour(enum.Enum):  # written by orjson as its value, refused by json's encoder
    RED = 1


class _Grade(enum.StrEnum):  # a str: both write it as its value
    A = "a"


class _Rank(enum.IntEnum):  # an int: both write it as its number
    FIRST = 1


class _Text(str):
    pass


# What orjson writes otherwise than json's encoder does, or where json's refuses: every
# float (non-finite, inexact, large and tiny exact ones), enums, UUIDs, orjson's own
# fragments, a time, a Decimal negative zero, subclasses, read-only mappings.
_orjson_own = st.one_of(
    st.floats(),
    st.integers(-(2**60), 2**60).map(float),
    st.integers(-1074, 1023).map(lambda e: math.ldexp(1, e)),
    st.sampled_from(
        [
            _Colour.RED,
            _Grade.A,
            _Rank.FIRST,
            uuid.UUID(int=7),
            orjson.Fragment(b"[1]"),
            dt.time(9, 30),
            dt.datetime(2026, 12, 1, 9, 30, tzinfo=dt.UTC),
            Decimal("-0"),
            Decimal("-0E+2"),
            Decimal("1E+2"),
            _Text("t"),
            True,
        ]
    ),
)
# Keys whose order by code point differs from their order by UTF-16 code unit (an
# astral character against one from U+E000 up), and strings orjson cannot write (a lone
# surrogate): the normal form's text must still be the reference encoder's.
_ORDERED = st.sampled_from(
    ["a", "Z", "\x00", "\xe9", "\ue000", "\uffff", "\U00010000", "\U0001f600"]
)
_keys = st.text(_ORDERED, max_size=4) | st.text(max_size=8)
_strings = st.text() | st.text(max_size=4).map(lambda t: t + "\ud800")
_loose = st.recursive(
    scalars | _strings | _orjson_own,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(_keys, inner, max_size=5)
        | st.dictionaries(st.text(max_size=4), inner, max_size=3).map(types.MappingProxyType)
    ),
    max_leaves=30,
)


def _as_reference(
    reference: Callable[[], Any], ours: Callable[[Any], Any], value: Any
) -> tuple[Any, Any] | None:
    """(what the reference gives, what ours gives for ``value``); None when the
    reference refuses the value and ours refuses it with the same kind of error."""
    try:
        expected = reference()
    except (TypeError, ValueError) as err:
        with pytest.raises(type(err)):
            ours(value)
        return None
    return expected, ours(value)


@settings(max_examples=1500)
@given(_loose)
def test_the_normal_form_is_the_value_as_it_reads_back_and_the_reference_text_of_it(
    value: Any,
) -> None:
    # orjson writes and reads back where it writes json's text: an enum, a UUID, a
    # fragment or a float json writes otherwise (or refuses) never slips through
    both = _as_reference(lambda: loads(reference_dumps(value, sort_keys=True)), normal_form, value)
    if both is None:
        return
    expected, (normal, text) = both
    assert normal == expected
    assert repr(normal) == repr(expected)  # the same types, digits and key order
    assert text == reference_dumps(expected, sort_keys=True)


@settings(max_examples=1500)
@given(_loose, st.booleans())
def test_dumps_writes_the_reference_s_text_or_refuses_alike_whoever_writes_it(
    value: Any, sort_keys: bool
) -> None:
    # dumps takes orjson's text where it is json's: a float (exact ones too, which
    # orjson writes in a notation of its own), an enum, a UUID or a fragment never
    # slips through
    both = _as_reference(
        lambda: reference_dumps(value, sort_keys=sort_keys),
        lambda v: dumps(v, sort_keys=sort_keys),
        value,
    )
    if both is not None:
        assert both[1] == both[0]


@settings(max_examples=1000)
@given(_loose, st.booleans())
def test_a_value_read_back_is_its_reference_text_read_again_or_refused_alike(
    value: Any, sort_keys: bool
) -> None:
    # the commit seam's decision and replay's comparison form: what loads of the
    # reference text gives (the same types, digits and key order), read only once
    both = _as_reference(
        lambda: loads(reference_dumps(value, sort_keys=sort_keys)),
        lambda v: read_back(v, sort_keys=sort_keys),
        value,
    )
    if both is not None:
        assert repr(both[1]) == repr(both[0])


def test_an_exact_float_orjson_writes_in_its_own_notation_is_written_as_json_writes_it() -> None:
    # each reads back as the float it is, so only the count of numbers with a fraction
    # tells it from a Decimal
    for value, text in [
        (1.33514404296875e-05, "1.33514404296875e-05"),  # orjson: 0.0000133514404296875
        (math.ldexp(1, -20), "9.5367431640625e-07"),  # orjson: 9.5367431640625e-7
    ]:
        assert orjson.dumps(value).decode() != text
        assert dumps({"x": [Decimal("1.5"), value]}) == f'{{"x":[1.5,{text}]}}'


def test_threads_writing_at_once_each_get_their_own_value_s_text() -> None:
    # what dumps notes of the numbers it wrote and read back is each thread's own: a
    # float on one thread never passes for another's Decimal, nor the other way round
    values = [
        {"apr": Decimal("6.49"), "n": [1.5, "x"]},
        {"apr": 1.33514404296875e-05, "n": [Decimal("2.50"), None]},
        {"apr": Decimal("0.10"), "n": [Decimal("7.1")]},
    ]
    texts = [reference_dumps(value, sort_keys=True) for value in values]

    def step(seed: int, i: int) -> None:
        at = (seed + i) % len(values)
        text = dumps(values[at], sort_keys=True)
        if text != texts[at]:
            raise AssertionError(f"{text} for {texts[at]}")

    assert in_threads(step) == []


def test_the_normal_form_s_text_is_written_by_orjson_not_json_s_encoder_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A journal payload of dicts, lists, strings, numbers and Decimals: read back from
    # orjson's text and written by orjson, never by json's encoder. One with a date (which
    # orjson is not asked to write): once through json's encoder to read it back, then
    # orjson; only what orjson cannot write (an int beyond 64 bits) goes through json's
    # again.
    calls: list[Any] = []
    real = canonical._json_text

    def counted(value: Any, sort_keys: bool) -> str:
        calls.append(value)
        return real(value, sort_keys)

    monkeypatch.setattr(canonical, "_json_text", counted)
    plain = {"decision": {"apr": Decimal("6.49"), "terms": ["a", True]}, "n": [1, None]}
    assert normal_form(plain)[1] == '{"decision":{"apr":6.49,"terms":["a",true]},"n":[1,null]}'
    assert calls == []
    payload = {"decision": {"apr": Decimal("6.49"), "asOf": dt.date(2026, 12, 5)}, "n": [1, None]}
    assert normal_form(payload)[1] == ('{"decision":{"apr":6.49,"asOf":"2026-12-05"},"n":[1,null]}')
    assert len(calls) == 1
    assert normal_form({"big": 2**64})[1] == '{"big":18446744073709551616}'
    assert len(calls) == 3


def test_the_normal_form_keeps_orjson_s_first_text_unless_a_decimal_was_written_as_minus_zero(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # orjson's text of the value is kept as the normal form's text: it is the text of
    # what it reads back as. Not where a Decimal was written as -0: that reads back as
    # the int 0, whose text is 0, so the value read back is written again.
    writes: list[Any] = []
    real = canonical.orjson.dumps

    def counted(value: Any, **options: Any) -> bytes:
        writes.append(value)
        return real(value, **options)

    monkeypatch.setattr(canonical.orjson, "dumps", counted)
    assert normal_form({"apr": Decimal("6.49"), "fee": Decimal("-0.00"), "n": 5}) == (
        {"apr": Decimal("6.49"), "fee": Decimal("-0.00"), "n": 5},
        '{"apr":6.49,"fee":-0.00,"n":5}',
    )
    assert len(writes) == 1  # written once: -0.00 reads back as itself
    writes.clear()
    normal, text = normal_form({"fee": Decimal("-0"), "n": Decimal("5")})
    assert (normal, text) == ({"fee": 0, "n": 5}, '{"fee":0,"n":5}')
    assert repr(normal) == "{'fee': 0, 'n': 5}"
    assert len(writes) == 2  # orjson's first text said -0: the value read back written again
    writes.clear()
    assert normal_form({"n": Decimal("-0E+2")})[1] == '{"n":0}'  # -0 by another spelling
    assert normal_form({"n": Decimal("7")}) == ({"n": 7}, '{"n":7}')  # a next value: no -0


def test_dates_are_iso_strings_on_both_paths() -> None:
    when = {"asOf": dt.date(2026, 11, 30), "at": dt.datetime(2026, 12, 1, 9, 30)}
    assert (
        dumps(when) == reference_dumps(when) == ('{"asOf":"2026-11-30","at":"2026-12-01T09:30:00"}')
    )


NOTICE_LIKE = st.text(alphabet=[chr(c) for c in range(0x20, 0x7F)] + ["\n"], max_size=400)


@settings(max_examples=600)
@given(st.one_of(NOTICE_LIKE, st.text(), NOTICE_LIKE.map(lambda t: t + "\x00")))
def test_a_string_is_written_as_json_writes_it_whatever_its_characters(value: str) -> None:
    import json

    assert dumps(value) == json.dumps(value, ensure_ascii=False)


def _as_json_reads(data: str | bytes) -> tuple[str, Any]:
    import json

    try:
        return "ok", json.loads(
            data, parse_float=Decimal, parse_constant=canonical._reject_constant
        )
    except (ValueError, TypeError) as err:
        return type(err).__name__, str(err)


def _as_loads_reads(data: str | bytes) -> tuple[str, Any]:
    try:
        return "ok", loads(data)
    except (ValueError, TypeError) as err:
        return type(err).__name__, str(err)


JSON_TEXTS = st.one_of(
    values.map(lambda v: reference_dumps(v, sort_keys=True)),
    st.text(),
    st.sampled_from(["NaN", "[Infinity]", "\ufeff{}", '{"a": 1e-7}', "[1.50, 2]", "{", ""]),
)


@settings(max_examples=400)
@given(JSON_TEXTS, st.sampled_from(["str", "utf-8", "utf-16", "utf-32-le", "bytearray"]))
def test_loads_reads_text_and_bytes_as_json_loads_does_with_its_options(
    text: str, form: str
) -> None:
    """loads keeps one decoder instead of json.loads building one per call: the same
    value, or the same error, for text, for bytes in any encoding JSON allows and
    for a byte-order mark."""
    try:
        data: str | bytes = (
            text
            if form == "str"
            else bytearray(text.encode("utf-8"))
            if form == "bytearray"
            else text.encode(form)
        )
    except UnicodeEncodeError:  # a lone surrogate has no bytes
        data = text
    assert _as_loads_reads(data) == _as_json_reads(data)


def test_loads_refuses_what_is_not_text_or_bytes() -> None:
    with pytest.raises(TypeError, match="must be str or bytes, not int"):
        loads(3)  # type: ignore[arg-type]
