"""The command line's start-up: how long ``credit`` takes to answer, measured in this run.

Three commands, each run as a fresh process through the installed ``credit`` console
script (the path a person takes), wall time best of 5:

- ``credit --help``;
- ``credit verify NOTICE --expect EXPECTATION``: one notice of the bundled example
  cases against its expectation (both written by ``credit notice --out`` before the
  timing, not timed);
- ``credit decide one.json``: the first bundled example case.

Baseline, in the same run: ``python -c pass`` with the same interpreter, best of 5.
Goal: each command under 200 ms. Prints one line beginning ``cli start:``; exits
non-zero (CalledProcessError) if a command does not answer as it should (verify must
pass, decide must print one decision).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
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


def best_ms(argv: Sequence[str], rounds: int = ROUNDS) -> float:
    """The best wall time of ``rounds`` runs of ``argv`` (each must exit 0), in ms."""
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        best = min(best, time.perf_counter() - started)
    return best * 1000


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
    with tempfile.TemporaryDirectory() as tmp:
        one, notice, expect = _inputs(Path(tmp), credit)
        decided = subprocess.run([*credit, "decide", str(one)], check=True, capture_output=True)
        assert len(decided.stdout.splitlines()) == 1, decided.stdout
        figures = {
            "--help": best_ms([*credit, "--help"]),
            "verify": best_ms([*credit, "verify", str(notice), "--expect", str(expect)]),
            "decide": best_ms([*credit, "decide", str(one)]),
        }
    baseline = best_ms([sys.executable, "-c", "pass"])
    low, high = min(figures.values()) / baseline, max(figures.values()) / baseline
    commands = ", ".join(f"{name} {ms:.0f} ms" for name, ms in figures.items())
    print(
        f"cli start: {commands} (goal {GOAL_MS} ms); baseline python -c pass "
        f"{baseline:.0f} ms; ratio {low:.1f}x-{high:.1f}x the interpreter",
        flush=True,
    )


if __name__ == "__main__":
    main()
