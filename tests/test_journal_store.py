"""The Store contract, run over every backend, and what the SQL store adds to it.

Backends: the in-memory reference store, SQLite (a file under tmp_path) and PostgreSQL
(``$CREDIT_TEST_DATABASE_URL``; each test gets its own schema, dropped afterwards).
Without that variable the PostgreSQL cases skip; with it set and the server down they
fail. The helpers here (``pg_url``, ``pg_schema``, ``raw_sql``) serve the other
journal test modules too.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import os
import sqlite3
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from credit.canonical import canonical_bytes, dumps, normal_form
from credit.journal import (
    DECISION_KIND,
    GENESIS_HASH,
    DecisionAlreadyRecordedError,
    InMemoryStore,
    JournalError,
    SqlStore,
    Store,
    entry_hash,
    open_store,
)
from credit.kept import ReadOnlyDict

PG_ENV = "CREDIT_TEST_DATABASE_URL"
BACKENDS = ("memory", "sqlite", "postgresql")


# ------------------------------------------------------------------ shared helpers


def _engine_url(url: str) -> str:
    return url.replace("postgresql://", "postgresql+psycopg://", 1)


@functools.cache
def _unreachable(url: str) -> str | None:
    engine = create_engine(_engine_url(url), connect_args={"connect_timeout": 5})
    try:
        with engine.connect():
            return None
    except Exception as e:
        return str(e).splitlines()[0]
    finally:
        engine.dispose()


def pg_url() -> str:
    """The test server's URL. Skips the calling test when none is configured; fails it
    when one is configured and cannot be reached."""
    url = os.environ.get(PG_ENV)
    if not url:
        pytest.skip(f"{PG_ENV} is not set (PostgreSQL tests skip)")
    problem = _unreachable(url)
    if problem is not None:
        pytest.fail(f"{PG_ENV}={url} is set but unreachable: {problem}", pytrace=False)
    return url


@contextmanager
def pg_schema() -> Iterator[tuple[str, str]]:
    """(url, schema): a fresh schema name on the test server, dropped afterwards."""
    url = pg_url()
    schema = f"credit_test_{uuid.uuid4().hex[:16]}"
    try:
        yield url, schema
    finally:
        engine = create_engine(_engine_url(url))
        try:
            with engine.begin() as conn:
                conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        finally:
            engine.dispose()


def raw_sql(url: str, schema: str | None, *statements: str) -> None:
    """Run statements straight against the database, behind the store's back."""
    engine = create_engine(_engine_url(url))
    try:
        with engine.begin() as conn:
            if schema is not None:
                conn.exec_driver_sql(f'SET LOCAL search_path TO "{schema}"')
            for statement in statements:
                conn.exec_driver_sql(statement)
    finally:
        engine.dispose()


@contextmanager
def sql_backend(kind: str, tmp_path: Path) -> Iterator[tuple[SqlStore, str, str | None]]:
    """(store, url, schema) for ``sqlite`` or ``postgresql``; closed afterwards."""
    if kind == "sqlite":
        url = f"sqlite:///{tmp_path / 'journal.db'}"
        with open_store(url) as store:
            yield store, url, None
    else:
        with pg_schema() as (url, schema), open_store(url, schema=schema) as store:
            yield store, url, schema


@contextmanager
def any_store(kind: str, tmp_path: Path) -> Iterator[Store]:
    """A fresh store of each kind in ``BACKENDS``: in memory, or as :func:`sql_backend`
    opens it."""
    if kind == "memory":
        yield InMemoryStore()
        return
    with sql_backend(kind, tmp_path) as (sql_store, _, _):
        yield sql_store


class FixedClock:
    def __init__(self) -> None:
        self.ticks = 0

    def now(self) -> dt.datetime:
        self.ticks += 1
        return dt.datetime(2026, 11, 30, 12, 0, self.ticks, tzinfo=dt.UTC)


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    with any_store(request.param, tmp_path) as opened:
        yield opened


