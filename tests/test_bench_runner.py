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


def test_the_mcp_floor_replays_each_recorded_turn_call_for_call(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The governed run's MCP floor times the SDK on what the pipeline sends: each case's
    real turn (the four governed tools, in the methodology's order, the decision recorded
    once), then the same calls over a session whose server has nothing behind it but the
    recorded results, each call answered with its own."""
    from credit.examples import generate_cases

    monkeypatch.setattr(sys, "path", list(sys.path))
    try:
        governed = _runner().load(BENCHMARKS / "bench_governed.py")
        documents = generate_cases(2026, 3)
        turns = governed.record_turns(f"sqlite:///{tmp_path / 'floor.db'}", documents)
        assert [[name for name, _, _ in turn] for turn in turns] == [
            ["get_application", "get_credit_report", "get_policy", "record_decision"]
        ] * 3
        for document, turn in zip(documents, turns, strict=True):
            assert {r["caseId"] for _, _, r in turn if "caseId" in r} == {document["caseId"]}
            assert turn[-1][2]["recorded"] is True and "decision" in turn[-1][1]
        for mode in ("legacy", governed.MODERN):
            cpu, outcomes = governed.replay_turns(turns, 2, mode)
            assert cpu > 0
            assert [(o.tool, o.ok, o.data) for o in outcomes] == [
                (name, True, result) for turn in turns for name, _, result in turn
            ]
        # a call the replaying server cannot answer is an error, never a result
        missing = [[*turns[0][:1], ("get_credit_report_v2", {}, {})]]
        assert [o.ok for o in governed.replay_turns(missing, 1)[1]] == [True, False]
    finally:
        sys.modules.pop("bench_governed", None)
