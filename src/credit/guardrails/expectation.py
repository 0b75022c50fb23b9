"""What a notice must say, built from the underwriting and the case, never from the
renderer: the application, the decision being recorded, the derived reason codes with
the exact values the decision states for them, the credit score the decision used (for
the FCRA disclosure) and, for a counteroffer, the offered terms.

A decision that takes no notice (approve, refer) expects no reasons: a referral's
reasons are for the human reviewer and never reach an applicant.
"""

from __future__ import annotations

from credit.errors import NoticeError
from credit.models import Case
from credit.notice_format import (
    Expectation,
    ExpectedReason,
    KeyFactorFacts,
    OfferFacts,
    ScoreFacts,
)
from credit.underwriting import Underwriting

__all__ = ["ADVERSE_DECISIONS", "expectation_for"]

ADVERSE_DECISIONS = ("decline", "counteroffer")


def expectation_for(case: Case, underwriting: Underwriting) -> Expectation:
    """The expectation for the notice of one decided case."""
    if underwriting.case_id != case.case_id:
        raise NoticeError(
            f"the underwriting is for case {underwriting.case_id}",
            case_id=case.case_id,
            field="caseId",
        )
    decision = underwriting.decision.decision
    adverse = decision in ADVERSE_DECISIONS
    reasons = tuple(
        ExpectedReason(code=r.code, values=dict(r.values))
        for r in (underwriting.reasons if adverse else ())
    )
    report = case.credit_report
    score: ScoreFacts | None = None
    if underwriting.figures.score is not None:
        assert report.score_date is not None  # required with a score (models.CreditReport)
        score = ScoreFacts(
            score=underwriting.figures.score,
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
    offer: OfferFacts | None = None
    co = underwriting.counteroffer
    if decision == "counteroffer" and co is not None:
        offer = OfferFacts(
            apr=co.apr,
            payment=co.payment,
            amount=co.amount,
            term_months=co.term_months,
            credit_line=co.credit_line,
        )
    return Expectation(
        case_id=case.case_id,
        notice_date=case.as_of,
        product=case.application.product,
        decision=decision,
        application=case.application,
        reasons=reasons,
        credit_score=score,
        offer=offer,
    )
