"""Notices verified per second, and the wall time of the whole mutation suite.

The verifier is timed over the genuine notices of the bundled cases (every decline and
counteroffer, rendered once beforehand); the figure is the best of a few rounds. The
mutation suite is timed end to end as ``credit mutate`` runs it: deciding the cases,
rendering and verifying the genuine notices, 14 mutators on each, and the
meta-mutation (each of V1-V8 switched off in turn).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from evals import mutations  # noqa: E402

from credit.cases import iter_cases  # noqa: E402
from credit.guardrails import Verifier, expectation_for  # noqa: E402
from credit.notices import NOTICE_DECISIONS, render_notice  # noqa: E402
from credit.policy import default_policy  # noqa: E402
from credit.underwriting import decide_case  # noqa: E402

CASES = ROOT / "examples" / "cases.jsonl"
ROUNDS = 5


def main() -> None:
    policy = default_policy()
    pairs = []
    for entry in iter_cases(CASES):
        if entry.case is None:
            continue
        underwriting = decide_case(entry.case, policy)
        if underwriting.decision.decision in NOTICE_DECISIONS:
            pairs.append(
                (render_notice(entry.case, underwriting), expectation_for(entry.case, underwriting))
            )
    verifier = Verifier()
    best = float("inf")
    for _ in range(ROUNDS):
        start = time.perf_counter()
        reports = [verifier.verify(notice, expectation) for notice, expectation in pairs]
        best = min(best, time.perf_counter() - start)
    assert all(r.passed for r in reports), "a genuine notice failed verification"
    print(
        f"notices verified per second: {len(pairs) / best:,.0f} "
        f"({len(pairs)} notices, best of {ROUNDS} rounds, "
        f"{best / len(pairs) * 1e3:.2f} ms each)"
    )

    start = time.perf_counter()
    result = mutations.run(CASES, policy)
    wall = time.perf_counter() - start
    mutants = sum(m.applied for m in result.mutators)
    meta = sum(c.mutants for c in result.meta)
    print(
        f"mutation suite wall time: {wall:.2f} s ({result.notices} genuine notices, "
        f"{mutants} mutants, {meta} meta-mutation reruns; "
        f"{'pass' if result.passed else 'FAIL'})"
    )


if __name__ == "__main__":
    main()
