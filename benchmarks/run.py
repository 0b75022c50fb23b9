"""`make bench`: speed figures, each measured in this run (no stored baselines).

Every benchmark script in this folder named ``bench_*.py`` exposes ``main() -> None``
and prints its own figures; this runner calls them in name order.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    for script in sorted(HERE.glob("bench_*.py")):
        spec = importlib.util.spec_from_file_location(script.stem, script)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        print(f"== {script.stem}", flush=True)
        module.main()
    return 0


if __name__ == "__main__":
    sys.exit(main())
