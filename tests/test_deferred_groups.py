"""Deferred group commits (ADR-0002): a group does its work without the journal's
write lock and takes it only to sequence and commit its entries.

A lender runs the main job on several processes, and the service's workers decide at
once, on one journal. Each group's entries are given their places at its commit,
after whatever other writers committed meanwhile, and hashed, MACed and leafed there,
so the chain, the tree and every examiner's check are as a locked group leaves them.
A group whose case another writer moved meanwhile writes nothing and is done again.
These scenarios hold on a SQLite file and on PostgreSQL."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from credit.clock import FixedClock
from credit.journal import DECISION_KIND, GroupConflictError, SqlStore, open_store
from credit.journal.base import JournalError, StaleCaseError
from credit.journal.merkle import MerkleLog
from test_journal_store import pg_schema

BACKENDS = ("sqlite", "postgresql")
NOW = "2026-12-03T09:00:00+00:00"


@contextmanager
def journal(
    backend: str, tmp_path: Path, name: str = "journal"
) -> Iterator[Callable[[], SqlStore]]:
    """A fresh journal; the callable opens another store on it (another writer)."""
    opened: list[SqlStore] = []
    if backend == "sqlite":
        url, schema = f"sqlite:///{tmp_path / name}.db", None
        yield _opener(url, schema, opened)
    else:
        with pg_schema() as (url, pg):
            url, schema = url, pg
            yield _opener(url, schema, opened)
    for store in opened:
        store.close()


def _opener(url: str, schema: str | None, opened: list[SqlStore]) -> Callable[[], SqlStore]:
    def open_one() -> SqlStore:
        store = open_store(url, schema=schema, clock=FixedClock(NOW))
        opened.append(store)
        return store

    return open_one


def work(store: SqlStore, case_id: str, n: int = 3) -> None:
    """What a group does for one case: its document, its vault row, entries and its
    decision."""
    assert store.put_case(case_id, {"caseId": case_id, "amount": "1000.00"})
    assert store.put_monitoring(case_id, {"race": ["Asian"]})
    for i in range(n):
        store.append(case_id, "note.added", {"n": i, "text": f"step {i} of {case_id}"})
    store.record_decision(case_id, {"decision": {"outcome": "approve"}, "caseId": case_id})


def cases_read(store: SqlStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The cases the store reads from the database from now on (not from memory)."""
    read: list[str] = []
    real = store._load_pages

    def load(group: Any, conn: Any, ids: list[str]) -> None:
        read.extend(ids)
        real(group, conn, ids)

    monkeypatch.setattr(store, "_load_pages", load)
    return read


def rows(store: SqlStore) -> list[tuple[Any, ...]]:
    return [
        (e.seq, e.case_id, e.kind, dict(e.payload), e.prev_hash, e.hash, e.mac)
        for e in store.entries()
    ]


def other_writer_appends(open_store_: Callable[[], SqlStore], case_id: str) -> None:
    """Another writer commits one entry, from another thread, and must not wait for the
    open group (a locked group would hold it up to the busy timeout)."""
    other = open_store_()
    done = threading.Event()

    def write() -> None:
        other.append(case_id, "note.added", {"by": "another writer"})
        done.set()

    thread = threading.Thread(target=write)
    thread.start()
    thread.join(timeout=30)
    assert done.is_set(), "another writer waited for a deferred group's work"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_deferred_group_writes_byte_for_byte_what_a_locked_group_writes(
    backend: str, tmp_path: Path
) -> None:
    written = []
    for deferred in (False, True):
        with journal(backend, tmp_path, f"j{deferred}") as open_one:
            store = open_one()
            store.append(None, "journal.opened", {"by": "test"})
            with store.group_commit(["A", "B"], deferred=deferred):
                work(store, "A")
                work(store, "B")
                assert [e.kind for e in store.entries("A")][-1] == DECISION_KIND
            written.append(
                (
                    rows(store),
                    store.leaf_hashes(),
                    store.case_ids(),
                    store.decision_entry("B"),
                    store.get_monitoring("A"),
                )
            )
            assert store.verify().ok
    assert written[0] == written[1]


