"""The verify walk: one implementation of every rule the journal is checked by.

``credit journal verify``, the examiner's bundle verifier and the stores' own checks
(before the pipeline or the service acts on a row) call these functions; none of them
touches a database. The rules:

- **chain**: each entry stands at its seq, links to the entry before it, and hashes to
  its ``hash`` (:func:`link_problem`).
- **entry-mac**: each entry carries the writer's MAC over its hash, under the key kept
  outside the database (:func:`mac_problem`); checkable only with that key.
- **leaf-hash**: the leaf hash a store keeps for an entry is the entry's
  (:func:`entry_leaf`: RFC 6962 leaf of the entry's canonical JSON, hash included).
- **consistency** / **truncated**: the tree of the entries has, at every checkpoint's
  size, that checkpoint's signed root; a checkpoint larger than the tree is a
  truncation. Any checkpoint file that does not verify is named with its check.
- **case-document**: a stored case document hashes to the digest its
  ``intake.accepted`` entry holds (:func:`document_problem`).
- **vault**: a monitoring (vault) row has the seal its ``intake.accepted`` entry holds:
  an HMAC under the lender's key, so the journal holds nothing a guess could reverse
  (:func:`vault_problem`).
- **decision-row** / **decisions**: each ``decisions`` row names its case's one
  ``decision.recorded`` entry, each such entry has its row, and no case has two
  (:func:`decision_problem`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from credit.canonical import canonical_bytes, dumps, sha256_hex
from credit.errors import JournalIntegrityError
from credit.journal.checkpoint import Checkpoint, read_checkpoints, verify_checkpoint
from credit.journal.keys import VerifierKey
from credit.journal.merkle import EMPTY_ROOT, MerkleLog, leaf_hash
from credit.journal.naming import decision_id_problem
from credit.journal.signer import JournalKey
from credit.kinds import DECISION_KINDS, DECISION_RECORDED, INTAKE_ACCEPTED

__all__ = [
    "VAULT_SEALS",
    "AuditReport",
    "Finding",
    "KeptCheckpoint",
    "SideRows",
    "Walk",
    "accepted_digest",
    "decision_problem",
    "document_problem",
    "entry_leaf",
    "link_problem",
    "load_checkpoints",
    "mac_problem",
    "mark_body",
    "mark_problem",
    "vault_case",
    "vault_problem",
    "vault_seal",
]

GENESIS = "0" * 64
# The intake.accepted payload field holding {vault key: seal} for the rows it stored.
VAULT_SEALS = "vaultSeals"


@dataclass(frozen=True, slots=True)
class Finding:
    """One failed check: what (``check``), where (entry, case, checkpoint), and why."""

    check: str
    detail: str
    seq: int | None = None
    case_id: str | None = None
    checkpoint: str | None = None

    def __str__(self) -> str:
        places = [
            f"checkpoint {self.checkpoint}" if self.checkpoint else "",
            f"entry {self.seq}" if self.seq is not None else "",
            f"case {self.case_id}" if self.case_id else "",
        ]
        where = ", ".join(p for p in places if p)
        return f"{where}: {self.check}: {self.detail}" if where else f"{self.check}: {self.detail}"

    def error(self) -> JournalIntegrityError:
        """The finding as the error a store raises rather than act on the row."""
        detail = f"case {self.case_id}: {self.detail}" if self.case_id else self.detail
        return JournalIntegrityError(
            detail, check=self.check, checkpoint=self.checkpoint, seq=self.seq
        )


@dataclass(frozen=True, slots=True)
class KeptCheckpoint:
    """A checkpoint whose signature verified, with the file it was read from."""

    path: str
    checkpoint: Checkpoint

    @property
    def size(self) -> int:
        return self.checkpoint.size


@dataclass(frozen=True, slots=True)
class SideRows:
    """The rows beside the chain: ``decisions`` (case id -> seq), the stored case
    documents (case id -> document) and the vault (vault key -> data)."""

    decisions: Mapping[str, int] = field(default_factory=dict)
    cases: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    vault: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AuditReport:
    """What the walk found. ``ok`` when nothing; ``macs_checked`` says whether the
    entry MACs could be checked (only with the signing key)."""

    entries: int
    head: str
    root: bytes
    checkpoints: tuple[KeptCheckpoint, ...]
    macs_checked: bool
    findings: tuple[Finding, ...]

    @property
    def ok(self) -> bool:
        return not self.findings


# ---------------------------------------------------------------------- the rules


def entry_leaf(wire: Mapping[str, Any]) -> bytes:
    """The RFC 6962 leaf hash of an entry: SHA-256(0x00 || canonical JSON of
    ``entry.to_wire()``)."""
    return leaf_hash(canonical_bytes(dict(wire)))


def link_problem(
    seq: int, prev_hash: str, own_hash: str, computed_hash: str, expected_seq: int, prev: str
) -> str | None:
    """Why an entry is not the link the chain needs at ``expected_seq`` after ``prev``."""
    if seq != expected_seq:
        return (
            f"entry {seq} stands where entry {expected_seq} should "
            "(an entry was deleted or reordered)"
        )
    if prev_hash != prev:
        return (
            f"entry {seq} does not link to the entry before it "
            "(an entry before it was deleted, reordered or edited)"
        )
    if computed_hash != own_hash:
        return f"entry {seq}'s content does not match its hash (it was edited)"
    return None


def mac_problem(key: JournalKey, entry_hash: str, mac: str | None) -> str | None:
    """Why an entry's MAC is not the key's over its hash (None: it is)."""
    if mac is None:
        return "the entry carries no MAC (not written by a holder of the key)"
    if not key.checks(entry_hash, mac):
        return (
            f"the entry's MAC is not {key.name}'s over its hash "
            "(written without the key, or with another key)"
        )
    return None


def accepted_digest(payload: Mapping[str, Any]) -> str | None:
    digest = payload.get("digest")
    return digest if isinstance(digest, str) else None


def document_problem(
    document: Mapping[str, Any], digest: str | None, *, text: str | None = None
) -> str | None:
    """Why a stored case document is not the one its intake.accepted entry took in.

    ``text``: the document as stored. When its own bytes hash to the digest they are
    the very canonical bytes intake hashed, so the document is the one taken in,
    without writing its canonical form again; otherwise (or without ``text``) the
    document's canonical form is hashed, as always."""
    if digest is None:
        return None  # an entry that binds nothing (written by hand, not by intake)
    if text is not None and sha256_hex(text.encode("utf-8")) == digest:
        return None
    found = sha256_hex(canonical_bytes(dict(document)))
    if found != digest:
        return (
            f"the stored case document hashes to {found[:16]}..., not to the digest "
            f"{digest[:16]}... its intake.accepted entry holds (the row was edited)"
        )
    return None


