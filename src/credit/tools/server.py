"""The four tools over MCP (the official ``mcp`` SDK, v2: ``MCPServer``).

One server instance serves one case's :class:`~credit.tools.governed.CaseTools` at a
time: the tools take no case id (:class:`ToolHost`: one server for a run's turns,
bound to one case per turn). It is served in process (:func:`open_session`, an MCP client
on the SDK's direct in-process path, or framed as JSON-RPC over in-memory streams: what
the tests and the rules underwriter use)
and over stdio (``credit mcp --case ID``, :mod:`credit.cli.mcp`). No domain logic
lives here: each tool calls the governed function and turns a refusal into an MCP
tool error the model can read.

Each result is one text block, the compact JSON of what the governed tool returned
(exact decimals as strings), and nothing else: no structured copy and no output schema.
A model reads the text; a structured copy of a ``dict`` result made the SDK validate
and serialise it again several times (the policy document is 7.4 KB), which was most
of a turn's cost over MCP. A client reads the JSON from the text
(:func:`outcome_of`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any

from mcp import Client
from mcp.server._otel import OpenTelemetryMiddleware as _OTelSpans
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from opentelemetry import trace

from credit.canonical import dumps, loads
from credit.errors import CreditError
from credit.kept import frozen_json
from credit.tools.governed import TOOL_DESCRIPTIONS, CaseTools

__all__ = [
    "SERVER_NAME",
    "ToolHost",
    "ToolOutcome",
    "ToolSession",
    "build_server",
    "open_session",
]

SERVER_NAME = "credit"
INSTRUCTIONS = (
    "The sandboxed tools of one credit case. The tools are the only ground truth: "
    "read the application, the credit report and the policy, then record the decision "
    "exactly once."
)


Dispatch = Callable[[str, dict[str, Any]], dict[str, Any]]


def _governed(dispatch: Dispatch, name: str) -> Callable[[dict[str, Any]], CallToolResult]:
    # The last result and its text. A result the guard shares across calls (the policy
    # document, the same object for every case: see Governor.guard_result, whose
    # callers never modify a result) is written once, not once a turn; any other
    # result is a new object, and is written.
    last: list[tuple[Any, str]] = []

    def run(arguments: dict[str, Any]) -> CallToolResult:
        try:
            result = dispatch(name, arguments)
        except CreditError as err:
            raise ToolError(str(err)) from err
        kept = last[0] if last else None  # one read: the pair is replaced whole
        if kept is not None and kept[0] is result:
            text = kept[1]
        else:
            text = dumps(result)
            last[:] = [(result, text)]
        return CallToolResult(content=[TextContent(type="text", text=text)])

    return run


def _tracing() -> bool:
    """Whether an OpenTelemetry tracer provider is installed in this process (the
    default provider is a proxy that records nothing). The SDK wraps every request in
    a span (its ``OpenTelemetryMiddleware``); a server built while no provider is
    installed leaves that out, one built after a provider is installed keeps it."""
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def build_server(tools: CaseTools | Dispatch) -> MCPServer:
    """An MCP server with exactly the four governed tools: of one case (``tools``), or
    of whatever case a dispatcher serves (:class:`ToolHost`)."""
    dispatch: Dispatch = tools.call if isinstance(tools, CaseTools) else tools
    # log_level WARNING: a refused call is an expected outcome, not news for stderr.
    server: MCPServer = MCPServer(
        SERVER_NAME, instructions=INSTRUCTIONS, version="1", log_level="WARNING"
    )
    if not _tracing():  # a span per request that records nothing: ~3% of a case's CPU
        server.middleware[:] = [m for m in server.middleware if not isinstance(m, _OTelSpans)]
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    commit = ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
    )
    get_application_call = _governed(dispatch, "get_application")
    get_credit_report_call = _governed(dispatch, "get_credit_report")
    get_policy_call = _governed(dispatch, "get_policy")
    record_decision_call = _governed(dispatch, "record_decision")

    async def get_application() -> CallToolResult:
        return get_application_call({})

    async def get_credit_report() -> CallToolResult:
        return get_credit_report_call({})

    async def get_policy() -> CallToolResult:
        return get_policy_call({})

    async def record_decision(
        decision: dict[str, Any], reasonCodes: list[str] | None = None
    ) -> CallToolResult:
        arguments: dict[str, Any] = {"decision": decision}
        if reasonCodes is not None:
            arguments["reasonCodes"] = reasonCodes
        return record_decision_call(arguments)

    for fn, hints in (
        (get_application, read_only),
        (get_credit_report, read_only),
        (get_policy, read_only),
        (record_decision, commit),
    ):
        server.add_tool(
            fn,
            name=fn.__name__,
            description=TOOL_DESCRIPTIONS[fn.__name__],
            annotations=hints,
        )
    return server


class ToolHost:
    """One MCP server for many turns, serving one case's tools at a time.

    Building a server (its tools' JSON schemas) and opening a session costs more than
    the four calls of a turn, so a run builds one and :meth:`bound` binds it to one
    case for the length of one turn: while bound, every call reaches that case's
    :class:`~credit.tools.governed.CaseTools` and no other; unbound, every call is
    refused. Binding a second case while one is bound is an error, never a switch.
    """

    def __init__(self) -> None:
        self._tools: CaseTools | None = None
        self.server = build_server(self._dispatch)

    @property
    def case_id(self) -> str | None:
        """The case the server serves now (None between turns)."""
        return None if self._tools is None else self._tools.case_id

    def _dispatch(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        tools = self._tools
        if tools is None:
            raise ToolError("no case is open on this server: a call reaches a case in its turn")
        return tools.call(name, arguments)

    @contextmanager
    def bound(self, tools: CaseTools) -> Iterator[None]:
        """Serve ``tools`` (one case) until the block ends."""
        if self._tools is not None:
            raise RuntimeError(
                f"the tool server serves case {self._tools.case_id}; it cannot also serve "
                f"case {tools.case_id}"
            )
        self._tools = tools
        try:
            yield
        finally:
            self._tools = None


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """One tool call's result as the underwriter receives it."""

    tool: str
    ok: bool
    data: Any  # the parsed JSON result (None for an error; read-only if kept: outcome_of)
    text: str  # the text content (the error message for an error)


_UNREAD: Any = object()  # a text seen once, whose JSON is not kept
_NOTHING: tuple[str | None, Any] = (None, _UNREAD)  # no text seen yet


def outcome_of(
    tool: str, result: CallToolResult, repeated: dict[str, tuple[str | None, Any]] | None = None
) -> ToolOutcome:
    """The result as the underwriter receives it: its text, and the JSON read from it.

    ``repeated`` (a session's, per tool: the last text and, once the same text came
    again, its JSON): a text that comes again, as the policy document does in every
    turn of a run, is read once more and then kept, read-only all the way down
    (:func:`credit.kept.frozen_json`: it still equals a fresh reading), so a caller
    cannot change what a later call is given; any other text is read each time it comes."""
    text = "".join(block.text for block in result.content if isinstance(block, TextContent))
    if result.is_error:
        return ToolOutcome(tool, False, None, text)
    data: Any = result.structured_content
    if data is None:
        last = _NOTHING if repeated is None else repeated.get(tool, _NOTHING)
        again = last[0] == text
        if again and last[1] is not _UNREAD:
            return ToolOutcome(tool, True, last[1], text)
        try:
            data = loads(text)
        except ValueError:
            data = None
        if repeated is not None:
            if again:  # the second time: kept
                data = frozen_json(data)
            repeated[tool] = (text, data if again else _UNREAD)
    return ToolOutcome(tool, True, data, text)


class ToolSession:
    """An MCP client session on one case's tools (in process or over stdio)."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self._repeated: dict[str, tuple[str | None, Any]] = {}  # see outcome_of

    async def tool_names(self) -> list[str]:
        listed = await self.client.list_tools()
        return [tool.name for tool in listed.tools]

    async def call(self, name: str, arguments: dict[str, Any] | None = None) -> ToolOutcome:
        return outcome_of(name, await self.client.call_tool(name, arguments or {}), self._repeated)


# The SDK's direct in-process path: the protocol version a session on it adopts.
DIRECT_PROTOCOL = "2026-07-28"


@asynccontextmanager
async def open_session(
    tools: CaseTools | MCPServer, *, framed: bool = False
) -> AsyncIterator[ToolSession]:
    """An in-process MCP session on the tools: a real client and a real server.

    By default the SDK's direct in-process path (protocol ``2026-07-28``): each request
    goes to the server's request handlers as an object, without streams, JSON-RPC
    framing or the initialize handshake. What the server does with it is what it does
    for any transport: the tool is looked up by name, its arguments validated against
    the tool's input schema, the governed tool called and its refusal turned into a
    tool error. ``framed=True`` takes the in-memory JSON-RPC transport after the
    initialize handshake instead, every call framed and serialised exactly as over
    stdio (``credit mcp``); a test holds the two paths to the same outcomes of the same
    turns. The framing cost 0.6 to 0.85 ms of the 4 to 6 ms of CPU a governed case takes."""
    server = tools if isinstance(tools, MCPServer) else build_server(tools)
    try:
        async with Client(server, mode="legacy" if framed else DIRECT_PROTOCOL) as client:
            yield ToolSession(client)
    except BaseExceptionGroup as group:
        # The client's task groups wrap what the caller raised inside the session (an
        # UndecidedCaseError, say); hand it back as it was raised.
        single = _single(group)
        if single is None:
            raise
        raise single from None


def _single(group: BaseExceptionGroup[BaseException]) -> BaseException | None:
    inner = group.exceptions
    if len(inner) != 1:
        return None
    if isinstance(inner[0], BaseExceptionGroup):
        return _single(inner[0])
    return inner[0]
