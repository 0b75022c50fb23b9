"""Alembic's environment: run the migrations on the connection handed in by
:func:`credit.migrations.upgrade`, or on ``$CREDIT_DATABASE_URL`` (the alembic CLI)."""

from __future__ import annotations

from logging.config import fileConfig

from alembic import context
from sqlalchemy.engine import Connection
from sqlalchemy.schema import CreateSchema

from credit.journal.sql import engine_for
from credit.migrations import target_metadata

config = context.config


def _run(connection: Connection, schema: str | None) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata(schema),
        version_table_schema=schema,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


def main() -> None:
    connection = config.attributes.get("connection")
    schema = config.attributes.get("schema")
    if connection is not None:
        _run(connection, schema)
        return
    if config.config_file_name is not None and config.cmd_opts is not None:
        fileConfig(config.config_file_name, disable_existing_loggers=False)
    engine, schema = engine_for(None, schema=schema)
    try:
        with engine.begin() as conn:
            if schema is not None:
                conn.execute(CreateSchema(schema, if_not_exists=True))
            _run(conn, schema)
    finally:
        engine.dispose()


if context.is_offline_mode():
    raise SystemExit("offline (--sql) migrations are not supported: run against a database")
main()
