"""The clock: what time it is, as an interface with a system and a fixed implementation.

Everything dated by the product reads this clock: a journal entry's ``recordedAt``,
the date a notice is sent (and so a counteroffer's response window), and a work item's
days left on the Regulation B clock. Tests set it; so can an operator replaying a day:
``CREDIT_NOW`` (an ISO date ``2026-12-31`` or date-time ``2026-12-31T09:00:00+00:00``)
fixes the clock of every command and of the service (:func:`clock_from_env`).

Dates are UTC calendar dates.
"""

from __future__ import annotations

import datetime as dt
import os
from typing import Final, Protocol

from credit.errors import InputError

__all__ = ["CLOCK_ENV", "Clock", "FixedClock", "SystemClock", "clock_from_env", "parse_instant"]

CLOCK_ENV: Final = "CREDIT_NOW"


class Clock(Protocol):
    def now(self) -> dt.datetime:
        """The current instant, timezone-aware."""
        ...


class SystemClock:
    """The machine's clock, in UTC."""

    def now(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC)


class FixedClock:
    """A clock that says what it is told (tests; ``CREDIT_NOW``). ``advance`` moves it."""

    def __init__(self, instant: dt.datetime | dt.date | str) -> None:
        self._now = parse_instant(instant) if isinstance(instant, str) else _aware(instant)

    def now(self) -> dt.datetime:
        return self._now

    def advance(self, **delta: float) -> None:
        """Move the clock on by ``timedelta(**delta)`` (``days=31``)."""
        self._now += dt.timedelta(**delta)

    def __repr__(self) -> str:
        return f"FixedClock({self._now.isoformat()!r})"


def _aware(value: dt.datetime | dt.date) -> dt.datetime:
    if isinstance(value, dt.datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
    return dt.datetime.combine(value, dt.time(), tzinfo=dt.UTC)


def parse_instant(text: str, *, field: str = CLOCK_ENV) -> dt.datetime:
    """An ISO date or date-time (UTC when it names no zone); an InputError otherwise."""
    try:
        if len(text) == 10:
            return _aware(dt.date.fromisoformat(text))
        return _aware(dt.datetime.fromisoformat(text))
    except ValueError:
        raise InputError(
            f"expected an ISO date (2026-12-31) or date-time, got {text!r}", field=field
        ) from None


def clock_from_env() -> Clock:
    """The fixed clock ``CREDIT_NOW`` names, else the system clock."""
    value = os.environ.get(CLOCK_ENV)
    return FixedClock(parse_instant(value)) if value else SystemClock()
