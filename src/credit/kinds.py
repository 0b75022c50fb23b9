"""Every kind of journal entry, named in one place.

The journal is the one record of a case's life (:mod:`credit.lifecycle` folds a case's
entries into its state); each module that writes an entry uses the name from here, and
nothing reads a kind by a string of its own.

=========================  ===========================================================
``intake.moved``           intake moved prohibited-basis fields out of reach (paths)
``intake.accepted``        a case taken in (the SHA-256 of its document)
``guard.redacted``         the fair-lending guard redacted a key or a value of a tool
                           result before the underwriter read it
``guard.post_check_failed`` a prohibited field survived redaction (result withheld)
``governor.context_violation`` the turn's context carried a prohibited basis
``underwriter.turn``       an underwriter turn ended (its own output, the verdict)
``decision.refused``       the commit seam refused a decision (nothing recorded)
``safety.refusal``         a typed refusal (ADR-0001) ended a turn or a notice send
``turn.failed``            a turn could not complete (an error, no decision): a person
                           takes the case over
``decision.recorded``      the underwriter's decision, held for the Keystone gate
                           (exactly once a case)
``officer.decided``        a credit officer's decision on a case at a person's item; it
                           supersedes the decision before it and goes through the gate
``review.equipoise``       the fair-lending review of the current decision
``review.backstop``        the model-risk review of the current decision
``keystone.held``          the gate holds the current decision for a person
``keystone.approved``      a first person approved a held decision (four eyes: a second
                           person must release it)
``keystone.released``      the current decision is committed (by the gate or a person)
``keystone.rejected``      a person rejected the current decision
``notice.verified``        the notice of the current decision was verified (V1-V8)
``notice.sent``            the verified notice was sent (its exact bytes' SHA-256)
``notice.blocked``         the notice was not sent: a person must act
``case.withdrawn``         the applicant withdrew the application (recorded by a person)
``ethics.finding``         an ethics commitment judged (recorded, never refused on)
=========================  ===========================================================
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "CASE_WITHDRAWN",
    "CONTEXT_VIOLATION",
    "DECISION_KINDS",
    "DECISION_RECORDED",
    "DECISION_REFUSED",
    "ETHICS_FINDING",
    "GATE_KINDS",
    "GUARD_POST_CHECK_FAILED",
    "GUARD_REDACTED",
    "INTAKE_ACCEPTED",
    "INTAKE_MOVED",
    "KEYSTONE_APPROVED",
    "KEYSTONE_HELD",
    "KEYSTONE_REJECTED",
    "KEYSTONE_RELEASED",
    "NOTICE_BLOCKED",
    "NOTICE_KINDS",
    "NOTICE_SENT",
    "NOTICE_VERIFIED",
    "OFFICER_DECIDED",
    "REVIEW_BACKSTOP",
    "REVIEW_EQUIPOISE",
    "REVIEW_KINDS",
    "SAFETY_REFUSAL",
    "TURN_FAILED",
    "UNDERWRITER_TURN",
]

INTAKE_MOVED: Final = "intake.moved"
INTAKE_ACCEPTED: Final = "intake.accepted"
GUARD_REDACTED: Final = "guard.redacted"
GUARD_POST_CHECK_FAILED: Final = "guard.post_check_failed"
CONTEXT_VIOLATION: Final = "governor.context_violation"
UNDERWRITER_TURN: Final = "underwriter.turn"
DECISION_REFUSED: Final = "decision.refused"
SAFETY_REFUSAL: Final = "safety.refusal"
TURN_FAILED: Final = "turn.failed"
DECISION_RECORDED: Final = "decision.recorded"
OFFICER_DECIDED: Final = "officer.decided"
REVIEW_EQUIPOISE: Final = "review.equipoise"
REVIEW_BACKSTOP: Final = "review.backstop"
KEYSTONE_HELD: Final = "keystone.held"
KEYSTONE_APPROVED: Final = "keystone.approved"
KEYSTONE_RELEASED: Final = "keystone.released"
KEYSTONE_REJECTED: Final = "keystone.rejected"
NOTICE_VERIFIED: Final = "notice.verified"
NOTICE_SENT: Final = "notice.sent"
NOTICE_BLOCKED: Final = "notice.blocked"
CASE_WITHDRAWN: Final = "case.withdrawn"
ETHICS_FINDING: Final = "ethics.finding"

DECISION_KINDS: Final = (DECISION_RECORDED, OFFICER_DECIDED)
REVIEW_KINDS: Final = (REVIEW_EQUIPOISE, REVIEW_BACKSTOP)
GATE_KINDS: Final = (KEYSTONE_HELD, KEYSTONE_APPROVED, KEYSTONE_RELEASED, KEYSTONE_REJECTED)
NOTICE_KINDS: Final = (NOTICE_VERIFIED, NOTICE_SENT, NOTICE_BLOCKED)
