"""Backstop: the model-risk review (Orchestration, "Decision reviewed by ... Backstop").

Backstop re-derives every recorded decision independently with the rules underwriter,
from the same tool data the underwriter was served (the case document from
``store.get_case``: application and credit report, never monitoring data) under the
policy in force on the case's ``asOf`` date (from a
:class:`~credit.policy.PolicyRegistry`), and compares. Its findings:

* ``backstop.disagreement`` (holds): the recorded decision differs from the
  re-derivation in the decision, the terms, the score band, the DTI, the LTV or the
  credit factors. Each differing field is one finding, with both values.
* ``backstop.policy_version`` (holds): the policy cited in ``policyBasis[0]``
  (``policy=<name> v<version> effective <date> sha256:<hex>``) is not the one in force
  on the case's date, by SHA-256 and version; or the citation is missing or malformed.
* ``backstop.confidence_floor`` (holds): an approve, decline or counteroffer whose
  confidence is below the policy's ``confidenceFloor``. (A referral already goes to a
  person.)
* ``backstop.within_margin`` (recorded, does not hold): the case sits within a review
  margin (score, DTI or LTV), so a person looks at it anyway.
* ``backstop.case_unreadable`` / ``backstop.decision_unreadable`` /
  ``backstop.no_policy_in_force`` / ``backstop.rederivation_failed`` (hold): Backstop
  could not check the decision, so it does not pass it.

Backstop passes only when no finding holds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from credit.catalogue import Catalogue, default_catalogue
from credit.errors import CreditError, GovernanceError, InputError, PolicyError
from credit.governance.fair_lending import default_fair_lending_config
from credit.governance.findings import Finding, Review
from credit.journal.base import Entry, Store
from credit.kinds import OFFICER_DECIDED
from credit.lifecycle import recorded_reasons
from credit.models import Case, Decision, parse_case, parse_decision
from credit.policy import Policy, PolicyRegistry
from credit.reason_facts import file_facts, stated_values
from credit.underwriting import request_figures
from credit.underwriting.capacity import amortised_payment, card_payment, dti_pct, ltv_pct
from credit.underwriting.engine import Underwriting, underwrite

__all__ = ["COMPARED_FIELDS", "Backstop", "PolicyCitation", "parse_policy_citation"]

# The fields of a Decision the re-derivation must match (the outcome contract's
# content; the confidence is the underwriter's own and is judged against the floor).
COMPARED_FIELDS = ("decision", "terms", "scoreBand", "dtiPct", "ltvPct", "factors")

_CITATION = re.compile(
    r"^policy=(?P<name>.+) v(?P<version>\S+) effective (?P<effective>\d{4}-\d{2}-\d{2}) "
    r"sha256:(?P<sha256>[0-9a-f]{64})$"
)
_MARGIN_CODES = ("REFER_SCORE_MARGIN", "REFER_DTI_MARGIN", "REFER_LTV_MARGIN")
_FLOOR_DECISIONS = ("approve", "decline", "counteroffer")


@dataclass(frozen=True, slots=True)
class PolicyCitation:
    """The policy a decision says it applied (its ``policyBasis[0]``)."""

    name: str
    version: str
    effective: str
    sha256: str


def parse_policy_citation(text: str) -> PolicyCitation | None:
    """Read ``policy=<name> v<version> effective <date> sha256:<hex>``; None if not that."""
    match = _CITATION.match(text)
    if match is None:
        return None
    return PolicyCitation(**match.groupdict())


def _value(decision: Decision, field: str) -> Any:
    return {
        "decision": decision.decision,
        "terms": decision.terms,
        "scoreBand": decision.score_band,
        "dtiPct": decision.dti_pct,
        "ltvPct": decision.ltv_pct,
        "factors": decision.factors,
    }[field]


def _wire(value: Any) -> Any:
    if value is None or isinstance(value, (str, Decimal, int)):
        return value
    if isinstance(value, tuple):
        return list(value)
    to_wire = getattr(value, "to_wire", None)
    if callable(to_wire):
        return to_wire()
    return str(value)  # pragma: no cover - every compared field is one of the above


class Backstop:
    """The model-risk review: an independent re-derivation by the rules underwriter."""

    name = "backstop"

    def __init__(
        self,
        store: Store,
        registry: PolicyRegistry | None = None,
        *,
        catalogue: Catalogue | None = None,
    ) -> None:
        self.store = store
        self.registry = registry or PolicyRegistry.bundled()
        self.catalogue = catalogue
        # The order of outcomes, least favourable first (the fair-lending review's data).
        self.outcome_order = default_fair_lending_config().outcome_order

    def review(self, case_id: str, *, entry: Entry | None = None) -> Review:
        """Review one recorded decision (``entry``, default the underwriter's)."""
        entry = entry or self.store.decision_entry(case_id)
        if entry is None:
            raise GovernanceError("no decision is recorded", case_id=case_id, reviewer=self.name)
        basis: dict[str, Any] = {"decisionSeq": entry.seq}
        findings: list[Finding] = []

        def done() -> Review:
            return Review(
                reviewer="backstop", case_id=case_id, findings=tuple(findings), basis=basis
            )

        try:
            decision = parse_decision(entry.payload.get("decision"), case_id=case_id)
        except InputError as err:
            findings.append(_holds("decision_unreadable", f"the recorded decision: {err}"))
            return done()
        case = self._case(case_id, findings)
        if case is None:
            return done()
        basis["asOf"] = case.as_of.isoformat()
        try:
            policy = self.registry.in_force(case.as_of)
        except PolicyError as err:
            findings.append(_holds("no_policy_in_force", str(err)))
            return done()
        basis["policyInForce"] = policy.label
        basis["policySha256"] = policy.sha256
        findings.extend(self._policy_version(decision, policy))
        if entry.kind == OFFICER_DECIDED:
            findings.extend(self._officer(decision, entry, case, policy, basis))
            return done()
        findings.extend(self._floor(decision, policy))
        try:
            derived = underwrite(
                case.application,
                case.credit_report,
                policy,
                case_id=case_id,
                as_of=case.as_of,
                catalogue=self.catalogue,
            )
        except CreditError as err:
            findings.append(
                _holds("rederivation_failed", f"the rules underwriter could not decide it: {err}")
            )
            return done()
        basis["derivedDecision"] = derived.decision.decision
        basis["derivedStep"] = derived.step
        findings.extend(_disagreements(decision, derived.decision))
        findings.extend(_within_margin(derived))
        return done()

    def _officer(
        self,
        decision: Decision,
        entry: Entry,
        case: Case,
        policy: Policy,
        basis: dict[str, Any],
    ) -> list[Finding]:
        """A credit officer's decision: a policy exception holds it for two reviewers;
        its figures and reasons must be the file's."""
        findings: list[Finding] = []
        app, report = case.application, case.credit_report
        try:
            figures = request_figures(app, report, policy, case_id=case.case_id)
        except CreditError as err:
            return [_holds("rederivation_failed", f"the request's figures: {err}")]
        for field, got, want in (
            ("scoreBand", decision.score_band, figures.band),
            ("dtiPct", decision.dti_pct, figures.dti_pct),
            ("ltvPct", decision.ltv_pct, figures.ltv_pct),
        ):
            if got != want:
                findings.append(
                    _holds(
                        "disagreement",
                        f"{field}: recorded {got}, the request's figure is {want}",
                        field=field,
                        recorded=_wire(got),
                        derived=_wire(want),
                    )
                )
        findings.extend(self._officer_reasons(decision, entry, case, policy))
        exceptions: list[str] = []
        try:
            derived = underwrite(
                app,
                report,
                policy,
                case_id=case.case_id,
                as_of=case.as_of,
                catalogue=self.catalogue,
            )
        except CreditError as err:
            derived = None
            basis["derivedDecision"] = f"none ({err})"
        if derived is not None:
            basis["derivedDecision"] = derived.decision.decision
            order = self.outcome_order
            want = derived.decision.decision
            if want != "refer" and order.index(decision.decision) < order.index(want):
                exceptions.append(
                    f"a {decision.decision} is less favourable than the {want} the policy "
                    "derives for this file"
                )
        exceptions += _outside_policy(decision, case, policy, figures.band)
        findings += [
            _holds("policy_exception", f"policy exception: {text}", decision=decision.decision)
            for text in exceptions
        ]
        return findings

    def _officer_reasons(
        self, decision: Decision, entry: Entry, case: Case, policy: Policy
    ) -> list[Finding]:
        """Each recorded reason states the figures the file gives it."""
        catalogue = self.catalogue or default_catalogue()
        recorded = recorded_reasons(entry.payload) or ()
        facts = file_facts(
            case.application,
            case.credit_report,
            policy,
            catalogue,
            dti_pct=decision.dti_pct,
            ltv_pct=decision.ltv_pct,
        )
        findings: list[Finding] = []
        for i, (code, values) in enumerate(recorded):
            if code not in catalogue or not catalogue[code].person_may_cite:
                findings.append(
                    _holds("disagreement", f"reasons[{i}]: {code} may not be cited by a person")
                )
                continue
            try:
                want = stated_values(catalogue[code], facts)
            except CreditError as err:
                findings.append(_holds("disagreement", f"reasons[{i}]: {err}"))
                continue
            if dict(values) != want:
                findings.append(
                    _holds(
                        "disagreement",
                        f"reasons[{i}].values: recorded {dict(values)}, the file gives {want}",
                        field=f"reasons[{i}].values",
                        recorded=dict(values),
                        derived=want,
                    )
                )
        return findings

    def _case(self, case_id: str, findings: list[Finding]) -> Case | None:
        document = self.store.get_case(case_id)
        if document is None:
            findings.append(_holds("case_unreadable", "no case document is on file"))
            return None
        try:
            return parse_case(dict(document))
        except InputError as err:
            findings.append(_holds("case_unreadable", f"the case document: {err}"))
            return None

    @staticmethod
    def _policy_version(decision: Decision, policy: Policy) -> list[Finding]:
        cited_text = decision.policy_basis[0] if decision.policy_basis else ""
        cited = parse_policy_citation(cited_text)
        in_force = {"policy": policy.name, "version": policy.version, "sha256": policy.sha256}
        if cited is None:
            return [
                _holds(
                    "policy_version",
                    "policyBasis[0] does not cite a policy as "
                    "'policy=<name> v<version> effective <date> sha256:<hex>'",
                    cited=cited_text,
                    inForce=in_force,
                )
            ]
        problems = []
        if cited.sha256 != policy.sha256:
            problems.append(f"sha256 {cited.sha256[:12]}... is not {policy.sha256[:12]}...")
        if cited.version != policy.version:
            problems.append(f"version {cited.version} is not {policy.version}")
        if cited.name != policy.name:
            problems.append(f"policy {cited.name} is not {policy.name}")
        if not problems:
            return []
        return [
            _holds(
                "policy_version",
                f"the decision cites {cited.name} v{cited.version}, but {policy.label} was in "
                f"force on the case date: " + "; ".join(problems),
                cited={"policy": cited.name, "version": cited.version, "sha256": cited.sha256},
                inForce=in_force,
            )
        ]

    @staticmethod
    def _floor(decision: Decision, policy: Policy) -> list[Finding]:
        floor = policy["confidenceFloor"]
        if decision.decision not in _FLOOR_DECISIONS or decision.confidence >= floor.value:
            return []
        return [
            _holds(
                "confidence_floor",
                f"a {decision.decision} at confidence {decision.confidence} is below the "
                f"floor ({floor.cite()})",
                confidence=decision.confidence,
                floor=floor.value,
            )
        ]


def _outside_policy(decision: Decision, case: Case, policy: Policy, band: str) -> list[str]:
    """The ways an approval's or a counteroffer's terms leave the policy: a score under
    the product minimum (or none), a price other than the band's, a term not offered,
    an amount or line outside the product's bounds, a DTI or LTV over its cap."""
    terms = decision.terms
    if decision.decision not in ("approve", "counteroffer") or terms is None:
        return []
    app, report = case.application, case.credit_report
    product = app.product
    p = f"products.{product}"
    out: list[str] = []
    min_score = policy[f"{p}.minScore"].value
    if report.score is None:
        out.append("the file has no score: the policy prices no terms for it")
    elif report.score < min_score:
        out.append(f"score {report.score} is below the product minimum {min_score}")
    if band != "unscored":
        price = policy[f"pricing.{product}.{band}.apr"].value
        if terms.apr != price:
            out.append(f"APR {terms.apr}% is not the {band} band's {price}%")
    money_q: Decimal = policy["rounding.money"].value
    pct_q: Decimal = policy["rounding.percent"].value
    if terms.apr is None:
        return [*out, "the terms state no APR"]
    if product == "auto":
        if terms.amount is None or terms.term_months is None or app.vehicle_value is None:
            return [*out, "the terms state no amount and term"]
        allowed = policy[f"{p}.termsAllowed"].value
        if terms.term_months not in allowed:
            out.append(f"a term of {terms.term_months} months is not offered ({allowed})")
        minimum = policy[f"{p}.minAmount"].value
        if terms.amount < minimum:
            out.append(f"amount {terms.amount} is below the product minimum {minimum}")
        payment = amortised_payment(terms.amount, terms.apr, terms.term_months, money_q)
        ltv = ltv_pct(terms.amount, app.vehicle_value, pct_q)
        cap = policy[f"{p}.maxLtvPct"].value
        if ltv > cap:
            out.append(f"the offered LTV {ltv}% is over the cap {cap}%")
    else:
        if terms.credit_line is None:
            return [*out, "the terms state no credit line"]
        minimum = policy[f"{p}.minLine"].value
        if terms.credit_line < minimum:
            out.append(f"line {terms.credit_line} is below the product minimum {minimum}")
        if band != "unscored":
            band_line = policy[f"pricing.card.{band}.line"].value
            if terms.credit_line > band_line:
                out.append(f"line {terms.credit_line} is over the {band} band's {band_line}")
        payment = card_payment(terms.credit_line, policy[f"{p}.paymentPctOfLine"].value, money_q)
    dti = dti_pct(app.monthly_debt_payments, payment, app.annual_income, pct_q)
    cap = policy[f"{p}.maxDtiPct"].value
    if dti > cap:
        out.append(f"the offered DTI {dti}% is over the cap {cap}%")
    return out


def _holds(code: str, message: str, **detail: Any) -> Finding:
    return Finding(code=f"backstop.{code}", holds=True, message=message, detail=detail)


def _disagreements(recorded: Decision, derived: Decision) -> list[Finding]:
    findings: list[Finding] = []
    for field in COMPARED_FIELDS:
        got, want = _value(recorded, field), _value(derived, field)
        if got == want:
            continue
        findings.append(
            _holds(
                "disagreement",
                f"{field}: recorded {_show(got)}, the rules underwriter derives {_show(want)}",
                field=field,
                recorded=_wire(got),
                derived=_wire(want),
            )
        )
    return findings


def _show(value: Any) -> str:
    shown = _wire(value)
    if isinstance(shown, Mapping):
        return "{" + ", ".join(f"{k}: {v}" for k, v in shown.items()) + "}"
    if isinstance(shown, list):
        return f"{len(shown)} item(s)" if len(shown) > 1 else repr(shown)
    return str(shown)


def _within_margin(derived: Underwriting) -> list[Finding]:
    codes = [c for c in derived.reason_codes if c in _MARGIN_CODES]
    if not codes:
        return []
    return [
        Finding(
            code="backstop.within_margin",
            holds=False,
            message="the case is within a review margin: "
            + "; ".join(r.text for r in derived.reasons if r.code in _MARGIN_CODES),
            detail={"reasonCodes": codes},
        )
    ]
