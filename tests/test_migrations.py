"""Schema migrations (Alembic): on SQLite and on a fresh PostgreSQL schema the newest
revision builds exactly the tables the code defines (compare_metadata: no diff)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from typer.testing import CliRunner

from credit.cli import app
from credit.journal import open_store
from credit.journal.sql import engine_for
from credit.migrations import current_revision, head_revision, target_metadata, upgrade
from test_journal_store import pg_schema

BACKENDS = ("sqlite", "postgresql")


@contextmanager
def fresh(backend: str, tmp_path: Path) -> Iterator[tuple[str, str | None]]:
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'migrated.db'}", None
    else:
        with pg_schema() as (url, schema):
            yield url, schema


def diff(url: str, schema: str | None) -> list[Any]:
    """What Alembic's autogenerate finds between the database and the code's tables."""
    engine, schema = engine_for(url, schema=schema)
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(
                conn,
                opts={
                    "version_table_schema": schema,
                    "include_schemas": schema is not None,
                    "include_name": lambda name, kind, _parent: kind != "schema" or name == schema,
                    "compare_type": True,
                },
            )
            return list(compare_metadata(context, target_metadata(schema)))
    finally:
        engine.dispose()


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_migration_builds_exactly_the_tables_the_code_defines(
    backend: str, tmp_path: Path
) -> None:
    with fresh(backend, tmp_path) as (url, schema):
        assert upgrade(url, schema=schema) == (None, head_revision())
        assert diff(url, schema) == []
        assert current_revision(url, schema=schema) == head_revision()
        # The store opens the migrated database as it is, creating nothing.
        with open_store(url, schema=schema, create=False) as store:
            store.append("M-1", "test.entry", {"n": 1})
            assert store.verify().ok


@pytest.mark.parametrize("backend", BACKENDS)
def test_upgrading_again_changes_nothing(backend: str, tmp_path: Path) -> None:
    with fresh(backend, tmp_path) as (url, schema):
        upgrade(url, schema=schema)
        assert upgrade(url, schema=schema) == (head_revision(), head_revision())
        assert diff(url, schema) == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_journal_the_store_created_before_migrations_is_adopted_with_its_entries(
    backend: str, tmp_path: Path
) -> None:
    with fresh(backend, tmp_path) as (url, schema):
        with open_store(url, schema=schema) as store:
            store.append("M-2", "test.entry", {"n": 2})
        upgrade(url, schema=schema)
        assert diff(url, schema) == []
        with open_store(url, schema=schema, create=False) as store:
            assert [e.case_id for e in store.entries()] == ["M-2"]
            assert store.verify().ok


def test_credit_db_upgrade_migrates_the_database_named_and_says_so(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    runner = CliRunner()
    first = runner.invoke(app, ["db", "upgrade", "--database", url])
    assert first.exit_code == 0, first.output
    assert f"upgraded from an empty database to {head_revision()}" in first.output
    again = runner.invoke(app, ["db", "upgrade", "--database", url])
    assert again.exit_code == 0 and "already at revision" in again.output
    assert diff(url, None) == []