@pytest.fixture(params=("sqlite", "postgresql"))
def sql(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[SqlStore, str, str | None]]:
    with sql_backend(request.param, tmp_path) as backend:
        yield backend


DECISION: dict[str, Any] = {
    "decision": "approve",
    "terms": {"apr": Decimal("6.49"), "amount": Decimal("28000.00"), "termMonths": 60},
    "dtiPct": Decimal("31.0"),
    "factors": [],
}


# ------------------------------------------------------------------ the Store contract


def test_an_appended_entry_comes_back_with_its_seq_hash_and_exact_decimals(store: Store) -> None:
    entry = store.append("C-1", "intake.accepted", {"income": Decimal("120000.00"), "n": 7})
    assert entry.seq == 1
    assert entry.prev_hash == GENESIS_HASH
    assert entry.hash == entry_hash(GENESIS_HASH, entry.body())
    [read] = store.entries()
    assert read == entry
    assert str(read.payload["income"]) == "120000.00"
    assert read.payload["n"] == 7


def test_each_entry_links_to_the_hash_of_the_entry_before_it(store: Store) -> None:
    first = store.append("C-1", "intake.accepted", {})
    second = store.append(None, "batch.started", {"size": 2})
    third = store.append("C-2", "intake.accepted", {})
    assert [e.seq for e in store.entries()] == [1, 2, 3]
    assert (second.prev_hash, third.prev_hash) == (first.hash, second.hash)
    assert second.case_id is None


def test_entries_filter_by_case_and_by_kinds_in_chain_order(store: Store) -> None:
    store.append("C-1", "intake.accepted", {})
    store.append("C-2", "intake.accepted", {})
    store.append("C-1", "review.passed", {})
    store.record_decision("C-1", DECISION)
    assert [e.seq for e in store.entries(case_id="C-1")] == [1, 3, 4]
    assert [e.seq for e in store.entries(kinds=["intake.accepted"])] == [1, 2]
    assert [e.seq for e in store.entries("C-1", ["review.passed", DECISION_KIND])] == [3, 4]
    assert store.entries(case_id="C-9") == []
    assert store.entries(kinds=[]) == []


def test_entries_after_a_sequence_number_read_the_journal_incrementally(store: Store) -> None:
    for i in range(1, 6):
        store.append(f"C-{i % 2}", "intake.accepted", {"i": i})
    assert [e.seq for e in store.entries(after_seq=3)] == [4, 5]
    assert [e.seq for e in store.entries(case_id="C-1", after_seq=1)] == [3, 5]
    assert store.entries(after_seq=5) == []
    assert [e.seq for e in store.entries(after_seq=0)] == [1, 2, 3, 4, 5]


def test_a_decision_entry_cannot_be_appended_around_record_decision(store: Store) -> None:
    with pytest.raises(JournalError) as caught:
        store.append("C-1", DECISION_KIND, DECISION)
    assert str(caught.value) == "case C-1: decisions are recorded through record_decision"
    assert store.entries() == []


def test_a_decision_is_recorded_once_and_a_second_attempt_changes_nothing(store: Store) -> None:
    store.append("C-1", "intake.accepted", {})
    entry = store.record_decision("C-1", DECISION)
    assert (entry.seq, entry.kind, entry.case_id) == (2, DECISION_KIND, "C-1")
    assert entry.payload == DECISION
    with pytest.raises(DecisionAlreadyRecordedError) as caught:
        store.record_decision("C-1", {**DECISION, "decision": "decline"})
    assert str(caught.value) == "case C-1: a decision is already recorded (entry 2)"
    assert caught.value.case_id == "C-1"
    assert [e.seq for e in store.entries()] == [1, 2]
    assert store.decision_entry("C-1") == entry
    assert store.verify().ok


