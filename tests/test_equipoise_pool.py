"""The comparison pool's query: the more favourable decisions on a weaker file in
another group, found through the pool's rank index a factor at a time, are exactly what
the whole-table comparison finds, for any rows, drops and query; also after the pool is
kept in a mark and read back."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from hypothesis import given, settings
from hypothesis import strategies as st

from credit.governance.equipoise import ComparisonPool, Equipoise, _Product
from credit.journal import InMemoryStore

FACTORS = 3
ATTRIBUTES = 2
STRENGTHS = st.sampled_from([-np.inf, -2.0, -1.0, 0.0, 0.5, 1.0, 2.0, np.inf])
ROW = st.tuples(
    st.integers(0, 3),  # rank
    st.lists(STRENGTHS, min_size=FACTORS, max_size=FACTORS),
    st.lists(st.integers(-1, 2), min_size=ATTRIBUTES, max_size=ATTRIBUTES),  # -1: not provided
    st.booleans(),  # dropped later
)
QUERY = st.tuples(
    st.integers(0, 40),  # seq
    st.integers(0, 3),  # rank
    st.lists(STRENGTHS, min_size=FACTORS, max_size=FACTORS),
    st.lists(st.integers(-1, 2), min_size=ATTRIBUTES, max_size=ATTRIBUTES),
    st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=FACTORS, max_size=FACTORS),
)


def whole_table(
    block: _Product,
    seq: int,
    rank: int,
    strength: list[float],
    groups: list[int],
    tolerances: list[float],
) -> tuple[list[str], npt.NDArray[np.bool_]]:
    """A deliberate second implementation, to check the pool's: every row on every
    factor at once (what the pool did before it had a rank index)."""
    n = block.size
    if not n:
        return [], np.zeros(0, dtype=bool)
    ok = (block.seq[:n] < seq) & (block.rank[:n] > rank)
    limit = np.array(strength, dtype=np.float64) + np.array(tolerances, dtype=np.float64)
    ok &= np.all(block.strength[:n] <= limit, axis=1)
    mine = np.array(groups, dtype=np.int64)
    others = block.groups[:n]
    differs = (others >= 0) & (mine >= 0) & (others != mine)
    ok &= np.any(differs, axis=1)
    found = np.flatnonzero(ok)
    return [block.case_ids[i] for i in found], differs[found]


def _pool(rows: list[tuple[int, list[float], list[int], bool]]) -> ComparisonPool:
    pool = ComparisonPool(Equipoise(InMemoryStore()))
    block = _Product()
    for i, (rank, strength, groups, _) in enumerate(rows):
        block.append(f"C-{i:03d}", 2 * i + 1, rank, strength, groups)
    for i, (*_, dropped) in enumerate(rows):
        if dropped:
            block.drop(i)
    pool._products["auto"] = block
    return pool


def _same(pool: ComparisonPool, query: tuple[Any, ...]) -> None:
    seq, rank, strength, groups, tolerances = query
    found, differs = pool.more_favourable_weaker("auto", seq, rank, strength, groups, tolerances)
    want, want_differs = whole_table(
        pool._products["auto"], seq, rank, strength, groups, tolerances
    )
    assert found == want
    assert differs.shape == want_differs.shape
    assert (differs == want_differs).all()


@settings(max_examples=300, deadline=None)
@given(st.lists(ROW, max_size=20), st.lists(QUERY, min_size=1, max_size=5))
def test_the_pool_finds_what_the_whole_table_comparison_finds(
    rows: list[tuple[int, list[float], list[int], bool]], queries: list[tuple[Any, ...]]
) -> None:
    pool = _pool(rows)
    for query in queries:
        _same(pool, query)


@settings(max_examples=100, deadline=None)
@given(st.lists(ROW, min_size=1, max_size=20), st.lists(QUERY, min_size=1, max_size=3))
def test_a_pool_kept_in_a_mark_and_read_back_finds_the_same(
    rows: list[tuple[int, list[float], list[int], bool]], queries: list[tuple[Any, ...]]
) -> None:
    pool = _pool(rows)
    kept = _Product.from_wire(pool._products["auto"].to_wire(), FACTORS, ATTRIBUTES)
    # the rank index is rebuilt from the ranks: a dropped row is in none
    assert sorted(kept.by_rank) == sorted({r for r, _, _, dropped in rows if not dropped})
    pool._products["auto"] = kept
    for query in queries:
        _same(pool, query)
    kept.append("C-new", 999, 3, [np.inf] * FACTORS, [0] * ATTRIBUTES)  # it still grows
    _same(pool, (1000, 0, [np.inf] * FACTORS, [1] * ATTRIBUTES, [0.0] * FACTORS))


def test_the_most_favourable_outcome_reads_no_row() -> None:
    """A decision with no more favourable outcome above it has nothing to compare with:
    the pool answers from its index, whatever the rows hold."""
    pool = _pool([(3, [0.0] * FACTORS, [0, 0], False)] * 5 + [(1, [9.0] * FACTORS, [1, 1], False)])
    block = pool._products["auto"]
    assert sorted(block.by_rank) == [1, 3]
    found, differs = pool.more_favourable_weaker(
        "auto", 99, 3, [np.inf] * FACTORS, [1, 1], [0.0] * FACTORS
    )
    assert found == [] and differs.shape == (0, ATTRIBUTES)
    found, _ = pool.more_favourable_weaker("auto", 99, 1, [1.0] * FACTORS, [1, 1], [0.0] * 3)
    assert found == [f"C-{i:03d}" for i in range(5)]  # in the order they were added
