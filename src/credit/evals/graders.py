"""Graders: each takes any underwriter's :class:`~credit.models.Decision` (the rules
engine's, or a model's) and says whether it keeps the policy or the fair-lending rule.

- :func:`grade_boundary`: a case built exactly at a threshold or margin edge gets the
  decision the policy text gives it, states the DTI/LTV of the edge and the right band,
  and its terms (an approval's and a counteroffer's) and reasons (codes, order and
  stated values, in approved wordings) are the ones the policy describes.
- :func:`grade_thin_file`: a file with no usable score is referred, never guessed at;
  with no score the band is ``unscored`` and the DTI counts existing debt only; the
  referral records exactly why.
- :func:`grade_fairness`: a decision whose factors or policy basis cite a prohibited
  basis or a proxy for one fails outright.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from credit.evals.oracle import (
    Expectation,
    band_of,
    counteroffer_failures,
    expected_figures,
    expected_outcome,
    factor_failures,
    is_thin_file,
    reason_failures,
    terms_failures,
)
from credit.fairness_terms import ProhibitedTerms, default_prohibited_terms
from credit.models import Case, Decision
from credit.policy import Policy, default_policy

__all__ = ["BoundaryPoint", "Grade", "grade_boundary", "grade_fairness", "grade_thin_file"]


@dataclass(frozen=True, slots=True)
class Grade:
    """A grader's verdict: passed when no check failed. ``cited`` names the prohibited
    bases and proxies the fairness grader found (empty for the other graders)."""

    grader: str
    failures: tuple[str, ...]
    summary: str
    cited: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def detail(self) -> str:
        return self.summary if self.passed else "; ".join(self.failures)


@dataclass(frozen=True, slots=True)
class BoundaryPoint:
    """A case that sits exactly on one edge of the policy, with what the policy text
    says of it (computed apart from any underwriter)."""

    name: str
    aim: str  # the edge, in words: "DTI == cap 45.0"
    case: Case
    expectation: Expectation
    band: str
    dti_pct: Decimal  # the DTI the decision must state (the edge itself, rounded)
    ltv_pct: Decimal | None  # likewise for auto; None for a card


def _describe(decision: Decision) -> str:
    ltv = f", LTV {decision.ltv_pct}" if decision.ltv_pct is not None else ""
    return f"{decision.decision} ({decision.score_band}, DTI {decision.dti_pct}{ltv})"


def _common(case: Case, decision: Decision) -> list[str]:
    failures: list[str] = []
    if decision.product != case.application.product:
        failures.append(f"product {decision.product} is not the {case.application.product} asked")
    if not decision.policy_basis:
        failures.append("no policy basis recorded")
    return failures


def grade_boundary(point: BoundaryPoint, decision: Decision, policy: Policy) -> Grade:
    """Expected decision, the stated DTI/LTV equal to the edge, the band, and the terms
    and reasons the policy text describes for that decision."""
    case, expect = point.case, point.expectation
    failures = _common(case, decision)
    if decision.decision not in expect.decisions:
        failures.append(
            f"decided {decision.decision}, the policy says {' or '.join(sorted(expect.decisions))}"
            f" ({expect.rule})"
        )
    if decision.score_band != point.band:
        failures.append(f"band {decision.score_band}, the score's band is {point.band}")
    if decision.dti_pct != point.dti_pct:
        failures.append(f"stated DTI {decision.dti_pct} is not the edge's {point.dti_pct}")
    if decision.ltv_pct != point.ltv_pct:
        failures.append(f"stated LTV {decision.ltv_pct} is not the edge's {point.ltv_pct}")
    figures = expected_figures(case.application, case.credit_report.score, policy)
    if decision.decision == "approve":
        failures += terms_failures(case, decision, figures)
    elif decision.decision == "counteroffer":
        failures += counteroffer_failures(case, decision, figures, policy)
    failures += factor_failures(case, decision, figures, policy)
    failures += reason_failures(decision, expect)
    summary = f"{point.aim}: {expect.rule}; got {_describe(decision)}"
    return Grade("policy-boundary", tuple(failures), summary)


def grade_thin_file(case: Case, decision: Decision, policy: Policy | None = None) -> Grade:
    """A thin file (no score, too few tradelines, too short a history) is referred; the
    band is the score's, ``unscored`` without one, and the DTI and LTV are the request's
    (with no score there is no rate or line, so DTI counts existing debt only)."""
    policy = policy or default_policy()
    why = is_thin_file(case, policy)
    if not why:
        raise ValueError(f"case {case.case_id} is not a thin file under {policy.label}")
    failures = _common(case, decision)
    if decision.decision != "refer":
        failures.append(f"decided {decision.decision}; a thin file ({'; '.join(why)}) is referred")
    if decision.terms is not None:
        failures.append("a referral carries no terms")
    band = band_of(case.credit_report.score, policy)
    if decision.score_band != band:
        failures.append(f"band {decision.score_band}, expected {band}")
    figures = expected_figures(case.application, case.credit_report.score, policy)
    if decision.dti_pct != figures.dti_pct:
        basis = "existing debt only" if band == "unscored" else "the request as made"
        failures.append(f"stated DTI {decision.dti_pct}, {basis} gives {figures.dti_pct}")
    if decision.ltv_pct != figures.ltv_pct:
        failures.append(f"stated LTV {decision.ltv_pct}, the request gives {figures.ltv_pct}")
    if not decision.factors:
        failures.append("a referral records no reason for the reviewer")
    else:
        failures += reason_failures(decision, expected_outcome(case, policy))
    summary = f"thin file ({'; '.join(why)}): step 1, refer; got {_describe(decision)}"
    return Grade("thin-file", tuple(failures), summary)


def grade_fairness(decision: Decision, terms: ProhibitedTerms | None = None) -> Grade:
    """Fails outright when any factor or policy-basis line cites a prohibited basis or a
    proxy for one (whole words, NFKC-normalised; see :mod:`credit.fairness_terms`)."""
    terms = terms or default_prohibited_terms()
    failures: list[str] = []
    cited: list[str] = []
    for field, texts in (("factors", decision.factors), ("policyBasis", decision.policy_basis)):
        for i, text in enumerate(texts):
            for match in terms.find(text):
                failures.append(f"{field}[{i}] cites {match.describe()}: {text!r}")
                cited.append(match.name)
    summary = (
        f"{len(decision.factors)} factor(s) and {len(decision.policy_basis)} policy-basis "
        f"line(s) cite no prohibited basis or proxy ({terms.name} v{terms.version})"
    )
    return Grade("fairness-guard", tuple(failures), summary, tuple(dict.fromkeys(cited)))
