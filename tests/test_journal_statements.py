"""The journal's frequent reads run statements built once per store, their values bound
at each call (``credit.journal.sql._Statements``): the same answers as the statements
they replaced, on every shape of read, and no statement built again on the paths a run
and the service take for every case.

Building a SELECT with its IN list and ORDER BY again for every read cost about 60 us
in SQLAlchemy, more than SQLite's own work for most of them."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import credit.journal.sql as journal_sql
from credit.journal import SqlStore, open_store
from credit.journal.base import Entry
from credit.kinds import DECISION_RECORDED as DECISION_KIND
from credit.kinds import INTAKE_ACCEPTED, NOTICE_SENT
from test_journal_pages import _run
from test_journal_store import sql_backend

KINDS = (INTAKE_ACCEPTED, DECISION_KIND, NOTICE_SENT, "guard.redacted", "no.such.kind")


@pytest.fixture(scope="module")
def journal() -> Iterator[SqlStore]:
    """A SQLite journal a run of 40 generated cases left (read only by these tests)."""
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(f"sqlite:///{Path(folder) / 'journal.db'}")
        _run(store, Path(folder))
        try:
            yield store
        finally:
            store.close()


def _wanted(
    every: list[Entry],
    case_id: str | None,
    kinds: list[str] | None,
    after_seq: int,
    limit: int | None,
) -> list[Entry]:
    """What ``entries(...)`` names, picked out of every entry in Python."""
    found = [
        e
        for e in every
        if e.seq > after_seq
        and (case_id is None or e.case_id == case_id)
        and (kinds is None or e.kind in kinds)
    ]
    return found if limit is None else found[: max(limit, 0)]


@settings(max_examples=120, deadline=None)
@given(data=st.data())
def test_every_shape_of_a_read_of_entries_gives_the_entries_it_names(
    journal: SqlStore, data: st.DataObject
) -> None:
    every = journal.entries()
    cases = journal.case_ids()
    case_id = data.draw(st.none() | st.sampled_from([*cases[:5], "NEVER-TAKEN-IN"]))
    kinds = data.draw(st.none() | st.lists(st.sampled_from(KINDS), max_size=3, unique=True))
    after_seq = data.draw(st.sampled_from([0, 1, len(every) // 2, len(every), len(every) + 5]))
    limit = data.draw(st.none() | st.integers(min_value=-1, max_value=len(every) + 1))
    got = journal.entries(case_id, kinds, after_seq, limit)
    assert got == _wanted(every, case_id, kinds, after_seq, limit)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_the_bound_reads_answer_as_before_on_both_databases(backend: str, tmp_path: Path) -> None:
    """Each edge of each read, on SQLite and PostgreSQL: an empty list of cases or kinds,
    a limit of 0, a seq past the head, a case never taken in."""
    with sql_backend(backend, tmp_path) as (store, url, schema):
        _run(store, tmp_path, cases=6)
        every = store.entries()
        ids = store.case_ids()
        first = ids[0]
        for case_id in (None, first, "NEVER-TAKEN-IN"):
            for kinds in (None, [], [DECISION_KIND], [INTAKE_ACCEPTED, NOTICE_SENT]):
                for after_seq in (0, 3, len(every)):
                    for limit in (None, 0, 2):
                        got = store.entries(case_id, kinds, after_seq, limit)
                        assert got == _wanted(every, case_id, kinds, after_seq, limit)
        assert store.case_entries([]) == {}
        assert store.case_files([]) == {}
        assert store.case_entries([first], []) == {}
        by_case = store.case_entries([first, "NEVER-TAKEN-IN"])
        assert list(by_case) == [first] and by_case[first] == store.authentic_entries(first)
        assert store.last_seq(first) == max(e.seq for e in every if e.case_id == first)
        assert store.last_seq("NEVER-TAKEN-IN") == 0
        assert store.get_case("NEVER-TAKEN-IN") is None
        assert store.get_monitoring("NEVER-TAKEN-IN") is None
        assert store.leaf_hashes() == [e.leaf_hash() for e in every]
        assert store.leaf_hashes(3) == [e.leaf_hash() for e in every[:3]]
        # a group's load of its cases (one statement over four tables) reads the same
        plain = {
            c: (store.get_case(c), store.authentic_entries(c), store.get_monitoring(c))
            for c in [*ids, "NEVER-TAKEN-IN"]
        }
        decided = {c: store.decision_entry(c) for c in ids}
        # a store new to the journal: no group of its own handed it views to start from
        with (
            open_store(url, schema=schema, create=False, key=store.key) as fresh,
            fresh.group_commit([*ids, "NEVER-TAKEN-IN"]),
        ):
            for case_id, (document, entries, vault) in plain.items():
                assert fresh.get_case(case_id) == document
                assert fresh.authentic_entries(case_id) == entries
                assert fresh.get_monitoring(case_id) == vault
            assert {c: fresh.decision_entry(c) for c in ids} == decided
        assert plain["NEVER-TAKEN-IN"] == (None, [], None)
        assert any(vault is not None for _, _, vault in plain.values())
        assert any(entry is not None for entry in decided.values())


class _Counted:
    """``select`` as the store module calls it, counting each statement built."""

    def __init__(self) -> None:
        self.built = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.built += 1
        return _SELECT(*args, **kwargs)


_SELECT = journal_sql.select


def test_the_reads_a_case_takes_build_no_statement_again(
    journal: SqlStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A group's load of its cases, a case's document, vault row, files, entries and
    decision, a page of entries, the head and the tree: none builds a SELECT; a read
    that is not on that path still does (so the probe counts)."""
    ids = journal.case_ids()
    counted = _Counted()
    monkeypatch.setattr(journal_sql, "select", counted)
    with journal.group_commit(ids[:3]):
        journal.get_case(ids[0])
        journal.entries(ids[1])
    journal.get_case(ids[3])
    journal.get_monitoring(ids[3])
    journal.case_files(ids[3:6])
    journal.case_entries(ids[3:6])
    journal.case_entries(ids[3:6], [DECISION_KIND])
    journal.entries(ids[4], [DECISION_KIND], after_seq=1, limit=5)
    journal.last_seq(ids[5])
    journal.authentic_entries(ids[5])
    journal.case_standing(ids[5])
    journal.decision_entry(ids[5])
    journal.tree_head()
    journal.leaf_hashes(10)
    assert counted.built == 0
    journal.case_ids()  # built at each call (once a run)
    assert counted.built == 1
