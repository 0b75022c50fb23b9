"""Notices at scale: render and verify the adverse-action notices of a batch on every
core (processes, in chunks).

Each case is decided by the scalar underwriter (a notice states the reasons' exact
values and the bureau's key factors, which only the full case carries); each decline
and counteroffer is rendered (:func:`credit.notices.render_notice`), its expectation
built from the underwriting (:func:`credit.guardrails.expectation_for`), and the
notice verified against it (V1-V8). Chunks of cases go to worker processes and their
results come back in chunk order, so a run with any number of workers gives the same
result as a serial one: the same counts and the same failures in the same order.

Workers are forked where that is safe (Linux, and no polars or pyarrow thread pool in
this process yet) and spawned otherwise. Forked workers read the cases and the policy
as the fork left them (each chunk is a pair of positions): pickling validated cases to
the workers and back into models there took longer than deciding them (0.33 s to
pickle 6,000 in this process, 0.4 s to unpickle, against 0.67 s to decide, render and
verify their notices), so two workers were slower than one. Spawned workers are sent
their chunks.
"""

from __future__ import annotations

import itertools
import multiprocessing
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing.context import BaseContext

from credit.errors import InputError
from credit.guardrails import Verifier, expectation_for
from credit.models import Case
from credit.notices import NOTICE_DECISIONS, render_notice
from credit.policy import Policy, default_policy
from credit.underwriting import decide_case

__all__ = ["NoticeRun", "process_context", "verify_notices"]

DEFAULT_CHUNK = 250

# The cases and policy of each run under way on forked workers, by run: a worker
# forked during a run finds its run's here, as the fork copied them.
_FORKED: dict[int, tuple[Sequence[Case], Policy]] = {}
_RUNS = itertools.count(1)


@dataclass(slots=True)
class NoticeRun:
    """What a notice run did: cases decided, notices rendered and verified, and each
    notice that failed a check (case id, failed checks), in case order."""

    cases: int = 0
    undecided: int = 0  # cases the underwriter could not decide (bad input)
    notices: int = 0
    verified: int = 0
    failures: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    seconds: float = 0.0
    workers: int = 1

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def per_second(self) -> float:
        return self.notices / self.seconds if self.seconds else 0.0

    def add(self, other: NoticeRun) -> None:
        self.cases += other.cases
        self.undecided += other.undecided
        self.notices += other.notices
        self.verified += other.verified
        self.failures += other.failures


def process_context() -> BaseContext:
    """Fork when it is safe (a fork copies no running thread pool), else spawn."""
    threaded = any(name in sys.modules for name in ("polars", "pyarrow"))
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods and not threaded else "spawn")


_VERIFIER: list[Verifier] = []


def _verifier() -> Verifier:
    if not _VERIFIER:
        _VERIFIER.append(Verifier())
    return _VERIFIER[0]


def _run_chunk(cases: Sequence[Case], policy: Policy) -> NoticeRun:
    """Decide, render and verify one chunk (in a worker, or here when serial)."""
    run = NoticeRun()
    verifier = _verifier()
    for case in cases:
        run.cases += 1
        try:
            underwriting = decide_case(case, policy)
        except InputError:
            run.undecided += 1
            continue
        if underwriting.decision.decision not in NOTICE_DECISIONS:
            continue
        notice = render_notice(case, underwriting)
        report = verifier.verify(notice, expectation_for(case, underwriting))
        run.notices += 1
        if report.passed:
            run.verified += 1
        else:
            run.failures.append((case.case_id, tuple(report.failed)))
    return run


def _run_forked(run: int, start: int, stop: int) -> NoticeRun:
    """:func:`_run_chunk` in a forked worker, over the run's cases from ``start`` to
    ``stop`` as the fork copied them."""
    cases, policy = _FORKED[run]
    return _run_chunk(cases[start:stop], policy)


def verify_notices(
    cases: Sequence[Case],
    policy: Policy | None = None,
    *,
    workers: int = 1,
    chunk_size: int = DEFAULT_CHUNK,
) -> NoticeRun:
    """Render and verify the notices of ``cases`` on ``workers`` processes (1: here)."""
    policy = policy or default_policy()
    if workers < 1 or chunk_size < 1:
        raise ValueError("workers and chunk_size must be at least 1")
    started = time.perf_counter()
    starts = range(0, len(cases), chunk_size)
    stops = [start + chunk_size for start in starts]
    total = NoticeRun(workers=workers)
    if workers == 1:
        for start, stop in zip(starts, stops, strict=True):
            total.add(_run_chunk(cases[start:stop], policy))
    elif (context := process_context()).get_start_method() == "fork":
        run = next(_RUNS)
        _FORKED[run] = (cases, policy)  # before the pool forks its workers
        try:
            with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
                for part in pool.map(_run_forked, [run] * len(starts), starts, stops):
                    total.add(part)
        finally:
            del _FORKED[run]
    else:
        chunks = [cases[start:stop] for start, stop in zip(starts, stops, strict=True)]
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            for part in pool.map(_run_chunk, chunks, [policy] * len(chunks)):
                total.add(part)
    total.seconds = time.perf_counter() - started
    return total
