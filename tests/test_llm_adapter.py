"""The LLM underwriter on the Claude Agent SDK: the sandbox it builds (options field by
field, and the CLI flags they become), the in-process tools and the PostToolUse guard
layer; driven end to end by a scripted model in place of the SDK's query loop (there is
no network here) and graded by the same evals as the rules underwriter."""

from __future__ import annotations

import datetime as dt
import re
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("claude_agent_sdk")

from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ProcessError,
    ResultMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from claude_agent_sdk._internal.transport.subprocess_cli import (
    SubprocessCLITransport,
)
from mcp import Client

from conftest import auto_case, card_case
from credit.canonical import dumps, loads
from credit.errors import (
    MissingExtraError,
    ModelApiError,
    ModelSessionError,
    NoDecisionError,
    UnderwriterError,
    UnderwriterTimeoutError,
    UnknownToolError,
)
from credit.evals import boundary_points, grade_boundary, grade_fairness
from credit.evals.boundary import Unbuildable
from credit.evals.runner import run_all, run_thin_file
from credit.governance.governor import GUARD_REDACTED, Governor
from credit.governance.onramp import intake
from credit.governance.refusal import (
    BOUNDARY_DECISION_CITES_PROHIBITED_BASIS,
    BOUNDARY_SECOND_RECORD_DECISION,
    TYPED_REFUSAL_PREFIX,
)
from credit.journal import InMemoryStore
from credit.models import Application, CreditReport, parse_decision
from credit.policy import PolicyRegistry, default_policy
from credit.tools import TOOL_NAMES, CaseTools, jsonable
from credit.underwriters import (
    SPARK_METHODOLOGY,
    UNDERWRITER_TURN,
    RulesUnderwriter,
    SparkRuntime,
    TurnContext,
)
from credit.underwriters.claude import (
    ALLOWED_TOOLS,
    BUILTIN_TOOLS,
    SANDBOX_ENV,
    ClaudeUnderwriter,
    evals_underwriter,
    mcp_tool_name,
)
from credit.underwriters.prompt import methodology_prompt
from credit.underwriters.transcripts import TRANSCRIPT_FORMAT, TRANSCRIPTS_ENV, read_transcript
from credit.underwriting import underwrite

POLICY = default_policy()
REGISTRY = PolicyRegistry([POLICY])


@pytest.fixture(autouse=True)
def _transcripts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test's transcripts go to its own folder, never to ./transcripts."""
    folder = tmp_path / "transcripts"
    monkeypatch.setenv(TRANSCRIPTS_ENV, str(folder))
    return folder


# ------------------------------------------------------------------ the scripted model


class ModelTools:
    """What the scripted model can do: call a tool the way Claude Code would (only an
    allowed tool, through the in-process server, PostToolUse hooks run on the result)."""

    def __init__(self, client: Client, options: ClaudeAgentOptions, calls: list[str]) -> None:
        self.client = client
        self.options = options
        self.calls = calls

    async def call(self, tool: str, arguments: dict[str, Any] | None = None) -> tuple[bool, Any]:
        full = mcp_tool_name(tool)
        if full not in self.options.allowed_tools:
            raise AssertionError(f"{full} is not an allowed tool")
        self.calls.append(tool)
        result = await self.client.call_tool(tool, arguments or {})
        response: Any = [{"type": "text", "text": b.text} for b in result.content]
        for matcher in (self.options.hooks or {}).get("PostToolUse", []):
            if matcher.matcher is None or re.fullmatch(matcher.matcher, full):
                for hook in matcher.hooks:
                    hook_input: Any = {
                        "hook_event_name": "PostToolUse",
                        "session_id": "scripted",
                        "transcript_path": "",
                        "cwd": "",
                        "tool_name": full,
                        "tool_input": arguments or {},
                        "tool_response": response,
                        "tool_use_id": f"tu-{len(self.calls)}",
                    }
                    out: Any = await hook(hook_input, f"tu-{len(self.calls)}", {"signal": None})
                    specific = out.get("hookSpecificOutput", {})
                    if "updatedToolOutput" in specific:
                        response = specific["updatedToolOutput"]
        text = "".join(block["text"] for block in response)
        return (not result.is_error), (text if result.is_error else loads(text))


Script = Callable[[ModelTools], Awaitable[str]]