@pytest.mark.parametrize("backend", BACKENDS)
def test_another_writer_commits_while_a_group_works_and_the_group_lands_after_it(
    backend: str, tmp_path: Path
) -> None:
    with journal(backend, tmp_path) as open_one:
        store = open_one()
        store.append("Z", "note.added", {"first": True})
        with store.group_commit(["A"], deferred=True):
            work(store, "A")
            provisional = store.decision_entry("A")
            assert provisional is not None and provisional.seq == 5  # were the head to stay
            other_writer_appends(open_one, "Z")
            other_writer_appends(open_one, "Y")
        # the group's four entries come after the other writer's two, chained to them
        entries = store.entries()
        assert [e.case_id for e in entries] == ["Z", "Z", "Y", "A", "A", "A", "A"]
        assert [e.seq for e in entries] == list(range(1, 8))
        decided = store.decision_entry("A")
        assert decided is not None and decided.seq == 7 and decided.payload == provisional.payload
        assert decided.hash != provisional.hash  # hashed again at its place
        report = store.verify()
        assert report.ok and report.entries == 7, report
        assert store.authenticate(entries)  # every MAC is over the hash it holds
        assert store.audit().ok
        log = MerkleLog()
        for entry in entries:
            log.append(entry.leaf_hash())
        assert store.leaf_hashes() == [e.leaf_hash() for e in entries]
        assert store.tree_head() == (7, log.root())
        # the case's document was placed after the other writer's cases, at its commit
        assert store.case_ids() == ["A"]
        # a fresh store reads it all back as written
        again = open_one()
        assert rows(again) == rows(store)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_group_whose_case_another_writer_moved_writes_nothing_and_done_again_lands(
    backend: str, tmp_path: Path
) -> None:
    with journal(backend, tmp_path) as open_one:
        store = open_one()
        store.append("A", "note.added", {"before": True})
        with (
            pytest.raises(GroupConflictError) as raised,
            store.group_commit(["A", "B"], deferred=True),
        ):
            store.append("A", "note.added", {"mine": True})
            store.append("B", "note.added", {"mine": True})
            other_writer_appends(open_one, "A")
        assert raised.value.case_ids == ("A",)
        assert raised.value.case_id == "A"
        assert [(e.case_id, dict(e.payload)) for e in store.entries()] == [
            ("A", {"before": True}),
            ("A", {"by": "another writer"}),
        ]
        # done again, the group reads the other writer's entry and lands after it
        with store.group_commit(["A", "B"], deferred=True):
            assert [dict(e.payload) for e in store.entries("A")][-1] == {"by": "another writer"}
            store.append("A", "note.added", {"mine": True}, after=2)
            store.append("B", "note.added", {"mine": True})
        assert [e.seq for e in store.entries()] == [1, 2, 3, 4]
        assert store.verify().ok


