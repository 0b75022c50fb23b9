"""``credit decide``, ``credit run`` and ``credit eval``: the case commands.

Thin adapters over the core (no domain logic here); registered on the ``credit`` app
by :func:`register` (:mod:`credit.cli`). The core is imported inside each command.
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from credit.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    STATE,
    PolicyOption,
    default_cases_path,
    err,
    escape,
    load_policy_or_exit,
    out,
)
from credit.errors import CreditError, InputError

if TYPE_CHECKING:
    from rich.table import Table

    from credit.cases import CaseLine
    from credit.pipeline import RunSummary
    from credit.policy import Policy
    from credit.underwriters.runtime import Underwriter
    from credit.underwriting import Underwriting

__all__ = ["EVAL_SUITES", "decide", "eval_command", "register", "run"]


def _policy(path: Path | None) -> Policy:
    return load_policy_or_exit(path)


class _InternalError:
    """A case whose decision failed not for its input: a policy none of whose rules
    decides it, or a bug. Reported in one line like a bad case, the batch goes on, and
    the exit status is 1 (as ``credit run`` makes it a failed case for a person)."""

    def __init__(self, entry: CaseLine, err: Exception, what: str = "internal error") -> None:
        case_id = entry.case.case_id if entry.case is not None else None
        where = ", ".join(
            p
            for p in (entry.source, f"line {entry.line}", f"case {case_id}" if case_id else "")
            if p
        )
        detail = getattr(err, "message", None) or str(err)  # without the case said again
        self.text = f"{where}: {what} ({type(err).__name__}: {detail})"
        self.trace = "".join(traceback.format_exception(err))


def _decide_line(entry: CaseLine, policy: Policy) -> Underwriting | InputError | _InternalError:
    from credit.underwriting import decide_case

    if entry.error is not None:
        return entry.error
    assert entry.case is not None
    try:
        return decide_case(entry.case, policy)
    except InputError as e:
        return e.located(line=entry.line, source=entry.source)
    except CreditError as e:
        # No rule of the policy decided it: not the case's fault (as in credit run, a
        # case for a person, exit 1), named, never a fallthrough.
        return _InternalError(entry, e, "no rule of the policy decides it; a person must")
    except Exception as e:  # one case's failure never stops the batch
        return _InternalError(entry, e)


def _report_failures(failures: list[InputError], total: int) -> None:
    if not failures:
        return
    err.print(
        f"[red]{len(failures)} of {total} case(s) not decided (bad input):[/red]", highlight=False
    )
    for failure in failures:
        err.print(f"  {failure}", highlight=False, markup=False)


def decide(
    file: Annotated[Path, typer.Argument(help="One case (.json) or a batch (.jsonl).")],
    policy: PolicyOption = None,
) -> None:
    """Decide each case; print JSON Lines in input order: {"caseId", "decision", ...}.

    Each case is read by the one case reader (docs/case-format.md) and checked against
    the policy (in force on its asOf, the score on its scale) before it is decided; a
    bad case is named on stderr and every other case is still decided (exit 2). A case
    no rule of the policy decides is named too, a case for a person (exit 1)."""
    from credit.canonical import dumps
    from credit.cases import iter_cases

    pol = _policy(policy)
    failures: list[InputError] = []
    internal: list[_InternalError] = []
    total = 0
    try:
        for entry in iter_cases(file, policies=pol):
            total += 1
            result = _decide_line(entry, pol)
            if isinstance(result, InputError):
                failures.append(result)
            elif isinstance(result, _InternalError):
                internal.append(result)
            else:
                sys.stdout.write(dumps(result.to_wire()) + "\n")
    except InputError as e:
        err.print(f"[red]error:[/red] {escape(str(e))}", highlight=False)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    sys.stdout.flush()
    _report_failures(failures, total)
    for problem in internal:
        err.print(f"  {problem.text}", highlight=False, markup=False)
        if STATE.debug:
            err.print(problem.trace, highlight=False, markup=False)
    if internal:
        raise typer.Exit(EXIT_FAILED)
    if failures:
        raise typer.Exit(EXIT_BAD_INPUT)


def _governance_table(summary: RunSummary) -> Table:
    from rich.table import Table

    table = Table(title="Governance")
    table.add_column("step")
    table.add_column("count", justify="right")
    rows = [
        ("cases in the batch", summary.cases),
        ("taken in now / already taken in", f"{summary.taken_in} / {summary.resumed}"),
        ("bad input (not taken in, or not decidable as asked)", len(summary.failures)),
        ("decisions recorded", summary.decided),
        ("refused (typed refusal)", summary.refused),
        ("failed turns", summary.failed),
        ("held by Keystone for a person", summary.held),
        ("released by Keystone or a person", summary.released),
        ("rejected by a person", summary.rejected),
        ("notices verified (V1-V8 pass)", summary.notices_verified),
        ("notices sent", summary.notices_sent),
        ("notices blocked", summary.notices_blocked),
        ("ethics findings recorded", summary.ethics_findings),
        ("at a final action (approved, notified, withdrawn)", summary.final),
        ("open work items (credit queue)", summary.open_items),
    ]
    for name, value in rows:
        table.add_row(name, str(value))
    for kind, count in sorted(summary.items.items()):
        table.add_row(f"  {kind}", str(count))
    return table


UnderwriterOption = Annotated[
    str,
    typer.Option("--underwriter", help="rules (default) or claude (needs the llm extra)."),
]
ModelOption = Annotated[
    str | None,
    typer.Option(
        "--model",
        help="The model the claude underwriter asks its endpoint for "
        "($ANTHROPIC_BASE_URL, with $ANTHROPIC_API_KEY; default: the CLI's own).",
    ),
]
TranscriptsOption = Annotated[
    Path,
    typer.Option(
        "--transcripts",
        envvar="CREDIT_TRANSCRIPTS",
        help="Folder the claude underwriter's turn transcripts are stored in, "
        "<sha256>.json ($CREDIT_TRANSCRIPTS).",
    ),
]


def _underwriter(underwriter: str, model: str | None) -> Underwriter | None:
    """The underwriter a command was asked for: None for the rules underwriter (the
    command's own default), a ClaudeUnderwriter for claude; exit 2 otherwise."""
    if underwriter == "claude":
        from credit.underwriters.claude import ClaudeUnderwriter

        return ClaudeUnderwriter(model=model)
    if underwriter != "rules":
        err.print(f"[red]error:[/red] --underwriter: unknown underwriter {underwriter!r}")
        raise typer.Exit(EXIT_BAD_INPUT)
    if model is not None:
        err.print("[red]error:[/red] --model is for --underwriter claude")
        raise typer.Exit(EXIT_BAD_INPUT)
    return None


DatabaseOption = Annotated[
    str | None,
    typer.Option(
        "--database",
        help="Journal URL (sqlite:///... or postgresql://...); default $CREDIT_DATABASE_URL "
        "or sqlite:///credit.db.",
    ),
]


def run(
    file: Annotated[
        Path | None, typer.Argument(help="A batch (.jsonl); default: the bundled example cases.")
    ] = None,
    policy: PolicyOption = None,
    database: DatabaseOption = None,
    outbox: Annotated[
        Path,
        typer.Option(
            "--outbox",
            envvar="CREDIT_OUTBOX",
            help="Folder that verified notices are sent to ($CREDIT_OUTBOX).",
        ),
    ] = Path("outbox"),
    underwriter: UnderwriterOption = "rules",
    model: ModelOption = None,
    transcripts: TranscriptsOption = Path("transcripts"),
    group_size: Annotated[
        int | None,
        typer.Option(
            "--group-size",
            min=1,
            help="Cases per durable commit: an interruption loses at most the group under "
            "way, which the next run does again (default: the pipeline's GROUP_SIZE).",
        ),
    ] = None,
    workers: Annotated[
        int,
        typer.Option(
            "--workers",
            min=1,
            help="Processes that share the batch on the one journal, each case to one "
            "(a SQLite file or PostgreSQL; default 1).",
        ),
    ] = 1,
) -> None:
    """The main job, governed: intake, the underwriter through the tools, the Keystone
    hold and both reviews, release, then notice, verify and send; every step journaled.
    Resumable: run it again after an interruption and it finishes the batch.

    A bad line, or a case whose own content stopped its turn, is named on stderr (file,
    line, case, field) and every other case goes on: exit 2. A case whose turn, review
    or notice failed for another reason is one failed work item for a person, named
    too: exit 1. A re-run names the same cases and journals nothing more."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskID,
        TextColumn,
        TimeElapsedColumn,
    )

    from credit.cli.tables import outcome_table
    from credit.journal import open_store
    from credit.journal.signer import checkpoints_dir, ensure_journal_key
    from credit.notices import DirectoryOutbox
    from credit.pipeline import GROUP_SIZE, Pipeline, stream_batch
    from credit.policy import PolicyRegistry

    registry = PolicyRegistry([_policy(policy)]) if policy else PolicyRegistry.bundled()
    chosen = _underwriter(underwriter, model)
    path = file or default_cases_path()
    try:
        lines, total = stream_batch(path)
    except InputError as e:
        err.print(f"[red]error:[/red] {e}", highlight=False, markup=False)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    try:
        key = ensure_journal_key(note=lambda text: err.print(text, highlight=False, markup=False))
    except CreditError as e:
        err.print(f"[red]error:[/red] {e}", highlight=False, markup=False)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    with (
        open_store(database, key=key) as store,
        Progress(
            TextColumn("{task.description:<10}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err.console,
        ) as progress,
    ):
        if workers > 1 and not store.shared:
            err.print(
                f"error: --workers {workers}: the workers need a journal every process "
                f"can open (a SQLite file or PostgreSQL), not {store!r}",
                highlight=False,
                markup=False,
            )
            raise typer.Exit(EXIT_BAD_INPUT)
        tasks: dict[str, TaskID] = {}

        def tick(phase: str, done: int, total: int) -> None:
            if phase not in tasks:
                tasks[phase] = progress.add_task(phase, total=total)
            progress.update(tasks[phase], completed=done, total=total)

        pipeline = Pipeline(
            store,
            DirectoryOutbox(outbox),
            registry=registry,
            underwriter=chosen,
            progress=tick,
            checkpoints=checkpoints_dir(),
            group_size=GROUP_SIZE if group_size is None else group_size,
        )
        pipeline.runtime.transcripts = transcripts
        if workers == 1:
            summary = pipeline.run(lines, source=str(path), total=total)
        else:
            summary = pipeline.run_workers(
                lambda: stream_batch(path)[0], workers, source=str(path), total=total
            )
    label = ", ".join(f"{p.label} (sha256 {p.sha256[:12]}...)" for p in registry.policies)
    out.print(f"policy {label}; cases from {path}; notices sent to {outbox}/")
    if chosen is not None:
        out.print(f"underwriter {chosen.name}; turn transcripts in {transcripts}/")
    out.print(outcome_table(summary.outcomes))
    out.print(_governance_table(summary))
    chain = summary.chain
    if chain is not None and chain.ok:
        after = chain.entries - chain.since
        walked = (
            f" ({f'the {after}' if after else 'none'} after entry {chain.since}, which the "
            "last run verified, walked; 'credit journal verify' walks them all)"
            if chain.since
            else ""
        )
        out.print(
            f"journal: chain verified, {chain.entries} entries{walked}, head {chain.head[:16]}..."
        )
    elif chain is not None:
        out.print(f"[red]journal: BROKEN at entry {chain.first_broken_seq}: {chain.detail}[/red]")
    if summary.checkpoint is not None:
        out.print(f"journal: signed checkpoint {summary.checkpoint}", highlight=False)
    _report_failures(summary.failures, summary.cases)
    if summary.failed_cases:
        err.print(
            f"[red]{len(summary.failed_cases)} of {summary.cases} case(s) failed "
            "(not bad input):[/red]",
            highlight=False,
        )
        for failed in summary.failed_cases:
            err.print(f"  {failed}", highlight=False, markup=False)
    if summary.failures:
        raise typer.Exit(EXIT_BAD_INPUT)
    if summary.failed_cases or summary.notices_blocked or (chain is not None and not chain.ok):
        raise typer.Exit(EXIT_FAILED)


EVAL_SUITES = ("policy-boundary", "thin-file", "fairness-guard")


def eval_command(
    policy: PolicyOption = None,
    underwriter: UnderwriterOption = "rules",
    model: ModelOption = None,
    suite: Annotated[
        list[str] | None,
        typer.Option(
            "--suite",
            help=f"Run only this suite ({', '.join(EVAL_SUITES)}); repeat for more "
            "(default: every suite).",
        ),
    ] = None,
    transcripts: TranscriptsOption = Path("transcripts"),
) -> None:
    """Run the evals (policy boundary, thin file, fairness guard) against the rules
    underwriter, or with --underwriter claude against the model at $ANTHROPIC_BASE_URL,
    each case one governed turn; exit 1 if any row fails."""
    from rich.table import Table

    from credit.evals import run_all
    from credit.evals.runner import run_boundary, run_fairness, run_thin_file
    from credit.fairness_terms import default_prohibited_terms

    pol = _policy(policy)
    chosen = _underwriter(underwriter, model)
    suites = tuple(dict.fromkeys(suite or EVAL_SUITES))
    unknown = [s for s in suites if s not in EVAL_SUITES]
    if unknown:
        err.print(
            f"[red]error:[/red] --suite: unknown suite {unknown[0]!r} "
            f"(the suites: {', '.join(EVAL_SUITES)})"
        )
        raise typer.Exit(EXIT_BAD_INPUT)
    if chosen is None and suites == EVAL_SUITES:
        report = run_all(pol)
    else:
        from credit.evals.report import EvalReport
        from credit.evals.runner import Underwriter as Decides
        from credit.evals.runner import rules_underwriter

        decide: Decides = rules_underwriter
        if chosen is not None:
            from credit.underwriters.claude import evals_underwriter

            decide = evals_underwriter(chosen, transcripts=transcripts)
        runs = {
            "policy-boundary": lambda: run_boundary(pol, decide),
            "thin-file": lambda: run_thin_file(pol, decide),
            "fairness-guard": lambda: run_fairness(pol, decide, default_prohibited_terms()),
        }
        report = EvalReport.of(row for name in suites for row in runs[name]())
    who = "the rules underwriter" if chosen is None else f"underwriter {chosen.name}"
    table = Table(title=f"Evals under {pol.label}, {who}")
    for column in ("suite", "eval", "result", "detail"):
        table.add_column(column)
    for r in report.results:
        table.add_row(
            r.suite, r.name, "[green]pass[/green]" if r.passed else "[red]FAIL[/red]", r.detail
        )
    out.print(table)
    failed = [r for r in report.results if not r.passed]
    out.print(f"{len(report.results) - len(failed)} passed, {len(failed)} failed")
    if chosen is not None:
        out.print(f"turn transcripts in {transcripts}/")
    if failed:
        raise typer.Exit(EXIT_FAILED)


def register(app: typer.Typer) -> None:
    """Register ``credit decide``, ``credit run`` and ``credit eval`` on ``app``."""
    app.command()(decide)
    app.command()(run)
    app.command("eval")(eval_command)
