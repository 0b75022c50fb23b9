"""The life of a case: its states, who moves it from one to the next, and the clock.

This module is the one place that says what state a case is in. It folds the case's
journal entries (in journal order) into a :class:`CaseLife`; every other module (the
Keystone gate, the notice step, the work queue, the CLI, the service and the console)
asks here and never re-derives a state from journal kinds of its own.

States (``docs/governance.md`` draws them)::

    received ──(system: the underwriter turn)──> awaiting-review | refused | failed
    awaiting-review ──(system: Equipoise + Backstop)──> held | released
    held ──(reviewer: approve, then a second reviewer releases)──> released
    held ──(reviewer: reject)──> rejected
    released ──> approved (final) | referred | notice-pending
    notice-pending ──(system: render, verify V1-V8, send)──> notified (final) | notice-blocked
    referred | rejected | refused | failed | notice-blocked
        ──(officer: a decision of their own)──> awaiting-review
    any state that is not final ──(officer: withdrawn by the applicant)──> withdrawn (final)

Every state that is not final is exactly one open :class:`WorkItem` with the role that
works it and a deadline, except the two the system finishes by itself
(``awaiting-review``, ``notice-pending``: on the next run, at service start-up, and on
any read of the case, :mod:`credit.casework`), which are never left to a person.

The clock: Regulation B (12 CFR 1002.9(a)(1)) requires notice of the action taken
within ``noticeDeadlineDays`` (policy data, 30) of a completed application; the case
date (``asOf``) is the day the application was complete. A referral is not an action:
a referred case stays on the clock until a person decides it. ``daysLeft`` is counted
on the clock's date (:mod:`credit.clock`); an item is overdue when it is below zero.

A decision belongs to the entries recorded after it: a reviewer's review, the gate's
hold or release, a notice, each names the decision it is about by its ``decisionId``
(its content's SHA-256; journals written before name it by ``decisionSeq``, and both
forms read alike: :mod:`credit.journal.naming`). An officer's decision
(``officer.decided``) supersedes the one before it, and its own reviews, gate and
notice start afresh.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from credit.canonical import is_mapping
from credit.errors import PolicyError
from credit.governance.findings import Finding, Review
from credit.journal.base import Entry
from credit.journal.naming import decision_id_of, decision_ref, names_decision
from credit.kept import Recent
from credit.kinds import (
    CASE_WITHDRAWN,
    DECISION_KINDS,
    INTAKE_ACCEPTED,
    KEYSTONE_APPROVED,
    KEYSTONE_HELD,
    KEYSTONE_REJECTED,
    KEYSTONE_RELEASED,
    NOTICE_BLOCKED,
    NOTICE_SENT,
    NOTICE_VERIFIED,
    OFFICER_DECIDED,
    REVIEW_KINDS,
    SAFETY_REFUSAL,
    TURN_FAILED,
)
from credit.policy import PolicyRegistry

__all__ = [
    "FINAL_STATES",
    "ITEM_KINDS",
    "LIVES_KEPT",
    "ROLE_OF",
    "STANDING_KINDS",
    "STATES",
    "CaseLife",
    "CurrentDecision",
    "GateView",
    "ItemKind",
    "Lives",
    "State",
    "StateInfo",
    "WorkItem",
    "fold",
    "fold_all",
    "recorded_reasons",
]

# The kinds of entry :func:`fold` reads for where a case stands (its state, its work
# item, its system work): an entry of any other kind moves only ``last_seq``. A reader
# that only asks where cases stand may read these alone (a test checks the fold gives
# the same standing from them as from every entry).
STANDING_KINDS: Final = frozenset(
    {
        INTAKE_ACCEPTED,
        *DECISION_KINDS,
        *REVIEW_KINDS,
        KEYSTONE_HELD,
        KEYSTONE_APPROVED,
        KEYSTONE_RELEASED,
        KEYSTONE_REJECTED,
        NOTICE_VERIFIED,
        NOTICE_SENT,
        NOTICE_BLOCKED,
        SAFETY_REFUSAL,
        TURN_FAILED,
        CASE_WITHDRAWN,
    }
)

State = Literal[
    "received",
    "awaiting-review",
    "held",
    "rejected",
    "referred",
    "notice-pending",
    "notice-blocked",
    "refused",
    "failed",
    "approved",
    "notified",
    "withdrawn",
]
ItemKind = Literal[
    "undecided", "referral", "held", "refused", "rejected", "notice-blocked", "failed"
]
Role = Literal["underwriter", "officer", "reviewer", "system"]


@dataclass(frozen=True, slots=True)
class StateInfo:
    """One state of the life of a case: whether it is final, the work item it is (if
    any), who works it, and what they can move it to."""

    state: State
    final: bool
    item: ItemKind | None
    role: Role | None
    moves: str


STATES: Final[Mapping[State, StateInfo]] = {
    s.state: s
    for s in (
        StateInfo(
            "received",
            False,
            "undecided",
            "underwriter",
            "the system's underwriter turn decides it (credit run; POST /decide)",
        ),
        StateInfo(
            "awaiting-review",
            False,
            None,
            "system",
            "the Keystone gate runs Equipoise and Backstop: released or held",
        ),
        StateInfo(
            "held",
            False,
            "held",
            "reviewer",
            "a reviewer approves and a second reviewer releases it, or one rejects it",
        ),
        StateInfo(
            "rejected",
            False,
            "rejected",
            "officer",
            "a credit officer decides the case, or records it withdrawn",
        ),
        StateInfo(
            "referred",
            False,
            "referral",
            "officer",
            "a credit officer decides the case, or records it withdrawn",
        ),
        StateInfo(
            "notice-pending",
            False,
            None,
            "system",
            "the notice step renders, verifies (V1-V8) and sends the notice",
        ),
        StateInfo(
            "notice-blocked",
            False,
            "notice-blocked",
            "officer",
            "a credit officer decides the case again (its notice is then rendered anew)",
        ),
        StateInfo(
            "refused",
            False,
            "refused",
            "officer",
            "a credit officer decides the case, or records it withdrawn",
        ),
        StateInfo(
            "failed",
            False,
            "failed",
            "officer",
            "a credit officer decides the case, or records it withdrawn",
        ),
        StateInfo("approved", True, None, None, "final: an approval committed"),
        StateInfo("notified", True, None, None, "final: the verified notice was sent"),
        StateInfo("withdrawn", True, None, None, "final: withdrawn by the applicant"),
    )
}
FINAL_STATES: Final = tuple(s for s, info in STATES.items() if info.final)
ITEM_KINDS: Final[tuple[ItemKind, ...]] = (
    "undecided",
    "referral",
    "held",
    "refused",
    "rejected",
    "notice-blocked",
    "failed",
)
ROLE_OF: Final[Mapping[ItemKind, Role]] = {
    info.item: info.role
    for info in STATES.values()
    if info.item is not None and info.role is not None
}
# The states a credit officer moves with a decision of their own, and with a withdrawal.
OFFICER_DECIDES: Final = ("referred", "rejected", "refused", "failed", "notice-blocked")
WITHDRAWABLE: Final = tuple(s for s, info in STATES.items() if not info.final)


@dataclass(frozen=True, slots=True)
class WorkItem:
    """An open work item: one per case that is not at a final action."""

    case_id: str
    kind: ItemKind
    role: Role
    opened_at: str
    opened_seq: int
    deadline: dt.date
    why: tuple[str, ...]

    def days_left(self, today: dt.date) -> int:
        return (self.deadline - today).days

    def overdue(self, today: dt.date) -> bool:
        return self.days_left(today) < 0

    def to_wire(self, today: dt.date) -> dict[str, Any]:
        """The item as ``credit queue --json`` and ``GET /v1/queue`` give it."""
        return {
            "caseId": self.case_id,
            "kind": self.kind,
            "role": self.role,
            "openedAt": self.opened_at,
            "deadline": self.deadline.isoformat(),
            "daysLeft": self.days_left(today),
            "why": list(self.why),
        }


@dataclass(frozen=True, slots=True)
class CurrentDecision:
    """The decision a case stands on now: the underwriter's, or the latest officer's."""

    entry: Entry
    wire: Mapping[str, Any]
    reasons: tuple[tuple[str, Mapping[str, str]], ...] | None
    offer: Mapping[str, Any] | None
    by: str | None
    key_id: str | None
    number: int = 1  # its place among the case's decisions, counted by the fold

    @property
    def seq(self) -> int:
        return self.entry.seq

    @property
    def id(self) -> str | None:
        """Its ``decisionId`` (None: recorded before decisions were named)."""
        return decision_id_of(self.entry.payload)

    @property
    def ref(self) -> dict[str, Any]:
        """How an entry written now about this decision names it
        (:func:`credit.journal.naming.decision_ref`)."""
        return decision_ref(self.entry.seq, self.entry.payload)

    @property
    def decision(self) -> str | None:
        value = self.wire.get("decision")
        return value if isinstance(value, str) else None

    @property
    def product(self) -> str | None:
        value = self.wire.get("product")
        return value if isinstance(value, str) else None

    @property
    def by_officer(self) -> bool:
        return self.entry.kind == OFFICER_DECIDED

    @property
    def factors(self) -> tuple[str, ...]:
        factors = self.wire.get("factors")
        if isinstance(factors, (list, tuple)):
            return tuple(str(f) for f in factors)
        return ()


@dataclass(frozen=True, slots=True)
class GateView:
    """The Keystone gate's entries about the current decision."""

    reviews: Mapping[str, Review] = field(default_factory=dict)
    held: Entry | None = None
    approvals: tuple[Entry, ...] = ()
    released: Entry | None = None
    rejected: Entry | None = None

    @property
    def findings(self) -> tuple[Finding, ...]:
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
    def decided(self) -> Entry | None:
        """The entry that ended the gate (released or rejected), if any."""
        return self.released or self.rejected


