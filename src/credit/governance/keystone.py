"""The Keystone gate (Orchestration, "Held by the Keystone gate before commit").

Every recorded decision is held: the decision entry *is* the hold. The gate commits a
decision only when both reviews passed, or when people say so:

1. :meth:`Keystone.review` runs Equipoise (fair lending) and Backstop (model risk) on
   the case's current decision, journals each review (``review.equipoise``,
   ``review.backstop``, with their findings), then journals ``keystone.released`` (both
   passed; ``by`` is ``keystone``) or ``keystone.held`` (the findings that need a
   person). :meth:`Keystone.review_pending` does so for every case awaiting review.
2. A held decision is committed only by **four eyes**: a first reviewer approves it
   (``keystone.approved``), then a second, different reviewer releases it
   (``keystone.released``, naming both). Either may reject it instead
   (``keystone.rejected``): a person must then decide the case (a ``rejected`` work
   item for a credit officer). Each entry names the person by their key's id and name.
   An action on a case that is not held is refused with
   :class:`~credit.errors.CaseNotHeldError` naming its state; a release before the
   reviews ran is refused too (a reject is not).

The gate keeps no state of its own: the case's state is :mod:`credit.lifecycle`'s fold
of its journal, so any process that reads the same store sees the same gate. Every
entry the gate writes is conditioned on the case's latest entry (the store's ``after``):
two people (or two workers) acting on one case at once cannot both land. Reviewing is
idempotent: a review already journaled for the current decision is read back, never run
or journaled twice, and a review that stopped half way is completed on the next call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from credit.errors import AccessError, CaseNotHeldError, GovernanceError
from credit.governance.backstop import Backstop
from credit.governance.equipoise import ComparisonPool, Equipoise
from credit.governance.findings import Finding, Review
from credit.journal.base import Entry, Store
from credit.kinds import (
    DECISION_KINDS,
    GATE_KINDS,
    INTAKE_ACCEPTED,
    KEYSTONE_APPROVED,
    KEYSTONE_HELD,
    KEYSTONE_REJECTED,
    KEYSTONE_RELEASED,
    REVIEW_BACKSTOP,
    REVIEW_EQUIPOISE,
    REVIEW_KINDS,
)
from credit.lifecycle import CaseLife, Lives, fold_all
from credit.policy import PolicyRegistry
from credit.roles import Actor, Role
from credit.secondline.derive import shared_derivations

__all__ = [
    "GATE",
    "GateAction",
    "GateState",
    "Keystone",
    "KeystoneStatus",
]

GATE = "keystone"  # the ``by`` of an automatic release
GateState = Literal["not-recorded", "awaiting-review", "held", "released", "rejected"]
_HOLDING_STATES = ("awaiting-review", "held")
# The kinds the gate's view of a case is folded from.
GATE_VIEW_KINDS = (INTAKE_ACCEPTED, *DECISION_KINDS, *REVIEW_KINDS, *GATE_KINDS)


@dataclass(frozen=True, slots=True)
class KeystoneStatus:
    """A case's standing at the gate, for its current decision.

    ``state``: ``not-recorded`` (no decision), ``awaiting-review`` (held, not yet
    reviewed), ``held`` (reviewed, findings for a person), ``released`` or
    ``rejected``. ``decided_by`` and ``reason`` are set once released or rejected
    (``decided_by`` is ``keystone`` for an automatic release). ``approved_by`` names
    the reviewers who approved a held decision so far (four eyes).
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
    approved_by: tuple[str, ...] = ()

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


@dataclass(frozen=True, slots=True)
class GateAction:
    """What a person's release did: ``approved`` (the first of four eyes) or
    ``released`` (the second), with the entry journaled."""

    outcome: Literal["approved", "released"]
    entry: Entry


