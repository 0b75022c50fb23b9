"""Instructions a governed case costs, counted by valgrind: a steady measure for small changes.

Timing the pipeline on a shared machine moves by a fifth or more from run to run, which
hides a change worth a few percent. The number of instructions the interpreter executes
for the same work does not depend on the machine's load. This script runs the governed
pipeline in process (on a fresh SQLite journal signed with a key of its own, a
directory outbox, the generated cases of seed 1414) under ``valgrind --tool=callgrind``
twice, over a small and a larger batch (the front of one generated batch), with
``PYTHONHASHSEED=0``, no bytecode written and no start-up data cache (so neither run
leaves work done for the other to skip); the difference over the difference in cases
is one case's instructions, with the interpreter's start-up and imports cancelled out.

    python benchmarks/instructions.py                  # 20 and 120 cases
    python benchmarks/instructions.py --source ../old/src   # the same for another tree

``--source`` runs another checkout's ``src`` (a ``git worktree`` of the commit before a
change, say), so a change is measured as the difference of two such figures. It is not
part of ``make bench`` (it takes a few minutes, and needs valgrind); system calls such
as fsync are not counted, only the instructions of this process.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SEED = 1414
POOL = 1_000  # every run takes its cases from the front of the same generated batch
_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def refs_in(report: str) -> int:
    """The instruction count callgrind prints at the end (``I refs: 7,331,509,005``)."""
    found = _REFS.findall(report)
    if not found:
        raise ValueError("callgrind printed no instruction count ('I refs:')")
    return int(found[-1].replace(",", ""))


def per_case(small: tuple[int, int], large: tuple[int, int]) -> float:
    """Instructions a case from two (cases, instructions) runs of the same code."""
    (cases_a, refs_a), (cases_b, refs_b) = small, large
    if cases_b <= cases_a:
        raise ValueError("the larger run must decide more cases than the smaller")
    return (refs_b - refs_a) / (cases_b - cases_a)


def child(cases: int) -> None:
    """Run the governed pipeline over ``cases`` generated cases (the counted work)."""
    from credit.examples import generate_cases
    from credit.journal import open_store
    from credit.journal.keys import keygen
    from credit.journal.signer import JournalKey
    from credit.notices import DirectoryOutbox
    from credit.pipeline import BatchLine, Pipeline

    if not 0 < cases <= POOL:
        raise SystemExit(f"a run decides 1 to {POOL:,} cases")
    documents = generate_cases(SEED, POOL)[:cases]  # generated in full: the same work
    with tempfile.TemporaryDirectory(prefix="credit-instructions-") as folder:
        root = Path(folder)
        # a signing key of the run's own, whatever the folder it is started from holds
        key = JournalKey(keygen(root / "journal.key", "credit.bench/instructions"))
        with open_store(f"sqlite:///{root / 'journal.db'}", key=key) as store:
            pipeline = Pipeline(store, DirectoryOutbox(root / "outbox"))
            lines = [BatchLine(i, d) for i, d in enumerate(documents, start=1)]
            summary = pipeline.run(lines)
    if summary.decided != cases or summary.failures:
        raise SystemExit(f"the run decided {summary.decided} of {cases} cases")


def counted(cases: int, source: Path | None) -> int:
    """The instructions of one run of :func:`child` under callgrind."""
    # Both runs do the same start-up work whatever was run before: no bytecode or
    # parsed data written by the first for the second to find (each would be counted
    # in one run only, and bias the difference).
    env = {
        **os.environ,
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "CREDIT_CACHE_DIR": "",  # empty: the data files parsed in every run
        # numpy's OpenBLAS starts a thread that spins for a while after each use (the
        # case generator's): its instructions grow with the run's wall time under
        # valgrind, not with the work, and moved a count by tens of millions
        "OPENBLAS_NUM_THREADS": "1",
    }
    if source is not None:
        env["PYTHONPATH"] = str(source)
    return instructions_of(
        [sys.executable, str(Path(__file__).resolve()), "--child", str(cases)], env
    )


def instructions_of(argv: list[str], env: dict[str, str]) -> int:
    """The instructions one run of ``argv`` executes under callgrind (SystemExit with
    its stderr if it fails)."""
    with tempfile.TemporaryDirectory(prefix="credit-callgrind-") as folder:
        done = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={Path(folder) / 'callgrind.out'}",
                *argv,
            ],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    if done.returncode != 0:
        raise SystemExit(f"the counted run failed:\n{done.stderr[-2000:]}")
    return refs_in(done.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=20, help="cases in the smaller run")
    parser.add_argument("--large", type=int, default=120, help="cases in the larger run")
    parser.add_argument("--source", type=Path, help="another checkout's src to count")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child)
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    small = (args.small, counted(args.small, args.source))
    large = (args.large, counted(args.large, args.source))
    print(
        f"instructions: {per_case(small, large) / 1e6:.2f} M a governed case "
        f"({small[1]:,} over {small[0]} cases, {large[1]:,} over {large[0]}; "
        f"source {args.source or 'this checkout'})"
    )


if __name__ == "__main__":
    main()