@dataclass(frozen=True, slots=True)
class CaseLife:
    """A case's standing, folded from its journal entries."""

    case_id: str
    state: State
    as_of: dt.date | None
    product: str | None
    last_seq: int
    accepted: Entry | None
    decision: CurrentDecision | None
    gate: GateView
    verified: Entry | None
    sent: Entry | None
    blocked: Entry | None
    refused: Entry | None
    failed: Entry | None
    withdrawn: Entry | None
    item: WorkItem | None

    @property
    def final(self) -> bool:
        return STATES[self.state].final

    @property
    def info(self) -> StateInfo:
        return STATES[self.state]

    @property
    def system_work(self) -> Literal["review", "notice"] | None:
        """What the system itself must finish (never a person's work)."""
        if self.state == "awaiting-review":
            return "review"
        if self.state == "notice-pending":
            return "notice"
        return None


def _about(entry: Entry, decision: CurrentDecision | None) -> bool:
    """Whether a gate, review or notice entry is about the current decision, named by
    its ``decisionId`` or its seq (entries written before decisions were named at all
    are about the only decision there was)."""
    if decision is None:
        return False
    return names_decision(entry.payload, decision.seq, decision.id) is not False


def recorded_reasons(
    payload: Mapping[str, Any],
) -> tuple[tuple[str, Mapping[str, str]], ...] | None:
    """The reasons a decision entry records (code and values, in order); None when the
    entry records none (a decision recorded without reason codes)."""
    listed = payload.get("reasons")
    if not isinstance(listed, (list, tuple)):
        return None
    return tuple(
        (str(r.get("code")), {str(k): str(v) for k, v in dict(r.get("values") or {}).items()})
        for r in listed
        if is_mapping(r)
    )


