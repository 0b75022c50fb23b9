"""The case journal on SQL: one SQLAlchemy Core implementation for SQLite and PostgreSQL.

Four tables, none of them ever updated in place (the store has no update or delete)::

    journal_entries (seq PK, case_id, kind, payload, prev_hash, recorded_at, hash)
    decisions       (case_id PK, seq -> journal_entries.seq)     exactly once per case
    cases           (case_id PK, position, document)             underwriter-visible
    monitoring      (case_id PK, data)                           fair-lending review only

Payloads and documents are stored as canonical JSON text (sorted keys, exact decimals)
and read back with :func:`credit.canonical.loads`, so Decimals round-trip exactly and
the hash recomputed from a stored row is the hash computed when it was appended.

Writers are serialised so the chain never forks: every write transaction first takes
the store's write lock, then reads the head, then appends at ``seq = head + 1``.

- SQLite: WAL mode, ``synchronous=FULL`` (a commit is on disk when it returns), a busy
  timeout, and ``BEGIN IMMEDIATE`` for writes. (The one exception is a write beside
  the journal that asks for it, :func:`write_transaction` with ``synced=False``: a
  service claim, made durable by the synced commit after it.) The sqlite3 driver's own
  BEGIN is switched off and SQLAlchemy emits ours, per the SQLAlchemy SQLite
  documentation ("Enabling Non-Legacy SQLite Transactional Modes": the connect/begin
  event hooks).
- PostgreSQL (psycopg 3): ``pg_advisory_xact_lock`` on a key derived from the schema
  name, taken before the head is read and released at commit or rollback.

Exactly once: :meth:`SqlStore.record_decision` inserts the ``decisions`` row and the
``decision.recorded`` entry in one transaction, under the write lock; a second call
(another thread, another process) raises DecisionAlreadyRecordedError and changes
nothing. The ``decisions`` primary key backs the lock up.
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import os
import re
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Literal

from sqlalchemy import (
    BindParameter,
    Column,
    Engine,
    ForeignKey,
    Integer,
    MetaData,
    Row,
    Select,
    String,
    Table,
    Text,
    bindparam,
    create_engine,
    delete,
    event,
    func,
    inspect,
    literal_column,
    null,
    select,
    union_all,
)
from sqlalchemy.engine import URL, Connection, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, IntegrityError, NoSuchModuleError
from sqlalchemy.pool import ConnectionPoolEntry, StaticPool
from sqlalchemy.schema import CreateSchema

from credit.canonical import Normal, dumps, loads, normal_form
from credit.clock import clock_from_env
from credit.errors import CreditError
from credit.journal.audit import (
    AuditReport,
    Finding,
    KeptCheckpoint,
    SideRows,
    Walk,
    accepted_digest,
    decision_problem,
    document_problem,
    link_problem,
    mac_problem,
    vault_case,
    vault_problem,
    vault_seal,
)
from credit.journal.base import (
    DECISION_KIND,
    GENESIS_HASH,
    CaseFile,
    ChainReport,
    Clock,
    DecisionAlreadyRecordedError,
    Entry,
    GroupConflictError,
    JournalError,
    Mark,
    Store,
    authenticate,
    body_hash,
    broken_since,
    checked_mark,
    entry_hash,
    mark_row,
    placed_entry,
    stale_case,
    walk_entry,
)
from credit.journal.checkpoint import CHECKPOINT_SUFFIX
from credit.journal.merkle import KeptFrontiers, MerkleLog
from credit.journal.signer import JournalKey, load_journal_key
from credit.journal.tree import LastSigned, covering_checkpoint, sign_head
from credit.journal.writerlock import FifoLock, signer_lock, writer_lock
from credit.kept import ReadOnlyDict
from credit.kinds import INTAKE_ACCEPTED

__all__ = [
    "DATABASE_URL_ENV",
    "DEFAULT_DATABASE_URL",
    "SqlStore",
    "engine_for",
    "journal_metadata",
    "open_store",
    "read_connection",
    "resolve_url",
    "sqlite_file",
    "write_transaction",
]

DATABASE_URL_ENV: Final = "CREDIT_DATABASE_URL"
DEFAULT_DATABASE_URL: Final = "sqlite:///credit.db"

SQLITE_BUSY_TIMEOUT_MS: Final = 60_000
PG_CONNECT_TIMEOUT_S: Final = 10
VERIFY_PAGE: Final = 1000
# How many cases' views a group commit hands on to the next one (the notices and the
# ethics findings of a run's group are their own commits, on the same cases): each
# entry was checked when it was read or written, and a view is used only if no one
# else has appended to its case since (group_commit). A bound, not a cache of the
# journal.
CARRIED_VIEWS: Final = 512
# How many of the entries its groups committed last a store hands on with them: a
# reader across cases caught up with them (the comparison pool, between one group's
# reviews and the next's: some 3,500 entries at credit run's GROUP_SIZE) reads them
# from memory, and further back reads the database once a group. Most are the
# carried views' own.
CARRIED_ENTRIES: Final = 4096
# When another writer committed since the views were handed on, a locked group (which
# holds the write lock while it looks) looks up every view if they are at most this
# many times the cases it names: a run's notice and ethics groups name from a third of
# their batch group's cases to all of them; the service's group names one case, and
# keeps only its view rather than look up the views of other requests' cases under
# the lock.
LOCKED_LOOKS_PER_CASE: Final = 4

_SCHEMA_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
_WRITE: Final = "credit_journal_write"
_UNSYNCED: Final = "credit_journal_unsynced"  # a write whose commit does not sync (SQLite)
_SYNCHRONOUS: Final = "credit_journal_synchronous"  # a SQLite connection's level now
_GROWN: Final = "credit_journal_tree"


def _tables(schema: str | None) -> tuple[MetaData, Table, Table, Table, Table, Table]:
    metadata = MetaData(schema=schema)
    entries = Table(
        "journal_entries",
        metadata,
        Column("seq", Integer, primary_key=True, autoincrement=False),
        Column("case_id", String, nullable=True, index=True),
        Column("kind", String, nullable=False),
        Column("payload", Text, nullable=False),
        Column("prev_hash", String(64), nullable=False),
        Column("recorded_at", String, nullable=False),
        Column("hash", String(64), nullable=False),
        # The writer's MAC over hash, and the entry's RFC 6962 leaf hash (hex): NULL
        # only in entries written before migration 0003.
        Column("mac", String(64), nullable=True),
        Column("leaf_hash", String(64), nullable=True),
    )
    decisions = Table(
        "decisions",
        metadata,
        Column("case_id", String, primary_key=True),
        Column("seq", Integer, ForeignKey(entries.c.seq), nullable=False, unique=True),
    )
    cases = Table(
        "cases",
        metadata,
        Column("case_id", String, primary_key=True),
        Column("position", Integer, nullable=False, unique=True),
        Column("document", Text, nullable=False),
    )
    monitoring = Table(
        "monitoring",
        metadata,
        Column("case_id", String, primary_key=True),
        Column("data", Text, nullable=False),
    )
    # What a reader derived from the journal through an entry (Store.mark): a cache
    # beside the chain, sealed with the key and bound to that entry's hash. A journal
    # made before it has none (the store makes the table when it first keeps one).
    marks = Table(
        "journal_marks",
        metadata,
        Column("name", String, primary_key=True),
        Column("seq", Integer, nullable=False),
        Column("hash", String(64), nullable=False),
        Column("data", Text, nullable=False),
        Column("seal", String(64), nullable=False),
    )
    return metadata, entries, decisions, cases, monitoring, marks


# The statements the store runs on every case and request, built once per store with
# their values as bound parameters (a list as an expanding one): building a SELECT, its
# IN and its ORDER BY again for every read cost 60 to 70 us in SQLAlchemy, more than
# SQLite's own work for most of them. Each answers as the statement built at each call
# did, on every shape of read (tests/test_journal_statements.py).
_IDS: BindParameter[Any] = bindparam("ids", expanding=True)
_KINDS: BindParameter[Any] = bindparam("kinds", expanding=True)
_CASE = bindparam("case_id", type_=String)
_SEQ = bindparam("seq", type_=Integer)
_AFTER = bindparam("after", type_=Integer)
_UPTO = bindparam("upto", type_=Integer)
_LIMIT = bindparam("limit", type_=Integer)


class _Statements:
    """The store's frequent statements, over its tables (see above)."""

    def __init__(self, entries: Table, decisions: Table, cases: Table, monitoring: Table) -> None:
        e, d, c, m = entries.c, decisions.c, cases.c, monitoring.c
        self.entries_of_cases = select(entries).where(e.case_id.in_(_IDS)).order_by(e.seq)
        self.entries_of_cases_kinds = self.entries_of_cases.where(e.kind.in_(_KINDS))

        # A group's load of its cases: their entries, decision rows, documents and vault
        # rows in one statement (one round trip, where four took four), each row
        # tagged by its table (``src``), the entries by seq; a document's or a vault
        # row's text in ``payload``.
        def nulls(n: int) -> list[Any]:
            return [null() for _ in range(n)]

        self.rows_of_cases = union_all(
            select(
                literal_column("0").label("src"),
                e.seq,
                e.case_id,
                e.kind,
                e.payload,
                e.prev_hash,
                e.recorded_at,
                e.hash,
                e.mac,
            ).where(e.case_id.in_(_IDS)),
            # seq, case_id, then nothing for kind to mac
            select(literal_column("1"), d.seq, d.case_id, *nulls(6)).where(d.case_id.in_(_IDS)),
            # case_id and the text in payload, nothing else
            select(literal_column("2"), null(), c.case_id, null(), c.document, *nulls(4)).where(
                c.case_id.in_(_IDS)
            ),
            select(literal_column("3"), null(), m.case_id, null(), m.data, *nulls(4)).where(
                m.case_id.in_(_IDS)
            ),
        ).order_by(literal_column("src"), literal_column("seq"))
        self.documents_of = select(c.case_id, c.document).where(c.case_id.in_(_IDS))
        self.vault_rows_of = select(m.case_id, m.data).where(m.case_id.in_(_IDS))
        self.accepted_of = (
            select(e.case_id, e.payload)
            .where(e.case_id.in_(_IDS), e.kind == INTAKE_ACCEPTED)
            .order_by(e.seq)
        )
        self.head = select(e.seq, e.hash).order_by(e.seq.desc()).limit(1)
        self.max_seq = select(func.max(e.seq))
        self.last_seq_of_case = select(func.max(e.seq)).where(e.case_id == _CASE)
        self.leaves_after = (
            select(e.seq, e.leaf_hash).where(e.seq > _AFTER).order_by(e.seq).limit(VERIFY_PAGE)
        )
        self.leaves_between = self.leaves_after.where(e.seq <= _UPTO)
        self.entry_at = select(entries).where(e.seq == _SEQ)
        self.hash_at = select(e.hash).where(e.seq == _SEQ)
        self.accepted_payload = (
            select(e.payload)
            .where(e.case_id == _CASE, e.kind == INTAKE_ACCEPTED)
            .order_by(e.seq)
            .limit(1)
        )
        self.document = select(c.document).where(c.case_id == _CASE)
        self.vault_data = select(m.data).where(m.case_id == _CASE)
        self.vault_row_exists = select(m.case_id).where(m.case_id == _CASE)
        self.case_exists = select(c.case_id).where(c.case_id == _CASE)
        self.max_position = select(func.max(c.position))
        self.moved_cases = (
            select(e.case_id, func.max(e.seq))
            .where(e.seq > _AFTER, e.case_id.in_(_IDS))
            .group_by(e.case_id)
        )
        self.decision_seq = select(d.seq).where(d.case_id == _CASE)
        self.insert_entries = entries.insert()
        self.insert_decisions = decisions.insert()
        self.insert_cases = cases.insert()
        self.insert_monitoring = monitoring.insert()
        self._pages: dict[tuple[bool, bool, bool, bool], Select[Any]] = {}
        self._entries, self._e = entries, e

    def entries_page(self, *, after: bool, case: bool, kinds: bool, limit: bool) -> Select[Any]:
        """The entries in seq order, with each filter asked for as a parameter
        (``after``, ``case_id``, ``kinds``, ``limit``): one statement per shape."""
        shape = (after, case, kinds, limit)
        query = self._pages.get(shape)
        if query is None:
            e = self._e
            query = select(self._entries).order_by(e.seq)
            if after:
                query = query.where(e.seq > _AFTER)
            if case:
                query = query.where(e.case_id == _CASE)
            if kinds:
                query = query.where(e.kind.in_(_KINDS))
            if limit:
                query = query.limit(_LIMIT)
            self._pages[shape] = query
        return query


