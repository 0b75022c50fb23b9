"""Group commit: a batch of work written in one transaction, on SQLite and PostgreSQL.

Inside ``store.group_commit(...)`` every write lands in one transaction (the journal's
write lock held from its start) and reads see the group's own writes; when the block
ends the rows are written together and committed once. A block that raises keeps
nothing, and the journal goes on from where it stood. What a group writes is exactly
what the same work writes one entry at a time.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import auto_case, card_case
from credit.examples import generate_cases
from credit.journal import DecisionAlreadyRecordedError, JournalError, SqlStore, open_store
from credit.journal.base import StaleCaseError
from credit.kinds import DECISION_KINDS
from credit.notices import DirectoryOutbox
from credit.pipeline import BatchLine, Pipeline
from test_journal_store import sql_backend


@pytest.fixture(params=("sqlite", "postgresql"))
def sql(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[SqlStore, str]]:
    with sql_backend(request.param, tmp_path) as (store, url, schema):
        yield store, (url if schema is None else f"{url}?schema={schema}")


DECISION: dict[str, Any] = {"decision": "approve", "dtiPct": Decimal("31.0")}


class Planted(Exception):
    pass


def test_what_a_group_writes_is_read_inside_it_and_kept_once_it_ends(
    sql: tuple[SqlStore, str],
) -> None:
    store, url = sql
    store.append("A", "intake.accepted", {"n": 1})  # committed before the group
    with store.group_commit(["A", "B"]):
        store.put_case("B", {"caseId": "B"})
        store.put_monitoring("B", {"sex": "F"})
        first = store.append("B", "intake.accepted", {"n": Decimal("2.50")})
        decided = store.record_decision("B", DECISION)
        later = store.append("A", "note", {"n": 3}, after=1)
        # reads inside the group see its writes, in chain order
        assert [e.seq for e in store.entries("B")] == [first.seq, decided.seq]
        assert store.last_seq("A") == later.seq == 4
        assert store.decision_entry("B") == decided
        assert store.get_case("B") == {"caseId": "B"}
        assert store.get_monitoring("B") == {"sex": "F"}
        assert [e.seq for e in store.authentic_entries("A")] == [1, 4]
        assert len(store.entries()) == 4  # a read of the whole journal sees them too
    with open_store(url, create=False) as other:  # another connection: all committed
        assert [(e.seq, e.case_id, e.kind) for e in other.entries()] == [
            (1, "A", "intake.accepted"),
            (2, "B", "intake.accepted"),
            (3, "B", "decision.recorded"),
            (4, "A", "note"),
        ]
        assert other.entries("B")[0].payload == {"n": Decimal("2.50")}
        assert other.get_case("B") == {"caseId": "B"}
        assert other.decision_entry("B") == decided
        assert other.audit().ok


def test_a_group_that_raises_keeps_nothing_and_the_journal_goes_on(
    sql: tuple[SqlStore, str],
) -> None:
    store, _ = sql
    store.append("A", "intake.accepted", {"n": 1})
    head = store.tree_head()
    with pytest.raises(Planted), store.group_commit(["B"]):
        store.put_case("B", {"caseId": "B"})
        store.put_monitoring("B", {"sex": "F"})
        store.append("B", "intake.accepted", {"n": 2})
        store.record_decision("B", DECISION)
        raise Planted
    assert [e.seq for e in store.entries()] == [1]
    assert store.get_case("B") is None and store.get_monitoring("B") is None
    assert store.decision_entry("B") is None
    assert store.tree_head() == head
    # the next entry links to the last one kept, and the tree grows from it
    assert store.append("B", "intake.accepted", {"n": 2}).seq == 2
    assert store.record_decision("B", DECISION).seq == 3
    assert store.audit().ok


def test_inside_a_group_a_decision_is_still_recorded_once_and_a_stale_write_refused(
    sql: tuple[SqlStore, str],
) -> None:
    store, _ = sql
    store.record_decision("A", DECISION)  # committed before the group
    with store.group_commit(["A", "B"]):
        with pytest.raises(DecisionAlreadyRecordedError):
            store.record_decision("A", DECISION)
        store.record_decision("B", DECISION)
        with pytest.raises(DecisionAlreadyRecordedError):
            store.record_decision("B", DECISION)
        with pytest.raises(StaleCaseError):
            store.append("A", "note", {}, after=0)
        assert store.put_case("B", {"caseId": "B"}) is True
        assert store.put_case("B", {"caseId": "other"}) is False
    assert len(store.entries()) == 2 and store.audit().ok


def test_a_group_inside_a_group_joins_it_and_no_checkpoint_is_signed_inside(
    sql: tuple[SqlStore, str], tmp_path: Path
) -> None:
    store, _ = sql
    with pytest.raises(Planted), store.group_commit():
        store.append("A", "one", {})
        with store.group_commit():
            store.append("A", "two", {})
        with pytest.raises(JournalError, match="after the group commits"):
            store.checkpoint(tmp_path / "checkpoints")
        raise Planted  # the inner group's entry goes with the outer one
    assert store.entries() == []
    with store.group_commit():
        store.append("A", "one", {})
    assert store.checkpoint(tmp_path / "checkpoints").is_file()


def test_a_case_first_read_inside_the_group_is_read_from_the_database(
    sql: tuple[SqlStore, str],
) -> None:
    store, _ = sql
    store.put_case("A", {"caseId": "A"})
    store.append("A", "intake.accepted", {"n": 1})
    store.put_monitoring("A#applicant", {"age": 40})
    with store.group_commit():  # no cases named up front
        assert store.get_case("A") == {"caseId": "A"}
        assert store.get_monitoring("A#applicant") == {"age": 40}
        assert store.last_seq("A") == 1
        store.append("A", "note", {}, after=1)
    assert [e.kind for e in store.entries("A")] == ["intake.accepted", "note"]


def test_a_group_reads_the_vault_rows_of_its_cases_with_their_entries_in_one_query(
    sql: tuple[SqlStore, str],
) -> None:
    from sqlalchemy import event

    store, _ = sql
    store.put_monitoring("A", {"sex": "F"})
    store.put_monitoring("A#coApplicant", {"age": 51})
    vault_reads: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT") and "monitoring" in statement:
            vault_reads.append(statement)

    event.listen(store._engine, "before_cursor_execute", count)
    try:
        with store.group_commit(["A", "B", "C"]):
            assert len(vault_reads) == 1  # the three cases' rows, read up front
            assert store.get_monitoring("A") == {"sex": "F"}
            assert store.get_monitoring("B") is None
            assert store.put_monitoring("C", {"age": 30}) is True
            assert store.put_monitoring("A", {"sex": "M"}) is False  # already in the vault
            assert len(vault_reads) == 1
            assert store.get_monitoring("A#coApplicant") == {"age": 51}  # not a case id
            assert len(vault_reads) == 2
    finally:
        event.remove(store._engine, "before_cursor_execute", count)
    assert store.get_monitoring("C") == {"age": 30}
    assert store.get_monitoring("A") == {"sex": "F"}


def test_the_next_group_starts_from_the_last_ones_views_only_if_no_one_appended_since(
    sql: tuple[SqlStore, str],
) -> None:
    store, url = sql
    with store.group_commit(["A"]):
        store.put_case("A", {"caseId": "A"})
        store.append("A", "intake.accepted", {"n": 1})
    with store.group_commit(["A"]):  # no one wrote since: the views are the journal's
        assert [e.kind for e in store.entries("A")] == ["intake.accepted"]
        store.append("A", "note", {"n": 2}, after=1)
    with open_store(url, create=False) as other:  # another writer appends to A
        other.append("A", "elsewhere", {"n": 3}, after=2)
    with store.group_commit(["A"]):  # the head moved: A is read again, with its entry
        assert [e.kind for e in store.entries("A")] == ["intake.accepted", "note", "elsewhere"]
        assert store.last_seq("A") == 3
        with pytest.raises(StaleCaseError):
            store.append("A", "stale", {}, after=2)
        store.append("A", "after", {}, after=3)
    assert [e.kind for e in store.entries("A")][-1] == "after"


def test_a_group_that_raises_hands_nothing_on_to_the_next(sql: tuple[SqlStore, str]) -> None:
    store, _ = sql
    with store.group_commit(["A"]):
        store.append("A", "intake.accepted", {"n": 1})
    with pytest.raises(Planted), store.group_commit(["A"]):
        store.append("A", "lost", {}, after=1)
        raise Planted
    with store.group_commit(["A"]):  # the rolled-back entry is in no view
        assert [e.kind for e in store.entries("A")] == ["intake.accepted"]
        assert store.last_seq("A") == 1
        store.append("A", "kept", {}, after=1)
    assert [e.kind for e in store.entries("A")] == ["intake.accepted", "kept"]
    assert store.verify().ok


def test_a_group_whose_rows_bypassed_its_views_hands_none_on(sql: tuple[SqlStore, str]) -> None:
    store, _ = sql
    with store.group_commit(["A"]):
        store.append("A", "intake.accepted", {"n": 1})
        with store._write() as conn:  # the SQL path, as a write the group has no view of
            store._append_locked(conn, "A", "note", {"n": 2})
    assert store._carried is None
    with store.group_commit(["A"]):
        assert [e.kind for e in store.entries("A")] == ["intake.accepted", "note"]


def test_views_are_not_handed_on_past_their_bound(
    sql: tuple[SqlStore, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import credit.journal.sql as sql_module

    monkeypatch.setattr(sql_module, "CARRIED_VIEWS", 2)
    store, _ = sql
    with store.group_commit(["A", "B", "C"]):
        for n, case_id in enumerate("ABC", start=1):
            store.append(case_id, "intake.accepted", {"n": n})
    carried = store._carried
    assert carried is not None and list(carried.views) == ["B", "C"]  # the oldest went first
    with store.group_commit(["A"]):  # A is read from the database again
        assert [e.payload for e in store.entries("A")] == [{"n": 1}]


def test_each_view_handed_on_holds_its_cases_last_committed_seq(
    sql: tuple[SqlStore, str],
) -> None:
    """A view a group hands on says how far its case was committed: the cases a group
    appended to as they stand after it, those it only read as they were read, and a
    deferred group's own entries at the places its commit gave them (after another
    writer's)."""
    store, url = sql

    def handed_on() -> dict[str, int]:
        carried = store._carried
        assert carried is not None
        for view in carried.views.values():  # each as its entries end
            assert view.committed_seq == (view.entries[-1].seq if view.entries else 0)
        return {case_id: view.committed_seq for case_id, view in carried.views.items()}

    with store.group_commit(["A", "B"]):
        store.append("A", "intake.accepted", {"n": 1})
        store.append("B", "intake.accepted", {"n": 2})
    assert handed_on() == {"A": 1, "B": 2}
    with store.group_commit(["A", "B"]):
        store.entries("B")  # read only
        store.append("A", "note", {"n": 3}, after=1)
    assert handed_on() == {"A": 3, "B": 2}
    with store.group_commit(["A", "B"], deferred=True):
        store.entries("B")
        store.append("A", "note", {"n": 4}, after=3)  # at 4 in the group
        with open_store(url, create=False) as other:  # another writer commits first
            other.append("C", "intake.accepted", {"n": 5})
    assert [e.payload for e in store.entries("A")][-1] == {"n": 4}
    assert store.last_seq("A") == 5
    assert handed_on() == {"A": 5}  # B, only read, is read again by the next group


