"""``credit queue``, ``credit review``, ``credit catalogue`` and ``credit fairness``:
thin adapters over the case work (:mod:`credit.casework`), the Keystone gate and
Equipoise's portfolio report (no domain logic here).

* ``credit queue [--json] [--overdue]`` lists every open work item with its role and
  its Regulation B deadline; ``--overdue`` exits 1 when any item is overdue.
* ``credit review`` lists the cases the gate holds; ``credit review show CASE`` shows a
  case's standing and findings; ``credit review run`` runs the gate's reviews on every
  case awaiting them.
* A person's action, always with their key (``--key KEY`` or $CREDIT_API_KEY; the
  journal records the key's id and name): ``credit review release|reject CASE --reason
  TEXT`` (a reviewer; a release takes two different reviewers: four eyes),
  ``credit review decide CASE --decision approve|decline|counteroffer --reason CODE
  [--reason CODE ...] [--amount X --term N | --line X] --why TEXT`` and ``credit review
  withdraw CASE --why TEXT`` (a credit officer).
* ``credit catalogue [--json]`` lists the reason codes and whether a person may cite
  each; ``credit fairness`` prints approval rates and adverse impact ratios by group.

Each opens the journal with :func:`credit.journal.open_store` (``--database``, else
$CREDIT_DATABASE_URL, else ``sqlite:///credit.db``); none creates one. Exit status:
0 done, 1 refused (a case not in a state that allows the action; ``queue --overdue``:
an item is overdue), 2 bad input, a missing or invalid key, or an unreachable store.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from credit.cli.common import DatabaseOption, LazyConsole, escape
from credit.errors import CreditError, InputError

if TYPE_CHECKING:
    from rich.console import JustifyMethod
    from rich.table import Table

    from credit.casework import CaseWork
    from credit.governance.keystone import KeystoneStatus
    from credit.governance.portfolio import GroupStat, PortfolioReport
    from credit.journal import SqlStore
    from credit.lifecycle import CaseLife
    from credit.roles import Actor

_T = TypeVar("_T")

__all__ = ["fairness", "register_governance", "review_app"]

EXIT_REFUSED = 1
EXIT_BAD_INPUT = 2
API_KEY_ENV = "CREDIT_API_KEY"

out = LazyConsole()
err = LazyConsole(stderr=True)

review_app = typer.Typer(
    rich_markup_mode=None,  # plain help: rich's help renderer costs ~90 ms to import
    add_completion=False,
    help="The Keystone gate: list held decisions; a person releases or rejects them.",
)

CaseArgument = Annotated[str, typer.Argument(help="The case id.")]
ReasonOption = Annotated[str, typer.Option("--reason", help="Why, for the journal.")]


def _fail(e: CreditError) -> typer.Exit:
    err.print(f"[red]error:[/red] {escape(str(e))}", highlight=False)
    return typer.Exit(EXIT_BAD_INPUT if isinstance(e, ValueError) else EXIT_REFUSED)


@contextmanager
def _store(database: str | None) -> Iterator[SqlStore]:
    from credit.journal import open_store

    try:
        store = open_store(database, create=False)
    except CreditError as e:
        err.print(f"[red]error:[/red] {escape(str(e))}", highlight=False)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    try:
        yield store
    finally:
        store.close()


def _findings_text(status: KeystoneStatus) -> str:
    if status.state == "awaiting-review":
        return "not reviewed yet"
    holding = status.holding_findings
    if not holding:
        return ""
    codes: dict[str, int] = {}
    for finding in holding:
        codes[finding.code] = codes.get(finding.code, 0) + 1
    return ", ".join(f"{c} x{n}" if n > 1 else c for c, n in codes.items())


@review_app.callback(invoke_without_command=True)
def review_list(ctx: typer.Context, database: DatabaseOption = None) -> None:
    """List the cases the Keystone gate holds (not yet released or rejected)."""
    if ctx.invoked_subcommand is not None:
        return
    from rich.table import Table

    from credit.governance.keystone import Keystone

    with _store(database) as store:
        try:
            held = Keystone(store).held_cases()
        except CreditError as e:
            raise _fail(e) from None
    table = Table(title=f"Held by the Keystone gate: {len(held)} case(s)")
    for column in ("case", "product", "decision", "underwriter", "state", "holding findings"):
        table.add_column(column)
    for status in held:
        table.add_row(
            status.case_id,
            status.product or "?",
            status.decision or "?",
            status.underwriter or "?",
            status.state,
            _findings_text(status),
        )
    out.print(table)


@review_app.command("show")
def review_show(case: CaseArgument, database: DatabaseOption = None) -> None:
    """Show a case's standing at the gate and every review finding."""
    from credit.governance.keystone import Keystone

    with _store(database) as store:
        try:
            keystone = Keystone(store)
            life = keystone.life(case)
            status = keystone.status(case)
        except CreditError as e:
            raise _fail(e) from None
    out.print(_where(life), highlight=False, markup=False)
    out.print(
        f"case {status.case_id}: {status.state}"
        + (f" ({status.decision} by {status.underwriter})" if status.decision else "")
        + (f"; by {status.decided_by}: {status.reason}" if status.decided_by else ""),
        highlight=False,
        markup=False,
    )
    for finding in status.findings:
        mark = "HOLDS" if finding.holds else "note "
        out.print(f"  {mark} {finding.code}: {finding.message}", highlight=False, markup=False)