# Tables a journal may lack and still be opened as it is (made before them).
_OPTIONAL_TABLES: Final = frozenset({"journal_marks"})


def journal_metadata(schema: str | None = None) -> MetaData:
    """A fresh MetaData holding the journal's five tables (migrations build on it)."""
    return _tables(schema)[0]


def resolve_url(url: str | None = None) -> str:
    """The database URL: ``url``, else $CREDIT_DATABASE_URL, else ``sqlite:///credit.db``."""
    return url or os.environ.get(DATABASE_URL_ENV) or DEFAULT_DATABASE_URL


def _parse_url(raw: str, schema: str | None) -> tuple[URL, str | None]:
    """Parse and normalise a URL: ``postgresql://`` (or ``postgres://``) means psycopg 3;
    a ``schema`` query parameter is taken out of the URL and returned beside it."""
    try:
        url = make_url(raw)
    except ArgumentError:
        raise JournalError(f"not a database URL: {raw!r}") from None
    if url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg")
    if url.get_backend_name() not in ("sqlite", "postgresql"):
        raise JournalError(
            f"unsupported database {url.get_backend_name()!r} in "
            f"{url.render_as_string(hide_password=True)} (use sqlite:/// or postgresql://)"
        )
    if "schema" in url.query:
        from_url = url.query["schema"]
        url = url.difference_update_query(["schema"])
        if not isinstance(from_url, str) or (schema is not None and schema != from_url):
            raise JournalError(f"conflicting schemas: {from_url!r} in the URL, {schema!r} given")
        schema = from_url
    if schema is not None:
        if url.get_backend_name() != "postgresql":
            raise JournalError(f"a schema ({schema!r}) is only supported on PostgreSQL")
        if not _SCHEMA_NAME.fullmatch(schema):
            raise JournalError(f"not a plain schema name: {schema!r}")
    return url, schema


def engine_for(url: str | None = None, *, schema: str | None = None) -> tuple[Engine, str | None]:
    """An engine set up as the store's (SQLite pragmas and BEGIN, psycopg 3 for
    ``postgresql://``) and the schema (from ``schema`` or ``?schema=`` in the URL), for
    tools that work on the database itself (migrations). The caller disposes of it."""
    parsed, schema = _parse_url(resolve_url(url), schema)
    try:
        engine = (
            _postgres_engine(parsed)
            if parsed.get_backend_name() == "postgresql"
            else _sqlite_engine(parsed)
        )
    except (ArgumentError, NoSuchModuleError) as e:
        shown = parsed.render_as_string(hide_password=True)
        raise JournalError(f"cannot open {shown}: {e}") from None
    return engine, schema


def sqlite_file(url: URL) -> Path | None:
    """The database file of a SQLite URL, resolved (None: in memory, or not SQLite)."""
    if url.get_backend_name() != "sqlite" or _is_memory_sqlite(url):
        return None
    return Path(os.path.realpath(url.database or ""))


@contextlib.contextmanager
def write_transaction(engine: Engine, *, synced: bool = True) -> Iterator[Connection]:
    """A write transaction on an engine set up by :func:`engine_for`, for the tables
    beside the journal (the service's keys and claims): on a SQLite file it queues on
    the file's writer lock with the journal's writers (:mod:`credit.journal.writerlock`)
    and begins ``IMMEDIATE``, so it neither polls for SQLite's lock nor jumps the queue.
    Never open one inside a journal write on the same file (it would wait for itself).

    ``synced`` false: the commit is visible to every reader when it returns, as any,
    but does not wait for the disk itself (SQLite ``synchronous = NORMAL`` for this
    transaction, PostgreSQL ``synchronous_commit = off``): it is made durable by the
    next synced commit on the database, whose sync of the same log (the WAL) takes
    every commit before it along. Only for a row that need not outlive a crash unless
    a later synced commit depends on it (a service claim)."""
    path = sqlite_file(engine.url)
    queue = writer_lock(path).held() if path is not None else contextlib.nullcontext()
    with queue, engine.connect() as conn:
        conn.execution_options(**{_WRITE: True, _UNSYNCED: not synced})
        with conn.begin():
            if not synced and engine.dialect.name == "postgresql":
                conn.exec_driver_sql("SET LOCAL synchronous_commit TO OFF")
            yield conn


def read_connection(engine: Engine) -> Connection:
    """A pooled connection for reads alone, on an engine set up by :func:`engine_for`
    (use it as a context manager). On PostgreSQL it reads in autocommit: under READ
    COMMITTED, the isolation the journal's connections run at, each statement of a
    transaction takes a snapshot of its own anyway, so a transaction around reads adds
    nothing but its BEGIN and its ROLLBACK, each a round trip to the server (a status
    read, the key's look-up and the case's entries: 2 round trips, 6 with a
    transaction around each).
    On SQLite a read keeps its transaction, one snapshot for all its statements."""
    conn = engine.connect()
    if engine.dialect.name == "postgresql":
        conn.execution_options(isolation_level="AUTOCOMMIT")
    return conn


def _lock_key(schema: str | None) -> int:
    """A stable signed 64-bit advisory-lock key for this journal (one per schema)."""
    digest = hashlib.sha256(f"credit.journal:{schema or ''}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _is_memory_sqlite(url: URL) -> bool:
    return url.get_backend_name() == "sqlite" and url.database in (None, "", ":memory:")


def _sqlite_engine(url: URL) -> Engine:
    memory = _is_memory_sqlite(url)
    if memory:
        # One connection shared by every thread; SqlStore serialises all access to it.
        engine = create_engine(url, poolclass=StaticPool, connect_args={"check_same_thread": False})
    else:
        engine = create_engine(url)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: ConnectionPoolEntry) -> None:
        # SQLAlchemy emits BEGIN itself (the begin hook below), not the sqlite3 driver.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
            if not memory:
                cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute("PRAGMA synchronous = FULL")
            cursor.execute("PRAGMA foreign_keys = ON")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        options = conn.get_execution_options()
        write = options.get(_WRITE, False)
        if write:
            # Each write sets the level its commit needs (a connection in the pool keeps
            # the last one set): FULL, unless it asked for an unsynced commit. SQLite
            # takes the level only outside a transaction, so before BEGIN.
            level = "NORMAL" if options.get(_UNSYNCED, False) else "FULL"
            info = conn.connection.info
            if info.get(_SYNCHRONOUS, "FULL") != level:
                conn.exec_driver_sql(f"PRAGMA synchronous = {level}")
                info[_SYNCHRONOUS] = level
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    return engine


def _postgres_engine(url: URL) -> Engine:
    connect_args: dict[str, Any] = {}
    if "connect_timeout" not in url.query:
        connect_args["connect_timeout"] = PG_CONNECT_TIMEOUT_S
    return create_engine(url, connect_args=connect_args)


@dataclass(slots=True)
class _CaseView:
    """One case's rows as a group commit sees them: those committed before it opened
    (read once, each entry's hash and MAC checked) and those it has added since."""

    entries: list[Entry] = field(default_factory=list)
    decision_row: int | None = None
    document: Mapping[str, Any] | None = None
    document_text: str | None = None  # the document as stored (canonical JSON)
    accepted: Mapping[str, Any] | None = None
    document_checked: bool = False  # the document matched its intake.accepted digest
    committed_seq: int = 0  # the seq of its last committed entry when read (0: none)


