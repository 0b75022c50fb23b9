"""The longer fuzz run: bad input never stops the work.

The laws of ``tests/test_fuzz.py`` (intake; ``credit decide`` and ``credit run`` in
process over batches of good cases with fuzzed lines between them, on SQLite in a
temporary folder; the API in process: case bodies, a decide and a repeated decide, and
the person routes' bodies), over many more inputs drawn from the same strategies
(``tests/test_fuzz_inputs.py``: mutations of the bundled cases, figures at the ends of
their ranges, arbitrary JSON and bytes). An input that breaks a law, or raises anything
but the product's own refusal, is *crashed*; the run prints the first few and exits
non-zero (AssertionError) unless there are none.

Prints one line: the inputs tried, how many were rejected (named), decided, taken in
(intake alone decides nothing), acted on (a person's route took the body), crashed,
and the time. ``BENCH_FUZZ_SCALE`` multiplies the number of inputs (default 1).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

TESTS = Path(__file__).resolve().parents[1] / "tests"
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from test_fuzz import (  # noqa: E402
    Batch,
    api_case_law,
    batch_rows,
    decide_law,
    fuzz_api,
    intake_law,
    person_law,
    person_request,
    run_law,
    seeded_store,
    write_batch,
)
from test_fuzz_inputs import Fuzzed, fuzzed_input  # noqa: E402

SCALE = float(os.environ.get("BENCH_FUZZ_SCALE", "1"))
INTAKE_INPUTS = int(3000 * SCALE)
DECIDE_BATCHES = int(120 * SCALE)
RUN_BATCHES = int(30 * SCALE)
API_BODIES = int(500 * SCALE)
PERSON_BODIES = int(400 * SCALE)
BATCH_LINES = 8
SHOWN = 5


class Tally:
    """What the run tried and how each input ended."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.crashes: list[str] = []
        self.parts: list[str] = []  # "intake 3,000 in 20.1 s", ...
        self._mark = (time.perf_counter(), 0)

    def part(self, name: str) -> None:
        """Close a part of the run: its inputs and its time."""
        began, tried = self._mark
        now = time.perf_counter()
        self.parts.append(f"{name} {self.tried - tried:,} in {now - began:.0f} s")
        self._mark = (now, self.tried)

    @property
    def tried(self) -> int:
        return sum(self.counts.values())

    def crashed(self, what: str, inputs: int = 1) -> None:
        self.counts["crashed"] += inputs
        if len(self.crashes) < SHOWN:
            self.crashes.append(f"{what}\n{traceback.format_exc(limit=6)}")


def _run(examples: int, strategy: st.SearchStrategy[Any], body: Callable[[Any], None]) -> None:
    """Draw ``examples`` inputs (generation only: a crash is counted, not shrunk)."""

    @settings(
        max_examples=max(1, examples),
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def each(value: Any) -> None:
        body(value)

    each()


def _fuzzed_lines(batch: Batch) -> int:
    return len(batch.counted() - set(batch.good))


def main() -> None:
    start = time.perf_counter()
    tally = Tally()

    store = seeded_store()

    def one_intake(fuzzed: Fuzzed) -> None:
        try:
            tally.counts[intake_law(store, fuzzed)] += 1
        except Exception:
            tally.crashed(f"intake: {fuzzed.data[:300]!r} ({', '.join(fuzzed.how)})")

    _run(INTAKE_INPUTS, fuzzed_input(), one_intake)
    tally.part("intake")

    def one_decide(rows: list[Fuzzed | None]) -> None:
        with tempfile.TemporaryDirectory() as folder:
            batch = write_batch(Path(folder), rows)
            fuzzed = _fuzzed_lines(batch)
            try:
                decided, named = decide_law(batch)
            except Exception:
                tally.crashed(f"credit decide: {batch.path.read_bytes()[:600]!r}", fuzzed)
                return
            tally.counts["rejected"] += named
            tally.counts["decided"] += decided - len(batch.good)

    _run(DECIDE_BATCHES, batch_rows(BATCH_LINES), one_decide)
    tally.part("credit decide")

    def one_run(rows: list[Fuzzed | None]) -> None:
        with tempfile.TemporaryDirectory() as folder:
            batch = write_batch(Path(folder), rows)
            fuzzed = _fuzzed_lines(batch)
            try:
                outcome = run_law(batch, Path(folder))
            except Exception:
                tally.crashed(f"credit run: {batch.path.read_bytes()[:600]!r}", fuzzed)
                return
            tally.counts["rejected"] += outcome.named
            tally.counts["decided"] += fuzzed - outcome.named

    _run(RUN_BATCHES, batch_rows(BATCH_LINES), one_run)
    tally.part("credit run")

    with tempfile.TemporaryDirectory() as folder, fuzz_api(Path(folder)) as api:

        def one_body(fuzzed: Fuzzed) -> None:
            try:
                outcome = api_case_law(api, fuzzed)
            except Exception:
                tally.crashed(f"POST /v1/cases: {fuzzed.data[:300]!r}")
                return
            tally.counts["rejected" if outcome != "decided" else "decided"] += 1

        _run(API_BODIES, fuzzed_input(), one_body)
        tally.part("POST /v1/cases")

        def one_person(drawn: tuple[Any, str, bytes]) -> None:
            route, case_id, body = drawn
            try:
                tally.counts[person_law(api, route, case_id, body)] += 1
            except Exception:
                tally.crashed(f"POST {route[0]} {case_id!r}: {body[:300]!r}")

        _run(PERSON_BODIES, person_request, one_person)
        tally.part("person routes")

    seconds = time.perf_counter() - start
    c = tally.counts
    print(
        f"fuzz: tried {tally.tried:,} inputs in {seconds:.1f} s: {c['rejected']:,} rejected "
        f"(named), {c['decided']:,} decided, {c['taken in']:,} taken in (intake only), "
        f"{c['acted on']:,} acted on (person routes), {c['crashed']:,} crashed "
        f"({'; '.join(tally.parts)})",
        flush=True,
    )
    for crash in tally.crashes:
        print(crash, file=sys.stderr)
    assert c["crashed"] == 0, f"{c['crashed']} input(s) crashed (the first {SHOWN} above)"


if __name__ == "__main__":
    main()
