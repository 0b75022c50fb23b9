"""The case journal: append-only, hash-chained entries, and the stores beside it.

Every step of a case lands here as an :class:`Entry`: a sequence number, the case id,
a kind (``intake.accepted``, ``decision.recorded``, ``notice.sent``, ...), a JSON
payload, the previous entry's hash, and its own hash::

    hash = SHA-256( prev_hash (64 hex chars, ASCII) || canonical_bytes(body) )

where ``body`` is ``{seq, caseId, kind, payload, prevHash, recordedAt}`` in canonical
JSON (sorted keys, exact decimals). The first entry's previous hash is 64 zeros.
Nothing is updated in place; :func:`verify_chain` walks the chain and names the first
broken link (an edited, deleted or reordered entry).

Beside the chain, the same store keeps the case documents the tools serve (the
underwriter-visible application and credit report) and, apart, the monitoring data
that only the fair-lending review may read.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from credit.canonical import canonical_bytes
from credit.clock import Clock, SystemClock, clock_from_env
from credit.errors import CreditError
from credit.kinds import DECISION_RECORDED

__all__ = [
    "DECISION_KIND",
    "GENESIS_HASH",
    "ChainReport",
    "Clock",
    "DecisionAlreadyRecordedError",
    "Entry",
    "InMemoryStore",
    "JournalError",
    "StaleCaseError",
    "Store",
    "SystemClock",
    "entry_hash",
    "verify_chain",
]

GENESIS_HASH = "0" * 64
DECISION_KIND = DECISION_RECORDED


class JournalError(CreditError, RuntimeError):
    """The journal could not do what was asked (the store is unreachable, say)."""

    def __init__(self, message: str, *, case_id: str | None = None, seq: int | None = None):
        self.message = message
        self.case_id = case_id
        self.seq = seq
        where = ", ".join(
            p for p in (f"case {case_id}" if case_id else "", f"entry {seq}" if seq else "") if p
        )
        super().__init__(f"{where}: {message}" if where else message)


class DecisionAlreadyRecordedError(JournalError):
    """record_decision was called for a case that already has its decision."""


class StaleCaseError(JournalError):
    """An append conditioned on the case's latest entry (``after=``) found a newer one:
    someone else moved the case since it was read. Nothing was appended."""

    def __init__(self, message: str, *, case_id: str | None, expected: int, found: int) -> None:
        self.expected = expected
        self.found = found
        super().__init__(message, case_id=case_id)


class Entry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    seq: int
    case_id: str | None
    kind: str
    payload: Mapping[str, Any]
    prev_hash: str
    recorded_at: str
    hash: str

    def body(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "caseId": self.case_id,
            "kind": self.kind,
            "payload": self.payload,
            "prevHash": self.prev_hash,
            "recordedAt": self.recorded_at,
        }

    def to_wire(self) -> dict[str, Any]:
        return {**self.body(), "hash": self.hash}


def entry_hash(prev_hash: str, body: Mapping[str, Any]) -> str:
    return hashlib.sha256(prev_hash.encode("ascii") + canonical_bytes(body)).hexdigest()


def make_entry(
    seq: int,
    case_id: str | None,
    kind: str,
    payload: Mapping[str, Any],
    prev_hash: str,
    recorded_at: str,
) -> Entry:
    body = {
        "seq": seq,
        "caseId": case_id,
        "kind": kind,
        "payload": payload,
        "prevHash": prev_hash,
        "recordedAt": recorded_at,
    }
    return Entry(
        seq=seq,
        case_id=case_id,
        kind=kind,
        payload=payload,
        prev_hash=prev_hash,
        recorded_at=recorded_at,
        hash=entry_hash(prev_hash, body),
    )


class ChainReport(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    ok: bool
    entries: int
    head: str
    first_broken_seq: int | None = None
    detail: str = ""


def verify_chain(entries: Iterable[Entry]) -> ChainReport:
    """Walk the chain in stored order; name the first broken link."""
    prev = GENESIS_HASH
    count = 0
    for expected_seq, entry in enumerate(entries, start=1):
        count += 1
        if entry.seq != expected_seq:
            return ChainReport(
                ok=False,
                entries=count,
                head=prev,
                first_broken_seq=entry.seq,
                detail=f"entry {entry.seq} stands where entry {expected_seq} should "
                "(an entry was deleted or reordered)",
            )
        if entry.prev_hash != prev:
            return ChainReport(
                ok=False,
                entries=count,
                head=prev,
                first_broken_seq=entry.seq,
                detail=f"entry {entry.seq} does not link to the entry before it "
                "(an entry before it was deleted, reordered or edited)",
            )
        if entry_hash(entry.prev_hash, entry.body()) != entry.hash:
            return ChainReport(
                ok=False,
                entries=count,
                head=prev,
                first_broken_seq=entry.seq,
                detail=f"entry {entry.seq}'s content does not match its hash (it was edited)",
            )
        prev = entry.hash
    return ChainReport(ok=True, entries=count, head=prev)


class Store(Protocol):
    """The journal and its side stores. SQL (SQLite, PostgreSQL) and in-memory."""

    def append(
        self,
        case_id: str | None,
        kind: str,
        payload: Mapping[str, Any],
        *,
        after: int | None = None,
    ) -> Entry:
        """Append one entry atomically at the head of the chain.

        ``after``: append only if the case's latest entry is still the one with this
        seq (0: the case has none), else raise StaleCaseError and append nothing. A
        person's action on a case is judged on the state it read; this makes two
        concurrent actions on one case (two workers, two processes) land at most once.
        """
        ...

    def last_seq(self, case_id: str) -> int:
        """The seq of the case's latest entry (0 when it has none)."""
        ...

    def record_decision(self, case_id: str, payload: Mapping[str, Any]) -> Entry:
        """Append the case's ``decision.recorded`` entry, exactly once per case.

        A second call, concurrent or from another process, raises
        DecisionAlreadyRecordedError and changes nothing."""
        ...

    def entries(
        self,
        case_id: str | None = None,
        kinds: Sequence[str] | None = None,
        after_seq: int = 0,
    ) -> list[Entry]:
        """Entries in chain order, optionally of one case, of some kinds, and only
        those after a sequence number (to read a journal incrementally)."""
        ...

    def decision_entry(self, case_id: str) -> Entry | None: ...

    def verify(self) -> ChainReport: ...

    def put_case(self, case_id: str, document: Mapping[str, Any]) -> bool:
        """Store the underwriter-visible case document; False if already stored."""
        ...

    def get_case(self, case_id: str) -> Mapping[str, Any] | None: ...

    def put_monitoring(self, case_id: str, data: Mapping[str, Any]) -> bool: ...

    def get_monitoring(self, case_id: str) -> Mapping[str, Any] | None: ...

    def case_ids(self) -> list[str]: ...


