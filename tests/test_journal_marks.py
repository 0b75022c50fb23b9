"""Marks: what a reader derived from the journal through an entry, kept beside the
chain so that the next reader reads only what came after.

The first reader that keeps one is the search for pending work a run and a service
worker do first (:meth:`credit.casework.CaseWork.finish_pending`): a lender's journal
only grows, and a start that folds every case ever taken in grows with it. A mark is a
cache, never a record: it is sealed with the lender's key and bound to the hash of the
entry it was made on, a reader refuses one that was edited or whose entry changed, and
without one (deleted, or a journal made before marks) the reader derives the same from
the whole journal. These scenarios hold on every backend."""

from __future__ import annotations

import dataclasses
import logging
import random
import shutil
import threading
from array import array
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import credit.casework
import credit.governance.equipoise
from credit.casework import PENDING_MARK
from credit.cli import app
from credit.clock import FixedClock
from credit.errors import JournalIntegrityError
from credit.governance.equipoise import POOL_FORMAT, POOL_MARK, ComparisonPool, Equipoise
from credit.governance.onramp import intake
from credit.journal import InMemoryStore, SqlStore, Store, open_store
from credit.journal.base import JournalError, checked_mark, mark_row
from credit.journal.signer import ephemeral_key
from credit.journal.verified import CHAIN_MARK, TREE_MARK
from credit.kinds import DECISION_KINDS, KEYSTONE_REJECTED
from credit.lifecycle import STANDING_KINDS
from credit.notices.outbox import DirectoryOutbox, InMemoryOutbox
from credit.pipeline import BatchLine, Pipeline
from credit.service.cases import CaseService
from credit.service.claims import MemoryClaims
from credit.underwriters.runtime import SparkRuntime
from test_casework import TODAY, backend_store
from test_journal_pages import _cases, _run
from test_journal_store import raw_sql, sql_backend

BACKENDS = ("memory", "sqlite", "postgresql")


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    with _store(request.param, tmp_path, FixedClock(TODAY)) as opened:
        yield opened


@contextmanager
def _store(backend: str, tmp_path: Path, clock: FixedClock) -> Iterator[Store]:
    if backend == "memory":
        yield InMemoryStore(clock)
        return
    with backend_store(backend, tmp_path, clock) as sql:
        yield sql


@contextmanager
def _after_a_run(backend: str, tmp_path: Path, cases: int) -> Iterator[tuple[Store, Pipeline]]:
    """A journal a run of ``cases`` generated cases left (its start kept a mark on the
    empty journal), and a pipeline on it."""
    clock = FixedClock(TODAY)
    with _store(backend, tmp_path, clock) as store:
        _run(store, tmp_path, cases=cases)
        yield store, Pipeline(store, DirectoryOutbox(tmp_path / "outbox"), clock=clock)


def _drop_marks(store: Store) -> None:
    """Delete every mark behind the store's back."""
    if isinstance(store, InMemoryStore):
        store._marks.clear()
    else:
        assert isinstance(store, SqlStore)
        raw_sql(store.url, store.schema, "DELETE FROM journal_marks")


def _head(store: Store) -> int:
    return store.tree_head()[0]


# ------------------------------------------------------------------ the store's marks


def test_a_mark_is_kept_read_back_and_replaced(store: Store) -> None:
    assert store.mark("reader.one") is None  # none kept: the reader starts from nothing
    store.put_mark("reader.one", 0, {"pending": []})  # on an empty journal: entry 0
    for n in range(3):
        store.append(f"M-{n}", "test.entry", {"n": n})
    store.put_mark("reader.two", 2, {"pending": ["M-1"], "amount": 1.5})
    assert store.mark("reader.one") == (0, {"pending": []})
    kept = store.mark("reader.two")
    assert kept is not None and kept.seq == 2
    assert kept.data == {"pending": ["M-1"], "amount": pytest.approx(1.5)}
    store.put_mark("reader.one", 3, {"pending": ["M-0", "M-2"]})
    assert store.mark("reader.one") == (3, {"pending": ["M-0", "M-2"]})


def test_a_mark_is_made_only_on_an_entry_the_journal_holds(store: Store) -> None:
    store.append("M-1", "test.entry", {"n": 1})
    with pytest.raises(ValueError, match="no entry 2"):
        store.put_mark("reader", 2, {})
    assert store.mark("reader") is None  # nothing kept


