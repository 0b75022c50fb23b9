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

import contextlib
import hashlib
import json
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Final, NamedTuple, Protocol

from pydantic import BaseModel, ConfigDict

from credit.canonical import Normal, canonical_bytes, dumps, loads
from credit.clock import Clock, SystemClock, clock_from_env
from credit.errors import CreditError
from credit.journal.audit import (
    AuditReport,
    Finding,
    KeptCheckpoint,
    SideRows,
    Walk,
    accepted_digest,
    decision_problem,
    document_problem,
    link_problem,
    mac_problem,
    mark_body,
    mark_problem,
    vault_case,
    vault_problem,
    vault_seal,
)
from credit.journal.merkle import LEAF_PREFIX, KeptFrontiers, MerkleLog, leaf_hash
from credit.journal.signer import JournalKey, ephemeral_key
from credit.journal.tree import covering_checkpoint, sign_head
from credit.kept import ReadOnlyDict
from credit.kinds import DECISION_RECORDED, INTAKE_ACCEPTED

__all__ = [
    "CONFLICT_ATTEMPTS",
    "DECISION_KIND",
    "GENESIS_HASH",
    "CaseFile",
    "ChainReport",
    "Clock",
    "ConflictAttempt",
    "DecisionAlreadyRecordedError",
    "Entry",
    "GroupConflictError",
    "InMemoryStore",
    "JournalError",
    "Mark",
    "StaleCaseError",
    "Store",
    "SystemClock",
    "audit_entries",
    "authenticate",
    "broken_since",
    "conflict_attempts",
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


class GroupConflictError(JournalError):
    """A deferred group commit (``group_commit(..., deferred=True)``) found, when it
    came to commit, that another writer had appended to a case it wrote since it read
    that case. Nothing of the group was written: do its work again (the reads then see
    the other writer's entries). ``case_ids``: the cases that moved."""

    def __init__(self, case_ids: Sequence[str]) -> None:
        self.case_ids = tuple(case_ids)
        named = ", ".join(self.case_ids[:5]) + (" ..." if len(self.case_ids) > 5 else "")
        super().__init__(
            f"another writer appended to {len(self.case_ids)} case(s) this group wrote "
            f"({named}) after the group read them; nothing of the group was written: "
            "do its work again",
            case_id=self.case_ids[0] if len(self.case_ids) == 1 else None,
        )


# How many times a deferred group's work is done again when another writer moved one
# of its cases (conflict_attempts): a tuning of the machinery, not a policy.
CONFLICT_ATTEMPTS: Final = 5


class ConflictAttempt:
    """One attempt at a deferred group's work (:func:`conflict_attempts`): a
    :class:`GroupConflictError` raised inside it ends the attempt quietly, unless it
    is the last one, and the next attempt starts."""

    __slots__ = ("conflicted", "last")

    def __init__(self, *, last: bool) -> None:
        self.last = last
        self.conflicted = False

    def __enter__(self) -> ConflictAttempt:
        return self

    def __exit__(self, kind: type[BaseException] | None, err: object, tb: object) -> bool:
        if kind is not None and issubclass(kind, GroupConflictError) and not self.last:
            self.conflicted = True
            return True
        return False


def conflict_attempts(attempts: int = CONFLICT_ATTEMPTS) -> Iterator[ConflictAttempt]:
    """Attempts at a deferred group's work, each done from the start, until one
    commits: another writer that moved one of the group's cases meanwhile
    (:class:`GroupConflictError`: nothing of the group was written) makes the work be
    done again, reading what that writer wrote, at most ``attempts`` times in all (the
    last attempt's conflict is raised). The one form for synchronous and asynchronous
    work::

        for attempt in conflict_attempts():
            with attempt, store.group_commit(case_ids, deferred=True):
                ...  # set up anything an attempt counts at its start

    The loop ends after the first attempt that did not conflict; any other error ends
    it at once."""
    if attempts < 1:
        raise ValueError(f"attempts must be at least 1, not {attempts}")
    for number in range(1, attempts + 1):
        attempt = ConflictAttempt(last=number == attempts)
        yield attempt
        if not attempt.conflicted:
            return


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
    # The writer's MAC over ``hash`` (credit.journal.signer); outside the hashed body.
    mac: str | None = None

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

    def leaf_hash(self) -> bytes:
        """The entry's RFC 6962 leaf hash (of its canonical JSON, hash included)."""
        return leaf_hash(
            framed(
                self.seq,
                self.case_id,
                self.kind,
                dumps(self.payload, sort_keys=True),
                self.prev_hash,
                self.recorded_at,
                self.hash,
            )
        )


def framed(
    seq: int,
    case_id: str | None,
    kind: str,
    payload_text: str,
    prev_hash: str,
    recorded_at: str,
    own_hash: str | None = None,
) -> bytes:
    """The canonical JSON of an entry's body (``own_hash`` None) or of its wire form
    (with its hash), around a payload already in canonical JSON: exactly
    ``canonical_bytes(entry.body())`` / ``canonical_bytes(entry.to_wire())``, with the
    payload, the large part, serialised once (or never, when read back as stored)."""
    return (
        _head(case_id, kind, own_hash) + payload_text + _tail(seq, prev_hash, recorded_at)
    ).encode()


def _head(case_id: str | None, kind: str, own_hash: str | None) -> str:
    """What a framed entry holds before its payload (its keys sort before it)."""
    hashed = "" if own_hash is None else f'"hash":{_quoted(own_hash)},'
    case = "null" if case_id is None else _quoted(case_id)
    return f'{{"caseId":{case},{hashed}"kind":{_quoted(kind)},"payload":'


def _tail(seq: int, prev_hash: str, recorded_at: str) -> str:
    """What a framed entry holds after its payload (its keys sort after it)."""
    at = _quoted(recorded_at)
    return f',"prevHash":{_quoted(prev_hash)},"recordedAt":{at},"seq":{int(seq)}}}'


# A JSON string as canonical dumps writes it (ensure_ascii off): the json module's own
# string encoder, without the encoder object around it (framing runs for every entry).
_quoted: Final[Callable[[str], str]] = json.encoder.encode_basestring


def entry_hash(prev_hash: str, body: Mapping[str, Any]) -> str:
    return hashlib.sha256(prev_hash.encode("utf-8") + canonical_bytes(body)).hexdigest()


def body_hash(
    seq: int, case_id: str | None, kind: str, payload_text: str, prev_hash: str, recorded_at: str
) -> str:
    """An entry's hash from its columns as stored (its payload text canonical JSON):
    SHA-256 of its previous hash and :func:`framed` of its body, fed in parts."""
    body, tail = payload_text.encode(), _tail(seq, prev_hash, recorded_at).encode()
    return _chained(prev_hash, case_id, kind, body, tail)


def _chained(prev_hash: str, case_id: str | None, kind: str, body: bytes, tail: bytes) -> str:
    chained = hashlib.sha256(prev_hash.encode("utf-8"))
    chained.update(_head(case_id, kind, None).encode())
    chained.update(body)
    chained.update(tail)
    return chained.hexdigest()


def placed_entry(
    seq: int,
    case_id: str | None,
    kind: str,
    payload: Mapping[str, Any],
    prev_hash: str,
    recorded_at: str,
    key: JournalKey | None = None,
    payload_text: str | None = None,
) -> tuple[Entry, bytes]:
    """The entry at ``seq``, hashed, and MACed when ``key`` is given, and its leaf hash
    (:meth:`Entry.leaf_hash`): the bytes :func:`framed` writes for its body and for its
    wire form, each fed to SHA-256 in its three parts (the payload's text encoded once
    for both), never joined. ``payload_text``: the payload already in canonical JSON
    (it is then not serialised again)."""
    text = payload_text if payload_text is not None else dumps(payload, sort_keys=True)
    body, tail = text.encode(), _tail(seq, prev_hash, recorded_at).encode()
    digest = _chained(prev_hash, case_id, kind, body, tail)
    leaf = hashlib.sha256(LEAF_PREFIX)
    leaf.update(_head(case_id, kind, digest).encode())
    leaf.update(body)
    leaf.update(tail)
    entry = Entry(
        seq=seq,
        case_id=case_id,
        kind=kind,
        payload=payload,
        prev_hash=prev_hash,
        recorded_at=recorded_at,
        hash=digest,
        mac=key.mac(digest) if key is not None else None,
    )
    return entry, leaf.digest()


class ChainReport(BaseModel):
    """A walk of the chain: ``entries`` the seq it reached (the whole chain's length
    when it is ``ok``), ``head`` the hash of the last entry that held. ``since``: the
    entry the walk began after (0: the first), one an earlier walk verified and whose
    hash the walk found unchanged (:func:`broken_since`); the entries up to it were
    not read again."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ok: bool
    entries: int
    head: str
    first_broken_seq: int | None = None
    detail: str = ""
    since: int = 0

    @classmethod
    def broken(
        cls, seq: int | None, detail: str, *, entries: int, head: str, since: int = 0
    ) -> ChainReport:
        """A walk broken at entry ``seq``, having reached ``entries`` with ``head``."""
        return cls(
            ok=False, entries=entries, head=head, first_broken_seq=seq, detail=detail, since=since
        )


def broken_since(since: int, since_hash: str, found: str | None) -> ChainReport | None:
    """The report of a walk that cannot begin after entry ``since`` as verified with
    ``since_hash`` (``found``: the hash the journal holds there now; None: no such
    entry), broken there; None when it can."""
    if found == since_hash:
        return None
    detail = (
        f"entry {since}, verified before, is no longer in the journal (entries were deleted)"
        if found is None
        else f"entry {since} does not hold the hash it held when the chain was verified "
        "through it (it, or an entry before it, was edited and the chain rewritten)"
    )
    return ChainReport.broken(since, detail, entries=since, head=since_hash, since=since)


def verify_chain(
    entries: Iterable[Entry], *, since: int = 0, since_hash: str = GENESIS_HASH
) -> ChainReport:
    """Walk the chain in stored order; name the first broken link. ``entries``: those
    after entry ``since``, whose hash is ``since_hash`` (by default, every entry)."""
    prev = since_hash
    count = since
    for expected_seq, entry in enumerate(entries, start=since + 1):
        count += 1
        problem = link_problem(
            entry.seq,
            entry.prev_hash,
            entry.hash,
            entry_hash(entry.prev_hash, entry.body()),
            expected_seq,
            prev,
        )
        if problem is not None:
            return ChainReport.broken(entry.seq, problem, entries=count, head=prev, since=since)
        prev = entry.hash
    return ChainReport(ok=True, entries=count, head=prev, since=since)


def audit_entries(
    entries: Iterable[Entry],
    *,
    key: JournalKey | None,
    checkpoints: Sequence[KeptCheckpoint] = (),
    side: SideRows | None = None,
) -> AuditReport:
    """The verify walk (:class:`credit.journal.audit.Walk`) over entries."""
    walk = Walk(key=key, checkpoints=checkpoints)
    for entry in entries:
        walk_entry(walk, entry)
    if side is not None:
        walk.side(side)
    return walk.report()


def walk_entry(walk: Walk, entry: Entry, stored_leaf: bytes | None = None) -> None:
    walk.entry(
        seq=entry.seq,
        case_id=entry.case_id,
        kind=entry.kind,
        payload=entry.payload,
        wire=entry.to_wire(),
        prev_hash=entry.prev_hash,
        own_hash=entry.hash,
        computed_hash=entry_hash(entry.prev_hash, entry.body()),
        mac=entry.mac,
        stored_leaf=stored_leaf,
    )


def authenticate(key: JournalKey, entries: Sequence[Entry]) -> Sequence[Entry]:
    """The entries, once each one's hash and MAC verified; else the
    JournalIntegrityError naming the first that does not (never act on it)."""
    for entry in entries:
        if entry_hash(entry.prev_hash, entry.body()) != entry.hash:
            raise Finding(
                "chain",
                "the entry's content does not match its hash (it was edited)",
                seq=entry.seq,
                case_id=entry.case_id,
            ).error()
        problem = mac_problem(key, entry.hash, entry.mac)
        if problem is not None:
            raise Finding("entry-mac", problem, seq=entry.seq, case_id=entry.case_id).error()
    return entries


class CaseFile(NamedTuple):
    """A case's stored document and its own vault row (monitoring data), as read."""

    document: Mapping[str, Any] | None
    monitoring: Mapping[str, Any] | None


class Mark(NamedTuple):
    """What a reader derived from the journal through entry ``seq`` (``data``), kept
    beside the chain under a name so that a later reader starts from it and reads only
    what came after (:meth:`Store.mark`). A cache, never a record: without it the
    reader derives the same from the whole journal."""

    seq: int
    data: Mapping[str, Any]


# What a refused mark's error says to do: a mark is a cache, so deleting it loses nothing.
MARK_RECOVERY: Final = (
    "; a mark is a cache: 'credit journal marks --drop' deletes the marks, and the next "
    "reader derives what they held from the whole journal"
)


def checked_mark(
    key: JournalKey,
    name: str,
    kept: tuple[int, str, str, str],
    hash_at_seq: str | None,
) -> Mark:
    """The kept mark (seq, the hash of the entry it was made on, its data as canonical
    JSON text, its seal) if it is the key's and the chain still holds that entry
    (:func:`mark_problem`), else JournalIntegrityError (``check`` ``mark``)."""
    seq, head_hash, text, sealed = kept
    problem = mark_problem(key, name, seq, head_hash, text, sealed, hash_at_seq)
    if problem is not None:
        raise Finding("mark", problem + MARK_RECOVERY, seq=seq).error()
    return Mark(seq, loads(text))  # the text the key sealed: the object put_mark wrote


def mark_row(key: JournalKey, name: str, seq: int, head_hash: str, text: str) -> str:
    """The seal a mark is kept with (over its name, its entry and its data's text)."""
    return key.seal_mark(name, mark_body(seq, head_hash, text))


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
        limit: int | None = None,
    ) -> list[Entry]:
        """Entries in chain order, optionally of one case, of some kinds, and only
        those after a sequence number (to read a journal incrementally); ``limit``:
        at most that many, the first (to read a long journal a page at a time)."""
        ...

    def decision_entry(self, case_id: str) -> Entry | None: ...

    def verify(self, since: int = 0, since_hash: str = GENESIS_HASH) -> ChainReport:
        """Walk the chain (:func:`verify_chain`): every entry, or those after entry
        ``since`` once it is found still to hold ``since_hash``, the hash an earlier
        walk verified it with (:func:`broken_since`; a broken link at ``since``
        otherwise), so a journal verified through an entry is not read again up to it."""
        ...

    def put_case(self, case_id: str, document: Mapping[str, Any] | Normal) -> bool:
        """Store the underwriter-visible case document; False if already stored. A
        :class:`~credit.canonical.Normal` (intake's document in its normal form) is
        stored as its text, not written again."""
        ...

    def get_case(self, case_id: str) -> Mapping[str, Any] | None:
        """The stored case document (None: none is stored), read-only (a
        :class:`~credit.kept.ReadOnlyDict`: copy it to change it); the same object
        each time it is read while the store holds it in memory (the in-memory store,
        a group commit's view of the case), so what is read from it may be kept by it
        (:func:`credit.models.stored_case`)."""
        ...

    def put_monitoring(self, case_id: str, data: Mapping[str, Any] | Normal) -> bool:
        """Store a vault row; False if one is stored under ``case_id``. A
        :class:`~credit.canonical.Normal` is stored as its text, as in :meth:`put_case`."""
        ...

    def get_monitoring(self, case_id: str) -> Mapping[str, Any] | None: ...

    def case_ids(self) -> list[str]: ...

    def case_files(self, case_ids: Sequence[str]) -> dict[str, CaseFile]:
        """Many cases' stored documents and their own vault rows at once, each checked
        as :meth:`get_case` and :meth:`get_monitoring` check it (JournalIntegrityError
        for the first case asked for that fails): a few reads for many cases, where a
        reader of each case alone makes four (a comparison pool built over every case
        decided before)."""
        ...

    def case_entries(
        self, case_ids: Sequence[str], kinds: Iterable[str] | None = None
    ) -> dict[str, list[Entry]]:
        """The entries (of ``kinds``, or all) of each of many cases (each case's in
        chain order; a case with none is absent), each one's hash and MAC verified as
        in :meth:`authentic_entries`: the journal read a page of cases at a time."""
        ...

    def touched_cases(
        self, after_seq: int, kinds: Iterable[str], including: Iterable[str] = ()
    ) -> list[str]:
        """The cases with an entry of ``kinds`` after ``after_seq``, and those of
        ``including`` the store holds, in the order taken in (as :meth:`case_ids`): what
        a reader starting from a mark made on entry ``after_seq`` reads again."""
        ...

    def latest_seqs(self, after_seq: int) -> Iterator[tuple[str, int]]:
        """Each case with an entry after ``after_seq``, with its latest entry's seq (of
        any kind), read as one aggregate and given a row at a time: whether a case
        changed since a reader saw its latest entry, without reading its entries.
        Consume it before writing."""
        ...

    def mark(self, name: str) -> Mark | None:
        """The mark kept under ``name`` (None if none is): its seal verified under the
        key and the entry it was made on still in the chain with the hash it had
        (JournalIntegrityError, ``check`` ``mark``, otherwise: delete the row and the
        reader derives it again from the whole journal)."""
        ...

    def put_mark(self, name: str, seq: int, data: Mapping[str, Any]) -> None:
        """Keep ``data`` as what was derived from the journal through entry ``seq`` (at
        most the head), in place of the mark kept under ``name``: sealed with the key,
        bound to that entry's hash."""
        ...

    def mark_names(self) -> list[str]:
        """The names of the marks kept, sorted (each read with :meth:`mark`)."""
        ...

    def drop_marks(self) -> int:
        """Delete every mark kept (how many): each reader then derives what its mark
        held from the whole journal, and keeps a new one (``credit journal marks
        --drop``, the way back from a mark that is refused)."""
        ...

    @property
    def key(self) -> JournalKey:
        """The writer's key: it MACs every entry and seals every vault row."""
        ...

    @property
    def shared(self) -> bool:
        """Whether other processes can open this journal and write to it beside this
        store (a SQLite file, PostgreSQL; not a journal in memory)."""
        ...

    def close(self) -> None:
        """Close the store's connections (it opens them again if used again): before
        a process forks, so that no connection is shared with a child."""
        ...

    def authenticate(self, entries: Sequence[Entry]) -> Sequence[Entry]:
        """The entries if each one's hash and MAC verify (:func:`authenticate`), else
        JournalIntegrityError naming the first that does not."""
        ...

    def authentic_entries(self, case_id: str | None = None) -> list[Entry]:
        """The entries (of one case, or all), each one's hash and MAC verified as it is
        read: what the pipeline and the service act on (JournalIntegrityError naming
        the first entry that fails)."""
        ...

    def case_standing(self, case_id: str) -> tuple[Mapping[str, Any] | None, list[Entry]]:
        """A case's document (None: never taken in) and its entries, each entry's hash
        and MAC verified, read together: the document checked against the digest its
        intake.accepted entry, among those entries, took in (JournalIntegrityError
        when it is not the one taken in, as :meth:`get_case`)."""
        ...

    def seal(self, name: str, data: Mapping[str, Any]) -> str:
        """The seal of a vault row, for its intake.accepted entry to hold."""
        ...

    def tree_head(self) -> tuple[int, bytes]:
        """The size and RFC 6962 root of the journal's Merkle tree (O(log n))."""
        ...

    def leaf_hashes(self, size: int | None = None) -> list[bytes]:
        """The leaf hashes of the first ``size`` entries (all by default)."""
        ...

    def tree_frontier(self) -> tuple[int, tuple[bytes, ...]]:
        """The size and frontier (:attr:`~credit.journal.merkle.MerkleLog.frontier`)
        of the journal's tree as this store last grew it from committed leaves
        ((0, ()) before it has): what a worker of a run hands to the process that
        signs the run's checkpoint (:meth:`resume_tree`)."""
        ...

    def resume_tree(self, size: int, frontier: Sequence[bytes]) -> None:
        """Take a tree another process grew from this journal's committed leaves (a
        run's worker, :meth:`tree_frontier`), if it is larger than this store's: its
        next tree head reads only the leaves after it. A tree larger than the
        journal's committed head is not taken."""
        ...

    def checkpoint(
        self, directory: Path, *, covering: bool = False, size: int | None = None
    ) -> Path:
        """Sign the tree head and keep it in ``directory``
        (:func:`credit.journal.tree.sign_head`); the path of the checkpoint.
        ``covering``: a checkpoint kept that already covers every entry this writer
        committed (:meth:`covered`; with ``size``, the journal's first ``size``
        entries) is the answer instead, and nothing is signed."""
        ...

    def covered(self, directory: Path, *, size: int | None = None) -> Path | None:
        """The newest checkpoint in ``directory`` if it already covers every entry this
        writer (thread) committed, or with ``size`` the journal's first ``size``
        entries, else None (then :meth:`checkpoint` signs)."""
        ...

    def committed_size(self) -> int | None:
        """The journal's size just after this writer's (thread's) latest commit: the
        entries a checkpoint must cover to cover everything it wrote (None: it has
        committed nothing)."""
        ...

    def audit(self, checkpoints: Sequence[KeptCheckpoint] = ()) -> AuditReport:
        """The verify walk over the whole journal and its side rows."""
        ...

    def group_commit(
        self, case_ids: Iterable[str] = (), *, deferred: bool = False
    ) -> AbstractContextManager[None]:
        """Everything written in the block lands in one transaction and one durable
        commit; nothing of it is kept if the block raises (see
        :meth:`credit.journal.sql.SqlStore.group_commit`). ``case_ids``: the cases the
        block works on, read up front. ``deferred``: the block works without the
        journal's write lock, its entries sequenced when it commits
        (:class:`GroupConflictError` if another writer moved a case it wrote)."""
        ...


