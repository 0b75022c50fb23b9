"""What a recorded decision carries: the Decision, its reason codes with the figures
from the file, the offered payment of a counteroffer, and the policy it was taken under.

An underwriter (the rules engine or a model) records a decision and its reason codes;
the catalogue and the case file supply the rest (:func:`complete`):

- each code must be in the catalogue and of the right kind for the decision: a decline
  or counteroffer states 1 to ``maxReasons`` adverse reasons, a referral at least one
  referral reason, an approval none (12 CFR 1002.9(b)(2));
- the figures each reason states come from the file (:mod:`credit.reason_facts`), and
  the factor texts are the catalogue's approved wordings filled with them (a model's
  own wording is kept aside as ``submittedFactors``, never stated to an applicant);
- ``policyBasis[0]`` cites the policy the tools served (``policy=<name> v<version>
  effective <date> sha256:<hex>``), the underwriter's own lines after it;
- a counteroffer's monthly payment is computed from its terms by the policy's capacity
  arithmetic, so the notice states the payment the decision stands on.

Anything that cannot be completed is an :class:`~credit.errors.InputError` naming the
field (``reasonCodes[1]``, ``decision.terms``): nothing is recorded, and the
underwriter may correct it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

from credit.catalogue import Catalogue
from credit.errors import InputError, ReasonNotGroundedError
from credit.models import Application, CreditReport, Decision
from credit.policy import Policy
from credit.reason_facts import file_facts, stated_values
from credit.underwriting.capacity import amortised_payment, card_payment

__all__ = ["Citer", "CompletedDecision", "complete", "offer_payment", "policy_citation"]

Citer = Literal["rules", "person"]


def policy_citation(policy: Policy) -> str:
    """How a decision cites the policy it was taken under (``policyBasis[0]``)."""
    return (
        f"policy={policy.name} v{policy.version} effective {policy.effective_date} "
        f"sha256:{policy.sha256}"
    )


@dataclass(frozen=True, slots=True)
class CompletedDecision:
    """A decision ready to record: the Decision (factors and policy basis completed),
    its reasons (code, values), the offered payment of a counteroffer, and the model's
    own factor texts when they differ from the approved wordings."""

    decision: Decision
    reasons: tuple[tuple[str, dict[str, str]], ...]
    offer: dict[str, Decimal] | None
    submitted_factors: tuple[str, ...] | None

    def payload(self) -> dict[str, Any]:
        """The fields the decision's journal entry carries beside the Decision."""
        out: dict[str, Any] = {
            "reasons": [{"code": code, "values": dict(values)} for code, values in self.reasons]
        }
        if self.offer is not None:
            out["offer"] = dict(self.offer)
        if self.submitted_factors is not None:
            out["submittedFactors"] = list(self.submitted_factors)
        return out


def offer_payment(decision: Decision, application: Application, policy: Policy) -> Decimal:
    """The monthly payment of a decision's terms under the policy's capacity rules."""
    terms = decision.terms
    money_q: Decimal = policy["rounding.money"].value
    if terms is None or terms.apr is None:
        raise InputError("the offered terms need an apr", field="decision.terms.apr")
    if application.product == "auto":
        if terms.amount is None or terms.term_months is None:
            raise InputError(
                "an auto offer states its amount and termMonths", field="decision.terms"
            )
        return amortised_payment(terms.amount, terms.apr, terms.term_months, money_q)
    if terms.credit_line is None:
        raise InputError("a card offer states its creditLine", field="decision.terms.creditLine")
    pct: Decimal = policy["products.card.paymentPctOfLine"].value
    return card_payment(terms.credit_line, pct, money_q)


def complete(
    decision: Decision,
    reason_codes: Sequence[str] | None,
    *,
    application: Application,
    report: CreditReport,
    policy: Policy,
    catalogue: Catalogue,
    case_id: str,
    citer: Citer = "rules",
) -> CompletedDecision:
    """Complete a submitted decision for the record (see the module docstring).

    ``citer`` says who is citing: the rules (an underwriter: any reason the rules state)
    or a person (a credit officer: the reasons ``personMayCite``)."""
    codes = tuple(reason_codes or ())
    kind = decision.decision
    _check_codes(codes, kind, policy, catalogue, case_id, citer)
    facts = file_facts(
        application,
        report,
        policy,
        catalogue,
        dti_pct=decision.dti_pct,
        ltv_pct=decision.ltv_pct,
    )
    reasons: list[tuple[str, dict[str, str]]] = []
    for i, code in enumerate(codes):
        try:
            values = stated_values(catalogue[code], facts)
        except ReasonNotGroundedError as err:
            raise err.for_case(case_id, f"reasonCodes[{i}]") from None
        reasons.append((code, values))
    factors = tuple(catalogue[code].render(values) for code, values in reasons)
    submitted = None if tuple(decision.factors) == factors else tuple(decision.factors)
    head = policy_citation(policy)
    basis = (head, *(line for line in decision.policy_basis if line != head))
    completed = decision.model_copy(update={"factors": factors, "policy_basis": basis})
    offer = None
    if kind == "counteroffer":
        offer = {"payment": offer_payment(decision, application, policy)}
    return CompletedDecision(completed, tuple(reasons), offer, submitted)


def _check_codes(
    codes: tuple[str, ...],
    kind: str,
    policy: Policy,
    catalogue: Catalogue,
    case_id: str,
    citer: Citer,
) -> None:
    most: int = policy["maxReasons"].value
    for i, code in enumerate(codes):
        field = f"reasonCodes[{i}]"
        if code not in catalogue:
            raise ReasonNotGroundedError(
                f"{code!r} is not a reason code of the catalogue {catalogue.name} "
                f"v{catalogue.version}",
                code=code,
                case_id=case_id,
                field=field,
            )
        entry = catalogue[code]
        if citer == "person" and not entry.person_may_cite:
            raise ReasonNotGroundedError(
                f"{code} is not a reason a person may cite (see `credit catalogue`)",
                code=code,
                case_id=case_id,
                field=field,
            )
        if citer == "rules" and not entry.rule_stated:
            raise ReasonNotGroundedError(
                f"{code} is a reason only a credit officer cites, on a file they checked",
                code=code,
                case_id=case_id,
                field=field,
            )
        if codes.index(code) != i:
            raise InputError(f"{code} is cited twice", case_id=case_id, field=field)
        wanted = "referral" if kind == "refer" else "adverse"
        if kind != "approve" and entry.kind != wanted:
            raise InputError(
                f"{code} is a {entry.kind} reason; a {kind} states {wanted} reasons",
                case_id=case_id,
                field=field,
            )
    if kind == "approve" and codes:
        raise InputError(
            "an approval states no adverse-action reasons", case_id=case_id, field="reasonCodes"
        )
    if kind in ("decline", "counteroffer") and not 1 <= len(codes) <= most:
        raise InputError(
            f"a {kind} states 1 to {most} catalogued reasons (12 CFR 1002.9(b)(2)), "
            f"got {len(codes)}",
            case_id=case_id,
            field="reasonCodes",
        )
    if kind == "refer" and not codes:
        raise InputError(
            "a referral states at least one referral reason for the person who decides it",
            case_id=case_id,
            field="reasonCodes",
        )
