"""The Messages API stand-in and its scripted models, without the CLI: what the
stand-in speaks on the wire (read back with a plain HTTP client on loopback), what it
records, and what each scripted model answers. The faithful model is checked against
the rules underwriter on the bundled cases, so a real-path turn it drives records the
decision the case calls for."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import auto_case
from credit.cases import iter_cases
from credit.cli.common import default_cases_path
from credit.evals import boundary_points
from credit.evals.boundary import Unbuildable
from credit.models import Decision, parse_case, parse_decision
from credit.policy import default_policy
from credit.testing.isolation import IFF_UP, interface_flags, interfaces_up, loopback_only
from credit.testing.scripted import (
    MARITAL_STATUS_FACTOR,
    ByCase,
    CallsUnknownTool,
    CitesMaritalStatus,
    FailsWithApiError,
    GuessesOnThinFile,
    HangsAfterReading,
    IgnoresDtiMargin,
    InventsFigure,
    NeverRecords,
    RecordsTwice,
    ScriptError,
    Underwrites,
    decide_from_tools,
)
from credit.testing.standin import (
    BYTES_PER_TOKEN,
    ApiError,
    Cut,
    Hang,
    MessagesStandIn,
    ModelRequest,
    Reply,
    Text,
    ToolCall,
    Usage,
    estimate_tokens,
)
from credit.tools import jsonable
from credit.underwriting import decide_case

POLICY = default_policy()
TOOLS = [
    {"name": f"mcp__credit__{t}", "description": t, "input_schema": {"type": "object"}}
    for t in ("get_application", "get_credit_report", "get_policy", "record_decision")
]


def body(*messages: dict[str, Any], stream: bool = True) -> dict[str, Any]:
    return {
        "model": "claude-test",
        "max_tokens": 1024,
        "system": [{"type": "text", "text": "sdk block"}, {"type": "text", "text": "SYSTEM"}],
        "tools": TOOLS,
        "messages": list(messages) or [{"role": "user", "content": "Underwrite C-1."}],
        "stream": stream,
    }


def sse(response: httpx.Response) -> list[tuple[str, Any]]:
    events = []
    for chunk in response.text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in chunk.splitlines())
        events.append((lines["event"], json.loads(lines["data"])))
    return events


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10) as http:
        yield http


# ------------------------------------------------------------------ the wire


def test_a_streamed_reply_is_the_messages_api_event_sequence(client: httpx.Client) -> None:
    reply = Reply((Text("reading"), ToolCall("mcp__credit__get_policy", {}, "toolu_1")))
    with MessagesStandIn(lambda request: reply) as api:
        response = client.post(f"{api.base_url}/v1/messages?beta=true", json=body())

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    events = sse(response)
    assert [name for name, _ in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert all(data["type"] == name for name, data in events)
    start = events[0][1]["message"]
    assert start["role"] == "assistant" and start["content"] == []
    assert start["model"] == "claude-test" and start["stop_reason"] is None
    assert events[2][1]["delta"] == {"type": "text_delta", "text": "reading"}
    assert events[4][1]["content_block"] == {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "mcp__credit__get_policy",
        "input": {},
    }
    assert events[5][1]["delta"] == {"type": "input_json_delta", "partial_json": "{}"}
    assert events[7][1]["delta"]["stop_reason"] == "tool_use"
    (exchange,) = api.exchanges
    assert exchange.usage is not None
    assert events[7][1]["usage"]["output_tokens"] == exchange.usage.output_tokens
    assert start["usage"]["input_tokens"] == exchange.usage.input_tokens


def test_a_request_without_streaming_gets_the_whole_message(client: httpx.Client) -> None:
    reply = Reply.text("done")
    with MessagesStandIn(lambda request: reply) as api:
        response = client.post(f"{api.base_url}/v1/messages", json=body(stream=False))
    message = response.json()
    assert message["type"] == "message" and message["role"] == "assistant"
    assert message["content"] == [{"type": "text", "text": "done"}]
    assert message["stop_reason"] == "end_turn"
    assert api.usage() == Usage(message["usage"]["input_tokens"], message["usage"]["output_tokens"])


def test_usage_is_estimated_at_four_bytes_a_token_unless_the_reply_gives_its_own(
    client: httpx.Client,
) -> None:
    given = Usage(1234, 56)
    replies = iter([Reply.text("x"), Reply((Text("y"),), usage=given)])
    with MessagesStandIn(lambda request: next(replies)) as api:
        for _ in range(2):
            client.post(f"{api.base_url}/v1/messages", json=body(stream=False))
    first, second = api.replies
    assert BYTES_PER_TOKEN == 4
    assert first.usage == Usage(-(-first.input_bytes // 4), -(-first.output_bytes // 4))
    assert first.output_bytes == len(b'[{"type":"text","text":"x"}]')
    assert second.usage == given
    assert api.usage() == Usage(first.usage.input_tokens + 1234, first.usage.output_tokens + 56)
    assert estimate_tokens("") == 1 and estimate_tokens("x" * 40) == 11


@pytest.mark.parametrize(
    ("status", "error_type"),
    [(400, "invalid_request_error"), (500, "api_error"), (529, "overloaded_error")],
)
def test_an_api_error_is_the_status_with_the_anthropic_error_body(
    client: httpx.Client, status: int, error_type: str
) -> None:
    with MessagesStandIn(lambda request: ApiError(status, "scripted")) as api:
        response = client.post(f"{api.base_url}/v1/messages", json=body())
    assert response.status_code == status
    assert response.json() == {
        "type": "error",
        "error": {"type": error_type, "message": "scripted"},
    }
    assert "x-should-retry" not in response.headers
    assert api.replies == [] and api.usage() == Usage(0, 0)


def test_an_api_error_can_tell_the_client_not_to_retry(client: httpx.Client) -> None:
    error = ApiError(529, "busy", error_type="overloaded_error", retry=False)
    with MessagesStandIn(lambda request: error) as api:
        response = client.post(f"{api.base_url}/v1/messages", json=body())
    assert response.headers["x-should-retry"] == "false"


def test_a_hang_answers_nothing_until_its_time_or_the_stand_in_closes(
    client: httpx.Client,
) -> None:
    with MessagesStandIn(lambda request: Hang(0.5)) as api:
        started = time.monotonic()
        with pytest.raises(httpx.RemoteProtocolError):
            client.post(f"{api.base_url}/v1/messages", json=body())
        assert time.monotonic() - started >= 0.5
        with pytest.raises(httpx.ReadTimeout):
            client.post(f"{api.base_url}/v1/messages", json=body(), timeout=0.2)
    hung = MessagesStandIn(lambda request: Hang(60)).start()
    closing = time.monotonic()
    with pytest.raises(httpx.ReadTimeout):
        client.post(f"{hung.base_url}/v1/messages", json=body(), timeout=0.2)
    hung.close()
    assert time.monotonic() - closing < 5


def test_a_cut_stream_stops_after_its_events_and_a_whole_message_is_not_cut(
    client: httpx.Client,
) -> None:
    cut = Cut(Reply.text("never finished"), events=2)
    with MessagesStandIn(lambda request: cut) as api:
        with pytest.raises(httpx.RemoteProtocolError):
            client.post(f"{api.base_url}/v1/messages", json=body())
        whole = client.post(f"{api.base_url}/v1/messages", json=body(stream=False))
    assert whole.json()["content"] == [{"type": "text", "text": "never finished"}]


def test_other_endpoints_are_counted_or_refused_and_all_are_recorded(
    client: httpx.Client,
) -> None:
    with MessagesStandIn(lambda request: Reply.text("x")) as api:
        counted = client.post(f"{api.base_url}/v1/messages/count_tokens", json=body())
        missing = client.get(f"{api.base_url}/v1/models")
    assert counted.json() == {
        "input_tokens": estimate_tokens(
            {"system": body()["system"], "tools": TOOLS, "messages": body()["messages"]}
        )
    }
    assert missing.status_code == 404 and missing.json()["type"] == "error"
    assert [(e.request.method, e.status) for e in api.exchanges] == [("POST", 200), ("GET", 404)]
    assert api.requests == []  # neither is a Messages request


def test_a_script_that_raises_is_answered_500_and_reraised_on_leaving(
    client: httpx.Client,
) -> None:
    def broken(request: ModelRequest) -> Reply:
        raise ScriptError("no such step")

    with pytest.raises(ScriptError, match="no such step"), MessagesStandIn(broken) as api:
        response = client.post(f"{api.base_url}/v1/messages", json=body())
        assert response.status_code == 500
        assert response.headers["x-should-retry"] == "false"
        assert "no such step" in response.json()["error"]["message"]
    (exchange,) = api.exchanges
    assert exchange.script_error is not None and "ScriptError" in exchange.script_error


def test_the_stand_in_serves_on_loopback_only_and_not_after_closing(
    client: httpx.Client,
) -> None:
    api = MessagesStandIn(lambda request: Reply.text("x")).start()
    url = api.base_url
    assert url.startswith("http://127.0.0.1:") and api.port > 0
    env = api.env("/tmp/config", max_retries=2)
    assert env["ANTHROPIC_BASE_URL"] == url and env["CLAUDE_CODE_MAX_RETRIES"] == "2"
    assert env["CLAUDE_CONFIG_DIR"] == "/tmp/config"
    api.close()
    with pytest.raises(httpx.ConnectError):
        client.post(f"{url}/v1/messages", json=body())
    with pytest.raises(RuntimeError, match="not serving"):
        api.base_url  # noqa: B018 - the property raises


# ------------------------------------------------------------------ reading a request


def conversation(*results: tuple[str, str, bool]) -> ModelRequest:
    """A request whose history holds these (tool, result text, is_error) turns."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Underwrite C-1."}]
    for i, (tool, text, is_error) in enumerate(results):
        messages.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"t{i}", "name": tool, "input": {}}],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": f"t{i}",
                        "content": [{"type": "text", "text": text}],
                        "is_error": is_error,
                    }
                ],
            }
        )
    raw = json.dumps(body(*messages)).encode()
    return ModelRequest(1, "POST", "/v1/messages?beta=true", {}, json.loads(raw), raw)


