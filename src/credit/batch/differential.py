"""The columnar underwriter checked against the scalar one, row by row.

:func:`differences` names the first rows where two decision frames differ;
:func:`compare_slice` decides a slice of a Parquet case file both ways and reports
the differences, for process pools (``make bench`` compares a million cases in
chunks on every core; ``tests/test_batch_differential.py`` fifty thousand).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from credit.batch.engine import decide_frame, scalar_decide_frame
from credit.policy import default_policy, load_policy

__all__ = ["compare_slice", "differences"]


def differences(got: pl.DataFrame, want: pl.DataFrame, limit: int = 5) -> list[str]:
    """The first ``limit`` rows where two decision frames differ, column by column
    (``caseId: {column: (got, want)}``); empty when they are equal."""
    if got.columns != want.columns or got.height != want.height:
        return [f"shapes differ: {got.shape} {got.columns} vs {want.shape} {want.columns}"]
    if got.equals(want):
        return []
    out = []
    for a, b in zip(got.iter_rows(named=True), want.iter_rows(named=True), strict=True):
        if a != b:
            diff = {k: (a[k], b[k]) for k in a if a[k] != b[k]}
            out.append(f"{a['caseId']}: {diff}")
            if len(out) == limit:
                break
    return out


def compare_slice(
    path: str, start: int, count: int, policy_path: str | None = None
) -> tuple[int, int, list[str]]:
    """Decide rows ``[start, start + count)`` of a Parquet case file with both
    underwriters: (rows compared, rows that differ, the first few differences)."""
    policy = load_policy(Path(policy_path)) if policy_path else default_policy()
    frame = pl.read_parquet(path).slice(start, count)
    columnar = decide_frame(frame, policy)
    scalar = scalar_decide_frame(frame, policy)
    if columnar.equals(scalar):
        return frame.height, 0, []
    bad = sum(
        a != b
        for a, b in zip(columnar.iter_rows(named=True), scalar.iter_rows(named=True), strict=True)
    )
    return frame.height, bad, differences(columnar, scalar)