def test_a_mark_sealed_with_another_key_or_on_another_entry_is_refused() -> None:
    store = InMemoryStore(FixedClock(TODAY))
    for n in range(3):
        store.append("M-1", "test.entry", {"n": n})
    store.put_mark("reader", 2, {"pending": []})
    seq, head, text, _ = store._marks["reader"]
    forged = mark_row(ephemeral_key(), "reader", seq, head, text)
    store._marks["reader"] = (seq, head, text, forged)
    with pytest.raises(JournalIntegrityError, match="does not match its seal") as caught:
        store.mark("reader")
    assert caught.value.check == "mark"
    # the seal of the one entry does not vouch for another, nor for another name
    sealed = mark_row(store.key, "reader", seq, head, text)
    at_three = store.entries()[2].hash
    with pytest.raises(JournalIntegrityError, match="does not match its seal"):
        checked_mark(store.key, "reader", (3, at_three, text, sealed), at_three)
    with pytest.raises(JournalIntegrityError, match="does not match its seal"):
        checked_mark(store.key, "other", (seq, head, text, sealed), head)
    # the entry it was made on: its hash changed, or gone
    with pytest.raises(JournalIntegrityError, match="whose hash has changed"):
        checked_mark(store.key, "reader", (seq, head, text, sealed), at_three)
    with pytest.raises(JournalIntegrityError, match="no longer holds"):
        checked_mark(store.key, "reader", (seq, head, text, sealed), None)
    assert checked_mark(store.key, "reader", (seq, head, text, sealed), head) == (
        seq,
        {"pending": []},
    )
    # the same data written another way (a space) is not what was sealed
    spaced = text.replace(":", ": ")
    with pytest.raises(JournalIntegrityError, match="does not match its seal"):
        checked_mark(store.key, "reader", (seq, head, spaced, sealed), head)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_mark_edited_or_whose_entry_changed_behind_the_stores_back_is_refused(
    backend: str, tmp_path: Path
) -> None:
    with sql_backend(backend, tmp_path) as (store, url, schema):
        for n in range(4):
            store.append(f"M-{n}", "test.entry", {"n": n})
        store.put_mark("reader", 3, {"pending": ["M-1"]})
        raw_sql(url, schema, "UPDATE journal_marks SET data = '{\"pending\":[]}'")
        with pytest.raises(JournalIntegrityError, match="does not match its seal") as caught:
            store.mark("reader")
        assert caught.value.check == "mark" and caught.value.seq == 3
        raw_sql(url, schema, "UPDATE journal_marks SET data = 'not json'")
        with pytest.raises(JournalIntegrityError, match="does not match its seal"):
            store.mark("reader")
        store.put_mark("reader", 3, {"pending": ["M-1"]})
        raw_sql(url, schema, f"UPDATE journal_entries SET hash = '{'0' * 64}' WHERE seq = 3")
        with pytest.raises(JournalIntegrityError, match="whose hash has changed"):
            store.mark("reader")
        raw_sql(url, schema, "DELETE FROM journal_marks")
        assert store.mark("reader") is None  # deleted: the reader derives it again


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_journal_made_before_marks_opens_as_it_is_and_gets_the_table_on_first_mark(
    backend: str, tmp_path: Path
) -> None:
    with sql_backend(backend, tmp_path) as (store, url, schema):
        store.append("M-1", "test.entry", {"n": 1})
        raw_sql(url, schema, "DROP TABLE journal_marks")
        with open_store(url, schema=schema, create=False) as old:
            assert old.mark("reader") is None
            old.put_mark("reader", 1, {"pending": []})
            assert old.mark("reader") == (1, {"pending": []})


# ------------------------------------------------------------------ the cases touched


def _touched_by_hand(
    store: Store, after: int, kinds: frozenset[str], named: list[str]
) -> list[str]:
    """The cases touched after ``after``, found by reading every entry (the reference)."""
    wanted = {e.case_id for e in store.entries(after_seq=after) if e.kind in kinds}
    wanted.update(named)
    return [c for c in store.case_ids() if c in wanted]