def test_decision_entry_names_the_decision_and_is_none_for_an_undecided_case(store: Store) -> None:
    store.append("C-1", "intake.accepted", {})
    entry = store.record_decision("C-1", DECISION)
    store.append("C-1", "notice.sent", {})
    assert store.decision_entry("C-1") == entry
    assert store.decision_entry("C-2") is None


def test_put_case_stores_a_document_once_and_keeps_the_first(store: Store) -> None:
    document = {"caseId": "C-1", "application": {"annualIncome": Decimal("120000.00")}}
    assert store.put_case("C-1", document) is True
    assert store.put_case("C-1", {"caseId": "C-1", "changed": True}) is False
    assert store.get_case("C-1") == document
    assert store.get_case("C-2") is None


def test_a_document_in_its_normal_form_is_stored_as_it_reads_back(store: Store) -> None:
    # intake hands the store its case document as normal_form gave it
    normal = normal_form({"caseId": "C-1", "asOf": dt.date(2026, 11, 30), "apr": Decimal("6.49")})
    assert store.put_case("C-1", normal) is True
    assert store.put_case("C-1", normal_form({"caseId": "C-1", "changed": True})) is False
    assert store.get_case("C-1") == {"caseId": "C-1", "asOf": "2026-11-30", "apr": Decimal("6.49")}
    assert store.put_monitoring("C-1", normal_form({"age": 61, "sex": "F"})) is True
    assert store.put_monitoring("C-1", normal_form({"sex": "M"})) is False
    assert store.get_monitoring("C-1") == {"age": 61, "sex": "F"}


@pytest.mark.parametrize("grouped", [False, True], ids=["alone", "in-a-group"])
def test_a_stored_document_is_read_only_and_in_a_group_the_same_object_each_read(
    store: Store, grouped: bool
) -> None:
    """What a case's readers may keep by the document (its parse, stored_case) holds
    only while nobody can change it: the store hands it read-only, and in a group (and
    in memory) the same object each time, so the group's readers share one parse."""
    in_group = grouped and isinstance(store, SqlStore)  # (the in-memory store: alone)
    with (
        store.group_commit(["C-1"])
        if isinstance(store, SqlStore) and in_group
        else contextlib.nullcontext()
    ):
        store.put_case("C-1", normal_form({"caseId": "C-1", "application": {"x": 1}}))
        first = store.get_case("C-1")
        assert first == {"caseId": "C-1", "application": {"x": 1}}
        assert isinstance(first, ReadOnlyDict)
        with pytest.raises(TypeError):
            first["caseId"] = "C-2"  # type: ignore[index]
        if in_group or isinstance(store, InMemoryStore):
            assert store.get_case("C-1") is first
    again = store.get_case("C-1")
    assert isinstance(again, ReadOnlyDict) and again == first


def _stored_document(url: str, schema: str | None) -> str:
    engine = create_engine(_engine_url(url))
    try:
        with engine.connect() as conn:
            table = f'"{schema}".cases' if schema else "cases"
            query = text(f"SELECT document FROM {table} WHERE case_id = 'C-1'")
            stored: str = conn.execute(query).scalar_one()
            return stored
    finally:
        engine.dispose()


@pytest.mark.parametrize("grouped", [False, True], ids=["alone", "in-a-group"])
def test_a_normal_form_s_text_is_stored_as_it_is_and_a_mapping_is_written(
    sql: tuple[SqlStore, str, str | None], monkeypatch: pytest.MonkeyPatch, grouped: bool
) -> None:
    store, url, schema = sql
    normal = normal_form({"caseId": "C-1", "b": Decimal("2.50"), "a": [1, None]})
    written: list[object] = []

    def counted(value: object, *, sort_keys: bool = False) -> str:
        written.append(value)
        return dumps(value, sort_keys=sort_keys)

    monkeypatch.setattr("credit.journal.sql.dumps", counted)
    with store.group_commit(["C-1", "C-2"]) if grouped else contextlib.nullcontext():
        assert store.put_case("C-1", normal) is True
        assert written == []  # the text intake wrote is not written again
        assert store.get_case("C-1") == normal.value
        assert store.put_case("C-2", {"caseId": "C-2"}) is True
        assert written == [{"caseId": "C-2"}]  # any other document is
        assert store.put_monitoring("C-1", normal_form({"sex": "F", "age": 61})) is True
        assert store.put_monitoring("C-2", {"sex": "M"}) is True
        assert written == [{"caseId": "C-2"}, {"sex": "M"}]  # a vault row alike
        assert store.get_monitoring("C-1") == {"age": 61, "sex": "F"}
    assert _stored_document(url, schema) == normal.text


