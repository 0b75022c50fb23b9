"""The sandboxed tools over MCP: exactly four, bound to one case, every result guarded,
the commit exactly once; in process and over stdio (``credit mcp``)."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import CallToolResult, TextContent

from conftest import auto_case, card_case
from credit.canonical import dumps
from credit.examples import generate_cases
from credit.governance.governor import GUARD_REDACTED, Governor
from credit.governance.guard import find_prohibited_keys
from credit.governance.onramp import intake
from credit.governance.refusal import BOUNDARY_SECOND_RECORD_DECISION
from credit.journal import InMemoryStore, Store, open_store
from credit.journal.naming import decision_id
from credit.kept import ReadOnlyDict, ReadOnlyList, frozen_json
from credit.models import parse_case
from credit.policy import default_policy
from credit.tools import TOOL_NAMES, CaseTools, ToolSession, build_server, jsonable, open_session
from credit.tools.server import DIRECT_PROTOCOL, outcome_of
from credit.underwriting import decide_case

CREDIT = Path(sys.executable).with_name("credit")


def tools_for(store: Store, case_id: str, underwriter: str = "test") -> CaseTools:
    return CaseTools(store, case_id, Governor(store, case_id, underwriter=underwriter))


def taken_in(*cases: dict[str, Any]) -> InMemoryStore:
    store = InMemoryStore()
    for case in cases:
        intake(case, store)
    return store


def in_session(tools: CaseTools, script: Any) -> Any:
    async def main() -> Any:
        async with open_session(tools) as session:
            return await script(session)

    return anyio.run(main)


def decision_wire(case: dict[str, Any]) -> dict[str, Any]:
    wire: dict[str, Any] = jsonable(
        decide_case(parse_case(case), default_policy()).decision.to_wire()
    )
    return wire


def test_the_server_lists_exactly_the_four_tools_with_their_descriptions() -> None:
    store = taken_in(auto_case(case_id="C-1"))

    async def script(session: ToolSession) -> Any:
        return await session.client.list_tools()

    listed = in_session(tools_for(store, "C-1"), script)
    assert [t.name for t in listed.tools] == list(TOOL_NAMES)
    by_name = {t.name: t for t in listed.tools}
    for name in ("get_application", "get_credit_report", "get_policy"):
        assert by_name[name].annotations.read_only_hint is True
        assert by_name[name].input_schema.get("properties") == {}
    assert by_name["record_decision"].annotations.read_only_hint is False
    assert by_name["record_decision"].input_schema["required"] == ["decision"]
    assert "exactly once" in (by_name["record_decision"].description or "")


def test_the_read_tools_serve_the_case_taken_in_and_nothing_of_its_monitoring() -> None:
    raw = {**card_case(case_id="C-READ"), "monitoring": {"sex": "Female", "age": 50}}
    store = taken_in(raw)

    async def script(session: ToolSession) -> list[Any]:
        return [await session.call(name) for name in TOOL_NAMES[:3]]

    app, report, policy = in_session(tools_for(store, "C-READ"), script)
    assert app.ok and report.ok and policy.ok
    assert app.data["caseId"] == "C-READ"
    assert app.data["asOf"] == raw["asOf"]
    assert app.data["application"]["requestedLine"] == raw["application"]["requestedLine"]
    assert report.data["creditReport"]["score"] == raw["creditReport"]["score"]
    assert "Female" not in app.text + report.text + policy.text
    assert policy.data == jsonable(default_policy().to_document())


def test_each_result_is_one_text_block_of_the_governed_results_json_and_nothing_else() -> None:
    """The model reads text: each result is exactly the canonical JSON of what the
    governed tool returned (guarded), once, with no structured copy beside it and no
    output schema for the SDK to validate it against again (the policy document alone
    is 7.7 KB, and each copy cost the SDK several passes)."""
    store = taken_in(auto_case(case_id="C-WIRE"))
    direct = tools_for(store, "C-WIRE", underwriter="direct")
    expected = {name: dumps(direct.call(name)) for name in TOOL_NAMES[:3]}

    async def script(session: ToolSession) -> tuple[Any, list[Any]]:
        listed = await session.client.list_tools()
        return listed, [await session.client.call_tool(name, {}) for name in TOOL_NAMES[:3]]

    listed, results = in_session(tools_for(store, "C-WIRE"), script)
    assert all(tool.output_schema is None for tool in listed.tools)
    for name, result in zip(TOOL_NAMES[:3], results, strict=True):
        assert not result.is_error
        assert result.structured_content is None
        assert [block.type for block in result.content] == ["text"]
        assert result.content[0].text == expected[name]


def test_money_and_percentages_arrive_as_exact_decimal_strings() -> None:
    store = taken_in(auto_case(case_id="C-EXACT"))

    async def script(session: ToolSession) -> list[Any]:
        return [await session.call("get_credit_report"), await session.call("get_policy")]

    report, policy = in_session(tools_for(store, "C-EXACT"), script)
    assert report.data["creditReport"]["utilisationPct"] == "34.0"
    cap = policy.data["parameters"]["products.auto.maxDtiPct"]["value"]
    assert Decimal(cap) == default_policy()["products.auto.maxDtiPct"].value


def test_a_server_is_bound_to_one_case_and_never_serves_another() -> None:
    store = taken_in(auto_case(case_id="C-MINE"), card_case(case_id="C-OTHER"))

    async def script(session: ToolSession) -> Any:
        return await session.call("get_application", {"caseId": "C-OTHER"})

    result = in_session(tools_for(store, "C-MINE"), script)
    assert result.data["caseId"] == "C-MINE"
    assert "C-OTHER" not in result.text


def test_a_tool_that_does_not_exist_cannot_be_called() -> None:
    store = taken_in(auto_case(case_id="C-1"))

    async def script(session: ToolSession) -> Any:
        return await session.call("get_monitoring")

    result = in_session(tools_for(store, "C-1"), script)
    assert not result.ok
    assert "get_monitoring" in result.text
    with pytest.raises(ValueError, match="there is no tool 'get_monitoring'"):
        tools_for(store, "C-1").call("get_monitoring")


def test_a_case_never_taken_in_is_an_error_not_an_empty_result() -> None:
    async def script(session: ToolSession) -> Any:
        return await session.call("get_application")

    result = in_session(tools_for(InMemoryStore(), "C-NONE"), script)
    assert not result.ok
    assert "no case with this id has been taken in" in result.text


class CountingStore(InMemoryStore):
    """A store that counts the reads of each case's document."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: dict[str, int] = {}

    def get_case(self, case_id: str) -> Any:
        self.reads[case_id] = self.reads.get(case_id, 0) + 1
        return super().get_case(case_id)


