"""The columnar batch underwriter: decisions per second, memory per million cases, and a
million-case differential run against the scalar underwriter.

Every figure is measured in this run; ratios are to baselines measured in the same run.

1. Memory: for 10^4, 10^5 and 10^6 cases, a fresh process reads the cases from
   Parquet and decides them; the peak resident set before and after deciding
   (``getrusage`` maxrss, and VmHWM, which a forked-then-exec'd child does not
   inherit), the frames' own sizes (polars ``estimated_size``), time and memory per
   case, so that linear growth shows as flat per-case figures. Run first, while this
   process is small.
2. Speed, on pre-loaded polars columns, decide time only, best of a few runs, one
   process: a portfolio of a million cases drawn from the bundled generator's
   population (its 20,000 cases, every constructed edge among them, repeated with
   fresh case ids), and a million edge-heavy stress cases (every DTI, LTV and score
   aimed at a cap or margin: a third need the counteroffer search). Baseline: the
   scalar underwriter on the same population, in this process. Target: at least
   1,000,000 decisions a second.
3. The differential: a million generated cases (the bundled generator's edges and
   population, then stress rows with every error the underwriter reports) decided
   by both underwriters, compared column by column, in chunks on every core. It must
   find no difference.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import polars as pl

from credit.batch import decide_frame, frame_to_cases
from credit.batch.differential import compare_slice
from credit.batch.generate import generate_frame, stress_frame
from credit.policy import default_policy
from credit.underwriting import decide_case

MILLION = 1_000_000
POPULATION = 20_000
ROUNDS = 5
TARGET = 1_000_000
SIZES = (10_000, 100_000, 1_000_000)
DIFF_SEED = 2_026_0601
DIFF_CHUNK = 25_000


def _best(fn: Callable[[], object], rounds: int = ROUNDS) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


def population(count: int, seed: int = 2026) -> pl.DataFrame:
    """``count`` cases: the bundled generator's population repeated, fresh ids."""
    base = generate_frame(seed, POPULATION, examples=POPULATION)
    copies = -(-count // base.height)
    frame = pl.concat([base] * copies).head(count)
    return frame.with_columns(
        caseId=pl.format("P-{}", pl.int_range(pl.len()).cast(pl.String).str.zfill(7))
    ).rechunk()  # contiguous columns, as a frame read from one file is


# ---------------------------------------------------------------- 2. speed


def speed() -> None:
    policy = default_policy()
    print(f"2. speed (decide time only, best of {ROUNDS}, one process)")
    frames = {
        "population (bundled generator, 1M)": population(MILLION),
        "stress (edge-heavy, 1M)": stress_frame(7, MILLION, anomalies=False),
    }
    sample = frame_to_cases(frames["population (bundled generator, 1M)"].head(5_000))
    cases = list(sample)
    for case in cases[:200]:
        decide_case(case, policy)
    t_scalar = _best(lambda: [decide_case(c, policy) for c in cases], rounds=3)
    scalar_rate = len(cases) / t_scalar
    print(f"   baseline: scalar underwriter {scalar_rate:,.0f} decisions/s (5,000 cases)")
    for name, frame in frames.items():
        decide_frame(frame.head(10_000), policy)  # warm the plan
        t = _best(lambda f=frame: decide_frame(f, policy))  # type: ignore[misc]
        rate = frame.height / t
        verdict = "met" if rate >= TARGET else "NOT met"
        print(
            f"   {name}: {rate:,.0f} decisions/s ({t * 1e3:.0f} ms per million; "
            f"{rate / scalar_rate:,.0f}x the scalar underwriter; target {TARGET:,}/s {verdict})"
        )


# ---------------------------------------------------------------- 1. memory


def _peak_rss() -> int:
    """This process's peak resident set in bytes: getrusage's maxrss, and on Linux the
    lower of it and /proc/self/status VmHWM (maxrss is carried over from the parent
    across a fork and exec; VmHWM starts afresh with the new program)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                peak = min(peak, int(line.split()[1]) * 1024)
    return peak


def _child(path: str, count: int) -> None:
    """In a fresh process: read ``count`` cases, decide them, report peak memory."""
    import pyarrow as pa

    policy = default_policy()
    frame = pl.read_parquet(path, n_rows=count)
    decide_frame(frame.head(1_000), policy)  # imports and the plan, before the baseline
    before = _peak_rss()
    started = time.perf_counter()
    out = decide_frame(frame, policy)
    seconds = time.perf_counter() - started
    after = _peak_rss()
    print(
        json.dumps(
            {
                "count": count,
                "seconds": seconds,
                "peak_before": before,
                "peak_after": after,
                "input_bytes": frame.estimated_size(),
                "output_bytes": out.estimated_size(),
                "arrow_pool_peak": pa.default_memory_pool().max_memory(),
            }
        )
    )


def _write(path: str, count: int) -> None:
    population(count).write_parquet(path)


def _run_self(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=True
    )
    return done.stdout


def memory() -> None:
    print("1. memory and time by size (a fresh process each; peak RSS: getrusage / VmHWM)")
    with tempfile.TemporaryDirectory() as directory:
        path = str(Path(directory) / "cases.parquet")
        _run_self("--write", path, str(max(SIZES)))  # this process stays small
        rows = [
            json.loads(_run_self("--child", path, str(n)).strip().splitlines()[-1]) for n in SIZES
        ]
    first = rows[0]

    def added(r: dict[str, int]) -> int:
        return max(r["peak_after"] - r["peak_before"], 0)

    print(
        "       cases     decide  per case   peak RSS  added by deciding  per case   "
        "frames in+out  per case   per case vs 10^4 (time, memory)"
    )
    for r in rows:
        n = r["count"]
        frames = r["input_bytes"] + r["output_bytes"]
        t_ratio = (r["seconds"] / n) / (first["seconds"] / first["count"])
        m_ratio = (added(r) / n) / max(added(first) / first["count"], 1e-9)
        print(
            f"   {n:>9,}  {r['seconds'] * 1e3:6.0f} ms  {r['seconds'] / n * 1e6:5.2f} us  "
            f"{r['peak_after'] / 2**20:6.0f} MiB  {added(r) / 2**20:14.1f} MiB  "
            f"{added(r) / n:6.0f} B  {frames / 2**20:10.1f} MiB  {frames / n:6.0f} B   "
            f"{t_ratio:5.2f}x, {m_ratio:5.2f}x"
        )
    top = rows[-1]
    scale = MILLION / top["count"]
    frames = (top["input_bytes"] + top["output_bytes"]) * scale
    print(
        f"   per million cases: {added(top) * scale / 2**20:,.0f} MiB added to the peak by "
        f"deciding; the case and decision frames {frames / 2**20:,.0f} MiB; "
        f"whole process peak {top['peak_after'] / 2**20:,.0f} MiB"
    )


# ---------------------------------------------------------------- 3. differential


def differential() -> None:
    workers = os.cpu_count() or 1
    print(f"3. differential: {MILLION:,} generated cases, columnar vs scalar, {workers} processes")
    started = time.perf_counter()
    frame = generate_frame(DIFF_SEED, MILLION)
    errors = frame.height - decide_frame(frame, default_policy())["errorKind"].null_count()
    with tempfile.TemporaryDirectory() as directory:
        path = str(Path(directory) / "cases.parquet")
        frame.write_parquet(path)
        starts = list(range(0, frame.height, DIFF_CHUNK))
        rows = bad = 0
        shown: list[str] = []
        # spawned, not forked: this process runs polars' thread pool
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            chunks = [DIFF_CHUNK] * len(starts)
            for n, b, s in pool.map(compare_slice, [path] * len(starts), starts, chunks):
                rows, bad = rows + n, bad + b
                shown += s
    wall = time.perf_counter() - started
    print(
        f"   {rows:,} cases compared ({errors:,} of them error rows), {bad:,} differences, "
        f"{wall:.0f} s wall"
    )
    for line in shown[:5]:
        print(f"   DIFFERENCE {line}")
    if bad:
        raise SystemExit("the columnar underwriter differs from the scalar underwriter")


def main() -> None:
    memory()  # first, while this process is small (see _peak_rss)
    speed()
    differential()


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        _child(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) == 4 and sys.argv[1] == "--write":
        _write(sys.argv[2], int(sys.argv[3]))
    else:
        main()
