"""Running the evals against an underwriter: one row per point, every row computed.

An underwriter is any callable from a case and a policy to a Decision: the rules
engine (:func:`rules_underwriter`, the default) or a model behind the same contract.
An underwriter that raises on a case fails that row; it never stops the run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeAlias

from credit.evals.boundary import Unbuildable, boundary_points
from credit.evals.fairness import controls, fairness_cases, plant
from credit.evals.graders import grade_boundary, grade_fairness, grade_thin_file
from credit.evals.report import EvalReport, EvalResult
from credit.evals.thin_file import thin_file_cases
from credit.fairness_terms import ProhibitedTerms, default_prohibited_terms
from credit.models import Case, Decision
from credit.policy import Policy
from credit.underwriting import decide_case

__all__ = [
    "BOUNDARY",
    "FAIRNESS",
    "THIN_FILE",
    "Underwriter",
    "rules_underwriter",
    "run_all",
    "run_boundary",
    "run_fairness",
    "run_thin_file",
]

Underwriter: TypeAlias = Callable[[Case, Policy], Decision]

BOUNDARY = "policy-boundary"
THIN_FILE = "thin-file"
FAIRNESS = "fairness-guard"


def rules_underwriter(case: Case, policy: Policy) -> Decision:
    """The rules engine's Decision for a case."""
    return decide_case(case, policy).decision


def _decide(underwriter: Underwriter, case: Case, policy: Policy) -> Decision | str:
    try:
        return underwriter(case, policy)
    except Exception as err:  # any underwriter's failure is this row's failure
        return f"the underwriter raised {type(err).__name__}: {err}"


def _unbuildable(suite: str, point: Unbuildable) -> EvalResult:
    return EvalResult(suite, point.name, False, point.reason)


def run_boundary(policy: Policy, underwriter: Underwriter) -> list[EvalResult]:
    rows: list[EvalResult] = []
    for point in boundary_points(policy):
        if isinstance(point, Unbuildable):
            rows.append(_unbuildable(BOUNDARY, point))
            continue
        decision = _decide(underwriter, point.case, policy)
        if isinstance(decision, str):
            rows.append(EvalResult(BOUNDARY, point.name, False, decision))
            continue
        grade = grade_boundary(point, decision, policy)
        rows.append(EvalResult(BOUNDARY, point.name, grade.passed, grade.detail))
    return rows


def run_thin_file(policy: Policy, underwriter: Underwriter) -> list[EvalResult]:
    rows: list[EvalResult] = []
    for item in thin_file_cases(policy):
        if isinstance(item, Unbuildable):
            rows.append(_unbuildable(THIN_FILE, item))
            continue
        decision = _decide(underwriter, item.case, policy)
        if isinstance(decision, str):
            rows.append(EvalResult(THIN_FILE, item.name, False, decision))
            continue
        grade = grade_thin_file(item.case, decision, policy)
        rows.append(EvalResult(THIN_FILE, item.name, grade.passed, grade.detail))
    return rows


def run_fairness(
    policy: Policy, underwriter: Underwriter, terms: ProhibitedTerms
) -> list[EvalResult]:
    """Every built-in decision passes the grader; every planted citation fails it,
    naming what was planted; every near miss passes."""
    rows: list[EvalResult] = []
    decisions: dict[str, Decision] = {}
    for item in fairness_cases(policy):
        if isinstance(item, Unbuildable):
            rows.append(_unbuildable(FAIRNESS, item))
            continue
        decision = _decide(underwriter, item.case, policy)
        if isinstance(decision, str):
            rows.append(EvalResult(FAIRNESS, item.name, False, decision))
            continue
        decisions[item.name] = decision
        grade = grade_fairness(decision, terms)
        rows.append(
            EvalResult(FAIRNESS, f"{item.name}: cites no basis", grade.passed, grade.detail)
        )
    rows += _controls(decisions.values(), terms)
    return rows


def _controls(decisions: Iterable[Decision], terms: ProhibitedTerms) -> list[EvalResult]:
    """Controls are planted in a real decision with factors (an adverse one, if any)."""
    pool = list(decisions)
    base = next((d for d in pool if d.decision == "decline" and d.factors), None)
    base = base or next(iter(pool), None)
    rows: list[EvalResult] = []
    for control in controls(terms):
        name = f"control: {control.name}"
        if base is None:
            rows.append(EvalResult(FAIRNESS, name, False, "no real decision to plant it in"))
            continue
        if grade_fairness(base, terms).failures:
            rows.append(EvalResult(FAIRNESS, name, False, "the real decision already fails"))
            continue
        grade = grade_fairness(plant(base, control), terms)
        if control.expect_cited is None:
            ok = grade.passed
            detail = (
                f"{control.text!r} is not a citation: {grade.detail}"
                if ok
                else f"false positive on {control.text!r}: {grade.detail}"
            )
        else:
            ok = not grade.passed and control.expect_cited in grade.cited
            detail = (
                f"rejected, citing {', '.join(grade.cited)}: {grade.failures[0]}"
                if ok
                else f"the grader did not reject {control.text!r} as {control.expect_cited} "
                f"(cited: {', '.join(grade.cited) or 'nothing'})"
            )
        rows.append(EvalResult(FAIRNESS, name, ok, detail))
    return rows


def run_all(
    policy: Policy,
    underwriter: Underwriter | None = None,
    terms: ProhibitedTerms | None = None,
) -> EvalReport:
    """Every suite against the underwriter (default: the rules engine) under a policy."""
    underwriter = underwriter or rules_underwriter
    terms = terms or default_prohibited_terms()
    return EvalReport.of(
        [
            *run_boundary(policy, underwriter),
            *run_thin_file(policy, underwriter),
            *run_fairness(policy, underwriter, terms),
        ]
    )
