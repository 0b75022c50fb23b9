"""Tables the command-line adapters share (rich)."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.table import Table


__all__ = ["outcome_table"]

OUTCOMES = ("approve", "counteroffer", "decline", "refer")
BANDS = ("prime", "near-prime", "subprime", "unscored")


def outcome_table(counts: Counter[tuple[str, str, str]]) -> Table:
    """Decisions counted by (product, band, outcome), a row per product and band with a
    total row."""
    from rich.table import Table

    table = Table(title="Outcomes by product and score band")
    table.add_column("product")
    table.add_column("band")
    for outcome in OUTCOMES:
        table.add_column(outcome, justify="right")
    table.add_column("total", justify="right")
    for product in ("auto", "card"):
        for band in BANDS:
            row = [counts[(product, band, o)] for o in OUTCOMES]
            if sum(row):
                table.add_row(product, band, *(f"{n:,}" for n in row), f"{sum(row):,}")
    totals = [sum(v for (_, _, oc), v in counts.items() if oc == o) for o in OUTCOMES]
    table.add_section()
    table.add_row("all", "", *(f"{n:,}" for n in totals), f"{sum(totals):,}", style="bold")
    return table
