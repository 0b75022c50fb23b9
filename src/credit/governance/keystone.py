"""The Keystone gate (Orchestration, "Held by the Keystone gate before commit").

Every recorded decision is held: the ``decision.recorded`` entry *is* the hold. The
gate releases a decision only when both reviews passed, or when a person says so:

1. :meth:`Keystone.review` runs Equipoise (fair lending) and Backstop (model risk),
   journals each review (``review.equipoise``, ``review.backstop``, with their
   findings), then journals ``keystone.released`` (both passed; ``by`` is
   ``keystone``) or ``keystone.held`` (the findings that need a person).
   :meth:`Keystone.review_pending` does so for every case awaiting review.
2. A person then releases (:meth:`Keystone.release`) or rejects
   (:meth:`Keystone.reject`) a held case: ``keystone.released`` /
   ``keystone.rejected`` with who (``by``) and why (``reason``). A case that is not
   held (no decision, released, rejected) is refused with
   :class:`~credit.errors.CaseNotHeldError` naming the case and its state; a release
   before the reviews ran is refused too (a reject is not).

The gate keeps no state of its own: :meth:`Keystone.status` and
:meth:`Keystone.held_cases` derive everything from the journal, so any process that
reads the same store sees the same gate. Reviewing is idempotent: a review already
journaled is read back, never run or journaled twice, and a review that stopped half
way (one review journaled, no gate entry) is completed on the next call.

Not formalised here: two processes reviewing the same case at the same instant (the
Store contract has no compare-and-set beyond ``record_decision``; a lock serialises
the gate within one process): run one gate worker per journal.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from credit.errors import CaseNotHeldError, GovernanceError
from credit.governance.backstop import Backstop
from credit.governance.equipoise import Equipoise
from credit.governance.fair_lending import RecordedDecision
from credit.governance.findings import (
    GATE_KINDS,
    KIND_BACKSTOP,
    KIND_EQUIPOISE,
    KIND_HELD,
    KIND_REJECTED,
    KIND_RELEASED,
    REVIEW_KINDS,
    Finding,
    Review,
)
from credit.journal.base import DECISION_KIND, Entry, Store
from credit.policy import PolicyRegistry

__all__ = [
    "GATE",
    "GateState",
    "Keystone",
    "KeystoneStatus",
]

GATE = "keystone"  # the ``by`` of an automatic release
GateState = Literal["not-recorded", "awaiting-review", "held", "released", "rejected"]
_HOLDING_STATES = ("awaiting-review", "held")


@dataclass(frozen=True, slots=True)
class KeystoneStatus:
    """A case's standing at the gate, derived from the journal.

    ``state``: ``not-recorded`` (no decision), ``awaiting-review`` (held, not yet
    reviewed), ``held`` (reviewed, findings for a person), ``released`` or
    ``rejected``. ``decided_by`` and ``reason`` are set once released or rejected
    (``decided_by`` is ``keystone`` for an automatic release).
    """

    case_id: str
    state: GateState
    decision: str | None = None
    product: str | None = None
    underwriter: str | None = None
    decision_seq: int | None = None
    reviews: Mapping[str, Review] = field(default_factory=dict)
    decided_by: str | None = None
    reason: str | None = None
    gate_seq: int | None = None

    @property
    def held(self) -> bool:
        return self.state in _HOLDING_STATES

    @property
    def findings(self) -> tuple[Finding, ...]:
        """Every finding of the journaled reviews, Equipoise's first."""
        return tuple(
            f
            for name in ("equipoise", "backstop")
            if name in self.reviews
            for f in self.reviews[name].findings
        )

    @property
    def holding_findings(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.holds)

    @property
    def passed(self) -> bool | None:
        """Both reviews passed (None until both are journaled)."""
        if len(self.reviews) < 2:
            return None
        return all(r.passed for r in self.reviews.values())


def _status_from(case_id: str, entries: Sequence[Entry]) -> KeystoneStatus:
    """Fold a case's journal entries (in journal order) into its gate status."""
    decision: Entry | None = None
    reviews: dict[str, Review] = {}
    gate: Entry | None = None  # the last gate entry: held, released or rejected
    for entry in entries:
        if entry.kind == DECISION_KIND:
            decision = entry
        elif entry.kind in REVIEW_KINDS:
            review = Review.from_payload(case_id, entry.payload)
            reviews.setdefault(review.reviewer, review)
        elif entry.kind in GATE_KINDS:
            gate = entry
    if decision is None:
        return KeystoneStatus(case_id=case_id, state="not-recorded")
    wire = decision.payload.get("decision")
    wire = wire if isinstance(wire, Mapping) else {}
    common: dict[str, Any] = {
        "case_id": case_id,
        "decision": _text(wire.get("decision")),
        "product": _text(wire.get("product")),
        "underwriter": _text(decision.payload.get("underwriter")),
        "decision_seq": decision.seq,
        "reviews": reviews,
    }
    if gate is None:
        return KeystoneStatus(state="awaiting-review", **common)
    if gate.kind == KIND_HELD:
        return KeystoneStatus(state="held", gate_seq=gate.seq, **common)
    return KeystoneStatus(
        state="released" if gate.kind == KIND_RELEASED else "rejected",
        decided_by=_text(gate.payload.get("by")),
        reason=_text(gate.payload.get("reason")),
        gate_seq=gate.seq,
        **common,
    )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


