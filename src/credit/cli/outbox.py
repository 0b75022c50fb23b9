"""``credit outbox verify``: every sent notice's kept file against the journal.

For each ``notice.sent`` entry, the outbox's ``<caseId>.notice.json`` must be there and
hash to the entry's ``noticeSha256`` (``sha256sum`` of the file is that hash). Exit 0
when every one does, 1 listing each missing or changed file, 2 bad input. Registered
on the ``credit`` app by its ``register`` (called in :mod:`credit.cli`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from credit.cli.common import DatabaseOption, LazyConsole, SchemaOption, escape
from credit.errors import CreditError

__all__ = ["outbox_app"]

EXIT_CHANGED = 1
EXIT_BAD_INPUT = 2

outbox_app = typer.Typer(
    rich_markup_mode=None,  # plain help: rich's help renderer costs ~90 ms to import
    add_completion=False,
    no_args_is_help=True,
    help="The outbox of sent notices, bound to the journal.",
)
out = LazyConsole()
err = LazyConsole(stderr=True)


@outbox_app.command()
def verify(
    outbox: Annotated[
        Path,
        typer.Option("--outbox", envvar="CREDIT_OUTBOX", help="The outbox folder."),
    ] = Path("outbox"),
    database: DatabaseOption = None,
    schema: SchemaOption = None,
) -> None:
    """List every sent notice whose file is missing or changed (exit 1 when any)."""
    from credit.journal import open_store
    from credit.kinds import NOTICE_SENT
    from credit.notices.outbox import DirectoryOutbox, outbox_problems

    try:
        with open_store(database, schema=schema, create=False) as store:
            sent = store.entries(kinds=[NOTICE_SENT])
        problems = outbox_problems(sent, DirectoryOutbox(outbox))
    except CreditError as e:
        err.print(f"[red]error:[/red] {escape(str(e))}", highlight=False)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    for problem in problems:
        out.print(
            f"case {problem.case_id} (entry {problem.seq}): {problem.detail}",
            highlight=False,
            markup=False,
        )
    intact = len(sent) - len(problems)
    out.print(
        f"{'ok' if not problems else 'CHANGED'}: {intact} of {len(sent)} sent notice(s) "
        f"intact in {outbox}",
        highlight=False,
        markup=False,
    )
    if problems:
        raise typer.Exit(EXIT_CHANGED)


def register(app: typer.Typer) -> None:
    """Register this module's commands on the ``credit`` app."""
    app.add_typer(outbox_app, name="outbox")