def _current(entry: Entry, number: int) -> CurrentDecision:
    payload = entry.payload
    raw = payload.get("decision")
    wire: Mapping[str, Any] = raw if is_mapping(raw) else {}
    reasons = recorded_reasons(payload)
    offer = payload.get("offer")
    officer = payload.get("officer")
    by: str | None = None
    key_id: str | None = None
    if is_mapping(officer):
        by = str(officer.get("name")) if officer.get("name") is not None else None
        key_id = str(officer.get("keyId")) if officer.get("keyId") is not None else None
    elif isinstance(payload.get("underwriter"), str):
        by = str(payload["underwriter"])
    return CurrentDecision(
        entry=entry,
        wire=wire,
        reasons=reasons,
        offer=offer if is_mapping(offer) else None,
        by=by,
        key_id=key_id,
        number=number,
    )


def _deadline(as_of: dt.date | None, registry: PolicyRegistry) -> tuple[dt.date, str | None]:
    if as_of is None:
        return dt.date.min, "the case has no date on file"
    try:
        days: int = registry.in_force(as_of)["noticeDeadlineDays"].value
    except PolicyError as err:
        return as_of, f"no policy is in force on the case date ({err.message})"
    try:
        return as_of + dt.timedelta(days=days), None
    except OverflowError:  # a case dated within ``days`` of 9999-12-31
        return dt.date.max, f"the deadline, {days} days after {as_of}, is past any calendar date"