class ScriptedModel:
    """Stands in for ``claude_agent_sdk.query``: connects to the in-process MCP server the
    options name and follows a script; yields the SDK's own message types."""

    def __init__(self, script: Script, *, is_error: bool = False) -> None:
        self.script = script
        self.is_error = is_error
        self.options: ClaudeAgentOptions | None = None
        self.prompt: str | None = None
        self.calls: list[str] = []

    def __call__(self, *, prompt: str, options: ClaudeAgentOptions) -> AsyncIterator[Any]:
        return self._run(prompt, options)

    async def _run(self, prompt: str, options: ClaudeAgentOptions) -> AsyncIterator[Any]:
        self.options, self.prompt = options, prompt
        servers: Any = options.mcp_servers
        async with Client(servers["credit"]["instance"]) as client:
            final = await self.script(ModelTools(client, options, self.calls))
        yield AssistantMessage(content=[TextBlock(text=final)], model="scripted")
        yield ResultMessage(
            subtype="error_during_execution" if self.is_error else "success",
            duration_ms=1,
            duration_api_ms=1,
            is_error=self.is_error,
            num_turns=len(self.calls),
            session_id="scripted",
            result=final,
        )


async def read_and_decide(model: ModelTools) -> dict[str, Any]:
    """A faithful model: reads the three tools and applies the methodology to them."""
    _, app = await model.call("get_application")
    _, report = await model.call("get_credit_report")
    _, policy = await model.call("get_policy")
    assert policy["sha256"] == POLICY.sha256
    result = underwrite(
        Application.model_validate(app["application"]),
        CreditReport.model_validate(report["creditReport"]),
        POLICY,
        case_id=app["caseId"],
        as_of=dt.date.fromisoformat(app["asOf"]),
    )
    wire: dict[str, Any] = jsonable(result.decision.to_wire())
    wire["__reasonCodes"] = list(result.reason_codes)
    return wire


def _record(wire: dict[str, Any]) -> dict[str, Any]:
    """record_decision's arguments: the decision and its reason codes."""
    codes = wire.pop("__reasonCodes", [])
    return {"decision": wire, "reasonCodes": codes}


async def faithful(model: ModelTools) -> str:
    wire = await read_and_decide(model)
    ok, _ = await model.call("record_decision", _record(wire))
    return dumps(wire) if ok else "the record was refused"


def citing(factor: str) -> Script:
    async def script(model: ModelTools) -> str:
        wire = await read_and_decide(model)
        wire["factors"] = [*wire["factors"], factor]
        await model.call("record_decision", _record(wire))
        return dumps(wire)

    return script


async def twice(model: ModelTools) -> str:
    wire = await read_and_decide(model)
    arguments = _record(wire)
    await model.call("record_decision", arguments)
    await model.call("record_decision", arguments)
    return dumps(wire)


def setup_case(case: dict[str, Any]) -> tuple[InMemoryStore, CaseTools, TurnContext]:
    store = InMemoryStore()
    intake(case, store)
    governor = Governor(store, case["caseId"], underwriter="claude")
    tools = CaseTools(store, case["caseId"], governor, REGISTRY)
    return store, tools, TurnContext(case["caseId"], case["asOf"], SPARK_METHODOLOGY, "t-1")


# ------------------------------------------------------------------ the sandbox


def test_the_options_are_the_sandbox_of_the_spec_field_by_field() -> None:
    _, tools, context = setup_case(auto_case(case_id="C-OPT"))
    options = ClaudeUnderwriter(model="claude-test", max_turns=9).build_options(tools, context)

    assert options.tools == []
    assert options.allowed_tools == [
        "mcp__credit__get_application",
        "mcp__credit__get_credit_report",
        "mcp__credit__get_policy",
        "mcp__credit__record_decision",
    ]
    assert list(ALLOWED_TOOLS) == options.allowed_tools
    assert options.disallowed_tools == list(BUILTIN_TOOLS)
    for builtin in ("Bash", "Read", "Write", "Edit", "WebFetch", "WebSearch", "Task", "Glob"):
        assert builtin in options.disallowed_tools
    assert options.setting_sources == []
    assert options.permission_mode == "bypassPermissions"
    assert options.strict_mcp_config is True
    servers: Any = options.mcp_servers
    assert list(servers) == ["credit"]
    assert servers["credit"]["type"] == "sdk"
    assert servers["credit"]["name"] == "credit"
    assert options.system_prompt == SPARK_METHODOLOGY
    assert options.model == "claude-test"
    assert options.max_turns == 9
    assert options.can_use_tool is None
    assert options.plugins == []
    assert options.agents is None
    assert options.skills is None
    hooks = options.hooks or {}
    assert list(hooks) == ["PostToolUse"]
    (matcher,) = hooks["PostToolUse"]
    assert matcher.matcher is not None
    for name in ALLOWED_TOOLS:
        assert re.fullmatch(matcher.matcher, name)
    assert not re.fullmatch(matcher.matcher, "Bash")
    assert len(matcher.hooks) == 1


