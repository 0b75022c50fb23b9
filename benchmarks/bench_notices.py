"""Notices verified per second, and the wall time of the whole mutation suite.

The verifier is timed over the genuine notices of the bundled cases (every decline and
counteroffer, rendered once beforehand); the figure is the best of a few rounds.

The ``verifier:`` line times it over notices it has never seen: the genuine notices of
a batch of generated cases (decided, rendered and their expectations built beforehand),
each verified once, in a few groups, the figure that of the fastest group (so nothing
the verifier keeps can be an answer it gave for the same notice; what it keeps is what
recurs across applicants: the frame's lines, the approved wordings filled with the
same values, a reason as stated and what each check found for it, the bureau's lines,
the frame's plan for a shape of notice). Its baseline, measured in the same run over
the same notices, is the floor of reading each notice at all: the SHA-256 of its
canonical bytes and ``json.loads`` of them (what any consumer of a notice file does
before checking anything); the ratio says how close to that floor the verifier runs.
The goal is 20,000 notices/s in one process. Two lines under it say where a notice's
time goes, each part timed over the first group's notices again: hashing the notice
and the expectation, reading the notice, the clear way that passes a genuine notice's
checks (with its three largest parts: V7's frame, V8's disclosure judged from the
values that fill it, the promise scan), and each check run in full (what a notice
that fails a check pays for that check). The
mutation suite is timed end to end as ``credit mutate`` runs it: deciding the cases,
rendering and verifying the genuine notices, 18 mutators on each, and the
meta-mutation (each mutant that fails one check alone verified again with that check
switched off).

At scale, over every core: a batch of generated cases decided, rendered and verified
(:func:`credit.batch.notices.verify_notices`) on one process and on one per core, and
the mutation suite on one worker and on one per core (``credit mutate --workers``);
each parallel run must give the serial run's result. The baseline measured in the
same run is the speedup a pure-CPU task gets from the same processes, which says how
much of the machine was free (the machine may be shared).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from evals import mutations  # noqa: E402

from credit.batch.notices import process_context, verify_notices  # noqa: E402
from credit.cases import iter_cases  # noqa: E402
from credit.examples import generate_cases  # noqa: E402
from credit.guardrails import VerificationReport, Verifier, expectation_for  # noqa: E402
from credit.guardrails import verifier as _verifier  # noqa: E402
from credit.models import parse_case  # noqa: E402
from credit.notice_format import Expectation, Notice  # noqa: E402
from credit.notices import NOTICE_DECISIONS, render_notice  # noqa: E402
from credit.policy import Policy, default_policy  # noqa: E402
from credit.underwriting import decide_case  # noqa: E402

CASES = ROOT / "examples" / "cases.jsonl"
ROUNDS = 5
UNSEEN_CASES = 12_000  # about 3,700 notices, never verified before they are timed
GOAL = 20_000  # notices/s in one process (issue 14)
SCALE_CASES = 6_000  # about 1,800 notices
WORKERS = os.cpu_count() or 1


def _cpu_speedup(workers: int) -> float:
    """How much faster ``workers`` processes run a pure-CPU task than one does, now."""
    work = [range(60_000_000)] * workers  # sum(range(n)): a builtin, so any start method
    started = time.perf_counter()
    for numbers in work:
        sum(numbers)
    serial = time.perf_counter() - started
    with ProcessPoolExecutor(max_workers=workers, mp_context=process_context()) as pool:
        list(pool.map(sum, [range(1)] * workers))  # the processes are up before timing
        started = time.perf_counter()
        list(pool.map(sum, work))
        return serial / (time.perf_counter() - started)


def _unseen_pairs(policy: Policy) -> list[tuple[Notice, Expectation]]:
    pairs = []
    for data in generate_cases(2027, UNSEEN_CASES):
        case = parse_case(data)
        underwriting = decide_case(case, policy)
        if underwriting.decision.decision in NOTICE_DECISIONS:
            pairs.append((render_notice(case, underwriting), expectation_for(case, underwriting)))
    return pairs


def _fastest(groups: list[list[Any]], work: Callable[[Any], object]) -> float:
    """Items per second of the fastest group, each group run once."""
    best = 0.0
    for group in groups:
        started = time.perf_counter()
        for item in group:
            work(item)
        best = max(best, len(group) / (time.perf_counter() - started))
    return best


def unseen(policy: Policy, verifier: Verifier) -> None:
    """The ``verifier:`` line: notices never seen, against the floor of reading them."""
    pairs = _unseen_pairs(policy)
    groups = [pairs[i::ROUNDS] for i in range(ROUNDS)]
    reports: list[VerificationReport] = []
    rate = _fastest(groups, lambda pair: reports.append(verifier.verify(*pair)))
    assert len(reports) == len(pairs) and all(r.passed for r in reports), "a notice failed"
    files = [[notice.canonical_bytes() for notice, _ in group] for group in groups]
    floor = _fastest(files, lambda data: (hashlib.sha256(data).hexdigest(), json.loads(data)))
    print(
        f"verifier: {rate:,.0f} notices/s in one process (goal {GOAL:,}/s; "
        f"{len(pairs):,} unseen notices, fastest of {ROUNDS} groups); baseline the floor "
        f"of reading each notice (sha256 + json.loads of its bytes) {floor:,.0f}/s; "
        f"ratio {rate / floor:.2f} of the floor; {rate / GOAL:.2f}x the goal"
    )
    parts(verifier, groups[0])


def parts(verifier: Verifier, pairs: list[tuple[Notice, Expectation]]) -> None:
    """Where a notice's time goes: the verifier's parts, each over the same notices
    (seen now, so what the verifier keeps for them is kept), microseconds a notice."""
    subjects = [
        _verifier._read(notice, expectation, verifier.pins) for notice, expectation in pairs
    ]
    for subject in subjects:
        _verifier._clear_way(subject)

    def each(work: Callable[[Any], object], items: list[Any]) -> float:
        return 1e6 / _fastest([items] * ROUNDS, work)

    figures = {
        "verify": each(lambda pair: verifier.verify(*pair), pairs),
        "notice SHA-256": each(lambda pair: pair[0].sha256, pairs),
        "expectation SHA-256": each(lambda pair: pair[1].sha256, pairs),
        "reading": each(lambda pair: _verifier._read(pair[0], pair[1], verifier.pins), pairs),
        "the clear way": each(_verifier._clear_way, subjects),
        "(its V7": each(_verifier._v7_legal_frame_intact, subjects),
        "V8's disclosure": each(_verifier._disclosure_clear, subjects),
        "V8's promise scan)": each(
            lambda s: verifier.pins.promise_scan.promises_in(s.notice.text, lines=s.lines()),
            subjects,
        ),
    }
    full = {key: each(check, subjects) for key, check in _verifier._CHECKS.items()}
    shown = "; ".join(f"{name} {us:.1f}" for name, us in figures.items())
    print(f"   where the time goes, us a notice (the same notices again): {shown}")
    print(
        "   each check in full, as when the clear way cannot pass it (us a notice): "
        + ", ".join(f"{key} {us:.1f}" for key, us in full.items())
    )


def at_scale(policy: Policy) -> None:
    print(f"at scale: {SCALE_CASES:,} generated cases, 1 process vs {WORKERS}")
    speedup = _cpu_speedup(WORKERS)
    print(f"   baseline: a pure-CPU task runs {speedup:.2f}x faster on {WORKERS} processes now")
    cases = [parse_case(d) for d in generate_cases(2026, SCALE_CASES)]
    serial = verify_notices(cases, policy, workers=1)
    parallel = verify_notices(cases, policy, workers=WORKERS)
    same = (serial.notices, serial.verified, serial.failures) == (
        parallel.notices,
        parallel.verified,
        parallel.failures,
    )
    print(
        f"   rendered and verified: {serial.per_second:,.0f} notices/s serial, "
        f"{parallel.per_second:,.0f} notices/s on {WORKERS} processes "
        f"({parallel.per_second / serial.per_second:.2f}x; {serial.notices:,} notices, "
        f"all verified: {serial.verified == serial.notices}; same result: {same})"
    )
    started = time.perf_counter()
    one = mutations.run(CASES, policy)
    t_one = time.perf_counter() - started
    started = time.perf_counter()
    many = mutations.run(CASES, policy, workers=WORKERS)
    t_many = time.perf_counter() - started
    identical = mutations.to_wire(one) == mutations.to_wire(many)
    print(
        f"   mutation suite: {t_one:.2f} s on 1 worker, {t_many:.2f} s on {WORKERS} "
        f"({t_one / t_many:.2f}x; identical results: {identical})"
    )
    if not (same and identical):
        raise SystemExit("a parallel run differs from the serial run")


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
    unseen(policy, verifier)

    start = time.perf_counter()
    result = mutations.run(CASES, policy)
    wall = time.perf_counter() - start
    mutants = sum(m.applied for m in result.mutators)
    proofs = sum(c.proofs for c in result.meta)
    print(
        f"mutation suite wall time: {wall:.2f} s ({result.notices} genuine notices, "
        f"{mutants} mutants, {proofs} proofs that a check is needed; "
        f"{'pass' if result.passed else 'FAIL'})"
    )
    at_scale(policy)


if __name__ == "__main__":
    main()
