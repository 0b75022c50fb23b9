"""The ``credit`` command line: a thin adapter over the core (no domain logic here).

Exit status: 0 success, 1 an eval or check failed (or an internal error), 2 bad input
(the message names the source, line, case and field; in a batch every other case is
still decided). No command prints a traceback unless ``credit --debug`` is given:
:func:`main` reports any error it did not expect in one line naming it.

The package, one module per group of commands, in layers (``.importlinter`` holds
them, so no module imports another in a circle):

- this module: the typer app, its global options, the table of every command and the
  module that registers it (:data:`COMMANDS`: a command's module is imported when the
  command runs or a help lists it), and :func:`main`;
- the commands: :mod:`~credit.cli.run` (decide, run, eval), :mod:`~credit.cli.notices`
  (notice, verify, mutate, lock), :mod:`~credit.cli.governance` (review, queue,
  catalogue, fairness), :mod:`~credit.cli.batch`, :mod:`~credit.cli.spark`,
  :mod:`~credit.cli.service` (serve, keys, db), :mod:`~credit.cli.why` (why, replay),
  :mod:`~credit.cli.outbox`, :mod:`~credit.cli.bundle` (export, verify-bundle),
  :mod:`~credit.cli.mcp`;
- what commands share: :mod:`~credit.cli.journal` (``credit journal``, and the
  checkpoint helpers the bundle uses), :mod:`~credit.cli.tables`,
  :mod:`~credit.cli.common` (exit codes, consoles, shared options).

Start-up is kept short: only the module of the command that runs is imported, and only
that command is built; the modules import typer and the standard library at their top
level, and the core, the journal, rich and the extras inside the commands that use
them; the garbage collector's first pass waits until start-up is over
(:func:`_put_off_the_first_collection`) and its last, at exit, skips the command's
objects (:func:`_skip_the_final_collection`); the packaged data's parse is read from
the start-up cache (:mod:`credit.yamldata`), without PyYAML (its patterns are compiled
by ``re`` in every process); and pydantic does not search the installed distributions
for plugins, which this process switches off (:func:`_no_validation_plugins`), nor
imports what that search needs (:func:`_no_plugin_search`: a stand-in for its loader)
(``tests/test_cli_startup.py`` pins it; ``benchmarks/bench_cli.py`` times it).
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
import threading
import traceback
from typing import TYPE_CHECKING, Annotated, Any, Final

# The collector's first pass is put off before typer and the rest are imported (so the
# imports below come after the call).
FIRST_COLLECTION_AFTER: Final = 100_000


def _put_off_the_first_collection(after: int = FIRST_COLLECTION_AFTER) -> None:
    """Let the process make ``after`` more objects than it frees before the cyclic
    garbage collector's first pass, which then restores the thresholds it had.

    A command's start makes some 25,000 (``--help``) to 55,000 (``verify``) objects that
    live as long as the process: typer's, pydantic's and the core's classes, validators
    and data. With the default threshold (700) the collector walked them again and again
    while they were made, about a tenth of a short command's time, and freed nothing. A
    command that runs longer makes ``after`` objects soon and is collected as before
    from then on. Left alone if the collector is off or already waits longer."""
    thresholds = gc.get_threshold()
    if not gc.isenabled() or thresholds[0] == 0 or thresholds[0] >= after:
        return
    restored = False

    def restore(phase: str, info: dict[str, Any]) -> None:
        nonlocal restored
        if not restored:  # then a no-op: removing it now would skip the next callback
            restored = True
            gc.set_threshold(*thresholds)

    gc.callbacks.append(restore)
    gc.set_threshold(after, *thresholds[1:])


_put_off_the_first_collection()

# No pydantic plugin sees what this process validates, unless the operator says so.
PLUGINS_SWITCH: Final = "PYDANTIC_DISABLE_PLUGINS"


def _no_validation_plugins() -> None:
    """Switch pydantic's plugins off for this process (``PYDANTIC_DISABLE_PLUGINS=__all__``),
    unless the variable is set already: an operator who wants them sets it (to an empty
    value, or to the names of the plugins to leave out).

    A pydantic plugin is any installed package that declares one (an entry point in the
    ``pydantic`` group); pydantic hands it every value each model validates. Here that is
    the applicant's case, monitoring data included, before intake moves it out of the
    underwriter's reach; so no code the lender has not chosen sees it by being installed.
    It also spares every command pydantic's search for plugins through the metadata of
    every installed distribution (about 20 ms of a command's start)."""
    os.environ.setdefault(PLUGINS_SWITCH, "__all__")
    _no_plugin_search()


# The switch's values with which pydantic loads no plugin at all (its own test, in
# ``pydantic.plugin._loader.get_plugins``); any other value names plugins to leave out.
PLUGINS_OFF: Final = ("__all__", "1", "true")
PLUGIN_LOADER: Final = "pydantic.plugin._loader"
_HANDING_OVER: Final = threading.Lock()  # models may be built on several threads at once


def _plugins_now() -> Any:
    """The stand-in's ``get_plugins``: none while every plugin is switched off, as
    pydantic's own loader answers then; else (the switch turned since start-up) the
    real loader's answer, the real loader taking the stand-in's place from then on."""
    if os.environ.get(PLUGINS_SWITCH) in PLUGINS_OFF:
        return ()
    with _HANDING_OVER:
        if sys.modules.get(PLUGIN_LOADER) is _STAND_IN:
            del sys.modules[PLUGIN_LOADER]
        loader = importlib.import_module(PLUGIN_LOADER)
    return loader.get_plugins()


_STAND_IN: Final = type(sys)(PLUGIN_LOADER, "Stands in for pydantic's plugin loader.")
_STAND_IN.get_plugins = _plugins_now  # type: ignore[attr-defined]


def _no_plugin_search() -> None:
    """With every plugin switched off, stand in for pydantic's plugin loader before
    pydantic imports it (``sys.modules``). Its one function the rest of pydantic calls,
    ``get_plugins``, answers as the loader answers then: no plugins. The loader itself
    imports ``importlib.metadata`` (with ``email``, ``zipfile``, ``csv`` and ``socket``)
    to search the installed distributions, which it never does while the switch is
    off. Counted with callgrind (instructions, so the machine's load does not move
    them): ``credit decide one.json`` 779.4 -> 741.5 million, ``credit verify`` 958.1
    -> 920.3 million (about 4%, some 10 ms at this machine's speed); the interpreter
    with typer and pydantic imported is 586.5 million of them. Left alone if the
    loader is imported already or the switch lets plugins in."""
    if os.environ.get(PLUGINS_SWITCH) in PLUGINS_OFF and PLUGIN_LOADER not in sys.modules:
        sys.modules[PLUGIN_LOADER] = _STAND_IN


_no_validation_plugins()

import typer  # noqa: E402
from typer.core import TyperGroup  # noqa: E402

from credit.cli.common import EXIT_BAD_INPUT, EXIT_FAILED, STATE, err, escape  # noqa: E402

if TYPE_CHECKING:
    from typer._click import Command, Context
    from typer.models import CommandInfo

__all__ = ["COMMANDS", "app", "main"]

# Each command of ``credit``, in the order the help lists them (the commands, then the
# groups of commands), and the module of credit.cli that registers it. A command's module
# is imported when that command is run or a help lists it, not before
# (tests/test_cli_startup.py pins this table to what the modules register).
COMMANDS: Final[dict[str, str]] = {
    "decide": "run",
    "run": "run",
    "eval": "run",
    "notice": "notices",
    "verify": "notices",
    "mutate": "notices",
    "lock": "notices",
    "queue": "governance",
    "catalogue": "governance",
    "fairness": "governance",
    "backtest": "batch",
    "export": "bundle",
    "verify-bundle": "bundle",
    "mcp": "mcp",
    "serve": "service",
    "why": "why",
    "replay": "why",
    "journal": "journal",
    "review": "governance",
    "batch": "batch",
    "outbox": "outbox",
    "keys": "service",
    "db": "service",
    "spark": "spark",
}


def register_module(name: str, app: typer.Typer) -> None:
    """Register the commands of ``credit.cli.<name>`` on ``app``."""
    module = importlib.import_module(f"credit.cli.{name}")
    if name == "journal":
        app.add_typer(module.journal_app, name="journal")
    elif name == "notices":
        module.register_notices(app)
    elif name == "governance":
        module.register_governance(app)
    else:
        module.register(app)


class _Commands(TyperGroup):
    """The ``credit`` group: each command built from its module on first use."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._registered: dict[str, typer.Typer] = {}  # each module's commands, registered

    def list_commands(self, ctx: Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        name = COMMANDS.get(cmd_name)
        if name is not None and cmd_name not in self.commands:
            registered = self._registered.get(name)
            if registered is None:
                registered = self._registered[name] = typer.Typer()
                register_module(name, registered)
            # only the command asked for is built (its parameters read), not the module's
            # others: each is built when it is asked for
            commands = typer.Typer(rich_markup_mode=None)
            commands.callback()(_no_options)  # a group, even of one command
            commands.registered_commands = [
                c for c in registered.registered_commands if _command_name(c) == cmd_name
            ]
            commands.registered_groups = [
                g for g in registered.registered_groups if g.name == cmd_name
            ]
            built = typer.main.get_group(commands)
            for command_name, command in built.commands.items():
                self.commands.setdefault(command_name, command)
        return self.commands.get(cmd_name)


def _command_name(info: CommandInfo) -> str | None:
    """The name typer gives a registered command: its own, else its function's."""
    if info.name:
        return info.name
    return typer.main.get_command_name(info.callback.__name__) if info.callback else None


def _no_options() -> None:
    """A group of the one command asked for (so typer names the command as it would)."""


app = typer.Typer(
    rich_markup_mode=None,  # plain help: rich's help renderer costs ~90 ms to import
    cls=_Commands,
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


def _skip_the_final_collection() -> None:
    """At exit (registered by :func:`main`): freeze the process's objects out of the
    collector, so that the interpreter's last passes, which walked every object a command
    made (some 7% of a short command) only to free memory the process hands back as it
    ends, do not. Objects still referenced are freed at exit as before; garbage in
    reference cycles left at exit is left to the operating system, uncollected."""
    gc.freeze()


_final_collection_skipped = False


def main() -> None:
    """The ``credit`` command. Every error ends in one line on stderr naming it (exit 2
    for bad input, 1 otherwise); ``credit --debug ...`` prints the traceback too."""
    from credit.errors import CreditError

    global _final_collection_skipped
    if not _final_collection_skipped:
        _final_collection_skipped = True
        import atexit

        atexit.register(_skip_the_final_collection)
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