def test_a_turn_reads_its_case_document_once_for_every_tool_and_the_completion() -> None:
    case = auto_case(case_id="C-ONCE")
    store = CountingStore()
    intake(case, store)
    store.reads.clear()
    tools = tools_for(store, "C-ONCE", underwriter="rules")

    async def script(session: ToolSession) -> Any:
        for name in ("get_application", "get_credit_report", "get_policy"):
            assert (await session.call(name)).ok
        return await session.call("record_decision", {"decision": decision_wire(case)})

    assert in_session(tools, script).ok
    assert store.reads == {"C-ONCE": 1}
    # what the tools serve is the document as stored, unchanged by serving it
    again = tools.get_application()["application"]
    assert store.reads == {"C-ONCE": 1}
    document = store.get_case("C-ONCE")
    assert document is not None and again == jsonable(document["application"])


def test_a_case_never_taken_in_stays_an_error_on_every_call_of_a_turn() -> None:
    store = CountingStore()
    tools = tools_for(store, "C-NONE")

    async def script(session: ToolSession) -> Any:
        return [await session.call(name) for name in ("get_application", "get_credit_report")]

    results = in_session(tools, script)
    assert [r.ok for r in results] == [False, False]
    assert store.reads == {"C-NONE": 2}  # nothing remembered of a case that is not there


def test_record_decision_twice_fails_the_second_time_and_changes_nothing() -> None:
    case = auto_case(case_id="C-TWICE")
    store = taken_in(case)
    tools = tools_for(store, "C-TWICE", underwriter="rules")
    wire = decision_wire(case)
    state: dict[str, Any] = {}

    async def script(session: ToolSession) -> Any:
        first = await session.call("record_decision", {"decision": wire})
        state["entries"] = store.entries()
        state["decision"] = store.decision_entry("C-TWICE")
        second = await session.call("record_decision", {"decision": wire})
        return first, second

    first, second = in_session(tools, script)
    assert first.ok and first.data["status"] == "held"
    assert not second.ok
    assert BOUNDARY_SECOND_RECORD_DECISION in second.text
    assert store.entries() == state["entries"]
    assert store.decision_entry("C-TWICE") == state["decision"]
    assert store.verify().ok
    verdict = tools.governor.verdict()
    assert verdict.violated == (BOUNDARY_SECOND_RECORD_DECISION,)


