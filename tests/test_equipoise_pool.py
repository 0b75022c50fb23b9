"""The comparison pool's query: the more favourable decisions on a weaker file in
another group, found through the pool's rank index (its sorted runs searched, then a
factor at a time), are exactly what the whole-table comparison finds, for any rows,
runs, drops and query; also after the pool is kept in a mark and read back. And a
review reads only what its file could be compared with, not every decision recorded."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from hypothesis import given, settings
from hypothesis import strategies as st

from credit.governance.equipoise import ComparisonPool, Equipoise, _Product, _Run
from credit.journal import InMemoryStore

FACTORS = 3
ATTRIBUTES = 2
# -0.0 equals 0.0 and NaN is within no limit (and sorts last): a sorted run must agree
STRENGTHS = st.sampled_from([-np.inf, -2.0, -1.0, -0.0, 0.0, 0.5, 1.0, 2.0, np.inf, np.nan])
RUN_SIZES = st.integers(1, 8)  # the rows a rank keeps unsorted: small, so runs merge
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


def _pool(
    rows: list[tuple[int, list[float], list[int], bool]], run_size: int = 4
) -> ComparisonPool:
    pool = ComparisonPool(Equipoise(InMemoryStore()))
    block = _Product(run_size=run_size)
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
@given(st.lists(ROW, max_size=40), st.lists(QUERY, min_size=1, max_size=5), RUN_SIZES)
def test_the_pool_finds_what_the_whole_table_comparison_finds(
    rows: list[tuple[int, list[float], list[int], bool]],
    queries: list[tuple[Any, ...]],
    run_size: int,
) -> None:
    pool = _pool(rows, run_size)
    for query in queries:
        _same(pool, query)


@settings(max_examples=100, deadline=None)
@given(st.lists(ROW, min_size=1, max_size=40), st.lists(QUERY, min_size=1, max_size=3), RUN_SIZES)
def test_a_pool_kept_in_a_mark_and_read_back_finds_the_same(
    rows: list[tuple[int, list[float], list[int], bool]],
    queries: list[tuple[Any, ...]],
    run_size: int,
) -> None:
    pool = _pool(rows, run_size)
    wire = pool._products["auto"].to_wire()
    kept = _Product.from_wire(wire, FACTORS, ATTRIBUTES, run_size)
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


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(STRENGTHS, min_size=FACTORS, max_size=FACTORS), min_size=1, max_size=30),
    st.lists(STRENGTHS, min_size=FACTORS, max_size=FACTORS),
)
def test_a_sorted_run_admits_every_row_within_the_limit_and_only_a_prefix(
    strengths: list[list[float]], limit: list[float]
) -> None:
    """A run hands back a prefix of one factor's order, and every row within the limit on
    every factor is in it (the rest the review compares and leaves)."""
    table = np.array(strengths, dtype=np.float64)
    rows = np.arange(len(strengths), dtype=np.int64)
    run = _Run.of(rows, table)
    admitted = set(run.admitted(limit).tolist())
    within = {i for i in range(len(strengths)) if all(table[i] <= np.array(limit))}
    assert within <= admitted
    # the shortest prefix: no factor's limit admits fewer rows
    shortest = min(int(np.sum(table[:, f] <= limit[f])) for f in range(FACTORS))
    assert len(admitted) == shortest


def test_a_review_of_a_weak_file_reads_none_of_a_large_pool_of_strong_ones() -> None:
    """10,000 approvals on files stronger than a declined one: the decline's review finds
    none of them, and its index hands over none to compare (a review's cost follows the
    rows its file could be compared with, not the size of the pool)."""
    block = _Product(run_size=64)
    block.append("W-00000", 1, 3, [0.5, 5.0, 5.0], [0, 0])  # weaker on one factor only
    rng = np.random.default_rng(7)
    for i in range(1, 10_001):
        block.append(f"A-{i:05d}", i + 1, 3, (rng.random(FACTORS) + 1.0).tolist(), [0, 0])
    pool = ComparisonPool(Equipoise(InMemoryStore()))
    pool._products["auto"] = block
    weak = [0.9, 0.9, 0.9]
    index = block.by_rank[3]
    assert len(index.runs) <= 9  # log2(10,001 / 64) + 1 sorted runs, not 10,001 rows
    # none of the sorted runs' rows; only the latest few, not yet sorted, are compared
    assert sum(len(part) for part in index.admitted(weak)) == index.latest.size < 64
    found, _ = pool.more_favourable_weaker("auto", 20_000, 0, weak, [1, 1], [0.0] * FACTORS)
    assert found == []
    # on the other side of the edge: a file no stronger than one approval finds it alone
    found, _ = pool.more_favourable_weaker(
        "auto", 20_000, 0, [0.5, 5.0, 5.0], [1, 1], [0.0] * FACTORS
    )
    assert found == ["W-00000"]
    # its run hands over that one row (the first factor's prefix), with the latest few
    assert sum(len(part) for part in index.admitted([0.5, 5.0, 5.0])) == 1 + index.latest.size
