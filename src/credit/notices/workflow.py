"""The notice workflow for a decided case: render, verify, send (or block).

A decline or counteroffer gets a notice; the verifier checks it against an expectation
built from the underwriting (never from the renderer); only a notice whose report
passed every check goes to the outbox, bound to that report by its SHA-256. A notice
that fails is blocked: kept with its report for a person, never sent.
"""

from __future__ import annotations

from dataclasses import dataclass

from credit.catalogue import Catalogue
from credit.errors import SendRefusedError
from credit.guardrails.expectation import expectation_for
from credit.guardrails.report import VerificationReport
from credit.guardrails.verifier import Verifier
from credit.legal_frame import LegalFrame
from credit.models import Case
from credit.notice_format import Notice
from credit.notices.outbox import Outbox
from credit.notices.render import NOTICE_DECISIONS, render_notice
from credit.underwriting import Underwriting

__all__ = ["NoticeOutcome", "issue_notice"]


@dataclass(frozen=True, slots=True)
class NoticeOutcome:
    case_id: str
    notice: Notice
    report: VerificationReport
    sent: bool
    refusal: str | None = None  # why it was blocked


def issue_notice(
    case: Case,
    underwriting: Underwriting,
    outbox: Outbox,
    *,
    verifier: Verifier | None = None,
    frame: LegalFrame | None = None,
    catalogue: Catalogue | None = None,
) -> NoticeOutcome | None:
    """Render, verify and send the notice for one case; None if it takes no notice."""
    if underwriting.decision.decision not in NOTICE_DECISIONS:
        return None
    notice = render_notice(case, underwriting, frame=frame, catalogue=catalogue)
    report = (verifier or Verifier()).verify(notice, expectation_for(case, underwriting))
    try:
        outbox.send(notice, report)
    except SendRefusedError as err:
        return NoticeOutcome(case.case_id, notice, report, False, err.message)
    return NoticeOutcome(case.case_id, notice, report, True)
