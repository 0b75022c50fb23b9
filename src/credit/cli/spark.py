"""``credit spark decide IN.parquet OUT.parquet``: the columnar underwriter on Spark.

A thin adapter over :mod:`credit.batch.spark` (imported only when the command runs, so
``credit`` works without the optional ``spark`` extra). Exit status: 0 success, 2 bad
input (a policy file, a missing extra, an unreadable input, an existing output without
``--overwrite``). Submitting to a cluster instead: docs/spark.md.

Registered on the ``credit`` app by its ``register`` (called in :mod:`credit.cli`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from credit.cli.common import EXIT_BAD_INPUT, LazyConsole, escape
from credit.errors import CreditError

__all__ = ["spark_app", "spark_decide"]

spark_app = typer.Typer(
    rich_markup_mode=None,  # plain help: rich's help renderer costs ~90 ms to import
    add_completion=False,
    no_args_is_help=True,
    help="Run the columnar underwriter on Apache Spark (the optional 'spark' extra).",
)
_out = LazyConsole()
_err = LazyConsole(stderr=True)


@spark_app.command("decide")
def spark_decide(
    source: Annotated[Path, typer.Argument(help="Parquet input: cases in the flat case schema.")],
    target: Annotated[Path, typer.Argument(help="Parquet output directory: the decisions.")],
    master: Annotated[
        str | None,
        typer.Option("--master", help="Spark master, e.g. local[2] (default: Spark's own)."),
    ] = None,
    policy: Annotated[
        Path | None,
        typer.Option("--policy", help="Policy YAML file (default: the bundled reference policy)."),
    ] = None,
    partitions: Annotated[
        int | None, typer.Option("--partitions", min=1, help="Repartition the input first.")
    ] = None,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace the output if it exists.")
    ] = False,
) -> None:
    """Decide a Parquet file of cases on Spark; write the decision columns as Parquet."""
    try:
        from credit.batch.spark import (
            bad_rows,
            decide_parquet,
            first_line,
            is_bad_input,
            report_bad_rows,
            session,
        )
        from credit.policy import default_policy, load_policy

        chosen = load_policy(policy) if policy else default_policy()
        spark = session(master)
    except (CreditError, ImportError) as e:
        _err.print(f"[red]error:[/red] {escape(str(e))}", highlight=False)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    try:
        spark.sparkContext.setLogLevel("ERROR")
        decide_parquet(spark, source, target, chosen, partitions=partitions, overwrite=overwrite)
        count, errors = bad_rows(spark, source, target)
    except Exception as e:
        if not is_bad_input(e):
            raise
        _err.print(f"[red]error:[/red] {escape(first_line(e))}", highlight=False)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    finally:
        spark.stop()
    _out.print(f"decisions written to {target} ({chosen.label}, sha256 {chosen.sha256[:12]}...)")
    report_bad_rows(count, errors, lambda text: _err.print(text, highlight=False, markup=False))
    if count:
        raise typer.Exit(EXIT_BAD_INPUT)


def register(app: typer.Typer) -> None:
    """Register this module's commands on the ``credit`` app."""
    app.add_typer(spark_app, name="spark")
