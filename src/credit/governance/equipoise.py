"""Equipoise: the fair-lending review (Orchestration, "Decision reviewed by Equipoise").

Equipoise legitimately reads government-monitoring information (12 CFR 1002.13)
through ``store.get_monitoring``; it runs without the fair-lending guard, and nothing
it reads goes back to the underwriter. Its parameters are data
(``data/fair-lending-review.yaml``), never constants here.

Per decision (:meth:`Equipoise.review`):

* **Prohibited basis cited** (fails, holds the decision): a credit factor or a
  policy-basis entry cites a prohibited basis or a proxy for one, matched whole-word
  by :func:`credit.fairness_terms.find_prohibited`.
* **Comparative file review** (a finding, never a failure): similarly situated
  applicants (same product, same score band, same DTI bucket and, for auto, the same
  LTV bucket) in a different group of a compared attribute (race, ethnicity, sex, age
  band) who received a more favourable outcome (in ``outcomeOrder``: decline <
  counteroffer < refer < approve). A person weighs it; the numbers alone do not prove
  disparate treatment.

Per portfolio (:meth:`Equipoise.portfolio`, :mod:`credit.governance.portfolio`): for
each monitoring attribute, each group's approval rate and adverse impact ratio with
seeded bootstrap confidence intervals, flagged against the four-fifths rule (0.80) and
a watch line (0.90); too-small groups are reported as insufficient, never dropped.

Not formalised here: regression-based disparity analysis, intersectional groups, and
proxy methods (BISG) for applicants who did not provide monitoring information.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from credit.errors import GovernanceError, InputError
from credit.fairness_terms import ProhibitedTerms, default_prohibited_terms, find_prohibited
from credit.governance.fair_lending import (
    NOT_PROVIDED,
    FairLendingConfig,
    RecordedDecision,
    default_fair_lending_config,
    group_of,
    read_monitoring,
)
from credit.governance.findings import Finding, Review
from credit.governance.portfolio import PortfolioReport, adverse_impact_report, portfolio_rows
from credit.journal.base import Entry, Store
from credit.kinds import DECISION_KINDS, KEYSTONE_REJECTED
from credit.models import Decision, MonitoringData, parse_decision
from credit.policy import PolicyRegistry

__all__ = ["Equipoise"]


# ---------------------------------------------------------------- per decision


def _situation(decision: Decision, config: FairLendingConfig) -> tuple[str, str, int, int | None]:
    """What makes two applicants similarly situated: product, band, DTI and LTV bucket."""
    dti = int(decision.dti_pct // config.dti_bucket_pct)
    ltv: int | None = None
    if decision.product == "auto" and decision.ltv_pct is not None:
        ltv = int(decision.ltv_pct // config.ltv_bucket_pct)
    return decision.product, decision.score_band, dti, ltv


def _bucket_text(index: int, width: Decimal) -> str:
    low = width * index
    return f"{low}% to under {low + width}%"


def _citations(decision_wire: Mapping[str, Any], terms: ProhibitedTerms) -> list[Finding]:
    findings: list[Finding] = []
    for field in ("factors", "policyBasis"):
        texts = decision_wire.get(field) or ()
        if isinstance(texts, str) or not isinstance(texts, (list, tuple)):
            continue
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                continue
            matches = find_prohibited(text, terms)
            if not matches:
                continue
            findings.append(
                Finding(
                    code="equipoise.prohibited_basis_cited",
                    holds=True,
                    message=f"{field}[{i}] cites "
                    + "; ".join(dict.fromkeys(m.describe() for m in matches)),
                    detail={
                        "field": f"{field}[{i}]",
                        "text": text,
                        "matches": [
                            {
                                "kind": m.kind,
                                "name": m.name,
                                "bases": list(m.bases),
                                "term": m.term,
                                "reference": m.reference,
                            }
                            for m in matches
                        ],
                    },
                )
            )
    return findings


class Equipoise:
    """The fair-lending review. Reads monitoring data; never runs behind the guard."""

    name = "equipoise"

    def __init__(
        self,
        store: Store,
        *,
        config: FairLendingConfig | None = None,
        terms: ProhibitedTerms | None = None,
        registry: PolicyRegistry | None = None,
    ) -> None:
        self.store = store
        self.registry = registry or PolicyRegistry.bundled()
        self.config = config or default_fair_lending_config()
        self.terms = terms or default_prohibited_terms()
        # Journal entries and stored monitoring data never change once written: cache,
        # and read the journal incrementally (only entries after the last one seen).
        self._decisions: dict[str, Decision | None] = {}
        self._monitoring: dict[str, MonitoringData] = {}
        self._pool_mark = 0
        self._pool: dict[str, tuple[int, RecordedDecision]] = {}
        self._rejected: set[str] = set()

    def _monitoring_of(self, case_id: str) -> tuple[MonitoringData | None, str | None]:
        cached = self._monitoring.get(case_id)
        if cached is not None:
            return cached, None
        data, problem = read_monitoring(self.store, case_id)
        if data is not None:
            self._monitoring[case_id] = data
        return data, problem

    def _basis(self, **extra: Any) -> dict[str, Any]:
        return {
            "config": self.config.label,
            "configSha256": self.config.sha256,
            "prohibitedTerms": f"{self.terms.name} v{self.terms.version}",
            "prohibitedTermsSha256": self.terms.sha256,
            **extra,
        }

    def pool(self) -> list[RecordedDecision]:
        """The decisions a comparative file review compares with: each case's current
        decision (the underwriter's, or the latest officer's), unless a person rejected
        it. Read once and pass it to :meth:`review` to review a batch without reading
        the journal again for each case."""
        for entry in self.store.entries(
            kinds=[*DECISION_KINDS, KEYSTONE_REJECTED], after_seq=self._pool_mark
        ):
            self._pool_mark = entry.seq
            if entry.case_id is None:
                continue
            if entry.kind == KEYSTONE_REJECTED:
                current = self._pool.get(entry.case_id)
                about = entry.payload.get("decisionSeq")
                if current is not None and (about is None or about == current[0]):
                    self._rejected.add(entry.case_id)
                continue
            try:
                decision = parse_decision(entry.payload.get("decision"), case_id=entry.case_id)
            except InputError:
                continue  # unreadable: left out, as recorded_decisions does
            self._pool[entry.case_id] = (entry.seq, RecordedDecision(entry.case_id, decision))
            self._rejected.discard(entry.case_id)
        return [d for case_id, (_, d) in self._pool.items() if case_id not in self._rejected]

    def review(
        self,
        case_id: str,
        *,
        pool: Sequence[RecordedDecision] | None = None,
        entry: Entry | None = None,
    ) -> Review:
        """Review one recorded decision (``entry``, default the underwriter's):
        prohibited-basis citations (fail) and the comparative file review (findings
        for a person). ``pool`` defaults to :meth:`pool` read now."""
        entry = entry or self.store.decision_entry(case_id)
        if entry is None:
            raise GovernanceError("no decision is recorded", case_id=case_id, reviewer=self.name)
        raw = entry.payload.get("decision")
        wire: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        findings = _citations(wire, self.terms)
        try:
            decision = parse_decision(raw, case_id=case_id)
        except InputError as err:
            findings.append(
                Finding(
                    code="equipoise.decision_unreadable",
                    holds=True,
                    message=f"the recorded decision is not a valid Decision: {err}",
                    detail={"field": err.field or ""},
                )
            )
            return Review(
                reviewer="equipoise", case_id=case_id, findings=tuple(findings), basis=self._basis()
            )
        if pool is None:
            pool = self.pool()
        findings.extend(self._comparative(case_id, decision, pool))
        return Review(
            reviewer="equipoise",
            case_id=case_id,
            findings=tuple(findings),
            basis=self._basis(decisionSeq=entry.seq, comparedWith=len(pool) - 1),
        )

    def _comparative(
        self, case_id: str, decision: Decision, pool: Sequence[RecordedDecision]
    ) -> list[Finding]:
        config = self.config
        monitoring, problem = self._monitoring_of(case_id)
        if problem is not None:
            return [
                Finding(
                    code="equipoise.monitoring_unreadable",
                    holds=False,
                    message=f"the monitoring data cannot be read ({problem}); "
                    "no comparative file review",
                    detail={"problem": problem},
                )
            ]
        if monitoring is None:
            return [
                Finding(
                    code="equipoise.no_monitoring_data",
                    holds=False,
                    message="no monitoring data is on file; no comparative file review",
                )
            ]
        here = _situation(decision, config)
        rank = config.rank(decision.decision)
        better: list[tuple[RecordedDecision, MonitoringData]] = []
        for other in pool:
            if other.case_id == case_id or _situation(other.decision, config) != here:
                continue
            if config.rank(other.decision.decision) <= rank:
                continue
            data, _ = self._monitoring_of(other.case_id)
            if data is not None:
                better.append((other, data))
        findings: list[Finding] = []
        product, band, dti, ltv = here
        similar: dict[str, Any] = {
            "product": product,
            "scoreBand": band,
            "dtiBucket": _bucket_text(dti, config.dti_bucket_pct),
        }
        if ltv is not None:
            similar["ltvBucket"] = _bucket_text(ltv, config.ltv_bucket_pct)
        for attribute in config.comparative_attributes:
            group = group_of(attribute, monitoring, config)
            if group == NOT_PROVIDED:
                continue
            comparables = [
                {
                    "caseId": other.case_id,
                    "group": other_group,
                    "decision": other.decision.decision,
                }
                for other, data in better
                if (other_group := group_of(attribute, data, config)) not in (NOT_PROVIDED, group)
            ]
            if not comparables:
                continue
            comparables.sort(key=lambda c: (-config.rank(c["decision"]), c["caseId"]))
            where = ", ".join(f"{k} {v}" for k, v in similar.items())
            findings.append(
                Finding(
                    code="equipoise.comparative_disparity",
                    holds=False,
                    message=(
                        f"{len(comparables)} similarly situated applicant(s) ({where}) in "
                        f"another {attribute} group than {group!r} received a more "
                        f"favourable outcome than this {decision.decision}"
                    ),
                    detail={
                        "attribute": attribute,
                        "group": group,
                        "decision": decision.decision,
                        "similarlySituated": similar,
                        "comparables": comparables,
                    },
                )
            )
        return findings

    def portfolio(self) -> PortfolioReport:
        """The portfolio report over every recorded decision not rejected by a person."""
        rows, rejected, unreadable = portfolio_rows(self.store)
        return adverse_impact_report(
            rows, self.config, rejected_by_person=rejected, unreadable=unreadable
        )
