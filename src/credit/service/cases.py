"""What the service does with a case, apart from HTTP: the API and the console share it.

Each operation reads and writes through the governed core only (Onramp intake, the
Spark runtime, :class:`~credit.casework.CaseWork`: the Keystone gate, a person's
actions, the notice step); this module adds the service's own rules:

- **The system finishes its own work** at start-up (:meth:`CaseService.start`) and on
  every read of a case: a decision a killed worker left awaiting review is reviewed, a
  released decline's notice is sent, never left to a person.
- **Decide exactly once.** A decide takes the ``decide:<caseId>`` claim
  (:mod:`credit.service.claims`), then reads the case, and whether it is still
  undecided, in its group commit under the journal's write lock: of any number of
  concurrent decides, across worker processes, one runs the turn and the Keystone
  review; every other gets :class:`~credit.errors.AlreadyDecidedError` (409) and
  changes nothing (a claim found held: the journal says whether the case is decided
  or a decide is under way). A case whose own content stopped its turn (a term the policy
  does not offer) is a 422 naming the field on the first decide and on every one after,
  which journal nothing.
- **A person's action, once.** Every action (release, reject, an officer's decision, a
  withdrawal) is judged on the case's state and lands only if the case has not moved
  since (the journal's ``after``): a second, concurrent action is 409 naming the state.
- **Views by role.** A case's view carries the Keystone reviews and their findings only
  for the reviewer, the officer and the auditor (the comparative review reads
  monitoring data).
"""

from __future__ import annotations

import datetime as dt
import logging
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, Final

from credit.casework import CaseWork
from credit.clock import Clock
from credit.errors import (
    AlreadyDecidedError,
    CreditError,
    InputError,
    NoticeError,
    ServiceError,
)
from credit.governance.keystone import Keystone, status_of
from credit.governance.officer import OfficerDecision
from credit.governance.onramp import intake
from credit.guardrails.expectation import expectation_for
from credit.guardrails.report import VerificationReport
from credit.guardrails.verifier import Verifier
from credit.journal.base import ChainReport, Store
from credit.journal.cadence import (
    DEFAULT_CHECKPOINT_INTERVAL_S,
    CheckpointCadence,
    failure_summary,
)
from credit.journal.verified import keep_tree, resume_kept_tree
from credit.lifecycle import CaseLife
from credit.models import parse_case
from credit.notice_format import Notice, NoticeBasis
from credit.notices.outbox import Outbox
from credit.notices.render import NOTICE_DECISIONS, render_notice
from credit.policy import PolicyRegistry
from credit.service.claims import Claims
from credit.service.roles import Principal, Role
from credit.underwriters.rules import RulesUnderwriter
from credit.underwriters.runtime import SparkRuntime, Underwriter

__all__ = ["CaseService", "NoticeView"]

READS_REVIEWS: Final = frozenset({Role.REVIEWER, Role.OFFICER, Role.AUDITOR})
_log = logging.getLogger("credit.service")


@dataclass(frozen=True, slots=True)
class NoticeView:
    """A decline's or counteroffer's notice: as sent (or blocked), or as it would be
    sent today, with its verification report."""

    notice: Notice
    report: VerificationReport
    delivery: str  # "sent", "blocked" or "not-sent"

    def to_wire(self) -> dict[str, Any]:
        return {
            "caseId": self.notice.case_id,
            "noticeSha256": self.notice.sha256,
            "verified": self.report.passed,
            "delivery": self.delivery,
            "notice": self.notice.to_wire(),
            "report": self.report.to_wire(),
        }


