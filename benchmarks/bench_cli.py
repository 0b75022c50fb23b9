"""The command line's start-up: how long ``credit`` takes to answer, measured in this run.

Three commands, each run as a fresh process through the installed ``credit`` console
script (the path a person takes), wall time best of 5:

- ``credit --help``;
- ``credit verify NOTICE --expect EXPECTATION``: one notice of the bundled example
  cases against its expectation (both written by ``credit notice --out`` before the
  timing, not timed);
- ``credit decide one.json``: the first bundled example case.

Baseline, in the same run: ``python -c pass`` with the same interpreter, best of 5.
Goal: each command under 200 ms. Prints one line beginning ``cli start:``, then one
beginning ``cli start cpu:`` with the CPU time (user + system) of the same runs, best
of 5 (steadier than wall time on a shared machine), and each command's first run from
an empty start-up cache (``$CREDIT_CACHE_DIR``: the data's parse, made by
that run; the first run after an install or a data change). The
timed runs use a cache of their own, made by the runs before them. Exits non-zero
(CalledProcessError) if a command does not answer as it should (verify must pass,
decide must print one decision).
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

ROUNDS = 5
GOAL_MS = 200
EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "cases.jsonl"


def credit_command() -> list[str]:
    """The ``credit`` console script beside this interpreter (else ``python -m``)."""
    script = Path(sys.executable).with_name("credit")
    if script.exists():
        return [str(script)]
    found = shutil.which("credit")
    return [found] if found else [sys.executable, "-m", "credit.cli"]


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def timed_ms(
    argv: Sequence[str], rounds: int = ROUNDS, env: Mapping[str, str] | None = None
) -> tuple[float, float]:
    """The best wall time and the best CPU time of ``rounds`` runs of ``argv`` (each must
    exit 0), in ms."""
    wall = cpu = float("inf")
    for _ in range(rounds):
        cpu_before, started = _children_cpu(), time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        wall = min(wall, time.perf_counter() - started)
        cpu = min(cpu, _children_cpu() - cpu_before)
    return wall * 1000, cpu * 1000


def best_ms(argv: Sequence[str], rounds: int = ROUNDS) -> float:
    """The best wall time of ``rounds`` runs of ``argv`` (each must exit 0), in ms."""
    return timed_ms(argv, rounds)[0]


def _inputs(folder: Path, credit: list[str]) -> tuple[Path, Path, Path]:
    """One case (the first example) and one notice with its expectation."""
    lines = EXAMPLES.read_text(encoding="utf-8").splitlines()
    one = folder / "one.json"
    one.write_text(lines[0] + "\n", encoding="utf-8")
    notices = folder / "notices"
    subprocess.run(
        [*credit, "notice", str(EXAMPLES), "--out", str(notices)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    notice = sorted(notices.glob("*.notice.json"))[0]
    expect = notice.with_name(notice.name.replace(".notice.json", ".expect.json"))
    return one, notice, expect


def main() -> None:
    credit = credit_command()
    cache_env = os.environ.get("CREDIT_CACHE_DIR")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["CREDIT_CACHE_DIR"] = str(Path(tmp) / "cache")
        try:
            one, notice, expect = _inputs(Path(tmp), credit)
            decided = subprocess.run([*credit, "decide", str(one)], check=True, capture_output=True)
            assert len(decided.stdout.splitlines()) == 1, decided.stdout
            argvs = {
                "--help": [*credit, "--help"],
                "verify": [*credit, "verify", str(notice), "--expect", str(expect)],
                "decide": [*credit, "decide", str(one)],
            }
            cold = {
                name: timed_ms(
                    argv, 1, {**os.environ, "CREDIT_CACHE_DIR": str(Path(tmp) / f"cold-{i}")}
                )[0]
                for i, (name, argv) in enumerate(argvs.items())
                if name != "--help"
            }
            timed = {name: timed_ms(argv) for name, argv in argvs.items()}
        finally:
            if cache_env is None:
                os.environ.pop("CREDIT_CACHE_DIR", None)
            else:
                os.environ["CREDIT_CACHE_DIR"] = cache_env
    baseline, baseline_cpu = timed_ms([sys.executable, "-c", "pass"])
    figures = {name: wall for name, (wall, _) in timed.items()}
    low, high = min(figures.values()) / baseline, max(figures.values()) / baseline
    commands = ", ".join(f"{name} {ms:.0f} ms" for name, ms in figures.items())
    print(
        f"cli start: {commands} (goal {GOAL_MS} ms); baseline python -c pass "
        f"{baseline:.0f} ms; ratio {low:.1f}x-{high:.1f}x the interpreter",
        flush=True,
    )
    cpu = ", ".join(f"{name} {ms:.0f} ms" for name, (_, ms) in timed.items())
    first = ", ".join(f"{name} {ms:.0f} ms" for name, ms in cold.items())
    print(
        f"cli start cpu: {cpu}; baseline {baseline_cpu:.0f} ms; first run from an empty "
        f"start-up cache (wall): {first}",
        flush=True,
    )


if __name__ == "__main__":
    main()
