"""A credit officer's decision: a person decides a case the system could not.

A case at a person's work item (a referral, a decision a reviewer rejected, a refused or
failed turn, a blocked notice; :data:`credit.lifecycle.OFFICER_DECIDES`) is decided by
a credit officer: approve (on the terms requested), counteroffer (terms of their own),
or decline, citing 1 to 4 reasons from the catalogue that a person may cite
(``personMayCite``). The system, not the officer, states each reason: its approved
wording and the figures from the file (:mod:`credit.reason_facts`); a reason whose
figure the file does not have (a bankruptcy on a file that shows none) cannot be cited.

The decision is journaled as ``officer.decided`` with the officer's key id and name and
their why, and it goes through the Keystone gate like any other: Backstop holds a
policy exception (a decision less favourable than the policy derives for the file, or
terms outside the policy's caps or prices) for two reviewers (four eyes), and a
released decline or counteroffer gets its notice rendered from the recorded reasons,
verified and sent.

The Decision an officer records states the request's band, DTI and LTV as the policy
computes them (what a reason such as DTI_OVER_CAP states); the offered terms are in
``terms``, and a counteroffer's payment is recorded beside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

from credit.catalogue import Catalogue
from credit.decision_record import CompletedDecision, complete, offer_payment, policy_citation
from credit.errors import InputError
from credit.models import Case, Decision, Terms
from credit.policy import Policy
from credit.roles import Actor
from credit.underwriting import request_figures
from credit.underwriting.capacity import dti_pct, ltv_pct

__all__ = ["OFFICER_CONFIDENCE", "OfficerDecision", "build_officer_decision"]

OfficerOutcome = Literal["approve", "decline", "counteroffer"]
# A person's decision is not a model's estimate: it is recorded with full confidence
# (Backstop's confidence floor judges the underwriter's decisions, not a person's).
OFFICER_CONFIDENCE = Decimal("1.00")
_CENT = Decimal("0.01")


@dataclass(frozen=True, slots=True)
class OfficerDecision:
    """What an officer asks: the outcome, the reason codes, the terms and why."""

    decision: OfficerOutcome
    reason_codes: tuple[str, ...]
    why: str
    amount: Decimal | None = None
    term_months: int | None = None
    credit_line: Decimal | None = None
    apr: Decimal | None = None


def _money(value: Decimal | None, field: str, case_id: str) -> Decimal | None:
    if value is None:
        return None
    if not value.is_finite() or value <= 0 or value != value.quantize(_CENT):
        raise InputError(
            f"{value} is not an amount of money (positive, to the cent)",
            case_id=case_id,
            field=field,
        )
    return value.quantize(_CENT)


def _terms(
    case: Case, request: OfficerDecision, policy: Policy, band: str, apr: Decimal | None
) -> Terms | None:
    app, case_id = case.application, case.case_id
    amount = _money(request.amount, "amount", case_id)
    line = _money(request.credit_line, "line", case_id)
    kind = request.decision
    if kind == "decline":
        if amount is not None or line is not None or request.term_months is not None:
            raise InputError("a decline carries no terms", case_id=case_id, field="terms")
        return None
    if apr is None:
        raise InputError(
            "an unscored file has no band price: give the APR (an approval or offer "
            "outside the policy's pricing is a policy exception, held for two reviewers)",
            case_id=case_id,
            field="apr",
        )
    if app.product == "auto":
        if line is not None:
            raise InputError("an auto loan has no credit line", case_id=case_id, field="line")
        term = request.term_months
        if kind == "approve":
            amount = amount if amount is not None else app.requested_amount
            term = term if term is not None else app.term_months
            if amount != app.requested_amount or term != app.term_months:
                raise InputError(
                    "an approval is on the terms requested "
                    f"({app.requested_amount} over {app.term_months} months): other terms "
                    "are a counteroffer",
                    case_id=case_id,
                    field="amount",
                )
        else:
            if amount is None or term is None:
                raise InputError(
                    "an auto counteroffer states --amount and --term",
                    case_id=case_id,
                    field="amount" if amount is None else "term",
                )
            if term <= 0:
                raise InputError("a term is a number of months", case_id=case_id, field="term")
            if amount == app.requested_amount and term == app.term_months:
                raise InputError(
                    "a counteroffer on the terms requested is an approval",
                    case_id=case_id,
                    field="amount",
                )
        return Terms(apr=apr, amount=amount, term_months=term)
    if amount is not None or request.term_months is not None:
        raise InputError(
            "a card has a credit line, not an amount and a term", case_id=case_id, field="amount"
        )
    assert app.requested_line is not None
    if kind == "approve":
        if line is None:
            line = (
                min(policy[f"pricing.card.{band}.line"].value, app.requested_line)
                if band != "unscored"
                else app.requested_line
            )
        if line > app.requested_line:
            raise InputError(
                f"a line above the {app.requested_line} requested is not what was asked",
                case_id=case_id,
                field="line",
            )
    else:
        if line is None:
            raise InputError("a card counteroffer states --line", case_id=case_id, field="line")
        if line >= app.requested_line:
            raise InputError(
                f"a counteroffer line is below the {app.requested_line} requested",
                case_id=case_id,
                field="line",
            )
    return Terms(apr=apr, credit_line=line)


def build_officer_decision(
    case: Case,
    request: OfficerDecision,
    *,
    policy: Policy,
    catalogue: Catalogue,
    actor: Actor,
    item_kind: str,
) -> CompletedDecision:
    """The officer's decision, completed for the record (reasons stated from the file).

    Raises InputError naming the field for a request the product cannot record: terms
    that do not fit the decision, a reason a person may not cite or the file cannot
    ground, no why."""
    case_id = case.case_id
    if not request.why.strip():
        raise InputError("a person's decision says why", case_id=case_id, field="why")
    app, report = case.application, case.credit_report
    figures = request_figures(app, report, policy, case_id=case_id)
    apr = request.apr
    if apr is not None and (not apr.is_finite() or apr < 0):
        raise InputError(f"{apr} is not an APR in percent", case_id=case_id, field="apr")
    apr = apr if apr is not None else figures.apr
    terms = _terms(case, request, policy, figures.band, apr)
    basis = [
        policy_citation(policy),
        f"officer {actor.name} (key {actor.key_id}) decided {request.decision} on a "
        f"{item_kind} work item: {request.why.strip()}",
        f"request as made: band {figures.band}, DTI {figures.dti_pct}%"
        + (f", LTV {figures.ltv_pct}%" if figures.ltv_pct is not None else ""),
    ]
    wire: dict[str, Any] = {
        "product": app.product,
        "decision": request.decision,
        "scoreBand": figures.band,
        "dtiPct": figures.dti_pct,
        "ltvPct": figures.ltv_pct,
        "policyBasis": basis,
        "factors": [],
        "confidence": OFFICER_CONFIDENCE,
    }
    if terms is not None:
        wire["terms"] = terms.to_wire()
    decision = Decision.model_validate(wire)
    if terms is not None:
        payment = offer_payment(decision, app, policy)
        pct_q: Decimal = policy["rounding.percent"].value
        dti = dti_pct(app.monthly_debt_payments, payment, app.annual_income, pct_q)
        offered = f"terms offered: payment {payment}, DTI {dti}%"
        if terms.amount is not None and app.vehicle_value is not None:
            offered += f", LTV {ltv_pct(terms.amount, app.vehicle_value, pct_q)}%"
        decision = decision.model_copy(update={"policy_basis": (*basis, offered)})
    return complete(
        decision,
        request.reason_codes,
        application=app,
        report=report,
        policy=policy,
        catalogue=catalogue,
        case_id=case_id,
        citer="person",
    )