@review_app.command("run")
def review_run(
    cases: Annotated[
        list[str] | None, typer.Argument(help="Case ids (default: every case awaiting review).")
    ] = None,
    database: DatabaseOption = None,
) -> None:
    """Run Equipoise and Backstop on cases awaiting review; release or hold each."""
    from credit.governance.keystone import Keystone

    with _store(database) as store:
        keystone = Keystone(store)
        try:
            if cases:
                results = [keystone.review(case_id) for case_id in cases]
            else:
                results = keystone.review_pending()
        except CreditError as e:
            raise _fail(e) from None
    for status in results:
        out.print(
            f"{status.case_id}: {status.state} {_findings_text(status)}".rstrip(),
            highlight=False,
            markup=False,
        )


def _actor(key: str | None, database: str | None) -> Actor:
    """The person a key names (``--key``, else $CREDIT_API_KEY); exit 2 without one."""
    from credit.service.keys import SqlKeyStore
    from credit.service.tables import ServiceDb

    key = key or os.environ.get(API_KEY_ENV)
    if not key:
        err.print(
            f"[red]error:[/red] a person's action needs their key: --key KEY or ${API_KEY_ENV}",
            highlight=False,
        )
        raise typer.Exit(EXIT_BAD_INPUT)
    try:
        with ServiceDb(database, create=False) as db:
            actor = SqlKeyStore(db).authenticate(key)
    except CreditError as e:
        raise _fail(e) from None
    if actor is None:
        err.print(
            "[red]error:[/red] the key is not valid (unknown, wrong or revoked): "
            "nothing was changed",
            highlight=False,
        )
        raise typer.Exit(EXIT_BAD_INPUT)
    return actor


@contextmanager
def _work(database: str | None, outbox: Path) -> Iterator[CaseWork]:
    from credit.casework import CaseWork
    from credit.notices import DirectoryOutbox

    with _store(database) as store:
        yield CaseWork(store, DirectoryOutbox(outbox))


def _as_reviewer(
    key: str | None,
    database: str | None,
    outbox: Path,
    act: Callable[[CaseWork, Actor], _T],
) -> tuple[Actor, _T]:
    """The person the key names, and what ``act`` did as that person on the journal
    (a CreditError is one line naming it, exit 2 or 1)."""
    actor = _actor(key, database)
    with _work(database, outbox) as work:
        try:
            return actor, act(work, actor)
        except CreditError as e:
            raise _fail(e) from None


def _where(life: CaseLife) -> str:
    item = life.item
    if item is None:
        return f"case {life.case_id}: {life.state}" + (" (final)" if life.final else "")
    return f"case {life.case_id}: {life.state}, a {item.kind} item for the {item.role}"