@dataclass(slots=True)
class _Group:
    """An open group commit: its rows kept in memory and written together when it
    ends, in one write transaction. A locked group holds that transaction, and the
    journal's write lock, from its start (``conn``); a deferred one (``conn`` None)
    reads committed rows as it goes and takes the lock only to commit
    (:meth:`SqlStore._commit_deferred`)."""

    conn: Connection | None
    thread: int
    opened: tuple[int, str] = (0, GENESIS_HASH)  # the head when a deferred group opened
    written: set[str] = field(default_factory=set)  # the cases a deferred group wrote
    head: tuple[int, str] | None = None  # (seq, hash) of the last entry, None: read it
    log: MerkleLog | None = None  # the tree at the head, None: read it
    rows: list[dict[str, Any]] = field(default_factory=list)
    decision_rows: list[dict[str, Any]] = field(default_factory=list)
    case_rows: list[dict[str, Any]] = field(default_factory=list)
    monitoring_rows: list[dict[str, Any]] = field(default_factory=list)
    cases: dict[str, _CaseView] = field(default_factory=dict)
    monitoring: dict[str, Mapping[str, Any] | None] = field(default_factory=dict)
    position: int | None = None  # the last case position used, None: read it
    start: int = 0  # the head's seq when the group opened
    added: list[Entry] = field(default_factory=list)  # every entry the group appended
    added_by_kind: dict[str, list[Entry]] = field(default_factory=dict)  # the same, by kind
    complete: bool = True  # False once the SQL path has appended inside the group
    # The journal's last committed entries as this store's groups wrote them: every
    # entry with a seq after ``tail_from`` up to ``start``, in order (_Carried).
    tail: list[Entry] = field(default_factory=list)
    tail_from: int = 0
    # A deferred group's reads across cases, by kinds: (after, the entries found).
    across: dict[tuple[str, ...] | None, tuple[int, list[Entry]]] = field(default_factory=dict)


@dataclass(slots=True)
class _Carried:
    """What a committed group hands on to the next (:meth:`SqlStore.group_commit`),
    used only if the journal's head is still ``head``: its case views and vault rows,
    and the entries the store's groups committed last (every entry after
    ``tail_from`` up to ``head``), so that a reader across cases caught up with them
    (the comparison pool) reads them from here."""

    head: int
    views: dict[str, _CaseView]
    monitoring: dict[str, Mapping[str, Any] | None]
    tail: list[Entry]
    tail_from: int


def _stored_document(
    case_id: str, text: str, accepted: Mapping[str, Any] | None
) -> tuple[ReadOnlyDict[str, Any], bool]:
    """A case's stored document (read-only) and whether it was checked: against the digest its
    intake.accepted payload ``accepted`` took in (JournalIntegrityError, ``case-document``,
    when it is not that document; unchecked when no digest binds it)."""
    document = ReadOnlyDict(loads(text))
    digest = accepted_digest(accepted or {})
    problem = document_problem(document, digest, text=text)
    if problem is not None:
        raise Finding("case-document", problem, case_id=case_id).error()
    return document, digest is not None


def _seq_of(entry: Entry) -> int:
    return entry.seq


class _Failures:
    """``with store._failures():``, a database failure in the block raised as a
    JournalError naming the store (never a raw driver error); an IntegrityError is left
    to the caller, which knows what it means. One object a store, entered by any number
    of blocks at once (it holds nothing of a block): a class, not a generator, as the
    store's reads in a group enter one for every read (a generator's context manager
    cost about 0.4 us more a block)."""

    __slots__ = ("url",)

    def __init__(self, url: str) -> None:
        self.url = url

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: Any
    ) -> Literal[False]:
        if err is None or isinstance(err, IntegrityError) or not isinstance(err, DBAPIError):
            return False
        lines = str(err.orig if err.orig is not None else err).strip().splitlines()
        reason = lines[0] if lines else type(err).__name__
        raise JournalError(f"the journal store {self.url} failed: {reason}") from err


