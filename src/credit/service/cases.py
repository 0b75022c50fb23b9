"""What the service does with a case, apart from HTTP: the API and the console share it.

Each operation reads and writes through the governed core only (Onramp intake, the
Spark runtime, the Keystone gate, the notice pipeline); this module adds the
service's own rules:

- **Decide exactly once.** A decide first checks the journal, then takes the
  ``decide:<caseId>`` claim (:mod:`credit.service.claims`), then checks again: of any
  number of concurrent decides, across worker processes, one runs the turn and the
  Keystone review; every other gets :class:`~credit.errors.AlreadyDecidedError` (409)
  and changes nothing.
- **A person's release or reject, once.** Under the ``gate:<caseId>`` claim.
- **A notice sent once.** Under the ``send:<caseId>`` claim.
- **Views by role.** A case's view carries the Keystone reviews and their findings only
  for the reviewer and the auditor (the comparative review reads monitoring data).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final

from credit.errors import (
    AlreadyDecidedError,
    CaseNotHeldError,
    InputError,
    ServiceError,
)
from credit.governance.keystone import Keystone, KeystoneStatus
from credit.governance.onramp import intake
from credit.guardrails.expectation import expectation_for
from credit.guardrails.report import VerificationReport
from credit.guardrails.verifier import Verifier
from credit.journal.base import ChainReport, Entry, Store
from credit.models import parse_case, parse_decision
from credit.notice_format import Notice
from credit.notices.outbox import Outbox
from credit.notices.render import NOTICE_DECISIONS, render_notice
from credit.pipeline import NOTICE_BLOCKED, NOTICE_SENT, Pipeline
from credit.policy import PolicyRegistry
from credit.service.claims import Claims
from credit.service.roles import Principal, Role
from credit.underwriters.rules import RulesUnderwriter
from credit.underwriters.runtime import SAFETY_REFUSAL, SparkRuntime, Underwriter
from credit.underwriting import decide_case

__all__ = ["CaseService", "NoticeView"]

READS_REVIEWS: Final = frozenset({Role.REVIEWER, Role.AUDITOR})


@dataclass(frozen=True, slots=True)
class NoticeView:
    """A released decline's or counteroffer's notice, rendered and verified now."""

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
    ) -> None:
        self.store = store
        self.outbox = outbox
        self.claims = claims
        self.registry = registry or PolicyRegistry.bundled()
        self.underwriter: Underwriter = underwriter or RulesUnderwriter(self.registry)
        self.runtime = SparkRuntime(store, registry=self.registry)
        self.keystone = Keystone(store, registry=self.registry)
        self.verifier = Verifier()
        self.pipeline = Pipeline(
            store,
            outbox,
            registry=self.registry,
            underwriter=self.underwriter,
            keystone=self.keystone,
            verifier=self.verifier,
        )
        self.claim_stale_after_s = claim_stale_after_s

    # ------------------------------------------------------------------ claims

    @contextmanager
    def _claimed(self, name: str, busy: ServiceError) -> Iterator[None]:
        """Run the block holding claim ``name``; raise ``busy`` if another holds it.
        The claim is kept when the block succeeds (the work is done), given up if not."""
        holder = uuid.uuid4().hex
        if not self.claims.claim(name, holder, stale_after_s=self.claim_stale_after_s):
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

    def _refusals(self, case_id: str) -> list[Entry]:
        return [
            e
            for e in self.store.entries(case_id, kinds=[SAFETY_REFUSAL])
            if e.payload.get("stage") != "notice"
        ]

    def view(self, case_id: str, principal: Principal) -> dict[str, Any]:
        """A case's standing: its decision, the gate, the notice; reviews by role."""
        document = self._document(case_id)
        status = self.keystone.status(case_id)
        entry = self.store.decision_entry(case_id)
        refusals = self._refusals(case_id)
        application = document.get("application")
        product = application.get("product") if isinstance(application, Mapping) else None
        view: dict[str, Any] = {
            "caseId": case_id,
            "product": product,
            "asOf": document.get("asOf"),
            "state": status.state,
            "refused": bool(refusals) and entry is None,
            "decision": entry.payload.get("decision") if entry is not None else None,
            "decisionEntry": entry.seq if entry is not None else None,
            "underwriter": status.underwriter,
            "decidedBy": status.decided_by,
            "reason": status.reason,
            "notice": self._notice_state(case_id, status),
        }
        if refusals and entry is None:
            view["refusal"] = refusals[-1].payload.get("boundaries", [])
        if principal.role in READS_REVIEWS:
            view["reviews"] = {
                name: {"passed": r.passed, "findings": [f.to_wire() for f in r.findings]}
                for name, r in sorted(status.reviews.items())
            }
        return view

    def _notice_state(self, case_id: str, status: KeystoneStatus) -> str:
        if status.decision not in NOTICE_DECISIONS:
            return "none"
        done = self.store.entries(case_id, kinds=[NOTICE_SENT, NOTICE_BLOCKED])
        if done:
            return "sent" if done[-1].kind == NOTICE_SENT else "blocked"
        if status.state == "released":
            return "ready"
        return "rejected" if status.state == "rejected" else "awaiting-release"

    def queue(self) -> list[dict[str, Any]]:
        """The held queue, in the order decided (reviewer and auditor only)."""
        return [
            {
                "caseId": s.case_id,
                "state": s.state,
                "product": s.product,
                "decision": s.decision,
                "underwriter": s.underwriter,
                "decisionEntry": s.decision_seq,
                "findings": [f.to_wire() for f in s.holding_findings],
            }
            for s in self.keystone.held_cases()
        ]

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
        result = intake(raw, self.store)
        return {
            "caseId": result.case_id,
            "takenIn": result.taken_in,
            "digest": result.digest,
            "moved": [r.path for r in result.moved],
        }

    def decide(self, case_id: str, principal: Principal) -> dict[str, Any]:
        """Run the governed underwriter turn and the Keystone review, exactly once."""
        self._document(case_id)
        self._not_decided(case_id)
        busy = AlreadyDecidedError(
            "this case is being decided by another request; nothing was changed",
            case_id=case_id,
        )
        with self._claimed(f"decide:{case_id}", busy):
            self._not_decided(case_id)  # decided between the check and the claim
            result = self.runtime.run_turn(case_id, self.underwriter)
            if result.decision_entry is not None:
                self.keystone.review(case_id)
        return self.view(case_id, principal)

    def _not_decided(self, case_id: str) -> None:
        entry = self.store.decision_entry(case_id)
        if entry is not None:
            raise AlreadyDecidedError(
                f"this case is already decided (journal entry {entry.seq}); a case is "
                "decided exactly once and nothing was changed",
                case_id=case_id,
            )
        if self._refusals(case_id):
            raise AlreadyDecidedError(
                "this case's underwriter turn was refused at a safety boundary; it is "
                "not decided again (a person takes it from here) and nothing was changed",
                case_id=case_id,
            )

    def release(self, case_id: str, principal: Principal, reason: str) -> dict[str, Any]:
        return self._gate(case_id, principal, reason, release=True)

    def reject(self, case_id: str, principal: Principal, reason: str) -> dict[str, Any]:
        return self._gate(case_id, principal, reason, release=False)

    def _gate(
        self, case_id: str, principal: Principal, reason: str, *, release: bool
    ) -> dict[str, Any]:
        self._document(case_id)
        verb = "release" if release else "reject"
        status = self.keystone.status(case_id)
        if not status.held:
            raise CaseNotHeldError(_not_held(verb, status), case_id=case_id, state=status.state)
        busy = ServiceError(
            f"cannot {verb}: another reviewer's release or reject of this case is in progress",
            status=409,
            case_id=case_id,
        )
        with self._claimed(f"gate:{case_id}", busy):
            act = self.keystone.release if release else self.keystone.reject
            act(case_id, principal.name, reason)
        return self.view(case_id, principal)

    def notice(self, case_id: str) -> NoticeView:
        """Render and verify the notice of a released decline or counteroffer (now,
        journaling nothing)."""
        document = self._document(case_id)
        status = self.keystone.status(case_id)
        entry = self.store.decision_entry(case_id)
        if entry is None:
            raise ServiceError("no decision is recorded yet", status=409, case_id=case_id)
        recorded = parse_decision(entry.payload.get("decision"), case_id=case_id)
        if recorded.decision not in NOTICE_DECISIONS:
            raise ServiceError(
                f"a {recorded.decision} takes no adverse-action notice",
                status=404,
                case_id=case_id,
            )
        if status.state != "released":
            raise ServiceError(
                f"the decision is {status.state}, not released: its notice is not issued",
                status=409,
                case_id=case_id,
            )
        case = parse_case(dict(document))
        underwriting = decide_case(case, self.registry.in_force(case.as_of))
        if underwriting.decision.to_wire() != recorded.to_wire():
            raise ServiceError(
                "the recorded decision is not the one the policy derives, so its reasons "
                "cannot be stated from the catalogue: a person must write this notice",
                status=409,
                case_id=case_id,
            )
        notice = render_notice(case, underwriting)
        report = self.verifier.verify(notice, expectation_for(case, underwriting))
        done = self.store.entries(case_id, kinds=[NOTICE_SENT, NOTICE_BLOCKED])
        delivery = "not-sent"
        if done:
            delivery = "sent" if done[-1].kind == NOTICE_SENT else "blocked"
        return NoticeView(notice, report, delivery)

    def send(self, case_id: str) -> dict[str, Any]:
        """Render, verify and send the notice (Pipeline.notify_case), once. A notice
        that fails verification is blocked and journaled, never sent (409)."""
        view = self.notice(case_id)  # 404 / 409 for a case that takes none now
        if view.delivery == "not-sent":
            busy = ServiceError(
                "this notice is being sent by another request", status=409, case_id=case_id
            )
            with self._claimed(f"send:{case_id}", busy):
                outcome = self.pipeline.notify_case(case_id)
            sent_now = outcome == NOTICE_SENT
        else:
            outcome = NOTICE_SENT if view.delivery == "sent" else NOTICE_BLOCKED
            sent_now = False
        done = self.store.entries(case_id, kinds=[NOTICE_SENT, NOTICE_BLOCKED])
        last = done[-1] if done else None
        if outcome != NOTICE_SENT:
            why = last.payload.get("reason") if last is not None else None
            raise ServiceError(
                f"the notice was not sent: {why or 'it failed verification'}",
                status=409,
                case_id=case_id,
            )
        return {
            "caseId": case_id,
            "delivery": "sent",
            "sentNow": sent_now,
            "noticeSha256": last.payload.get("noticeSha256") if last is not None else None,
            "entry": last.seq if last is not None else None,
        }


def _not_held(verb: str, status: KeystoneStatus) -> str:
    if status.state == "not-recorded":
        return f"cannot {verb}: no decision is recorded for this case"
    return (
        f"cannot {verb}: the case is not held, it was already {status.state} "
        f"by {status.decided_by} (entry {status.gate_seq})"
    )


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
