"""Reading a long journal a page at a time: many cases' files and entries in a few
reads, entries a page at a time, a case's standing from the entries that make it, and
the work a run or a service worker finishes first without the whole journal in memory.

A lender's journal only grows. What a run does before its batch (finish the system's
pending work, build the comparison pool) must not hold every entry at once, nor read
each case alone: each reader here is checked against the one-case-at-a-time reader it
stands for, on every backend."""

from __future__ import annotations

import random
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import credit.casework
import credit.governance.equipoise
import credit.kinds
from credit.clock import FixedClock
from credit.errors import JournalIntegrityError
from credit.examples import generate_cases
from credit.governance.onramp import intake
from credit.journal import InMemoryStore, SqlStore, Store
from credit.journal.base import Entry
from credit.lifecycle import STANDING_KINDS, Lives, fold
from credit.notices.outbox import DirectoryOutbox, InMemoryOutbox
from credit.pipeline import BatchLine, Pipeline
from credit.policy import PolicyRegistry
from credit.underwriters.runtime import SparkRuntime
from test_casework import TODAY, backend_store
from test_journal_store import raw_sql, sql_backend

BACKENDS = ("memory", "sqlite", "postgresql")
CASES = 40


@pytest.fixture(params=BACKENDS)
def ran(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A journal a run of generated cases left: decisions of every kind, notices sent,
    monitoring data in the vault."""
    clock = FixedClock(TODAY)
    if request.param == "memory":
        store: Store = InMemoryStore(clock)
        _run(store, tmp_path)
        yield store
        return
    with backend_store(request.param, tmp_path, clock) as sql:
        _run(sql, tmp_path)
        yield sql


def _cases(seed: int, n: int, prefix: str) -> list[dict[str, Any]]:
    """Generated cases with ids of their own (``PREFIX-1`` ...)."""
    documents = generate_cases(seed, n)
    for i, document in enumerate(documents, start=1):
        document["caseId"] = f"{prefix}-{i}"
    return documents


def _run(store: Store, tmp_path: Path, cases: int = CASES) -> None:
    documents = _cases(4711, cases, "RUN")
    pipeline = Pipeline(store, DirectoryOutbox(tmp_path / "outbox"), clock=FixedClock(TODAY))
    summary = pipeline.run([BatchLine(i, d) for i, d in enumerate(documents, start=1)])
    assert summary.decided == cases and not summary.failures


def test_many_cases_files_read_together_are_each_as_get_case_and_get_monitoring_read_it(
    ran: Store,
) -> None:
    ids = ran.case_ids()
    asked = [*reversed(ids), "NEVER-TAKEN-IN", ids[0]]  # any order, an unknown, a repeat
    files = ran.case_files(asked)
    assert set(files) == set(asked)
    for case_id in asked:
        assert files[case_id] == (ran.get_case(case_id), ran.get_monitoring(case_id))
    assert files["NEVER-TAKEN-IN"] == (None, None)
    assert any(f.monitoring is not None for f in files.values())  # the vault is read too
    assert ran.case_files([]) == {}


def test_many_cases_entries_read_together_are_each_cases_authentic_entries(ran: Store) -> None:
    ids = ran.case_ids()
    everything = ran.case_entries([*ids, "NEVER-TAKEN-IN"])
    assert "NEVER-TAKEN-IN" not in everything
    assert set(everything) == set(ids)
    standing = ran.case_entries(ids, STANDING_KINDS)
    for case_id in ids:
        assert everything[case_id] == ran.authentic_entries(case_id)
        assert standing[case_id] == [e for e in everything[case_id] if e.kind in STANDING_KINDS]
    assert len(standing[ids[0]]) < len(everything[ids[0]])  # the turn is not read


def test_entries_read_a_page_at_a_time_are_the_entries(ran: Store) -> None:
    for kinds in (None, ["decision.recorded", "keystone.released"]):
        whole = ran.entries(kinds=kinds)
        for size in (1, 7, len(whole), len(whole) + 1):
            pages: list[Entry] = []
            mark = 0
            while True:
                page = ran.entries(kinds=kinds, after_seq=mark, limit=size)
                assert len(page) <= size
                pages += page
                if len(page) < size:
                    break
                mark = page[-1].seq
            assert pages == whole
    assert ran.entries(limit=0) == []


def test_inside_a_group_the_pages_and_the_files_include_what_the_group_wrote(
    tmp_path: Path,
) -> None:
    clock = FixedClock(TODAY)
    with backend_store("sqlite", tmp_path, clock) as store:
        _run(store, tmp_path, cases=6)
        before = store.entries()
        fresh = _cases(4712, 1, "NEW")[0]
        with store.group_commit([fresh["caseId"]]):
            intake(fresh, store)
            inside = store.entries()
            assert inside[: len(before)] == before and len(inside) > len(before)
            assert store.entries(after_seq=before[-1].seq, limit=1) == [inside[len(before)]]
            files = store.case_files([fresh["caseId"]])
            assert files[fresh["caseId"]].document == store.get_case(fresh["caseId"])
            assert files[fresh["caseId"]].monitoring == store.get_monitoring(fresh["caseId"])
            got = store.case_entries([fresh["caseId"]])
            assert got[fresh["caseId"]] == store.entries(fresh["caseId"])


@contextmanager
def _ran_sql(backend: str, tmp_path: Path) -> Iterator[tuple[SqlStore, str, str | None]]:
    """(store, url, schema) of a SQL journal a six-case run left, to edit behind its back."""
    with sql_backend(backend, tmp_path) as (store, url, schema):
        _run(store, tmp_path, cases=6)
        yield store, url, schema


def _each_refuses(check: str | None, *reads: Callable[[], object]) -> None:
    for read in reads:
        with pytest.raises(JournalIntegrityError) as caught:
            read()
        assert check is None or caught.value.check == check


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_an_edited_document_or_vault_row_is_refused_read_together_as_read_alone(
    backend: str, tmp_path: Path
) -> None:
    with _ran_sql(backend, tmp_path) as (store, url, schema):
        ids = store.case_ids()
        victim = ids[3]
        raw_sql(
            url,
            schema,
            f"UPDATE cases SET document = replace(document, '\"annualIncome\":', "
            "'\"annualIncome\":1') "
            f"WHERE case_id = '{victim}'",
        )
        _each_refuses(
            "case-document",
            lambda: store.get_case(victim),
            lambda: store.case_files(ids),
            lambda: store.case_standing(victim),
        )
        with_vault = next(c for c in ids if c != victim and store.get_monitoring(c) is not None)
        raw_sql(url, schema, f"DELETE FROM monitoring WHERE case_id = '{with_vault}'")
        _each_refuses(
            "vault",
            lambda: store.get_monitoring(with_vault),
            lambda: store.case_files([with_vault]),
        )


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_an_entry_edited_behind_the_stores_back_is_refused_read_together_as_read_alone(
    backend: str, tmp_path: Path
) -> None:
    with _ran_sql(backend, tmp_path) as (store, url, schema):
        ids = store.case_ids()
        seq = store.entries(ids[2], kinds=["intake.accepted"])[0].seq
        zeros = "0" * 64
        raw_sql(url, schema, f"UPDATE journal_entries SET mac = '{zeros}' WHERE seq = {seq}")
        _each_refuses(
            None,
            lambda: store.authentic_entries(ids[2]),
            lambda: store.case_entries(ids, STANDING_KINDS),
            lambda: store.case_standing(ids[2]),
        )


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_cases_standing_is_its_document_and_authentic_entries_read_together(
    backend: str, tmp_path: Path
) -> None:
    with _ran_sql(backend, tmp_path) as (store, _url, _schema):
        for case_id in store.case_ids():
            document, entries = store.case_standing(case_id)
            assert document == store.get_case(case_id)
            assert entries == store.authentic_entries(case_id)
        assert store.case_standing("NEVER-TAKEN-IN") == (None, [])
        with store.group_commit([case_id]):  # a group's read, as get_case's
            assert store.case_standing(case_id) == (document, entries)
    memory = InMemoryStore()
    memory.append("M-1", "note", {"n": 1})
    assert memory.case_standing("M-1") == (None, memory.authentic_entries("M-1"))


# ------------------------------------------------------------------ where a case stands

_OTHER_KINDS = sorted(
    {
        value
        for name, value in vars(credit.kinds).items()
        if name.isupper() and isinstance(value, str) and "." in value
    }
    - STANDING_KINDS
)


def _standing(entries: list[Entry]) -> tuple[Any, ...]:
    life = fold(entries[0].case_id or "", entries, PolicyRegistry.bundled())
    item = life.item
    return (
        life.state,
        life.system_work,
        None if item is None else (item.kind, item.role, item.deadline, item.opened_seq),
        None if life.decision is None else life.decision.seq,
    )


@pytest.fixture(scope="module")
def journal() -> dict[str, list[Entry]]:
    """The entries of a run's cases, and of some a crash left awaiting review, by case."""
    store = InMemoryStore(FixedClock(TODAY))
    with tempfile.TemporaryDirectory() as folder:
        _run(store, Path(folder), cases=30)
        for document in _cases(4713, 4, "LEFT"):
            intake(document, store)
            underwriter = Pipeline(store, DirectoryOutbox(Path(folder) / "out")).underwriter
            SparkRuntime(store).run_turn(document["caseId"], underwriter)
    by_case: dict[str, list[Entry]] = {}
    for entry in store.entries():
        if entry.case_id is not None:
            by_case.setdefault(entry.case_id, []).append(entry)
    return by_case


def test_the_kinds_the_fold_reads_are_kinds_the_system_writes() -> None:
    assert _OTHER_KINDS  # the turns, the ethics findings, the guard's redactions ...
    assert "underwriter.turn" in _OTHER_KINDS
    written = {v for n, v in vars(credit.kinds).items() if n.isupper() and isinstance(v, str)}
    assert written >= STANDING_KINDS
    assert "intake.accepted" in STANDING_KINDS and "notice.sent" in STANDING_KINDS


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_case_stands_where_its_standing_entries_alone_put_it(
    journal: dict[str, list[Entry]], data: st.DataObject
) -> None:
    """An entry of a kind the fold does not read for standing, anywhere in a case's
    entries, changes nothing of where the case stands: so a reader may leave it out."""
    case_id = data.draw(st.sampled_from(sorted(journal)))
    entries = journal[case_id]
    standing = [e for e in entries if e.kind in STANDING_KINDS]
    assert _standing(standing) == _standing(entries)
    # and any other kind, dropped in anywhere, is passed over
    extra = data.draw(st.lists(st.sampled_from(_OTHER_KINDS), min_size=1, max_size=4))
    mixed = list(entries)
    for kind in extra:
        at = data.draw(st.integers(0, len(mixed)))
        mixed.insert(at, entries[0].model_copy(update={"kind": kind, "payload": {"x": 1}}))
    renumbered = [e.model_copy(update={"seq": i}) for i, e in enumerate(mixed, start=1)]
    kept = [e for e in renumbered if e.kind in STANDING_KINDS]
    assert _standing(kept) == _standing(renumbered)
    assert {_standing(v)[1] for v in journal.values()} >= {None, "review"}


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_life_folded_on_as_its_entries_grow_is_the_life_folded_whole(
    journal: dict[str, list[Entry]], data: st.DataObject
) -> None:
    """Lives: a case's life asked for again and again as its entries grow (any cuts,
    cases in any order, more cases than it keeps) is each time what folding the
    entries whole gives."""
    registry = PolicyRegistry.bundled()
    lives = Lives(registry, most=2)
    asked = data.draw(st.lists(st.sampled_from(sorted(journal)), min_size=1, max_size=8))
    for case_id in asked:
        entries = journal[case_id]
        cuts = data.draw(st.lists(st.integers(1, len(entries)), max_size=4))
        for cut in [*sorted(cuts), len(entries), len(entries)]:
            assert lives(case_id, entries[:cut]) == fold(case_id, entries[:cut], registry)
    assert len(lives._kept) <= 2  # the cases folded last, and no more


def test_folding_on_never_changes_the_folding_folded_on_from(
    journal: dict[str, list[Entry]],
) -> None:
    """What Lives keeps may be folded on by two threads at once: folding on makes a new
    folding and leaves the one it started from as it was."""
    from credit.lifecycle import _Folding

    registry = PolicyRegistry.bundled()
    for case_id, entries in journal.items():
        for cut in range(len(entries) + 1):
            start = _Folding(case_id)
            start.feed(entries[:cut])
            on = start.fed(entries[cut:])
            assert start.life(registry) == fold(case_id, entries[:cut], registry)
            assert on.life(registry) == fold(case_id, entries, registry)


def test_entries_that_are_not_the_ones_folded_before_are_folded_from_the_first(
    journal: dict[str, list[Entry]],
) -> None:
    """Entries read afresh are other objects: a life is folded on only from the very
    entries folded before (the first and the last of them the same objects)."""
    registry = PolicyRegistry.bundled()
    case_id = next(c for c, es in journal.items() if len(es) >= 5)
    entries = journal[case_id]
    lives = Lives(registry)
    assert lives(case_id, entries[:4]).state != "withdrawn"
    withdrawn = [entries[0].model_copy(update={"kind": "case.withdrawn"}), *entries[1:4]]
    assert lives(case_id, withdrawn) == fold(case_id, withdrawn, registry)  # another first
    assert lives(case_id, withdrawn).state == "withdrawn"
    lives(case_id, entries[:4])
    withdrawn = [*entries[:3], entries[3].model_copy(update={"kind": "case.withdrawn"})]
    assert lives(case_id, withdrawn) == fold(case_id, withdrawn, registry)  # another last
    assert lives(case_id, withdrawn).state == "withdrawn"
    assert lives(case_id, entries) == fold(case_id, entries, registry)
    assert lives(case_id, []) == fold(case_id, [], registry)
    with pytest.raises(ValueError):
        Lives(registry, most=0)


# ------------------------------------------------------------------ the work finished first


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_pending_work_is_found_and_finished_a_page_of_cases_at_a_time(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FixedClock(TODAY)
    with backend_store(backend, tmp_path, clock) as store:
        _run(store, tmp_path, cases=12)
        pipeline = Pipeline(store, DirectoryOutbox(tmp_path / "outbox"), clock=clock)
        left = []
        for document in _cases(4714, 5, "LEFT"):  # turns a crash left awaiting review
            intake(document, store)
            SparkRuntime(store).run_turn(document["caseId"], pipeline.underwriter)
            left.append(document["caseId"])
        random.Random(7).shuffle(left)
        pending = {c for c, life in pipeline.work.lives().items() if life.system_work}
        assert pending == set(left)
        monkeypatch.setattr(credit.casework, "LIFE_PAGE", 2)  # pages end mid-batch
        done = pipeline.finish()
        assert set(done) == pending
        assert all(life.system_work is None for life in done.values())
        assert all(life.system_work is None for life in pipeline.work.lives().values())
        assert pipeline.finish() == {}  # nothing left: nothing done, nothing journaled
        assert store.verify().ok


def test_the_comparison_pool_read_in_pages_is_the_pool_read_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FixedClock(TODAY)
    with backend_store("sqlite", tmp_path, clock) as store:
        _run(store, tmp_path, cases=60)
        raw_sql(store.url, None, "DELETE FROM journal_marks")  # both read the journal
        whole = credit.governance.equipoise.Equipoise(store).pool()
        monkeypatch.setattr(credit.governance.equipoise, "POOL_PAGE", 7)
        paged = credit.governance.equipoise.Equipoise(store).pool()
        last = store.entries(kinds=["decision.recorded", "officer.decided", "keystone.rejected"])
        assert paged._mark == whole._mark == last[-1].seq
        assert paged._where == whole._where and whole._where
        for product, block in whole._products.items():
            other = paged._products[product]
            n = block.size
            assert other.size == n
            assert other.case_ids[:n] == block.case_ids[:n]
            assert (other.strength[:n] == block.strength[:n]).all()
            assert (other.groups[:n] == block.groups[:n]).all()
            assert (other.rank[:n] == block.rank[:n]).all()


def test_the_queue_read_a_page_of_cases_at_a_time_is_every_open_item(
    ran: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = credit.casework.CaseWork(ran, InMemoryOutbox(), clock=FixedClock(TODAY))
    whole = [life.item for life in work.lives().values() if life.item is not None]
    expected = sorted(whole, key=lambda i: (i.deadline, i.opened_seq))
    assert expected  # referrals and held decisions: a person's items
    monkeypatch.setattr(credit.casework, "LIFE_PAGE", 3)
    assert work.queue(finish=False) == expected
    assert work.queue() == expected  # nothing pending: the same items