def test_case_ids_lists_the_stored_cases_in_the_order_they_were_stored(store: Store) -> None:
    for case_id in ("C-3", "C-1", "C-2"):
        store.put_case(case_id, {"caseId": case_id})
    store.put_case("C-1", {"again": True})
    assert store.case_ids() == ["C-3", "C-1", "C-2"]


def test_monitoring_data_is_kept_apart_and_read_only_through_get_monitoring(store: Store) -> None:
    store.put_case("C-1", {"caseId": "C-1"})
    assert store.put_monitoring("C-1", {"sex": "F", "age": 61}) is True
    assert store.put_monitoring("C-1", {"sex": "M"}) is False
    assert store.get_monitoring("C-1") == {"sex": "F", "age": 61}
    assert store.get_monitoring("C-2") is None
    assert store.get_case("C-1") == {"caseId": "C-1"}
    assert store.entries() == []
    assert store.case_ids() == ["C-1"]


def test_an_empty_journal_verifies_with_no_entries_and_the_genesis_head(store: Store) -> None:
    report = store.verify()
    assert (report.ok, report.entries, report.head, report.first_broken_seq) == (
        True,
        0,
        GENESIS_HASH,
        None,
    )


def test_a_sound_chain_verifies_with_its_last_hash_as_head(store: Store) -> None:
    store.append("C-1", "intake.accepted", {"x": Decimal("0.10")})
    store.record_decision("C-1", DECISION)
    last = store.append("C-1", "notice.sent", {"reasons": ["R1", "R2"]})
    report = store.verify()
    assert (report.ok, report.entries, report.head) == (True, 3, last.hash)


# ------------------------------------------------------------------ the SQL store


def test_a_reopened_sqlite_journal_reads_back_the_same_chain_with_exact_decimals(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'j.db'}"
    payload = {"apr": Decimal("6.490"), "amount": Decimal("28000.00"), "big": Decimal("1E+3")}
    with open_store(url, clock=FixedClock()) as store:
        first = store.append("C-1", "intake.accepted", payload)
        decision = store.record_decision("C-1", DECISION)
        store.put_case("C-1", {"amount": Decimal("28000.00")})
    with open_store(url) as reopened:
        assert reopened.entries() == [first, decision]
        assert str(reopened.entries()[0].payload["apr"]) == "6.490"
        assert str(reopened.get_case("C-1") or {}) == "{'amount': Decimal('28000.00')}"
        assert reopened.decision_entry("C-1") == decision
        assert reopened.verify().ok
        assert first.recorded_at == "2026-11-30T12:00:01+00:00"


def test_payloads_are_stored_as_canonical_json_text_with_sorted_keys(
    sql: tuple[SqlStore, str, str | None],
) -> None:
    store, url, schema = sql
    store.append("C-1", "k", {"b": Decimal("2.50"), "a": [1, {"d": None, "c": True}]})
    engine = create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.connect() as conn:
            table = f'"{schema}".journal_entries' if schema else "journal_entries"
            stored = conn.execute(text(f"SELECT payload FROM {table}")).scalar_one()
    finally:
        engine.dispose()
    assert stored == '{"a":[1,{"c":true,"d":null}],"b":2.50}'
    assert stored.encode() == canonical_bytes(
        {"b": Decimal("2.50"), "a": [1, {"d": None, "c": True}]}
    )