def test_the_recorded_decision_is_held_for_the_keystone_gate() -> None:
    case = card_case(case_id="C-HELD")
    store = taken_in(case)
    tools = tools_for(store, "C-HELD", underwriter="rules")

    async def script(session: ToolSession) -> Any:
        await session.call("get_policy")
        return await session.call("record_decision", {"decision": decision_wire(case)})

    result = in_session(tools, script)
    entry = store.decision_entry("C-HELD")
    assert entry is not None
    assert result.data == {
        "recorded": True,
        "caseId": "C-HELD",
        "status": "held",
        # named by its content, which is known before its place in the chain (ADR-0002)
        "decisionId": entry.payload["decisionId"],
    }
    assert entry.payload["decisionId"] == decision_id("C-HELD", entry.kind, entry.payload)
    assert entry.payload["status"] == "held"
    assert entry.payload["underwriter"] == "rules"
    assert entry.payload["policy"]["sha256"] == default_policy().sha256
    assert (
        entry.payload["decision"]
        == decide_case(parse_case(case), default_policy()).decision.to_wire()
    )


# ------------------------------------------------------------------ the guard at the seam

PLANTED = ["dateOfBirth", "DOB", "gender", "Marital_Status", "race", "citizenship", "zipCode"]
planted_trees = st.recursive(
    st.sampled_from(PLANTED).map(lambda k: {k: "secret"}),
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=3).map(lambda xs: {"items": xs}),
        st.tuples(st.sampled_from(PLANTED), inner).map(lambda kv: {"nested": {kv[0]: kv[1]}}),
    ),
    max_leaves=6,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(extra=planted_trees, where=st.sampled_from(["application", "creditReport"]))
def test_no_tool_result_ever_reaches_the_underwriter_with_a_prohibited_key(
    extra: dict[str, Any], where: str
) -> None:
    # Planted past intake, straight into the store: the tool seam must still hold.
    case = auto_case(case_id="C-PLANT")
    store = InMemoryStore()
    document = {
        "caseId": "C-PLANT",
        "asOf": case["asOf"],
        "application": case["application"],
        "creditReport": case["creditReport"],
    }
    document[where] = {**document[where], "planted": extra, "dateOfBirth": "1961-04-02"}
    store.put_case("C-PLANT", document)

    async def script(session: ToolSession) -> list[Any]:
        return [await session.call(name) for name in TOOL_NAMES[:3]]

    results = in_session(tools_for(store, "C-PLANT"), script)
    for result in results:
        assert result.ok
        assert find_prohibited_keys(result.data) == []
        assert "secret" not in result.text and "1961" not in result.text
    redacted = store.entries("C-PLANT", kinds=[GUARD_REDACTED])
    assert len(redacted) >= 2
    tool = "get_application" if where == "application" else "get_credit_report"
    for entry in redacted:
        assert entry.payload["tool"] == tool
        assert entry.payload["path"].startswith(f"{where}.")
        assert entry.payload["basis"]
        assert "secret" not in dumps(entry.payload)


# ------------------------------------------------------------------ stdio


def test_the_stdio_server_starts_lists_four_tools_and_records_a_held_decision(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'journal.db'}"
    case = auto_case(case_id="C-STDIO")
    wire = decision_wire(case)
    with open_store(url) as store:
        intake({**case, "application": {**case["application"], "dateOfBirth": "1961"}}, store)
    params = StdioServerParameters(
        command=str(CREDIT),
        args=["mcp", "--case", "C-STDIO", "--underwriter", "stdio-test"],
        env={**os.environ, "CREDIT_DATABASE_URL": url},
    )

    async def main() -> tuple[list[str], Any, Any, Any]:
        with anyio.fail_after(60):
            return await talk()

    async def talk() -> tuple[list[str], Any, Any, Any]:
        async with Client(params) as client:
            session = ToolSession(client)
            names = await session.tool_names()
            app = await session.call("get_application")
            first = await session.call("record_decision", {"decision": wire})
            second = await session.call("record_decision", {"decision": wire})
            return names, app, first, second

    names, app, first, second = anyio.run(main)
    assert names == list(TOOL_NAMES)
    assert "dateOfBirth" not in app.data["application"]
    assert first.ok and first.data["status"] == "held"
    assert not second.ok and BOUNDARY_SECOND_RECORD_DECISION in second.text
    with open_store(url) as store:
        entry = store.decision_entry("C-STDIO")
        assert entry is not None
        assert entry.payload["underwriter"] == "stdio-test"
        assert entry.payload["status"] == "held"
        assert store.verify().ok