def vault_case(name: str) -> str:
    """The case a vault key belongs to: the key up to its first ``#``."""
    return name.partition("#")[0]


def vault_seal(payload: Mapping[str, Any], name: str) -> str | bool:
    """The seal the intake.accepted payload holds for vault row ``name``; False when
    it seals no row by that name; True when it holds no seals at all (an entry that
    binds nothing: written by hand, or before seals were kept)."""
    seals = payload.get(VAULT_SEALS)
    if not isinstance(seals, Mapping):
        return True
    found = seals.get(name)
    return found if isinstance(found, str) else False


def vault_problem(
    key: JournalKey, name: str, data: Mapping[str, Any] | None, sealed: str | bool
) -> str | None:
    """Why a vault row is not the one its intake.accepted entry sealed."""
    if sealed is True:
        return None
    if sealed is False:
        return None if data is None else f"vault row {name!r} was never sealed at intake"
    if data is None:
        return f"vault row {name!r} is missing (its intake.accepted entry sealed one)"
    if not key.checks_seal(name, data, sealed):
        return f"vault row {name!r} does not match its seal (the row was edited or moved)"
    return None


def mark_body(seq: int, head_hash: str, text: str) -> bytes:
    """What a mark's seal covers: the entry it was made on (its seq and hash) and what
    was derived from the journal through it (``text``, canonical JSON, as stored):
    ``canonical_bytes({"seq": seq, "hash": head_hash, "data": data})`` written around
    the stored text, which is not parsed and written again (a mark can be large)."""
    return f'{{"data":{text},"hash":{dumps(head_hash)},"seq":{int(seq)}}}'.encode()


