"""``credit journal``: verify the hash-chained case journal, or show its entries.

A thin adapter over :mod:`credit.journal`. Exit status: 0 the chain is whole, 1 a link
is broken (the first broken entry is named), 2 bad input or an unreachable store.
Nothing here creates a journal: a missing database or missing tables is exit 2.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from credit.cli.common import (
    CHECKPOINTS_ENV,
    DEFAULT_KEY_NAME,
    DatabaseOption,
    LazyConsole,
    SchemaOption,
    escape,
)
from credit.errors import CreditError, InputError, JournalIntegrityError

if TYPE_CHECKING:
    from credit.journal import SqlStore
    from credit.journal.audit import AuditReport, Finding, KeptCheckpoint
    from credit.journal.keys import VerifierKey
    from credit.journal.signer import JournalKey

__all__ = ["CheckpointsOption", "PublicKeyOption", "case_proof", "journal_app", "newest_signed"]

EXIT_BROKEN = 1
EXIT_BAD_INPUT = 2

journal_app = typer.Typer(
    rich_markup_mode=None,  # plain help: rich's help renderer costs ~90 ms to import
    add_completion=False,
    no_args_is_help=True,
    help="The hash-chained case journal: verify the chain, show entries.",
)
out = LazyConsole()
err = LazyConsole(stderr=True)


def _open(database: str | None, schema: str | None, key: JournalKey | None = None) -> SqlStore:
    from credit.journal import open_store

    try:
        return open_store(database, schema=schema, create=False, key=key)
    except CreditError as e:
        err.print(f"[red]error:[/red] {escape(str(e))}", highlight=False)
        raise typer.Exit(EXIT_BAD_INPUT) from None


def _count(entries: int) -> str:
    return f"{entries} entr{'y' if entries == 1 else 'ies'}"


CheckpointsOption = Annotated[
    Path | None,
    typer.Option(
        "--checkpoints",
        help=f"Folder of signed checkpoints (default: ${CHECKPOINTS_ENV}, else ./checkpoints).",
        show_default=False,
    ),
]
PublicKeyOption = Annotated[
    Path | None,
    typer.Option(
        "--public-key",
        help="The verifier key file (default: the signing key's PATH.pub).",
        show_default=False,
    ),
]
FINDINGS_SHOWN = 20


def _fail(e: BaseException) -> typer.Exit:
    err.print(f"[red]error:[/red] {escape(str(e))}", highlight=False)
    return typer.Exit(EXIT_BAD_INPUT)


def _keys(public_key: Path | None) -> tuple[JournalKey | None, VerifierKey | None]:
    """The signing key if at hand (to check MACs), and the verifier key."""
    from credit.journal.keys import load_verifier
    from credit.journal.signer import key_path, load_journal_key

    path = key_path()
    key = load_journal_key(path) if path.exists() else None
    if public_key is not None:
        return key, load_verifier(public_key)
    if key is not None:
        return key, key.verifier
    pub = path.with_name(path.name + ".pub")
    return None, load_verifier(pub) if pub.exists() else None


@journal_app.command()
def verify(
    database: DatabaseOption = None,
    schema: SchemaOption = None,
    checkpoints: CheckpointsOption = None,
    public_key: PublicKeyOption = None,
) -> None:
    """Walk the whole journal: the chain, every entry's MAC (with the signing key), the
    tree against every signed checkpoint, and the decision, case and vault rows
    against the chain. Exit 0 when all hold, 1 naming what fails."""
    from credit.journal.audit import load_checkpoints
    from credit.journal.signer import checkpoints_dir

    folder = checkpoints_dir(checkpoints)
    try:
        key, verifier = _keys(public_key)
        kept: list[KeptCheckpoint] = []
        bad: list[Finding] = []
        if verifier is not None:
            kept, bad = load_checkpoints(folder, verifier, origin=None)
        elif any(folder.glob("*.checkpoint")):
            raise InputError(
                "checkpoints are kept but no verifier key was found (--public-key)",
                source=str(folder),
            )
    except CreditError as e:
        raise _fail(e) from None
    store = _open(database, schema, key)
    try:
        report = store.audit(kept, macs=key is not None)
    except CreditError as e:
        raise _fail(e) from None
    finally:
        store.close()
    findings = [*bad, *report.findings]
    _print_report(report, findings, folder)
    if findings:
        raise typer.Exit(EXIT_BROKEN)


def _print_report(report: AuditReport, findings: Sequence[Finding], folder: Path) -> None:
    from credit.journal.tree import root_b64

    chain = [f for f in findings if f.check == "chain"]
    if chain:
        first = chain[0]
        out.print(f"BROKEN at entry {first.seq}: {first.detail}", highlight=False, markup=False)
    elif findings:
        out.print(f"FAILED: {len(findings)} check(s) failed", highlight=False)
    else:
        out.print(f"ok: {_count(report.entries)}, head {report.head}", highlight=False)
    for finding in [f for f in findings if f is not (chain[0] if chain else None)][:FINDINGS_SHOWN]:
        out.print(f"  {finding}", highlight=False, markup=False)
    hidden = len(findings) - (1 if chain else 0) - FINDINGS_SHOWN
    if hidden > 0:
        out.print(f"  ... and {hidden} more", highlight=False)
    newest = report.checkpoints[-1] if report.checkpoints else None
    signed = (
        f"{len(report.checkpoints)} signed checkpoint(s) in {folder}, newest of size {newest.size}"
        if newest is not None
        else f"no signed checkpoint in {folder}"
    )
    out.print(
        f"tree: {_count(report.entries)}, root {root_b64(report.root)}; {signed}",
        highlight=False,
        markup=False,
    )
    if not report.macs_checked:
        out.print(
            "entry MACs: not checked (no signing key at hand; $CREDIT_SIGNING_KEY)",
            highlight=False,
            markup=False,
        )


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
    from credit.canonical import dumps

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


@journal_app.command("keygen")
def keygen_command(
    out_path: Annotated[
        Path, typer.Option("--out", help="Where the private key goes (its public key at PATH.pub).")
    ],
    name: Annotated[
        str, typer.Option("--name", help="The key name, which is the log's origin.")
    ] = DEFAULT_KEY_NAME,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace existing files.")] = False,
) -> None:
    """Make an Ed25519 journal signing key at PATH (mode 0600) and its verifier key at
    PATH.pub. Select it with $CREDIT_SIGNING_KEY; it never goes into the database."""
    from credit.journal.keys import keygen

    try:
        key = keygen(out_path, name, overwrite=overwrite)
    except CreditError as e:
        raise _fail(e) from None
    out.print(f"signing key {out_path}, verifier key {out_path}.pub:", highlight=False)
    out.print(str(key.verifier), highlight=False, markup=False)


@journal_app.command()
def checkpoint(
    database: DatabaseOption = None,
    schema: SchemaOption = None,
    checkpoints: CheckpointsOption = None,
) -> None:
    """Sign the tree head (origin, size, root hash) as a C2SP checkpoint and keep it in
    the checkpoints folder. Refused (exit 1) when the tree no longer extends the newest
    checkpoint kept (entries cut or history rewritten)."""
    from credit.journal.signer import checkpoints_dir, load_journal_key

    folder = checkpoints_dir(checkpoints)
    try:
        key = load_journal_key()
    except CreditError as e:
        raise _fail(e) from None
    store = _open(database, schema, key)
    try:
        path = store.checkpoint(folder)
    except JournalIntegrityError as e:
        out.print(f"REFUSED: {e}", highlight=False, markup=False)
        raise typer.Exit(EXIT_BROKEN) from None
    except CreditError as e:
        raise _fail(e) from None
    finally:
        store.close()
    sys.stdout.write(path.read_text(encoding="utf-8"))
    out.print(f"kept: {path}", highlight=False, markup=False)


@journal_app.command()
def marks(
    drop: Annotated[
        bool,
        typer.Option(
            "--drop",
            help="Delete every mark: each reader derives what it held from the whole journal.",
        ),
    ] = False,
    database: DatabaseOption = None,
    schema: SchemaOption = None,
) -> None:
    """List the marks kept beside the journal (what a reader derived from it through an
    entry: the pending work a start found, the fair-lending review's comparison pool),
    each checked against the key and the chain (exit 1 if one is refused); or, with
    --drop, delete them. A mark is a cache, never a record: nothing is lost."""
    from credit.journal.signer import load_journal_key

    try:
        key = load_journal_key()
    except CreditError as e:
        raise _fail(e) from None
    store = _open(database, schema, key)
    refused = 0
    try:
        if drop:
            dropped = store.drop_marks()
            out.print(
                f"dropped {dropped} mark{'' if dropped == 1 else 's'}: the next run and "
                "service worker read the whole journal once, and keep new ones",
                highlight=False,
                markup=False,
            )
            return
        names = store.mark_names()
        for name in names:
            try:
                kept = store.mark(name)
            except JournalIntegrityError as e:
                refused += 1
                out.print(f"REFUSED {name}: {e}", highlight=False, markup=False)
                continue
            if kept is not None:
                out.print(f"ok {name}: made on entry {kept.seq}", highlight=False, markup=False)
        if not names:
            out.print("no marks kept", highlight=False, markup=False)
    except CreditError as e:
        raise _fail(e) from None
    finally:
        store.close()
    if refused:
        raise typer.Exit(EXIT_BROKEN)


@journal_app.command()
def prove(
    case: Annotated[str, typer.Argument(help="The case whose entries to prove.")],
    database: DatabaseOption = None,
    schema: SchemaOption = None,
    checkpoints: CheckpointsOption = None,
    public_key: PublicKeyOption = None,
) -> None:
    """Print, as one JSON document, the inclusion proof of each of the case's entries
    against the newest signed checkpoint (entries after it are listed as not yet
    covered)."""
    from credit.canonical import dumps

    try:
        _, _, newest = newest_signed(checkpoints, public_key)
    except CreditError as e:
        raise _fail(e) from None
    store = _open(database, schema)
    try:
        document = case_proof(store, case, newest)
    except CreditError as e:
        raise _fail(e) from None
    finally:
        store.close()
    sys.stdout.write(dumps(document) + "\n")
    if not document["entries"]:
        raise typer.Exit(EXIT_BAD_INPUT)


def newest_signed(
    checkpoints: Path | None, public_key: Path | None
) -> tuple[JournalKey | None, VerifierKey, KeptCheckpoint]:
    """The signing key if at hand, the verifier key and the newest signed checkpoint
    (InputError when there is no verifier key or no checkpoint)."""
    from credit.journal.signer import checkpoints_dir
    from credit.journal.tree import newest_checkpoint

    folder = checkpoints_dir(checkpoints)
    key, verifier = _keys(public_key)
    if verifier is None:
        raise InputError("no verifier key (--public-key)", source=str(folder))
    newest = newest_checkpoint(folder, verifier, pointer=False)  # every file counts
    if newest is None:
        raise InputError("no signed checkpoint kept there", source=str(folder))
    return key, verifier, newest


def case_proof(store: SqlStore, case_id: str, newest: KeptCheckpoint) -> dict[str, object]:
    """The case's entries' inclusion proofs against ``newest`` (a JSON document)."""
    from credit.journal.tree import inclusion, root_b64

    entries = store.entries(case_id)
    size = newest.size
    covered = [e.seq for e in entries if e.seq <= size]
    proofs = inclusion(covered, size, store.leaf_hashes(size)) if covered else []
    root = newest.checkpoint.root_hash
    for proof in proofs:
        if not proof.verifies(root):
            raise JournalIntegrityError(
                "the stored leaf does not prove into the checkpoint's root",
                check="inclusion",
                checkpoint=newest.path,
                seq=proof.seq,
            )
    return {
        "caseId": case_id,
        "checkpoint": {
            "file": newest.path,
            "origin": newest.checkpoint.origin,
            "size": size,
            "rootHash": root_b64(root),
            "text": newest.checkpoint.note.text,
        },
        "entries": [p.to_wire() for p in proofs],
        "notCovered": [e.seq for e in entries if e.seq > size],
    }
