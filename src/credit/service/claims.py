"""Claims: a request that must run once per case runs in one worker only.

``claim(name, holder)`` inserts the claim row, or takes over one older than
``stale_after_s`` (its worker died mid-request), each in one atomic statement: an
insert that does nothing on a conflict, an update conditioned on the old time. Across
processes exactly one caller gets True. ``release`` gives a claim up when the claimed
work did not happen (it failed), so it may be tried again.

A claim commits without a sync of its own (``ServiceDb.write(synced=False)``): it is
visible to every worker when its commit returns, and the work it claims commits synced
after it on the same log, which makes it durable too. A crash before that work's commit
may lose it, with nothing claimed done (the work is free to run again at once), or keep
it (taken over once stale, as the claim of any worker that died).
"""

from __future__ import annotations

import threading
import time
from typing import Any, Protocol

from sqlalchemy import BindParameter, bindparam, delete, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from credit.service.tables import ServiceDb

__all__ = ["Claims", "MemoryClaims", "SqlClaims"]


class Claims(Protocol):
    def claim(self, name: str, holder: str, *, stale_after_s: float) -> bool: ...

    def release(self, name: str, holder: str) -> None: ...


class MemoryClaims:
    """Claims in process memory (one process: tests, the in-memory store)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[str, tuple[str, float]] = {}

    def claim(self, name: str, holder: str, *, stale_after_s: float) -> bool:
        now = time.time()
        with self._lock:
            held = self._held.get(name)
            if held is not None and held[1] >= now - stale_after_s:
                return False
            self._held[name] = (holder, now)
            return True

    def release(self, name: str, holder: str) -> None:
        with self._lock:
            if self._held.get(name, ("", 0.0))[0] == holder:
                del self._held[name]


class SqlClaims:
    """Claims in the ``service_claims`` table (:class:`~credit.service.tables.ServiceDb`)."""

    def __init__(self, db: ServiceDb) -> None:
        self._db = db
        self._table = t = db.claims
        insert: Any = pg_insert if db.dialect == "postgresql" else sqlite_insert
        # Taken on every decide: built once, the values bound at each claim.
        # (named apart from the columns: a column's own name is SQLAlchemy's to bind)
        name: BindParameter[str] = bindparam("claim_name")
        holder: BindParameter[str] = bindparam("claim_holder")
        now: BindParameter[float] = bindparam("claim_at")
        self._insert = (
            insert(t)
            .values(claim=name, holder=holder, claimed_at=now)
            .on_conflict_do_nothing(index_elements=[t.c.claim])
            .returning(t.c.claim)
        )
        self._take_over = (
            update(t)
            .where(t.c.claim == name, t.c.claimed_at < bindparam("stale_before"))
            .values(holder=holder, claimed_at=now)
            .returning(t.c.claim)
        )

    def claim(self, name: str, holder: str, *, stale_after_s: float) -> bool:
        now = time.time()
        values = {
            "claim_name": name,
            "claim_holder": holder,
            "claim_at": now,
            "stale_before": now - stale_after_s,
        }
        # Not synced: a claim is visible to every worker when its commit returns, and
        # needs to outlive a crash only with the work it claimed, whose own synced
        # commit comes after it on the same log and takes it along.
        with self._db.failures(), self._db.write(synced=False) as conn:
            inserted = conn.execute(self._insert, values).first()
            if inserted is not None:
                return True
            taken_over = conn.execute(self._take_over, values).first()
            return taken_over is not None

    def release(self, name: str, holder: str) -> None:
        t = self._table
        with self._db.failures(), self._db.write() as conn:
            conn.execute(delete(t).where(t.c.claim == name, t.c.holder == holder))
