"""``credit serve``, ``credit keys create|list`` and ``credit db upgrade``.

A thin adapter over :mod:`credit.service` and :mod:`credit.migrations`. ``serve`` runs
the HTTP API under uvicorn; with ``--workers N`` each worker process builds its own app
from the ``CREDIT_*`` environment this command sets (the database URL and schema, the
outbox, a session secret shared by the workers). Registered on the ``credit`` app by its
``register`` (called in :mod:`credit.cli`).
"""

from __future__ import annotations

import json
import os
import secrets
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from credit.cli.common import EXIT_BAD_INPUT, LazyConsole, escape
from credit.errors import CreditError

__all__ = ["db_app", "keys_app", "serve_command"]

_out = LazyConsole()
_err = LazyConsole(stderr=True)

keys_app = typer.Typer(
    rich_markup_mode=None, help="API keys: one per caller, each with one role (stored hashed)."
)
db_app = typer.Typer(
    rich_markup_mode=None, help="The journal's database: schema migrations (Alembic)."
)

DatabaseOption = Annotated[
    str | None,
    typer.Option(
        "--database",
        "--db",
        help="Database URL (default: $CREDIT_DATABASE_URL, else sqlite:///credit.db).",
        show_default=False,
    ),
]
SchemaOption = Annotated[
    str | None,
    typer.Option("--schema", help="PostgreSQL schema for the tables.", show_default=False),
]


def _fail(e: CreditError) -> typer.Exit:
    _err.print(f"[red]error:[/red] {escape(str(e))}", highlight=False)
    return typer.Exit(EXIT_BAD_INPUT)


