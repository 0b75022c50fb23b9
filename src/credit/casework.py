"""Carrying every case to a final action: the system's own work and a person's.

:class:`CaseWork` is the one place a case is moved, by the system or by a person, in the
life :mod:`credit.lifecycle` describes:

- **The system finishes its own work** (:meth:`CaseWork.finish`): a decision awaiting
  the Keystone review is reviewed; a released decline or counteroffer gets its notice
  rendered from the recorded decision, verified (V1-V8) and sent, dated the day it is
  sent (:mod:`credit.clock`). The pipeline does this on every run, the service at
  start-up and on every read of a case, so a decision a crash left half way is
  finished by the system, never left to a person. Anything that stops a step (an error
  in a review, a notice that cannot be rendered) is journaled once as ``turn.failed``
  and becomes a ``failed`` work item for a person: it is not retried by the system.
- **The queue** (:meth:`CaseWork.queue`): every case not at a final action is exactly one
  open work item, with the role that works it and its Regulation B deadline.
- **A person moves a case** with a key (an :class:`~credit.roles.Actor`): a reviewer
  approves or releases (four eyes) or rejects a held decision (:mod:`credit.governance
  .keystone`); a credit officer decides a case at a person's item
  (:mod:`credit.governance.officer`) or records it withdrawn. Each action is judged on
  the state it read and lands only if the case has not moved since (the store's
  ``after``), so two people acting at once cannot both land. An action the state does
  not allow is :class:`~credit.errors.CaseStateError` naming the state.
"""

from __future__ import annotations

import bisect
import contextlib
import datetime as dt
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from credit.catalogue import Catalogue, default_catalogue
from credit.clock import Clock, clock_from_env
from credit.errors import AccessError, CaseStateError, NoticeError, SendRefusedError
from credit.governance.equipoise import ComparisonPool
from credit.governance.keystone import GateAction, Keystone
from credit.governance.officer import OfficerDecision, build_officer_decision
from credit.governance.refusal import build_refusal_surface
from credit.governance.safety import safety_verdict, unverified_notice_send
from credit.guardrails.expectation import expectation_for
from credit.guardrails.report import VerificationReport
from credit.guardrails.verifier import Verifier
from credit.journal.base import Entry, StaleCaseError, Store
from credit.journal.naming import DECISION_ID, named_decision
from credit.kinds import (
    CASE_WITHDRAWN,
    NOTICE_BLOCKED,
    NOTICE_SENT,
    NOTICE_VERIFIED,
    OFFICER_DECIDED,
    SAFETY_REFUSAL,
    TURN_FAILED,
)
from credit.lifecycle import (
    OFFICER_DECIDES,
    STANDING_KINDS,
    CaseLife,
    Lives,
    WorkItem,
    fold,
    fold_all,
)
from credit.models import Case, stored_case
from credit.notice_format import Notice, NoticeBasis
from credit.notices.outbox import Outbox, notice_file_problem
from credit.notices.render import render_notice
from credit.policy import PolicyRegistry
from credit.roles import Actor, Role
from credit.underwriters.runtime import failure_payload

__all__ = ["LIFE_PAGE", "PENDING_MARK", "RETRIES", "CaseWork", "NoticeOutcome"]

# How many times an action is judged again when the case moved under it (another
# worker's entry landed between the read and the write).
RETRIES: Final = 5
# Cases whose entries are read at a time when every case is looked at for pending work.
LIFE_PAGE: Final = 1000
# The mark (Store.mark) of the cases the last search for pending work found pending.
PENDING_MARK: Final = "casework.pending"
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class NoticeOutcome:
    """How a notice step ended: ``sent``, ``blocked`` (a person must act) or ``failed``."""

    kind: str
    entry: Entry


@dataclass(frozen=True, slots=True)
class _Verified:
    """A notice rendered, verified and its verification journaled, not yet sent. A
    notice a crash left in the outbox after its verification was journaled, before
    its sending was, has ``notice`` None: its bytes are there, exactly the verified
    ones, and only the sending is left to journal."""

    life: CaseLife
    entry: Entry  # the notice.verified entry
    notice: Notice | None
    report: VerificationReport | None

    @property
    def case_id(self) -> str:
        return self.life.case_id


