"""Exactly once, and one chain, under concurrency: threads and separate processes.

Every racer waits at a barrier, then all go at once. Processes come from a forkserver
(started once, with the journal preloaded) and each opens its own store, as a separate
worker would.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from credit.journal import (
    DECISION_KIND,
    DecisionAlreadyRecordedError,
    open_store,
)
from test_journal_store import pg_schema

RACERS = 20
THREADS = 24
APPEND_WORKERS = 5
APPENDS_EACH = 12
TIMEOUT_S = 60

_context = multiprocessing.get_context("forkserver")
# The forkserver imports these once; each child then only imports this module. (pytest:
# a child re-runs the ``pytest`` entry script; the drivers: SQLAlchemy loads them lazily.)
_context.set_forkserver_preload(
    [
        "pytest",
        "credit.journal",
        "sqlalchemy.dialects.sqlite.pysqlite",
        "sqlalchemy.dialects.postgresql.psycopg",
    ]
)


# ------------------------------------------------------------------ workers (in children)


def _record(url: str, schema: str | None, case_id: str, barrier: Any, results: Any) -> None:
    try:
        with open_store(url, schema=schema) as store:
            barrier.wait(TIMEOUT_S)
            try:
                entry = store.record_decision(case_id, {"decision": "approve", "pid": os.getpid()})
                results.put(("recorded", entry.seq))
            except DecisionAlreadyRecordedError as e:
                results.put(("refused", str(e)))
    except BaseException as e:
        results.put(("error", repr(e)))


def _append(url: str, schema: str | None, worker: int, barrier: Any, results: Any) -> None:
    try:
        with open_store(url, schema=schema) as store:
            barrier.wait(TIMEOUT_S)
            seqs = [
                store.append(f"W-{worker}", "step.done", {"worker": worker, "i": i}).seq
                for i in range(APPENDS_EACH)
            ]
            results.put(("appended", seqs))
    except BaseException as e:
        results.put(("error", repr(e)))


def _race(target: Callable[..., None], argsets: list[tuple[Any, ...]]) -> list[tuple[str, Any]]:
    """Run ``target(*args, barrier, results)`` in one process per argset, all at once."""
    barrier = _context.Barrier(len(argsets))
    results = _context.Queue()
    processes = [_context.Process(target=target, args=(*a, barrier, results)) for a in argsets]
    try:
        for process in processes:
            process.start()
        outcomes = [results.get(timeout=TIMEOUT_S) for _ in processes]
        for process in processes:
            process.join(TIMEOUT_S)
            assert process.exitcode == 0
        return outcomes
    finally:
        for process in processes:
            if process.is_alive():
                process.kill()
                process.join()
            process.close()
        results.close()
        results.join_thread()


# ------------------------------------------------------------------ backends


@pytest.fixture(params=("sqlite", "postgresql"))
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str | None]]:
    """(url, schema) of a journal nobody has opened yet."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'journal.db'}", None
    else:
        with pg_schema() as location:
            yield location


def _assert_one_decision(url: str, schema: str | None, case_id: str, before: int) -> None:
    with open_store(url, schema=schema) as store:
        decisions = store.entries(kinds=[DECISION_KIND])
        assert [e.case_id for e in decisions] == [case_id]
        assert store.decision_entry(case_id) == decisions[0]
        assert len(store.entries()) == before + 1
        report = store.verify()
        assert (report.ok, report.entries) == (True, before + 1)


# ------------------------------------------------------------------ the tests


def test_of_twenty_processes_racing_to_record_one_decision_exactly_one_wins(
    where: tuple[str, str | None],
) -> None:
    url, schema = where
    with open_store(url, schema=schema) as store:
        store.append("C-1", "intake.accepted", {})
    outcomes = _race(_record, [(url, schema, "C-1")] * RACERS)
    kinds = Counter(kind for kind, _ in outcomes)
    assert kinds == {"recorded": 1, "refused": RACERS - 1}, outcomes
    [seq] = [value for kind, value in outcomes if kind == "recorded"]
    assert seq == 2
    assert {value for kind, value in outcomes if kind == "refused"} == {
        "case C-1: a decision is already recorded (entry 2)"
    }
    _assert_one_decision(url, schema, "C-1", before=1)


def test_of_two_dozen_threads_racing_to_record_one_decision_exactly_one_wins(
    where: tuple[str, str | None],
) -> None:
    url, schema = where
    barrier = threading.Barrier(THREADS)
    outcomes: list[str] = []
    lock = threading.Lock()

    with open_store(url, schema=schema) as store:
        store.append("C-1", "intake.accepted", {})

        def attempt(n: int) -> None:
            barrier.wait(TIMEOUT_S)
            try:
                store.record_decision("C-1", {"decision": "approve", "thread": n})
                outcome = "recorded"
            except DecisionAlreadyRecordedError:
                outcome = "refused"
            with lock:
                outcomes.append(outcome)

        threads = [threading.Thread(target=attempt, args=(n,)) for n in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(TIMEOUT_S)
    assert Counter(outcomes) == {"recorded": 1, "refused": THREADS - 1}
    _assert_one_decision(url, schema, "C-1", before=1)


def test_processes_appending_at_once_to_a_new_journal_never_fork_the_chain(
    where: tuple[str, str | None],
) -> None:
    url, schema = where
    outcomes = _race(_append, [(url, schema, w) for w in range(APPEND_WORKERS)])
    assert all(kind == "appended" for kind, _ in outcomes), outcomes
    total = APPEND_WORKERS * APPENDS_EACH
    seqs = sorted(seq for _, worker_seqs in outcomes for seq in worker_seqs)
    assert seqs == list(range(1, total + 1))
    with open_store(url, schema=schema) as store:
        entries = store.entries()
        report = store.verify()
        for worker in range(APPEND_WORKERS):
            mine = store.entries(case_id=f"W-{worker}")
            assert [e.payload["i"] for e in mine] == list(range(APPENDS_EACH))
    assert (report.ok, report.entries, report.head) == (True, total, entries[-1].hash)
    assert len({e.prev_hash for e in entries}) == total  # no two entries share a parent
