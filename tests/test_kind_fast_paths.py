"""The walks over JSON-like values answer a dict, a list and a scalar first, by its exact
type, and only then ask ``isinstance(value, Mapping)`` (an ABC check, slow next to the
rest of a walk). Every such walk gives the same answer for a value built of other
mappings and of tuples (a read-only mapping, a mapping proxy, a Mapping of its own) as
for the same value built of dicts and lists: the fast way and the general way agree.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from decimal import Decimal
from types import MappingProxyType
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from credit.canonical import is_mapping
from credit.cases import _values
from credit.governance import governor as seam
from credit.governance.guard import FairLendingGuard
from credit.kept import ReadOnlyDict
from credit.lifecycle import recorded_reasons
from credit.tools import jsonable


class _Mapping(Mapping[str, Any]):
    """A Mapping that is no dict."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


WRAPPERS = (ReadOnlyDict, MappingProxyType, _Mapping)

texts = st.sampled_from(
    ["", "plain", "the applicant is married", "age 19", ' {"sex": "F"}', "[1, 2]", "late30"]
)
leaves = st.one_of(
    texts,
    st.none(),
    st.booleans(),
    st.integers(),
    st.decimals(allow_nan=False, allow_infinity=False, places=2),
    st.floats(allow_nan=False, allow_infinity=False),
)
keys = st.sampled_from(["kind", "note", "sex", "items", "maritalStatus", "x"])
values = st.recursive(
    leaves,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4)),
    max_leaves=20,
)


def general(value: Any, wrap: int) -> Any:
    """The same value with each dict another kind of Mapping and each list a tuple."""
    if type(value) is dict:
        return WRAPPERS[wrap]({k: general(v, wrap) for k, v in value.items()})
    if type(value) is list:
        return tuple(general(v, wrap) for v in value)
    return value


def plain(value: Any) -> Any:
    """A walk's output with its tuples as lists and its mappings as dicts (to compare)."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


@settings(max_examples=300, deadline=None)
@given(values, st.integers(0, len(WRAPPERS) - 1))
def test_every_walk_answers_other_mappings_and_tuples_as_it_answers_dicts_and_lists(
    value: Any, wrap: int
) -> None:
    other = general(value, wrap)
    assert jsonable(other) == jsonable(value)
    assert seam._may_hold_json(other) == seam._may_hold_json(value)
    guard = FairLendingGuard()
    fast, general_way = guard.redact(value), guard.redact(other)
    assert plain(general_way.value) == plain(fast.value)
    assert general_way.redactions == fast.redactions
    assert guard.find_prohibited_keys(other) == guard.find_prohibited_keys(value)
    for path in (("items",), ("items", "note"), ("note",), ("x", "kind")):
        found = [(at, plain(v)) for at, v in _values(other, path)]
        assert found == _values(value, path)


def test_a_scalar_is_never_a_mapping_and_every_mapping_is_one() -> None:
    for scalar in (None, 0, 1, True, Decimal("1.5"), 2.5, "text", b"x", (), []):
        assert not is_mapping(scalar)
    for mapping in ({}, ReadOnlyDict(a=1), MappingProxyType({}), _Mapping({})):
        assert is_mapping(mapping)


def test_recorded_reasons_read_from_any_mapping() -> None:
    reasons = [{"code": "R1", "values": {"dti": "45%"}}, {"code": "R2"}]
    want = (("R1", {"dti": "45%"}), ("R2", {}))
    assert recorded_reasons({"reasons": reasons}) == want
    for wrap in WRAPPERS:
        wrapped = [wrap(dict(r)) for r in reasons]
        assert recorded_reasons({"reasons": wrapped}) == want
    assert recorded_reasons({"reasons": ["not a reason", None, 3]}) == ()