def test_a_request_reads_as_its_system_prompt_tools_calls_and_results() -> None:
    request = conversation(("mcp__credit__get_application", '{"a": 1}', False))
    assert request.endpoint == "/v1/messages" and request.stream
    assert request.system_texts == ("sdk block", "SYSTEM")
    assert request.tool("record_decision") == "mcp__credit__record_decision"
    assert request.tool("Bash") is None
    (call,) = request.tool_calls()
    assert (call.name, call.id) == ("mcp__credit__get_application", "t0")
    (result,) = request.tool_results()
    assert (result.name, result.text, result.is_error) == (
        "mcp__credit__get_application",
        '{"a": 1}',
        False,
    )


# ------------------------------------------------------------------ the scripted models


def tool_results(case: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """The three read results as the governed tools serve them for a case."""
    application = {k: case[k] for k in ("caseId", "asOf", "application")}
    return [
        ("mcp__credit__get_application", json.dumps(jsonable(application)), False),
        (
            "mcp__credit__get_credit_report",
            json.dumps({"caseId": case["caseId"], "creditReport": case["creditReport"]}),
            False,
        ),
        ("mcp__credit__get_policy", json.dumps(jsonable(POLICY.to_document())), False),
    ]


def test_the_faithful_model_reads_the_three_tools_in_order_then_records() -> None:
    case = auto_case(case_id="C-1")
    reads = tool_results(case)
    model = Underwrites()
    names = [model(conversation(*reads[:n])) for n in range(3)]
    assert [a.blocks[0].name for a in names if isinstance(a, Reply)] == [  # type: ignore[union-attr]
        r[0] for r in reads
    ]
    record = model(conversation(*reads))
    assert isinstance(record, Reply) and record.stop == "tool_use"
    call = record.blocks[-1]
    assert isinstance(call, ToolCall) and call.name == "mcp__credit__record_decision"
    assert parse_decision(call.input["decision"]).decision == "approve"
    done = model(conversation(*reads, ("mcp__credit__record_decision", "{}", False)))
    assert isinstance(done, Reply) and done.stop == "end_turn"
    refused = model(conversation(*reads, ("mcp__credit__record_decision", "no", True)))
    assert isinstance(refused, Reply) and "refused" in refused.blocks[0].text  # type: ignore[union-attr]


def cited(decision: Decision) -> Decision:
    return decision.model_copy(update={"policy_basis": decision.policy_basis[:1]})


def test_the_faithful_model_decides_every_sampled_bundled_case_as_the_rules_underwriter() -> None:
    document = json.loads(json.dumps(jsonable(POLICY.to_document())))
    checked: set[tuple[str, str]] = set()
    for n, line in enumerate(iter_cases(default_cases_path())):
        if line.case is None or n % 4:
            continue
        wire = line.case.model_dump(mode="json", by_alias=True)
        decided = decide_from_tools(wire["application"], wire["creditReport"], document)
        expected = decide_case(line.case, POLICY).decision
        assert cited(parse_decision(decided)) == cited(expected), line.case.case_id
        checked.add((expected.product, expected.decision))
    assert len(checked) == 8  # every product and outcome was among them


def test_a_planted_defect_in_the_faithful_models_reasoning_is_caught() -> None:
    """The comparison above can fail: a policy whose DTI cap the model misreads."""
    document = json.loads(json.dumps(jsonable(POLICY.to_document())))
    document["parameters"]["products.auto.maxDtiPct"]["value"] = "30.0"
    case = auto_case(case_id="C-DTI", debt="2800.00")
    decided = decide_from_tools(case["application"], case["creditReport"], document)
    expected = decide_case(parse_case(case), POLICY).decision
    assert expected.decision == "approve"
    assert parse_decision(decided).decision != "approve"


def test_the_misbehaving_models_each_misbehave_in_their_one_way() -> None:
    case = auto_case(case_id="C-1")
    reads = tool_results(case)
    never = NeverRecords()(conversation(*reads))
    assert isinstance(never, Reply) and never.stop == "end_turn"
    recorded = ("mcp__credit__record_decision", "{}", False)
    again = RecordsTwice()(conversation(*reads, recorded))
    assert isinstance(again, Reply) and again.blocks[0].name.endswith("record_decision")  # type: ignore[union-attr]
    unknown = CallsUnknownTool("Bash")(conversation())
    assert isinstance(unknown, Reply) and unknown.blocks[0].name == "Bash"  # type: ignore[union-attr]
    assert isinstance(HangsAfterReading(9)(conversation(*reads[:1])), Hang)
    assert FailsWithApiError(529, "busy")(conversation()) == ApiError(529, "busy")
    with pytest.raises(ScriptError, match="no get_application tool"):
        Underwrites()(
            ModelRequest(1, "POST", "/v1/messages", {}, {"tools": [], "messages": []}, b"")
        )


def recorded(model: Any, case: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The decision and reason codes a model records once it has read the case."""
    answer = model(conversation(*tool_results(case)))
    assert isinstance(answer, Reply)
    (call,) = [b for b in answer.blocks if isinstance(b, ToolCall)]
    assert call.name == "mcp__credit__record_decision"
    return dict(call.input["decision"]), list(call.input["reasonCodes"])


DECLINED = auto_case(case_id="C-1", score=550)  # under the auto minimum
APPROVED = auto_case(case_id="C-1")
NO_SCORE = auto_case(case_id="C-1", score=None)
AT_THE_DTI_CAP = next(
    p.case.model_dump(mode="json", by_alias=True)
    for p in boundary_points(POLICY)
    if not isinstance(p, Unbuildable) and p.name == "auto DTI cap = 45.0"
)


def test_the_marital_status_model_cites_it_on_adverse_decisions_only() -> None:
    decline, codes = recorded(CitesMaritalStatus(), DECLINED)
    faithful, faithful_codes = recorded(Underwrites(), DECLINED)
    assert decline["decision"] == "decline" and codes == faithful_codes
    assert decline["factors"] == [*faithful["factors"], MARITAL_STATUS_FACTOR]
    assert recorded(CitesMaritalStatus(), APPROVED) == recorded(Underwrites(), APPROVED)


def test_the_guessing_model_decides_a_file_with_no_score_instead_of_referring_it() -> None:
    faithful, _ = recorded(Underwrites(), NO_SCORE)
    guessed, _ = recorded(GuessesOnThinFile(), NO_SCORE)
    assert (faithful["decision"], faithful["scoreBand"]) == ("refer", "unscored")
    assert guessed["decision"] != "refer" and guessed["scoreBand"] != "unscored"
    assert recorded(GuessesOnThinFile(), APPROVED) == recorded(Underwrites(), APPROVED)


def test_the_margin_blind_model_approves_a_dti_the_policy_refers() -> None:
    faithful, faithful_codes = recorded(Underwrites(), AT_THE_DTI_CAP)
    blind, codes = recorded(IgnoresDtiMargin(), AT_THE_DTI_CAP)
    assert (faithful["decision"], faithful_codes) == ("refer", ["REFER_DTI_MARGIN"])
    assert (blind["decision"], codes) == ("approve", [])
    assert recorded(IgnoresDtiMargin(), DECLINED) == recorded(Underwrites(), DECLINED)


def test_the_inventing_model_states_a_dti_of_its_own_on_adverse_decisions() -> None:
    faithful, _ = recorded(Underwrites(), DECLINED)
    invented, _ = recorded(InventsFigure(by="5.0"), DECLINED)
    assert Decimal(invented["dtiPct"]) == Decimal(faithful["dtiPct"]) + Decimal("5.0")
    assert {k: v for k, v in invented.items() if k != "dtiPct"} == {
        k: v for k, v in faithful.items() if k != "dtiPct"
    }
    assert recorded(InventsFigure(), APPROVED) == recorded(Underwrites(), APPROVED)


def test_by_case_follows_the_script_of_the_case_its_conversation_names() -> None:
    reads = tool_results(APPROVED)
    request = conversation(*reads)  # "Underwrite C-1."
    never = ByCase({"C-1": NeverRecords()}, default=Underwrites())(request)
    assert isinstance(never, Reply) and never.stop == "end_turn"
    other = ByCase({"C-10": NeverRecords(), "C": NeverRecords()}, default=Underwrites())(request)
    assert isinstance(other, Reply) and other.stop == "tool_use"  # C-1 is neither


# ------------------------------------------------------------------ loopback only


def test_loopback_only_means_lo_up_and_nothing_else_up() -> None:
    assert loopback_only(lambda: [("lo", 0x49)])
    assert not loopback_only(lambda: [("lo", 0x49), ("eth0", 0x1043)])
    assert not loopback_only(lambda: [("lo", 0x8)])  # lo down: no loopback either
    assert loopback_only(lambda: [("lo", 0x49), ("ifb0", 0x82)])  # down is not a way out
    assert interfaces_up(lambda: [("eth0", IFF_UP), ("lo", IFF_UP)]) == ("eth0", "lo")


def test_the_kernel_lists_this_namespaces_interfaces_with_lo_among_them() -> None:
    names = [name for name, _ in interface_flags()]
    assert "lo" in names


# ------------------------------------------------------------------ independence


ROOT = Path(__file__).resolve().parents[1]
CONTRACT = "scripted-model-independent-of-underwriters"


def test_the_import_contract_breaks_when_the_scripted_model_imports_the_underwriter(
    tmp_path: Path,
) -> None:
    """A planted defect: the faithful model reaching for the rules underwriter."""
    tree = tmp_path / "src" / "credit"
    shutil.copytree(ROOT / "src" / "credit", tree, ignore=shutil.ignore_patterns("__pycache__"))
    scripted = tree / "testing" / "scripted.py"
    scripted.write_text(
        scripted.read_text().replace(
            "from credit.canonical import dumps",
            "from credit.canonical import dumps\nfrom credit.underwriting import underwrite",
        )
    )
    shutil.copy(ROOT / ".importlinter", tmp_path / ".importlinter")
    lint = Path(sys.executable).parent / "lint-imports"
    run = subprocess.run(
        [str(lint), "--no-cache", "--contract", CONTRACT],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path / "src")},
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 1, run.stdout
    assert "BROKEN" in run.stdout and "credit.testing.scripted -> credit.underwriting" in run.stdout
