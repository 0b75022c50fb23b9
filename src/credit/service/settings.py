"""The service's settings: where the journal and outbox are, and its limits.

Every field has an environment variable (``CREDIT_*``) so ``credit serve --workers N``
hands the same settings to every worker process.
"""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path
from typing import Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from credit.errors import InputError
from credit.journal.cadence import DEFAULT_CHECKPOINT_INTERVAL_S
from credit.journal.sql import resolve_url

__all__ = [
    "DEFAULT_CONCURRENT_WRITES",
    "DEFAULT_MAX_BODY_BYTES",
    "OUTBOX_ENV",
    "SESSION_SECRET_ENV",
    "ServiceSettings",
]

DEFAULT_MAX_BODY_BYTES: Final = 64 * 1024
# Requests that write the journal one worker runs at once, the cases taken in first
# (credit.service.writes; docs/service.md, "Writes at once"): at 32 clients on 2 workers
# of a 2-core machine, decide's p99 with 1 was 82-88 ms on SQLite and 148 on PostgreSQL,
# with 2 146-160 and 190 ms, with 4 190-269 and 305 ms.
DEFAULT_CONCURRENT_WRITES: Final = 1
OUTBOX_ENV: Final = "CREDIT_OUTBOX"
SESSION_SECRET_ENV: Final = "CREDIT_SESSION_SECRET"
MAX_BODY_ENV: Final = "CREDIT_MAX_BODY_BYTES"
SECURE_COOKIES_ENV: Final = "CREDIT_SECURE_COOKIES"
SCHEMA_ENV: Final = "CREDIT_DATABASE_SCHEMA"
CONCURRENT_WRITES_ENV: Final = "CREDIT_CONCURRENT_WRITES"
CHECKPOINT_INTERVAL_ENV: Final = "CREDIT_CHECKPOINT_INTERVAL"
# The environment variable each setting read from the environment comes from.
_ENV_OF: Final = {
    "schema_name": SCHEMA_ENV,
    "outbox": OUTBOX_ENV,
    "session_secret": SESSION_SECRET_ENV,
    "max_body_bytes": MAX_BODY_ENV,
    "concurrent_writes": CONCURRENT_WRITES_ENV,
    "checkpoint_interval_s": CHECKPOINT_INTERVAL_ENV,
}


class ServiceSettings(BaseModel):
    """What one service process needs.

    ``database_url``: the journal (and key table) URL; ``schema`` a PostgreSQL schema.
    ``outbox``: the folder sent notices are written to. ``max_body_bytes``: a request
    body beyond it is refused with 413. ``session_secret`` signs the console's session
    cookie (every worker must share it; a random one per process otherwise).
    ``claim_stale_after_s``: a decide claim older than this (its worker died mid-turn)
    may be taken over. ``concurrent_writes``: how many requests that write the journal
    (intake, decide, a send, a person's action) one worker process runs at once; the
    others wait their turn without holding a thread (reads are not limited).
    ``checkpoint_interval_s``: the tree head is signed into the checkpoints folder at
    most once this many seconds while writes come (0: after every write, before its
    answer; docs/decisions/ADR-0003).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    database_url: str = Field(default_factory=resolve_url)
    schema_name: str | None = None
    outbox: Path = Path("outbox")
    max_body_bytes: int = Field(default=DEFAULT_MAX_BODY_BYTES, gt=0)
    session_secret: str = Field(default_factory=lambda: secrets.token_urlsafe(32), min_length=16)
    session_max_age_s: int = Field(default=8 * 3600, gt=0)
    secure_cookies: bool = False
    claim_stale_after_s: float = Field(default=300.0, gt=0)
    concurrent_writes: int = Field(default=DEFAULT_CONCURRENT_WRITES, gt=0)
    checkpoint_interval_s: float = Field(default=DEFAULT_CHECKPOINT_INTERVAL_S, ge=0, le=60)
    create_tables: bool = True

    @classmethod
    def from_env(cls, *, database_url: str | None = None) -> ServiceSettings:
        """Settings from the ``CREDIT_*`` environment (``database_url`` wins); a value
        they refuse is an InputError naming its variable."""
        values: dict[str, object] = {"database_url": resolve_url(database_url)}
        if schema := os.environ.get(SCHEMA_ENV):
            values["schema_name"] = schema
        if outbox := os.environ.get(OUTBOX_ENV):
            values["outbox"] = Path(outbox)
        if secret := os.environ.get(SESSION_SECRET_ENV):
            values["session_secret"] = secret
        if limit := os.environ.get(MAX_BODY_ENV):
            values["max_body_bytes"] = _whole_number(MAX_BODY_ENV, limit)
        if writes := os.environ.get(CONCURRENT_WRITES_ENV):
            values["concurrent_writes"] = _whole_number(CONCURRENT_WRITES_ENV, writes)
        if interval := os.environ.get(CHECKPOINT_INTERVAL_ENV):
            values["checkpoint_interval_s"] = _seconds(CHECKPOINT_INTERVAL_ENV, interval)
        if os.environ.get(SECURE_COOKIES_ENV, "").lower() in ("1", "true", "yes"):
            values["secure_cookies"] = True
        try:
            return cls.model_validate(values)
        except ValidationError as err:
            problem = err.errors()[0]
            name = str(problem["loc"][0]) if problem["loc"] else "settings"
            where = f"${_ENV_OF[name]}" if name in _ENV_OF else name
            raise InputError(f"{where}: {problem['msg']}", field=_ENV_OF.get(name, name)) from None


def _whole_number(name: str, text: str) -> int:
    """The value of environment variable ``name``, a whole number (InputError naming the
    variable otherwise; the settings' own bounds are checked when they are built)."""
    try:
        return int(text)
    except ValueError:
        raise InputError(f"${name} must be a whole number, not {text!r}", field=name) from None


def _seconds(name: str, text: str) -> float:
    """The value of environment variable ``name``, a number of seconds written in
    decimal digits (InputError naming the variable otherwise: no sign, exponent, 'nan'
    or 'inf'; the settings' own bounds are checked when they are built)."""
    if re.fullmatch(r"[0-9]+(\.[0-9]*)?|\.[0-9]+", text) is None:
        raise InputError(
            f"${name} must be a number of seconds such as 0.25, not {text!r}", field=name
        )
    return float(text)
