"""``credit why CASE`` and ``credit replay``: a decision explained, and re-derived.

``credit why CASE`` prints, for a person, why the case was decided as it was
(:mod:`credit.journal.why`), every item with its journal entry; ``--json`` gives the
same as one document. ``credit replay CASE`` / ``credit replay --all`` re-derives each
recorded decision from the journaled case document and the policy version it cites,
alone (:mod:`credit.journal.replay`), and compares bit for bit: exit 1 naming the case
and the field on any difference, 2 bad input. Registered on the ``credit`` app by its ``register``
(called in :mod:`credit.cli`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from credit.cli.common import DatabaseOption, LazyConsole, SchemaOption, escape
from credit.errors import CreditError

if TYPE_CHECKING:
    from credit.journal import SqlStore
    from credit.journal.replay import Replay

__all__: list[str] = []

EXIT_DIFFERS = 1
EXIT_BAD_INPUT = 2

out = LazyConsole()
err = LazyConsole(stderr=True)


def _fail(e: BaseException) -> typer.Exit:
    err.print(f"[red]error:[/red] {escape(str(e))}", highlight=False)
    return typer.Exit(EXIT_BAD_INPUT)


def _store(database: str | None, schema: str | None) -> SqlStore:
    from credit.journal import open_store

    try:
        return open_store(database, schema=schema, create=False)
    except CreditError as e:
        raise _fail(e) from None


def why_command(
    case: Annotated[str, typer.Argument(help="The case to explain.")],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON document.")] = False,
    database: DatabaseOption = None,
    schema: SchemaOption = None,
) -> None:
    """Why the case was decided as it was: the policy, each methodology step, the
    decision and terms, the reasons, the notice and V1-V8, both reviews, who acted and
    when, each with its journal sequence number."""
    from credit.canonical import dumps
    from credit.casework import CaseWork
    from credit.journal.why import explain, why_text
    from credit.notices.outbox import InMemoryOutbox

    store = _store(database, schema)
    try:
        entries = list(store.authenticate(store.entries(case)))
        if not entries:
            raise _fail(CreditError(f"no case {case} in the journal"))
        life = CaseWork(store, InMemoryOutbox()).life(case)
        document = explain(case, entries, life)
    except CreditError as e:
        raise _fail(e) from None
    finally:
        store.close()
    if as_json:
        sys.stdout.write(dumps(document) + "\n")
    else:
        sys.stdout.write(why_text(document))


def replay_command(
    case: Annotated[str | None, typer.Argument(help="The case to replay.")] = None,
    every: Annotated[bool, typer.Option("--all", help="Replay every decided case.")] = False,
    policy: Annotated[
        list[Path] | None,
        typer.Option("--policy", help="A policy file a decision may cite (repeatable)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON Lines, one per decision.")] = False,
    database: DatabaseOption = None,
    schema: SchemaOption = None,
) -> None:
    """Re-derive each recorded decision from the journaled case document and the policy
    it cites, alone, and compare bit for bit; then do each Backstop and Equipoise review
    again on the decision it names (Equipoise with its pool as it held it: its basis's
    poolChanged) and compare it with the one journaled (exit 1 naming the case and
    field)."""
    from credit.canonical import dumps
    from credit.governance.replay import ReviewReplay, replay_reviews
    from credit.journal.replay import replay_case
    from credit.policy import PolicyRegistry, load_policy

    if (case is None) == (not every):
        raise _fail(CreditError("name one case, or give --all"))
    try:
        registry = PolicyRegistry.bundled()
        if policy:
            registry = PolicyRegistry([*registry.policies, *(load_policy(p) for p in policy)])
    except CreditError as e:
        raise _fail(e) from None
    store = _store(database, schema)
    replays: list[Replay] = []
    reviews: list[ReviewReplay] = []
    try:
        case_ids = [case] if case is not None else store.case_ids()
        for case_id in case_ids:
            entries = list(store.authenticate(store.entries(case_id)))
            replays += replay_case(case_id, entries, store.get_case(case_id), registry)
        reviews = replay_reviews(store, case_ids, registry=registry)
    except CreditError as e:
        raise _fail(e) from None
    finally:
        store.close()
    failed = [r for r in replays if not r.ok]
    differ = [r for r in reviews if not r.ok]
    for r in replays:
        if as_json:
            sys.stdout.write(dumps(r.to_wire()) + "\n")
            continue
        if r.error is not None:
            out.print(f"case {r.case_id} entry {r.seq}: NOT REPLAYED: {r.error}", markup=False)
        for d in r.differences:
            label = "DIFFERS" if r.expected else "model differs from the policy's derivation"
            out.print(
                f"case {r.case_id} entry {r.seq} {d.field}: {label}: recorded "
                f"{dumps(d.recorded)}, replayed {dumps(d.replayed)}",
                markup=False,
                highlight=False,
            )
        for note in r.notes:
            out.print(f"case {r.case_id} entry {r.seq}: {note}", markup=False, highlight=False)
    for review in reviews:
        if as_json:
            sys.stdout.write(dumps(review.to_wire()) + "\n")
            continue
        where = f"case {review.case_id} entry {review.seq} ({review.reviewer}'s review)"
        if review.why is not None:
            out.print(f"{where}: not done again: {review.why}", markup=False, highlight=False)
        for name, was, now in review.differences:
            out.print(
                f"{where} {name}: DIFFERS: journaled {dumps(was)}, done again {dumps(now)}",
                markup=False,
                highlight=False,
            )
    if not as_json:
        same = sum(1 for r in replays if r.ok and not r.differences)
        out.print(
            f"{'ok' if not failed else 'DIFFERENT'}: {len(replays)} decision(s) replayed, "
            f"{same} bit for bit, {len(failed)} with differences or not replayable",
            highlight=False,
        )
        alike = sum(1 for r in reviews if r.status == "same")
        out.print(
            f"{'ok' if not differ else 'DIFFERENT'}: {len(reviews)} review(s) done again, "
            f"{alike} the same, {len(differ)} different, "
            f"{len(reviews) - alike - len(differ)} not replayable",
            highlight=False,
        )
    if failed or differ:
        raise typer.Exit(EXIT_DIFFERS)


def register(app: typer.Typer) -> None:
    """Register this module's commands on the ``credit`` app."""
    app.command("why")(why_command)
    app.command("replay")(replay_command)