def test_the_options_become_the_cli_flags_that_disable_everything_but_the_four_tools() -> None:
    _, tools, context = setup_case(card_case(case_id="C-FLAGS"))
    options = ClaudeUnderwriter().build_options(tools, context)
    options.cli_path = "/nonexistent/claude"
    command = SubprocessCLITransport("prompt", options)._build_command()

    def value(flag: str) -> str:
        return command[command.index(flag) + 1]

    assert value("--tools") == ""
    assert value("--allowedTools") == ",".join(ALLOWED_TOOLS)
    assert value("--permission-mode") == "bypassPermissions"
    assert "--setting-sources=" in command
    assert "--strict-mcp-config" in command
    assert set(value("--disallowedTools").split(",")) == set(BUILTIN_TOOLS)
    assert loads(value("--mcp-config")) == {
        "mcpServers": {"credit": {"type": "sdk", "name": "credit"}}
    }


def test_the_in_process_server_lists_exactly_the_four_tools_and_takes_no_case_id() -> None:
    _, tools, _ = setup_case(auto_case(case_id="C-SDK"))
    server: Any = ClaudeUnderwriter().mcp_server(tools)

    async def main() -> tuple[list[str], Any]:
        async with Client(server["instance"]) as client:
            listed = await client.list_tools()
            other = await client.call_tool("get_application", {"caseId": "C-OTHER"})
            return [t.name for t in listed.tools], other

    names, other = anyio.run(main)
    assert names == list(TOOL_NAMES)
    assert other.is_error


# ------------------------------------------------------------------ end to end


def test_the_llm_underwriter_passes_the_same_evals_as_the_rules_underwriter() -> None:
    store = InMemoryStore()
    runtime = SparkRuntime(store, registry=REGISTRY)
    points = [p for p in boundary_points(POLICY) if not isinstance(p, Unbuildable)]
    assert len(points) >= 40
    for point in points:
        intake(point.case.model_dump(mode="json", by_alias=True), store)
        model = ScriptedModel(faithful)
        result = runtime.run_turn(point.case.case_id, ClaudeUnderwriter(query=model))
        assert not result.refused, result.verdict
        assert result.decision_entry is not None
        decision = parse_decision(result.decision_entry.payload["decision"])
        assert grade_boundary(point, decision, POLICY).passed, point.name
        assert grade_fairness(decision).passed
        assert result.decision_entry.payload["underwriter"] == "claude"
        assert result.decision_entry.payload["status"] == "held"
        assert model.calls == list(TOOL_NAMES)
    assert store.verify().ok


def test_the_model_is_prompted_with_its_case_and_the_methodology_of_the_policy_in_force() -> None:
    store, _, _ = setup_case(card_case(case_id="C-PROMPT"))
    model = ScriptedModel(faithful)
    result = SparkRuntime(store, registry=REGISTRY).run_turn(
        "C-PROMPT", ClaudeUnderwriter(query=model)
    )
    assert model.prompt is not None and "C-PROMPT" in model.prompt
    # The system prompt is the methodology written from the policy, the catalogue and
    # the prohibited terms: the reason codes and the Decision format are in it.
    assert model.options is not None and model.options.system_prompt == methodology_prompt(POLICY)
    assert "DTI_OVER_CAP" in model.options.system_prompt
    assert "reasonCodes=[...]" in model.options.system_prompt
    assert loads(result.surface)["decision"] in ("approve", "decline", "counteroffer", "refer")
    (turn,) = store.entries("C-PROMPT", kinds=[UNDERWRITER_TURN])
    assert turn.payload["surface"] == result.audited_surface


