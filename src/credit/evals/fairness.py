"""The fairness-guard cases and the negative controls that prove the grader bites.

The built-in cases reach every outcome for both products (approve, decline with the
bureau's key factors, counteroffer on DTI and on LTV, referral within margin, on a
dispute, with no score, on a thin file); every decision on them must cite no
prohibited basis or proxy.

A negative control is a copy of a real decision with one citation planted in it: the
grader must reject it and name what was planted. One control per basis and per proxy
in the prohibited-terms file, and the planted forms a model could produce: "because of
your age" in a factor, "zip code 90210" in the policy basis, full-width letters, a
zero-width space inside the word, a field name. Near-miss controls plant words that
merely contain a term ("percentage", "mortgage", "Essex"); the grader must pass them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal

from credit.errors import CreditError
from credit.evals.boundary import Unbuildable, comfortable
from credit.evals.cases import build_case
from credit.fairness_terms import ProhibitedTerms
from credit.models import Case, Decision
from credit.policy import Policy

__all__ = ["Control", "FairnessCase", "controls", "fairness_cases", "plant"]

# Bureau key factors for the declines (codes the reason catalogue maps).
_KEY_FACTORS = (
    ("10", "Proportion of balances to credit limits on revolving accounts is too high", "34%"),
    ("14", "Length of time accounts have been established", "2 years"),
    ("08", "Too many inquiries last 12 months", "5 inquiries"),
)


@dataclass(frozen=True, slots=True)
class FairnessCase:
    name: str
    case: Case


@dataclass(frozen=True, slots=True)
class Control:
    """A planted change to a real decision, and what the grader must make of it:
    ``expect_cited`` names the entry it must find, or None when it must find nothing."""

    name: str
    field: str  # "factors" or "policyBasis"
    text: str  # appended to the first line of that field (or added as a line)
    expect_cited: str | None


@dataclass(frozen=True, slots=True)
class _Spec:
    label: str
    score: int | None
    dti_pct: Decimal
    ltv_pct: Decimal
    tradelines: int | None = None
    dispute: bool = False
    key_factors: bool = False


def fairness_cases(policy: Policy) -> Iterator[FairnessCase | Unbuildable]:
    q: Decimal = policy["rounding.percent"].value
    counter = iter(range(1, 10_000))
    for product in ("auto", "card"):
        ok = comfortable(policy, product)
        p = f"products.{product}"
        under: int = policy[f"{p}.minScore"].value - 1
        cap: Decimal = policy[f"{p}.maxDtiPct"].value
        over = cap + policy["margins.dtiPct"].value
        thin: int = policy["thinFile.minTradelines"].value - 1
        s, d, v = ok.score, ok.dti_pct, ok.ltv_pct
        specs = [
            _Spec("approve", s, d, v),
            _Spec("decline on score, with key factors", under, d, v, key_factors=True),
            _Spec("over the DTI cap", s, over, v),
            _Spec("decline on DTI far over the cap", s, cap * 3 + q, v),
            _Spec("DTI at the cap, within margin", s, cap, v),
            _Spec("unresolved dispute", s, d, v, dispute=True),
            _Spec("no score", None, d, v),
            _Spec("thin file", s, d, v, tradelines=thin),
        ]
        if product == "auto":
            ltv_over = policy["products.auto.maxLtvPct"].value + policy["margins.ltvPct"].value
            specs.append(_Spec("over the LTV cap", s, d, ltv_over))
        for spec in specs:
            name = f"{product} {spec.label}"
            try:
                case = build_case(
                    f"EV-FAIR-{next(counter):03d}",
                    policy,
                    product=product,
                    score=spec.score,
                    dti_raw=spec.dti_pct,
                    ltv_raw=spec.ltv_pct,
                    tradelines=spec.tradelines,
                    unresolved_dispute=spec.dispute,
                    key_factors=_KEY_FACTORS if spec.key_factors else (),
                )
            except (CreditError, ValueError) as err:
                yield Unbuildable(name, f"no case: {err}")
                continue
            yield FairnessCase(name, case)


def controls(terms: ProhibitedTerms) -> list[Control]:
    """The planted citations (each must be rejected) and near misses (each must pass)."""
    planted = [
        Control(
            "'because of your age' appended to a factor", "factors", "because of your age", "age"
        ),
        Control("'zip code 90210' in the policy basis", "policyBasis", "zip code 90210", "zipCode"),
        Control("full-width 'ａｇｅ' in a factor", "factors", "because of your ａｇｅ", "age"),
        Control(
            "zero-width space inside 'age' in a factor",
            "factors",
            "because of your a\u200bge",
            "age",
        ),
        Control(
            "field name 'application.dateOfBirth' in the policy basis",
            "policyBasis",
            "application.dateOfBirth=1961-04-02",
            "age",
        ),
        Control(
            "'Marital-Status' hyphenated in a factor",
            "factors",
            "Marital-Status: divorced",
            "maritalStatus",
        ),
    ]
    for entry in terms.entries:
        term = entry.terms[0]
        where = "factors" if entry.kind == "basis" else "policyBasis"
        planted.append(
            Control(
                f"{entry.kind} {entry.name}: '{term}' in the {where}",
                where,
                f"considered the applicant's {term}",
                entry.name,
            )
        )
    misses = [
        Control(
            "near miss 'percentage' is not flagged",
            "factors",
            "a high percentage of balances",
            None,
        ),
        Control(
            "near miss 'mortgage' is not flagged", "factors", "an existing mortgage payment", None
        ),
        Control("near miss 'Essex' is not flagged", "policyBasis", "bureau office in Essex", None),
        Control(
            "near miss 'average age of accounts' is not flagged",
            "factors",
            "average age of accounts is 2 years",
            None,
        ),
    ]
    return planted + misses


def plant(decision: Decision, control: Control) -> Decision:
    """A copy of the decision with the control's text appended to the first line of its
    field (a new line when the field is empty). Validation is kept: it is a Decision."""
    lines = list(decision.factors if control.field == "factors" else decision.policy_basis)
    if lines:
        lines[0] = f"{lines[0]} {control.text}"
    else:
        lines.append(control.text)
    field = "factors" if control.field == "factors" else "policy_basis"
    changed = decision.model_copy(update={field: tuple(lines)})
    return Decision.model_validate(changed.model_dump())