@pytest.fixture(params=BACKENDS, scope="module")
def ran(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Store]:
    tmp = tmp_path_factory.mktemp(f"marks-{request.param}")
    clock = FixedClock(TODAY)
    if request.param == "memory":
        memory = InMemoryStore(clock)
        _run(memory, tmp, cases=24)
        yield memory
        return
    with backend_store(request.param, tmp, clock) as sql:
        _run(sql, tmp, cases=24)
        yield sql


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_the_cases_touched_after_an_entry_are_those_its_later_entries_name(
    ran: Store, data: st.DataObject
) -> None:
    head = _head(ran)
    after = data.draw(st.integers(min_value=0, max_value=head + 2), label="after")
    kinds = frozenset(
        data.draw(st.sets(st.sampled_from(sorted(STANDING_KINDS)), min_size=1), label="kinds")
    )
    ids = ran.case_ids()
    named = data.draw(st.lists(st.sampled_from([*ids, "NOT-A-CASE"]), max_size=4), label="named")
    found = ran.touched_cases(after, kinds, including=named)
    assert found == _touched_by_hand(ran, after, kinds, named)
    assert "NOT-A-CASE" not in found


# ------------------------------------------------------------------ the pending work


class CasesRead:
    """The cases a store method was asked for (its first argument: case ids), by call:
    ``case_entries`` (the search for pending work) or ``case_files`` (the pool)."""

    def __init__(self, store: Store, method: str, monkeypatch: pytest.MonkeyPatch) -> None:
        self.cases: list[str] = []
        read = getattr(store, method)

        def counted(case_ids: Any, *rest: Any) -> Any:
            self.cases.extend(case_ids)
            return read(case_ids, *rest)

        monkeypatch.setattr(store, method, counted)


def entries_read(store: Store, monkeypatch: pytest.MonkeyPatch) -> CasesRead:
    """Which cases the search for pending work read (store.case_entries)."""
    return CasesRead(store, "case_entries", monkeypatch)


def files_read(store: Store, monkeypatch: pytest.MonkeyPatch) -> CasesRead:
    """The cases whose files a pool read (store.case_files)."""
    return CasesRead(store, "case_files", monkeypatch)


