"""The service's tables, kept in the journal's database beside the journal's own::

    api_keys        (key_id PK, name UNIQUE, role, secret_hash, created_at, revoked_at)
    service_claims  (claim PK, holder, claimed_at)

``api_keys`` holds each key's salted scrypt hash, never the key; two keys cannot share
a name (the journal names a person by it), and a revoked key keeps its row (the
journal still names it) with the time it was revoked. ``service_claims``
makes a request that must run once per case (decide, release, reject, send) exclusive
across worker processes: the one whose insert lands runs it.

:class:`ServiceDb` reaches them through an engine of its own (set up as the journal
store's: :func:`credit.journal.sql.engine_for`), so the journal store itself keeps
offering no way to write anything but appends.
"""

from __future__ import annotations

import contextlib
from types import TracebackType

from sqlalchemy import Column, Float, MetaData, String, Table, inspect
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError
from sqlalchemy.schema import CreateSchema

from credit.journal.base import JournalError
from credit.journal.sql import engine_for, resolve_url, write_transaction

__all__ = ["ServiceDb", "define_service_tables"]


def define_service_tables(metadata: MetaData) -> tuple[Table, Table]:
    """Add the service's tables to ``metadata`` (in its schema); (api_keys, claims)."""
    api_keys = Table(
        "api_keys",
        metadata,
        Column("key_id", String(32), primary_key=True),
        Column("name", String, nullable=False, unique=True),
        Column("role", String(32), nullable=False),
        Column("secret_hash", String, nullable=False),
        Column("created_at", String, nullable=False),
        Column("revoked_at", String, nullable=True),
    )
    claims = Table(
        "service_claims",
        metadata,
        Column("claim", String, primary_key=True),
        Column("holder", String(64), nullable=False),
        Column("claimed_at", Float, nullable=False),
    )
    return api_keys, claims


class ServiceDb:
    """The service's two tables in the database at ``url`` (and ``schema``).

    ``create``: create them if missing (the journal's own tables are the store's or
    the migrations' business); otherwise they must exist (JournalError if not).
    """

    def __init__(self, url: str | None = None, *, schema: str | None = None, create: bool = True):
        self.engine, self.schema = engine_for(resolve_url(url), schema=schema)
        self.url = self.engine.url.render_as_string(hide_password=True)
        self.metadata = MetaData(schema=self.schema)
        self.api_keys, self.claims = define_service_tables(self.metadata)
        self.dialect = self.engine.dialect.name
        try:
            with self.failures(), self.write() as conn:
                if create:
                    if self.schema is not None:
                        conn.execute(CreateSchema(self.schema, if_not_exists=True))
                    self.metadata.create_all(conn)
                else:
                    self._check(conn)
        except BaseException:
            self.engine.dispose()
            raise

    def _check(self, conn: Connection) -> None:
        inspector = inspect(conn)
        missing = [
            t.name
            for t in (self.api_keys, self.claims)
            if not inspector.has_table(t.name, schema=self.schema)
        ]
        if missing:
            raise JournalError(
                f"no service tables at {self.url} (missing: {', '.join(missing)}; "
                "run `credit db upgrade`)"
            )

    def write(self, *, synced: bool = True) -> contextlib.AbstractContextManager[Connection]:
        """A write transaction, queued with the journal's writers on a SQLite file
        (:func:`credit.journal.sql.write_transaction`); ``synced`` false: its commit
        does not wait for the disk (a claim)."""
        return write_transaction(self.engine, synced=synced)

    def failures(self) -> _Failures:
        """Driver failures become JournalError naming the database."""
        return _Failures(self.url)

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> ServiceDb:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class _Failures:
    def __init__(self, url: str) -> None:
        self.url = url

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if isinstance(exc, DBAPIError):
            lines = str(exc.orig if exc.orig is not None else exc).strip().splitlines()
            reason = lines[0] if lines else type(exc).__name__
            raise JournalError(f"the service tables at {self.url} failed: {reason}") from exc