class CaseWork:
    """The work on the cases of one store (thread-safe: every write is conditioned on
    the case's latest entry)."""

    def __init__(
        self,
        store: Store,
        outbox: Outbox,
        *,
        registry: PolicyRegistry | None = None,
        keystone: Keystone | None = None,
        verifier: Verifier | None = None,
        clock: Clock | None = None,
        catalogue: Catalogue | None = None,
    ) -> None:
        self.store = store
        self.outbox = outbox
        self.registry = registry or PolicyRegistry.bundled()
        self.keystone = keystone or Keystone(store, registry=self.registry)
        self._lives = Lives(self.registry)  # a case's life folded on as its entries grow
        self.verifier = verifier or Verifier()
        self.clock = clock or clock_from_env()
        self.catalogue = catalogue or default_catalogue()

    # ------------------------------------------------------------------ reading

    def today(self) -> dt.date:
        return self.clock.now().astimezone(dt.UTC).date()

    def life(self, case_id: str) -> CaseLife:
        """The case's life from its entries, each one's MAC verified first: an entry
        the writer's key did not mark is never acted on (JournalIntegrityError)."""
        return self._lives(case_id, self.store.authentic_entries(case_id))

    def standing(self, case_id: str) -> tuple[Mapping[str, Any] | None, CaseLife]:
        """The case's document (None: never taken in) and its life, read together
        (:meth:`credit.journal.base.Store.case_standing`), the system's pending work on
        it finished first (:meth:`finish`), as rare as a worker killed half way."""
        document, entries = self.store.case_standing(case_id)
        life = fold(case_id, entries, self.registry)
        if document is not None and life.system_work is not None:
            life = self.finish(case_id)
        return document, life

    def lives(self) -> dict[str, CaseLife]:
        """Every case's life, in the order the cases first appear in the journal (every
        entry's MAC verified first, as in :meth:`life`)."""
        return fold_all(self.store.authentic_entries(), self.registry)

    def queue(self, *, finish: bool = True) -> list[WorkItem]:
        """Every open work item, most urgent first (then in the order opened). With
        ``finish`` (the default) the system first finishes its own pending work. The
        journal is read a page of cases at a time (:meth:`_standings`), never held
        whole: the queue's memory grows with its items, not with the journal."""
        items = []
        pool: ComparisonPool | None = None
        for life in self._standings():
            if finish and life.system_work is not None:
                if pool is None:
                    pool = self.keystone.equipoise.pool()
                life = self.finish(life.case_id, pool=pool)
            if life.item is not None:
                items.append(life.item)
        return sorted(items, key=lambda i: (i.deadline, i.opened_seq))

    def _standings(self, case_ids: Sequence[str] | None = None) -> Iterator[CaseLife]:
        """Where each case stands (its state, work item and system work), folded a page
        of cases at a time (:data:`LIFE_PAGE`) from the entries that say it
        (:data:`credit.lifecycle.STANDING_KINDS`; not the turns' transcripts, the
        largest), each entry's hash and MAC verified as it is read. Such a life's
        ``last_seq`` is its last standing entry's: never the ``after`` of a write
        (:meth:`life` reads the case whole). A case with an entry has a document
        (intake stores both in one commit), so the cases are those the store holds
        documents for (:meth:`Store.case_ids`), in the order taken in; or
        ``case_ids``, in their order."""
        if case_ids is None:
            case_ids = self.store.case_ids()
        for start in range(0, len(case_ids), LIFE_PAGE):
            page = case_ids[start : start + LIFE_PAGE]
            entries = self.store.case_entries(page, STANDING_KINDS)
            for case_id in page:
                yield fold(case_id, entries.get(case_id, ()), self.registry)

    # ------------------------------------------------------------------ the system's work

    def finish_pending(self) -> dict[str, CaseLife]:
        """Finish the system's pending work on every case (a review, a notice), found a
        page of cases at a time (:meth:`_standings`): what a run and a service worker
        do first holds one page in memory, never the whole journal (the queue does the
        same as it goes). The lives of the cases that had work, as they stand after
        (read whole).

        The cases looked at are those the last search left pending or that have an
        entry saying where they stand since it (the mark :data:`PENDING_MARK`): a case
        stands where its entries put it, so one with no such entry since stands where
        that search found it. Without a mark, every case. Each search keeps a new mark,
        made on the head it read before it began (an entry written meanwhile is after
        the mark, and its case is looked at again next time), so a start reads what
        the journal gained since the last, not the whole journal."""
        head = self.store.tree_head()[0]
        kept = self._pending_mark()
        candidates = (
            None
            if kept is None
            else self.store.touched_cases(kept[0], STANDING_KINDS, including=kept[1])
        )
        found: list[str] = []
        done: dict[str, CaseLife] = {}
        pool: ComparisonPool | None = None
        for standing in self._standings(candidates):
            if standing.system_work is None:
                continue
            found.append(standing.case_id)
            if pool is None:
                pool = self.keystone.equipoise.pool()
            done[standing.case_id] = self.finish(standing.case_id, pool=pool)
        if kept is None or head > kept[0] or found != kept[1]:
            self.store.put_mark(PENDING_MARK, head, {"pending": found})
        return done

    def _pending_mark(self) -> tuple[int, list[str]] | None:
        """The kept mark of pending work: the entry it was made on and the cases it
        names; None without one (or with one this code does not keep: then every case
        is read, as without one)."""
        mark = self.store.mark(PENDING_MARK)
        named = None if mark is None else mark.data.get("pending")
        if mark is None or not isinstance(named, list):
            return None
        if not all(isinstance(c, str) for c in named):
            return None
        return mark.seq, named

    def keep_pending(self, seen: Sequence[int], pending: Collection[str]) -> bool:
        """After a batch, keep the mark of pending work (:data:`PENDING_MARK`) made on
        the head now, from where the batch saw its cases stand, so that the next start
        does not fold the batch's cases again. ``seen``: the seq of each case's latest
        entry when the batch read where it stood, sorted; ``pending``: those of its
        cases that had system work then.

        A case with an entry since the kept mark whose latest entry is one the batch
        saw as a case's latest (seqs are the entries', so it is that case's) has had no
        entry since the batch read it: it stands where the batch saw it. Any other case
        with an entry since (another writer's, a start's) is folded again; a case the
        kept mark named that has none since stays named. Whether a mark was kept (none
        without a mark to start from)."""
        head = self.store.tree_head()[0]
        kept = self._pending_mark()
        if kept is None:
            return False
        since, named = kept
        still = set(named)
        found: list[str] = []
        again: list[str] = []
        for case_id, latest in self.store.latest_seqs(since):
            still.discard(case_id)
            at = bisect.bisect_left(seen, latest)
            if at < len(seen) and seen[at] == latest:
                if case_id in pending:
                    found.append(case_id)
            else:
                again.append(case_id)
        found.extend(c for c in named if c in still)
        found.extend(life.case_id for life in self._standings(again) if life.system_work)
        self.store.put_mark(PENDING_MARK, head, {"pending": found})
        return True

    def finish(
        self, case_id: str, *, pool: ComparisonPool | None = None, notify: bool = True
    ) -> CaseLife:
        """Finish the system's work on one case: review an undecided gate, send a
        released decision's notice (``notify`` false: stop before the notice, which a
        batch sends once its release is durable). A step that fails is journaled once
        as ``turn.failed`` (a person takes the case over)."""
        for _ in range(RETRIES * 2):
            life = self.life(case_id)
            work = life.system_work
            if work is None or (work == "notice" and not notify):
                return life
            try:
                if work == "review":
                    self.keystone.run_review(case_id, pool=pool, life=life)
                else:
                    self._notify(life)
            except StaleCaseError:
                continue  # another worker moved the case: read it again
            except Exception as err:
                self._fail(life, work, err)
        return self.life(case_id)

    def _fail(self, before: CaseLife, stage: str, err: BaseException) -> None:
        """Journal the failure of a step, once, after whatever the step journaled before
        it failed (Equipoise's review when Backstop's raised; the notice's verification
        when the send raised), so the step is never run again. If the case moved to
        other work meanwhile (another worker), the next pass reads where it stands."""
        payload = failure_payload(stage, err)
        if before.decision is not None:
            payload.update(before.decision.ref)
        now = self.life(before.case_id)
        if now.system_work != stage or _decision_seq(now) != _decision_seq(before):
            return
        with contextlib.suppress(StaleCaseError):
            self.store.append(before.case_id, TURN_FAILED, payload, after=now.last_seq)

    def _case(self, case_id: str) -> Case:
        document = self.store.get_case(case_id)
        if document is None:
            raise NoticeError("the case document is missing from the store", case_id=case_id)
        return stored_case(document)

    def notify(self, case_id: str) -> CaseLife:
        """The notice step for one case (when its state is ``notice-pending``)."""
        return self.finish(case_id)

    def _notify(self, life: CaseLife) -> NoticeOutcome:
        """The notice step of one case: verified, sent, each journaled."""
        step = self._verify_notice(life)
        if isinstance(step, NoticeOutcome):
            return step
        return self._journal_delivery(step, self._deliver(step))

    def send_notices(self, case_ids: Sequence[str]) -> None:
        """The notice step for many cases (those whose state is ``notice-pending``), in
        three steps instead of a commit per notice: every notice rendered, verified and
        its verification journaled, in one commit; then each verified notice written to
        the outbox; then every sending journaled, in one commit. A crash between the
        steps loses nothing and sends nothing twice: the next run finds a verified
        notice whose exact bytes are already in the outbox and journals its sending
        (:meth:`_already_in_outbox`), and renders, verifies and sends again any notice
        that did not reach the outbox. A step that fails for one case is journaled for
        that case (``turn.failed``, or ``notice.blocked`` for a send the outbox refused)
        and the others go on; a case another writer moved meanwhile is finished alone."""
        if not case_ids:
            return  # no commit to make
        verified: list[_Verified] = []
        alone: list[str] = []
        with self.store.group_commit(case_ids):
            for case_id in case_ids:
                life = self.life(case_id)
                if life.system_work != "notice":
                    continue
                try:
                    step = self._verify_notice(life)
                except StaleCaseError:
                    alone.append(case_id)
                    continue
                except Exception as err:
                    self._fail(life, "notice", err)
                    continue
                if isinstance(step, _Verified):
                    verified.append(step)
        delivered = list(zip(verified, self._deliver_all(verified), strict=True))
        if delivered:  # else every notice was blocked or failed: nothing to journal
            with self.store.group_commit([step.case_id for step in verified]):
                for step, delivery in delivered:
                    try:
                        self._journal_delivery(step, delivery)
                    except StaleCaseError:
                        alone.append(step.case_id)
                    except Exception as err:
                        self._fail(step.life, "notice", err)
        for case_id in alone:
            self.finish(case_id)

    def _verify_notice(self, life: CaseLife) -> NoticeOutcome | _Verified:
        """Render the released decision's notice, dated today, verify it (V1-V8) and
        journal the verification; a notice that fails is blocked (a typed refusal)."""
        decision = life.decision
        assert decision is not None and life.state == "notice-pending"
        case_id = life.case_id
        kept = self._already_in_outbox(life)
        if kept is not None:
            return kept
        case = self._case(case_id)
        try:
            basis = NoticeBasis.from_record(case, decision.wire, decision.reasons, decision.offer)
        except NoticeError as err:
            return self._block(life, None, err.message)
        today = self.today()
        notice = render_notice(case, basis, notice_date=today, catalogue=self.catalogue)
        report = self.verifier.verify(notice, expectation_for(case, basis, notice_date=today))
        verified = self.store.append(
            case_id,
            NOTICE_VERIFIED,
            {
                **decision.ref,
                "noticeSha256": report.notice_sha256,
                "noticeDate": today.isoformat(),
                "passed": report.passed,
                "failed": list(report.failed),
                "report": report.to_wire(),
            },
            after=life.last_seq,
        )
        boundary = unverified_notice_send(notice.sha256, report, case_id=case_id)
        verdict = safety_verdict(boundary)
        refusal = build_refusal_surface(verdict)
        if refusal is not None:
            entry = self.store.append(
                case_id,
                NOTICE_BLOCKED,
                {
                    **decision.ref,
                    "noticeSha256": notice.sha256,
                    "reason": boundary.detail,
                    "failed": list(report.failed),
                },
                after=verified.seq,
            )
            self.store.append(
                case_id,
                SAFETY_REFUSAL,
                {
                    "stage": "notice",
                    **decision.ref,
                    "boundaries": list(verdict.violated),
                    "surface": refusal,
                },
                after=entry.seq,
            )
            return NoticeOutcome(NOTICE_BLOCKED, entry)
        return _Verified(life, verified, notice, report)

    def _already_in_outbox(self, life: CaseLife) -> _Verified | None:
        """The case's verified notice when the outbox already holds exactly its bytes
        (a crash after the notice was written, before its sending was journaled): it
        was sent, and only the journal is behind. None otherwise."""
        entry = life.verified
        if entry is None or entry.payload.get("passed") is not True:
            return None
        sha256 = entry.payload.get("noticeSha256")
        data = self.outbox.notice_bytes(life.case_id)
        if not isinstance(sha256, str) or notice_file_problem(data, sha256) is not None:
            return None
        return _Verified(life, entry, None, None)

    def _deliver(self, step: _Verified) -> Exception | None:
        """Put the verified notice in the outbox (nothing to do for one already there);
        what stopped it, if anything."""
        return self._deliver_all([step])[0]

    def _deliver_all(self, steps: Sequence[_Verified]) -> list[Exception | None]:
        """:meth:`_deliver` for many notices, sent together (:meth:`Outbox.send_all`)."""
        sending = [
            (s.notice, s.report) for s in steps if s.notice is not None and s.report is not None
        ]
        try:
            outcomes = iter(self.outbox.send_all(sending))
        except Exception as err:  # the outbox itself failed: each of them failed with it
            outcomes = iter([err] * len(sending))
        problems: list[Exception | None] = []
        for step in steps:
            if step.notice is None or step.report is None:
                problems.append(None)  # already in the outbox
                continue
            outcome = next(outcomes)
            problems.append(outcome if isinstance(outcome, Exception) else None)
        return problems

    def _journal_delivery(self, step: _Verified, problem: Exception | None) -> NoticeOutcome:
        """Journal how the delivery ended: sent, blocked (the outbox refused the send),
        or raise what stopped it (the caller journals it as a failure)."""
        decision = step.life.decision
        assert decision is not None
        payload = step.entry.payload
        if isinstance(problem, SendRefusedError):
            entry = self.store.append(
                step.case_id,
                NOTICE_BLOCKED,
                {
                    **decision.ref,
                    "noticeSha256": payload["noticeSha256"],
                    "reason": problem.message,
                },
                after=step.entry.seq,
            )
            return NoticeOutcome(NOTICE_BLOCKED, entry)
        if problem is not None:
            raise problem
        entry = self.store.append(
            step.case_id,
            NOTICE_SENT,
            {
                **decision.ref,
                "noticeSha256": payload["noticeSha256"],
                "noticeDate": payload["noticeDate"],
                "decision": decision.decision,
            },
            after=step.entry.seq,
        )
        return NoticeOutcome(NOTICE_SENT, entry)

    def _block(self, life: CaseLife, sha256: str | None, why: str) -> NoticeOutcome:
        assert life.decision is not None
        entry = self.store.append(
            life.case_id,
            NOTICE_BLOCKED,
            {**life.decision.ref, "noticeSha256": sha256, "reason": why},
            after=life.last_seq,
        )
        return NoticeOutcome(NOTICE_BLOCKED, entry)

    # ------------------------------------------------------------------ a person's action

    def _retrying(self, act: Callable[[], _T]) -> _T:
        """Run a person's action, judging it again if the case moved under it."""
        for attempt in range(RETRIES):
            try:
                return act()
            except StaleCaseError:
                if attempt == RETRIES - 1:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def release(self, case_id: str, actor: Actor, reason: str) -> tuple[GateAction, CaseLife]:
        """A reviewer's release (the first approves, a second releases: four eyes); a
        released decline or counteroffer then gets its notice."""
        action = self._retrying(lambda: self.keystone.release(case_id, actor, reason))
        return action, self.finish(case_id)

    def reject(self, case_id: str, actor: Actor, reason: str) -> CaseLife:
        """A reviewer rejects a held decision: a credit officer must decide the case."""
        self._retrying(lambda: self.keystone.reject(case_id, actor, reason))
        return self.life(case_id)

    def officer_decide(self, case_id: str, actor: Actor, request: OfficerDecision) -> CaseLife:
        """A credit officer decides a case at a person's work item. The decision goes
        through the Keystone gate; once released, a decline or counteroffer gets its
        notice rendered from the recorded reasons, verified and sent."""
        _require(actor, Role.OFFICER, "decide a case")

        def act() -> Entry:
            life = self.finish(case_id)
            if life.state not in OFFICER_DECIDES or life.item is None:
                raise CaseStateError(
                    f"cannot decide: case {case_id} is {life.state}; a credit officer "
                    f"decides a case that is {', '.join(OFFICER_DECIDES)}",
                    case_id=case_id,
                    state=life.state,
                )
            case = self._case(case_id)
            policy = self.registry.in_force(case.as_of)
            completed = build_officer_decision(
                case,
                request,
                policy=policy,
                catalogue=self.catalogue,
                actor=actor,
                item_kind=life.item.kind,
            )
            payload: dict[str, Any] = {
                "decision": completed.decision.to_wire(),
                **completed.payload(),
                "status": "held",
                "heldFor": "keystone",
                "officer": actor.to_wire(),
                "why": request.why.strip(),
                "item": {"kind": life.item.kind, "openedSeq": life.item.opened_seq},
                "policy": {"name": policy.name, "version": policy.version, "sha256": policy.sha256},
            }
            number = (life.decision.number if life.decision is not None else 0) + 1
            payload = named_decision(case_id, OFFICER_DECIDED, payload, number)
            return self.store.append(case_id, OFFICER_DECIDED, payload, after=life.last_seq)

        self._retrying(act)
        return self.finish(case_id)

    def withdraw(self, case_id: str, actor: Actor, why: str) -> CaseLife:
        """Record that the applicant withdrew the application (a final action)."""
        _require(actor, Role.OFFICER, "record a withdrawal")
        if not why.strip():
            raise CaseStateError(
                "a withdrawal says why (how the applicant withdrew)",
                case_id=case_id,
                state="?",
            )

        def act() -> Entry:
            life = self.life(case_id)
            if life.accepted is None:
                raise CaseStateError(
                    "cannot withdraw: no case with this id was taken in",
                    case_id=case_id,
                    state="unknown",
                )
            if life.final:
                raise CaseStateError(
                    f"cannot withdraw: case {case_id} is already at a final action ({life.state})",
                    case_id=case_id,
                    state=life.state,
                )
            return self.store.append(
                case_id,
                CASE_WITHDRAWN,
                {
                    "by": actor.name,
                    "keyId": actor.key_id,
                    "why": why.strip(),
                    "state": life.state,
                    **(life.decision.ref if life.decision is not None else {DECISION_ID: None}),
                },
                after=life.last_seq,
            )

        self._retrying(act)
        return self.life(case_id)


def _decision_seq(life: CaseLife) -> int | None:
    return life.decision.seq if life.decision is not None else None


def _require(actor: Actor, role: Role, what: str) -> None:
    if actor.role is not role:
        raise AccessError(
            f"the {actor.role.value} role may not {what} (the {role.value} role does)",
            status=403,
            principal=actor.name,
            role=actor.role.value,
        )