class CaseService:
    """The service's operations over one store (thread-safe; one per process)."""

    def __init__(
        self,
        store: Store,
        outbox: Outbox,
        claims: Claims,
        *,
        registry: PolicyRegistry | None = None,
        underwriter: Underwriter | None = None,
        claim_stale_after_s: float = 300.0,
        clock: Clock | None = None,
        checkpoints: Path | None = None,
        checkpoint_interval_s: float = DEFAULT_CHECKPOINT_INTERVAL_S,
    ) -> None:
        self.store = store
        self.checkpoints = checkpoints
        # The tree head signed into ``checkpoints`` at most once an interval while
        # writes come (0: after every write, before its answer; ADR-0003).
        self.cadence = (
            None
            if checkpoints is None
            else CheckpointCadence(store, checkpoints, interval_s=checkpoint_interval_s)
        )
        self.outbox = outbox
        self.claims = claims
        self.registry = registry or PolicyRegistry.bundled()
        self.underwriter: Underwriter = underwriter or RulesUnderwriter(self.registry)
        self.runtime = SparkRuntime(store, registry=self.registry)
        self.keystone = Keystone(store, registry=self.registry)
        self.verifier = Verifier()
        self.work = CaseWork(
            store,
            outbox,
            registry=self.registry,
            keystone=self.keystone,
            verifier=self.verifier,
            clock=clock,
        )
        self.claim_stale_after_s = claim_stale_after_s

    def start(self) -> None:
        """At start-up: take the journal's tree as the last run or worker kept it
        (:func:`~credit.journal.verified.resume_kept_tree`: only the leaves after it
        are read), finish what a killed worker left half way (reviews, notices), sign
        the journal's head as it stands (a killed worker's last entries may wait for a
        signature), then start signing at the interval."""
        resume_kept_tree(self.store)
        self.work.finish_pending()
        if self.cadence is not None:
            self.cadence.cover_journal()
            self.cadence.start()

    def close(self) -> None:
        """Sign what this worker wrote that no checkpoint covers yet, keep the
        comparison pool this worker read (:meth:`ComparisonPool.keep`: the next worker,
        or run, starts from it instead of reading every decision again) and the tree
        it grew (:func:`~credit.journal.verified.keep_tree`), then end the tool
        sessions the worker threads kept open for their turns. The pool and the tree
        are caches: if one cannot be kept, that is logged and the close goes on."""
        if self.cadence is not None:
            self.cadence.close()
        try:
            try:
                self.keystone.equipoise.pool_of_reviews().keep()
            except CreditError as err:
                _log.warning("the comparison pool was not kept: %s", err)
            try:
                keep_tree(self.store)
            except CreditError as err:
                _log.warning("the tree was not kept: %s", err)
        finally:
            self.runtime.close()

    def committed(self) -> None:
        """After a request that wrote: its entries are to be signed into the
        checkpoints folder (when one is set), by the cadence within an interval, or
        before the answer with an interval of 0 (:class:`CheckpointCadence`; a head
        another worker signed after them covers them and nothing is signed)."""
        if self.cadence is not None:
            self.cadence.wrote()

    def write_refusal(self) -> ServiceError | None:
        """Why no request may write now, else None: the journal's latest entries wait
        for a signature that failed (the journal cut or rewritten below the newest
        checkpoint, or the folder not writable). Nothing more is recorded over a head
        that cannot be signed; ``GET /healthz`` says why too."""
        refused = None if self.cadence is None else self.cadence.refusal()
        if refused is None:
            return None
        return ServiceError(
            f"the journal's tree head could not be signed ({failure_summary(refused)}; "
            "the server's log says why); nothing was recorded: the service takes no "
            "writes until it can sign",
            status=503,
        )

    # ------------------------------------------------------------------ claims

    @contextmanager
    def _claimed(
        self, name: str, busy: ServiceError, *, taken: Callable[[], None] | None = None
    ) -> Iterator[None]:
        """Run the block holding claim ``name``; raise ``busy`` if another holds it
        (after ``taken``, which may raise what the claim being held means: the work it
        claimed is done). The claim is kept when the block succeeds (the work is done),
        given up if not."""
        holder = uuid.uuid4().hex
        if not self.claims.claim(name, holder, stale_after_s=self.claim_stale_after_s):
            if taken is not None:
                taken()
            raise busy
        try:
            yield
        except BaseException:
            self.claims.release(name, holder)
            raise

    # ------------------------------------------------------------------ reads

    def _document(self, case_id: str) -> Mapping[str, Any]:
        document = self.store.get_case(case_id)
        if document is None:
            raise ServiceError(
                "no case with this id has been taken in", status=404, case_id=case_id
            )
        return document

    def life(self, case_id: str) -> CaseLife:
        """The case's life (404 if never taken in), with the system's pending work on it
        finished first. Its entries only: the case's document is not read."""
        life = self.work.life(case_id)
        if life.accepted is None:  # intake journals intake.accepted with the document:
            self._document(case_id)  # a case stored without it is one if it has a document
        if life.system_work is not None:  # as rare as a worker killed half way
            life = self.work.finish(case_id)
        # Pending system work it finished (after a killed worker) is signed as a
        # write's is: the cadence is told of this thread's commits.
        self.committed()
        return life

    def _standing(self, case_id: str) -> tuple[Mapping[str, Any], CaseLife]:
        """The case's document and life (404 if never taken in), its pending system
        work finished first."""
        document, life = self.work.standing(case_id)
        # Pending system work it finished (after a killed worker) is signed as a
        # write's is: the cadence is told of this thread's commits.
        self.committed()
        if document is None:
            raise ServiceError(
                "no case with this id has been taken in", status=404, case_id=case_id
            )
        return document, life

    def view(
        self,
        case_id: str,
        principal: Principal,
        *,
        life: CaseLife | None = None,
    ) -> dict[str, Any]:
        """A case's standing: its state and work item, the decision, the gate, the
        notice; reviews by role. ``life``: the case's life as a write that just
        committed left it (else it is read, the system's pending work finished first).
        Read from the case's entries alone: the product and the case date are those
        its intake.accepted entry journaled (from the document it took in), so a status
        read does not read, parse and check the document (docs/service.md)."""
        life = self.life(case_id) if life is None else life
        status = status_of(life)
        decision = life.decision
        product, as_of = self._taken_in(case_id, life)
        today = self.work.today()
        view: dict[str, Any] = {
            "caseId": case_id,
            "product": product,
            "asOf": as_of,
            "life": life.state,
            "final": life.final,
            "item": life.item.to_wire(today) if life.item is not None else None,
            "state": status.state,
            "refused": life.state == "refused",
            "decision": dict(decision.wire) if decision is not None else None,
            "decisionEntry": decision.seq if decision is not None else None,
            "decisionBy": decision.by if decision is not None else None,
            "underwriter": status.underwriter,
            "decidedBy": status.decided_by,
            "approvedBy": list(status.approved_by),
            "reason": status.reason,
            "notice": self._notice_state(life),
        }
        if life.refused is not None and life.state == "refused":
            view["refusal"] = list(life.refused.payload.get("boundaries", []))
        if principal.role in READS_REVIEWS:
            view["reviews"] = {
                name: {"passed": r.passed, "findings": [f.to_wire() for f in r.findings]}
                for name, r in sorted(status.reviews.items())
            }
        return view

    def _taken_in(self, case_id: str, life: CaseLife) -> tuple[Any, Any]:
        """The case's product and date as its intake.accepted entry journaled them; for
        an entry of an earlier form that does not state both, as its document does."""
        accepted = life.accepted.payload if life.accepted is not None else {}
        product, as_of = accepted.get("product"), accepted.get("asOf")
        if isinstance(product, str) and isinstance(as_of, str):
            return product, as_of
        document = self._document(case_id)
        application = document.get("application")
        named = application.get("product") if isinstance(application, Mapping) else None
        return named, document.get("asOf")

    @staticmethod
    def _notice_state(life: CaseLife) -> str:
        decision = life.decision
        if decision is None or decision.decision not in NOTICE_DECISIONS:
            return "none"
        if life.sent is not None:
            return "sent"
        if life.state == "notice-blocked":
            return "blocked"
        if life.state == "rejected":
            return "rejected"
        if life.state == "notice-pending":
            return "ready"
        return "awaiting-release"

    def queue(self) -> list[dict[str, Any]]:
        """Every open work item with its clock, most urgent first (the system's pending
        work is finished first)."""
        today = self.work.today()
        return [item.to_wire(today) for item in self.work.queue()]

    def journal(self, case_id: str) -> list[dict[str, Any]]:
        self._document(case_id)
        return [e.to_wire() for e in self.store.entries(case_id)]

    def verify(self) -> ChainReport:
        return self.store.verify()

    # ------------------------------------------------------------------ writes

    def take_in(self, raw: Any) -> dict[str, Any]:
        """Onramp intake; InputError (naming the field) for a bad case."""
        if not isinstance(raw, Mapping):
            raise InputError(f"a case must be a JSON object, got {_json_type(raw)}")
        case_id = raw.get("caseId")
        # One group commit: the case, its monitoring rows and its entries land together
        # (one durable commit), or, for a case refused, nothing at all.
        with self.store.group_commit([case_id] if isinstance(case_id, str) else []):
            result = intake(raw, self.store, registry=self.registry)
        self.committed()
        return {
            "caseId": result.case_id,
            "takenIn": result.taken_in,
            "digest": result.digest,
            "moved": [r.path for r in result.moved],
        }

    def decide(self, case_id: str, principal: Principal) -> dict[str, Any]:
        """Run the governed underwriter turn and the Keystone review, exactly once."""
        busy = AlreadyDecidedError(
            "this case is being decided by another request; nothing was changed",
            case_id=case_id,
        )
        # A claim held is a decide under way, or one done (its claim is kept): the
        # case's journal says which, and a case decided before is refused with why.
        # The claim is taken first, the case read under it: a case never taken in is a
        # 404 whose claim is given up at once.
        claimed = self._claimed(f"decide:{case_id}", busy, taken=lambda: self._decided(case_id))
        with claimed:
            # The turn and the Keystone review are one group commit (one durable commit,
            # the case read once): a worker killed inside leaves nothing, and the case
            # is decided again once its claim is stale. The notice follows in a commit
            # of its own, once the release it depends on is durable. Whether the case is
            # still undecided is read inside it, under the write lock.
            with self.store.group_commit([case_id]):
                # The case's document as the group read it (checked against its intake
                # digest there): a case never taken in is a 404, its claim given up.
                self._document(case_id)
                self._not_decided(case_id)
                result = self.runtime.run_turn(case_id, self.underwriter, serve=True)
                life = self.work.finish(case_id, notify=False)
            if isinstance(result.error, InputError) and result.decision_entry is None:
                raise result.error  # 422 naming the field; the failed turn is journaled
            # The notice's commit only when there is work left (a released decline or
            # counteroffer to notify): an approval, a referral or a held decision is done.
            if life.system_work is not None:
                with self.store.group_commit([case_id]):
                    life = self.work.finish(case_id)
        self.committed()
        return self.view(case_id, principal, life=life)

    def _decided(self, case_id: str) -> None:
        """Why a case whose decide claim is held may not be decided (404, 409, 422); a
        return means a decide of it is under way."""
        self._document(case_id)
        self._not_decided(case_id)

    def _not_decided(self, case_id: str) -> None:
        life = self.work.life(case_id)
        if life.state == "received":
            return
        failed = life.failed.payload if life.failed is not None else {}
        if life.state == "failed" and failed.get("input") is True:
            # The case's own content stopped its turn: the same 422 naming the field on
            # every decide, and nothing journaled again.
            field = failed.get("field")
            raise InputError(
                str(failed.get("message") or failed.get("error")),
                case_id=case_id,
                field=field if isinstance(field, str) else None,
            )
        if life.state in ("refused", "failed"):
            raise AlreadyDecidedError(
                f"this case's underwriter turn was {life.state}; it is not decided again "
                "(a credit officer takes it from here) and nothing was changed",
                case_id=case_id,
            )
        seq = life.decision.seq if life.decision is not None else life.last_seq
        raise AlreadyDecidedError(
            f"this case is already decided (journal entry {seq}); a case is decided "
            "exactly once and nothing was changed",
            case_id=case_id,
        )

    def release(self, case_id: str, principal: Principal, reason: str) -> dict[str, Any]:
        """A reviewer's release: the first approves, a second releases (four eyes)."""
        self._document(case_id)
        self.work.release(case_id, principal, reason)
        self.committed()
        return self.view(case_id, principal)

    def reject(self, case_id: str, principal: Principal, reason: str) -> dict[str, Any]:
        self._document(case_id)
        self.work.reject(case_id, principal, reason)
        self.committed()
        return self.view(case_id, principal)

    def manual_decision(
        self,
        case_id: str,
        principal: Principal,
        *,
        decision: str,
        reasons: list[str],
        why: str,
        amount: Decimal | None = None,
        term_months: int | None = None,
        credit_line: Decimal | None = None,
        apr: Decimal | None = None,
    ) -> dict[str, Any]:
        """A credit officer decides a case at a person's work item."""
        self._document(case_id)
        if decision not in ("approve", "decline", "counteroffer"):
            raise InputError(
                f"a person decides approve, decline or counteroffer, not {decision!r}",
                case_id=case_id,
                field="decision",
            )
        request = OfficerDecision(
            decision=decision,  # type: ignore[arg-type]
            reason_codes=tuple(reasons),
            why=why,
            amount=amount,
            term_months=term_months,
            credit_line=credit_line,
            apr=apr,
        )
        self.work.officer_decide(case_id, principal, request)
        self.committed()
        return self.view(case_id, principal)

    def withdraw(self, case_id: str, principal: Principal, why: str) -> dict[str, Any]:
        self._document(case_id)
        self.work.withdraw(case_id, principal, why)
        self.committed()
        return self.view(case_id, principal)

    def notice(self, case_id: str, *, preview: bool = False) -> NoticeView:
        """The notice of a released decline or counteroffer: the one sent (or blocked),
        re-rendered from the record and its journaled date; before it is sent, as it
        would be sent today. ``preview``: also for a decision not released yet (a
        reviewer reads what would be sent). Journals nothing."""
        document, life = self._standing(case_id)
        decision = life.decision
        if decision is None:
            raise ServiceError("no decision is recorded yet", status=409, case_id=case_id)
        if decision.decision not in NOTICE_DECISIONS:
            raise ServiceError(
                f"a {decision.decision} takes no adverse-action notice",
                status=404,
                case_id=case_id,
            )
        if life.gate.released is None and not (preview and not life.final):
            raise ServiceError(
                f"the decision is {life.state}, not released: its notice is not issued",
                status=409,
                case_id=case_id,
            )
        case = parse_case(dict(document))
        try:
            basis = NoticeBasis.from_record(case, decision.wire, decision.reasons, decision.offer)
        except NoticeError as err:
            raise ServiceError(err.message, status=409, case_id=case_id) from None
        dated = life.sent or life.verified
        day = self.work.today()
        if dated is not None and isinstance(dated.payload.get("noticeDate"), str):
            day = dt.date.fromisoformat(str(dated.payload["noticeDate"]))
        notice = render_notice(case, basis, notice_date=day)
        report = self.verifier.verify(notice, expectation_for(case, basis, notice_date=day))
        if life.sent is not None:
            # A sent notice is served only while the kept file and this rendering are
            # still the bytes the journal says were sent.
            journaled = str(life.sent.payload.get("noticeSha256"))
            self.outbox.read(case_id, journaled)
            if notice.sha256 != journaled:
                raise ServiceError(
                    f"the notice rendered from the record ({notice.sha256[:12]}...) is not the "
                    f"one sent ({journaled[:12]}...)",
                    status=409,
                    case_id=case_id,
                )
        delivery = "not-sent" if life.gate.released is not None else "preview"
        if life.sent is not None:
            delivery = "sent"
        elif life.state == "notice-blocked":
            delivery = "blocked"
        return NoticeView(notice, report, delivery)

    def send(self, case_id: str) -> dict[str, Any]:
        """Finish the notice step (render, verify, send), once. A notice that failed
        verification was blocked and journaled, never sent (409)."""
        self._document(case_id)
        before = self.work.life(case_id)
        if before.decision is None or before.decision.decision not in NOTICE_DECISIONS:
            self.notice(case_id)  # 404 / 409 naming why there is none
        life = self.work.finish(case_id)
        self.committed()
        if life.sent is None:
            if life.state == "notice-blocked" and life.blocked is not None:
                why = life.blocked.payload.get("reason") or "it failed verification"
                raise ServiceError(f"the notice was not sent: {why}", status=409, case_id=case_id)
            raise ServiceError(
                f"the notice was not sent: the case is {life.state}", status=409, case_id=case_id
            )
        return {
            "caseId": case_id,
            "delivery": "sent",
            "sentNow": before.sent is None,
            "noticeSha256": life.sent.payload.get("noticeSha256"),
            "entry": life.sent.seq,
        }


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return "a number"
