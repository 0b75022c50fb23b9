"""`make bench`: speed figures, each measured in this run (no stored baselines).

Every benchmark script in this folder named ``bench_*.py`` exposes ``main() -> None``
and prints its own figures; this runner calls them in name order. Each is imported
under its own name (this folder on the path, the module in ``sys.modules``), so that
a function of it that a benchmark hands to a pool of processes pickles by name.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent


def load(script: Path) -> ModuleType:
    """The benchmark ``script``, imported under its own name (see the module docs)."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    spec = importlib.util.spec_from_file_location(script.stem, script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[script.stem] = module
    spec.loader.exec_module(module)
    return module


def main() -> int:
    for script in sorted(HERE.glob("bench_*.py")):
        module = load(script)
        print(f"== {script.stem}", flush=True)
        module.main()
    return 0


if __name__ == "__main__":
    sys.exit(main())
