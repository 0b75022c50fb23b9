"""The second line's reviews done again from the journal alone, and compared.

Each ``review.backstop`` and ``review.equipoise`` entry is reviewed again, on the
decision it names (by ``decisionId``, or by seq in journals written before), and the
review it gives is compared with the one journaled: whether it passed, every finding
(code, whether it holds, message and detail) and the basis.

- Backstop re-derives the decision from the journaled case document under the policy
  in force on the case's date: nothing it reads changes after the review.
- Equipoise compares the decision with the decisions recorded before it, as the pool
  held them. Its basis names ``poolChanged``, the seq of the last entry that had taken
  a decision out of its comparison pool (a rejection, a case's later decision), so the
  review is done again with a pool that reads the journal up to the later of that and
  the decision, and no further (:class:`~credit.governance.equipoise.ComparisonPool`
  ``through``), and the case's guard redactions up to the review. The reviews of a
  batch are done again in the order of those bounds with one pool, raised from one to
  the next, so replaying every case reads the journal about once, as the run did. A
  review journaled before ``poolChanged`` was recorded, or under another configuration
  of the fair-lending review, cannot be done again: it is reported as that, not as a
  difference.

``credit replay`` replays the reviews of the cases it replays (``docs/journal.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

from credit.canonical import canonical_bytes
from credit.errors import CreditError
from credit.governance.backstop import Backstop
from credit.governance.equipoise import ComparisonPool, Equipoise
from credit.governance.findings import Review
from credit.journal.base import Entry, Store
from credit.journal.naming import decision_id_of, names_decision
from credit.kinds import DECISION_KINDS, REVIEW_BACKSTOP, REVIEW_EQUIPOISE
from credit.policy import PolicyRegistry

__all__ = ["ReviewReplay", "replay_reviews"]

Status = Literal["same", "differs", "not-replayable"]


@dataclass(frozen=True, slots=True)
class ReviewReplay:
    """One journaled review done again. ``differences``: (field, journaled, replayed)
    for each field that differs; ``why``: why it could not be done again."""

    case_id: str
    seq: int
    reviewer: str
    status: Status
    decision_seq: int | None = None
    differences: tuple[tuple[str, Any, Any], ...] = ()
    why: str | None = None

    @property
    def ok(self) -> bool:
        """Done again with the same review (or not replayable, which says why)."""
        return self.status != "differs"

    def to_wire(self) -> dict[str, Any]:
        return {
            "caseId": self.case_id,
            "seq": self.seq,
            "reviewer": self.reviewer,
            "status": self.status,
            "decisionSeq": self.decision_seq,
            "differences": [
                {"field": name, "journaled": was, "replayed": now}
                for name, was, now in self.differences
            ],
            "why": self.why,
        }


def _decision_of(review: Entry, entries: Sequence[Entry]) -> Entry | None:
    """The decision a review is about: the one it names, else (a review that names
    none, written before decisions were named at all) the latest before it."""
    before = [e for e in entries if e.kind in DECISION_KINDS and e.seq < review.seq]
    about = [names_decision(review.payload, d.seq, decision_id_of(d.payload)) for d in before]
    if None in about:  # it names no decision: the answer is the same for each
        return before[-1]
    return next((d for d, named in zip(before, about, strict=True) if named), None)


def _differences(
    journaled: Mapping[str, Any], replayed: Review
) -> tuple[tuple[str, Any, Any], ...]:
    """Each field of the journaled payload, as it was written, against the review done
    again (``passed``, ``findings``, then the basis key by key)."""
    now = replayed.to_payload()
    out = []
    for name in ("passed", "findings"):
        if canonical_bytes(journaled.get(name)) != canonical_bytes(now[name]):
            out.append((name, journaled.get(name), now[name]))
    was = journaled.get("basis")
    was = was if isinstance(was, Mapping) else {}
    for key in sorted({*was, *now["basis"]}):
        before, after = was.get(key), now["basis"].get(key)
        if canonical_bytes(before) != canonical_bytes(after):
            out.append((f"basis.{key}", before, after))
    return tuple(out)


def replay_reviews(
    store: Store,
    case_ids: Iterable[str],
    *,
    registry: PolicyRegistry | None = None,
) -> list[ReviewReplay]:
    """Every review of the named cases done again and compared, in journal order."""
    registry = registry or PolicyRegistry.bundled()
    backstop = Backstop(store, registry)
    equipoise = Equipoise(store, registry=registry)
    done: dict[int, ReviewReplay] = {}
    marked: list[tuple[int, Entry, Entry]] = []  # (how far to read, review, decision)
    for case_id in dict.fromkeys(case_ids):
        entries = list(store.authenticate(store.entries(case_id)))
        for review in entries:
            if review.kind not in (REVIEW_BACKSTOP, REVIEW_EQUIPOISE):
                continue
            decided = _decision_of(review, entries)
            if decided is None:
                done[review.seq] = _not_replayable(review, None, "no decision it names")
            elif review.kind == REVIEW_BACKSTOP:
                again = partial(backstop.review, case_id, entry=decided)
                done[review.seq] = _compared(review, decided, again)
            else:
                basis = review.payload.get("basis")
                basis = basis if isinstance(basis, Mapping) else {}
                changed = basis.get("poolChanged")
                if type(changed) is not int:
                    why = "journaled before reviews named what their comparison pool held"
                    done[review.seq] = _not_replayable(review, decided, f"{why} (poolChanged)")
                elif basis.get("configSha256") != equipoise.config.sha256:
                    why = (
                        f"reviewed under configuration {basis.get('config')}, not the one in "
                        f"use ({equipoise.config.label})"
                    )
                    done[review.seq] = _not_replayable(review, decided, why)
                else:
                    marked.append((max(changed, decided.seq), review, decided))
    pool = ComparisonPool(equipoise, through=0)
    for mark, review, decided in sorted(marked, key=lambda m: (m[0], m[1].seq)):
        pool.through = mark
        again = partial(
            equipoise.review, str(review.case_id), pool=pool, entry=decided, through=review.seq
        )
        done[review.seq] = _compared(review, decided, again)
    return [done[seq] for seq in sorted(done)]


def _reviewer(review: Entry) -> str:
    return "backstop" if review.kind == REVIEW_BACKSTOP else "equipoise"


def _not_replayable(review: Entry, decided: Entry | None, why: str) -> ReviewReplay:
    seq = decided.seq if decided is not None else None
    return ReviewReplay(
        str(review.case_id), review.seq, _reviewer(review), "not-replayable", seq, why=why
    )


def _compared(review: Entry, decided: Entry, again: Callable[[], Review]) -> ReviewReplay:
    try:
        replayed = again()
    except (CreditError, ValueError, KeyError, TypeError) as e:
        return _not_replayable(review, decided, str(e))
    differences = _differences(review.payload, replayed)
    status: Status = "differs" if differences else "same"
    return ReviewReplay(
        str(review.case_id), review.seq, _reviewer(review), status, decided.seq, differences
    )