def test_credit_mcp_refuses_a_case_that_was_never_taken_in(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'journal.db'}"
    open_store(url).close()
    done = subprocess.run(
        [str(CREDIT), "mcp", "--case", "C-NONE", "--database", url],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "no case with this id has been taken in" in done.stderr
    assert done.stdout == ""


def test_build_server_serves_a_prepared_server_in_process() -> None:
    store = taken_in(auto_case(case_id="C-1"))
    server = build_server(tools_for(store, "C-1"))

    async def main() -> list[str]:
        async with open_session(server) as session:
            return await session.tool_names()

    assert anyio.run(main) == list(TOOL_NAMES)


def test_the_direct_and_the_framed_path_give_every_call_the_same_outcome() -> None:
    """The sessions a run uses go the SDK's direct in-process path; stdio frames every
    call as JSON-RPC. Over the same calls on the same cases (reads, a tool that does not
    exist, arguments the schema refuses, the commit, the second commit) the two paths
    give the same outcomes, text for text (but the hash of the entry recorded, which
    covers the time it was recorded), and journal the same steps."""
    cases = [auto_case(case_id="C-AUTO"), card_case(case_id="C-CARD")]
    cases += generate_cases(14, 6)

    def run(framed: bool) -> tuple[list[tuple[str, bool, Any, str]], list[list[str]]]:
        outcomes: list[tuple[str, bool, Any, str]] = []
        kinds: list[list[str]] = []
        protocols: set[str] = set()
        for case in cases:
            store = taken_in(case)
            underwriting = decide_case(parse_case(case), default_policy())
            wire = jsonable(underwriting.decision.to_wire())
            codes = list(underwriting.reason_codes)
            script: list[tuple[str, dict[str, Any]]] = [
                ("get_application", {}),
                ("get_credit_report", {}),
                ("get_policy", {}),
                ("get_monitoring", {}),
                ("record_decision", {"decision": "not an object"}),
                ("record_decision", {"decision": wire, "reasonCodes": "R01"}),
                ("record_decision", {"decision": wire, "reasonCodes": codes}),
                ("record_decision", {"decision": wire, "reasonCodes": codes}),
            ]

            tools = tools_for(store, case["caseId"], underwriter="rules")

            async def main(tools: CaseTools = tools, script: Any = script) -> None:
                async with open_session(tools, framed=framed) as session:
                    protocols.add(session.client.protocol_version)
                    for name, arguments in script:
                        o = await session.call(name, arguments)
                        outcomes.append((o.tool, o.ok, o.data, o.text))

            anyio.run(main)
            kinds.append([entry.kind for entry in store.entries()])
        # the framed path negotiated a handshake-era version; the direct one adopted its own
        assert (protocols == {DIRECT_PROTOCOL}) is not framed, protocols
        return outcomes, kinds

    direct, framed = run(framed=False), run(framed=True)
    assert direct == framed
    oks = [ok for _, ok, _, _ in direct[0]]
    assert oks == [True, True, True, False, False, False, True, False] * len(cases)
    assert all("decision.recorded" in kinds for kinds in direct[1])


def test_the_sdks_request_spans_are_kept_only_where_a_tracer_provider_collects_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mcp.server._otel import OpenTelemetryMiddleware
    from opentelemetry import trace

    store = taken_in(auto_case(case_id="C-1"))

    def spans() -> int:
        server = build_server(tools_for(store, "C-1"))
        return sum(isinstance(m, OpenTelemetryMiddleware) for m in server.middleware)

    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    assert spans() == 0
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: trace.NoOpTracerProvider())
    assert spans() == 1


