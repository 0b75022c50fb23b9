"""Claims (the service's exactly-once guard across workers), on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from credit.service.claims import MemoryClaims, SqlClaims
from credit.service.tables import ServiceDb
from service_support import BACKENDS, database


@pytest.fixture(params=(*BACKENDS, "memory"))
def claims(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlClaims | MemoryClaims]:
    if request.param == "memory":
        yield MemoryClaims()
        return
    with database(request.param, tmp_path) as (url, schema), ServiceDb(url, schema=schema) as db:
        yield SqlClaims(db)


def test_the_first_claim_wins_and_a_second_holder_is_refused(
    claims: SqlClaims | MemoryClaims,
) -> None:
    assert claims.claim("decide:C-1", "a", stale_after_s=300)
    assert not claims.claim("decide:C-1", "b", stale_after_s=300)
    assert claims.claim("decide:C-2", "b", stale_after_s=300)


def test_a_released_claim_may_be_taken_again_but_only_its_holder_releases_it(
    claims: SqlClaims | MemoryClaims,
) -> None:
    assert claims.claim("gate:C-1", "a", stale_after_s=300)
    claims.release("gate:C-1", "b")  # not b's: nothing happens
    assert not claims.claim("gate:C-1", "c", stale_after_s=300)
    claims.release("gate:C-1", "a")
    assert claims.claim("gate:C-1", "c", stale_after_s=300)


def test_a_stale_claim_is_taken_over(claims: SqlClaims | MemoryClaims) -> None:
    assert claims.claim("send:C-1", "dead-worker", stale_after_s=300)
    assert claims.claim("send:C-1", "b", stale_after_s=0.0)
    assert not claims.claim("send:C-1", "c", stale_after_s=300)


def test_of_many_threads_claiming_at_once_exactly_one_wins(
    claims: SqlClaims | MemoryClaims,
) -> None:
    results: list[bool] = []
    barrier = threading.Barrier(12)

    def attempt(holder: str) -> None:
        barrier.wait()
        results.append(claims.claim("decide:RACE", holder, stale_after_s=300))

    threads = [threading.Thread(target=attempt, args=(f"h{i}",)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [False] * 11 + [True]
