"""The fast path is the slow path: an entry's body and wire form framed around its
payload's canonical JSON are byte for byte the canonical JSON of the whole, for any
entry; so the hash and leaf the store computes once (its framing fed to SHA-256 in
parts, and recomputed so from the row as stored) are the ones the verify walk
recomputes from scratch."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from credit.canonical import canonical_bytes, dumps
from credit.journal.audit import entry_leaf
from credit.journal.base import body_hash, entry_hash, framed, placed_entry

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.decimals(allow_nan=False, allow_infinity=False, places=2)
    | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=12,
)


@given(
    seq=st.integers(min_value=1, max_value=2**40),
    case_id=st.none() | st.text(min_size=1),
    kind=st.text(min_size=1),
    payload=st.dictionaries(st.text(), JSON, max_size=4),
    prev=st.text(alphabet="0123456789abcdef", min_size=64, max_size=64),
    at=st.text(),
)
def test_a_framed_entry_is_its_canonical_json_and_hashes_as_the_walk_does(
    seq: int,
    case_id: str | None,
    kind: str,
    payload: dict[str, object],
    prev: str,
    at: str,
) -> None:
    entry, leaf = placed_entry(seq, case_id, kind, payload, prev, at)
    text = dumps(payload, sort_keys=True)
    assert framed(seq, case_id, kind, text, prev, at) == canonical_bytes(entry.body())
    assert framed(seq, case_id, kind, text, prev, at, entry.hash) == canonical_bytes(
        entry.to_wire()
    )
    assert entry.hash == entry_hash(prev, entry.body())
    assert entry.leaf_hash() == entry_leaf(entry.to_wire())
    # the leaf a store places with it: from the framing hashed in parts
    assert leaf == entry.leaf_hash()
    # and as a read checks a stored row: from its columns, the payload as stored
    assert body_hash(seq, case_id, kind, text, prev, at) == entry.hash


def test_a_decimal_payload_keeps_its_digits_in_the_frame() -> None:
    entry, _ = placed_entry(3, "C-1", "k", {"amount": Decimal("30100.00")}, "0" * 64, "t")
    assert b'"payload":{"amount":30100.00}' in framed(
        3, "C-1", "k", dumps(entry.payload, sort_keys=True), "0" * 64, "t"
    )