# ------------------------------------------------------------------ one server, many turns


def test_one_host_serves_each_case_in_its_turn_and_no_case_between_turns() -> None:
    from credit.tools import ToolHost

    store = taken_in(auto_case(case_id="C-FIRST"), card_case(case_id="C-SECOND"))
    host = ToolHost()

    async def main() -> list[Any]:
        seen: list[Any] = []
        async with open_session(host.server) as session:
            seen.append(await session.call("get_application"))  # no case bound yet
            with host.bound(tools_for(store, "C-FIRST")):
                assert host.case_id == "C-FIRST"
                seen.append(await session.call("get_application", {"caseId": "C-SECOND"}))
            assert host.case_id is None
            seen.append(await session.call("get_credit_report"))  # between turns
            with host.bound(tools_for(store, "C-SECOND")):
                seen.append(await session.call("get_application"))
        return seen

    before, first, between, second = anyio.run(main)
    for refused in (before, between):
        assert not refused.ok
        assert "no case is open on this server" in refused.text
    assert first.ok and first.data["caseId"] == "C-FIRST" and "C-SECOND" not in first.text
    assert second.ok and second.data["caseId"] == "C-SECOND" and "C-FIRST" not in second.text


def test_a_host_bound_to_one_case_cannot_be_bound_to_another_until_the_turn_ends() -> None:
    from credit.tools import ToolHost

    store = taken_in(auto_case(case_id="C-A"), auto_case(case_id="C-B"))
    host = ToolHost()
    with host.bound(tools_for(store, "C-A")):
        refused = pytest.raises(
            RuntimeError, match="serves case C-A; it cannot also serve case C-B"
        )
        with refused, host.bound(tools_for(store, "C-B")):
            pass  # pragma: no cover - never reached
        assert host.case_id == "C-A"  # the refused binding changed nothing
    with host.bound(tools_for(store, "C-B")):
        assert host.case_id == "C-B"


def test_a_turn_that_raises_unbinds_its_case() -> None:
    from credit.tools import ToolHost

    store = taken_in(auto_case(case_id="C-A"))
    host = ToolHost()
    with pytest.raises(KeyError), host.bound(tools_for(store, "C-A")):
        raise KeyError("the turn failed")
    assert host.case_id is None


def test_each_thread_keeps_one_tool_server_and_concurrent_turns_decide_their_own_cases() -> None:
    import threading

    from credit.underwriters.rules import RulesUnderwriter
    from credit.underwriters.runtime import SparkRuntime

    ids = [f"C-T{i:02d}" for i in range(8)]
    store = taken_in(
        *(auto_case(case_id=c) if i % 2 else card_case(case_id=c) for i, c in enumerate(ids))
    )
    runtime = SparkRuntime(store)
    underwriter = RulesUnderwriter()
    hosts: dict[int, set[int]] = {}
    results: dict[str, Any] = {}
    barrier = threading.Barrier(2)

    def work(mine: list[str]) -> None:
        barrier.wait()  # both threads run turns at the same time
        for case_id in mine:
            results[case_id] = runtime.run_turn(case_id, underwriter, serve=True)
            hosts.setdefault(threading.get_ident(), set()).add(id(runtime._local.host))
            assert runtime._local.host.case_id is None  # bound only for its turn

    threads = [threading.Thread(target=work, args=(ids[i::2],)) for i in range(2)]
    for t in threads:
        t.daemon = True  # a thread stuck on another's session must not hang the suite
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a turn never finished"
    assert len(hosts) == 2 and all(len(built) == 1 for built in hosts.values())
    assert len({h for built in hosts.values() for h in built}) == 2  # one server per thread
    for case_id in ids:
        decided = store.decision_entry(case_id)
        assert results[case_id].decision_entry == decided and decided is not None
        expected = decide_case(parse_case(store.get_case(case_id)), default_policy())
        assert decided.payload["decision"]["decision"] == expected.decision.decision
        assert decided.payload["decision"]["product"] == expected.decision.product
        turns = store.entries(case_id, kinds=["underwriter.turn"])
        assert len(turns) == 1 and turns[0].payload["toolCalls"] == list(TOOL_NAMES)


# ------------------------------------------------------------------ the kept session


