"""``credit export CASE --out FILE.zip`` and ``credit verify-bundle FILE.zip``: an
examiner's bundle (:mod:`credit.journal.bundle`), written from the journal and checked
offline with no database. ``verify-bundle`` exits 0 when everything holds, 1 naming
each thing that fails, 2 when the file cannot be read. Registered on the ``credit``
app by its ``register`` (called in :mod:`credit.cli`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from credit.cli.common import DatabaseOption, LazyConsole, SchemaOption, escape
from credit.cli.journal import CheckpointsOption, PublicKeyOption
from credit.errors import CreditError

__all__: list[str] = []

EXIT_FAILS = 1
EXIT_BAD_INPUT = 2

out = LazyConsole()
err = LazyConsole(stderr=True)


def export_command(
    case: Annotated[str, typer.Argument(help="The case to bundle.")],
    out_path: Annotated[Path, typer.Option("--out", help="The bundle to write (a .zip).")],
    outbox: Annotated[
        Path, typer.Option("--outbox", envvar="CREDIT_OUTBOX", help="The outbox folder.")
    ] = Path("outbox"),
    database: DatabaseOption = None,
    schema: SchemaOption = None,
    checkpoints: CheckpointsOption = None,
    public_key: PublicKeyOption = None,
) -> None:
    """Write the case, its decision, notice and verification report, its journal
    entries with their inclusion proofs, the checkpoint and the public key to a zip."""
    from credit.cli.journal import newest_signed
    from credit.journal import open_store
    from credit.journal.bundle import export_bundle
    from credit.notices.outbox import DirectoryOutbox

    try:
        key, verifier, newest = newest_signed(checkpoints, public_key)
        with open_store(database, schema=schema, create=False, key=key) as store:
            files = export_bundle(
                store,
                case,
                out_path,
                newest=newest,
                checkpoint_text=Path(newest.path).read_bytes(),
                verifier=verifier,
                outbox=DirectoryOutbox(outbox) if outbox.is_dir() else None,
            )
    except CreditError as e:
        err.print(f"[red]error:[/red] {escape(str(e))}", highlight=False)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    out.print(
        f"wrote {out_path}: {', '.join(sorted(files))}; checkpoint of size {newest.size}",
        highlight=False,
        markup=False,
    )


def verify_bundle_command(
    bundle: Annotated[Path, typer.Argument(help="A bundle written by credit export.")],
) -> None:
    """Check a bundle offline, with no database: the checkpoint's signature, every
    entry's hash and inclusion proof, the case document, the decision and the notice
    against the journaled hashes. Exit 1 naming what fails."""
    from credit.journal.bundle import verify_bundle

    if not bundle.is_file():
        err.print(f"[red]error:[/red] no bundle at {escape(str(bundle))}", highlight=False)
        raise typer.Exit(EXIT_BAD_INPUT)
    problems, summary = verify_bundle(bundle)
    for problem in problems:
        out.print(f"FAILS: {problem}", highlight=False, markup=False)
    if problems:
        raise typer.Exit(EXIT_FAILS)
    checks = summary.get("checks") or {}
    passed = ", ".join(name for name, ok in sorted(checks.items()) if ok)
    out.print(
        f"ok: case {summary['caseId']}: {summary['entriesProved']} of {summary['entries']} "
        f"entries proved into the tree of {summary['treeSize']} (root {summary['rootHash']}, "
        f"signed by {summary['key']})" + (f"; notice verified {passed}" if passed else ""),
        highlight=False,
        markup=False,
    )


def register(app: typer.Typer) -> None:
    """Register this module's commands on the ``credit`` app."""
    app.command("export")(export_command)
    app.command("verify-bundle")(verify_bundle_command)
