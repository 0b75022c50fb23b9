"""The second line against the rules underwriter, case by case.

The bundled cases and 50,000 generated ones (the batch generator's constructed edges
and its stress population: every cap, margin, rounding half, band floor, thin-file
count and refusal), then smaller stress runs under policies unlike the reference.
On every case ``derive`` and ``decide_case`` must agree on every field ``compare``
names (decision, terms, band, DTI, LTV, reason codes in order with every stated
value, factor texts, confidence), on the figures a Decision does not carry (the step,
the new payment, the line assessed, the counteroffer's payment, DTI and LTV), and on
a refusal's kind and field.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from batch_support import VARIANTS, policy_with
from credit.batch.generate import stress_frame
from credit.batch.schema import frame_to_cases
from credit.catalogue import default_catalogue
from credit.models import Case
from credit.policy import Policy, default_policy
from credit.secondline import Derivation, Difference
from credit.underwriting import Underwriting
from secondline_support import (
    DerivedOutcome,
    UnderwriterOutcome,
    beyond_compare,
    bundled_cases,
    derived,
    differences,
    generated_cases,
    underwritten,
)

POLICY = default_policy()
COUNT = 50_000
SEED = 20_260_717

Run = list[tuple[Case, UnderwriterOutcome, DerivedOutcome]]


def _run(cases: list[Case], policy: Policy = POLICY) -> Run:
    return [(c, underwritten(c, policy), derived(c, policy)) for c in cases]


def _all_differences(run: Run) -> dict[str, list[Difference]]:
    found: dict[str, list[Difference]] = {}
    for case, got, want in run:
        diffs = differences(got, want)
        if isinstance(got, Underwriting) and isinstance(want, Derivation):
            diffs += beyond_compare(got, want)
        if diffs:
            found[case.case_id] = diffs
    return found


def _shown(found: dict[str, list[Difference]], limit: int = 5) -> list[str]:
    return [f"{cid}: {[d.describe() for d in diffs]}" for cid, diffs in list(found.items())[:limit]]


@pytest.fixture(scope="module")
def bundled() -> Run:
    return _run(bundled_cases())


@pytest.fixture(scope="module")
def generated() -> Run:
    return _run(generated_cases(SEED, COUNT, POLICY))


def test_every_bundled_case_is_derived_exactly_as_the_rules_underwriter_decides_it(
    bundled: Run,
) -> None:
    assert len(bundled) == 600
    found = _all_differences(bundled)
    assert not found, _shown(found)


def test_fifty_thousand_generated_cases_are_derived_exactly_as_the_rules_underwriter_decides_them(
    generated: Run,
) -> None:
    assert len(generated) == COUNT
    found = _all_differences(generated)
    assert not found, _shown(found)


def test_the_compared_population_reaches_every_step_reason_offer_and_refusal(
    bundled: Run, generated: Run
) -> None:
    """A differential over cases that never reach a rule says nothing of that rule."""
    decided = [want for _, _, want in bundled + generated if isinstance(want, Derivation)]
    refused = Counter(want for _, _, want in bundled + generated if isinstance(want, tuple))
    steps = Counter(d.step for d in decided)
    assert set(steps) == set(POLICY["steps"].value) and min(steps.values()) > 1_000
    codes = {code for d in decided for code in d.reason_codes}
    assert codes == set(default_catalogue().rule_codes()), "every rule reason is stated"
    assert sum(len(d.reasons) == POLICY["maxReasons"].value for d in decided) > 100
    offers = [d for d in decided if d.offer is not None]
    assert sum(1 for d in offers if d.product == "card") > 100
    longer = [
        d
        for d in offers
        if d.terms and d.terms.term_months and d.terms.term_months > (d.figures.term_months or 0)
    ]
    assert len(longer) > 100, "counteroffers at a longer term than the one requested"
    fields = {where for _, where in refused}
    assert {
        "asOf",
        "application.termMonths",
        "application.requestedAmount",
        "application.requestedLine",
        "scoreBands",
        "creditReport.keyFactors[0].code",
    } <= fields


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_a_policy_unlike_the_reference_is_derived_exactly_as_the_rules_underwriter_decides(
    name: str, tmp_path: Path
) -> None:
    policy = policy_with(VARIANTS[name], tmp_path, name)
    cases = list(frame_to_cases(stress_frame(SEED + 1, 6_000, policy=policy)))
    run = _run(cases, policy)
    found = _all_differences(run)
    assert not found, _shown(found)
    assert len({want.step for _, _, want in run if isinstance(want, Derivation)}) == 5