class SessionsOpened:
    """Counts the MCP sessions the runtime opens (``open_session``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import credit.underwriters.runtime as runtime_module

        self.opened = 0
        real = runtime_module.open_session

        def counted(tools: Any) -> Any:
            self.opened += 1
            return real(tools)

        monkeypatch.setattr(runtime_module, "open_session", counted)


def test_synchronous_turns_on_one_thread_keep_one_session_open_and_each_decides_its_case(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from credit.errors import InputError
    from credit.underwriters.rules import RulesUnderwriter
    from credit.underwriters.runtime import SparkRuntime

    ids = ["C-K1", "C-K2", "C-K3"]
    store = taken_in(
        auto_case(case_id="C-K1"), card_case(case_id="C-K2"), auto_case(case_id="C-K3")
    )
    runtime = SparkRuntime(store)
    underwriter = RulesUnderwriter()
    sessions = SessionsOpened(monkeypatch)
    try:
        first = runtime.run_turn("C-K1", underwriter, serve=True)
        with pytest.raises(InputError, match="no case with this id"):  # raised by the turn
            runtime.run_turn("C-NONE", underwriter, serve=True)
        rest = [runtime.run_turn(c, underwriter, serve=True) for c in ids[1:]]
        assert sessions.opened == 1  # the handshake, listing and validators once
        assert getattr(runtime._local, "served", None) is None  # served only inside a turn
        for case_id, result in zip(ids, [first, *rest], strict=True):
            assert result.decision_entry == store.decision_entry(case_id) is not None
            turns = store.entries(case_id, kinds=["underwriter.turn"])
            assert len(turns) == 1 and turns[0].payload["toolCalls"] == list(TOOL_NAMES)
        # A turn that is not served, on the same thread, runs its own way beside it.
        intake(auto_case(case_id="C-OWN"), store)
        own = runtime.run_turn("C-OWN", underwriter)
        assert own.decision_entry == store.decision_entry("C-OWN") is not None
        assert sessions.opened == 1
    finally:
        runtime.close()


def test_a_closed_runtime_refuses_a_served_turn_and_closes_from_inside_a_running_loop() -> None:
    from credit.underwriters.rules import RulesUnderwriter
    from credit.underwriters.runtime import SparkRuntime

    store = taken_in(auto_case(case_id="C-C1"), auto_case(case_id="C-C2"))
    runtime = SparkRuntime(store)
    underwriter = RulesUnderwriter()
    assert runtime.run_turn("C-C1", underwriter, serve=True).decision_entry is not None
    loop = runtime._local.kept._loop

    async def shutdown() -> None:  # as a server's lifespan does, on its own loop
        runtime.close()

    anyio.run(shutdown)
    assert loop.is_closed()
    with pytest.raises(RuntimeError, match="the runtime was closed"):
        runtime.run_turn("C-C2", underwriter, serve=True)
    fresh = threading_result(lambda: runtime.run_turn("C-C2", underwriter, serve=True))
    assert isinstance(fresh, RuntimeError) and "closed" in str(fresh)
    assert store.decision_entry("C-C2") is None
    runtime.close()  # again: nothing to do


def threading_result(call: Any) -> Any:
    """What ``call`` returns or raises, run on a thread of its own."""
    import threading

    out: list[Any] = []

    def run() -> None:
        try:
            out.append(call())
        except Exception as err:
            out.append(err)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=60)
    return out[0]


def test_the_session_of_a_thread_that_ended_is_ended_when_a_new_thread_opens_its_own() -> None:
    from credit.underwriters.rules import RulesUnderwriter
    from credit.underwriters.runtime import SparkRuntime

    store = taken_in(*(auto_case(case_id=f"C-E{i}") for i in range(4)))
    runtime = SparkRuntime(store)
    underwriter = RulesUnderwriter()
    try:
        for i in range(3):  # three threads, each ended before the next starts
            result = threading_result(
                lambda i=i: runtime.run_turn(f"C-E{i}", underwriter, serve=True)
            )
            assert result.decision_entry is not None
        assert len(runtime._kept) == 1  # the last thread's; the others were ended
        loops = [runtime._kept[0]._loop]
        assert not loops[0].is_closed()
        runtime.run_turn("C-E3", underwriter, serve=True)  # this thread's own
        assert len(runtime._kept) == 1 and loops[0].is_closed()  # the ended thread's closed
    finally:
        runtime.close()


def test_the_policy_is_written_once_for_every_turn_and_each_case_gets_its_own_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The guard shares one cleaned policy document across cases (never modified), so
    the server writes its text once; every other result is written for its call."""
    from credit.tools import ToolHost
    from credit.tools import server as tool_server
    from credit.tools.governed import policy_document

    written: list[Any] = []

    def counted(value: Any, **options: Any) -> str:
        written.append(value)
        return dumps(value, **options)

    monkeypatch.setattr(tool_server, "dumps", counted)
    cases = [auto_case(case_id="C-FIRST"), card_case(case_id="C-SECOND")]
    store = taken_in(*cases)
    host = ToolHost()

    async def main() -> list[tuple[Any, Any]]:
        seen = []
        async with open_session(host.server) as session:
            for case in cases:
                with host.bound(tools_for(store, case["caseId"])):
                    policy = await session.call("get_policy")
                    application = await session.call("get_application")
                    seen.append((policy, application))
        return seen

    (policy_1, first), (policy_2, second) = anyio.run(main)
    assert policy_1.ok and policy_2.ok
    assert policy_1.text == policy_2.text == dumps(policy_document(default_policy()))
    assert first.data["caseId"] == "C-FIRST" and second.data["caseId"] == "C-SECOND"
    # one policy text, two applications: a result that is not the shared one is written
    assert len(written) == 3
    assert sum(1 for value in written if value.get("caseId") is not None) == 2


