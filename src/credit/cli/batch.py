"""``credit batch decide`` and ``credit backtest``: thin adapters over
:mod:`credit.batch` (the optional ``batch`` extra, imported only when a command runs,
so ``credit`` works without it).

``credit batch decide IN --out OUT [--format jsonl|csv|parquet] [--chunk-size N]``
decides a case file (JSON Lines, CSV or Parquet; see docs/batch.md) chunk by chunk
with the columnar underwriter, writing one decision row per case read; a progress bar
runs on stderr. ``credit backtest --policy A.yaml --policy B.yaml CASES`` decides the
cases under both policies and shows what changes (docs/batch.md).

Exit status: 0 success; 2 bad input (each bad row is named on stderr by file, line or
row, case and field; every other row is still decided and written).

Registered on the ``credit`` app by its ``register`` (called in :mod:`credit.cli`).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from credit.cli.common import EXIT_BAD_INPUT, LazyConsole
from credit.errors import CreditError, InputError, MissingExtraError, PolicyError

if TYPE_CHECKING:
    from rich.progress import Progress
    from rich.table import Table

    from credit.policy import Policy

if TYPE_CHECKING:
    from credit.batch.whatif import Backtest
    from credit.governance.portfolio import PortfolioReport

__all__ = ["backtest_command", "batch_app", "batch_decide"]

batch_app = typer.Typer(
    rich_markup_mode=None,  # plain help: rich's help renderer costs ~90 ms to import
    add_completion=False,
    no_args_is_help=True,
    help="The columnar batch underwriter (the optional 'batch' extra).",
)
# Tables are read in logs and CI as often as in a terminal: no narrower than 120 there.
_out = LazyConsole(width=None if sys.stdout.isatty() else 120)
_err = LazyConsole(stderr=True)
_SHOWN_PROBLEMS = 20


def _fail(message: object, status: int = EXIT_BAD_INPUT) -> typer.Exit:
    _err.print(f"error: {message}", highlight=False, markup=False)
    return typer.Exit(status)


def _load(path: Path | None) -> Policy:
    from credit.policy import default_policy, load_policy

    try:
        return load_policy(path) if path else default_policy()
    except PolicyError as e:
        raise _fail(e) from None


def _need_batch() -> None:
    try:
        import polars  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError as err:
        raise _fail(
            MissingExtraError(
                "the batch underwriter needs polars and pyarrow",
                extra="batch",
                package=err.name or "polars",
            )
        ) from None


def _progress() -> Progress:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=_err.console,
        transient=False,
    )


def _report_problems(problems: list[InputError], total: int) -> None:
    if not problems:
        return
    _err.print(
        f"{len(problems)} of {total} row(s) not decided (bad input):", highlight=False, markup=False
    )
    for problem in problems[:_SHOWN_PROBLEMS]:
        _err.print(f"  {problem}", highlight=False, markup=False)
    if len(problems) > _SHOWN_PROBLEMS:
        _err.print(f"  ... and {len(problems) - _SHOWN_PROBLEMS} more", highlight=False)


@batch_app.command("decide")
def batch_decide(
    source: Annotated[Path, typer.Argument(help="Cases: .jsonl, .csv or .parquet.")],
    out: Annotated[Path, typer.Option("--out", help="Where the decision rows go.")],
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format", help="Output format: jsonl, csv or parquet (default: --out's suffix)."
        ),
    ] = None,
    in_format: Annotated[
        str | None,
        typer.Option("--in-format", help="Input format (default: the input's suffix)."),
    ] = None,
    chunk_size: Annotated[
        int, typer.Option("--chunk-size", min=1, help="Rows read, decided and written at a time.")
    ] = 100_000,
    policy: Annotated[
        Path | None,
        typer.Option("--policy", help="Policy YAML file (default: the bundled reference policy)."),
    ] = None,
) -> None:
    """Decide a case file column by column; write one decision row per case read."""
    from credit.cli.tables import outcome_table

    _need_batch()
    import time

    from credit.batch import decide_frame, decision_schema
    from credit.batch.io import (
        DecisionWriter,
        count_rows,
        decision_errors,
        detect_format,
        read_case_chunks,
    )

    pol = _load(policy)
    problems: list[InputError] = []
    outcomes: Counter[tuple[str, str, str]] = Counter()
    try:
        detect_format(out, fmt)  # a bad output format is refused before any work
        kind = detect_format(source, in_format)
        row_label = "row" if kind == "parquet" else "line"
        total = count_rows(source, kind) if source.is_file() else 0
        chunks = read_case_chunks(source, kind, chunk_size=chunk_size, policy=pol)
        read = 0
        started = time.perf_counter()
        with DecisionWriter(out, fmt) as writer, _progress() as progress:
            task = progress.add_task("deciding", total=total or None, rate="")
            for chunk in chunks:
                decisions = decide_frame(chunk.frame, pol)
                writer.write(decisions)
                problems += chunk.problems
                problems += decision_errors(
                    decisions, chunk.lines, str(source), row_label=row_label
                )
                counts = (
                    decisions.filter(decisions["errorKind"].is_null())
                    .group_by("product", "scoreBand", "decision")
                    .len()
                )
                for product, band, decision, n in counts.iter_rows():
                    outcomes[(product, band, decision)] += n
                read += chunk.rows_read
                rate = read / max(time.perf_counter() - started, 1e-9)
                progress.update(task, completed=read, rate=f"{rate:,.0f} rows/s")
            writer.close(decision_schema(pol))  # an empty batch still gets its header
    except CreditError as e:
        raise _fail(e) from None
    problems.sort(key=lambda e: (e.line or 0, e.source or ""))
    decided = sum(outcomes.values())
    _out.print(
        f"policy {pol.label} (sha256 {pol.sha256[:12]}...): {decided:,} decided of {read:,} "
        f"rows read from {source}; decisions written to {out}",
        highlight=False,
    )
    _out.print(outcome_table(outcomes))
    _report_problems(problems, read)
    if problems:
        raise typer.Exit(EXIT_BAD_INPUT)


# ---------------------------------------------------------------- credit backtest


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def _transitions_table(result: Backtest) -> Table:
    from rich.table import Table

    table = Table(title=f"Decisions that change, A -> B ({result.changed:,} of {result.cases:,})")
    for column in ("A", "B", "cases", "sample case ids"):
        table.add_column(column, justify="right" if column == "cases" else "left")
    for t in result.transitions:
        table.add_row(t.before, t.after, f"{t.count:,}", ", ".join(t.sample))
    table.add_section()
    table.add_row("unchanged", "", f"{result.unchanged:,}", "")
    return table


def _rates_table(result: Backtest) -> Table:
    from rich.table import Table

    table = Table(title="Approval rate by product and score band (approved / decided)")
    for column in ("product", "band", "A cases", "A rate", "B cases", "B rate", "change"):
        table.add_column(column, justify="left" if column in ("product", "band") else "right")
    a = {(r.product, r.band): r for r in result.rates_a}
    b = {(r.product, r.band): r for r in result.rates_b}
    keys = [k for k in dict.fromkeys([*a, *b])]
    for key in keys:
        ra, rb = a.get(key), b.get(key)
        rate_a = ra.rate if ra else None
        rate_b = rb.rate if rb else None
        change = (
            f"{(rate_b - rate_a) * 100:+.1f} pts"
            if rate_a is not None and rate_b is not None
            else "-"
        )
        table.add_row(
            key[0],
            key[1],
            f"{ra.applications:,}" if ra else "0",
            _pct(rate_a),
            f"{rb.applications:,}" if rb else "0",
            _pct(rate_b),
            change,
        )
    return table


def _air_table(a: PortfolioReport, b: PortfolioReport, attribute: str) -> Table:
    from rich.table import Table

    table = Table(title=f"Adverse impact ratio by {attribute} (reference: the highest rate)")
    for column in ("group", "A rate", "A AIR", "A flag", "B rate", "B AIR", "B flag"):
        table.add_column(
            column, justify="left" if column in ("group",) or "flag" in column else "right"
        )
    ga = {g.group: g for g in a.attribute(attribute).groups}
    gb = {g.group: g for g in b.attribute(attribute).groups}
    for name in dict.fromkeys([*ga, *gb]):
        x, y = ga.get(name), gb.get(name)
        table.add_row(
            name,
            _pct(x.rate) if x else "-",
            f"{x.air:.2f}" if x and x.air is not None else "-",
            x.flag if x else "-",
            _pct(y.rate) if y else "-",
            f"{y.air:.2f}" if y and y.air is not None else "-",
            y.flag if y else "-",
        )
    return table


def backtest_command(
    cases: Annotated[Path, typer.Argument(help="Cases: .jsonl, .csv or .parquet.")],
    policies: Annotated[
        list[Path],
        typer.Option("--policy", help="Policy A, then policy B (give --policy twice)."),
    ],
    plot: Annotated[
        Path, typer.Option("--plot", help="Where the PNG (approval rate by band and group) goes.")
    ] = Path("backtest.png"),
    group_by: Annotated[
        str, typer.Option("--group-by", help="The monitoring attribute the plot groups by.")
    ] = "race",
    sample: Annotated[
        int, typer.Option("--sample", min=0, help="Case ids shown for each transition.")
    ] = 5,
    in_format: Annotated[
        str | None, typer.Option("--in-format", help="Input format (default: the suffix).")
    ] = None,
) -> None:
    """Decide the cases under policy A and policy B and show what changes: transitions,
    approval rates by product and band, adverse impact ratios by group, and a plot."""
    _need_batch()
    from credit.batch.io import read_cases
    from credit.batch.whatif import backtest, plot_backtest
    from credit.governance.fair_lending import ATTRIBUTES, default_fair_lending_config

    if len(policies) != 2:
        raise _fail(f"--policy must be given twice (A, then B); got {len(policies)}")
    if group_by not in ATTRIBUTES:
        raise _fail(f"--group-by: unknown attribute {group_by!r} (one of {', '.join(ATTRIBUTES)})")
    policy_a, policy_b = _load(policies[0]), _load(policies[1])
    config = default_fair_lending_config()
    try:
        with _progress() as progress:
            task = progress.add_task("reading and deciding", total=None, rate="")
            frame, problems = read_cases(cases, in_format)
            result = backtest(frame, policy_a, policy_b, sample=sample, config=config)
            progress.update(task, completed=frame.height, total=frame.height)
        plot_backtest(result, plot, attribute=group_by, config=config)
    except CreditError as e:
        raise _fail(e) from None
    for label, pol in (("A", policy_a), ("B", policy_b)):
        _out.print(f"policy {label}: {pol.label} (sha256 {pol.sha256[:12]}...) from {pol.source}")
    _out.print(f"{result.cases:,} cases from {cases}")
    _out.print(_transitions_table(result))
    _out.print(_rates_table(result))
    if result.fairness_a is not None and result.fairness_b is not None:
        for attribute in config.portfolio_attributes:
            _out.print(_air_table(result.fairness_a, result.fairness_b, attribute))
    else:
        _out.print("no case carries monitoring data: no adverse impact ratios")
    _out.print(f"plot written to {plot}", highlight=False)
    _report_problems(problems, result.cases + len(problems))
    if problems:
        raise typer.Exit(EXIT_BAD_INPUT)


def register(app: typer.Typer) -> None:
    """Register this module's commands on the ``credit`` app."""
    app.add_typer(batch_app, name="batch")
    app.command("backtest")(backtest_command)
