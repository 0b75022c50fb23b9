"""Backstop: the model-risk review (Orchestration, "Decision reviewed by ... Backstop").

Backstop re-derives every recorded decision on its own: with the second line
(:mod:`credit.secondline`, a deliberate second implementation of the methodology that
imports nothing of the underwriter: an import contract proves it), from the same tool
data the underwriter was served (the case document from ``store.get_case``:
application and credit report, never monitoring data) under the policy in force on the
case's ``asOf`` date, and compares every figure. Its findings:

* ``backstop.disagreement`` (holds): the recorded decision differs from the
  re-derivation in the decision, the terms, the score band, the DTI, the LTV, the
  reason codes or their order, a reason's stated value, a factor's wording, or a
  counteroffer's payment. Each differing field is one finding, naming the field and
  both values.
* ``backstop.policy_version`` (holds): the policy cited in ``policyBasis[0]``
  (``policy=<name> v<version> effective <date> sha256:<hex>``) is not the one in force
  on the case's date, by SHA-256 and version; or the citation is missing or malformed.
* ``backstop.confidence_floor`` (holds): an underwriter's approve, decline or
  counteroffer whose confidence is below the policy's ``confidenceFloor``. (A referral
  already goes to a person.) ``backstop.confidence_differs`` (recorded): the
  underwriter's confidence is not the methodology's (docs/confidence.md).
* ``backstop.policy_exception`` (holds, for two reviewers): a credit officer's
  decision less favourable than the policy derives for the file, or with terms outside
  the policy's caps, prices or bounds.
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
from credit.journal.naming import decision_ref
from credit.kinds import OFFICER_DECIDED
from credit.lifecycle import recorded_reasons
from credit.models import Application, Case, CreditReport, Decision, recorded_decision, stored_case
from credit.policy import Policy, PolicyRegistry
from credit.secondline import Derivation, Difference, compare, derive
from credit.secondline.derive import capacity, score_band
from credit.secondline.exact import amortised_payment, card_payment, dti_pct, ltv_pct

__all__ = ["COMPARED_FIELDS", "Backstop", "PolicyCitation", "parse_policy_citation"]

# The fields of a Decision the re-derivation must match (the outcome contract's content
# and the reasons; the confidence is judged against the floor).
COMPARED_FIELDS = (
    "decision",
    "terms",
    "scoreBand",
    "dtiPct",
    "ltvPct",
    "reasonCodes",
    "reasons",
    "factors",
    "offer.payment",
)

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


def _wire(value: Any) -> Any:
    if value is None or isinstance(value, (str, Decimal, int)):
        return value
    if isinstance(value, tuple):
        return [_wire(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _wire(v) for k, v in value.items()}
    to_wire = getattr(value, "to_wire", None)
    if callable(to_wire):
        return to_wire()
    return str(value)


class Backstop:
    """The model-risk review: an independent re-derivation (the second line)."""

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
        self.catalogue = catalogue or default_catalogue()
        # The order of outcomes, least favourable first (the fair-lending review's data).
        self.outcome_order = default_fair_lending_config().outcome_order

    def review(self, case_id: str, *, entry: Entry | None = None) -> Review:
        """Review one recorded decision (``entry``, default the underwriter's)."""
        entry = entry or self.store.decision_entry(case_id)
        if entry is None:
            raise GovernanceError("no decision is recorded", case_id=case_id, reviewer=self.name)
        basis: dict[str, Any] = decision_ref(entry.seq, entry.payload)
        findings: list[Finding] = []

        def done() -> Review:
            return Review(
                reviewer="backstop", case_id=case_id, findings=tuple(findings), basis=basis
            )

        try:
            decision = recorded_decision(entry)
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
        try:
            derived: Derivation | None = derive(
                case.application,
                case.credit_report,
                policy,
                case_id=case_id,
                as_of=case.as_of,
                catalogue=self.catalogue,
            )
        except CreditError as err:
            derived = None
            basis["derivedDecision"] = f"none ({err})"
            if entry.kind != OFFICER_DECIDED:
                findings.append(
                    _holds("rederivation_failed", f"the second line could not decide it: {err}")
                )
                return done()
        if derived is not None:
            basis["derivedDecision"] = derived.decision
            basis["derivedStep"] = derived.step
        if entry.kind == OFFICER_DECIDED:
            findings.extend(self._officer(decision, entry, case, policy, derived))
            return done()
        assert derived is not None
        findings.extend(self._floor(decision, policy))
        findings.extend(_disagreements(decision, entry.payload, derived))
        findings.extend(_within_margin(derived))
        return done()

    # ------------------------------------------------------------ a person's decision

    def _officer(
        self,
        decision: Decision,
        entry: Entry,
        case: Case,
        policy: Policy,
        derived: Derivation | None,
    ) -> list[Finding]:
        """A credit officer's decision: a policy exception holds it for two reviewers;
        its figures and reasons must be the file's."""
        findings: list[Finding] = []
        app, report = case.application, case.credit_report
        try:
            band = score_band(report.score, policy, case_id=case.case_id)
            figures = capacity(app, report.score, band, policy)
        except CreditError as err:
            return [_holds("rederivation_failed", f"the request's figures: {err}")]
        for field, got, want in (
            ("scoreBand", decision.score_band, band),
            ("dtiPct", decision.dti_pct, figures.dti_pct),
            ("ltvPct", decision.ltv_pct, figures.ltv_pct),
        ):
            if got != want:
                findings.append(_disagreement(Difference(field, got, want), "the request's figure"))
        findings.extend(
            self._officer_reasons(
                entry.payload, app, report, policy, figures.dti_pct, figures.ltv_pct
            )
        )
        exceptions: list[str] = []
        if derived is not None:
            order = self.outcome_order
            want = derived.decision
            if want != "refer" and order.index(decision.decision) < order.index(want):
                exceptions.append(
                    f"a {decision.decision} is less favourable than the {want} the policy "
                    "derives for this file"
                )
        exceptions += _outside_policy(decision, case, policy, band)
        payment = _offered_payment(decision, app, policy)
        recorded_payment = (entry.payload.get("offer") or {}).get("payment")
        if decision.decision == "counteroffer" and recorded_payment != payment:
            findings.append(
                _disagreement(Difference("offer.payment", recorded_payment, payment), "the terms'")
            )
        findings += [
            _holds("policy_exception", f"policy exception: {text}", decision=decision.decision)
            for text in exceptions
        ]
        return findings

    def _officer_reasons(
        self,
        payload: Mapping[str, Any],
        app: Application,
        report: CreditReport,
        policy: Policy,
        dti: Decimal,
        ltv: Decimal | None,
    ) -> list[Finding]:
        """Each recorded reason is one a person may cite, and states the figures the file
        gives it (checked here by a second mapping of the catalogue's fields, written
        apart from credit.reason_facts, which stated them)."""
        findings: list[Finding] = []
        for i, (code, values) in enumerate(recorded_reasons(payload) or ()):
            entry = self.catalogue.entries.get(code)
            if entry is None or not entry.person_may_cite:
                findings.append(
                    _holds("disagreement", f"reasons[{i}]: {code} may not be cited by a person")
                )
                continue
            for name in entry.states:
                want = _file_value(name, entry.bureau_code, entry.derogatory_kinds, app, report)
                if want is None:
                    want = _policy_value(name, app, policy, self.catalogue, dti, ltv)
                got = values.get(name)
                if got != want:
                    findings.append(
                        _disagreement(
                            Difference(f"reasons[{i}].values.{name}", got, want), "the file's"
                        )
                    )
        return findings

    # ------------------------------------------------------------ reading and checks

    def _case(self, case_id: str, findings: list[Finding]) -> Case | None:
        document = self.store.get_case(case_id)
        if document is None:
            findings.append(_holds("case_unreadable", "no case document is on file"))
            return None
        try:
            return stored_case(document)
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


def _money(value: Decimal) -> str:
    """``$24,000.00`` (Backstop's own, to check the figures a reason states)."""
    whole, _, cents = f"{value.quantize(Decimal('0.01')):f}".partition(".")
    groups: list[str] = []
    while len(whole) > 3:
        groups.insert(0, whole[-3:])
        whole = whole[:-3]
    return "$" + ",".join([whole, *groups]) + "." + cents


def _file_value(
    name: str,
    bureau_code: str | None,
    kinds: tuple[str, ...],
    app: Application,
    report: CreditReport,
) -> str | None:
    """A figure a reason states that comes straight from the case file."""
    simple: dict[str, Any] = {
        "tradelines": report.tradelines,
        "historyMonths": report.history_months,
        "bureauName": report.bureau.name,
        "score": report.score,
    }
    if name in simple and simple[name] is not None:
        return str(simple[name])
    money: dict[str, Decimal | None] = {
        "annualIncome": app.annual_income,
        "monthlyDebtPayments": app.monthly_debt_payments,
        "vehicleValue": app.vehicle_value,
        "requestedAmount": app.requested_amount,
    }
    amount = money.get(name)
    if amount is not None:
        return _money(amount)
    if name == "keyFactorValue":
        found = [k.value for k in report.key_factors if k.code == bureau_code]
        return found[0] if found else None
    months = [d.months_ago for d in report.derogatories if d.kind in kinds]
    if name == "derogatoryCount" and months:
        return str(len(months))
    if name == "lastDerogatoryMonthsAgo" and months:
        return str(min(months))
    return None


def _policy_value(
    name: str,
    app: Application,
    policy: Policy,
    catalogue: Catalogue,
    dti: Decimal,
    ltv: Decimal | None,
) -> str | None:
    """A figure a reason states from the policy, or the request's ratios."""
    p = f"products.{app.product}"
    if name == "productName":
        return catalogue.product_names[app.product]
    if name == "minScore":
        return str(policy[f"{p}.minScore"].value)
    if name == "maxDtiPct":
        return str(policy[f"{p}.maxDtiPct"].value)
    if name == "maxLtvPct" and app.product == "auto":
        return str(policy[f"{p}.maxLtvPct"].value)
    if name == "dtiPct":
        return str(dti)
    if name == "ltvPct" and ltv is not None:
        return str(ltv)
    return None


def _offered_payment(decision: Decision, app: Application, policy: Policy) -> Decimal | None:
    terms = decision.terms
    if terms is None or terms.apr is None:
        return None
    money: Decimal = policy["rounding.money"].value
    if app.product == "auto":
        if terms.amount is None or terms.term_months is None:
            return None
        return amortised_payment(terms.amount, terms.apr, terms.term_months, money)
    if terms.credit_line is None:
        return None
    return card_payment(terms.credit_line, policy["products.card.paymentPctOfLine"].value, money)


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
    pct: Decimal = policy["rounding.percent"].value
    payment = _offered_payment(decision, app, policy)
    if payment is None:
        return [*out, "the terms do not state what the product needs"]
    if product == "auto":
        assert terms.amount is not None and terms.term_months is not None
        assert app.vehicle_value is not None
        allowed = policy[f"{p}.termsAllowed"].value
        if terms.term_months not in allowed:
            out.append(f"a term of {terms.term_months} months is not offered ({allowed})")
        minimum = policy[f"{p}.minAmount"].value
        if terms.amount < minimum:
            out.append(f"amount {terms.amount} is below the product minimum {minimum}")
        ltv = ltv_pct(terms.amount, app.vehicle_value, pct)
        cap = policy[f"{p}.maxLtvPct"].value
        if ltv > cap:
            out.append(f"the offered LTV {ltv}% is over the cap {cap}%")
    else:
        assert terms.credit_line is not None
        minimum = policy[f"{p}.minLine"].value
        if terms.credit_line < minimum:
            out.append(f"line {terms.credit_line} is below the product minimum {minimum}")
        if band != "unscored":
            band_line = policy[f"pricing.card.{band}.line"].value
            if terms.credit_line > band_line:
                out.append(f"line {terms.credit_line} is over the {band} band's {band_line}")
    dti = dti_pct(app.monthly_debt_payments, payment, app.annual_income, pct)
    cap = policy[f"{p}.maxDtiPct"].value
    if dti > cap:
        out.append(f"the offered DTI {dti}% is over the cap {cap}%")
    return out


def _holds(code: str, message: str, **detail: Any) -> Finding:
    return Finding(code=f"backstop.{code}", holds=True, message=message, detail=detail)


def _disagreement(difference: Difference, source: str = "the second line's") -> Finding:
    return _holds(
        "disagreement",
        f"{difference.field}: recorded {_show(difference.recorded)}, {source} derivation is "
        f"{_show(difference.derived)}",
        field=difference.field,
        recorded=_wire(difference.recorded),
        derived=_wire(difference.derived),
    )


def _disagreements(
    recorded: Decision, payload: Mapping[str, Any], derived: Derivation
) -> list[Finding]:
    findings: list[Finding] = []
    for difference in compare(recorded, recorded_reasons(payload), derived):
        if difference.field == "confidence":
            findings.append(
                Finding(
                    code="backstop.confidence_differs",
                    holds=False,
                    message=f"confidence: recorded {difference.recorded}, the methodology "
                    f"gives {difference.derived} (docs/confidence.md)",
                    detail={
                        "recorded": _wire(difference.recorded),
                        "derived": _wire(difference.derived),
                    },
                )
            )
            continue
        findings.append(_disagreement(difference))
    if recorded.decision == "counteroffer" and derived.decision == "counteroffer":
        offer = payload.get("offer")
        payment = offer.get("payment") if isinstance(offer, Mapping) else None
        if payment != derived.offer_payment:
            findings.append(
                _disagreement(Difference("offer.payment", payment, derived.offer_payment))
            )
    return findings


def _show(value: Any) -> str:
    shown = _wire(value)
    if isinstance(shown, Mapping):
        return "{" + ", ".join(f"{k}: {v}" for k, v in shown.items()) + "}"
    if isinstance(shown, list):
        return f"{len(shown)} item(s)" if len(shown) > 1 else repr(shown)
    return str(shown)


def _within_margin(derived: Derivation) -> list[Finding]:
    codes = [c for c in derived.reason_codes if c in _MARGIN_CODES]
    if not codes:
        return []
    texts = list(derived.factors)
    return [
        Finding(
            code="backstop.within_margin",
            holds=False,
            message="the case is within a review margin: "
            + "; ".join(
                t
                for (code, _), t in zip(derived.reasons, texts, strict=True)
                if code in _MARGIN_CODES
            ),
            detail={"reasonCodes": codes},
        )
    ]