def test_a_float_payload_is_hashed_in_its_stored_form_so_the_chain_still_verifies(
    sql: tuple[SqlStore, str, str | None],
) -> None:
    store, _, _ = sql
    entry = store.append("C-1", "k", {"tiny": 1e-07, "huge": 1e20, "half": 0.5})
    assert entry.payload == {"tiny": Decimal("1E-7"), "huge": Decimal("1E+20"), "half": 0.5}
    assert store.entries() == [entry]
    assert store.verify().ok


def test_open_store_without_a_url_reads_credit_database_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CREDIT_DATABASE_URL", f"sqlite:///{tmp_path / 'env.db'}")
    with open_store() as store:
        store.append(None, "k", {})
    assert (tmp_path / "env.db").is_file()


def test_open_store_without_a_url_or_variable_uses_credit_db_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CREDIT_DATABASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    with open_store() as store:
        assert store.url == "sqlite:///credit.db"
    assert (tmp_path / "credit.db").is_file()


def test_a_sqlite_journal_runs_in_wal_mode_with_full_synchronous_commits(tmp_path: Path) -> None:
    with open_store(f"sqlite:///{tmp_path / 'j.db'}") as store, store._engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 2  # FULL
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 60000


def test_a_database_failure_in_a_store_block_is_a_journal_error_naming_the_store(
    tmp_path: Path,
) -> None:
    """A driver's failure becomes a JournalError naming the store, the driver's error its
    cause; a conflict (IntegrityError) is left as it is, for the caller that knows what it
    means; anything else passes through; and one store's blocks may nest."""
    from sqlalchemy.exc import IntegrityError, OperationalError

    with open_store(f"sqlite:///{tmp_path / 'j.db'}") as store:
        assert isinstance(store, SqlStore)
        driver = OperationalError("SELECT 1", {}, sqlite3.OperationalError("disk I/O error"))
        with pytest.raises(JournalError) as failed, store._failures():
            raise driver
        assert str(failed.value) == f"the journal store {store.url} failed: disk I/O error"
        assert failed.value.__cause__ is driver
        conflict = IntegrityError("INSERT", {}, sqlite3.IntegrityError("UNIQUE"))
        with pytest.raises(IntegrityError) as kept, store._failures():
            raise conflict
        assert kept.value is conflict
        with pytest.raises(KeyError), store._failures(), store._failures():
            raise KeyError("not the database's")
        with store._failures():
            pass  # nothing raised: nothing to say


