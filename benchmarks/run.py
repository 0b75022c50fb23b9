"""`make bench`: speed figures, each measured in this run (no stored baselines).

Every benchmark script in this folder named ``bench_*.py`` exposes ``main() -> None``
and prints its own figures; this runner runs them in name order, each in a fresh
interpreter of its own (``run.py --one SCRIPT``), so that no benchmark's figures depend
on what an earlier one left in the process: its imports (a thread pool that makes the
process pools start by spawning instead of forking), its heap, its caches. Each is
imported there under its own name (this folder on the path, the module in
``sys.modules``), so that a function of it that a benchmark hands to a pool of
processes pickles by name. A benchmark that fails does not stop the others; the runner
names it at the end and exits non-zero.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent


def load(script: Path) -> ModuleType:
    """The benchmark ``script``, imported under its own name (see the module docs)."""
    if str(script.parent) not in sys.path:
        sys.path.insert(0, str(script.parent))
    spec = importlib.util.spec_from_file_location(script.stem, script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[script.stem] = module
    spec.loader.exec_module(module)
    return module


def run_all(folder: Path = HERE) -> list[str]:
    """Each ``bench_*.py`` of ``folder``, in name order, in a process of its own; the
    names of those that failed (exited non-zero)."""
    failed = []
    for script in sorted(folder.glob("bench_*.py")):
        print(f"== {script.stem}", flush=True)
        done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--one", str(script)])
        if done.returncode != 0:
            print(f"!! {script.stem} failed (exit code {done.returncode})", flush=True)
            failed.append(script.stem)
    return failed


def main(argv: list[str]) -> int:
    if argv[:1] == ["--one"] and len(argv) == 2:
        load(Path(argv[1]).resolve()).main()
        return 0
    if argv:
        print("usage: run.py [--one benchmarks/bench_NAME.py]", file=sys.stderr)
        return 2
    # The figures depend on the interpreter's build as much as on the code (the Makefile
    # chooses it: docs/performance.md, "The interpreter"), so the run names it.
    base = Path(getattr(sys, "_base_executable", sys.executable)).resolve()
    print(f"interpreter: Python {sys.version.split()[0]}, {base} (in {sys.prefix})")
    failed = run_all()
    if failed:
        print(f"make bench: {len(failed)} benchmark(s) failed: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
