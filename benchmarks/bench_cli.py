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
that run; the first run after an install or a data change); then ``cli start floor:``,
the floor the command-line library sets: ``import credit.cli, typer._adapters`` with
the command line's exit (its process set-up and typer, with the pydantic that typer
imports to coerce any command's parameters, and nothing of the core), best of 5, and
what ``verify`` and ``decide`` take over it (their own imports, data and work; the help
builds no command, so it is under the floor); then, where valgrind is installed,
``cli start instructions:``, the instructions each of the same commands and the floor
executes (callgrind, ``PYTHONHASHSEED=0``, the warm start-up cache): unlike the times,
they do not move with the machine's load, so a change of a few milliseconds shows. The
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from instructions import instructions_of  # beside this file

ROUNDS = 5
GOAL_MS = 200
# The floor the command-line library sets: the command line's process set-up (the
# collector put off, pydantic's plugins off, its last pass at exit skipped, as main()
# registers it) and typer, with what typer imports to coerce a parameter (typer 0.29
# builds a pydantic TypeAdapter for each), and nothing else. Without the skipped last
# pass the interpreter walks every object at exit, as no command does (about 50 ms here).
FLOOR = (
    "import atexit, credit.cli, typer._adapters; "
    "atexit.register(credit.cli._skip_the_final_collection)"
)
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


def instructions(argv: Sequence[str]) -> int:
    """The instructions one run of ``argv`` executes, counted by callgrind (it must exit
    0), with a fixed hash seed."""
    return instructions_of(list(argv), {**os.environ, "PYTHONHASHSEED": "0"})


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
            counts = (
                {
                    "floor": instructions([sys.executable, "-c", FLOOR]),
                    **{name: instructions(argv) for name, argv in argvs.items()},
                }
                if shutil.which("valgrind")
                else {}
            )
        finally:
            if cache_env is None:
                os.environ.pop("CREDIT_CACHE_DIR", None)
            else:
                os.environ["CREDIT_CACHE_DIR"] = cache_env
    baseline, baseline_cpu = timed_ms([sys.executable, "-c", "pass"])
    floor, floor_cpu = timed_ms([sys.executable, "-c", FLOOR])
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
    over = ", ".join(
        f"{name} {ms - floor:.0f} ms" for name, ms in figures.items() if name != "--help"
    )
    print(
        f"cli start floor: the command line with typer and the pydantic it coerces "
        f"parameters with, nothing of the core, {floor:.0f} ms (cpu {floor_cpu:.0f} ms), "
        f"{floor / GOAL_MS:.0%} of the goal; each command over it: {over}",
        flush=True,
    )
    if counts:
        listed = ", ".join(f"{name} {n / 1e6:,.1f}" for name, n in counts.items())
        print(f"cli start instructions (millions, callgrind): {listed}", flush=True)


if __name__ == "__main__":
    main()
