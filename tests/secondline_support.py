"""Shared helpers for the second line's tests: the case populations, both
derivations of a case (the rules underwriter's and the second line's), and every
difference between them.

An outcome is either the underwriting / derivation or the error it raised, as
(kind, field or rule): a case one side refuses and the other decides is a difference.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from credit.batch.generate import generate_frame
from credit.batch.schema import frame_to_cases
from credit.cases import iter_cases
from credit.catalogue import Catalogue
from credit.errors import CreditError
from credit.models import Case
from credit.policy import Policy
from credit.secondline import Derivation, Difference, compare, derive
from credit.underwriting import Underwriting, decide_case

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = ROOT / "examples" / "cases.jsonl"

Refusal = tuple[str, str | None]  # the error's class and the field (or rule) it names
UnderwriterOutcome = Underwriting | Refusal
DerivedOutcome = Derivation | Refusal


def bundled_cases() -> list[Case]:
    """Every valid case of examples/cases.jsonl (a line that is not a case is not one)."""
    return [line.case for line in iter_cases(BUNDLED) if line.case is not None]


def generated_cases(seed: int, count: int, policy: Policy) -> list[Case]:
    """The batch generator's seeded population: the bundled generator's constructed
    edges and a stress population aimed at every cap, margin, half, floor and error."""
    return list(frame_to_cases(generate_frame(seed, count, policy=policy)))


def _refusal(err: CreditError) -> Refusal:
    where = getattr(err, "field", None) or getattr(err, "rule", None)
    return type(err).__name__, where


def underwritten(
    case: Case, policy: Policy, catalogue: Catalogue | None = None
) -> UnderwriterOutcome:
    try:
        return decide_case(case, policy, catalogue)
    except CreditError as err:
        return _refusal(err)


def derived(case: Case, policy: Policy, catalogue: Catalogue | None = None) -> DerivedOutcome:
    try:
        return derive(
            case.application,
            case.credit_report,
            policy,
            case_id=case.case_id,
            as_of=case.as_of,
            catalogue=catalogue,
        )
    except CreditError as err:
        return _refusal(err)


def differences(recorded: UnderwriterOutcome, want: DerivedOutcome) -> list[Difference]:
    """What compare() reports, with the reason codes and values the underwriter recorded;
    a refusal on either side is one difference named ``outcome`` unless both refused
    alike."""
    if isinstance(recorded, tuple) or isinstance(want, tuple):
        got = recorded if isinstance(recorded, tuple) else recorded.decision.decision
        expected = want if isinstance(want, tuple) else want.decision
        return [] if got == expected else [Difference("outcome", got, expected)]
    reasons = [(r.code, r.values) for r in recorded.reasons]
    return compare(recorded.decision, reasons, want)


def beyond_compare(recorded: Underwriting, want: Derivation) -> list[Difference]:
    """The figures a Decision does not carry: the deciding step, the new payment of the
    request, and the counteroffer's payment, DTI and LTV."""
    pairs: Sequence[tuple[str, object, object]] = (
        ("step", recorded.step, want.step),
        ("figures.newPayment", recorded.figures.new_payment, want.figures.new_payment),
        ("figures.assessedLine", recorded.figures.assessed_line, want.figures.assessed_line),
        (
            "offer.payment",
            recorded.counteroffer.payment if recorded.counteroffer else None,
            want.offer_payment,
        ),
        (
            "offer.dtiPct",
            recorded.counteroffer.dti_pct if recorded.counteroffer else None,
            want.offer.dti_pct if want.offer else None,
        ),
        (
            "offer.ltvPct",
            recorded.counteroffer.ltv_pct if recorded.counteroffer else None,
            want.offer.ltv_pct if want.offer else None,
        ),
    )
    return [Difference(name, got, expected) for name, got, expected in pairs if got != expected]