def test_an_in_memory_sqlite_journal_is_one_database_shared_by_every_thread() -> None:
    with open_store("sqlite://") as store:
        threads = [
            threading.Thread(target=store.append, args=(f"C-{i}", "k", {})) for i in range(8)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(store.entries()) == 8
        assert store.verify().ok


def test_a_postgresql_url_is_served_by_the_psycopg_3_driver() -> None:
    with pytest.raises(JournalError) as caught:
        open_store("postgresql://postgres@127.0.0.1:1/test")
    message = str(caught.value)
    assert message.startswith("the journal store postgresql+psycopg://postgres@127.0.0.1:1/test")
    assert "failed: connection failed" in message


def test_a_password_in_the_url_is_never_shown_in_an_error() -> None:
    with pytest.raises(JournalError) as caught:
        open_store("postgres://postgres:s3cret@127.0.0.1:1/test")
    assert "s3cret" not in str(caught.value)
    assert "postgresql+psycopg://postgres:***@127.0.0.1:1/test" in str(caught.value)


@pytest.mark.parametrize(
    ("url", "schema", "message"),
    [
        (
            "mysql://u@h/db",
            None,
            "unsupported database 'mysql' in mysql://u@h/db (use sqlite:/// or postgresql://)",
        ),
        ("not a url", None, "not a database URL: 'not a url'"),
        ("sqlite:///x.db", "s1", "a schema ('s1') is only supported on PostgreSQL"),
        ("postgresql://h/db", "a;drop", "not a plain schema name: 'a;drop'"),
        ("postgresql://h/db?schema=a", "b", "conflicting schemas: 'a' in the URL, 'b' given"),
    ],
)
def test_a_bad_url_or_schema_is_refused_with_the_reason(
    url: str, schema: str | None, message: str
) -> None:
    with pytest.raises(JournalError) as caught:
        open_store(url, schema=schema)
    assert str(caught.value) == message


def test_opening_without_create_refuses_a_missing_sqlite_file_and_creates_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "absent.db"
    with pytest.raises(JournalError) as caught:
        open_store(f"sqlite:///{path}", create=False)
    assert str(caught.value) == f"no journal at sqlite:///{path} (no such file '{path}')"
    assert not path.exists()


def test_opening_without_create_refuses_a_database_without_the_journal_tables(
    tmp_path: Path,
) -> None:
    path = tmp_path / "other.db"
    sqlite3.connect(path).close()
    with pytest.raises(JournalError) as caught:
        open_store(f"sqlite:///{path}", create=False)
    assert str(caught.value) == (
        f"no journal at sqlite:///{path} "
        "(missing tables: cases, decisions, journal_entries, monitoring)"
    )


def test_the_sql_store_offers_no_way_to_update_or_delete() -> None:
    public = {name for name in dir(SqlStore) if not name.startswith("_")}
    assert public == {
        "append",
        "audit",
        "authenticate",
        "authentic_entries",
        "checkpoint",
        "covered",
        "committed_size",
        "group_commit",
        "key",
        "leaf_hashes",
        "seal",
        "shared",
        "tree_head",
        "case_entries",
        "case_files",
        "case_standing",
        "case_ids",
        "close",
        "decision_entry",
        "dialect",
        "entries",
        "get_case",
        "get_monitoring",
        "last_seq",
        "put_case",
        "put_monitoring",
        "record_decision",
        "verify",
        # a mark is a cache beside the chain, never a record: put_mark replaces the one
        # kept under its name (tests/test_journal_marks.py); no entry or row changes
        "latest_seqs",
        "mark",
        "mark_names",
        "put_mark",
        "drop_marks",
        "touched_cases",
        # the tree as this store grew it, handed between a run's processes: it changes
        # what the store holds in memory, never an entry or a row
        "tree_frontier",
        "resume_tree",
    }


def test_a_schema_in_the_postgresql_url_keeps_two_journals_apart() -> None:
    with (
        pg_schema() as (url, first),
        pg_schema() as (_, second),
        open_store(f"{url}?schema={first}") as a,
        open_store(url, schema=second) as b,
    ):
        a.append("C-1", "k", {})
        a.append("C-1", "k", {})
        b.append("C-2", "k", {})
        assert (a.schema, a.dialect) == (first, "postgresql")
        assert [e.case_id for e in a.entries()] == ["C-1", "C-1"]
        assert [e.case_id for e in b.entries()] == ["C-2"]
        assert a.verify().ok and b.verify().ok


def test_the_journal_package_exports_exactly_its_public_surface() -> None:
    import credit.journal

    assert set(credit.journal.__all__) == {
        "CONFLICT_ATTEMPTS",
        "DATABASE_URL_ENV",
        "DECISION_KIND",
        "DEFAULT_DATABASE_URL",
        "GENESIS_HASH",
        "ChainReport",
        "Clock",
        "DecisionAlreadyRecordedError",
        "Entry",
        "GroupConflictError",
        "InMemoryStore",
        "JournalError",
        "SqlStore",
        "Store",
        "SystemClock",
        "conflict_attempts",
        "entry_hash",
        "open_store",
        "resolve_url",
        "verify_chain",
    }
    assert all(hasattr(credit.journal, name) for name in credit.journal.__all__)
