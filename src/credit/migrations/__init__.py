"""Schema migrations (Alembic) for the journal's database, SQLite and PostgreSQL.

``upgrade(url)`` (``credit db upgrade``) brings a database to the newest revision:
the journal's five tables exactly as :mod:`credit.journal.sql` defines them, and the
service's tables (:mod:`credit.service.tables`). With a PostgreSQL schema (``?schema=``
or ``schema=``) the tables and Alembic's version table live in that schema, created
if missing. A journal created before migrations (its tables made by the store itself)
is adopted: the first revision creates only the tables that are missing.

The Alembic command line works too: ``alembic -c src/credit/migrations/alembic.ini
upgrade head`` (the URL from ``$CREDIT_DATABASE_URL``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import MetaData
from sqlalchemy.engine import Connection
from sqlalchemy.schema import CreateSchema

from credit.journal.sql import engine_for, journal_metadata
from credit.service.tables import define_service_tables

__all__ = [
    "ALEMBIC_INI",
    "alembic_config",
    "current_revision",
    "head_revision",
    "target_metadata",
    "upgrade",
]

HERE: Final = Path(__file__).resolve().parent
ALEMBIC_INI: Final = HERE / "alembic.ini"


def target_metadata(schema: str | None = None) -> MetaData:
    """Every table the migrations manage: the journal's and the service's."""
    metadata = journal_metadata(schema)
    define_service_tables(metadata)
    return metadata


def alembic_config(connection: Connection | None = None, schema: str | None = None) -> Config:
    config = Config(str(ALEMBIC_INI))
    config.set_main_option("script_location", str(HERE))
    config.attributes["connection"] = connection
    config.attributes["schema"] = schema
    return config


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


def current_revision(url: str | None = None, *, schema: str | None = None) -> str | None:
    engine, schema = engine_for(url, schema=schema)
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"version_table_schema": schema})
            return context.get_current_revision()
    finally:
        engine.dispose()


def upgrade(
    url: str | None = None, *, schema: str | None = None, revision: str = "head"
) -> tuple[str | None, str | None]:
    """Upgrade the database at ``url`` to ``revision``; (revision before, after)."""
    engine, schema = engine_for(url, schema=schema)
    try:
        with engine.begin() as conn:
            if schema is not None:
                conn.execute(CreateSchema(schema, if_not_exists=True))
            before = MigrationContext.configure(
                conn, opts={"version_table_schema": schema}
            ).get_current_revision()
            command.upgrade(alembic_config(conn, schema), revision)
            after = MigrationContext.configure(
                conn, opts={"version_table_schema": schema}
            ).get_current_revision()
        return before, after
    finally:
        engine.dispose()