def test_a_model_citing_age_is_refused_exactly_like_the_rules_path() -> None:
    store, _, _ = setup_case(auto_case(case_id="C-LLM-AGE"))
    runtime = SparkRuntime(store, registry=REGISTRY)

    result = runtime.run_turn("C-LLM-AGE", ClaudeUnderwriter(query=ScriptedModel(citing("age"))))

    assert result.refused
    assert result.surface == TYPED_REFUSAL_PREFIX + BOUNDARY_DECISION_CITES_PROHIBITED_BASIS
    assert store.decision_entry("C-LLM-AGE") is None
    assert runtime.last_refusal_was_typed
    assert "age" in loads(result.audited_surface)["factors"]


def test_a_model_recording_twice_gets_the_same_refusal_as_the_rules_underwriter() -> None:
    store = InMemoryStore()
    for case_id in ("C-R", "C-M"):
        intake(auto_case(case_id=case_id), store)
    runtime = SparkRuntime(store, registry=REGISTRY)
    runtime.run_turn("C-R", RulesUnderwriter(REGISTRY))
    rules_again = runtime.run_turn("C-R", RulesUnderwriter(REGISTRY))
    model = runtime.run_turn("C-M", ClaudeUnderwriter(query=ScriptedModel(twice)))
    assert model.surface == rules_again.surface
    assert model.surface == TYPED_REFUSAL_PREFIX + BOUNDARY_SECOND_RECORD_DECISION
    # Each audit keeps its own underwriter's words: the same decision, as each wrote it.
    assert parse_decision(loads(model.audited_surface)) == parse_decision(
        loads(rules_again.audited_surface)
    )


def test_the_post_tool_use_hook_strips_what_reaches_it_and_journals_the_layer() -> None:
    store, tools, context = setup_case(auto_case(case_id="C-HOOK"))
    options = ClaudeUnderwriter().build_options(tools, context)
    (hook,) = (options.hooks or {})["PostToolUse"][0].hooks
    response = [{"type": "text", "text": '{"application": {"product": "auto", "DOB": "1961"}}'}]
    hook_input: Any = {
        "hook_event_name": "PostToolUse",
        "session_id": "s",
        "transcript_path": "",
        "cwd": "",
        "tool_name": "mcp__credit__get_application",
        "tool_input": {},
        "tool_response": response,
        "tool_use_id": "tu-1",
    }

    out: Any = anyio.run(hook, hook_input, "tu-1", {"signal": None})

    assert out == {
        "hookSpecificOutput": {
            "hookEventName": "PostToolUse",
            "updatedToolOutput": [{"type": "text", "text": '{"application":{"product":"auto"}}'}],
        }
    }
    (entry,) = store.entries("C-HOOK", kinds=[GUARD_REDACTED])
    assert entry.payload["layer"] == "hook"
    assert entry.payload["tool"] == "get_application"
    assert entry.payload["basis"] == "age"
    clean: Any = {**hook_input, "tool_response": [{"type": "text", "text": "{}"}]}
    assert anyio.run(hook, clean, "tu-2", {"signal": None}) == {}
    other: Any = {"hook_event_name": "Stop", "session_id": "s"}
    assert anyio.run(hook, other, None, {"signal": None}) == {}


def test_a_session_that_ends_in_error_is_an_underwriter_error_and_is_journaled() -> None:
    store, _, _ = setup_case(auto_case(case_id="C-ERR2"))
    underwriter = ClaudeUnderwriter(query=ScriptedModel(say_nothing, is_error=True))
    result = SparkRuntime(store, registry=REGISTRY).run_turn("C-ERR2", underwriter)
    assert isinstance(result.error, UnderwriterError)
    assert result.error.case_id == "C-ERR2" and result.error.underwriter == "claude"
    (turn,) = store.entries("C-ERR2", kinds=[UNDERWRITER_TURN])
    assert "error_during_execution" in turn.payload["error"]
    (failure,) = store.entries("C-ERR2", kinds=["turn.failed"])
    assert failure.payload["errorType"] == type(result.error).__name__


async def say_nothing(model: ModelTools) -> str:
    return "nothing to say"


def test_without_the_llm_extra_the_adapter_says_which_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, tools, context = setup_case(auto_case(case_id="C-NOSDK"))
    monkeypatch.setitem(sys.modules, "claude_agent_sdk", None)
    with pytest.raises(MissingExtraError) as caught:
        ClaudeUnderwriter().build_options(tools, context)
    assert caught.value.extra == "llm"
    assert caught.value.package == "claude-agent-sdk"
    assert "pip install 'credit[llm]'" in str(caught.value)