def status_of(life: CaseLife) -> KeystoneStatus:
    """The gate's view of a case's life."""
    decision = life.decision
    if decision is None:
        return KeystoneStatus(case_id=life.case_id, state="not-recorded")
    gate = life.gate
    common: dict[str, Any] = {
        "case_id": life.case_id,
        "decision": decision.decision,
        "product": decision.product,
        "underwriter": decision.by,
        "decision_seq": decision.seq,
        "reviews": dict(gate.reviews),
        "approved_by": tuple(str(a.payload.get("by")) for a in gate.approvals),
    }
    ended = gate.decided
    if ended is not None:
        return KeystoneStatus(
            state="released" if ended.kind == KEYSTONE_RELEASED else "rejected",
            decided_by=_text(ended.payload.get("by")),
            reason=_text(ended.payload.get("reason")),
            gate_seq=ended.seq,
            **common,
        )
    if gate.held is not None:
        return KeystoneStatus(state="held", gate_seq=gate.held.seq, **common)
    return KeystoneStatus(state="awaiting-review", **common)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


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
        self.registry = registry or PolicyRegistry.bundled()
        self.equipoise = equipoise or Equipoise(store, registry=self.registry)
        self.backstop = backstop or Backstop(store, self.registry)
        self._lives = Lives(self.registry)  # a case's life folded on as its entries grow

    # ------------------------------------------------------------ reading the journal

    def life(self, case_id: str) -> CaseLife:
        return self._lives(case_id, self.store.entries(case_id))

    def status(self, case_id: str) -> KeystoneStatus:
        """The case's standing at the gate, from the journal alone."""
        return status_of(self.life(case_id))

    def held_cases(self) -> list[KeystoneStatus]:
        """Every case held or awaiting review (its current decision not yet released or
        rejected), in the order decided."""
        lives = fold_all(self.store.entries(kinds=list(GATE_VIEW_KINDS)), self.registry)
        statuses = [status_of(life) for life in lives.values()]
        held = [s for s in statuses if s.held]
        return sorted(held, key=lambda s: s.decision_seq or 0)

    # ------------------------------------------------------------ the automatic review

    def review_pending(self) -> list[KeystoneStatus]:
        """Review every case awaiting review, in the order decided, reading the
        comparative-review pool once for the whole batch."""
        pending = [s.case_id for s in self.held_cases() if s.state == "awaiting-review"]
        pool = self.equipoise.pool() if pending else None
        return [self.review(case_id, pool=pool) for case_id in pending]

    def review(self, case_id: str, *, pool: ComparisonPool | None = None) -> KeystoneStatus:
        """Run (or read back) Equipoise and Backstop on the current decision, then
        release or hold it; its standing at the gate afterwards. ``pool``: the
        decisions Equipoise compares with (default: read now)."""
        status = self.run_review(case_id, pool=pool)
        return status if status is not None else self.status(case_id)

    def run_review(
        self, case_id: str, *, pool: ComparisonPool | None = None, life: CaseLife | None = None
    ) -> KeystoneStatus | None:
        """:meth:`review` without reading the case back when it reviewed it (None then;
        the standing it found when there was nothing to do): for a caller that reads
        the case's life afterwards anyway. ``life``: the case's life as the caller has
        just read it from the journal's authentic entries (MACs checked:
        :meth:`credit.casework.CaseWork.life`), with nothing appended since; else the
        gate reads it."""
        if life is None:
            life = self.life(case_id)
        decision = life.decision
        if decision is None:
            raise GovernanceError("no decision is recorded", case_id=case_id, reviewer=GATE)
        status = status_of(life)
        if status.state != "awaiting-review" or life.final or life.withdrawn is not None:
            return status  # already reviewed (or decided by a person): nothing to do
        reviews = dict(life.gate.reviews)
        last = life.last_seq
        # Equipoise weighs the decision against the policy's own derivation of the
        # file, and Backstop derives it again: with the same file and policy, one
        # derivation serves both (each still reads the file and judges on its own).
        with shared_derivations():
            if "equipoise" not in reviews:
                review = self.equipoise.review(case_id, pool=pool, entry=decision.entry)
                last = self._append(case_id, REVIEW_EQUIPOISE, review, decision.ref, last)
                reviews["equipoise"] = review
            if "backstop" not in reviews:
                review = self.backstop.review(case_id, entry=decision.entry)
                last = self._append(case_id, REVIEW_BACKSTOP, review, decision.ref, last)
                reviews["backstop"] = review
        holding = [f for r in reviews.values() for f in r.findings if f.holds]
        payload: dict[str, Any] = {
            **decision.ref,
            "reviews": {name: r.passed for name, r in sorted(reviews.items())},
        }
        if holding:
            payload["findings"] = [f.to_wire() for f in holding]
            self.store.append(case_id, KEYSTONE_HELD, payload, after=last)
        else:
            payload.update(by=GATE, reason="Equipoise and Backstop passed")
            self.store.append(case_id, KEYSTONE_RELEASED, payload, after=last)
        return None

    def _append(
        self, case_id: str, kind: str, review: Review, about: Mapping[str, Any], last: int
    ) -> int:
        payload = {**about, **review.to_payload()}
        return self.store.append(case_id, kind, payload, after=last).seq

    # ------------------------------------------------------------ a person's decision

    def release(self, case_id: str, actor: Actor, reason: str) -> GateAction:
        """A reviewer's release of a held decision. The first is an approval; the
        decision is released by a second, different reviewer (four eyes)."""
        life, reason = self._person(case_id, actor, reason, "release")
        gate = life.gate
        if life.state == "awaiting-review":
            raise GovernanceError(
                "cannot release: Equipoise and Backstop have not reviewed it yet "
                "(run the Keystone review first; a reject needs no review)",
                case_id=case_id,
                reviewer=GATE,
            )
        for approval in gate.approvals:
            if approval.payload.get("keyId") == actor.key_id or (
                approval.payload.get("by") == actor.name
            ):
                raise CaseNotHeldError(
                    f"cannot release: {actor.name} approved this decision already "
                    f"(entry {approval.seq}); a second person must release it (four eyes)",
                    case_id=case_id,
                    state="held",
                )
        decision = life.decision
        assert decision is not None
        if decision.key_id is not None and decision.key_id == actor.key_id:
            raise CaseNotHeldError(
                "cannot release: the person who made a decision cannot also release it",
                case_id=case_id,
                state="held",
            )
        payload: dict[str, Any] = {
            "by": actor.name,
            "keyId": actor.key_id,
            "reason": reason,
            **decision.ref,
            "heldSeq": gate.held.seq if gate.held else None,
            "findings": [f.to_wire() for f in gate.holding_findings],
        }
        if not gate.approvals:
            entry = self.store.append(case_id, KEYSTONE_APPROVED, payload, after=life.last_seq)
            return GateAction("approved", entry)
        payload["approvedBy"] = [
            {"by": a.payload.get("by"), "keyId": a.payload.get("keyId"), "seq": a.seq}
            for a in gate.approvals
        ]
        entry = self.store.append(case_id, KEYSTONE_RELEASED, payload, after=life.last_seq)
        return GateAction("released", entry)

    def reject(self, case_id: str, actor: Actor, reason: str) -> Entry:
        """A reviewer rejects a held decision: it is not committed, and a credit
        officer must decide the case. Journals who and why."""
        life, reason = self._person(case_id, actor, reason, "reject")
        decision = life.decision
        assert decision is not None
        return self.store.append(
            case_id,
            KEYSTONE_REJECTED,
            {
                "by": actor.name,
                "keyId": actor.key_id,
                "reason": reason,
                **decision.ref,
                "heldSeq": life.gate.held.seq if life.gate.held else None,
                "findings": [f.to_wire() for f in life.gate.holding_findings],
            },
            after=life.last_seq,
        )

    def _person(self, case_id: str, actor: Actor, reason: str, verb: str) -> tuple[CaseLife, str]:
        if actor.role is not Role.REVIEWER:
            raise AccessError(
                f"the {actor.role.value} role may not {verb} a held decision (reviewer only)",
                status=403,
                principal=actor.name,
                role=actor.role.value,
            )
        if not reason.strip():
            raise GovernanceError(f"a {verb} must give a reason", case_id=case_id, reviewer=GATE)
        life = self.life(case_id)
        status = status_of(life)
        if not status.held or life.withdrawn is not None:
            raise CaseNotHeldError(_not_held(verb, life), case_id=case_id, state=life.state)
        return life, reason.strip()


def _not_held(verb: str, life: CaseLife) -> str:
    if life.decision is None:
        return f"cannot {verb}: no decision is recorded for case {life.case_id}"
    status = status_of(life)
    if status.decided_by is not None:
        by = "the Keystone gate" if status.decided_by == GATE else status.decided_by
        return (
            f"cannot {verb}: case {life.case_id} is not held, it is {life.state} (its "
            f"decision was {status.state} by {by}, entry {status.gate_seq})"
        )
    return f"cannot {verb}: case {life.case_id} is not held, it is {life.state}"