def mark_problem(
    key: JournalKey,
    name: str,
    seq: int,
    head_hash: str,
    text: str,
    sealed: str,
    hash_at_seq: str | None,
) -> str | None:
    """Why a kept mark is not one to start from: its seal is not the key's over what it
    says (its stored text, byte for byte), or the chain no longer holds, at its seq, the
    entry it was made on (``hash_at_seq``: that entry's hash now, the genesis hash for
    seq 0, None when the journal is shorter)."""
    if not key.checks_mark(name, mark_body(seq, head_hash, text), sealed):
        return f"mark {name!r} does not match its seal (the row was edited)"
    if hash_at_seq is None:
        return f"mark {name!r} was made on entry {seq}, which the journal no longer holds"
    if hash_at_seq != head_hash:
        return f"mark {name!r} was made on entry {seq}, whose hash has changed since"
    return None


def decision_problem(case_id: str, row_seq: int | None, chain_seqs: Sequence[int]) -> str | None:
    """Why a case's ``decisions`` row and its decision.recorded entries disagree."""
    if len(chain_seqs) > 1:
        listed = ", ".join(str(s) for s in chain_seqs)
        return f"the case has {len(chain_seqs)} decision.recorded entries ({listed}); one at most"
    if not chain_seqs:
        if row_seq is None:
            return None
        return (
            f"the decisions row names entry {row_seq}, but the chain holds no "
            "decision.recorded entry of this case"
        )
    if row_seq is None:
        return (
            f"entry {chain_seqs[0]} records the decision, but the decisions row is "
            "missing (deleted)"
        )
    if row_seq != chain_seqs[0]:
        return (
            f"the decisions row names entry {row_seq}, not the case's decision.recorded "
            f"entry {chain_seqs[0]}"
        )
    return None


# ---------------------------------------------------------------------- checkpoints


def load_checkpoints(
    directory: Path, verifier: VerifierKey | Sequence[VerifierKey], *, origin: str | None
) -> tuple[list[KeptCheckpoint], list[Finding]]:
    """Every checkpoint kept in ``directory`` whose signature verifies (smallest first),
    and a finding for each one that does not (named by file)."""
    kept: list[KeptCheckpoint] = []
    findings: list[Finding] = []
    try:
        files = read_checkpoints(directory)
    except JournalIntegrityError as e:
        return [], [Finding(e.check, e.message, checkpoint=e.checkpoint)]
    for path, text in files:
        try:
            checkpoint = verify_checkpoint(text, verifier, origin=origin, source=path)
        except JournalIntegrityError as e:
            findings.append(Finding(e.check, e.message, checkpoint=str(path)))
            continue
        kept.append(KeptCheckpoint(str(path), checkpoint))
    return kept, findings


# ---------------------------------------------------------------------- the walk