# ------------------------------------------------------------------ typed outcomes


def messages_query(*messages: Any, hang: bool = False, raises: BaseException | None = None) -> Any:
    """A query that yields these SDK messages (then hangs, or raises)."""

    async def query(*, prompt: str, options: ClaudeAgentOptions) -> AsyncIterator[Any]:
        for message in messages:
            yield message
        if raises is not None:
            raise raises
        if hang:
            await anyio.sleep(60)

    return query


def result_message(**fields: Any) -> ResultMessage:
    base: dict[str, Any] = {
        "subtype": "success",
        "duration_ms": 5,
        "duration_api_ms": 3,
        "is_error": False,
        "num_turns": 1,
        "session_id": "s-1",
        "result": "done",
    }
    return ResultMessage(**{**base, **fields})


def failed(case_id: str, query: Any, **options: Any) -> Any:
    """A turn that ends in a typed error: journaled once as a failed turn (with the
    error's record) for a person, never raised to the caller."""
    store, _, _ = setup_case(auto_case(case_id=case_id))
    underwriter = ClaudeUnderwriter(query=query, **options)
    result = SparkRuntime(store, registry=REGISTRY).run_turn(case_id, underwriter)
    error = result.error
    assert isinstance(error, UnderwriterError), result
    (turn,) = store.entries(case_id, kinds=[UNDERWRITER_TURN])
    assert turn.payload["error"].startswith(type(error).__name__ + ": ")
    assert dumps(error.record())  # JSON-safe as it stands
    (failure,) = store.entries(case_id, kinds=["turn.failed"])
    assert failure.payload["errorType"] == type(error).__name__
    assert loads(dumps(failure.payload["detail"])) == loads(dumps(error.record()))
    return error, underwriter


def test_an_api_error_result_is_a_model_api_error_with_status_and_kind() -> None:
    query = messages_query(
        AssistantMessage(
            content=[TextBlock(text="API Error: 529 busy")], model="x", error="server_error"
        ),
        result_message(is_error=True, result="API Error: 529 busy", api_error_status=529),
    )
    err, underwriter = failed("C-E529", query)
    assert isinstance(err, ModelApiError)
    assert (err.status, err.kind, err.api_message) == (529, "server_error", "API Error: 529 busy")
    assert err.record()["reason"] == "api_error" and err.record()["status"] == 529
    assert underwriter.last_session is not None and underwriter.last_session.is_error


def test_a_session_stopped_at_max_turns_is_a_model_session_error_naming_the_subtype() -> None:
    query = messages_query(result_message(subtype="error_max_turns", is_error=True, result=None))
    err, _ = failed("C-MAX", query)
    assert isinstance(err, ModelSessionError) and err.subtype == "error_max_turns"
    assert err.exit_code is None and err.reason == "session_error"


def test_a_session_with_no_result_and_a_cli_that_fails_are_model_session_errors() -> None:
    err, _ = failed("C-NORES", messages_query())
    assert isinstance(err, ModelSessionError) and "without a result" in err.message
    crash = ProcessError("the CLI exited", exit_code=3, stderr="boom")
    err, _ = failed("C-CRASH", messages_query(raises=crash))
    assert isinstance(err, ModelSessionError) and err.exit_code == 3


def test_a_call_to_a_tool_outside_the_four_stops_the_session_at_that_call() -> None:
    after: list[str] = []

    async def query(*, prompt: str, options: ClaudeAgentOptions) -> AsyncIterator[Any]:
        yield AssistantMessage(content=[ToolUseBlock(id="t", name="WebFetch", input={})], model="x")
        after.append("the session went on")
        yield result_message()

    err, _ = failed("C-WEB", query)
    assert isinstance(err, UnknownToolError) and err.tool == "WebFetch"
    assert err.tool_calls == ("WebFetch",) and after == []


def test_a_turn_past_its_time_limit_is_an_underwriter_timeout_error() -> None:
    err, underwriter = failed("C-SLOW", messages_query(hang=True), timeout_s=0.2)
    assert isinstance(err, UnderwriterTimeoutError) and isinstance(err, TimeoutError)
    assert err.timeout_s == 0.2 and err.record()["timeoutS"] == 0.2
    assert underwriter.last_session is not None and underwriter.last_session.seconds >= 0.2