def test_a_result_text_that_comes_again_is_read_once_more_then_kept_read_only() -> None:
    """The policy document is the same text in every turn of a run: the session reads
    its JSON the second time it comes and keeps that, read-only all the way down, so
    no caller can change what a later call is given (the first caller's copy is its
    own); an application, a new text each case, is read every time."""
    store = taken_in(auto_case(case_id="C-AGAIN"))

    async def script(session: ToolSession) -> list[Any]:
        return [await session.call(name) for name in ("get_policy",) * 3 + ("get_application",)]

    first, second, third, app = in_session(tools_for(store, "C-AGAIN"), script)
    assert first.text == second.text == third.text
    assert dumps(first.data) == dumps(second.data) == first.text
    assert type(first.data) is dict
    first.data["sha256"] = "changed by the first caller"  # its own copy
    assert second.data["sha256"] == default_policy().sha256
    assert third.data is second.data  # kept: not read a third time
    with pytest.raises(TypeError, match="read-only"):
        second.data["sha256"] = "changed"
    with pytest.raises(TypeError, match="read-only"):
        second.data["parameters"]["products.auto.maxDtiPct"]["value"] = "99"
    assert type(app.data) is dict


def test_a_text_that_changes_between_calls_is_read_each_time() -> None:
    """Only a text that comes again right after itself is kept: A, B, A reads each."""

    def result(text: str) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=text)])

    repeated: dict[str, tuple[str, Any]] = {}
    texts = ['{"a":[1,2]}', '{"b":{"c":"3.10"}}', '{"a":[1,2]}', '{"a":[1,2]}', '{"a":[1,2]}']
    outcomes = [outcome_of("t", result(text), repeated) for text in texts]
    assert [type(o.data) for o in outcomes] == [dict, dict, dict, ReadOnlyDict, ReadOnlyDict]
    assert outcomes[3].data == {"a": [1, 2]} and outcomes[4].data is outcomes[3].data
    assert type(outcomes[3].data["a"]) is ReadOnlyList
    assert [dumps(o.data) for o in outcomes] == texts
    assert outcome_of("t", result("not json"), repeated).data is None
    assert outcome_of("t", result("not json"), repeated).data is None  # as read again


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
        max_leaves=20,
    )
)
def test_frozen_json_equals_and_writes_as_the_value_and_nothing_in_it_can_change(
    value: Any,
) -> None:
    frozen = frozen_json(value)
    assert frozen == value and dumps(frozen) == dumps(value)
    assert pickle.loads(pickle.dumps(frozen)) == value
    stack = [frozen]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            assert type(item) is ReadOnlyDict
            with pytest.raises(TypeError, match="read-only"):
                item["new key"] = 1
            stack += item.values()
        elif isinstance(item, list):
            assert type(item) is ReadOnlyList
            with pytest.raises(TypeError, match="read-only"):
                item.append(1)
            stack += item
