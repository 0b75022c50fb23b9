"""``credit mcp --case ID``: the four sandboxed tools of one case over MCP stdio.

A thin adapter (no domain logic): it opens the SQL journal, binds the governed tools to
the one case named, and serves them on stdin/stdout until the client hangs up. The
case must have been taken in by intake; nothing here creates a journal or a case.
Every call is governed as in process (guard, redaction journal, held commit). stdout
carries the MCP protocol only; messages go to stderr. Exit status 2 for bad input or
an unreachable store.

Registered on the ``credit`` app by its ``register`` (called in :mod:`credit.cli`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from credit.cli.common import EXIT_BAD_INPUT, LazyConsole, escape
from credit.errors import CreditError

__all__ = ["mcp_command"]

_err = LazyConsole(stderr=True)


def mcp_command(
    case: Annotated[str, typer.Option("--case", help="The case id (taken in by intake).")],
    database: Annotated[
        str | None,
        typer.Option(
            "--database",
            "--db",
            help="Database URL (default: $CREDIT_DATABASE_URL, else sqlite:///credit.db).",
            show_default=False,
        ),
    ] = None,
    underwriter: Annotated[
        str, typer.Option("--underwriter", help="Who decides (written into the held decision).")
    ] = "mcp-client",
    policy: Annotated[
        Path | None,
        typer.Option("--policy", help="Policy YAML file (default: the bundled reference policy)."),
    ] = None,
) -> None:
    """Serve the four sandboxed tools of one case over MCP stdio."""
    from credit.governance.governor import Governor
    from credit.journal import open_store
    from credit.policy import PolicyRegistry, load_policy
    from credit.tools import CaseTools, build_server

    try:
        registry = PolicyRegistry([load_policy(policy)]) if policy else PolicyRegistry.bundled()
        store = open_store(database, create=False)
    except CreditError as e:
        _err.print(f"[red]error:[/red] {escape(str(e))}", highlight=False)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    try:
        if store.get_case(case) is None:
            _err.print(
                f"[red]error:[/red] case {escape(case)}: no case with this id has been taken in",
                highlight=False,
            )
            raise typer.Exit(EXIT_BAD_INPUT)
        governor = Governor(store, case, underwriter=underwriter)
        build_server(CaseTools(store, case, governor, registry)).run("stdio")
    finally:
        store.close()


def register(app: typer.Typer) -> None:
    """Register this module's commands on the ``credit`` app."""
    app.command("mcp")(mcp_command)