def _finding_text(finding: Finding) -> str:
    return f"{finding.code}: {finding.message}"


def _who(entry: Entry) -> str:
    by = entry.payload.get("by")
    return str(by) if by is not None else "?"


def fold(case_id: str, entries: Iterable[Entry], registry: PolicyRegistry) -> CaseLife:
    """A case's life from its journal entries, in journal order."""
    folding = _Folding(case_id)
    folding.feed(entries)
    return folding.life(registry)


class _Folding:
    """What :func:`fold` has read of a case's entries so far. :meth:`fed` folds more
    entries on into a new folding (a folding kept by :class:`Lives` is never changed
    once kept, so any thread may fold on from it): folding ``a`` then ``b`` is folding
    ``a + b``."""

    __slots__ = (
        "accepted",
        "approvals",
        "blocked",
        "case_id",
        "decision",
        "decisions",
        "failed",
        "held",
        "last_seq",
        "refused",
        "rejected",
        "released",
        "reviews",
        "sent",
        "verified",
        "withdrawn",
    )

    def __init__(self, case_id: str) -> None:
        self.case_id = case_id
        self.accepted: Entry | None = None
        self.decision: CurrentDecision | None = None
        self.reviews: dict[str, Review] = {}
        self.held: Entry | None = None
        self.approvals: list[Entry] = []
        self.released: Entry | None = None
        self.rejected: Entry | None = None
        self.verified: Entry | None = None
        self.sent: Entry | None = None
        self.blocked: Entry | None = None
        self.refused: Entry | None = None
        self.failed: Entry | None = None
        self.withdrawn: Entry | None = None
        self.last_seq = 0
        self.decisions = 0

    def fed(self, entries: Iterable[Entry]) -> _Folding:
        """A new folding: this one's, with ``entries`` (the case's next ones) folded on."""
        f = _Folding(self.case_id)
        for name in _Folding.__slots__:
            setattr(f, name, getattr(self, name))
        f.reviews, f.approvals = dict(self.reviews), list(self.approvals)
        f.feed(entries)
        return f

    def feed(self, entries: Iterable[Entry]) -> None:
        """Fold ``entries`` (the case's next ones) on, in place (only a folding no one
        else holds yet: :meth:`fed` makes one)."""
        case_id, accepted, decision = self.case_id, self.accepted, self.decision
        reviews, held, approvals = self.reviews, self.held, self.approvals
        released, rejected, verified = self.released, self.rejected, self.verified
        sent, blocked, refused = self.sent, self.blocked, self.refused
        failed, withdrawn = self.failed, self.withdrawn
        last_seq, decisions = self.last_seq, self.decisions
        for entry in entries:
            last_seq = entry.seq
            kind = entry.kind
            if kind == INTAKE_ACCEPTED:
                accepted = accepted or entry
            elif kind in DECISION_KINDS:
                decisions += 1
                decision = _current(entry, decisions)
                reviews, held, approvals = {}, None, []
                released = rejected = verified = sent = blocked = None
                refused = failed = None
            elif kind in REVIEW_KINDS:
                if _about(entry, decision):
                    review = Review.from_payload(case_id, entry.payload)
                    reviews.setdefault(review.reviewer, review)
            elif kind == KEYSTONE_HELD:
                if _about(entry, decision):
                    held = entry
            elif kind == KEYSTONE_APPROVED:
                if _about(entry, decision):
                    approvals.append(entry)
            elif kind == KEYSTONE_RELEASED:
                if _about(entry, decision):
                    released = entry
            elif kind == KEYSTONE_REJECTED:
                if _about(entry, decision):
                    rejected = entry
            elif kind == NOTICE_VERIFIED:
                if _about(entry, decision):
                    verified = entry
            elif kind == NOTICE_SENT:
                if _about(entry, decision):
                    sent = entry
            elif kind == NOTICE_BLOCKED:
                if _about(entry, decision):
                    blocked = entry
            elif kind == SAFETY_REFUSAL:
                if entry.payload.get("stage") != "notice":  # a notice refusal is a block
                    refused = entry
            elif kind == TURN_FAILED:
                failed = entry
            elif kind == CASE_WITHDRAWN:
                withdrawn = entry
        self.accepted, self.decision = accepted, decision
        self.reviews, self.held, self.approvals = reviews, held, approvals
        self.released, self.rejected, self.verified = released, rejected, verified
        self.sent, self.blocked, self.refused = sent, blocked, refused
        self.failed, self.withdrawn = failed, withdrawn
        self.last_seq, self.decisions = last_seq, decisions

    def life(self, registry: PolicyRegistry) -> CaseLife:
        """The life the entries folded so far say."""
        accepted, decision = self.accepted, self.decision
        as_of: dt.date | None = None
        product: str | None = None
        if accepted is not None:
            try:
                as_of = dt.date.fromisoformat(str(accepted.payload.get("asOf")))
            except ValueError:
                as_of = None
            raw_product = accepted.payload.get("product")
            product = raw_product if isinstance(raw_product, str) else None
        if product is None and decision is not None:
            product = decision.product
        gate = GateView(
            reviews=dict(self.reviews),
            held=self.held,
            approvals=tuple(self.approvals),
            released=self.released,
            rejected=self.rejected,
        )
        sent, blocked, refused = self.sent, self.blocked, self.refused
        failed, withdrawn = self.failed, self.withdrawn
        state = _state(decision, gate, sent, blocked, refused, failed, withdrawn)
        item = _item(
            self.case_id,
            state,
            as_of,
            registry,
            accepted=accepted,
            decision=decision,
            gate=gate,
            blocked=blocked,
            refused=refused,
            failed=failed,
        )
        return CaseLife(
            case_id=self.case_id,
            state=state,
            as_of=as_of,
            product=product,
            last_seq=self.last_seq,
            accepted=accepted,
            decision=decision,
            gate=gate,
            verified=self.verified,
            sent=sent,
            blocked=blocked,
            refused=refused,
            failed=failed,
            withdrawn=withdrawn,
            item=item,
        )


