"""The ``credit`` command line: a thin adapter over the core (no domain logic here).

Exit status: 0 success, 1 an eval or check failed (or an internal error), 2 bad input
(the message names the source, line, case and field; in a batch every other case is
still decided). No command prints a traceback unless ``credit --debug`` is given:
:func:`main` reports any error it did not expect in one line naming it.

The package, one module per group of commands, in layers (``.importlinter`` holds
them, so no module imports another in a circle):

- this module: the typer app, its global options, the registration of every command,
  and :func:`main`;
- the commands: :mod:`~credit.cli.run` (decide, run, eval), :mod:`~credit.cli.notices`
  (notice, verify, mutate, lock), :mod:`~credit.cli.governance` (review, queue,
  catalogue, fairness), :mod:`~credit.cli.batch`, :mod:`~credit.cli.spark`,
  :mod:`~credit.cli.service` (serve, keys, db), :mod:`~credit.cli.why` (why, replay),
  :mod:`~credit.cli.outbox`, :mod:`~credit.cli.bundle` (export, verify-bundle),
  :mod:`~credit.cli.mcp`;
- what commands share: :mod:`~credit.cli.journal` (``credit journal``, and the
  checkpoint helpers the bundle uses), :mod:`~credit.cli.tables`,
  :mod:`~credit.cli.common` (exit codes, consoles, shared options).

Start-up is kept short: the modules import typer and the standard library at their top
level, and the core, the journal, rich and the extras inside the commands that use
them (``tests/test_cli_startup.py`` pins it; ``benchmarks/bench_cli.py`` times it).
"""

from __future__ import annotations

import sys
import traceback
from typing import Annotated

import typer

from credit.cli import (
    batch,
    bundle,
    governance,
    journal,
    mcp,
    notices,
    outbox,
    run,
    service,
    spark,
    why,
)
from credit.cli.common import EXIT_BAD_INPUT, EXIT_FAILED, STATE, err, escape

__all__ = ["app", "main"]

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Governed consumer credit decisioning (auto loans and credit cards).",
)


@app.callback()
def _global_options(
    debug: Annotated[
        bool,
        typer.Option("--debug", help="On an unexpected error, print its traceback too."),
    ] = False,
) -> None:
    """Governed consumer credit decisioning (auto loans and credit cards)."""
    STATE.debug = debug


run.register(app)
app.add_typer(journal.journal_app, name="journal")
notices.register_notices(app)
governance.register_governance(app)
batch.register(app)
bundle.register(app)
mcp.register(app)
outbox.register(app)
service.register(app)
spark.register(app)
why.register(app)


def main() -> None:
    """The ``credit`` command. Every error ends in one line on stderr naming it (exit 2
    for bad input, 1 otherwise); ``credit --debug ...`` prints the traceback too."""
    from credit.errors import CreditError

    try:
        app()
    except CreditError as e:  # a last line of defence: never a traceback for our errors
        if STATE.debug:
            traceback.print_exc()
        err.print(f"[red]error:[/red] {escape(str(e))}", highlight=False)
        sys.exit(EXIT_BAD_INPUT if isinstance(e, ValueError) else EXIT_FAILED)
    except Exception as e:  # nor for any other error, unless --debug
        if STATE.debug:
            traceback.print_exc()
        hint = "" if STATE.debug else " (run with credit --debug for the traceback)"
        err.print(
            f"[red]error:[/red] {escape(f'internal error ({type(e).__name__}: {e}){hint}')}",
            highlight=False,
        )
        sys.exit(EXIT_FAILED)
