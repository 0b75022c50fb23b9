"""What a notice must say, built from the recorded decision and the case file, never
from the renderer: the application, the decision being recorded, the recorded reason
codes with the exact figures each states, the credit score the decision used (for the
FCRA disclosure; none when the file has no score) and, for a counteroffer, the offered
terms as recorded.

A decision that takes no notice (approve, refer) expects no reasons: a referral's
reasons are for the human reviewer and never reach an applicant.
"""

from __future__ import annotations

import datetime as dt

from credit.errors import NoticeError
from credit.models import Case
from credit.notice_format import (
    Expectation,
    ExpectedReason,
    KeyFactorFacts,
    NoticeBasis,
    ScoreFacts,
)
from credit.underwriting import Underwriting

__all__ = ["ADVERSE_DECISIONS", "expectation_for"]

ADVERSE_DECISIONS = ("decline", "counteroffer")


def expectation_for(
    case: Case, decided: NoticeBasis | Underwriting, *, notice_date: dt.date | None = None
) -> Expectation:
    """The expectation for the notice of one decided case, dated ``notice_date`` (the
    day it is sent; the case date for a preview)."""
    basis = decided if isinstance(decided, NoticeBasis) else NoticeBasis.of(decided)
    if basis.case_id != case.case_id:
        raise NoticeError(
            f"the decision is for case {basis.case_id}",
            case_id=case.case_id,
            field="caseId",
        )
    decision = basis.decision
    adverse = decision in ADVERSE_DECISIONS
    reasons = tuple(
        ExpectedReason(code=code, values=dict(values))
        for code, values in (basis.reasons if adverse else ())
    )
    report = case.credit_report
    score: ScoreFacts | None = None
    if basis.uses_score and report.score is not None:
        assert report.score_date is not None  # required with a score (models.CreditReport)
        score = ScoreFacts(
            score=report.score,
            score_low=report.score_range[0],
            score_high=report.score_range[1],
            score_date=report.score_date,
            score_model=report.score_model,
            bureau_name=report.bureau.name,
            bureau_address=report.bureau.address,
            bureau_phone=report.bureau.phone,
            key_factors=tuple(
                KeyFactorFacts(code=k.code, text=k.text, value=k.value) for k in report.key_factors
            ),
        )
    return Expectation(
        case_id=case.case_id,
        notice_date=notice_date or case.as_of,
        product=case.application.product,
        decision=decision,
        application=case.application,
        reasons=reasons,
        credit_score=score,
        offer=basis.offer if decision == "counteroffer" else None,
    )