def test_a_session_that_ends_well_with_nothing_recorded_is_a_no_decision_error() -> None:
    async def says_only(model: ModelTools) -> str:
        wire = await read_and_decide(model)
        return dumps(wire)

    err, _ = failed("C-SAYS", ScriptedModel(says_only))
    assert isinstance(err, NoDecisionError) and not err.decision_recorded
    assert loads(err.final)["product"] == "auto"


def test_a_malformed_decision_never_corrected_is_a_no_decision_error_with_the_tool_error() -> None:
    tool_error = UserMessage(
        content=[ToolResultBlock(tool_use_id="t", content="field decision.dtiPct", is_error=True)]
    )
    err, _ = failed("C-BAD", messages_query(tool_error, result_message()))
    assert isinstance(err, NoDecisionError)
    assert err.tool_errors == ("field decision.dtiPct",)


def test_the_options_keep_the_sandbox_env_and_flags_whatever_env_the_caller_passes() -> None:
    _, tools, context = setup_case(auto_case(case_id="C-ENV"))
    caller = {"ANTHROPIC_BASE_URL": "https://llm.lender.example", "ENABLE_TOOL_SEARCH": "true"}
    options = ClaudeUnderwriter(env=caller, user="spark").build_options(tools, context)
    assert options.env == {**caller, **SANDBOX_ENV}
    assert options.env["ENABLE_TOOL_SEARCH"] == "false"
    assert options.extra_args == {"no-session-persistence": None}
    assert options.user == "spark"
    command = SubprocessCLITransport(
        "prompt", replace(options, cli_path="/x/claude")
    )._build_command()
    assert "--no-session-persistence" in command


# ------------------------------------------------------------------ the evals, governed


def test_the_governed_path_as_an_evals_underwriter_passes_every_eval_with_the_rules() -> None:
    report = run_all(POLICY, evals_underwriter(RulesUnderwriter(REGISTRY)))
    assert report.results and all(r.passed for r in report.results), [
        r for r in report.results if not r.passed
    ]


def test_a_turn_that_records_nothing_fails_its_eval_row_with_the_reason() -> None:
    async def says_only(model: ModelTools) -> str:
        return dumps(await read_and_decide(model))

    decide = evals_underwriter(ClaudeUnderwriter(query=ScriptedModel(says_only)))
    rows = run_thin_file(POLICY, decide)
    assert rows and not any(r.passed for r in rows)
    assert all("NoDecisionError" in r.detail for r in rows)
    cited = evals_underwriter(ClaudeUnderwriter(query=ScriptedModel(citing("age"))))
    (point, *_) = [p for p in boundary_points(POLICY) if not isinstance(p, Unbuildable)]
    refused = r"the turn was refused \(fair_lending\.decision_cites_prohibited_basis: .*\bage\b"
    with pytest.raises(UnderwriterError, match=refused):
        cited(point.case, POLICY)