class Walk:
    """The verify walk over a whole journal: feed it every entry in stored order
    (:meth:`entry`), then the side rows (:meth:`side`), then :meth:`report`."""

    def __init__(
        self, *, key: JournalKey | None, checkpoints: Sequence[KeptCheckpoint] = ()
    ) -> None:
        self.key = key
        self.checkpoints = sorted(checkpoints, key=lambda k: k.size)
        self.findings: list[Finding] = []
        self._log = MerkleLog()
        self._prev = GENESIS
        self._count = 0
        self._next_checkpoint = 0
        self._accepted: dict[str, Mapping[str, Any]] = {}
        self._decisions: dict[str, list[int]] = defaultdict(list)
        self._numbers: dict[str, int] = defaultdict(int)  # each case's decisions so far
        self._check_checkpoints_at(0)

    def _check_checkpoints_at(self, size: int) -> None:
        root = self._log.root() if size else EMPTY_ROOT
        while (
            self._next_checkpoint < len(self.checkpoints)
            and self.checkpoints[self._next_checkpoint].size == size
        ):
            kept = self.checkpoints[self._next_checkpoint]
            if kept.checkpoint.root_hash != root:
                self.findings.append(
                    Finding(
                        "consistency",
                        f"the journal's first {size} entries do not hash to this "
                        "checkpoint's signed root: the history it covers was rewritten",
                        checkpoint=kept.path,
                    )
                )
            self._next_checkpoint += 1

    def entry(
        self,
        *,
        seq: int,
        case_id: str | None,
        kind: str,
        payload: Mapping[str, Any],
        wire: Mapping[str, Any],
        prev_hash: str,
        own_hash: str,
        computed_hash: str,
        mac: str | None,
        stored_leaf: bytes | None = None,
    ) -> None:
        self._count += 1
        problem = link_problem(seq, prev_hash, own_hash, computed_hash, self._count, self._prev)
        if problem is not None:
            self.findings.append(Finding("chain", problem, seq=seq, case_id=case_id))
        if self.key is not None:
            bad_mac = mac_problem(self.key, own_hash, mac)
            if bad_mac is not None:
                self.findings.append(Finding("entry-mac", bad_mac, seq=seq, case_id=case_id))
        leaf = entry_leaf(wire)
        if stored_leaf is not None and stored_leaf != leaf:
            self.findings.append(
                Finding(
                    "leaf-hash",
                    "the stored leaf hash is not the entry's",
                    seq=seq,
                    case_id=case_id,
                )
            )
        self._log.append(leaf)
        self._check_checkpoints_at(self._log.size)
        self._prev = own_hash
        if case_id is not None:
            if kind == INTAKE_ACCEPTED and case_id not in self._accepted:
                self._accepted[case_id] = payload
            elif kind in DECISION_KINDS:
                if kind == DECISION_RECORDED:
                    self._decisions[case_id].append(seq)
                self._numbers[case_id] += 1
                named = decision_id_problem(case_id, kind, payload, self._numbers[case_id])
                if named is not None:
                    self.findings.append(Finding("decision-id", named, seq=seq, case_id=case_id))

    def side(self, rows: SideRows) -> None:
        for case_id in sorted(set(rows.decisions) | set(self._decisions)):
            problem = decision_problem(
                case_id, rows.decisions.get(case_id), self._decisions.get(case_id, [])
            )
            if problem is not None:
                check = "decisions" if len(self._decisions.get(case_id, [])) > 1 else "decision-row"
                self.findings.append(Finding(check, problem, case_id=case_id))
        for case_id, document in sorted(rows.cases.items()):
            accepted = self._accepted.get(case_id)
            if accepted is None:
                continue  # an intake interrupted before its entry: never acted on
            problem = document_problem(document, accepted_digest(accepted))
            if problem is not None:
                self.findings.append(Finding("case-document", problem, case_id=case_id))
        for case_id, accepted in sorted(self._accepted.items()):
            if case_id not in rows.cases and accepted_digest(accepted) is not None:
                self.findings.append(
                    Finding(
                        "case-document",
                        "the case was taken in (intake.accepted) but its stored "
                        "document is missing (deleted)",
                        case_id=case_id,
                    )
                )
        if self.key is None:
            return
        names = set(rows.vault)
        for accepted in self._accepted.values():
            seals = accepted.get(VAULT_SEALS)
            if isinstance(seals, Mapping):
                names |= {str(n) for n in seals}
        for name in sorted(names):
            accepted = self._accepted.get(vault_case(name))
            if accepted is None:
                continue
            problem = vault_problem(
                self.key, name, rows.vault.get(name), vault_seal(accepted, name)
            )
            if problem is not None:
                self.findings.append(Finding("vault", problem, case_id=vault_case(name)))

    def report(self) -> AuditReport:
        for kept in self.checkpoints[self._next_checkpoint :]:
            self.findings.append(
                Finding(
                    "truncated",
                    f"the journal holds {self._log.size} entries, fewer than the "
                    f"{kept.size} this checkpoint signed: entries were cut",
                    checkpoint=kept.path,
                )
            )
        self._next_checkpoint = len(self.checkpoints)
        return AuditReport(
            entries=self._count,
            head=self._prev,
            root=self._log.root(),
            checkpoints=tuple(self.checkpoints),
            macs_checked=self.key is not None,
            findings=tuple(self.findings),
        )