def stale_case(case_id: str, expected: int, found: int) -> StaleCaseError:
    return StaleCaseError(
        f"the case changed since it was read (its latest entry is {found}, not {expected}); "
        "nothing was recorded: read it again",
        case_id=case_id,
        expected=expected,
        found=found,
    )


class InMemoryStore:
    """The in-memory store: the same contract, for tests and one-off runs. Without a
    ``key`` it makes one that lives as long as the store (nothing outlives it)."""

    def __init__(self, clock: Clock | None = None, *, key: JournalKey | None = None) -> None:
        self._clock = clock or clock_from_env()
        self._key = key or ephemeral_key()
        self._lock = threading.Lock()
        self._entries: list[Entry] = []
        self._last: dict[str, int] = {}
        self._decisions: dict[str, int] = {}
        self._accepted: dict[str, Mapping[str, Any]] = {}
        self._chain_decisions: dict[str, list[int]] = {}
        self._cases: dict[str, Mapping[str, Any]] = {}
        self._monitoring: dict[str, Mapping[str, Any]] = {}
        self._by_case: dict[str, list[Entry]] = {}  # each case's entries, in chain order
        self._log = MerkleLog()
        self._leaves: list[bytes] = []
        self._frontiers = KeptFrontiers()
        self._marks: dict[str, tuple[int, str, str, str]] = {}

    @property
    def key(self) -> JournalKey:
        return self._key

    @property
    def shared(self) -> bool:
        return False  # it lives in this process

    def close(self) -> None:
        """Nothing to close: the journal is this object."""

    def _append_locked(self, case_id: str | None, kind: str, payload: Mapping[str, Any]) -> Entry:
        prev = self._entries[-1].hash if self._entries else GENESIS_HASH
        body = dict(payload)
        text = dumps(body, sort_keys=True)
        seq, at = len(self._entries) + 1, self._clock.now().isoformat()
        entry, leaf = placed_entry(seq, case_id, kind, body, prev, at, self._key, text)
        self._entries.append(entry)
        self._leaves.append(leaf)
        self._log.append(leaf)
        if case_id is not None:
            self._last[case_id] = entry.seq
            self._by_case.setdefault(case_id, []).append(entry)
            if kind == INTAKE_ACCEPTED:
                self._accepted.setdefault(case_id, entry.payload)
            elif kind == DECISION_KIND:
                self._chain_decisions.setdefault(case_id, []).append(entry.seq)
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
        limit: int | None = None,
    ) -> list[Entry]:
        with self._lock:
            found = [
                e
                for e in self._entries[max(after_seq, 0) :]
                if (case_id is None or e.case_id == case_id) and (kinds is None or e.kind in kinds)
            ]
        return found if limit is None else found[: max(limit, 0)]

    def decision_entry(self, case_id: str) -> Entry | None:
        with self._lock:
            seq = self._decisions.get(case_id)
            chain = self._chain_decisions.get(case_id, [])
        problem = decision_problem(case_id, seq, chain)
        if problem is not None:
            raise Finding("decision-row", problem, case_id=case_id).error()
        return self._entries[seq - 1] if seq else None

    def verify(self, since: int = 0, since_hash: str = GENESIS_HASH) -> ChainReport:
        entries = self.entries()
        if since:
            at = entries[since - 1].hash if 0 < since <= len(entries) else None
            if (broken := broken_since(since, since_hash, at)) is not None:
                return broken
        return verify_chain(entries[since:], since=since, since_hash=since_hash)

    def authenticate(self, entries: Sequence[Entry]) -> Sequence[Entry]:
        return authenticate(self._key, entries)

    def authentic_entries(self, case_id: str | None = None) -> list[Entry]:
        """Entries this store made and holds (immutable): their MACs are checked."""
        return self._marked(self.entries(case_id))

    def case_standing(self, case_id: str) -> tuple[Mapping[str, Any] | None, list[Entry]]:
        return self.get_case(case_id), self.authentic_entries(case_id)

    def _marked(self, entries: list[Entry]) -> list[Entry]:
        """The entries, once each one's MAC is verified (this store made and holds
        them, immutable: their hashes hold)."""
        for entry in entries:
            problem = mac_problem(self._key, entry.hash, entry.mac)
            if problem is not None:
                raise Finding("entry-mac", problem, seq=entry.seq, case_id=entry.case_id).error()
        return entries

    def seal(self, name: str, data: Mapping[str, Any]) -> str:
        return self._key.seal(name, data)

    def tree_head(self) -> tuple[int, bytes]:
        with self._lock:
            return self._log.size, self._log.root()

    def leaf_hashes(self, size: int | None = None) -> list[bytes]:
        with self._lock:
            return list(self._leaves[:size] if size is not None else self._leaves)

    def tree_frontier(self) -> tuple[int, tuple[bytes, ...]]:
        with self._lock:
            return self._log.size, self._log.frontier

    def resume_tree(self, size: int, frontier: Sequence[bytes]) -> None:
        """Nothing: a journal in memory is one process's, and its tree is always whole
        (the frontier is still read, so a malformed one is an error here too)."""
        MerkleLog.from_frontier(size, frontier)

    def committed_size(self) -> int | None:
        with self._lock:
            return self._log.size or None

    def covered(self, directory: Path, *, size: int | None = None) -> Path | None:
        size = self.committed_size() if size is None else size
        return covering_checkpoint(directory, self._key, size) if size else None

    def checkpoint(
        self, directory: Path, *, covering: bool = False, size: int | None = None
    ) -> Path:
        if covering and (kept := self.covered(directory, size=size)) is not None:
            return kept
        with self._lock:  # the head cannot move while it is signed
            size, head = self._log.size, self._log.root()

            def root_at(n: int) -> bytes:  # from the nearest frontier kept below n
                log = self._frontiers.start(n)
                for leaf in self._leaves[log.size : n]:
                    log.append(leaf)
                return log.root()

            path = sign_head(self._key, directory, size, head, root_at)
            self._frontiers.keep(self._log)
            return path

    def audit(self, checkpoints: Sequence[KeptCheckpoint] = ()) -> AuditReport:
        with self._lock:
            side = SideRows(dict(self._decisions), dict(self._cases), dict(self._monitoring))
        return audit_entries(self.entries(), key=self._key, checkpoints=checkpoints, side=side)

    def put_case(self, case_id: str, document: Mapping[str, Any] | Normal) -> bool:
        value = document.value if isinstance(document, Normal) else document
        with self._lock:
            if case_id in self._cases:
                return False
            self._cases[case_id] = ReadOnlyDict(value)
            return True

    def get_case(self, case_id: str) -> Mapping[str, Any] | None:
        document = self._cases.get(case_id)
        accepted = self._accepted.get(case_id)
        if document is not None and accepted is not None:
            problem = document_problem(document, accepted_digest(accepted))
            if problem is not None:
                raise Finding("case-document", problem, case_id=case_id).error()
        return document

    def put_monitoring(self, case_id: str, data: Mapping[str, Any] | Normal) -> bool:
        value = data.value if isinstance(data, Normal) else data
        with self._lock:
            if case_id in self._monitoring:
                return False
            self._monitoring[case_id] = dict(value)
            return True

    def get_monitoring(self, case_id: str) -> Mapping[str, Any] | None:
        data = self._monitoring.get(case_id)
        accepted = self._accepted.get(vault_case(case_id))
        if accepted is not None:
            problem = vault_problem(self._key, case_id, data, vault_seal(accepted, case_id))
            if problem is not None:
                raise Finding("vault", problem, case_id=vault_case(case_id)).error()
        return data

    def case_ids(self) -> list[str]:
        return list(self._cases)

    def case_files(self, case_ids: Sequence[str]) -> dict[str, CaseFile]:
        return {c: CaseFile(self.get_case(c), self.get_monitoring(c)) for c in case_ids}

    def case_entries(
        self, case_ids: Sequence[str], kinds: Iterable[str] | None = None
    ) -> dict[str, list[Entry]]:
        of = None if kinds is None else frozenset(kinds)
        out: dict[str, list[Entry]] = {}
        for case_id in dict.fromkeys(case_ids):
            with self._lock:
                found = [e for e in self._by_case.get(case_id, ()) if of is None or e.kind in of]
            if found:
                out[case_id] = self._marked(found)
        return out

    def touched_cases(
        self, after_seq: int, kinds: Iterable[str], including: Iterable[str] = ()
    ) -> list[str]:
        of = frozenset(kinds)
        with self._lock:
            wanted = {
                e.case_id
                for e in self._entries[max(after_seq, 0) :]
                if e.case_id is not None and e.kind in of
            }
            wanted.update(including)
            return [c for c in self._cases if c in wanted]

    def latest_seqs(self, after_seq: int) -> Iterator[tuple[str, int]]:
        latest: dict[str, int] = {}
        with self._lock:
            for entry in self._entries[max(after_seq, 0) :]:
                if entry.case_id is not None:
                    latest[entry.case_id] = entry.seq
        yield from latest.items()

    def _hash_at(self, seq: int) -> str | None:
        if seq == 0:
            return GENESIS_HASH
        return self._entries[seq - 1].hash if 0 < seq <= len(self._entries) else None

    def mark(self, name: str) -> Mark | None:
        with self._lock:
            kept = self._marks.get(name)
            if kept is None:
                return None
            at = self._hash_at(kept[0])
        return checked_mark(self._key, name, kept, at)

    def put_mark(self, name: str, seq: int, data: Mapping[str, Any]) -> None:
        text = dumps(dict(data), sort_keys=True)
        with self._lock:
            head_hash = self._hash_at(seq)
            if head_hash is None:
                raise ValueError(
                    f"no entry {seq} to make a mark on (the head is {len(self._entries)})"
                )
            self._marks[name] = (
                seq,
                head_hash,
                text,
                mark_row(self._key, name, seq, head_hash, text),
            )

    def mark_names(self) -> list[str]:
        with self._lock:
            return sorted(self._marks)

    def drop_marks(self) -> int:
        with self._lock:
            dropped = len(self._marks)
            self._marks.clear()
            return dropped

    @contextlib.contextmanager
    def group_commit(
        self, case_ids: Iterable[str] = (), *, deferred: bool = False
    ) -> Iterator[None]:
        """In memory every write is at once and nothing outlives the store, so a group
        is the block itself (what it wrote stays if it raises), deferred or not: no
        other process writes to it."""
        yield
