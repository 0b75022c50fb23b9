"""``credit review`` and ``credit fairness``: thin adapters over the Keystone gate and
Equipoise's portfolio report (no domain logic here).

* ``credit review`` lists the cases the gate holds; ``credit review show CASE`` shows a
  case's standing and findings; ``credit review run`` runs the gate's reviews on every
  case awaiting them; ``credit review release CASE --by NAME --reason TEXT`` and
  ``credit review reject CASE --by NAME --reason TEXT`` journal a person's decision.
* ``credit fairness`` prints approval rates and adverse impact ratios by group, with
  their confidence intervals and flags (exit 0: the flags are for a person to read).

Both open the journal with :func:`credit.journal.open_store` (``--database``, else
$CREDIT_DATABASE_URL, else ``sqlite:///credit.db``); neither creates one. Exit status:
0 done, 1 the gate refused (a case not held, a release before review) or a review could
not run, 2 bad input or an unreachable store.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console, JustifyMethod
from rich.markup import escape
from rich.table import Table

from credit.errors import CreditError
from credit.governance.keystone import Keystone, KeystoneStatus
from credit.governance.portfolio import (
    FLAG_ADVERSE_IMPACT,
    FLAG_INSUFFICIENT,
    FLAG_REFERENCE,
    FLAG_WATCH,
    GroupStat,
    PortfolioReport,
)
from credit.journal import DATABASE_URL_ENV, DEFAULT_DATABASE_URL, SqlStore, open_store

__all__ = ["fairness", "register_governance", "review_app"]

EXIT_REFUSED = 1
EXIT_BAD_INPUT = 2

out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

review_app = typer.Typer(
    add_completion=False,
    help="The Keystone gate: list held decisions; a person releases or rejects them.",
)

DatabaseOption = Annotated[
    str | None,
    typer.Option(
        "--database",
        "--db",
        help=f"Database URL (default: ${DATABASE_URL_ENV}, else {DEFAULT_DATABASE_URL}).",
        show_default=False,
    ),
]
CaseArgument = Annotated[str, typer.Argument(help="The case id.")]
ByOption = Annotated[str, typer.Option("--by", help="Who decides (your name).")]
ReasonOption = Annotated[str, typer.Option("--reason", help="Why, for the journal.")]


def _fail(e: CreditError) -> typer.Exit:
    err.print(f"[red]error:[/red] {escape(str(e))}", highlight=False)
    return typer.Exit(EXIT_BAD_INPUT if isinstance(e, ValueError) else EXIT_REFUSED)


@contextmanager
def _store(database: str | None) -> Iterator[SqlStore]:
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
    with _store(database) as store:
        try:
            status = Keystone(store).status(case)
        except CreditError as e:
            raise _fail(e) from None
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


def _person_decides(
    case: str,
    by: str,
    reason: str,
    database: str | None,
    release: bool,
    outbox: Path | None = None,
) -> None:
    from credit.notices import DirectoryOutbox
    from credit.pipeline import Pipeline

    with _store(database) as store:
        keystone = Keystone(store)
        try:
            entry = (keystone.release if release else keystone.reject)(case, by, reason)
            sent = (
                Pipeline(store, DirectoryOutbox(outbox), keystone=keystone).notify_case(case)
                if release and outbox is not None
                else None
            )
        except CreditError as e:
            raise _fail(e) from None
    verb = "released" if release else "rejected"
    out.print(
        f"case {case} {verb} by {by.strip()} (journal entry {entry.seq})",
        highlight=False,
        markup=False,
    )
    if sent is not None:
        out.print(f"case {case}: {sent} (outbox {outbox}/)", highlight=False, markup=False)


OutboxOption = Annotated[
    Path,
    typer.Option(
        "--outbox",
        envvar="CREDIT_OUTBOX",
        help="Folder the released decision's notice is sent to, as credit run ($CREDIT_OUTBOX).",
    ),
]


@review_app.command("release")
def review_release(
    case: CaseArgument,
    by: ByOption,
    reason: ReasonOption,
    database: DatabaseOption = None,
    outbox: OutboxOption = Path("outbox"),
) -> None:
    """Release a held case: its decision is committed, and a decline or counteroffer
    gets its notice rendered, verified and sent. Journals who and why."""
    _person_decides(case, by, reason, database, release=True, outbox=outbox)


@review_app.command("reject")
def review_reject(
    case: CaseArgument, by: ByOption, reason: ReasonOption, database: DatabaseOption = None
) -> None:
    """Reject a held case: its decision is not committed. Journals who and why."""
    _person_decides(case, by, reason, database, release=False)


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


_FLAG_STYLE = {
    FLAG_ADVERSE_IMPACT: "bold red",
    FLAG_WATCH: "yellow",
    FLAG_INSUFFICIENT: "dim",
    FLAG_REFERENCE: "cyan",
}


def _flag(stat: GroupStat) -> str:
    style = _FLAG_STYLE.get(stat.flag)
    return f"[{style}]{escape(stat.flag)}[/{style}]" if style else escape(stat.flag)


def fairness_table(report: PortfolioReport) -> Table:
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
    """Add ``review`` and ``fairness`` to the ``credit`` command line."""
    app.add_typer(review_app, name="review")
    app.command("fairness")(fairness)
