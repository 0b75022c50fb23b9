"""Claims (the service's exactly-once guard across workers), on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from credit.service.claims import MemoryClaims, SqlClaims
from credit.service.keys import SqlKeyStore
from credit.service.tables import ServiceDb
from service_support import BACKENDS, CHEAP_SCRYPT_N, database


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


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_claim_commits_without_waiting_for_the_disk_and_every_other_write_still_does(
    backend: str, tmp_path: Path
) -> None:
    # A claim need outlive a crash only with the decide it claimed, whose synced commit
    # comes after it on the same log: its own commit does not sync. A key created or
    # revoked on the same connections, after a claim, still commits synced.
    with database(backend, tmp_path) as (url, schema), ServiceDb(url, schema=schema) as db:
        claims, keys = SqlClaims(db), SqlKeyStore(db, scrypt_n=CHEAP_SCRYPT_N)
        commits: list[str] = []

        def level_at_commit(conn: Any) -> None:
            raw = conn.connection.driver_connection
            if db.dialect == "sqlite":
                synced = raw.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
            else:
                synced = raw.execute("SHOW synchronous_commit").fetchone()[0] == "on"
            commits.append("synced" if synced else "unsynced")

        event.listen(db.engine, "commit", level_at_commit)
        assert claims.claim("decide:C-1", "a", stale_after_s=300)
        record, _key = keys.create("reviewer", "A. Reviewer")
        assert claims.claim("decide:C-2", "a", stale_after_s=300)
        claims.release("decide:C-2", "a")  # the claimed work failed: given up, synced
        keys.revoke(record.key_id)
        assert not claims.claim("decide:C-1", "b", stale_after_s=300)
        keys.create("auditor", "An Auditor")
        assert commits == [
            "unsynced",
            "synced",
            "unsynced",
            "synced",
            "synced",
            "unsynced",
            "synced",
        ]