OutboxOption = Annotated[
    Path,
    typer.Option(
        "--outbox",
        envvar="CREDIT_OUTBOX",
        help="Folder a released decision's notice is sent to, as credit run ($CREDIT_OUTBOX).",
    ),
]
KeyOption = Annotated[
    str | None,
    typer.Option(
        "--key",
        help=f"Your API key (default ${API_KEY_ENV}); the journal names you by it.",
        show_default=False,
    ),
]


@review_app.command("release")
def review_release(
    case: CaseArgument,
    reason: ReasonOption,
    key: KeyOption = None,
    database: DatabaseOption = None,
    outbox: OutboxOption = Path("outbox"),
) -> None:
    """Release a held case, with four eyes: the first reviewer's release approves it,
    a second reviewer's releases it; a released decline or counteroffer then gets its
    notice rendered, verified and sent."""
    actor, (action, life) = _as_reviewer(
        key, database, outbox, lambda work, actor: work.release(case, actor, reason)
    )
    if action.outcome == "approved":
        out.print(
            f"case {case} approved by {actor.name} (journal entry {action.entry.seq}); a "
            "second reviewer must release it (four eyes)",
            highlight=False,
            markup=False,
        )
    else:
        out.print(
            f"case {case} released by {actor.name} (journal entry {action.entry.seq})",
            highlight=False,
            markup=False,
        )
    out.print(_where(life), highlight=False, markup=False)


@review_app.command("reject")
def review_reject(
    case: CaseArgument,
    reason: ReasonOption,
    key: KeyOption = None,
    database: DatabaseOption = None,
    outbox: OutboxOption = Path("outbox"),
) -> None:
    """Reject a held case: its decision is not committed, and a credit officer must
    decide the case. Journals who and why."""
    actor, life = _as_reviewer(
        key, database, outbox, lambda work, actor: work.reject(case, actor, reason)
    )
    out.print(f"case {case} rejected by {actor.name}", highlight=False, markup=False)
    out.print(_where(life), highlight=False, markup=False)


@review_app.command("decide")
def review_decide(
    case: CaseArgument,
    decision: Annotated[str, typer.Option("--decision", help="approve, decline or counteroffer.")],
    why: Annotated[str, typer.Option("--why", help="Why you decide so (journaled).")],
    reason: Annotated[
        list[str] | None,
        typer.Option("--reason", help="A reason code a person may cite (repeat, 1 to 4)."),
    ] = None,
    amount: Annotated[
        str | None, typer.Option("--amount", help="Auto: the amount offered.")
    ] = None,
    term: Annotated[int | None, typer.Option("--term", help="Auto: the term in months.")] = None,
    line: Annotated[str | None, typer.Option("--line", help="Card: the credit line.")] = None,
    apr: Annotated[
        str | None,
        typer.Option("--apr", help="APR in percent (default: the band's; needed unscored)."),
    ] = None,
    key: KeyOption = None,
    database: DatabaseOption = None,
    outbox: OutboxOption = Path("outbox"),
) -> None:
    """A credit officer decides a referred, rejected, refused, failed or
    notice-blocked case. The decision goes through the Keystone gate (a policy
    exception is held for two reviewers); a released decline or counteroffer gets its
    notice rendered from the recorded reasons, verified and sent."""
    from credit.governance.officer import OfficerDecision

    actor = _actor(key, database)
    if decision not in ("approve", "decline", "counteroffer"):
        raise _fail(
            InputError(
                f"--decision is approve, decline or counteroffer, not {decision!r}",
                case_id=case,
                field="decision",
            )
        )
    request = OfficerDecision(
        decision=decision,  # type: ignore[arg-type]
        reason_codes=tuple(reason or ()),
        why=why,
        amount=_decimal(amount, "amount", case),
        term_months=term,
        credit_line=_decimal(line, "line", case),
        apr=_decimal(apr, "apr", case),
    )
    with _work(database, outbox) as work:
        try:
            life = work.officer_decide(case, actor, request)
        except CreditError as e:
            raise _fail(e) from None
    out.print(
        f"case {case}: {decision} by {actor.name} (journal entry "
        f"{life.decision.seq if life.decision else '?'})",
        highlight=False,
        markup=False,
    )
    for finding in life.gate.holding_findings:
        out.print(f"  HOLDS {finding.code}: {finding.message}", highlight=False, markup=False)
    out.print(_where(life), highlight=False, markup=False)