def test_credit_run_passes_its_model_to_the_claude_underwriter_and_refuses_it_for_rules(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    from typer.testing import CliRunner

    from credit.cli import app

    made: list[str | None] = []

    class Recorder(ClaudeUnderwriter):
        def __init__(self, **options: Any) -> None:
            made.append(options.get("model"))
            super().__init__(query=ScriptedModel(faithful), **options)

    monkeypatch.setattr("credit.underwriters.claude.ClaudeUnderwriter", Recorder)
    batch = tmp_path / "one.jsonl"
    batch.write_text(dumps(card_case(case_id="C-CLI")) + "\n")
    ran = CliRunner().invoke(app, ["run", str(batch), "--underwriter", "claude", "--model", "m-1"])
    assert made == ["m-1"] and ran.exit_code == 0, ran.output
    refused = CliRunner().invoke(app, ["run", str(batch), "--model", "m-1"])
    assert refused.exit_code == 2 and "--model is for --underwriter claude" in refused.output


# ------------------------------------------------------------------ methodology and transcript


def test_the_rules_path_keeps_the_spark_methodology_and_one_given_overrides_the_models() -> None:
    runtime = SparkRuntime(InMemoryStore(), registry=REGISTRY)
    assert runtime.methodology_for(RulesUnderwriter(REGISTRY), POLICY) == SPARK_METHODOLOGY
    assert runtime.methodology_for(ClaudeUnderwriter(), POLICY) == methodology_prompt(POLICY)
    store, _, _ = setup_case(card_case(case_id="C-GIVEN"))
    model = ScriptedModel(faithful)
    SparkRuntime(store, registry=REGISTRY, methodology="Given.").run_turn(
        "C-GIVEN", ClaudeUnderwriter(query=model)
    )
    assert model.options is not None and model.options.system_prompt == "Given."


def test_a_claude_turns_transcript_is_stored_and_named_on_its_turn_entry(
    _transcripts: Path,
) -> None:
    store, _, _ = setup_case(auto_case(case_id="C-TRANS"))
    result = SparkRuntime(store, registry=REGISTRY).run_turn(
        "C-TRANS", ClaudeUnderwriter(query=ScriptedModel(faithful))
    )
    (turn,) = store.entries("C-TRANS", kinds=[UNDERWRITER_TURN])
    transcript = read_transcript(_transcripts, turn.payload["transcriptSha256"])
    assert transcript["format"] == TRANSCRIPT_FORMAT and transcript["turn"] == result.turn
    assert transcript["system"] == methodology_prompt(POLICY)
    assert "C-TRANS" in transcript["prompt"]
    assert transcript["final"] == result.surface
    assert transcript["model"] == {"requested": None, "answered": ["scripted"]}
    assert transcript["outcome"] == {"ended": True}


def test_a_failed_claude_turn_keeps_its_transcript_with_the_error(_transcripts: Path) -> None:
    store, _, _ = setup_case(auto_case(case_id="C-TFAIL"))
    claude = ClaudeUnderwriter(query=ScriptedModel(faithful, is_error=True))
    result = SparkRuntime(store, registry=REGISTRY).run_turn("C-TFAIL", claude)
    assert isinstance(result.error, ModelSessionError)
    (turn,) = store.entries("C-TFAIL", kinds=[UNDERWRITER_TURN])
    transcript = read_transcript(_transcripts, turn.payload["transcriptSha256"])
    assert transcript["outcome"]["ended"] is False
    assert transcript["outcome"]["error"] == result.error.record()
    assert claude.take_transcript(result.turn) is None  # the runtime took it


def test_credit_eval_grades_the_claude_underwriter_by_suite_and_refuses_bad_options(
    monkeypatch: pytest.MonkeyPatch, _transcripts: Path
) -> None:
    from typer.testing import CliRunner

    from credit.cli import app

    made: list[str | None] = []
    scripts = {
        "faithful": faithful,
        "cites-marital-status": citing("The applicant's marital status"),
    }

    class Recorder(ClaudeUnderwriter):
        def __init__(self, **options: Any) -> None:
            made.append(options.get("model"))
            super().__init__(query=ScriptedModel(scripts[str(options.get("model"))]), **options)

    monkeypatch.setattr("credit.underwriters.claude.ClaudeUnderwriter", Recorder)
    runner = CliRunner()
    good = runner.invoke(
        app, ["eval", "--underwriter", "claude", "--model", "faithful", "--suite", "thin-file"]
    )
    assert good.exit_code == 0, good.output
    assert "12 passed, 0 failed" in good.output and "underwriter claude" in good.output
    assert len(list(_transcripts.glob("*.json"))) == 12
    bad = runner.invoke(
        app,
        [
            "eval",
            "--underwriter",
            "claude",
            "--model",
            "cites-marital-status",
            "--suite",
            "thin-file",
        ],
    )
    # Referrals cite nothing; the model cites marital status on each: every row fails.
    assert bad.exit_code == 1 and "0 passed, 12 failed" in bad.output, bad.output
    assert made == ["faithful", "cites-marital-status"]
    rules = runner.invoke(app, ["eval", "--suite", "thin-file", "--suite", "thin-file"])
    assert rules.exit_code == 0 and "12 passed, 0 failed" in rules.output
    unknown = runner.invoke(app, ["eval", "--suite", "speed"])
    assert unknown.exit_code == 2 and "unknown suite 'speed'" in unknown.output
    model_for_rules = runner.invoke(app, ["eval", "--model", "m-1"])
    assert model_for_rules.exit_code == 2 and "--model is for --underwriter claude" in (
        model_for_rules.output
    )