_KINDS = (DECISION_KIND, *REVIEW_KINDS, *GATE_KINDS)


class Keystone:
    """The gate between a recorded decision and its commitment."""

    def __init__(
        self,
        store: Store,
        *,
        equipoise: Equipoise | None = None,
        backstop: Backstop | None = None,
        registry: PolicyRegistry | None = None,
    ) -> None:
        self.store = store
        self.equipoise = equipoise or Equipoise(store)
        self.backstop = backstop or Backstop(store, registry)
        self._lock = threading.Lock()

    # ------------------------------------------------------------ reading the journal

    def status(self, case_id: str) -> KeystoneStatus:
        """The case's standing at the gate, from the journal alone."""
        return _status_from(case_id, self.store.entries(case_id, kinds=list(_KINDS)))

    def held_cases(self) -> list[KeystoneStatus]:
        """Every case held and not yet released or rejected, in the order decided."""
        by_case: dict[str, list[Entry]] = {}
        for entry in self.store.entries(kinds=list(_KINDS)):
            if entry.case_id is not None:
                by_case.setdefault(entry.case_id, []).append(entry)
        statuses = [_status_from(case_id, entries) for case_id, entries in by_case.items()]
        held = [s for s in statuses if s.held]
        return sorted(held, key=lambda s: s.decision_seq or 0)

    # ------------------------------------------------------------ the automatic review

    def review_pending(self) -> list[KeystoneStatus]:
        """Review every case awaiting review, in the order decided, reading the
        comparative-review pool once for the whole batch."""
        pending = [s.case_id for s in self.held_cases() if s.state == "awaiting-review"]
        pool = self.equipoise.pool() if pending else []
        return [self.review(case_id, pool=pool) for case_id in pending]

    def review(
        self, case_id: str, *, pool: Sequence[RecordedDecision] | None = None
    ) -> KeystoneStatus:
        """Run (or read back) Equipoise and Backstop, then release or hold the case.

        ``pool``: the decisions Equipoise compares with (default: read now)."""
        with self._lock:
            status = self.status(case_id)
            if status.state == "not-recorded":
                raise GovernanceError("no decision is recorded", case_id=case_id, reviewer=GATE)
            if status.state != "awaiting-review":
                return status  # already reviewed (or decided by a person): nothing to do
            reviews = dict(status.reviews)
            if "equipoise" not in reviews:
                review = self.equipoise.review(case_id, pool=pool)
                self.store.append(case_id, KIND_EQUIPOISE, review.to_payload())
                reviews["equipoise"] = review
            if "backstop" not in reviews:
                review = self.backstop.review(case_id)
                self.store.append(case_id, KIND_BACKSTOP, review.to_payload())
                reviews["backstop"] = review
            holding = [f for r in reviews.values() for f in r.findings if f.holds]
            payload: dict[str, Any] = {
                "decisionSeq": status.decision_seq,
                "reviews": {name: r.passed for name, r in sorted(reviews.items())},
            }
            if holding:
                payload["findings"] = [f.to_wire() for f in holding]
                self.store.append(case_id, KIND_HELD, payload)
            else:
                payload.update(by=GATE, reason="Equipoise and Backstop passed")
                self.store.append(case_id, KIND_RELEASED, payload)
            return self.status(case_id)

    # ------------------------------------------------------------ a person's decision

    def release(self, case_id: str, reviewer: str, reason: str) -> Entry:
        """A person releases a held case; journals who and why."""
        return self._decide(case_id, reviewer, reason, KIND_RELEASED)

    def reject(self, case_id: str, reviewer: str, reason: str) -> Entry:
        """A person rejects a held case (the decision is not committed); who and why."""
        return self._decide(case_id, reviewer, reason, KIND_REJECTED)

    def _decide(self, case_id: str, reviewer: str, reason: str, kind: str) -> Entry:
        verb = "release" if kind == KIND_RELEASED else "reject"
        if not reviewer.strip():
            raise GovernanceError(f"a {verb} must name the person", case_id=case_id, reviewer=GATE)
        if not reason.strip():
            raise GovernanceError(f"a {verb} must give a reason", case_id=case_id, reviewer=GATE)
        with self._lock:
            status = self.status(case_id)
            if not status.held:
                raise CaseNotHeldError(_not_held(verb, status), case_id=case_id, state=status.state)
            if kind == KIND_RELEASED and status.state == "awaiting-review":
                raise GovernanceError(
                    "cannot release: Equipoise and Backstop have not reviewed it yet "
                    "(run the Keystone review first; a reject needs no review)",
                    case_id=case_id,
                    reviewer=GATE,
                )
            return self.store.append(
                case_id,
                kind,
                {
                    "by": reviewer.strip(),
                    "reason": reason.strip(),
                    "decisionSeq": status.decision_seq,
                    "heldSeq": status.gate_seq,
                    "findings": [f.to_wire() for f in status.holding_findings],
                },
            )


def _not_held(verb: str, status: KeystoneStatus) -> str:
    if status.state == "not-recorded":
        return f"cannot {verb}: no decision is recorded for case {status.case_id}"
    by = "the Keystone gate" if status.decided_by == GATE else status.decided_by
    return (
        f"cannot {verb}: case {status.case_id} is not held, it was already {status.state} "
        f"by {by} (entry {status.gate_seq})"
    )