# The cases Lives keeps: a run's group of cases (250) and a few more. What a folding
# holds costs the garbage collector's walks while it is kept: measured over 3,000
# governed cases, 256 kept cost them 0.003-0.011 ms a case more than keeping none
# (1,024: 0.025-0.03 ms, when the entries it held outlived the group store's views).
LIVES_KEPT: Final = 256


class Lives:
    """:func:`fold` for the cases folded lately, each carried on from where it stopped.

    A reader that asks for a case's life again and again while its entries grow (a
    run's case: before its turn, after it, after its review, after its notice) hands
    the case's entries each time; when they begin with the very entries (the same
    objects) folded before, only the entries after them are folded on, and the same
    entries again give the same life. Entries that are not the same objects (read
    afresh from the database, or placed again after another writer's) are folded from
    the first. The life is what :func:`fold` gives for the same entries (a hypothesis
    property, ``tests/test_journal_pages.py``). The ``most`` cases folded last are kept
    (:data:`LIVES_KEPT`), so what it holds is bounded whatever the journal's size."""

    def __init__(self, registry: PolicyRegistry, *, most: int = LIVES_KEPT) -> None:
        self.registry = registry
        # case id -> (its folding, how many entries it folded, the first and the last
        # of them, the life they gave)
        self._kept: Recent[str, tuple[_Folding, int, Entry, Entry, CaseLife]] = Recent(most)

    def __call__(self, case_id: str, entries: Sequence[Entry]) -> CaseLife:
        count = len(entries)
        kept = self._kept.get(case_id)
        if kept is not None:
            folding, done, first, last, life = kept
            if done <= count and entries[0] is first and entries[done - 1] is last:
                if done < count:
                    folding = folding.fed(entries[done:])
                    life = folding.life(self.registry)
                    self._kept.put(case_id, (folding, count, first, entries[-1], life))
                return life
        folding = _Folding(case_id)
        folding.feed(entries)
        life = folding.life(self.registry)
        if count:
            self._kept.put(case_id, (folding, count, entries[0], entries[-1], life))
        return life


