"""Evals (the seed's "Evals & guardrails"): graders that take any underwriter's
Decision, and :func:`run_all`, which ``credit eval`` runs.

Suites:
- ``policy-boundary``: the score, band, DTI, LTV and thin-file thresholds applied
  consistently right at their edges (:func:`grade_boundary`);
- ``thin-file``: refers rather than guessing when there is no usable score
  (:func:`grade_thin_file`);
- ``fairness-guard``: any decision citing a prohibited basis or a proxy fails the
  grader outright (:func:`grade_fairness`), with negative controls proving it bites.
"""

from credit.evals.boundary import Unbuildable, boundary_points
from credit.evals.graders import (
    BoundaryPoint,
    Grade,
    grade_boundary,
    grade_fairness,
    grade_thin_file,
)
from credit.evals.oracle import Expectation, expected_outcome
from credit.evals.report import EvalReport, EvalResult
from credit.evals.runner import (
    BOUNDARY,
    FAIRNESS,
    THIN_FILE,
    Underwriter,
    rules_underwriter,
    run_all,
)

__all__ = [
    "BOUNDARY",
    "FAIRNESS",
    "THIN_FILE",
    "BoundaryPoint",
    "EvalReport",
    "EvalResult",
    "Expectation",
    "Grade",
    "Unbuildable",
    "Underwriter",
    "boundary_points",
    "expected_outcome",
    "grade_boundary",
    "grade_fairness",
    "grade_thin_file",
    "rules_underwriter",
    "run_all",
]
