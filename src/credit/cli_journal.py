"""``credit journal``: verify the hash-chained case journal, or show its entries.

A thin adapter over :mod:`credit.journal`. Exit status: 0 the chain is whole, 1 a link
is broken (the first broken entry is named), 2 bad input or an unreachable store.
Nothing here creates a journal: a missing database or missing tables is exit 2.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from credit.canonical import dumps
from credit.errors import CreditError
from credit.journal import DATABASE_URL_ENV, DEFAULT_DATABASE_URL, SqlStore, open_store

__all__ = ["journal_app"]

EXIT_BROKEN = 1
EXIT_BAD_INPUT = 2

journal_app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="The hash-chained case journal: verify the chain, show entries.",
)
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

DatabaseOption = Annotated[
    str | None,
    typer.Option(
        "--database",
        "--db",
        help=f"Database URL (default: ${DATABASE_URL_ENV}, else {DEFAULT_DATABASE_URL}).",
        show_default=False,
    ),
]
SchemaOption = Annotated[
    str | None,
    typer.Option("--schema", help="PostgreSQL schema holding the journal tables."),
]


def _open(database: str | None, schema: str | None) -> SqlStore:
    try:
        return open_store(database, schema=schema, create=False)
    except CreditError as e:
        err.print(f"[red]error:[/red] {escape(str(e))}", highlight=False)
        raise typer.Exit(EXIT_BAD_INPUT) from None


def _count(entries: int) -> str:
    return f"{entries} entr{'y' if entries == 1 else 'ies'}"


@journal_app.command()
def verify(database: DatabaseOption = None, schema: SchemaOption = None) -> None:
    """Walk the whole chain; name the first broken link (exit 1) or confirm it (exit 0)."""
    store = _open(database, schema)
    try:
        report = store.verify()
    except CreditError as e:
        err.print(f"[red]error:[/red] {escape(str(e))}", highlight=False)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    finally:
        store.close()
    if report.ok:
        out.print(f"ok: {_count(report.entries)}, head {report.head}", highlight=False)
        return
    out.print(
        f"BROKEN at entry {report.first_broken_seq}: {report.detail}\n"
        f"intact before it: {_count(report.entries - 1)}, head {report.head}",
        highlight=False,
        markup=False,
    )
    raise typer.Exit(EXIT_BROKEN)


@journal_app.command()
def show(
    case: Annotated[str | None, typer.Option("--case", help="Only this case's entries.")] = None,
    kind: Annotated[
        list[str] | None, typer.Option("--kind", help="Only entries of this kind (repeatable).")
    ] = None,
    database: DatabaseOption = None,
    schema: SchemaOption = None,
) -> None:
    """Print the entries as JSON Lines in chain order: {seq, caseId, kind, payload, ...}."""
    store = _open(database, schema)
    try:
        entries = store.entries(case_id=case, kinds=kind or None)
    except CreditError as e:
        err.print(f"[red]error:[/red] {escape(str(e))}", highlight=False)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    finally:
        store.close()
    for entry in entries:
        sys.stdout.write(dumps(entry.to_wire()) + "\n")
    sys.stdout.flush()
