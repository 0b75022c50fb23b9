"""Decisions per second of the rules underwriter over the bundled cases, in process.

The baseline measured in the same run is the cost of parsing and validating the same
cases (what any caller pays before underwriting), so the ratio reads as "underwriting
costs N x validation".
"""

from __future__ import annotations

import time
from pathlib import Path

from credit.canonical import loads
from credit.models import parse_case
from credit.policy import default_policy
from credit.underwriting import decide_case

CASES = Path(__file__).resolve().parents[1] / "examples" / "cases.jsonl"
ROUNDS = 5


def _best(fn: object, rounds: int = ROUNDS) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    lines = CASES.read_text(encoding="utf-8").splitlines()
    raw = [loads(line) for line in lines if line.strip()]
    cases = [parse_case(doc) for doc in raw]
    policy = default_policy()
    for case in cases:  # warm caches (payment factors)
        decide_case(case, policy)

    def underwrite_all() -> None:
        for case in cases:
            decide_case(case, policy)

    def validate_all() -> None:
        for doc in raw:
            parse_case(doc)

    t_decide = _best(underwrite_all)
    t_validate = _best(validate_all)
    n = len(cases)
    print(f"cases: {n} bundled (best of {ROUNDS} rounds)")
    print(f"underwriter: {n / t_decide:,.0f} decisions/s ({t_decide / n * 1e6:.1f} us/decision)")
    print(f"baseline (parse+validate): {n / t_validate:,.0f} cases/s")
    print(f"ratio underwriting/validation time: {t_decide / t_validate:.2f}x")


if __name__ == "__main__":
    main()