def _left_awaiting_review(store: Store, pipeline: Pipeline, seed: int, prefix: str) -> list[str]:
    """Cases a crash left decided and awaiting their review (turns without the gate)."""
    left = []
    for document in _cases(seed, 3, prefix):
        intake(document, store)
        SparkRuntime(store).run_turn(document["caseId"], pipeline.underwriter)
        left.append(document["caseId"])
    return left


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_start_reads_only_the_cases_touched_since_the_last_and_finds_the_same_work(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _after_a_run(backend, tmp_path, 16) as (s, pipeline):
        # the run kept a mark on its last entry, from where it saw its cases stand
        mark = s.mark(PENDING_MARK)
        assert mark is not None and mark.seq == _head(s) and mark.data == {"pending": []}
        asked = entries_read(s, monkeypatch)
        assert pipeline.finish() == {}  # nothing since: nothing read, no new mark
        assert asked.cases == [] and s.mark(PENDING_MARK) == mark

        left = _left_awaiting_review(s, pipeline, 4719, "LEFT")
        asked.cases.clear()
        done = pipeline.finish()
        assert asked.cases == left  # only the cases touched since the mark, in order
        assert set(done) == set(left)
        assert all(life.system_work is None for life in pipeline.work.lives().values())


@pytest.mark.parametrize("backend", BACKENDS)
def test_work_a_mark_names_is_found_again_and_without_a_mark_every_case_is_read(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _after_a_run(backend, tmp_path, 8) as (s, pipeline):
        left = _left_awaiting_review(s, pipeline, 4720, "HELD")
        # a search that found them and stopped before finishing them (a crash)
        monkeypatch.setattr(pipeline.work, "finish", lambda case_id, pool=None: None)
        assert set(pipeline.work.finish_pending()) == set(left)
        mark = s.mark(PENDING_MARK)
        assert mark is not None and mark.data == {"pending": left}
        monkeypatch.undo()
        asked = entries_read(s, monkeypatch)
        assert set(pipeline.finish()) == set(left)  # named by the mark, nothing since
        assert asked.cases == left
        # without the mark (deleted by hand, or never kept): every case, the same work
        _drop_marks(s)
        more = _left_awaiting_review(s, pipeline, 4721, "MORE")
        asked.cases.clear()
        assert set(pipeline.finish()) == set(more)
        assert asked.cases == s.case_ids()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_case_that_comes_to_need_work_while_the_search_runs_is_found_by_the_next(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mark is made on the head read before the search began: an entry another
    writer lands meanwhile is after it, so its case is read again next time."""
    with _after_a_run(backend, tmp_path, 6) as (s, pipeline):
        monkeypatch.setattr(credit.casework, "LIFE_PAGE", 2)
        read = s.case_entries
        landed: list[str] = []

        def meanwhile(case_ids: Any, kinds: Any = None) -> Any:
            if not landed:  # another writer, between the head's read and this page
                landed.extend(_left_awaiting_review(s, pipeline, 4722, "LATE"))
            return read(case_ids, kinds)

        monkeypatch.setattr(s, "case_entries", meanwhile)
        early = _left_awaiting_review(s, pipeline, 4723, "EARLY")  # a case to read
        first = pipeline.finish()
        assert set(first) == set(early)
        monkeypatch.setattr(s, "case_entries", read)
        assert landed and not set(first) & set(landed)  # not among the cases asked
        assert set(pipeline.finish()) == set(landed)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_run_on_a_long_journal_finds_pending_work_as_a_full_fold_does(
    backend: str, tmp_path: Path
) -> None:
    """Whatever the journal gained since the mark, in any order, the work found is the
    work a fold of every case finds."""
    with _after_a_run(backend, tmp_path, 6) as (s, pipeline):
        rng = random.Random(11)
        for round_ in range(3):
            left = _left_awaiting_review(s, pipeline, 4730 + round_, f"R{round_}")
            rng.shuffle(left)
            expected = {c for c, life in pipeline.work.lives().items() if life.system_work}
            assert expected == set(left)
            assert set(pipeline.finish()) == expected


# ------------------------------------------------------------------ the comparison pool


def _pool_of(store: Store, **options: Any) -> ComparisonPool:
    return Equipoise(store, **options).pool()


def _same_pool(one: ComparisonPool, other: ComparisonPool) -> None:
    """Two pools hold the same rows: the same decisions in the same order, with the
    same strengths, groups and ranks (dropped rows too), and the same codes."""
    assert one._mark == other._mark
    assert one.changed == other.changed  # the last entry that took a row out
    assert one._where == other._where
    assert one._codes == other._codes
    assert one._products.keys() == other._products.keys()
    for product, block in one._products.items():
        twin, n = other._products[product], block.size
        assert twin.size == n and twin.case_ids[:n] == block.case_ids[:n]
        for name in ("seq", "rank", "strength", "groups"):
            assert np.array_equal(getattr(twin, name)[:n], getattr(block, name)[:n]), name


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_run_keeps_its_pool_and_the_next_starts_from_it_with_the_same_rows(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _after_a_run(backend, tmp_path, 24) as (s, _):
        mark = s.mark(POOL_MARK)
        assert mark is not None and mark.data["format"] == POOL_FORMAT
        files = files_read(s, monkeypatch)
        resumed = _pool_of(s)
        assert files.cases == []  # no decision's file read again
        _drop_marks(s)
        rebuilt = _pool_of(s)
        assert set(files.cases) >= set(rebuilt._where)  # every decision read from the journal
        _same_pool(resumed, rebuilt)
        assert resumed._where  # decisions of every kind were compared


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("form", ["decisionId", "decisionSeq", "another decision"])
def test_a_pool_resumed_from_its_mark_reads_only_what_came_after_it(
    backend: str, form: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """New decisions, and a person's rejection of a decision the mark holds, read after
    the mark give the pool a fold of the whole journal gives: a rejection names its
    decision by content (or, written before, by seq); one naming another decision of
    the case leaves the row in the pool."""
    with _after_a_run(backend, tmp_path, 16) as (s, pipeline):
        resumed = _pool_of(s)
        rejected = next(iter(resumed._where))
        decision = s.decision_entry(rejected)
        assert decision is not None
        new = _left_awaiting_review(s, pipeline, 4740, "NEW")
        about = {
            "decisionId": {"decisionId": decision.payload["decisionId"]},
            "decisionSeq": {"decisionSeq": decision.seq},
            "another decision": {"decisionId": "0" * 64},
        }[form]
        s.append(rejected, KEYSTONE_REJECTED, about)
        files = files_read(s, monkeypatch)
        resumed.refresh()
        assert sorted(files.cases) == sorted(c for c in new if c in resumed._where)
        assert (rejected in resumed._where) is (form == "another decision")
        _drop_marks(s)
        _same_pool(resumed, _pool_of(s))
        assert resumed.keep()  # the newer pool is kept; the next starts from it
        _same_pool(_pool_of(s), resumed)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_pool_mark_of_another_form_or_configuration_is_not_used(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _after_a_run(backend, tmp_path, 12) as (s, _):
        rebuilt = Equipoise(s)
        config = rebuilt.config
        files = files_read(s, monkeypatch)
        other = dataclasses.replace(config, sha256="0" * 64)
        _same_pool(_pool_of(s, config=other), _pool_of(s))  # read whole, then resumed
        first = len(files.cases)
        assert first > 0
        monkeypatch.setattr(credit.governance.equipoise, "POOL_FORMAT", POOL_FORMAT + 1)
        _pool_of(s)
        assert len(files.cases) == 2 * first  # read whole again
        monkeypatch.undo()
        # of this form and configuration, but rows that are not the pool's (a defect
        # in a writer): read whole again, never half used
        kept = s.mark(POOL_MARK)
        assert kept is not None
        for broken in (
            {
                "caseIds": ["X-1"],
                "seq": "bm90IGRlZmxhdGVk",
                "rank": "",
                "strength": "",
                "groups": "",
            },
            {**kept.data["products"]["auto"], "caseIds": ["X-1"]},  # one id, many rows
            {**kept.data["products"]["auto"], "strength": 7},
        ):
            s.put_mark(POOL_MARK, kept.seq, {**kept.data, "products": {"auto": broken}})
            files = files_read(s, monkeypatch)
            _same_pool(_pool_of(s), rebuilt.pool())
            assert files.cases  # the journal read


def test_a_pool_that_read_nothing_or_what_the_journal_no_longer_holds_is_not_kept() -> None:
    store = InMemoryStore(FixedClock(TODAY))
    pool = _pool_of(store)
    assert not pool.keep() and store.mark(POOL_MARK) is None  # an empty journal
    store.record_decision("D-1", {"decision": {}})  # unreadable: not compared
    pool.refresh()
    assert pool._mark == 1
    pool._mark_hash = "0" * 64  # as if the entry it read had rolled back
    assert not pool.keep() and store.mark(POOL_MARK) is None
    pool._mark_hash = store.entries()[0].hash
    assert pool.keep() and store.mark(POOL_MARK) is not None


def test_a_run_on_a_journal_with_a_kept_pool_writes_what_it_writes_without_one(
    tmp_path: Path,
) -> None:
    """The same batch on two copies of one journal, one with the marks and one without:
    the same journal after, entry for entry (the same reviews, holds and notices), but
    for each turn's random id."""
    clock = FixedClock(TODAY)
    first = tmp_path / "first.db"
    with open_store(f"sqlite:///{first}", clock=clock) as store:
        _run(store, tmp_path, cases=30)
    heads, entries = [], []
    for name, marks in (("with", True), ("without", False)):
        copy = tmp_path / f"{name}.db"
        shutil.copyfile(first, copy)
        url = f"sqlite:///{copy}"
        if not marks:
            raw_sql(url, None, "DELETE FROM journal_marks")
        with open_store(url, clock=clock) as store:
            pipeline = Pipeline(store, DirectoryOutbox(tmp_path / f"outbox-{name}"), clock=clock)
            documents = _cases(4750, 30, "LATER")
            summary = pipeline.run([BatchLine(i, d) for i, d in enumerate(documents, start=1)])
            assert summary.decided == 30 and summary.chain is not None and summary.chain.ok
            heads.append((summary.held, summary.released, summary.notices_sent))
            turns: dict[str, str] = {}
            for e in store.entries():
                if isinstance(e.payload.get("turn"), str):
                    turns.setdefault(e.payload["turn"], f"turn-{len(turns)}")
                if e.kind in DECISION_KINDS:  # its content name covers its turn's id
                    turns.setdefault(e.payload["decisionId"], f"decision-{len(turns)}")
            entries.append(
                [(e.seq, e.case_id, e.kind, _named(e.payload, turns)) for e in store.entries()]
            )
    assert entries[0] == entries[1]
    assert heads[0] == heads[1]


def _named(value: Any, turns: dict[str, str]) -> Any:
    """The value with each turn's random id replaced by the turn's place in the run."""
    if isinstance(value, dict):
        return {k: _named(v, turns) for k, v in value.items()}
    if isinstance(value, list):
        return [_named(v, turns) for v in value]
    return turns.get(value, value) if isinstance(value, str) else value


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_service_worker_keeps_the_pool_its_reviews_read_when_it_closes(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with _after_a_run(backend, tmp_path, 12) as (s, _):
        _drop_marks(s)
        service = CaseService(s, InMemoryOutbox(), MemoryClaims(), clock=FixedClock(TODAY))
        service.keystone.equipoise.pool()  # what a review reads
        service.close()
        mark = s.mark(POOL_MARK)
        assert mark is not None and mark.seq == service.keystone.equipoise.pool_of_reviews()._mark
        files = files_read(s, monkeypatch)
        _pool_of(s)
        assert files.cases == []  # the next worker starts from it
        # a pool that cannot be kept is logged, and the worker still closes
        _drop_marks(s)
        failing = CaseService(s, InMemoryOutbox(), MemoryClaims(), clock=FixedClock(TODAY))
        failing.keystone.equipoise.pool()

        def refuse(*_: Any) -> None:
            raise JournalError("the journal store failed: disk full")

        monkeypatch.setattr(s, "put_mark", refuse)
        closed: list[bool] = []
        monkeypatch.setattr(failing.runtime, "close", lambda: closed.append(True))
        with caplog.at_level(logging.WARNING, logger="credit.service"):
            failing.close()
        assert closed == [True]
        assert "the comparison pool was not kept: the journal store failed" in caplog.text


# ------------------------------------------------------------------ the way back


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_refused_mark_stops_a_start_naming_the_way_back_and_marks_drop_takes_it(
    backend: str, tmp_path: Path
) -> None:
    """An operator whose run stops on a refused mark is told what to do; `credit
    journal marks` shows which, `--drop` deletes them, and the next run reads the whole
    journal once, finds the same work and keeps new marks."""
    with sql_backend(backend, tmp_path) as (store, url, schema):
        _run(store, tmp_path, cases=8)
        where = ["--database", url, *(["--schema", schema] if schema else [])]
        listed = CliRunner().invoke(app, ["journal", "marks", *where])
        assert listed.exit_code == 0, listed.output
        assert f"ok {PENDING_MARK}: made on entry {_head(store)}" in listed.stdout
        assert f"ok {POOL_MARK}: made on entry" in listed.stdout
        # the run's walk of the chain and its tree, each through the head it reached
        assert f"ok {CHAIN_MARK}: made on entry {_head(store)}" in listed.stdout
        assert f"ok {TREE_MARK}: made on entry {_head(store)}" in listed.stdout
        raw_sql(url, schema, f"UPDATE journal_marks SET seq = 1 WHERE name = '{PENDING_MARK}'")
        pipeline = Pipeline(store, DirectoryOutbox(tmp_path / "outbox"), clock=FixedClock(TODAY))
        with pytest.raises(JournalIntegrityError, match="marks --drop") as caught:
            pipeline.finish()
        assert caught.value.check == "mark"
        refused = CliRunner().invoke(app, ["journal", "marks", *where])
        assert refused.exit_code == 1
        assert f"REFUSED {PENDING_MARK}:" in refused.stdout and f"ok {POOL_MARK}" in refused.stdout
        dropped = CliRunner().invoke(app, ["journal", "marks", "--drop", *where])
        assert dropped.exit_code == 0 and "dropped 4 marks" in dropped.stdout
        assert store.mark_names() == []
        assert pipeline.finish() == {}  # the whole journal read: no work left
        assert store.mark_names() == [PENDING_MARK]
        empty = CliRunner().invoke(app, ["journal", "marks", "--drop", *where])
        assert "dropped 1 mark:" in empty.stdout


def test_marks_on_a_journal_made_before_them_says_there_are_none(tmp_path: Path) -> None:
    with sql_backend("sqlite", tmp_path) as (store, url, schema):
        store.append("M-1", "test.entry", {"n": 1})
        raw_sql(url, schema, "DROP TABLE journal_marks")
        listed = CliRunner().invoke(app, ["journal", "marks", "--database", url])
        assert listed.exit_code == 0 and "no marks kept" in listed.stdout
        dropped = CliRunner().invoke(app, ["journal", "marks", "--drop", "--database", url])
        assert dropped.exit_code == 0 and "dropped 0 marks" in dropped.stdout


# ------------------------------------------------------------------ the run's own mark


def _fold_pending(pipeline: Pipeline) -> set[str]:
    """The cases with system work, by a fold of every case (the reference)."""
    return {c for c, life in pipeline.work.lives().items() if life.system_work}


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_run_keeps_where_it_left_its_cases_and_another_writers_work_meanwhile_is_found(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a run works, another writer leaves new cases awaiting review and records an
    officer's decision on a case the run has already counted (which then awaits its
    review): the mark the run keeps at its end sends the next start to exactly the
    work a fold of every case finds, reading no case the run saw as it stands."""
    clock = FixedClock(TODAY)
    with _store(backend, tmp_path, clock) as s:
        pipeline = Pipeline(s, DirectoryOutbox(tmp_path / "outbox"), clock=clock, group_size=4)
        foreign: list[str] = []

        def another_writer() -> None:
            foreign.extend(_left_awaiting_review(s, pipeline, 4760, "OTHER"))
            first = documents[0]["caseId"]  # counted by the run with the first group
            decided = s.decision_entry(first)
            assert decided is not None
            s.append(first, "officer.decided", dict(decided.payload))
            foreign.append(first)

        def lines() -> Iterator[BatchLine]:
            for i, document in enumerate(documents, start=1):
                if i == 5:  # the first group is done: another writer, between groups
                    writer = threading.Thread(target=another_writer)
                    writer.start()
                    writer.join()
                yield BatchLine(i, document)

        documents = _cases(4761, 10, "RUN")
        read = entries_read(s, monkeypatch)
        summary = pipeline.run(lines())
        # the run read again only the cases the other writer touched: not its own
        assert sorted(read.cases) == sorted(foreign)
        assert summary.decided == 10 and len(foreign) == 4
        mark = s.mark(PENDING_MARK)
        assert mark is not None and mark.seq == _head(s)
        assert set(mark.data["pending"]) == set(foreign) == _fold_pending(pipeline)
        asked = entries_read(s, monkeypatch)
        done = pipeline.finish()
        assert set(done) == set(foreign) and sorted(asked.cases) == sorted(foreign)
        assert _fold_pending(pipeline) == set()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_run_that_leaves_its_own_cases_pending_names_them_in_its_mark(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run stopped before its notices went out (here: the notice stage does nothing)
    counts those cases as awaiting their notice; its mark names them, and the next
    start sends them, reading only them."""
    clock = FixedClock(TODAY)
    with _store(backend, tmp_path, clock) as s:
        pipeline = Pipeline(s, DirectoryOutbox(tmp_path / "outbox"), clock=clock)
        monkeypatch.setattr(pipeline, "_notify", lambda case_ids: None)
        documents = _cases(4762, 24, "RUN")
        pipeline.run([BatchLine(i, d) for i, d in enumerate(documents, start=1)])
        monkeypatch.undo()
        awaiting = _fold_pending(pipeline)
        assert awaiting  # declines and counteroffers, their notices not sent
        mark = s.mark(PENDING_MARK)
        assert mark is not None and set(mark.data["pending"]) == awaiting
        asked = entries_read(s, monkeypatch)
        assert set(pipeline.finish()) == awaiting
        assert set(asked.cases) == awaiting
        assert _fold_pending(pipeline) == set()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_case_the_kept_mark_names_and_nothing_touched_since_stays_named(
    backend: str, tmp_path: Path
) -> None:
    with _after_a_run(backend, tmp_path, 4) as (s, pipeline):
        left = _left_awaiting_review(s, pipeline, 4763, "LEFT")
        s.put_mark(PENDING_MARK, _head(s), {"pending": left})  # a search found them
        assert pipeline.work.keep_pending(array("q"), set())
        mark = s.mark(PENDING_MARK)
        assert mark is not None and mark.data == {"pending": left}
        assert set(pipeline.finish()) == set(left)
        s.drop_marks()
        assert not pipeline.work.keep_pending(array("q"), set())  # nothing to start from
        assert s.mark_names() == []