def _state(
    decision: CurrentDecision | None,
    gate: GateView,
    sent: Entry | None,
    blocked: Entry | None,
    refused: Entry | None,
    failed: Entry | None,
    withdrawn: Entry | None,
) -> State:
    if withdrawn is not None:
        return "withdrawn"
    # A failure or refusal after the current decision (or with none) is where the case
    # stands: a decision recorded since supersedes it (the fold resets them).
    if failed is not None and (refused is None or failed.seq > refused.seq):
        return "failed"
    if refused is not None:
        return "refused"
    if decision is None:
        return "received"
    if gate.rejected is not None:
        return "rejected"
    if gate.released is not None:
        outcome = decision.decision
        if outcome == "approve":
            return "approved"
        if outcome == "refer":
            return "referred"
        if sent is not None:
            return "notified"
        if blocked is not None:
            return "notice-blocked"
        return "notice-pending"
    if gate.held is not None:
        return "held"
    return "awaiting-review"


def _item(
    case_id: str,
    state: State,
    as_of: dt.date | None,
    registry: PolicyRegistry,
    *,
    accepted: Entry | None,
    decision: CurrentDecision | None,
    gate: GateView,
    blocked: Entry | None,
    refused: Entry | None,
    failed: Entry | None,
) -> WorkItem | None:
    info = STATES[state]
    if info.item is None or info.role is None:
        return None
    why: list[str] = []
    opened: Entry | None = None
    if state == "received":
        opened = accepted
        why.append("taken in; the underwriter has not decided it yet")
    elif state == "failed":
        assert failed is not None
        opened = failed
        stage = failed.payload.get("stage", "turn")
        why.append(f"the {stage} could not complete: {failed.payload.get('error', '?')}")
    elif state == "refused":
        assert refused is not None
        opened = refused
        boundaries = refused.payload.get("boundaries") or []
        why.append("typed refusal at " + ", ".join(str(b) for b in boundaries))
    elif state == "held":
        opened = gate.held
        why += [_finding_text(f) for f in gate.holding_findings]
        for approval in gate.approvals:
            why.append(
                f"approved by {_who(approval)} (entry {approval.seq}): a second person "
                "must release it"
            )
    elif state == "rejected":
        assert gate.rejected is not None
        opened = gate.rejected
        why.append(f"rejected by {_who(gate.rejected)}: {gate.rejected.payload.get('reason', '')}")
    elif state == "referred":
        assert decision is not None
        opened = gate.released
        why += list(decision.factors) or ["referred for a person's decision"]
    elif state == "notice-blocked":
        assert blocked is not None
        opened = blocked
        why.append(f"notice blocked: {blocked.payload.get('reason', '?')}")
    if opened is None:  # no entry at all: not a case the journal knows
        return None
    deadline, problem = _deadline(as_of, registry)
    if problem is not None:
        why.append(problem)
    return WorkItem(
        case_id=case_id,
        kind=info.item,
        role=info.role,
        opened_at=opened.recorded_at,
        opened_seq=opened.seq,
        deadline=deadline,
        why=tuple(why),
    )


def fold_all(entries: Sequence[Entry], registry: PolicyRegistry) -> dict[str, CaseLife]:
    """Every case's life from a whole journal (entries in journal order), by case id,
    in the order the cases first appear."""
    by_case: dict[str, list[Entry]] = {}
    for entry in entries:
        if entry.case_id is not None:
            by_case.setdefault(entry.case_id, []).append(entry)
    return {case_id: fold(case_id, es, registry) for case_id, es in by_case.items()}
