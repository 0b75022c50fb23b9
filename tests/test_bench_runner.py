"""`make bench`'s runner (benchmarks/run.py): a benchmark it loads hands functions of
its own to a process pool (the governed run's ceiling), so they must pickle by name."""

from __future__ import annotations

import importlib.util
import pickle
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _runner() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_runner_under_test", BENCHMARKS / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_benchmark_the_runner_loads_hands_its_functions_to_a_process_pool_by_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))  # the runner adds its folder
    try:
        governed = _runner().load(BENCHMARKS / "bench_governed.py")
        for function in (governed._ceiling_part, governed._warm_up):
            assert pickle.loads(pickle.dumps(function)) is function
        # a spawned process finds the module by its name on the path the runner set
        assert str(BENCHMARKS) in sys.path and sys.modules["bench_governed"] is governed
    finally:
        sys.modules.pop("bench_governed", None)