def test_the_pipeline_in_one_group_writes_what_it_writes_entry_by_entry(
    tmp_path: Path,
) -> None:
    documents = [*generate_cases(11, 40), auto_case(case_id="G-AUTO"), card_case(case_id="G-CARD")]
    lines = [BatchLine(i, d) for i, d in enumerate(documents, start=1)]
    journals = {}
    for mode in ("entry by entry", "group"):
        with open_store(f"sqlite:///{tmp_path / mode}.db") as store:
            pipeline = Pipeline(store, DirectoryOutbox(tmp_path / mode))
            if mode == "group":
                with store.group_commit([d["caseId"] for d in documents]):
                    summary = pipeline.run(lines)
            else:
                summary = pipeline.run(lines)
            assert summary.decided == len(documents) and not summary.failures
            assert store.audit().ok
            journals[mode] = [
                (e.case_id, e.kind, {k: v for k, v in e.payload.items() if k != "turn"})
                for e in store.entries()
            ]
    plain, grouped = journals["entry by entry"], journals["group"]
    assert [(c, k) for c, k, _ in plain] == [(c, k) for c, k, _ in grouped]
    assert plain == grouped or _differ_only_in_turn_ids(plain, grouped)


def _differ_only_in_turn_ids(a: list[Any], b: list[Any]) -> bool:
    """Each turn has a fresh id, which other entries quote, and a decision's content name
    (its decisionId) covers its turn's id, so each decisionId is compared as the place of
    its decision in the run; nothing else may differ."""

    def scrub(value: Any, places: dict[str, str]) -> Any:
        if isinstance(value, dict):
            return {
                k: scrub(v, places) for k, v in value.items() if k not in ("turn", "recordedAt")
            }
        if isinstance(value, (list, tuple)):
            return [scrub(v, places) for v in value]
        return places.get(value, value) if isinstance(value, str) else value

    def named(entries: list[Any]) -> Any:
        places: dict[str, str] = {}
        for _case, kind, payload in entries:
            if kind in DECISION_KINDS:
                places[payload["decisionId"]] = f"decision {len(places)}"
        return scrub(entries, places)

    return named(a) == named(b)


