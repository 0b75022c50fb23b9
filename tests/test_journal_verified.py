"""A run verifies the chain, and grows the tree, from where the last run left them.

A run ends by walking the chain and signing a checkpoint of the tree; from the first
entry every time, both grow with the whole journal (seconds a run on a journal of
100,000 cases), not with the run. So the walk begins after the entry the last walk
reached, once that entry is found still holding the hash it was verified with
(``Store.verify(since, since_hash)``), and the tree is taken from a sealed mark of its
frontier. These are the scenarios, on every backend: the walk from a verified entry,
and what it finds and what it leaves to ``credit journal verify``; the marks kept,
refused and ignored; and two runs on one journal, the second reading neither the
first's entries nor its leaves again, its checkpoint still the root of every leaf.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from credit.cli import app
from credit.clock import FixedClock
from credit.errors import JournalIntegrityError
from credit.journal import InMemoryStore, SqlStore, Store, open_store
from credit.journal.base import GENESIS_HASH
from credit.journal.checkpoint import parse_checkpoint
from credit.journal.merkle import root
from credit.journal.verified import (
    CHAIN_MARK,
    TREE_MARK,
    keep_tree,
    resume_kept_tree,
    verify_since_mark,
)
from credit.notices.outbox import InMemoryOutbox
from credit.service.cases import CaseService
from credit.service.claims import MemoryClaims
from test_casework import TODAY
from test_journal_signing import LeafCount
from test_journal_store import BACKENDS as STORE_BACKENDS
from test_journal_store import any_store, raw_sql, sql_backend
from test_run_workers import BACKENDS, journal, lines, pipeline

Backend = tuple[SqlStore, str, str | None]  # the store, its URL and schema


@pytest.fixture(params=STORE_BACKENDS)
def journal_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    with any_store(request.param, tmp_path) as opened:
        yield opened


@pytest.fixture(params=("sqlite", "postgresql"))
def sql_journal(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    with sql_backend(request.param, tmp_path) as backend:
        yield backend


def appended(target: Store, count: int, start: int = 0) -> None:
    for i in range(start, start + count):
        target.append(f"C-{i}", "step.done", {"i": i})


def edit(backend: Backend, seq: int) -> None:
    """An entry's payload changed behind the store's back, its hash left as it was."""
    set_column(backend, seq, "payload", '{"i": -1}')


def set_column(backend: Backend, seq: int, column: str, value: str) -> None:
    """An entry's column changed behind the store's back."""
    sql_store, url, schema = backend
    table = sql_store._entries.name
    raw_sql(url, schema, f"UPDATE {table} SET {column} = '{value}' WHERE seq = {seq}")


# ------------------------------------------------------------------ the walk


def test_a_walk_from_a_verified_entry_reaches_the_head_the_whole_walk_reaches(
    journal_store: Store,
) -> None:
    store = journal_store
    appended(store, 30)
    whole = store.verify()
    twentieth = store.entries()[19]
    walked = store.verify(20, twentieth.hash)
    assert whole.ok and walked.ok
    assert (walked.entries, walked.head) == (whole.entries, whole.head) == (30, whole.head)
    assert (walked.since, whole.since) == (20, 0)
    # at the head: nothing after it, the same answer
    assert store.verify(30, whole.head).model_dump() == {**whole.model_dump(), "since": 30}


def test_a_walk_from_an_entry_that_no_longer_holds_its_hash_is_broken_there(
    journal_store: Store,
) -> None:
    store = journal_store
    appended(store, 30)
    report = store.verify(20, GENESIS_HASH)  # not the hash entry 20 holds
    assert not report.ok and report.first_broken_seq == 20 and report.since == 20
    assert "does not hold the hash it held" in report.detail
    beyond = store.verify(31, store.verify().head)  # an entry the journal no longer has
    assert not beyond.ok and beyond.first_broken_seq == 31
    assert "no longer in the journal" in beyond.detail


def test_an_entry_edited_after_the_verified_one_breaks_the_walk_and_one_before_it_is_left_to_the_whole_walk(  # noqa: E501
    sql_journal: Backend,
) -> None:
    sql_store = sql_journal[0]
    appended(sql_store, 30)
    twentieth = sql_store.entries()[19].hash
    edit(sql_journal, 5)
    # the walk from entry 20 does not read entry 5 again; the whole walk does
    assert sql_store.verify(20, twentieth).ok
    whole = sql_store.verify()
    assert not whole.ok and whole.first_broken_seq == 5
    edit(sql_journal, 25)
    after = sql_store.verify(20, twentieth)
    assert not after.ok and after.first_broken_seq == 25 and "edited" in after.detail


# ------------------------------------------------------------------ the chain's mark


def test_each_walk_begins_where_the_last_one_ended(journal_store: Store) -> None:
    store = journal_store
    appended(store, 12)
    first = verify_since_mark(store)
    assert first.ok and (first.since, first.entries) == (0, 12)
    kept = store.mark(CHAIN_MARK)
    assert kept is not None and kept.seq == 12 and kept.data["hash"] == first.head
    appended(store, 7, start=12)
    second = verify_since_mark(store)
    assert second.ok and (second.since, second.entries) == (12, 19)
    assert second.head == store.verify().head
    third = verify_since_mark(store)  # nothing new: the walk reads nothing
    assert third.ok and (third.since, third.entries) == (19, 19)


def test_a_mark_of_another_form_is_a_whole_walk(journal_store: Store) -> None:
    store = journal_store
    appended(store, 5)
    store.put_mark(CHAIN_MARK, 5, {"format": 0, "hash": store.verify().head})
    report = verify_since_mark(store)
    assert report.ok and report.since == 0 and report.entries == 5


def test_a_broken_chain_after_the_mark_is_reported_and_the_mark_stays(
    sql_journal: Backend,
) -> None:
    sql_store = sql_journal[0]
    appended(sql_store, 10)
    assert verify_since_mark(sql_store).ok
    appended(sql_store, 10, start=10)
    edit(sql_journal, 15)
    report = verify_since_mark(sql_store)
    assert not report.ok and report.first_broken_seq == 15 and report.since == 10
    kept = sql_store.mark(CHAIN_MARK)
    assert kept is not None and kept.seq == 10  # not moved past a broken chain


def test_the_entry_the_mark_was_made_on_rewritten_is_a_broken_chain_there(
    sql_journal: Backend,
) -> None:
    sql_store = sql_journal[0]
    appended(sql_store, 10)
    assert verify_since_mark(sql_store).ok
    appended(sql_store, 3, start=10)
    set_column(sql_journal, 10, "hash", "a" * 64)
    report = verify_since_mark(sql_store)
    assert not report.ok and report.first_broken_seq == 10
    assert "refused" in report.detail


# ------------------------------------------------------------------ the tree's mark


def test_a_kept_tree_is_taken_and_only_the_leaves_after_it_are_read(
    sql_journal: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    sql_store, url, schema = sql_journal
    appended(sql_store, 40)
    sql_store.tree_head()
    assert keep_tree(sql_store)
    appended(sql_store, 5, start=40)
    with open_store(url, schema=schema) as later:  # the next run's store: no tree yet
        count = LeafCount(later, monkeypatch)
        assert resume_kept_tree(later)
        size, head = later.tree_head()
        assert count.read == 5 and size == 45
        assert head == root(later.leaf_hashes())
    with open_store(url, schema=schema) as without:  # the other side: every leaf read
        count = LeafCount(without, monkeypatch)
        assert without.tree_head() == (size, head) and count.read == 45


def test_a_tree_mark_of_another_form_or_a_malformed_frontier_is_not_taken(
    sql_journal: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    sql_store, url, schema = sql_journal
    appended(sql_store, 6)
    _, frontier = sql_store.tree_frontier() if sql_store.tree_head() else (0, ())
    good = [leaf.hex() for leaf in frontier]
    for data in (
        {"format": 0, "frontier": good},
        {"format": 1, "frontier": good[:-1]},  # 6 leaves have 2 subtree roots
        {"format": 1, "frontier": ["not hex"] * len(good)},
        {"format": 1, "frontier": "abc"},
    ):
        sql_store.put_mark(TREE_MARK, 6, data)
        with open_store(url, schema=schema) as later:
            count = LeafCount(later, monkeypatch)
            assert not resume_kept_tree(later)
            assert later.tree_head() == sql_store.tree_head() and count.read == 6


def test_a_refused_tree_mark_is_an_integrity_error(sql_journal: Backend) -> None:
    sql_store = sql_journal[0]
    appended(sql_store, 6)
    sql_store.tree_head()
    keep_tree(sql_store)
    set_column(sql_journal, 6, "hash", "b" * 64)
    with pytest.raises(JournalIntegrityError) as caught:
        resume_kept_tree(sql_store)
    assert caught.value.check == "mark"


def test_the_in_memory_store_keeps_and_takes_its_whole_tree() -> None:
    memory = InMemoryStore()
    assert not keep_tree(memory)  # nothing grown yet
    appended(memory, 3)
    assert keep_tree(memory) and resume_kept_tree(memory)
    assert memory.tree_head()[0] == 3


# ------------------------------------------------------------------ two runs


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_second_run_reads_neither_the_first_run_s_entries_nor_its_leaves_again(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with journal(backend, tmp_path) as first_store:  # (a PostgreSQL schema lives while open)
        first = pipeline(first_store, tmp_path, tmp_path / "checkpoints").run(lines(12, "A"))
        assert first.chain is not None and first.chain.ok and first.chain.since == 0
        url, schema = first_store.url, first_store.schema
        with open_store(url, schema=schema) as again:  # the next run's process
            count = LeafCount(again, monkeypatch)
            second = pipeline(again, tmp_path, tmp_path / "checkpoints").run(lines(12, "B"))
            assert second.chain is not None and second.chain.ok
            assert second.chain.since == first.chain.entries  # began after the first's walk
            assert second.chain.entries > first.chain.entries
            assert count.read == 0  # the tree taken from the first run's mark, then grown
            assert second.checkpoint is not None
            signed = parse_checkpoint(second.checkpoint.read_bytes())
        with open_store(url, schema=schema) as fresh:  # every leaf read again
            leaves = fresh.leaf_hashes()
            whole = fresh.verify()
        assert whole.ok and whole.entries == second.chain.entries
        assert signed.size == len(leaves) and signed.root_hash == root(leaves)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_service_worker_keeps_its_tree_and_the_next_one_starts_from_it(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def worker(on: Store) -> CaseService:
        return CaseService(on, InMemoryOutbox(), MemoryClaims(), clock=FixedClock(TODAY))

    with journal(backend, tmp_path) as first:
        pipeline(first, tmp_path).run(lines(6, "S"))
        first.drop_marks()
        url, schema = first.url, first.schema
        with open_store(url, schema=schema) as store:  # a worker's process, no mark yet
            count = LeafCount(store, monkeypatch)
            one = worker(store)
            one.start()
            head = store.tree_head()
            assert count.read == head[0]  # grown from every leaf
            one.close()
        kept = first.mark(TREE_MARK)
        assert kept is not None and kept.seq == head[0]
        with open_store(url, schema=schema) as store:  # the next worker's
            count = LeafCount(store, monkeypatch)
            two = worker(store)
            two.start()
            assert store.tree_head() == head and count.read == 0
            two.close()


def test_credit_run_says_which_entries_its_walk_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first run on a journal walks it whole; the next says it walked only what came
    after the entry the last one verified, and where the whole walk is."""
    monkeypatch.chdir(tmp_path)
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    for path, batch in ((first, lines(3, "F")), (second, lines(2, "G"))):
        path.write_text("".join(json.dumps(line.raw) + "\n" for line in batch))
    where = ["--database", f"sqlite:///{tmp_path / 'j.db'}", "--outbox", str(tmp_path / "o")]
    ran = CliRunner().invoke(app, ["run", str(first), *where])
    assert ran.exit_code == 0, ran.output
    whole = re.search(r"journal: chain verified, (\d+) entries, head", ran.stdout)
    assert whole is not None
    ran = CliRunner().invoke(app, ["run", str(second), *where])
    assert ran.exit_code == 0, ran.output
    walked = re.search(
        r"journal: chain verified, (\d+) entries \(the (\d+) after entry (\d+), which the "
        r"last run verified, walked; 'credit journal verify' walks them all\)",
        ran.stdout,
    )
    assert walked is not None, ran.stdout
    total, after, since = map(int, walked.groups())
    assert since == int(whole.group(1)) and total == since + after and after > 0
    ran = CliRunner().invoke(app, ["run", str(second), *where])  # nothing new to walk
    assert f"(none after entry {total}, which the last run verified" in ran.stdout
