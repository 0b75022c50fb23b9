"""The renderer: an adverse-action notice for a declined or counteroffered case.

The notice's text is the legal frame (``data/legal-frame.yaml``) filled for the case,
with the principal reasons in the underwriter's order, each a category label and an
approved wording from the reason catalogue filled with the exact values the decision
states. Paragraphs are separated by one blank line; each paragraph line is one line of
text (no wrapping), and the text is ASCII.

Layout (12 CFR 1002.9(a)(2); Forms C-1 and C-4; FCRA 615(a)):

1. the creditor's name and address;
2. the title, the date and the application (case id and the credit applied for);
3. the statement of the action taken;
4. the principal reasons: ``N. <category>`` then the sentence indented three spaces;
5. for a counteroffer, the offered terms and how long the offer stands;
6. when a credit score was used, the FCRA disclosure: the score, its range and date,
   the key factors (at most 4, plus the number of inquiries when it is one), the
   agency's name, address and telephone, that it did not make the decision, the free
   report within 60 days and the right to dispute;
7. the ECOA paragraph with the agency's name and address.

Money is written like ``$24,000.00``; percentages exactly as the decision states them.
The verifier never imports this module (an import contract enforces it).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence

from credit.catalogue import Catalogue, default_catalogue
from credit.errors import NoNoticeError
from credit.legal_frame import LegalFrame, default_frame
from credit.models import Case, KeyFactor
from credit.notice_format import Notice, NoticeBasis, NoticeReason
from credit.reason_facts import format_money
from credit.underwriting import Underwriting

__all__ = ["NOTICE_DECISIONS", "format_money", "render_notice"]

NOTICE_DECISIONS = ("decline", "counteroffer")


def _fill(template: str, values: Mapping[str, object]) -> str:
    return template.format_map({k: str(v) for k, v in values.items()})


def _key_factors(frame: LegalFrame, factors: Sequence[KeyFactor]) -> list[KeyFactor]:
    """At most ``maxKeyFactors``, plus the number of inquiries when it is a key factor
    beyond them (FCRA 609(f)(9))."""
    chosen = list(factors[: frame.max_key_factors])
    if not any(k.code in frame.inquiries_bureau_codes for k in chosen):
        extra = next(
            (k for k in factors[frame.max_key_factors :] if k.code in frame.inquiries_bureau_codes),
            None,
        )
        if extra is not None:
            chosen.append(extra)
    return chosen


def render_notice(
    case: Case,
    decided: NoticeBasis | Underwriting,
    *,
    notice_date: dt.date | None = None,
    frame: LegalFrame | None = None,
    catalogue: Catalogue | None = None,
    variants: Mapping[str, int] | None = None,
) -> Notice:
    """The notice for a decline or counteroffer, from the recorded decision (a
    :class:`NoticeBasis`; an Underwriting for a notice made outside the journal).

    ``notice_date`` is the day the notice is sent (the governed pipeline passes its
    clock's date; a counteroffer's response window runs from it); without one the
    notice is dated the case date (a preview). ``variants`` picks an approved wording
    per reason code (the first by default)."""
    frame = frame or default_frame()
    catalogue = catalogue or default_catalogue()
    basis = decided if isinstance(decided, NoticeBasis) else NoticeBasis.of(decided)
    dated = notice_date or case.as_of
    decision = basis.decision
    if decision not in NOTICE_DECISIONS:
        raise NoNoticeError(
            f"a decision to {decision} takes no adverse-action notice",
            case_id=case.case_id,
            field="decision",
        )
    product = case.application.product
    product_name = frame[f"products.{product}"]
    common = {"caseId": case.case_id, "noticeDate": dated, "productName": product_name}
    paragraphs: list[list[str]] = [
        [frame["creditor.name"], frame["creditor.address"]],
        [
            frame["header.title"],
            _fill(frame["header.date"], common),
            _fill(frame["header.application"], common),
        ],
        [f"{frame['actionTaken.label']} {_fill(frame[f'actionTaken.{decision}'], common)}"],
    ]
    reasons: list[NoticeReason] = []
    lines = [frame["reasons.heading"]]
    for number, (code, values) in enumerate(basis.reasons, start=1):
        entry = catalogue[code]
        sentence = entry.render(values, (variants or {}).get(code, 0))
        lines += [f"{number}. {entry.category}", f"   {sentence}"]
        reasons.append(NoticeReason(code=code, category=entry.category, values=dict(values)))
    paragraphs.append(lines)
    offer = basis.offer
    if decision == "counteroffer":
        assert offer is not None
        if product == "auto":
            assert offer.amount is not None
            terms = _fill(
                frame["counteroffer.auto"],
                {
                    "amount": format_money(offer.amount),
                    "termMonths": offer.term_months,
                    "apr": offer.apr,
                    "payment": format_money(offer.payment),
                },
            )
        else:
            assert offer.credit_line is not None
            terms = _fill(
                frame["counteroffer.card"],
                {
                    "creditLine": format_money(offer.credit_line),
                    "apr": offer.apr,
                    "payment": format_money(offer.payment),
                },
            )
        expires = dated + dt.timedelta(days=frame.offer_valid_days)
        standing = _fill(
            frame["counteroffer.standing"],
            {"validDays": frame.offer_valid_days, "offerExpires": expires.isoformat()},
        )
        paragraphs.append([frame["counteroffer.heading"], terms, standing])
    report = case.credit_report
    if basis.uses_score and report.score is not None:
        bureau = {
            "bureauName": report.bureau.name,
            "bureauAddress": report.bureau.address,
            "bureauPhone": report.bureau.phone,
        }
        score = {
            "score": report.score,
            "scoreLow": report.score_range[0],
            "scoreHigh": report.score_range[1],
            "scoreDate": report.score_date,
            "scoreModel": report.score_model,
            "bureauName": report.bureau.name,
        }
        lines = [
            frame["creditScore.heading"],
            _fill(frame["creditScore.intro"], bureau),
            _fill(frame["creditScore.score"], score),
            _fill(frame["creditScore.range"], score),
            _fill(frame["creditScore.date"], score),
        ]
        if report.score_model is not None:
            lines.append(_fill(frame["creditScore.model"], score))
        lines.append(frame["creditScore.keyFactorsHeading"])
        factors = _key_factors(frame, report.key_factors)
        lines += [
            _fill(
                frame["creditScore.keyFactor"],
                {"keyFactorText": k.text, "keyFactorValue": k.value, "keyFactorCode": k.code},
            )
            for k in factors
        ] or [frame["creditScore.noKeyFactors"]]
        lines += [
            _fill(frame[f"creditScore.{key}"], bureau)
            for key in ("agency", "notDecision", "freeReport", "dispute")
        ]
        paragraphs.append(lines)
    agency = {"agencyName": frame["ecoa.agencyName"], "agencyAddress": frame["ecoa.agencyAddress"]}
    paragraphs.append([frame["ecoa.heading"], _fill(frame["ecoa.text"], agency)])
    text = "\n\n".join("\n".join(p) for p in paragraphs) + "\n"
    return Notice(
        case_id=case.case_id,
        notice_date=dated,
        product=product,
        decision=decision,
        reasons=tuple(reasons),
        frame_sha256=frame.sha256,
        catalogue_sha256=catalogue.sha256,
        text=text,
    )