@pytest.mark.parametrize("backend", BACKENDS)
def test_another_writer_on_a_case_the_group_only_read_is_no_conflict(
    backend: str, tmp_path: Path
) -> None:
    with journal(backend, tmp_path) as open_one:
        store = open_one()
        store.append("R", "note.added", {"n": 1})
        with store.group_commit(["A", "R"], deferred=True):
            assert len(store.entries("R")) == 1  # read, not written
            store.append("A", "note.added", {"mine": True})
            other_writer_appends(open_one, "R")
        assert [e.case_id for e in store.entries()] == ["R", "R", "A"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_case_first_read_after_another_writer_moved_it_is_written_as_read(
    backend: str, tmp_path: Path
) -> None:
    """The group compares a case with what it read of it, not with the journal when
    the group opened: one read after another writer's entry holds that entry."""
    with journal(backend, tmp_path) as open_one:
        store = open_one()
        store.append("A", "note.added", {"n": 1})
        with store.group_commit(["B"], deferred=True):
            store.append("B", "note.added", {"mine": True})
            other_writer_appends(open_one, "A")
            last = store.last_seq("A")  # read now: it holds the other writer's entry
            assert last == 2
            store.append("A", "note.added", {"mine": True}, after=last)
        assert [e.case_id for e in store.entries()] == ["A", "A", "B", "A"]
        assert store.verify().ok
        # the views handed on hold each case's entries as committed: the other
        # writer's entry 2 and the group's own B entry (2 in the group, 3 now) apart
        committed = open_one()
        with store.group_commit(["A", "B"], deferred=True):
            assert store.entries("A") == committed.entries("A")
            assert store.entries("B") == committed.entries("B")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_deferred_groups_reads_see_its_own_rows_by_case_and_the_committed_across(
    backend: str, tmp_path: Path
) -> None:
    with journal(backend, tmp_path) as open_one:
        store = open_one()
        store.append("Z", "note.added", {"committed": True})
        with store.group_commit(["A"], deferred=True):
            work(store, "A", n=1)
            assert [e.kind for e in store.entries("A")] == ["note.added", DECISION_KIND]
            assert store.get_case("A") == {"caseId": "A", "amount": "1000.00"}
            assert store.case_files(["A"])["A"].monitoring == {"race": ["Asian"]}
            # across cases, only what is committed: the group's entries are not yet
            assert [e.case_id for e in store.entries(kinds=["note.added"])] == ["Z"]
            assert store.case_files(["Z"])["Z"].document is None


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_deferred_group_refuses_a_write_that_would_go_around_it_and_writes_nothing(
    backend: str, tmp_path: Path
) -> None:
    with journal(backend, tmp_path) as open_one:
        store = open_one()
        store.append("A", "note.added", {"n": 1})
        with (
            pytest.raises(JournalError, match="deferred group"),
            store.group_commit(["A"], deferred=True),
        ):
            store.append("A", "note.added", {"n": 2})
            store.put_mark("a.mark", 1, {"x": 1})
        assert len(store.entries()) == 1
        assert store.mark("a.mark") is None


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_deferred_group_that_raises_writes_nothing(backend: str, tmp_path: Path) -> None:
    with journal(backend, tmp_path) as open_one:
        store = open_one()
        with pytest.raises(RuntimeError, match="stop"), store.group_commit(["A"], deferred=True):
            work(store, "A")
            raise RuntimeError("stop")
        assert store.entries() == [] and store.case_ids() == []
        assert store.get_monitoring("A") is None


def test_a_deferred_group_with_nothing_to_write_takes_no_lock(tmp_path: Path) -> None:
    with journal("sqlite", tmp_path) as open_one:
        store = open_one()
        store.append("A", "note.added", {"n": 1})
        taken: list[int] = []
        real = store._writers
        store._writers = lambda: (taken.append(1), real())[1]  # type: ignore[method-assign]
        with store.group_commit(["A"], deferred=True):
            assert store.entries("A")
        assert taken == []
        with store.group_commit(["A"], deferred=True):
            store.append("A", "note.added", {"n": 2})
        assert taken == [1]


def test_on_a_journal_in_memory_a_deferred_group_is_a_locked_one() -> None:
    store = open_store("sqlite://", clock=FixedClock(NOW))
    assert not store.shared
    with store.group_commit(["A"], deferred=True):
        work(store, "A")
        # a locked group's cross-case reads see its own rows
        assert [e.case_id for e in store.entries(kinds=["note.added"])] == ["A"] * 3
    assert store.verify().ok


@pytest.mark.parametrize("backend", BACKENDS)
def test_views_of_cases_no_one_else_moved_are_carried_past_another_writers_commit(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The next group reads again only the cases another writer appended to."""
    with journal(backend, tmp_path) as open_one:
        store = open_one()
        with store.group_commit(["X", "Y"], deferred=True):
            work(store, "X", n=1)
            work(store, "Y", n=1)
        other_writer_appends(open_one, "Y")
        other_writer_appends(open_one, "Z")
        read = cases_read(store, monkeypatch)
        with store.group_commit(["X", "Y"], deferred=True):
            assert read == ["Y"]  # X is as the last group left it
            assert [e.payload.get("by") for e in store.entries("Y")][-1] == "another writer"
            assert store.get_monitoring("X") == {"race": ["Asian"]}
            store.append("X", "note.added", {"again": True}, after=store.last_seq("X"))
            store.append("Y", "note.added", {"again": True}, after=store.last_seq("Y"))
        assert store.verify().ok


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bounded", [False, True])
def test_a_locked_group_takes_on_the_views_no_one_else_moved(
    backend: str, bounded: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's worker commits its notices and ethics findings in locked groups, most
    often after the other worker committed: the views no one else moved are taken on
    as its last group left them, the one another writer moved is read again (with
    that writer's entry). Past the bound on what a locked group looks up (many more
    views than the cases it names: the service's group of one case), it keeps the
    views of the cases it names alone, and a case it did not name is read again when
    a later group names it."""
    import credit.journal.sql as sql_module

    if bounded:  # three views, two cases named: more than one view a case
        monkeypatch.setattr(sql_module, "LOCKED_LOOKS_PER_CASE", 1)
    with journal(backend, tmp_path) as open_one:
        store = open_one()
        with store.group_commit(["X", "Y", "W"], deferred=True):
            for case_id in ("X", "Y", "W"):
                work(store, case_id, n=1)
        other_writer_appends(open_one, "Y")
        read = cases_read(store, monkeypatch)
        with store.group_commit(["X", "Y"]):
            assert read == ["Y"]  # X as the last group left it
            assert [e.payload.get("by") for e in store.entries("Y")][-1] == "another writer"
            assert store.get_monitoring("X") == {"race": ["Asian"]}
            with pytest.raises(StaleCaseError):  # X's view is where X stands
                store.append("X", "stale", {}, after=store.last_seq("X") - 1)
            store.append("X", "note.added", {"again": True}, after=store.last_seq("X"))
            store.append("Y", "note.added", {"again": True}, after=store.last_seq("Y"))
        with store.group_commit(["W"]):
            assert read == (["Y", "W"] if bounded else ["Y"])
            assert [e.kind for e in store.entries("W")][-1] == DECISION_KIND
        assert store.verify().ok
        assert [e.payload for e in store.entries("X")][-1] == {"again": True}


@pytest.mark.parametrize("backend", BACKENDS)
def test_threads_of_one_store_each_run_a_deferred_group_at_once(
    backend: str, tmp_path: Path
) -> None:
    """The service's request threads share one store: a group one thread opens is its
    own, and another thread's group opened, written and committed meanwhile neither
    joins it nor ends it."""
    with journal(backend, tmp_path) as open_one:
        store = open_one()
        opened, committed = threading.Event(), threading.Event()
        seen: list[list[str | None]] = []

        def other_thread() -> None:
            opened.wait(timeout=30)
            with store.group_commit(["B"], deferred=True):
                work(store, "B", n=1)
                seen.append([e.case_id for e in store.entries("A")])  # not A's rows
            committed.set()

        thread = threading.Thread(target=other_thread)
        thread.start()
        with store.group_commit(["A"], deferred=True):
            store.append("A", "note.added", {"n": 0})
            opened.set()
            assert committed.wait(timeout=30), "the other thread's group waited for this one"
            store.append("A", "note.added", {"n": 1})  # still this thread's group
            assert [e.payload.get("n") for e in store.entries("A")] == [0, 1]
        thread.join(timeout=30)
        assert seen == [[]]
        # B's group committed first; A's two entries landed together after it.
        assert [e.case_id for e in store.entries()] == ["B", "B", "A", "A"]
        assert store.verify().ok and store.audit().ok


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_case_only_read_by_a_group_given_other_places_is_read_again_by_the_next(
    backend: str, tmp_path: Path
) -> None:
    """A group that read R, wrote A and committed after another writer appended to R:
    the next group sees that entry, and an append made against R as the first group
    read it is stale (the view of R is not handed on with the new head)."""
    with journal(backend, tmp_path) as open_one:
        store = open_one()
        store.append("R", "note.added", {"n": 1})
        with store.group_commit(["A", "R"], deferred=True):
            assert len(store.entries("R")) == 1  # read, not written
            store.append("A", "note.added", {"mine": True})
            other_writer_appends(open_one, "R")
        with store.group_commit(["R"], deferred=True):
            assert [e.payload.get("by") for e in store.entries("R")] == [None, "another writer"]
            with pytest.raises(StaleCaseError):
                store.append("R", "note.added", {"as read": True}, after=1)
        assert [e.case_id for e in store.entries()] == ["R", "R", "A"]
        assert store.verify().ok


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_group_given_other_places_hands_on_its_entries_as_committed(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with journal(backend, tmp_path) as open_one:
        store = open_one()
        with store.group_commit(["X"], deferred=True):
            work(store, "X", n=2)
            other_writer_appends(open_one, "Z")
        committed = open_one().entries("X")
        assert [e.seq for e in committed] == [2, 3, 4]
        read = cases_read(store, monkeypatch)
        with store.group_commit(["X"], deferred=True):
            assert read == []  # carried, not read again
            assert store.entries("X") == committed  # seqs, hashes and MACs as committed
            decided = store.decision_entry("X")
            assert decided is not None and decided.seq == 4
            store.append("X", "note.added", {"next": True}, after=4)
        assert [e.seq for e in store.entries("X")] == [2, 3, 4, 5]
        assert store.verify().ok and store.audit().ok


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_groups_reads_across_cases_stand_still_and_the_next_group_reads_on(
    backend: str, tmp_path: Path
) -> None:
    """Inside a deferred group, a reader across cases (the comparison pool) sees the
    committed journal as its first read found it; what another writer commits
    meanwhile has higher seqs, and the next group's read from where the reader got
    to finds it: nothing is skipped."""
    with journal(backend, tmp_path) as open_one:
        store = open_one()
        store.append("A", "decision.noted", {"n": 1})
        store.append("B", "other.kind", {"n": 2})
        with store.group_commit(["C"], deferred=True):
            store.append("C", "decision.noted", {"mine": True})
            first = store.entries(kinds=["decision.noted"])
            assert [e.case_id for e in first] == ["A"]  # committed only
            other_writer_appends(open_one, "D")  # a note.added, another kind
            open_one().append("E", "decision.noted", {"n": 3})
            again = store.entries(kinds=["decision.noted"], after_seq=first[-1].seq)
            assert again == []  # it stands still
            assert store.entries(kinds=["decision.noted"], after_seq=0) == first
        # the next group reads on from the last entry the reader was given
        with store.group_commit(["C"], deferred=True):
            later = store.entries(kinds=["decision.noted"], after_seq=first[-1].seq)
            assert [(e.case_id, e.seq) for e in later] == [("E", 4), ("C", 5)]
