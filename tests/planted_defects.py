"""Defects planted in the rules underwriter's internals, each one a real bug could be.

Each defect is a function of a ``pytest.MonkeyPatch`` that breaks one rule of
:mod:`credit.underwriting` for the life of the patch. The tests that use them show
that the second line (``compare`` against ``derive``) and ``credit eval`` both catch
each one: a check is worth its cost only if a planted defect makes it fail.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Mapping
from decimal import ROUND_FLOOR, Decimal, localcontext
from typing import Any

import pytest

from credit.underwriting import capacity, engine

Defect = Callable[[pytest.MonkeyPatch], None]


def monthly_rate_apr_over_1000(mp: pytest.MonkeyPatch) -> None:
    """r = APR / 1000 instead of APR / 1200 in the amortising payment."""

    def factor(apr_pct: Decimal, term_months: int) -> Decimal:
        with localcontext() as ctx:
            ctx.prec = 34
            r = apr_pct / Decimal(1000)
            return r / (1 - (1 + r) ** -term_months)

    mp.setattr(capacity, "payment_factor", factor)
    mp.setattr(engine, "payment_factor", factor)


def dti_cap_fails_at_equality(mp: pytest.MonkeyPatch) -> None:
    """DTI == cap counts as over the cap (>= where the policy says >)."""
    mp.setattr(
        engine._Context,
        "dti_fails",
        property(lambda ctx: ctx.figures.dti_pct >= ctx.figures.max_dti_pct),
    )


def ltv_check_missing(mp: pytest.MonkeyPatch) -> None:
    """The auto LTV cap is never checked."""
    mp.setattr(engine._Context, "ltv_fails", property(lambda ctx: False))


def _wrap_reasons(
    mp: pytest.MonkeyPatch, change: Callable[[tuple[Any, ...]], tuple[Any, ...]]
) -> None:
    original = engine._adverse_reasons

    def changed(ctx: Any, *, score_principal: bool) -> tuple[Any, ...]:
        reasons = original(ctx, score_principal=score_principal)
        return change(reasons) if len(reasons) > 1 else reasons

    mp.setattr(engine, "_adverse_reasons", changed)


def last_reason_dropped(mp: pytest.MonkeyPatch) -> None:
    """A fencepost: the last of two or more principal reasons is left out."""
    _wrap_reasons(mp, lambda reasons: reasons[:-1])


def reasons_reversed(mp: pytest.MonkeyPatch) -> None:
    """The principal reasons in the reverse of the policy's factor order."""
    _wrap_reasons(mp, lambda reasons: tuple(reversed(reasons)))


def counteroffer_tie_to_the_longest_term(mp: pytest.MonkeyPatch) -> None:
    """The auto search walks the terms longest first, so a tie keeps the longest."""
    original = engine._search_auto

    def longest_first(ctx: Any) -> Any:
        product = ctx.product
        terms = product.terms_allowed
        ctx.product = product.model_copy(
            update={"terms_allowed": terms.model_copy(update={"value": terms.value[::-1]})}
        )
        try:
            return original(ctx)
        finally:
            ctx.product = product

    mp.setattr(engine, "_search_auto", longest_first)


def band_floor_off_by_one(mp: pytest.MonkeyPatch) -> None:
    """A score must exceed a band's floor (score > floor) to be in the band."""
    original = engine._band

    def above_floor(score: int | None, *args: Any) -> str:
        return original(None if score is None else score - 1, *args)

    mp.setattr(engine, "_band", above_floor)


def payment_rounded_down(mp: pytest.MonkeyPatch) -> None:
    """The auto payment is truncated to the cent instead of rounded half-up."""

    def floored(amount: Decimal, apr: Decimal, term: int, quantum: Decimal) -> Decimal:
        with localcontext() as ctx:
            ctx.prec = 34
            exact = amount * capacity.payment_factor(apr, term)
        return exact.quantize(quantum, rounding=ROUND_FLOOR)

    mp.setattr(engine, "amortised_payment", floored)


def card_line_not_capped_at_the_request(mp: pytest.MonkeyPatch) -> None:
    """The card line assessed is the band's line even above the line requested."""
    original = engine._capacity

    def uncapped(app: Any, score: int | None, band: str, lookups: Any, *rest: Any) -> Any:
        if app.product == "card" and band != "unscored":
            line = lookups.pricing[("card", band)].line.value
            app = app.model_copy(update={"requested_line": max(app.requested_line, line)})
        return original(app, score, band, lookups, *rest)

    mp.setattr(engine, "_capacity", uncapped)


def unscored_priced_at_the_lowest_band(mp: pytest.MonkeyPatch) -> None:
    """With no score the new payment is priced at the lowest band, so the DTI counts a
    payment the policy says an unscored case does not have."""
    original = engine._capacity

    def priced(app: Any, score: int | None, band: str, lookups: Any, *rest: Any) -> Any:
        if band != "unscored":
            return original(app, score, band, lookups, *rest)
        lowest = lookups.bands[-1][0]  # the bands by floor, highest first
        figures = original(app, score, lowest, lookups, *rest)
        return dataclasses.replace(figures, band="unscored", apr=None, assessed_line=None)

    mp.setattr(engine, "_capacity", priced)


def thin_file_tradelines_off_by_one(mp: pytest.MonkeyPatch) -> None:
    """A file with exactly the minimum tradelines is taken for a thin file (<=)."""
    original = engine._refer_unusable_file

    def stricter(ctx: Any) -> Any:
        lookups = ctx.lk  # the policy's parameters as the steps read them
        floor = lookups.min_tradelines
        ctx.lk = copy.copy(lookups)
        ctx.lk.min_tradelines = floor.model_copy(update={"value": floor.value + 1})
        try:
            return original(ctx)
        finally:
            ctx.lk = lookups

    mp.setitem(engine._STEPS, "referUnusableFile", stricter)


# The brief's five, then the second line's own.
DEFECTS: Mapping[str, Defect] = {
    "monthly rate APR/1000": monthly_rate_apr_over_1000,
    "DTI cap fails at equality": dti_cap_fails_at_equality,
    "LTV check missing": ltv_check_missing,
    "last reason dropped": last_reason_dropped,
    "reasons reversed": reasons_reversed,
    "counteroffer tie to the longest term": counteroffer_tie_to_the_longest_term,
    "band floor off by one": band_floor_off_by_one,
    "payment rounded down": payment_rounded_down,
    "card line not capped at the request": card_line_not_capped_at_the_request,
    "unscored priced at the lowest band": unscored_priced_at_the_lowest_band,
    "thin-file tradelines off by one": thin_file_tradelines_off_by_one,
}