def stale_case(case_id: str, expected: int, found: int) -> StaleCaseError:
    return StaleCaseError(
        f"the case changed since it was read (its latest entry is {found}, not {expected}); "
        "nothing was recorded: read it again",
        case_id=case_id,
        expected=expected,
        found=found,
    )


class InMemoryStore:
    """The in-memory store: the same contract, for tests and one-off runs."""

    def __init__(self, clock: Clock | None = None) -> None:
        self._clock = clock or clock_from_env()
        self._lock = threading.Lock()
        self._entries: list[Entry] = []
        self._last: dict[str, int] = {}
        self._decisions: dict[str, int] = {}
        self._cases: dict[str, Mapping[str, Any]] = {}
        self._monitoring: dict[str, Mapping[str, Any]] = {}

    def _append_locked(self, case_id: str | None, kind: str, payload: Mapping[str, Any]) -> Entry:
        prev = self._entries[-1].hash if self._entries else GENESIS_HASH
        entry = make_entry(
            len(self._entries) + 1,
            case_id,
            kind,
            dict(payload),
            prev,
            self._clock.now().isoformat(),
        )
        self._entries.append(entry)
        if case_id is not None:
            self._last[case_id] = entry.seq
        return entry

    def append(
        self,
        case_id: str | None,
        kind: str,
        payload: Mapping[str, Any],
        *,
        after: int | None = None,
    ) -> Entry:
        if kind == DECISION_KIND:
            raise JournalError("decisions are recorded through record_decision", case_id=case_id)
        with self._lock:
            if after is not None and case_id is not None:
                found = self._last.get(case_id, 0)
                if found != after:
                    raise stale_case(case_id, after, found)
            return self._append_locked(case_id, kind, payload)

    def last_seq(self, case_id: str) -> int:
        with self._lock:
            return self._last.get(case_id, 0)

    def record_decision(self, case_id: str, payload: Mapping[str, Any]) -> Entry:
        with self._lock:
            if case_id in self._decisions:
                raise DecisionAlreadyRecordedError(
                    f"a decision is already recorded (entry {self._decisions[case_id]})",
                    case_id=case_id,
                )
            entry = self._append_locked(case_id, DECISION_KIND, payload)
            self._decisions[case_id] = entry.seq
            return entry

    def entries(
        self,
        case_id: str | None = None,
        kinds: Sequence[str] | None = None,
        after_seq: int = 0,
    ) -> list[Entry]:
        with self._lock:
            return [
                e
                for e in self._entries[max(after_seq, 0) :]
                if (case_id is None or e.case_id == case_id) and (kinds is None or e.kind in kinds)
            ]

    def decision_entry(self, case_id: str) -> Entry | None:
        with self._lock:
            seq = self._decisions.get(case_id)
            return self._entries[seq - 1] if seq else None

    def verify(self) -> ChainReport:
        return verify_chain(self.entries())

    def put_case(self, case_id: str, document: Mapping[str, Any]) -> bool:
        with self._lock:
            if case_id in self._cases:
                return False
            self._cases[case_id] = dict(document)
            return True

    def get_case(self, case_id: str) -> Mapping[str, Any] | None:
        return self._cases.get(case_id)

    def put_monitoring(self, case_id: str, data: Mapping[str, Any]) -> bool:
        with self._lock:
            if case_id in self._monitoring:
                return False
            self._monitoring[case_id] = dict(data)
            return True

    def get_monitoring(self, case_id: str) -> Mapping[str, Any] | None:
        return self._monitoring.get(case_id)

    def case_ids(self) -> list[str]:
        return list(self._cases)
