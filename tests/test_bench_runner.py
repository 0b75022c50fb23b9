"""`make bench`'s runner (benchmarks/run.py): each benchmark in a fresh process, and one
that fails named without stopping the rest; a benchmark it loads hands functions of
its own to a process pool (the governed run's ceiling), so they must pickle by name.
And the bounds the benchmarks print beside the goals they measure: the governed run's
MCP floor (the tool calls replayed, each answered with its own result) and the
service's load bound (the CPU of the server and of every process under it)."""

from __future__ import annotations

import importlib.util
import os
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


FRESH = {
    "bench_a_leaves.py": """
import sys
sys.modules["left_by_bench_a"] = sys
def main():
    print("a ran")
""",
    "bench_b_fails.py": """
def main():
    raise SystemExit("b could not measure")
""",
    "bench_c_finds.py": """
import pickle, sys
def mine():
    pass
def main():
    print("c sees a's module:", "left_by_bench_a" in sys.modules)
    print("c pickles by name:", pickle.loads(pickle.dumps(mine)) is mine)
""",
    "not_a_bench.py": "raise SystemExit('never run')",
}


def test_each_benchmark_runs_in_a_fresh_process_and_one_that_fails_stops_none_after_it(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """What one benchmark leaves in its process (an import, a thread pool that makes
    process pools spawn) cannot change the figures of the next; a failure is named at
    the end, after the benchmarks that follow it have run."""
    for name, text in FRESH.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert _runner().run_all(tmp_path) == ["bench_b_fails"]
    out = capfd.readouterr()
    assert out.out.splitlines() == [
        "== bench_a_leaves",
        "a ran",
        "== bench_b_fails",
        "!! bench_b_fails failed (exit code 1)",
        "== bench_c_finds",
        "c sees a's module: False",
        "c pickles by name: True",
    ]
    assert "b could not measure" in out.err and "never run" not in out.err


def test_the_runner_refuses_what_it_does_not_know(capfd: pytest.CaptureFixture[str]) -> None:
    assert _runner().main(["--two"]) == 2
    assert "usage: run.py" in capfd.readouterr().err


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
        for framed in (False, True):
            cpu, outcomes = governed.replay_turns(turns, 2, framed)
            assert cpu > 0
            assert [(o.tool, o.ok, o.data) for o in outcomes] == [
                (name, True, result) for turn in turns for name, _, result in turn
            ]
        # a call the replaying server cannot answer is an error, never a result
        missing = [[*turns[0][:1], ("get_credit_report_v2", {}, {})]]
        assert [o.ok for o in governed.replay_turns(missing, 1)[1]] == [True, False]
    finally:
        sys.modules.pop("bench_governed", None)


BURN = """
import subprocess, sys, time
if sys.argv[1:] == ["child"]:
    started = time.process_time()
    while time.process_time() - started < 0.3:
        pass
    print("burnt", flush=True)
    time.sleep(30)
else:
    child = subprocess.Popen([sys.executable, "-c", sys.argv[1], "child"])
    child.wait()
"""


def test_the_service_load_bound_counts_the_cpu_of_the_server_and_every_process_under_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The service benchmark's load bound reads the CPU of ``credit serve`` and of its
    workers (processes it started, which did the work): a grandchild's CPU is the
    server's too, and the server is found by its port among this process's children."""
    import subprocess

    monkeypatch.setattr(sys, "path", list(sys.path))
    try:
        service = _runner().load(BENCHMARKS / "bench_service.py")
        server = subprocess.Popen(
            [sys.executable, "-c", BURN, BURN, "serve", "--port", "54321"],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert server.stdout is not None and server.stdout.readline() == "burnt\n"
            assert service._server_pid("http://127.0.0.1:54321") == server.pid
            with pytest.raises(RuntimeError, match="54322"):
                service._server_pid("http://127.0.0.1:54322")
            assert 0.3 <= service._process_tree_cpu(server.pid) < 5
        finally:
            for pid in [p for p, (up, _) in service._processes().items() if up == server.pid]:
                subprocess.run(["kill", str(pid)], check=False)
            server.kill()
            server.wait()
            if server.stdout is not None:
                server.stdout.close()
        line = service.load_bound(server=8.0, client=2.0, cases=200, rate=20.0, clients=32)
        cores = os.cpu_count() or 1
        assert f"{8000 / 200:.1f} ms CPU a case" in line and "generator 10.0 ms" in line
        assert f"at most {cores * 1000 / 50:,.0f} cases/s" in line
        assert f"at least {32 * 40 / cores:,.0f} ms in all" in line
    finally:
        sys.modules.pop("bench_service", None)


def _instructions() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "instructions_under_test", BENCHMARKS / "instructions.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_instruction_count_is_read_from_callgrinds_report_and_divided_per_case() -> None:
    instructions = _instructions()
    report = (
        "==1== Events    : Ir\n==1== Collected : 7331509005\n==1== \n"
        "==1== I   refs:      7,331,509,005\n"
    )
    assert instructions.refs_in(report) == 7_331_509_005
    with pytest.raises(ValueError, match="no instruction count"):
        instructions.refs_in("==1== valgrind: command not found\n")
    assert instructions.per_case((20, 5_525_848_657), (120, 7_331_509_005)) == pytest.approx(
        18_056_603.48
    )
    with pytest.raises(ValueError, match="larger run"):
        instructions.per_case((120, 2), (20, 1))


def test_the_counted_run_decides_the_cases_it_is_given() -> None:
    instructions = _instructions()
    instructions.child(3)  # raises SystemExit unless all three are decided
    with pytest.raises(SystemExit, match="1 to 1,000 cases"):
        instructions.child(instructions.POOL + 1)