def serve_command(
    host: Annotated[str, typer.Option("--host", help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port.", min=0, max=65535)] = 8000,
    workers: Annotated[
        int, typer.Option("--workers", help="Worker processes (uvicorn).", min=1)
    ] = 1,
    database: DatabaseOption = None,
    schema: SchemaOption = None,
    outbox: Annotated[
        Path | None,
        typer.Option(
            "--outbox", help="Folder for sent notices (default: $CREDIT_OUTBOX, else ./outbox)."
        ),
    ] = None,
    log_level: Annotated[str, typer.Option("--log-level", help="uvicorn's log level.")] = "info",
    print_openapi: Annotated[
        bool,
        typer.Option("--print-openapi", help="Print the OpenAPI document (JSON) and exit."),
    ] = False,
) -> None:
    """Serve the HTTP API (and the reviewer console) with uvicorn."""
    from credit.service.settings import (
        OUTBOX_ENV,
        SCHEMA_ENV,
        SESSION_SECRET_ENV,
        ServiceSettings,
    )

    if print_openapi:
        sys.stdout.write(openapi_text())
        return
    import uvicorn

    from credit.journal.sql import DATABASE_URL_ENV, resolve_url

    url = resolve_url(database)
    os.environ[DATABASE_URL_ENV] = url
    if schema:
        os.environ[SCHEMA_ENV] = schema
    if outbox is not None:
        os.environ[OUTBOX_ENV] = str(outbox)
    os.environ.setdefault(SESSION_SECRET_ENV, secrets.token_urlsafe(32))
    try:  # fail here, once, rather than in every worker
        from credit.service.app import create_app

        create_app(ServiceSettings.from_env()).state.close()
    except CreditError as e:
        raise _fail(e) from None
    from credit.service import workers as spread

    target = "credit.service.app:create_app_from_env"
    options: dict[str, Any] = {
        "factory": True,
        "log_level": log_level,
        "access_log": False,
        # The C parser on uvloop, with TCP_NODELAY on every connection (uvicorn leaves
        # it off with several workers): credit.service.transport
        "http": "credit.service.transport:NoDelayHttpToolsProtocol",
        "loop": "uvloop",
    }
    _err.print(f"credit: serving http://{host}:{port} ({workers} worker(s)), journal {url}")
    if workers > 1 and spread.supports():
        # Each worker on a socket of its own, the kernel spreading the connections.
        try:
            status = spread.run_workers(
                {"app": target, **options}, host=host, port=port, workers=workers
            )
        except OSError as e:
            _err.print(f"[red]error:[/red] cannot listen on {host}:{port}: {escape(str(e))}")
            raise typer.Exit(EXIT_BAD_INPUT) from None
        if status:
            raise typer.Exit(status)
        return
    uvicorn.run(
        target,
        **options,
        host=host,
        port=port,
        workers=workers,
        # Two workers importing at once on a small machine can take over uvicorn's
        # default 5 s to answer the supervisor's first health check.
        timeout_worker_healthcheck=60,
    )


def openapi_text() -> str:
    """The service's OpenAPI document as committed in docs/openapi.json."""
    from credit.journal import InMemoryStore
    from credit.notices.outbox import InMemoryOutbox
    from credit.service.app import create_app
    from credit.service.keys import MemoryKeyStore

    service = create_app(store=InMemoryStore(), keys=MemoryKeyStore(), outbox=InMemoryOutbox())
    return json.dumps(service.openapi(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@keys_app.command("create")
def keys_create(
    role: Annotated[
        str,
        typer.Option("--role", help="intake, underwriter, reviewer, officer or auditor."),
    ],
    name: Annotated[
        str,
        typer.Option("--name", help="Who holds the key (journaled; one key per name)."),
    ],
    database: DatabaseOption = None,
    schema: SchemaOption = None,
) -> None:
    """Create an API key and print it, once (only its salted hash is stored)."""
    from credit.service.keys import SqlKeyStore
    from credit.service.tables import ServiceDb

    try:
        with ServiceDb(database, schema=schema) as db:
            record, key = SqlKeyStore(db).create(role, name)
    except CreditError as e:
        raise _fail(e) from None
    _err.print(
        f"created key {record.key_id} for {escape(record.name)} (role {record.role.value}); "
        "it is shown once, here:",
        highlight=False,
    )
    _out.print(key, highlight=False, markup=False)


@keys_app.command("list")
def keys_list(database: DatabaseOption = None, schema: SchemaOption = None) -> None:
    """List the API keys (id, name, role, created); never the keys themselves."""
    from rich.table import Table

    from credit.service.keys import SqlKeyStore
    from credit.service.tables import ServiceDb

    try:
        with ServiceDb(database, schema=schema, create=False) as db:
            records = SqlKeyStore(db).list()
    except CreditError as e:
        raise _fail(e) from None
    table = Table(title=f"{len(records)} API key(s)")
    for column in ("key id", "name", "role", "created", "revoked"):
        table.add_column(column)
    for r in records:
        table.add_row(r.key_id, escape(r.name), r.role.value, r.created_at, r.revoked_at or "")
    _out.print(table)


@keys_app.command("revoke")
def keys_revoke(
    key_id: Annotated[str, typer.Argument(help="The key's id (credit keys list).")],
    database: DatabaseOption = None,
    schema: SchemaOption = None,
) -> None:
    """Revoke a key at once: the API refuses it on the next request, and so does every
    console session signed in with it. Its row stays (the journal names it)."""
    from credit.service.keys import SqlKeyStore
    from credit.service.tables import ServiceDb

    try:
        with ServiceDb(database, schema=schema, create=False) as db:
            record = SqlKeyStore(db).revoke(key_id)
    except CreditError as e:
        raise _fail(e) from None
    _out.print(
        f"revoked key {record.key_id} of {escape(record.name)} ({record.role.value}) at "
        f"{record.revoked_at}",
        highlight=False,
    )


@db_app.command("upgrade")
def db_upgrade(
    database: DatabaseOption = None,
    schema: SchemaOption = None,
    revision: Annotated[str, typer.Option("--revision", help="Target revision.")] = "head",
) -> None:
    """Migrate the database (SQLite or PostgreSQL) to the newest schema revision."""
    from sqlalchemy.exc import SQLAlchemyError

    from credit.journal.sql import resolve_url
    from credit.migrations import upgrade

    url = resolve_url(database)
    try:
        before, after = upgrade(url, schema=schema, revision=revision)
    except CreditError as e:
        raise _fail(e) from None
    except SQLAlchemyError as e:
        reason = str(getattr(e, "orig", None) or e).strip().splitlines()[0]
        _err.print(f"[red]error:[/red] {escape(url)}: {escape(reason)}", highlight=False)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    where = f"{url}" + (f" (schema {schema})" if schema else "")
    if before == after:
        _out.print(f"{where}: already at revision {after}", highlight=False)
    else:
        _out.print(f"{where}: upgraded from {before or 'an empty database'} to {after}")


def register(app: typer.Typer) -> None:
    """Register this module's commands on the ``credit`` app."""
    app.command("serve")(serve_command)
    app.add_typer(keys_app, name="keys")
    app.add_typer(db_app, name="db")