KINDS = ("a.one", "b.two", "c.three", "d.four")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    appended=st.lists(st.sampled_from(KINDS), min_size=1, max_size=30),
    reads=st.lists(
        st.tuples(
            st.one_of(st.none(), st.lists(st.sampled_from(KINDS), min_size=1, max_size=3)),
            st.integers(min_value=0, max_value=40),
        ),
        min_size=1,
        max_size=6,
    ),
)
def test_a_reader_caught_up_inside_a_group_reads_what_the_journal_then_holds(
    appended: list[str], reads: list[tuple[list[str] | None, int]]
) -> None:
    """An incremental reader of some kinds (the comparison pool) inside a group is
    served from the group's own entries by kind; it reads exactly what the same query
    reads from the committed journal, in seq order."""
    with tempfile.TemporaryDirectory() as folder, open_store(f"sqlite:///{folder}/j.db") as store:
        store.append("X", "z.before", {})  # one committed entry: the group starts at 1
        inside: list[list[tuple[int, str]]] = []
        with store.group_commit(["X"]):
            for i, kind in enumerate(appended):
                store.append("X" if i % 2 else "Y", kind, {"i": i})
            for kinds, after in reads:
                inside.append(
                    [(e.seq, e.kind) for e in store.entries(kinds=kinds, after_seq=after + 1)]
                )
        for (kinds, after), got in zip(reads, inside, strict=True):
            committed = store.entries(kinds=kinds, after_seq=after + 1)
            assert got == [(e.seq, e.kind) for e in committed]