@review_app.command("withdraw")
def review_withdraw(
    case: CaseArgument,
    why: Annotated[str, typer.Option("--why", help="How the applicant withdrew (journaled).")],
    key: KeyOption = None,
    database: DatabaseOption = None,
    outbox: OutboxOption = Path("outbox"),
) -> None:
    """Record that the applicant withdrew the application: a final action."""
    actor = _actor(key, database)
    with _work(database, outbox) as work:
        try:
            life = work.withdraw(case, actor, why)
        except CreditError as e:
            raise _fail(e) from None
    out.print(_where(life), highlight=False, markup=False)


def _decimal(value: str | None, field: str, case: str) -> Decimal | None:
    if value is None:
        return None
    if not re.fullmatch(r"[0-9]+(\.[0-9]+)?", value):
        raise _fail(
            InputError(f"--{field} {value!r} is not a plain decimal", case_id=case, field=field)
        )
    return Decimal(value)


# ---------------------------------------------------------------- credit queue


def queue(
    as_json: Annotated[
        bool, typer.Option("--json", help="JSON Lines: caseId, kind, role, openedAt, ...")
    ] = False,
    overdue: Annotated[
        bool, typer.Option("--overdue", help="Only overdue items; exit 1 when there is any.")
    ] = False,
    database: DatabaseOption = None,
    outbox: OutboxOption = Path("outbox"),
) -> None:
    """The work queue: every case not at a final action, one item each, with the role
    that works it and its Regulation B deadline (12 CFR 1002.9(a)(1)). The system first
    finishes its own pending work (a review, a notice a crash left half way)."""
    from rich.table import Table

    from credit.canonical import dumps

    with _work(database, outbox) as work:
        try:
            items = work.queue()
        except CreditError as e:
            raise _fail(e) from None
        today = work.today()
    if overdue:
        items = [i for i in items if i.overdue(today)]
    if as_json:
        for item in items:
            sys.stdout.write(dumps(item.to_wire(today)) + "\n")
        sys.stdout.flush()
    else:
        title = f"Work queue on {today}: {len(items)} open item(s)"
        table = Table(title=("Overdue: " if overdue else "") + title)
        for column in ("case", "kind", "role", "opened", "deadline", "days left", "why"):
            table.add_column(column, justify="right" if column == "days left" else "left")
        for item in items:
            days = item.days_left(today)
            table.add_row(
                item.case_id,
                item.kind,
                item.role,
                item.opened_at[:19],
                item.deadline.isoformat(),
                f"[bold red]{days}[/bold red]" if days < 0 else str(days),
                escape("; ".join(item.why)),
            )
        out.print(table)
    if overdue and items:
        raise typer.Exit(EXIT_REFUSED)


# ---------------------------------------------------------------- credit catalogue


def catalogue(
    as_json: Annotated[
        bool, typer.Option("--json", help="JSON Lines: code, category, kind, personMayCite.")
    ] = False,
) -> None:
    """The reason catalogue: every code, its category and kind, and whether a person
    deciding a case by hand may cite it."""
    from rich.table import Table

    from credit.canonical import dumps
    from credit.catalogue import default_catalogue

    cat = default_catalogue()
    if as_json:
        for code, entry in cat.entries.items():
            row = {
                "code": code,
                "category": entry.category,
                "kind": entry.kind,
                "personMayCite": entry.person_may_cite,
            }
            sys.stdout.write(dumps(row) + "\n")
        sys.stdout.flush()
        return
    table = Table(title=f"Reason catalogue {cat.name} v{cat.version}")
    for column in ("code", "category", "kind", "a person may cite", "Regulation B"):
        table.add_column(column)
    for code, entry in cat.entries.items():
        table.add_row(
            code, entry.category, entry.kind, "yes" if entry.person_may_cite else "no", entry.reg_b
        )
    out.print(table)