class SqlStore:
    """The journal and its side stores on SQLite or PostgreSQL (see the module docs).

    Thread-safe (each call checks a connection out of the engine's pool) and safe across
    processes (the database serialises writers). After ``fork`` open a new store in the
    child rather than reuse the parent's. Call :meth:`close` (or use ``with``) when done.
    """

    def __init__(
        self,
        url: str,
        *,
        schema: str | None = None,
        clock: Clock | None = None,
        create: bool = True,
        key: JournalKey | None = None,
    ) -> None:
        parsed, self.schema = _parse_url(url, schema)
        self._key = key
        self._log: MerkleLog | None = None
        self._signed: tuple[int, bytes] | None = None  # the head this store signed last
        self._last_signed = LastSigned()  # and the checkpoint it kept for it
        self._frontiers = KeptFrontiers()
        self._tree_lock = threading.Lock()
        self._committed = threading.local()  # .size: the tree after this thread's commit
        # The group commit each thread has open (group_commit): one thread's group is
        # never another's, so the service's threads each run a deferred group at once.
        self._groups = threading.local()
        # The case views the last group commit left, with the journal's head after it:
        # the next group starts from them if no one has appended since (CARRIED_VIEWS).
        # Taken whole by one group (under _carried_lock), never shared by two.
        self._carried: _Carried | None = None
        self._carried_lock = threading.Lock()
        self.url = parsed.render_as_string(hide_password=True)
        self._failing = _Failures(self.url)
        self._clock = clock or clock_from_env()
        self._postgres = parsed.get_backend_name() == "postgresql"
        self._lock_key = _lock_key(self.schema)
        memory = _is_memory_sqlite(parsed)
        self._mutex: contextlib.AbstractContextManager[Any] = (
            threading.RLock() if memory else contextlib.nullcontext()
        )
        # Writers queue for the database (writerlock): a file's are woken in turn
        # instead of polling SQLite's lock. On PostgreSQL the advisory lock queues the
        # processes; within one, writers queue here before they take a pooled
        # connection, so that those waiting do not hold the pool's connections (the
        # readers' too) while they wait.
        self._sqlite_file = sqlite_file(parsed)
        self._pg_writers = FifoLock()
        (
            self._metadata,
            self._entries,
            self._decisions,
            self._cases,
            self._monitoring,
            self._marks,
        ) = _tables(self.schema)
        self._q = _Statements(self._entries, self._decisions, self._cases, self._monitoring)
        self._advisory_lock = select(func.pg_advisory_xact_lock(self._lock_key))
        if not create and not memory and not self._postgres:
            path = Path(parsed.database or "")
            if not path.is_file():
                raise JournalError(f"no journal at {self.url} (no such file {str(path)!r})")
        try:
            self._engine = _postgres_engine(parsed) if self._postgres else _sqlite_engine(parsed)
        except (ArgumentError, NoSuchModuleError) as e:
            raise JournalError(f"cannot open {self.url}: {e}") from None
        try:
            if create:
                self._create_tables()
            else:
                self._check_tables()
        except BaseException:
            self._engine.dispose()
            raise

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Close every pooled connection. The store reconnects if used again."""
        self._engine.dispose()

    def __enter__(self) -> SqlStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        where = f", schema={self.schema!r}" if self.schema else ""
        return f"SqlStore({self.url!r}{where})"

    @property
    def key(self) -> JournalKey:
        """The writer's key: given at open, else $CREDIT_SIGNING_KEY or
        ./credit-journal.key, loaded on first use (JournalError if there is none)."""
        if self._key is None:
            try:
                self._key = load_journal_key()
            except CreditError as e:
                raise JournalError(
                    f"the journal {self.url} cannot be written or checked: {e}"
                ) from None
        return self._key

    @property
    def shared(self) -> bool:
        """A SQLite file or PostgreSQL: other processes open it too (not in memory)."""
        return self._sqlite_file is not None or self._postgres

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return "postgresql" if self._postgres else "sqlite"

    # ------------------------------------------------------------------ transactions

    def _failures(self) -> _Failures:
        """Database failures become JournalError naming the store (never a raw driver
        error); IntegrityError is left to the caller, which knows what it means."""
        return self._failing

    def _joined(self) -> _Group | None:
        """The group commit this thread has open, if any."""
        group: _Group | None = getattr(self._groups, "group", None)
        return group if group is not None and group.thread == threading.get_ident() else None

    def _open_group(self, group: _Group | None) -> None:
        """Open ``group`` for this thread (None: close this thread's)."""
        self._groups.group = group

    @contextlib.contextmanager
    def _read(self) -> Iterator[Connection]:
        group = self._joined()
        if group is not None and group.conn is not None:
            # inside a locked group: its transaction, its rows written into it first
            with self._failures():
                self._materialise(group)
                yield group.conn
            return
        # A deferred group's own rows are not in the database until it commits: a read
        # the group's views do not answer sees what is committed.
        with self._failures(), self._mutex, read_connection(self._engine) as conn:
            yield conn

    @contextlib.contextmanager
    def _group_reader(self, group: _Group) -> Iterator[Connection]:
        """The connection a group reads committed rows on: a locked group's own, a
        deferred group's a pooled one for this read."""
        if group.conn is not None:
            yield group.conn
            return
        with read_connection(self._engine) as conn:
            yield conn

    def _writers(self) -> contextlib.AbstractContextManager[Any]:
        """The queue a write transaction takes its turn in before it begins: the
        database file's writer lock (:mod:`credit.journal.writerlock`), the store's
        mutex (in memory), or on PostgreSQL the store's writers' lock (the advisory
        lock, taken inside, queues the processes)."""
        if self._sqlite_file is not None:
            return writer_lock(self._sqlite_file).held()
        if self._postgres:
            return self._pg_writers
        return self._mutex

    @contextlib.contextmanager
    def _write(self) -> Iterator[Connection]:
        """One write transaction holding the journal's write lock from its start."""
        group = self._joined()
        if group is not None and group.conn is None:
            raise JournalError(
                "a deferred group commit writes its entries and rows only (they are "
                "sequenced when it commits); write this after it commits"
            )
        if group is not None and group.conn is not None:
            with self._failures():
                self._materialise(group)
                yield group.conn
            group.head = group.log = None  # the SQL path may have appended: read again
            group.complete = False
            return
        with self._failures(), self._writers(), self._engine.connect() as conn:
            conn.execution_options(**{_WRITE: True})
            with conn.begin():
                conn.info.pop(_GROWN, None)  # left by a transaction that rolled back
                if self._postgres:
                    conn.execute(self._advisory_lock)
                yield conn
            # Committed: the tree the transaction grew is now the journal's.
            grown = conn.info.pop(_GROWN, None)
            if isinstance(grown, MerkleLog):
                self._keep_log(grown)
                self._committed.size = grown.size

    def _create_tables(self) -> None:
        with self._write() as conn:
            if self.schema is not None:
                conn.execute(CreateSchema(self.schema, if_not_exists=True))
            self._metadata.create_all(conn)

    def _check_tables(self) -> None:
        with self._read() as conn:
            inspector = inspect(conn)
            missing = sorted(
                name
                for name in self._metadata.tables
                if name.rpartition(".")[2] not in _OPTIONAL_TABLES
                and not inspector.has_table(name.rpartition(".")[2], schema=self.schema)
            )
        if missing:
            raise JournalError(f"no journal at {self.url} (missing tables: {', '.join(missing)})")

    # ------------------------------------------------------------------ group commit

    @contextlib.contextmanager
    def group_commit(
        self, case_ids: Iterable[str] = (), *, deferred: bool = False
    ) -> Iterator[None]:
        """Group commit: everything this thread writes until the block ends lands in
        one transaction, the journal's write lock held from its start, written
        together and made durable by one commit (one ``fsync`` on SQLite with
        ``synchronous=FULL``). Reads inside the block see its writes. ``case_ids``: the
        cases the block will work on, read in one query up front (each entry's hash
        and MAC checked) and then served from memory.

        If the block raises, or the process dies inside it, nothing it wrote is kept
        (a rerun does the work again: nothing was recorded). Other writers wait for
        the lock meanwhile, so keep a group to a bounded batch of work. A group opened
        inside a group joins it. No checkpoint is signed inside a group.

        A committed group hands its case views (up to :data:`CARRIED_VIEWS`) on to the
        next group, which starts from them as they are if the journal's head is where
        the first left it, and otherwise from those whose cases no other writer moved
        since (one read finds them; a locked group given many more views than the
        cases it names looks at those it names alone): a run's notices and ethics
        findings, each their own commit on the group's cases, do not read those cases
        again, whether or not another worker committed in between. A group that
        raises, or whose rows went around its views, hands nothing on. A row changed
        in the database meanwhile is not read again here; the chain's verification
        (which ends every run) finds it.

        ``deferred``: the block does its work without the write lock, so other writers
        (another worker of a run, the service) go on meanwhile
        (:meth:`_deferred_group`). A group opened inside a group joins it as it is.
        On an in-memory database (one connection, one process) a group is always
        locked.
        """
        if self._joined() is not None:
            yield
            return
        wanted = list(case_ids)
        if deferred and self.shared:
            with self._deferred_group(wanted):
                yield
            return
        with self._failures(), self._writers(), self._engine.connect() as conn:
            conn.execution_options(**{_WRITE: True})
            with conn.begin():
                if self._postgres:
                    conn.execute(self._advisory_lock)
                group = _Group(conn=conn, thread=threading.get_ident())
                # The head's seq and hash in one read: where the group starts, and what
                # its first entry chains to (a PostgreSQL round trip fewer a group).
                head = conn.execute(self._q.head).first()
                group.head = (head.seq, head.hash) if head else (0, GENESIS_HASH)
                group.start = group.head[0]
                self._take_carried(group, conn, wanted)
                self._open_group(group)
                try:
                    self._load_cases(group, wanted)
                    yield
                    self._materialise(group)
                    log = group.log
                finally:
                    self._open_group(None)
            if log is not None:  # committed: the tree the group grew is the journal's
                self._keep_log(log)
                self._committed.size = log.size
            self._carry(group)

    @contextlib.contextmanager
    def _deferred_group(self, case_ids: list[str]) -> Iterator[None]:
        """A group commit whose work runs without the journal's write lock
        (ADR-0002). Its reads are of committed rows (each case read once, as a
        locked group reads them) and of its own rows, kept in memory; each entry it
        appends is hashed and MACed at the place it would take if the journal's head
        stayed where the group found it. At the end :meth:`_commit_deferred` takes the
        lock, checks that no one appended to a case the group wrote since the group
        read it (else :class:`GroupConflictError`, nothing written), gives the
        entries their places after the head as it is then (hashed again if it moved)
        and commits once, durably.

        What no payload may do in such a group: name another of its entries by seq or
        hash (decisions are named by content, :mod:`credit.journal.naming`), as those
        are final only at the commit."""
        with self._failures(), read_connection(self._engine) as conn:
            head = conn.execute(self._q.head).first()
            opened = (head.seq, head.hash) if head else (0, GENESIS_HASH)
            group = _Group(
                conn=None,
                thread=threading.get_ident(),
                opened=opened,
                head=opened,
                start=opened[0],
            )
            self._take_carried(group, conn, case_ids)
        self._open_group(group)
        try:
            with self._failures():
                self._load_cases(group, case_ids)
            yield
        finally:
            self._open_group(None)
        places = self._commit_deferred(group)
        if places:  # the views hold the entries as committed, at their places
            self._replace(group, places)
        self._carry(group)

    def _commit_deferred(self, group: _Group) -> dict[int, Entry]:
        """Commit a deferred group's rows under the write lock, after the head as it
        is now. Returns the entries that had to be given other places (another writer
        committed after the group opened), as committed, by the ``id()`` of the
        group's own (:meth:`_renumber`). GroupConflictError, with nothing written, if
        one of those writers appended to a case the group wrote."""
        places: dict[int, Entry] = {}
        entries = bool(group.rows)
        if not (entries or group.case_rows or group.monitoring_rows):
            return places  # nothing to write: no lock, no commit
        with self._failures(), self._writers(), self._engine.connect() as conn:
            conn.execution_options(**{_WRITE: True})
            with conn.begin():
                if self._postgres:
                    conn.execute(self._advisory_lock)
                head = conn.execute(self._q.head).first()
                at = (head.seq, head.hash) if head else (0, GENESIS_HASH)
                if at != group.opened:
                    self._check_unmoved(conn, group)
                    places = self._renumber(group, at)
                log = self._grown(conn, at[0])
                for row in group.rows:
                    log.append(bytes.fromhex(row["leaf_hash"]))
                if group.case_rows:
                    position = int(conn.execute(self._q.max_position).scalar_one() or 0)
                    for offset, case_row in enumerate(group.case_rows, 1):
                        case_row["position"] = position + offset
                try:
                    self._materialise(group, conn)
                except IntegrityError as e:  # a case's row another writer put meanwhile
                    raise GroupConflictError(sorted(group.written)) from e
        if entries:  # committed: the tree the group grew is the journal's
            self._keep_log(log)
            self._committed.size = log.size
        return places

    def _check_unmoved(self, conn: Connection, group: _Group) -> None:
        """GroupConflictError if another writer appended, after the group opened, to a
        case the group wrote, past what the group read of that case."""
        moved: list[str] = []
        for case_id, last in self._moved(conn, group.start, sorted(group.written)):
            view = group.cases.get(case_id)
            if view is None or last > view.committed_seq:
                moved.append(case_id)
        if moved:
            raise GroupConflictError(moved)

    def _moved(self, conn: Connection, after: int, case_ids: list[str]) -> list[tuple[str, int]]:
        """Of ``case_ids``, those with an entry after seq ``after``, each with its
        last entry's seq (a page of ids a read)."""
        moved: list[tuple[str, int]] = []
        for start in range(0, len(case_ids), VERIFY_PAGE):
            page = case_ids[start : start + VERIFY_PAGE]
            for case_id, last in conn.execute(self._q.moved_cases, {"after": after, "ids": page}):
                moved.append((case_id, int(last)))
        return moved

    def _renumber(self, group: _Group, at: tuple[int, str]) -> dict[int, Entry]:
        """Give the group's entries their places after ``at`` (the head's seq and
        hash), each hashed, MACed and leafed again: its payload, its time and its
        order in the group are what they were. Each entry as committed, by the
        ``id()`` of the group's own (:meth:`_replace`)."""
        final: dict[int, Entry] = {}
        seqs: dict[int, int] = {}  # the seq each had in the group -> its place
        rows: list[dict[str, Any]] = []
        for row, entry in zip(group.rows, group.added, strict=True):
            placed, placed_row = self._placed(
                at, entry.case_id, entry.kind, entry.payload, row["payload"], entry.recorded_at
            )
            final[id(entry)], seqs[entry.seq] = placed, placed.seq
            rows.append(placed_row)
            at = (placed.seq, placed.hash)
        group.rows = rows
        for decision_row in group.decision_rows:
            decision_row["seq"] = seqs[decision_row["seq"]]
        return final

    def _replace(self, group: _Group, final: dict[int, Entry]) -> None:
        """After a commit that gave the group's entries other places: each of its
        entries in its views, and the list of what it added, as committed, and only
        the views of the cases it wrote kept. Its own
        entries are found by identity, not by seq: a view read after another writer
        committed may hold that writer's entries at the seqs the group's own had."""
        group.added = [final[id(e)] for e in group.added]
        last = group.added[-1]
        group.head = (last.seq, last.hash)
        # another writer's entries lie between what the group read and its own
        group.tail, group.tail_from = [], group.added[0].seq - 1
        # The views of the cases it only read are as the group read them, and another
        # writer may have appended to those since: they are not handed on with the new
        # head (the cases it wrote, no one else did since it read them, or it would
        # not have committed).
        group.cases = {c: v for c, v in group.cases.items() if c in group.written}
        for case_id in group.written:
            view = group.cases.get(case_id)
            if view is None:
                continue
            entries: list[Entry] = []
            for entry in view.entries:
                committed = final.get(id(entry))
                if committed is not None:
                    entry = committed
                    if entry.kind == DECISION_KIND:
                        view.decision_row = entry.seq
                entries.append(entry)
            view.entries = entries

    def _take_carried(self, group: _Group, conn: Connection, case_ids: list[str]) -> None:
        """Start a group from what the last one handed on: its views of the cases no
        one has appended to since (each then the journal's), and its entries if no one
        has appended anything since. When the head moved (another writer committed
        meanwhile), one read finds the cases that writer moved, of every view (a run's
        worker takes its cases on from its last group without reading them again);
        a locked group, which holds the write lock from here on, looks up every view
        only if they are not many more than the cases it names (``case_ids``,
        :data:`LOCKED_LOOKS_PER_CASE`), else those it names alone and leaves the others
        (the service's group of one case, whose view is seldom carried, reads that case
        as before)."""
        with self._carried_lock:
            carried, self._carried = self._carried, None
        group.tail_from = group.start
        if carried is None or carried.head > group.start:
            return
        views = carried.views
        if carried.head < group.start:  # another writer committed meanwhile
            bound = LOCKED_LOOKS_PER_CASE * len(case_ids)
            if group.conn is not None and len(views) > bound:  # the views it names alone
                views = {c: views[c] for c in dict.fromkeys(case_ids) if c in views}
            for case_id, _ in self._moved(conn, carried.head, list(views)):
                del views[case_id]
        group.cases = views
        group.monitoring = {
            name: data for name, data in carried.monitoring.items() if vault_case(name) in views
        }
        if carried.head == group.start:
            group.tail, group.tail_from = carried.tail, carried.tail_from

    def _carry(self, group: _Group) -> None:
        """Hand a committed group's case views on to the next group (see
        :meth:`group_commit`), if every row it wrote went through them."""
        if not group.complete:
            return
        views = group.cases
        while len(views) > CARRIED_VIEWS:  # the oldest go first
            del views[next(iter(views))]
        # A view the group only read holds what was committed when it was read (or
        # carried), its committed_seq already its last entry's: only those the group
        # appended to move, not every view carried (up to CARRIED_VIEWS, each commit).
        for case_id in {entry.case_id for entry in group.added}:
            view = views.get(case_id) if case_id is not None else None
            if view is not None:
                view.committed_seq = view.entries[-1].seq if view.entries else 0
        monitoring = {
            name: data for name, data in group.monitoring.items() if vault_case(name) in views
        }
        tail, tail_from = group.tail + group.added, group.tail_from
        if len(tail) > CARRIED_ENTRIES:  # the oldest go first
            tail_from = tail[-CARRIED_ENTRIES - 1].seq
            tail = tail[-CARRIED_ENTRIES:]
        head = group.head[0] if group.head else group.start
        with self._carried_lock:
            self._carried = _Carried(head, views, monitoring, tail, tail_from)

    def _load_cases(self, group: _Group, case_ids: Iterable[str]) -> None:
        """Read the committed rows of cases the group has not seen yet, in pages."""
        wanted = [c for c in dict.fromkeys(case_ids) if c not in group.cases]
        if wanted:
            with self._group_reader(group) as conn:
                self._load_pages(group, conn, wanted)

    def _load_pages(self, group: _Group, conn: Connection, wanted: list[str]) -> None:
        key, q = self.key, self._q
        for start in range(0, len(wanted), VERIFY_PAGE):
            page = wanted[start : start + VERIFY_PAGE]
            views = {case_id: _CaseView() for case_id in page}
            # One statement: the entries (by seq), then the decision rows, documents
            # and vault rows (the documents checked against the entries read before).
            for row in conn.execute(q.rows_of_cases, {"ids": page}):
                src = int(row.src)
                if src == 0:
                    view = views[row.case_id]
                    entry = self._checked(row, key)
                    view.entries.append(entry)
                    view.committed_seq = entry.seq
                    if view.accepted is None and entry.kind == INTAKE_ACCEPTED:
                        view.accepted = entry.payload
                elif src == 1:
                    views[row.case_id].decision_row = row.seq
                elif src == 2:
                    view = views[row.case_id]
                    view.document, view.document_checked = _stored_document(
                        row.case_id, row.payload, view.accepted
                    )
                else:
                    # Their vault rows too (a case's own; a ``<caseId>#...`` row is read
                    # when asked for): the group holds the write lock, so a row not here
                    # now is not in the journal until the group writes it.
                    group.monitoring.setdefault(row.case_id, dict(loads(row.payload)))
            for case_id in page:
                group.monitoring.setdefault(case_id, None)
            group.cases.update(views)

    def _view(self, group: _Group, case_id: str) -> _CaseView:
        # A case the group has not seen has no rows in it yet: the committed rows are
        # all there is to read.
        if case_id not in group.cases:
            self._load_cases(group, [case_id])
        return group.cases[case_id]

    def _materialise(self, group: _Group, conn: Connection | None = None) -> None:
        """Write the group's rows so far into its transaction (not yet committed):
        a locked group's own, or ``conn``, a deferred group's at its commit."""
        conn = conn if conn is not None else group.conn
        assert conn is not None, "a deferred group's rows are written at its commit"
        if group.rows:
            conn.execute(self._q.insert_entries, group.rows)
            group.rows = []
        if group.decision_rows:
            conn.execute(self._q.insert_decisions, group.decision_rows)
            group.decision_rows = []
        if group.case_rows:
            conn.execute(self._q.insert_cases, group.case_rows)
            group.case_rows = []
        if group.monitoring_rows:
            conn.execute(self._q.insert_monitoring, group.monitoring_rows)
            group.monitoring_rows = []

    def _group_append(
        self, group: _Group, case_id: str | None, kind: str, payload: Mapping[str, Any]
    ) -> Entry:
        normal, text = normal_form(payload)
        view = None if case_id is None else self._view(group, case_id)
        conn = group.conn
        if conn is None:  # deferred: its place if the head stays (_commit_deferred)
            if case_id is not None:
                group.written.add(case_id)
        else:
            if group.head is None:
                head = conn.execute(self._q.head).first()
                group.head = (head.seq, head.hash) if head else (0, GENESIS_HASH)
            if group.log is None:
                group.log = self._grown(conn, group.head[0])
        assert group.head is not None
        entry, row = self._placed(
            group.head, case_id, kind, normal, text, self._clock.now().isoformat()
        )
        if group.log is not None:
            group.log.append(bytes.fromhex(row["leaf_hash"]))
        group.head = (entry.seq, entry.hash)
        group.rows.append(row)
        group.added.append(entry)
        group.added_by_kind.setdefault(kind, []).append(entry)
        if view is not None:
            view.entries.append(entry)
            if view.accepted is None and kind == INTAKE_ACCEPTED:
                view.accepted = entry.payload
        return entry

    def _placed(
        self,
        after: tuple[int, str],
        case_id: str | None,
        kind: str,
        payload: Mapping[str, Any],
        text: str,
        recorded_at: str,
    ) -> tuple[Entry, dict[str, Any]]:
        """The entry at the place after ``after`` (the seq and hash before it), hashed
        and MACed, and its row (with its leaf hash) as a group writes it."""
        seq, prev = after[0] + 1, after[1]
        entry, leaf = placed_entry(seq, case_id, kind, payload, prev, recorded_at, self.key, text)
        row = {
            "seq": seq,
            "case_id": case_id,
            "kind": kind,
            "payload": text,
            "prev_hash": prev,
            "recorded_at": recorded_at,
            "hash": entry.hash,
            "mac": entry.mac,
            "leaf_hash": leaf.hex(),
        }
        return entry, row

    def _checked(self, row: Row[Any], key: JournalKey) -> Entry:
        """The entry of a stored row, its hash recomputed from the row as stored (its
        payload text is canonical JSON, so it is not serialised again) and its MAC
        verified."""
        entry = self._entry(row)
        at = row.recorded_at
        if body_hash(row.seq, row.case_id, row.kind, row.payload, row.prev_hash, at) != row.hash:
            authenticate(key, [entry])  # not as written: the full check names why
        problem = mac_problem(key, entry.hash, entry.mac)
        if problem is not None:
            raise Finding("entry-mac", problem, seq=entry.seq, case_id=entry.case_id).error()
        return entry

    # ------------------------------------------------------------------ the chain

    def _entry(self, row: Row[Any]) -> Entry:
        try:
            return Entry(
                seq=row.seq,
                case_id=row.case_id,
                kind=row.kind,
                payload=loads(row.payload),
                prev_hash=row.prev_hash,
                recorded_at=row.recorded_at,
                hash=row.hash,
                mac=row.mac,
            )
        except ValueError as e:  # not JSON, not an object, a column of the wrong type
            reason = str(e).splitlines()[0]
            raise JournalError(f"unreadable ({reason})", seq=row.seq) from e

    def _append_locked(
        self, conn: Connection, case_id: str | None, kind: str, payload: Mapping[str, Any]
    ) -> Entry:
        # Normalise through the stored form first, so the hash is computed over exactly
        # what a later read gives back (a float 1e-07 is stored, and hashed, as 0.0000001).
        normal, text = normal_form(payload)
        head = conn.execute(self._q.head).first()
        at = (head.seq, head.hash) if head else (0, GENESIS_HASH)
        entry, row = self._placed(at, case_id, kind, normal, text, self._clock.now().isoformat())
        grown = self._grown(conn, at[0])
        grown.append(bytes.fromhex(row["leaf_hash"]))
        conn.info[_GROWN] = grown
        conn.execute(self._q.insert_entries, row)
        return entry

    # ------------------------------------------------------------------ the tree

    def _keep_log(self, log: MerkleLog) -> None:
        with self._tree_lock:
            if self._log is None or log.size >= self._log.size:
                self._log = log
            self._frontiers.keep(log)

    def _stored_leaves(self, conn: Connection, after: int, upto: int | None) -> Iterator[bytes]:
        """The leaf hashes of entries ``after < seq <= upto`` as stored (computed for
        an entry written before they were), a page at a time."""
        q = self._q
        query = q.leaves_after if upto is None else q.leaves_between
        while True:
            rows = conn.execute(query, {"after": after, "upto": upto}).all()
            for row in rows:
                if row.leaf_hash is not None:
                    yield bytes.fromhex(row.leaf_hash)
                else:
                    full = conn.execute(q.entry_at, {"seq": row.seq}).one()
                    yield self._entry(full).leaf_hash()
            if len(rows) < VERIFY_PAGE:
                return
            after = rows[-1].seq

    def _grown(self, conn: Connection, size: int) -> MerkleLog:
        """A copy of the journal's tree at ``size`` leaves (the head read in this
        transaction): the frontier kept in memory, caught up with the entries other
        writers appended since, or rebuilt from the stored leaf hashes."""
        with self._tree_lock:
            log = self._log
        if log is None or log.size > size:
            log = MerkleLog()
        log = MerkleLog.from_frontier(log.size, log.frontier)
        if log.size < size:
            for leaf in self._stored_leaves(conn, log.size, size):
                log.append(leaf)
            if self._joined() is None:  # a group's rows are not the journal's until commit
                self._keep_log(MerkleLog.from_frontier(log.size, log.frontier))
        return log

    def _head_seq(self, conn: Connection) -> int:
        return int(conn.execute(self._q.max_seq).scalar_one_or_none() or 0)

    def tree_head(self) -> tuple[int, bytes]:
        with self._read() as conn:
            log = self._grown(conn, self._head_seq(conn))
        return log.size, log.root()

    def leaf_hashes(self, size: int | None = None) -> list[bytes]:
        with self._read() as conn:
            return list(self._stored_leaves(conn, 0, size))

    def tree_frontier(self) -> tuple[int, tuple[bytes, ...]]:
        with self._tree_lock:
            log = self._log
        return (0, ()) if log is None else (log.size, log.frontier)

    def resume_tree(self, size: int, frontier: Sequence[bytes]) -> None:
        log = MerkleLog.from_frontier(size, frontier)
        with self._read() as conn:
            if size > self._head_seq(conn):  # not this journal's tree as committed
                return
        self._keep_log(log)

    def checkpoint(
        self, directory: Path, *, covering: bool = False, size: int | None = None
    ) -> Path:
        """Sign the committed tree head and keep the checkpoint in ``directory`` (see
        :func:`credit.journal.tree.sign_head`).

        The head is read without the journal's write lock: the journal's writers go on
        while a checkpoint is signed (a signature and a durable file), and the folder's
        signers queue on a lock of their own
        (:func:`credit.journal.writerlock.signer_lock`), in every process. Entries are
        only appended, so the head read under that lock is never smaller than any
        checkpoint signed before it unless entries were cut, and its first entries are
        those any earlier checkpoint signed unless history was rewritten: the checks
        that refuse to sign then hold as they did under the write lock.

        ``covering``: if the newest checkpoint kept already covers every entry this
        thread committed (another signer, waited for here, signed a head after them),
        or with ``size`` the journal's first ``size`` entries, that checkpoint is the
        answer and nothing is signed (:meth:`covered`)."""
        if self._joined() is not None:
            raise JournalError(
                "a checkpoint signs committed entries only: sign it after the group commits"
            )
        with signer_lock(directory).held():
            if covering and (kept := self.covered(directory, size=size)) is not None:
                return kept
            with self._read() as conn:
                log = self._grown(conn, self._head_seq(conn))
                size, head = log.size, log.root()
                kept = directory / f"{size:020d}{CHECKPOINT_SUFFIX}"
                if self._signed == (size, head) and kept.is_file():
                    return kept  # this tree head is signed already

                def root_at(n: int) -> bytes:
                    # The newest checkpoint may be another writer's, at a size this
                    # store passed while catching up: grown from the nearest frontier
                    # kept below it, so only the leaves since are read (all of them
                    # only at first).
                    if n == size:
                        return head
                    with self._tree_lock:
                        log = self._frontiers.start(n)
                    if log.size < n:  # else kept at n itself: no query
                        for leaf in self._stored_leaves(conn, log.size, n):
                            log.append(leaf)
                    return log.root()

                path = sign_head(self.key, directory, size, head, root_at, last=self._last_signed)
            self._signed = (size, head)
        return path

    def covered(self, directory: Path, *, size: int | None = None) -> Path | None:
        """The newest checkpoint kept in ``directory``, its signature verified, if it
        already covers every entry this thread has committed to the store (another
        writer signed a head after them), or with ``size`` the journal's first ``size``
        entries, else None: then :meth:`checkpoint` signs. Read without the write lock
        (see :func:`credit.journal.tree.covering_checkpoint`)."""
        if size is None:
            size = self.committed_size()
        if size is None or self._joined() is not None:
            return None
        return covering_checkpoint(directory, self.key, size)

    def committed_size(self) -> int | None:
        size: int | None = getattr(self._committed, "size", None)
        return size

    def authenticate(self, entries: Sequence[Entry]) -> Sequence[Entry]:
        return authenticate(self.key, entries)

    def authentic_entries(self, case_id: str | None = None) -> list[Entry]:
        """The entries, each one's hash recomputed from the row as stored (its payload
        text is canonical JSON, so it is not serialised again) and its MAC verified."""
        group = self._joined()
        if group is not None and case_id is not None:
            return list(self._view(group, case_id).entries)
        query = self._q.entries_page(
            after=False, case=case_id is not None, kinds=False, limit=False
        )
        key = self.key
        with self._read() as conn:
            rows = conn.execute(query, {"case_id": case_id}).all()
        return [self._checked(row, key) for row in rows]

    def case_standing(self, case_id: str) -> tuple[Mapping[str, Any] | None, list[Entry]]:
        """The document and the entries in one connection's two reads (the notice's read
        of a case: the digest comes from the intake.accepted entry read with the others,
        its MAC verified, not from a read of its payload alone)."""
        group = self._joined()
        if group is not None:
            return self.get_case(case_id), self.authentic_entries(case_id)
        query = self._q.entries_page(after=False, case=True, kinds=False, limit=False)
        key = self.key
        with self._read() as conn:
            text = conn.execute(self._q.document, {"case_id": case_id}).scalar_one_or_none()
            rows = conn.execute(query, {"case_id": case_id}).all()
        entries = [self._checked(row, key) for row in rows]
        if text is None:
            return None, entries
        accepted = next((e.payload for e in entries if e.kind == INTAKE_ACCEPTED), None)
        return _stored_document(case_id, text, accepted)[0], entries

    def seal(self, name: str, data: Mapping[str, Any]) -> str:
        return self.key.seal(name, data)

    def audit(
        self, checkpoints: Sequence[KeptCheckpoint] = (), *, macs: bool = True
    ) -> AuditReport:
        """The verify walk (:class:`credit.journal.audit.Walk`) over every entry, as
        stored, then the side rows. ``macs=False`` when no signing key is at hand (an
        examiner): the MACs are then not checked, and the report says so."""
        walk = Walk(key=self.key if macs else None, checkpoints=checkpoints)
        with self._read() as conn:
            for row in self._rows_in_order(conn):
                try:
                    entry = self._entry(row)
                except JournalError as e:
                    walk.findings.append(
                        Finding("chain", f"entry {row.seq} is {e.message}", seq=row.seq)
                    )
                    continue
                stored = bytes.fromhex(row.leaf_hash) if row.leaf_hash else None
                walk_entry(walk, entry, stored)
            decisions = {r.case_id: r.seq for r in conn.execute(select(self._decisions))}
            cases = {r.case_id: loads(r.document) for r in conn.execute(select(self._cases))}
            vault = {r.case_id: loads(r.data) for r in conn.execute(select(self._monitoring))}
        walk.side(SideRows(decisions, cases, vault))
        return walk.report()

    def _accepted(self, conn: Connection, case_id: str) -> Mapping[str, Any] | None:
        text = conn.execute(self._q.accepted_payload, {"case_id": case_id}).scalar_one_or_none()
        return None if text is None else dict(loads(text))

    def append(
        self,
        case_id: str | None,
        kind: str,
        payload: Mapping[str, Any],
        *,
        after: int | None = None,
    ) -> Entry:
        if kind == DECISION_KIND:
            raise JournalError("decisions are recorded through record_decision", case_id=case_id)
        group = self._joined()
        if group is not None:
            with self._failures():
                if after is not None and case_id is not None:
                    found = self._group_last_seq(group, case_id)
                    if found != after:
                        raise stale_case(case_id, after, found)
                return self._group_append(group, case_id, kind, payload)
        with self._write() as conn:
            if after is not None and case_id is not None:
                found = self._last_seq(conn, case_id)
                if found != after:
                    raise stale_case(case_id, after, found)
            return self._append_locked(conn, case_id, kind, payload)

    def _last_seq(self, conn: Connection, case_id: str) -> int:
        found = conn.execute(self._q.last_seq_of_case, {"case_id": case_id}).scalar_one_or_none()
        return int(found or 0)

    def _group_last_seq(self, group: _Group, case_id: str) -> int:
        entries = self._view(group, case_id).entries
        return entries[-1].seq if entries else 0

    def last_seq(self, case_id: str) -> int:
        group = self._joined()
        if group is not None:
            with self._failures():
                return self._group_last_seq(group, case_id)
        with self._read() as conn:
            return self._last_seq(conn, case_id)

    def record_decision(self, case_id: str, payload: Mapping[str, Any]) -> Entry:
        group = self._joined()
        if group is not None:
            with self._failures():
                view = self._view(group, case_id)
                recorded = view.decision_row or next(
                    (e.seq for e in view.entries if e.kind == DECISION_KIND), None
                )
                if recorded is not None:
                    raise DecisionAlreadyRecordedError(
                        f"a decision is already recorded (entry {recorded})", case_id=case_id
                    )
                entry = self._group_append(group, case_id, DECISION_KIND, payload)
                view.decision_row = entry.seq
                group.decision_rows.append({"case_id": case_id, "seq": entry.seq})
                return entry
        try:
            with self._write() as conn:
                recorded = conn.execute(
                    select(self._decisions.c.seq).where(self._decisions.c.case_id == case_id)
                ).scalar_one_or_none()
                if recorded is None:  # the chain, not only the side table, says decided
                    recorded = conn.execute(
                        select(self._entries.c.seq).where(
                            self._entries.c.case_id == case_id,
                            self._entries.c.kind == DECISION_KIND,
                        )
                    ).scalar()
                if recorded is not None:
                    raise DecisionAlreadyRecordedError(
                        f"a decision is already recorded (entry {recorded})", case_id=case_id
                    )
                entry = self._append_locked(conn, case_id, DECISION_KIND, payload)
                conn.execute(self._decisions.insert().values(case_id=case_id, seq=entry.seq))
                return entry
        except IntegrityError:  # the lock makes this unreachable; the primary key backs it
            raise DecisionAlreadyRecordedError(
                "a decision is already recorded", case_id=case_id
            ) from None

    def entries(
        self,
        case_id: str | None = None,
        kinds: Sequence[str] | None = None,
        after_seq: int = 0,
        limit: int | None = None,
    ) -> list[Entry]:
        group = self._joined()
        if group is not None and case_id is not None:
            with self._failures():
                return _cut(
                    [
                        e
                        for e in self._view(group, case_id).entries
                        if e.seq > after_seq and (kinds is None or e.kind in kinds)
                    ],
                    limit,
                )
        if group is not None and group.complete and group.tail_from <= after_seq < group.start:
            # what the store's last groups committed, as they wrote it, and then a
            # locked group's own rows (a deferred group's are not yet committed)
            tail = group.tail[bisect.bisect_right(group.tail, after_seq, key=_seq_of) :]
            if kinds is not None:
                tail = [e for e in tail if e.kind in kinds]
            if group.conn is not None:
                tail += self.entries(None, kinds, group.start)
            return _cut(tail, limit)
        if group is not None and group.conn is None:
            return self._deferred_across(group, kinds, after_seq, limit)
        if group is not None and group.complete and after_seq >= group.start:
            # only entries the group itself appended (an incremental reader caught up),
            # in seq order: those after ``after_seq`` are a tail of the list (of each
            # kind's list: a reader of a few kinds does not walk every entry after its
            # mark, which grows with the group)
            if kinds is None:
                added = group.added
                return _cut(added[bisect.bisect_right(added, after_seq, key=_seq_of) :], limit)
            tails = [
                of_kind[bisect.bisect_right(of_kind, after_seq, key=_seq_of) :]
                for kind in dict.fromkeys(kinds)
                if (of_kind := group.added_by_kind.get(kind))
            ]
            if len(tails) == 1:
                return _cut(tails[0], limit)
            return _cut(sorted((e for tail in tails for e in tail), key=_seq_of), limit)
        return self._entries_page(case_id, kinds, after_seq, limit)

    def _deferred_across(
        self, group: _Group, kinds: Sequence[str] | None, after_seq: int, limit: int | None
    ) -> list[Entry]:
        """A deferred group's read across cases of what is committed (its own rows
        are not yet): nothing committed after the head it opened on (another
        writer's, read by the next group), and of what came before it, each kind's
        entries read once and then served from memory. An entry committed after a
        read has a seq above every entry that read found, so a reader that goes on
        from the last it was given misses nothing."""
        if after_seq >= group.start:
            return []
        key = None if kinds is None else tuple(sorted(set(kinds)))
        cached = group.across.get(key)
        if cached is not None and after_seq >= cached[0]:
            found = cached[1]
            return _cut(found[bisect.bisect_right(found, after_seq, key=_seq_of) :], limit)
        found = self._entries_page(None, kinds, after_seq, limit)
        if limit is None or len(found) < limit:  # all there was: a later read is a tail
            group.across[key] = (after_seq, found)
        return found

    def _entries_page(
        self,
        case_id: str | None,
        kinds: Sequence[str] | None,
        after_seq: int,
        limit: int | None,
    ) -> list[Entry]:
        """The committed entries asked for (at most ``limit``), in seq order."""
        query = self._q.entries_page(
            after=after_seq > 0,
            case=case_id is not None,
            kinds=kinds is not None,
            limit=limit is not None,
        )
        values = {
            "after": after_seq,
            "case_id": case_id,
            "kinds": None if kinds is None else list(kinds),
            "limit": None if limit is None else max(limit, 0),
        }
        with self._read() as conn:
            return [self._entry(row) for row in conn.execute(query, values)]

    def decision_entry(self, case_id: str) -> Entry | None:
        """The case's decision.recorded entry; JournalIntegrityError when the
        decisions row and the chain disagree (a deleted or edited row)."""
        group = self._joined()
        if group is not None:
            with self._failures():
                view = self._view(group, case_id)
                chain = [e for e in view.entries if e.kind == DECISION_KIND]
                problem = decision_problem(case_id, view.decision_row, [e.seq for e in chain])
                if problem is not None:
                    raise Finding("decision-row", problem, case_id=case_id).error()
                return chain[0] if chain else None
        q = self._q
        decisions = q.entries_page(after=False, case=True, kinds=True, limit=False)
        with self._read() as conn:
            row_seq = conn.execute(q.decision_seq, {"case_id": case_id}).scalar_one_or_none()
            rows = conn.execute(decisions, {"case_id": case_id, "kinds": [DECISION_KIND]}).all()
        problem = decision_problem(case_id, row_seq, [r.seq for r in rows])
        if problem is not None:
            raise Finding("decision-row", problem, case_id=case_id).error()
        return self._entry(rows[0]) if rows else None

    def verify(self, since: int = 0, since_hash: str = GENESIS_HASH) -> ChainReport:
        """Walk the chain (see :func:`verify_chain`, and :meth:`Store.verify` for
        ``since``); an unreadable row is a broken link.

        Each entry's hash is recomputed from its row as stored (the payload text is
        canonical JSON, framed as it was hashed, not serialised again); a row whose
        text is not in canonical form is hashed from its parsed body instead, as
        :func:`verify_chain` does, so the outcome is the same, and faster. A row whose
        stored text hashes to its hash holds the canonical JSON its writer hashed, so
        it is not parsed; any other is (an unreadable one is named as broken)."""
        prev, count = since_hash, since
        with self._read() as conn:
            if since:
                found = conn.execute(
                    select(self._entries.c.hash).where(self._entries.c.seq == since)
                ).scalar_one_or_none()
                if (broken := broken_since(since, since_hash, found)) is not None:
                    return broken
            links = self._links_in_order(conn, after=since)
            for seq, case_id, kind, payload, prev_hash, at, own in links:
                count += 1
                try:
                    computed: str | None = body_hash(seq, case_id, kind, payload, prev_hash, at)
                except Exception:  # a column of the wrong type: the parse below says which
                    computed = None
                if computed == own and seq == count and prev_hash == prev:
                    prev = own  # the link as written: the common case, decided here
                    continue
                row = conn.execute(select(self._entries).where(self._entries.c.seq == seq)).one()
                if computed is None or computed != row.hash:  # not as written: as parsed
                    try:
                        entry = self._entry(row)
                    except JournalError as e:
                        detail = f"entry {row.seq} is {e.message}"
                        return ChainReport.broken(
                            row.seq, detail, entries=count, head=prev, since=since
                        )
                    computed = entry_hash(entry.prev_hash, entry.body())
                problem = link_problem(row.seq, row.prev_hash, row.hash, computed, count, prev)
                if problem is not None:
                    return ChainReport.broken(
                        row.seq, problem, entries=count, head=prev, since=since
                    )
                prev = row.hash
        return ChainReport(ok=True, entries=count, head=prev, since=since)

    def _links_in_order(self, conn: Connection, after: int = 0) -> Iterator[Any]:
        """Every journal row's hashed columns (seq, case id, kind, payload, previous
        hash, time, hash) after entry ``after``, in seq order, a page (VERIFY_PAGE
        rows) at a time."""
        c = self._entries.c
        columns = (c.seq, c.case_id, c.kind, c.payload, c.prev_hash, c.recorded_at, c.hash)
        while True:
            rows = conn.execute(
                select(*columns).where(c.seq > after).order_by(c.seq).limit(VERIFY_PAGE)
            ).all()
            yield from rows
            if len(rows) < VERIFY_PAGE:
                return
            after = rows[-1].seq

    def _rows_in_order(self, conn: Connection) -> Iterator[Any]:
        """Every journal row in seq order, read a page (VERIFY_PAGE rows) at a time."""
        c = self._entries.c
        after = 0
        while True:
            rows = conn.execute(
                select(self._entries).where(c.seq > after).order_by(c.seq).limit(VERIFY_PAGE)
            ).all()
            yield from rows
            if len(rows) < VERIFY_PAGE:
                return
            after = rows[-1].seq

    # ------------------------------------------------------------------ side stores

    def put_case(self, case_id: str, document: Mapping[str, Any] | Normal) -> bool:
        # intake's document comes in its normal form: its text is not written again
        normal: Normal | None = document if isinstance(document, Normal) else None
        text = dumps(document, sort_keys=True) if normal is None else normal.text
        group = self._joined()
        if group is not None:
            with self._failures():
                view = self._view(group, case_id)
                if view.document is not None:
                    return False
                if group.conn is None:  # deferred: placed at the commit
                    group.position = 0 if group.position is None else group.position
                    group.written.add(case_id)
                elif group.position is None:
                    last = group.conn.execute(self._q.max_position)
                    group.position = int(last.scalar_one() or 0)
                group.position += 1
                view.document = ReadOnlyDict(loads(text) if normal is None else normal.value)
                view.document_text = text
                group.case_rows.append(
                    {"case_id": case_id, "position": group.position, "document": text}
                )
                return True
        with self._write() as conn:
            exists = conn.execute(self._q.case_exists, {"case_id": case_id}).first()
            if exists is not None:
                return False
            last = conn.execute(self._q.max_position).scalar_one()
            conn.execute(
                self._cases.insert().values(
                    case_id=case_id, position=(last or 0) + 1, document=text
                )
            )
            return True

    def get_case(self, case_id: str) -> Mapping[str, Any] | None:
        """The stored case document; JournalIntegrityError when it is not the one its
        intake.accepted entry took in (an edited row is never served)."""
        group = self._joined()
        if group is not None:
            with self._failures():
                view = self._view(group, case_id)
                if view.document is None:
                    return None
                if not view.document_checked:  # checked once against its digest
                    digest = accepted_digest(view.accepted or {})
                    problem = document_problem(view.document, digest, text=view.document_text)
                    if problem is not None:
                        raise Finding("case-document", problem, case_id=case_id).error()
                    view.document_checked = digest is not None
                return view.document  # read-only: the same object each time it is read
        with self._read() as conn:
            text = conn.execute(self._q.document, {"case_id": case_id}).scalar_one_or_none()
            accepted = None if text is None else self._accepted(conn, case_id)
        if text is None:
            return None
        return _stored_document(case_id, text, accepted)[0]

    def put_monitoring(self, case_id: str, data: Mapping[str, Any] | Normal) -> bool:
        normal: Normal | None = data if isinstance(data, Normal) else None
        text = dumps(data, sort_keys=True) if normal is None else normal.text
        group = self._joined()
        if group is not None:
            with self._failures():
                if self._group_monitoring(group, case_id) is not None:
                    return False
                group.monitoring[case_id] = dict(loads(text) if normal is None else normal.value)
                group.monitoring_rows.append({"case_id": case_id, "data": text})
                group.written.add(vault_case(case_id))
                return True
        with self._write() as conn:
            exists = conn.execute(self._q.vault_row_exists, {"case_id": case_id}).first()
            if exists is not None:
                return False
            conn.execute(self._monitoring.insert().values(case_id=case_id, data=text))
            return True

    def get_monitoring(self, case_id: str) -> Mapping[str, Any] | None:
        """The vault row under ``case_id`` (a case id, or ``<caseId>#...``);
        JournalIntegrityError when it does not match the seal its intake.accepted
        entry holds (edited, moved or deleted)."""
        group = self._joined()
        if group is not None:
            with self._failures():
                data = self._group_monitoring(group, case_id)
                accepted = self._view(group, vault_case(case_id)).accepted
        else:
            with self._read() as conn:
                text = conn.execute(self._q.vault_data, {"case_id": case_id}).scalar_one_or_none()
                accepted = self._accepted(conn, vault_case(case_id))
            data = None if text is None else dict(loads(text))
        if accepted is not None:
            problem = vault_problem(self.key, case_id, data, vault_seal(accepted, case_id))
            if problem is not None:
                raise Finding("vault", problem, case_id=vault_case(case_id)).error()
        return data

    def _group_monitoring(self, group: _Group, name: str) -> Mapping[str, Any] | None:
        if name not in group.monitoring:
            with self._group_reader(group) as conn:
                text = conn.execute(self._q.vault_data, {"case_id": name}).scalar_one_or_none()
            group.monitoring[name] = None if text is None else dict(loads(text))
        found = group.monitoring[name]
        return None if found is None else dict(found)

    def case_ids(self) -> list[str]:
        with self._read() as conn:
            return list(
                conn.execute(
                    select(self._cases.c.case_id).order_by(self._cases.c.position)
                ).scalars()
            )

    def case_files(self, case_ids: Sequence[str]) -> dict[str, CaseFile]:
        """Three reads a page of cases (their documents, their vault rows and their
        intake.accepted entries) where :meth:`get_case` and :meth:`get_monitoring`
        make two each per case; each document and row checked as they check it. In a
        group, the group's own views answer (what it wrote is not committed)."""
        wanted = list(dict.fromkeys(case_ids))
        group = self._joined()
        out: dict[str, CaseFile] = {}
        if group is not None:
            # A deferred group's views answer for the cases it has read (its own rows
            # among them); the others are read as committed.
            mine = [c for c in wanted if group.conn is not None or c in group.cases]
            out = {c: CaseFile(self.get_case(c), self.get_monitoring(c)) for c in mine}
            if len(out) == len(wanted):
                return out
            wanted = [c for c in wanted if c not in out]
        q = self._q
        for start in range(0, len(wanted), VERIFY_PAGE):
            page = wanted[start : start + VERIFY_PAGE]
            with self._read() as conn:
                documents: dict[str, str] = {
                    row.case_id: row.document for row in conn.execute(q.documents_of, {"ids": page})
                }
                rows: dict[str, str] = {
                    row.case_id: row.data for row in conn.execute(q.vault_rows_of, {"ids": page})
                }
                accepted: dict[str, str] = {}
                for row in conn.execute(q.accepted_of, {"ids": page}):
                    accepted.setdefault(row.case_id, row.payload)  # the first, as _accepted
            for case_id in page:
                taken = accepted.get(case_id)
                intake = None if taken is None else dict(loads(taken))
                text = documents.get(case_id)
                document = None if text is None else dict(loads(text))
                if document is not None and intake is not None:
                    problem = document_problem(document, accepted_digest(intake), text=text)
                    if problem is not None:
                        raise Finding("case-document", problem, case_id=case_id).error()
                raw = rows.get(case_id)
                data = None if raw is None else dict(loads(raw))
                if intake is not None:
                    problem = vault_problem(self.key, case_id, data, vault_seal(intake, case_id))
                    if problem is not None:
                        raise Finding("vault", problem, case_id=case_id).error()
                out[case_id] = CaseFile(document, data)
        return out

    def case_entries(
        self, case_ids: Sequence[str], kinds: Iterable[str] | None = None
    ) -> dict[str, list[Entry]]:
        """One read a page of cases, each entry checked as it is read (hash and MAC,
        as :meth:`authentic_entries`); an entry of another kind is not read at all.
        In a group, the group's views answer."""
        wanted = list(dict.fromkeys(case_ids))
        of = None if kinds is None else sorted(set(kinds))
        out: dict[str, list[Entry]] = {}
        group = self._joined()
        if group is not None:
            with self._failures():
                self._load_cases(group, wanted)
                for case_id in wanted:
                    found = [
                        entry
                        for entry in group.cases[case_id].entries
                        if of is None or entry.kind in of
                    ]
                    if found:
                        out[case_id] = found
            return out
        key, q = self.key, self._q
        query = q.entries_of_cases if of is None else q.entries_of_cases_kinds
        for start in range(0, len(wanted), VERIFY_PAGE):
            page = wanted[start : start + VERIFY_PAGE]
            with self._read() as conn:
                for row in conn.execute(query, {"ids": page, "kinds": of}):
                    out.setdefault(row.case_id, []).append(self._checked(row, key))
        return out

    def touched_cases(
        self, after_seq: int, kinds: Iterable[str], including: Iterable[str] = ()
    ) -> list[str]:
        """Two reads: the cases with such an entry after ``after_seq`` (the entries'
        primary key bounds the scan to the entries after it) and those named, each
        page of names in one more; then ordered as taken in."""
        e, c = self._entries.c, self._cases.c
        touched = (
            select(e.case_id)
            .where(e.seq > after_seq, e.kind.in_(sorted(set(kinds))), e.case_id.is_not(None))
            .distinct()
        )
        named = list(dict.fromkeys(including))
        found: dict[str, int] = {}
        with self._read() as conn:
            for row in conn.execute(select(c.case_id, c.position).where(c.case_id.in_(touched))):
                found[row.case_id] = row.position
            for start in range(0, len(named), VERIFY_PAGE):
                page = named[start : start + VERIFY_PAGE]
                for row in conn.execute(select(c.case_id, c.position).where(c.case_id.in_(page))):
                    found[row.case_id] = row.position
        return sorted(found, key=found.__getitem__)

    def latest_seqs(self, after_seq: int) -> Iterator[tuple[str, int]]:
        """One aggregate over the entries after ``after_seq`` (the primary key bounds
        the scan), its rows fetched as they are given."""
        e = self._entries.c
        query = (
            select(e.case_id, func.max(e.seq))
            .where(e.seq > after_seq, e.case_id.is_not(None))
            .group_by(e.case_id)
        )
        with self._read() as conn:
            for case_id, seq in conn.execute(query):
                yield case_id, int(seq)

    def _hash_at(self, conn: Connection, seq: int) -> str | None:
        if seq == 0:
            return GENESIS_HASH
        found: str | None = conn.execute(self._q.hash_at, {"seq": seq}).scalar_one_or_none()
        return found

    def _has_marks(self, conn: Connection) -> bool:
        return inspect(conn).has_table(self._marks.name, schema=self.schema)

    def mark(self, name: str) -> Mark | None:
        m = self._marks.c
        with self._read() as conn:
            if not self._has_marks(conn):
                return None
            row = conn.execute(select(self._marks).where(m.name == name)).first()
            if row is None:
                return None
            at = self._hash_at(conn, row.seq)
        return checked_mark(self.key, name, (row.seq, row.hash, row.data, row.seal), at)

    def put_mark(self, name: str, seq: int, data: Mapping[str, Any]) -> None:
        text = dumps(dict(data), sort_keys=True)
        with self._write() as conn:
            head_hash = self._hash_at(conn, seq)
            if head_hash is None:
                raise ValueError(f"no entry {seq} to make a mark on")
            if not self._has_marks(conn):
                self._marks.create(conn, checkfirst=True)
            conn.execute(delete(self._marks).where(self._marks.c.name == name))
            conn.execute(
                self._marks.insert(),
                {
                    "name": name,
                    "seq": seq,
                    "hash": head_hash,
                    "data": text,
                    "seal": mark_row(self.key, name, seq, head_hash, text),
                },
            )

    def mark_names(self) -> list[str]:
        with self._read() as conn:
            if not self._has_marks(conn):
                return []
            return list(
                conn.execute(select(self._marks.c.name).order_by(self._marks.c.name)).scalars()
            )

    def drop_marks(self) -> int:
        with self._write() as conn:
            if not self._has_marks(conn):
                return 0
            return int(conn.execute(delete(self._marks)).rowcount or 0)


def _cut(entries: list[Entry], limit: int | None) -> list[Entry]:
    return entries if limit is None else entries[: max(limit, 0)]


def open_store(
    url: str | None = None,
    *,
    schema: str | None = None,
    clock: Clock | None = None,
    create: bool = True,
    key: JournalKey | None = None,
) -> SqlStore:
    """Open the SQL journal.

    ``url``: a SQLAlchemy URL; None means $CREDIT_DATABASE_URL, else
    ``sqlite:///credit.db`` (``./credit.db``). ``postgresql://`` and ``postgres://`` use
    psycopg 3. ``schema`` (PostgreSQL only; or ``?schema=NAME`` in the URL) keeps the
    tables in that schema, created if missing. ``create=False`` opens an existing
    journal only (JournalError if there is none) and creates nothing.
    """
    return SqlStore(resolve_url(url), schema=schema, clock=clock, create=create, key=key)


if TYPE_CHECKING:  # mypy checks that SqlStore satisfies the Store protocol

    def _is_a_store(store: SqlStore) -> Store:
        return store
