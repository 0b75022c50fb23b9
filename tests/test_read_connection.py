"""Reads without a transaction's round trips on PostgreSQL, with their snapshot on SQLite.

On PostgreSQL a read runs in autocommit (:func:`credit.journal.sql.read_connection`):
under READ COMMITTED each statement takes a snapshot of its own inside a transaction
too, so BEGIN and ROLLBACK added two round trips to the server and nothing else. What
is sent is watched at the wire (libpq's trace of the connection). The other side of the
edge: a write after such a read, on the same pooled connection, is a transaction again
(a failure in it leaves nothing), and a read on SQLite keeps its transaction.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import event, text

from credit.journal.sql import engine_for, read_connection, write_transaction
from credit.service.auth import Role
from service_support import golden, service_api
from test_journal_store import pg_schema


@contextmanager
def wire_trace(*engines: object) -> Iterator[Path]:
    """What every new connection of the engines sends and receives, as libpq traces
    it (the pools are emptied first, so every connection is a traced one)."""
    from psycopg import pq

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.txt"
        with path.open("w") as out:

            def traced(dbapi_conn: object, _record: object) -> None:
                pgconn = dbapi_conn.pgconn  # type: ignore[attr-defined]
                pgconn.trace(out.fileno())
                pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)

            for engine in engines:
                engine.pool.dispose()  # type: ignore[attr-defined]
                event.listen(engine, "connect", traced)
            try:
                yield path
            finally:
                for engine in engines:
                    event.remove(engine, "connect", traced)
                    engine.pool.dispose()  # type: ignore[attr-defined]


def sent(path: Path, since: int = 0) -> list[str]:
    """The messages the client sent after byte ``since``: 'Query BEGIN', 'Parse',
    'Sync', ... (a statement's text is left out but for a simple query's)."""
    messages = []
    for line in path.read_text()[since:].splitlines():
        fields = line.split("\t")
        if fields[0] == "F" and len(fields) > 2:
            kind = fields[2].strip()
            if kind == "Query":
                kind += " " + fields[3].strip().strip('"').split()[0]
            messages.append(kind)
    return messages


def test_a_status_read_on_postgresql_sends_no_begin_and_no_rollback(tmp_path: Path) -> None:
    with service_api("postgresql", tmp_path) as api:
        for i in range(2):
            api.decided(golden("G-DECLINE-DTI", f"RC-{i}"))
        engines = (api.app.state.store._engine, api.app.state.service_db.engine)
        with wire_trace(*engines) as path:
            response = api.get("/v1/cases/RC-1", Role.UNDERWRITER)
            assert response.status_code == 200
            reads = sent(path)
            at = len(path.read_text())
            taken = api.client.post(
                "/v1/cases",
                content=json.dumps(golden("G-DECLINE-DTI", "RC-9")),
                headers=api.headers(Role.INTAKE),
            )
            assert taken.status_code == 201
            writes = sent(path, at)
    # the key's look-up and the case's entries: two statements, each one round trip
    # (Sync), no BEGIN, ROLLBACK or COMMIT around them (the case's document is not
    # read: the view takes the product and date its intake.accepted entry journaled)
    assert not [m for m in reads if m.startswith("Query")], reads
    assert reads.count("Sync") == 2, reads
    # the write after it, on a connection the read gave back, is a transaction
    assert next(m for m in writes if m.startswith("Query")) == "Query BEGIN", writes
    assert "Query COMMIT" in writes, writes


def test_a_write_on_a_connection_a_read_gave_back_is_one_transaction() -> None:
    with pg_schema() as (url, schema):
        engine, _ = engine_for(url, schema=schema)
        try:
            with engine.begin() as conn:
                conn.execute(text(f'CREATE SCHEMA "{schema}"'))
                conn.execute(text(f'CREATE TABLE "{schema}".t (n int)'))
            with read_connection(engine) as conn:
                assert conn.execute(text("SELECT 1")).scalar_one() == 1
                reader = conn.connection.dbapi_connection
                assert reader is not None and reader.autocommit  # type: ignore[attr-defined]
            with pytest.raises(RuntimeError), write_transaction(engine) as conn:
                assert conn.connection.dbapi_connection is reader  # the pool's one connection
                assert not reader.autocommit  # type: ignore[attr-defined]
                conn.execute(text(f'INSERT INTO "{schema}".t VALUES (1)'))
                raise RuntimeError("the write fails half way")
            with read_connection(engine) as conn:
                assert conn.execute(text(f'SELECT count(*) FROM "{schema}".t')).scalar_one() == 0
        finally:
            engine.dispose()


def test_a_read_on_sqlite_keeps_its_transaction(tmp_path: Path) -> None:
    engine, _ = engine_for(f"sqlite:///{tmp_path / 'read.db'}")
    statements: list[str] = []
    event.listen(
        engine,
        "connect",
        lambda dbapi_conn, _record: dbapi_conn.set_trace_callback(statements.append),
    )
    try:
        with read_connection(engine) as conn:
            conn.execute(text("SELECT 1")).scalar_one()
        assert statements[-3:] == ["BEGIN", "SELECT 1", "ROLLBACK"], statements
    finally:
        engine.dispose()
