"""credit against a peer rules engine (GoRules zen-engine), side by side in one run.

One seeded set of generated cases (``credit.examples``, constructed policy edges plus
an ordinary population) is decided three ways, each timed as the best of a few rounds
on input already in that engine's own form (parsing is not timed for anyone):

* zen-engine: the reference policy's JDM graph (benchmarks/peers/) through
  ``ZenEngine.evaluate_batch``, its fastest batch API (multi-threaded in Rust);
* our scalar rules underwriter, ``decide_case`` per parsed case, one Python thread;
* our columnar underwriter, ``credit.batch.decide_frame`` over one frame.

Before timing, zen's decisions are checked against our scalar's and our columnar's on
every case (decision, step, band, DTI, LTV, terms offered); a disagreement is printed
and marks the run FAIL.

The goals: columnar / zen >= 40x, scalar / zen >= 1x. ``CREDIT_BENCH_PEERS_CASES`` sets
the number of cases (default 20,000).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.peers import jdm, zen_peer  # noqa: E402

from credit.examples import generate_cases  # noqa: E402
from credit.models import Case, parse_case  # noqa: E402
from credit.policy import default_policy  # noqa: E402
from credit.underwriting import decide_case  # noqa: E402

SEED = 2026
CASES = int(os.environ.get("CREDIT_BENCH_PEERS_CASES", "20000"))
ROUNDS = 3
GOALS = {"columnar/zen": 40.0, "scalar/zen": 1.0}


def _best(fn: Callable[[], object], rounds: int = ROUNDS) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _columnar(cases: list[Case]) -> Callable[[], Any] | str:
    """The timed call of the columnar underwriter on the same cases as one frame (the
    flat case schema, docs/batch.md; it returns the decision rows), or why it cannot
    run."""
    try:
        from credit.batch import cases_to_frame, decide_frame
    except ImportError as e:
        return f"credit.batch is not importable ({e}; the 'batch' extra)"
    frame = cases_to_frame(cases, monitoring=False)
    policy = default_policy()
    decide_frame(frame, policy)  # warm-up
    return lambda: decide_frame(frame, policy)


def _report(label: str, n: int, disagreements: list[zen_peer.Disagreement]) -> None:
    verdict = "agree" if not disagreements else f"FAIL: {len(disagreements)} disagreements"
    print(
        f"agreement zen vs {label} on {n} cases (decision, step, band, DTI, LTV, terms): {verdict}"
    )
    for d in disagreements[:10]:
        print(f"  {d}")


def main() -> None:
    policy = default_policy()
    docs = generate_cases(SEED, CASES)
    n = len(docs)
    print(f"cases: {n} generated (seed {SEED}), {_cpus()} CPUs, best of {ROUNDS} rounds")

    cases = [parse_case(doc) for doc in docs]
    ours = [decide_case(case, policy) for case in cases]
    timed: dict[str, float] = {}

    def scalar() -> None:
        for case in cases:
            decide_case(case, policy)

    timed["scalar"] = _best(scalar)

    try:
        peer = zen_peer.ZenPeer(jdm.JDM_PATH)
    except ModuleNotFoundError:
        peer = None
        print("zen-engine: not installed (the 'peers' extra; `make bench` installs it)")
    if peer is not None:
        requests = peer.requests(zen_peer.zen_context(doc) for doc in docs)
        theirs = peer.evaluate_batch(requests)
        _report("our scalar", n, zen_peer.compare(ours, theirs))
        timed["zen"] = _best(lambda: peer.engine.evaluate_batch(requests))
        contexts = [r["context"] for r in requests]
        evaluate = peer.engine.evaluate
        decision_key = zen_peer.DECISION_KEY
        timed["zen-single"] = _best(lambda: [evaluate(decision_key, ctx) for ctx in contexts])

    columnar = _columnar(cases)
    if isinstance(columnar, str):
        print(f"columnar: skipped, {columnar}")
    else:
        if peer is not None:
            rows = columnar().to_dicts()
            _report("our columnar", n, zen_peer.compare_rows(rows, theirs))
        timed["columnar"] = _best(columnar)

    labels = {
        "zen": "zen-engine evaluate_batch (JDM, Rust, all CPUs)",
        "zen-single": "zen-engine evaluate, one call per case (1 thread; for reference)",
        "scalar": "credit scalar decide_case (1 thread)",
        "columnar": "credit columnar decide_frame",
    }
    for key in ("zen", "zen-single", "scalar", "columnar"):
        if key in timed:
            t = timed[key]
            print(f"{labels[key]}: {n / t:,.0f} cases/s ({t / n * 1e6:.2f} us/case)")
    for ratio, goal in GOALS.items():
        top, bottom = ratio.split("/")
        if top in timed and bottom in timed:
            value = timed[bottom] / timed[top]
            mark = "meets" if value >= goal else "MISSES"
            print(f"ratio {ratio}: {value:.2f}x ({mark} the goal >= {goal:g}x)")


if __name__ == "__main__":
    main()
