"""What every ``credit`` command shares: exit codes, the two consoles, the global
options' state, the options several commands take, and the bundled example cases.

The bottom layer of :mod:`credit.cli` (its modules import this one, never the package
itself, so no module of the command line imports another in a circle). It imports
typer and the standard library only: the core, the journal and rich are imported when
a command runs, so that ``credit --help`` starts without them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final

import typer

if TYPE_CHECKING:
    from rich.console import Console

    from credit.policy import Policy

__all__ = [
    "CHECKPOINTS_ENV",
    "DATABASE_URL_ENV",
    "DEFAULT_DATABASE_URL",
    "DEFAULT_KEY_NAME",
    "EXIT_BAD_INPUT",
    "EXIT_FAILED",
    "STATE",
    "DatabaseOption",
    "LazyConsole",
    "PolicyOption",
    "SchemaOption",
    "default_cases_path",
    "err",
    "escape",
    "load_policy_or_exit",
    "out",
]

EXIT_FAILED: Final = 1
EXIT_BAD_INPUT: Final = 2

# The journal's names that the options' help states, repeated here so that building the
# help imports no journal (sqlalchemy); tests/test_cli_startup.py pins each to its source.
DATABASE_URL_ENV: Final = "CREDIT_DATABASE_URL"  # credit.journal.sql.DATABASE_URL_ENV
DEFAULT_DATABASE_URL: Final = "sqlite:///credit.db"  # credit.journal.sql.DEFAULT_DATABASE_URL
CHECKPOINTS_ENV: Final = "CREDIT_CHECKPOINTS"  # credit.journal.signer.CHECKPOINTS_ENV
DEFAULT_KEY_NAME: Final = "credit.local/journal"  # credit.journal.signer.DEFAULT_KEY_NAME


class LazyConsole:
    """A rich console made on its first use (rich costs tens of milliseconds to import,
    and most runs of most commands print nothing through it)."""

    def __init__(self, **options: Any) -> None:
        self._options = {"soft_wrap": True, **options}
        self._console: Console | None = None

    @property
    def console(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return self._console

    def print(self, *objects: Any, **options: Any) -> None:
        self.console.print(*objects, **options)


out = LazyConsole()
err = LazyConsole(stderr=True)


class _State:
    """Global options of the ``credit`` command (set by the app's callback)."""

    debug = False


STATE = _State()


def escape(text: str) -> str:
    """``text`` with rich markup escaped (rich imported only when this is called)."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


PolicyOption = Annotated[
    Path | None,
    typer.Option("--policy", help="Policy YAML file (default: the bundled reference policy)."),
]

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


def load_policy_or_exit(path: Path | None) -> Policy:
    """The policy at ``path`` (default: the bundled reference policy); a bad policy is
    ``error: ...`` on stderr and exit 2."""
    from credit.errors import PolicyError
    from credit.policy import default_policy, load_policy

    try:
        return load_policy(path) if path else default_policy()
    except PolicyError as e:
        err.print(f"[red]error:[/red] {e}", highlight=False)
        raise typer.Exit(EXIT_BAD_INPUT) from None


def default_cases_path() -> Path:
    """The bundled example cases: $CREDIT_EXAMPLES, else examples/cases.jsonl beside the
    source tree, else under the current directory."""
    env = os.environ.get("CREDIT_EXAMPLES")
    if env:
        return Path(env)
    beside = Path(__file__).resolve().parents[3] / "examples" / "cases.jsonl"
    return beside if beside.exists() else Path("examples") / "cases.jsonl"