# ---------------------------------------------------------------- credit fairness


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _interval(ci: tuple[float, float] | None, fmt: str) -> str:
    if ci is None:
        return ""
    low, high = ci
    if fmt == "pct":
        return f"[{low * 100:.1f}, {high * 100:.1f}]"
    return f"[{low:.2f}, {high:.2f}]"


def _flag(stat: GroupStat) -> str:
    from credit.governance.portfolio import (
        FLAG_ADVERSE_IMPACT,
        FLAG_INSUFFICIENT,
        FLAG_REFERENCE,
        FLAG_WATCH,
    )

    styles = {
        FLAG_ADVERSE_IMPACT: "bold red",
        FLAG_WATCH: "yellow",
        FLAG_INSUFFICIENT: "dim",
        FLAG_REFERENCE: "cyan",
    }
    style = styles.get(stat.flag)
    return f"[{style}]{escape(stat.flag)}[/{style}]" if style else escape(stat.flag)


def fairness_table(report: PortfolioReport) -> Table:
    from rich.table import Table

    level = f"{report.confidence_level * 100:.0f}%"
    table = Table(
        title=(
            f"Approval rates and adverse impact ratios ({report.config}; {level} bootstrap "
            f"intervals, {report.resamples} resamples, seed {report.seed})"
        )
    )
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("attribute", "left"),
        ("group", "left"),
        ("applications", "right"),
        ("decided", "right"),
        ("approved", "right"),
        ("approval rate", "right"),
        (f"{level} CI", "right"),
        ("AIR", "right"),
        (f"AIR {level} CI", "right"),
        ("flag", "left"),
    )
    for column, justify in columns:
        table.add_column(column, justify=justify)
    for i, attribute in enumerate(report.attributes):
        if i:
            table.add_section()
        for j, stat in enumerate(attribute.groups):
            table.add_row(
                attribute.attribute if j == 0 else "",
                escape(stat.group),
                str(stat.applications),
                str(stat.decided),
                str(stat.approved),
                _pct(stat.rate),
                _interval(stat.rate_ci, "pct"),
                _ratio(stat.air),
                _interval(stat.air_ci, "ratio"),
                _flag(stat),
            )
    return table


def fairness(database: DatabaseOption = None) -> None:
    """Approval rates and adverse impact ratios by group for each monitoring attribute,
    flagged against the four-fifths rule (0.80) and a watch line (0.90)."""
    from credit.governance.equipoise import Equipoise

    with _store(database) as store:
        try:
            report = Equipoise(store).portfolio()
        except CreditError as e:
            raise _fail(e) from None
    excluded = ", ".join(f"{n} {o}" for o, n in report.excluded.items()) or "none"
    out.print(
        f"{report.applications} recorded decision(s): {report.decided} decided, excluded "
        f"from the rates: {excluded}; {report.rejected_by_person} rejected by a person and "
        f"{report.unreadable} unreadable left out",
        highlight=False,
    )
    out.print(fairness_table(report))
    for finding in report.findings:
        out.print(f"[bold red]FINDING[/bold red] {escape(finding.message)}", highlight=False)
    flagged = report.flagged
    if not flagged:
        out.print(
            f"no group below the watch line ({report.watch_ratio}) among groups with enough data",
            highlight=False,
        )
        return
    for attribute, stat in flagged:
        out.print(
            f"{stat.flag}: {attribute} {escape(stat.group)!s} AIR {_ratio(stat.air)} "
            f"(four-fifths line {report.adverse_impact_ratio}, watch {report.watch_ratio})",
            highlight=False,
        )


def register_governance(app: typer.Typer) -> None:
    """Add ``review``, ``queue``, ``catalogue`` and ``fairness`` to the command line."""
    app.add_typer(review_app, name="review")
    app.command("queue")(queue)
    app.command("catalogue")(catalogue)
    app.command("fairness")(fairness)
