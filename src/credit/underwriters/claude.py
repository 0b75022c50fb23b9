"""The LLM underwriter: a Claude Agent SDK session on the same governed tools.

Spec, "Sandboxed tools": in-process MCP tools only; built-in tools disabled; setting
sources ``[]``; permission mode ``bypassPermissions``; the only ground truth is the
tools. This adapter builds exactly that:

- the four tools as SDK in-process MCP tools (:func:`claude_agent_sdk.tool`,
  :func:`claude_agent_sdk.create_sdk_mcp_server`), each calling the same governed
  :class:`~credit.tools.governed.CaseTools` function the MCP server and the rules
  underwriter use (so the guard, the redaction journal and the held commit apply);
- :class:`claude_agent_sdk.ClaudeAgentOptions` with ``tools=[]`` (no built-in tool),
  ``allowed_tools`` the four ``mcp__credit__*`` tools only, the built-ins also listed in
  ``disallowed_tools``, ``setting_sources=[]`` (no user, project or local settings,
  no CLAUDE.md), ``strict_mcp_config=True`` (no other MCP server),
  ``permission_mode="bypassPermissions"``, the turn's methodology as the system prompt
  (by default :meth:`ClaudeUnderwriter.methodology_for`: the prompt
  :func:`~credit.underwriters.prompt.methodology_prompt` writes from the policy in
  force, the reason catalogue and the prohibited terms, so the model is told the
  reason codes and the Decision format the tools, Backstop and the notice step read);
- the CLI's environment and flags that keep the session to those four tools and the
  model's endpoint (:data:`SANDBOX_ENV`: tool search off, so no deferred-tool
  placeholder joins the four; no telemetry, error reports, update checks or other
  nonessential traffic; :data:`SANDBOX_FLAGS`: the session is not written to disk), and
  a new empty working folder per turn unless ``cwd`` is given;
- a ``PostToolUse`` hook as a second redaction layer: it re-runs the fair-lending guard
  on every tool response before the model reads it (a field the first layer missed is
  removed and journaled with ``layer: "hook"``).

Each turn's transcript (the system and user prompts, every assistant message, every
tool call with its arguments and the result the model read after both redaction
layers, the final answer, the usage, and the error that ended it, if one did) is kept
for the runtime to store (:meth:`ClaudeUnderwriter.take_transcript`,
:mod:`credit.underwriters.transcripts`).

A turn runs the SDK's own loop (:class:`claude_agent_sdk.ClaudeSDKClient`), which
starts the CLI the SDK bundles; the CLI calls the Messages API at
``ANTHROPIC_BASE_URL`` (``env``). A session that gives no usable outcome raises a
:class:`~credit.errors.ModelTurnError` that says what happened (an API error, a
failed session, an unknown tool, a timeout, no decision recorded); a decision the
governor refuses is the runtime's typed refusal instead. The tests drive this path
end to end against a scripted stand-in of the Messages API on loopback
(:mod:`credit.testing.standin`).

The SDK is an optional extra (``pip install 'credit[llm]'``) and is imported only when
the adapter is used; without it, using the adapter raises
:class:`~credit.errors.MissingExtraError`. ``query`` may be injected: a test may then
drive the same tools with a scripted stand-in for the SDK's loop (no CLI at all).
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import anyio

from credit.canonical import dumps
from credit.catalogue import Catalogue, default_catalogue
from credit.errors import (
    CreditError,
    MissingExtraError,
    ModelApiError,
    ModelSessionError,
    ModelTurnError,
    NoDecisionError,
    SafetyBoundaryError,
    UnderwriterError,
    UnderwriterTimeoutError,
    UnknownToolError,
)
from credit.governance.governor import Governor
from credit.governance.onramp import intake
from credit.journal import InMemoryStore
from credit.models import Case, Decision, parse_decision
from credit.policy import Policy, PolicyRegistry
from credit.tools.governed import READ_TOOLS, TOOL_DESCRIPTIONS, TOOL_NAMES, CaseTools
from credit.underwriters.prompt import methodology_prompt
from credit.underwriters.runtime import SparkRuntime, TurnContext, Underwriter
from credit.underwriters.transcripts import TRANSCRIPT_FORMAT

if TYPE_CHECKING:
    from claude_agent_sdk import (
        ClaudeAgentOptions,
        HookContext,
        HookInput,
        HookJSONOutput,
        McpSdkServerConfig,
        SdkMcpTool,
    )

__all__ = [
    "ALLOWED_TOOLS",
    "BUILTIN_TOOLS",
    "DEFAULT_TIMEOUT_S",
    "MCP_SERVER",
    "SANDBOX_ENV",
    "SANDBOX_FLAGS",
    "ClaudeUnderwriter",
    "ModelSession",
    "QueryFn",
    "evals_underwriter",
    "mcp_tool_name",
]

MCP_SERVER: Final = "credit"

# Claude Code's built-in tools. ``tools=[]`` already removes them all; naming them in
# ``disallowed_tools`` as well keeps them out even if a later CLI changes the default.
BUILTIN_TOOLS: Final = (
    "Agent",
    "Bash",
    "BashOutput",
    "Edit",
    "ExitPlanMode",
    "Glob",
    "Grep",
    "KillShell",
    "LS",
    "MultiEdit",
    "NotebookEdit",
    "NotebookRead",
    "Read",
    "Skill",
    "SlashCommand",
    "Task",
    "TodoWrite",
    "WebFetch",
    "WebSearch",
    "Write",
)

# The CLI's environment, whatever the caller passes: exactly the four tools in every
# request (tool search would add a deferred-tool placeholder), and nothing sent
# anywhere but the model's endpoint (no telemetry, error reports, update checks or
# other nonessential traffic).
SANDBOX_ENV: Final = {
    "ENABLE_TOOL_SEARCH": "false",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
}

# The CLI's own flags beyond the SDK's options: the session (the applicant's data, as
# the model read it) is never written to disk; the journal is the record.
SANDBOX_FLAGS: Final[Mapping[str, str | None]] = {"no-session-persistence": None}

DEFAULT_TIMEOUT_S: Final = 300.0
"""The longest one turn may run before it is stopped (an operating limit of the
adapter, not a credit rule; pass ``timeout_s`` to change it)."""

_TEXT_LIMIT: Final = 2000  # characters of a tool error kept in an error's fields
_STDERR_LINES: Final = 20  # lines of the CLI's error output kept
_INTERRUPT_S: Final = 2.0  # how long a session cut short may take to acknowledge

QueryFn = Callable[..., AsyncIterator[Any]]
"""``query(prompt=..., options=...)``: the SDK's query loop, or a stand-in for tests."""


def mcp_tool_name(tool: str) -> str:
    """The name the model calls a tool by: ``mcp__credit__get_application``."""
    return f"mcp__{MCP_SERVER}__{tool}"


ALLOWED_TOOLS: Final = tuple(mcp_tool_name(t) for t in TOOL_NAMES)

_NO_ARGUMENTS: Final = {"type": "object", "properties": {}, "additionalProperties": False}
_RECORD_ARGUMENTS: Final = {
    "type": "object",
    "properties": {
        "decision": {"type": "object", "description": "The Decision (see the tool description)."},
        "reasonCodes": {
            "type": "array",
            "items": {"type": "string"},
            "description": "The reason codes of the catalogue, in order.",
        },
    },
    "required": ["decision"],
    "additionalProperties": False,
}


@dataclass(frozen=True, slots=True)
class ModelSession:
    """What one model session did: its id, the tools the model asked for (as it named
    them), the model turns and tokens the CLI counted, and how long it took (wall, and
    waiting on the API)."""

    session_id: str | None
    tool_calls: tuple[str, ...]
    turns: int
    input_tokens: int
    output_tokens: int
    seconds: float
    api_seconds: float
    is_error: bool


def _require_sdk() -> None:
    try:
        import claude_agent_sdk  # noqa: F401
    except ImportError as err:
        raise MissingExtraError(
            "the LLM underwriter needs the Claude Agent SDK",
            extra="llm",
            package="claude-agent-sdk",
        ) from err


def _text_result(text: str, *, is_error: bool = False) -> dict[str, Any]:
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if is_error:
        result["is_error"] = True
    return result


class ClaudeUnderwriter:
    """The LLM underwriter on the Claude Agent SDK.

    ``model``, ``max_turns`` and ``max_budget_usd`` go to the SDK; ``env`` is added to
    the CLI's environment (the endpoint and key: ``ANTHROPIC_BASE_URL``,
    ``ANTHROPIC_API_KEY``; :data:`SANDBOX_ENV` always wins); ``cli_path`` replaces the
    CLI the SDK bundles; ``user`` runs the CLI as that user; ``timeout_s`` stops a
    turn that runs longer; ``cwd`` is the session's working directory (default: a new
    empty folder per turn; nothing there is readable: there are no file tools);
    ``query`` replaces the SDK's query loop (tests); ``catalogue`` is the reason
    catalogue the methodology lists (default: the bundled one, as the tools use).
    """

    def __init__(
        self,
        *,
        model: str | None = None,
        max_turns: int = 16,
        max_budget_usd: float | None = None,
        env: Mapping[str, str] | None = None,
        cli_path: str | Path | None = None,
        user: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        cwd: str | Path | None = None,
        query: QueryFn | None = None,
        name: str = "claude",
        catalogue: Catalogue | None = None,
    ) -> None:
        self.model = model
        self.max_turns = max_turns
        self.max_budget_usd = max_budget_usd
        self.env = dict(env or {})
        self.cli_path = cli_path
        self.user = user
        self.timeout_s = timeout_s
        self.cwd = cwd
        self._query = query
        self._name = name
        self.catalogue = catalogue
        self.last_session: ModelSession | None = None
        self._methodologies: dict[str, str] = {}
        self._transcripts: dict[str, dict[str, Any]] = {}

    @property
    def name(self) -> str:
        return self._name

    def methodology_for(self, policy: Policy) -> str:
        """The system prompt for a turn under ``policy``: the Spark methodology written
        from that policy, the reason catalogue and the prohibited terms
        (:func:`~credit.underwriters.prompt.methodology_prompt`), once per policy."""
        key = policy.sha256
        if key not in self._methodologies:
            catalogue = self.catalogue or default_catalogue()
            self._methodologies[key] = methodology_prompt(policy, catalogue)
        return self._methodologies[key]

    def take_transcript(self, turn: str) -> dict[str, Any] | None:
        """The transcript of ``turn`` (once: it is then forgotten here), or None when
        no session of that turn ran."""
        return self._transcripts.pop(turn, None)

    # ------------------------------------------------------------ the tools

    def sdk_tools(self, tools: CaseTools) -> list[SdkMcpTool[Any]]:
        """The four governed tools as SDK in-process tools."""
        _require_sdk()
        from claude_agent_sdk import tool as sdk_tool
        from mcp_types import ToolAnnotations

        def handler(name: str) -> Callable[[dict[str, Any]], Any]:
            async def run(args: dict[str, Any]) -> dict[str, Any]:
                try:
                    result = tools.call(name, args)
                except CreditError as err:
                    return _text_result(str(err), is_error=True)
                return _text_result(dumps(result))

            return run

        return [
            sdk_tool(
                name,
                TOOL_DESCRIPTIONS[name],
                _NO_ARGUMENTS if name in READ_TOOLS else _RECORD_ARGUMENTS,
                annotations=ToolAnnotations(
                    read_only_hint=name in READ_TOOLS, open_world_hint=False
                ),
            )(handler(name))
            for name in TOOL_NAMES
        ]

    def mcp_server(self, tools: CaseTools) -> McpSdkServerConfig:
        """The in-process MCP server (``mcp_servers["credit"]``) with the four tools."""
        _require_sdk()
        from claude_agent_sdk import create_sdk_mcp_server

        return create_sdk_mcp_server(MCP_SERVER, version="1", tools=self.sdk_tools(tools))

    # ------------------------------------------------------------ the second layer

    def post_tool_use_hook(
        self, governor: Governor
    ) -> Callable[[HookInput, str | None, HookContext], Any]:
        """The PostToolUse hook: re-runs the guard on the tool response."""

        async def hook(
            hook_input: HookInput, tool_use_id: str | None, context: HookContext
        ) -> HookJSONOutput:
            if hook_input["hook_event_name"] != "PostToolUse":
                return {}
            tool = hook_input["tool_name"].removeprefix(mcp_tool_name(""))
            before = len(governor.redactions)
            try:
                cleaned = governor.guard_result(tool, hook_input["tool_response"], layer="hook")
            except SafetyBoundaryError as err:
                return {
                    "hookSpecificOutput": {
                        "hookEventName": "PostToolUse",
                        "updatedToolOutput": [{"type": "text", "text": f"withheld: {err}"}],
                    }
                }
            if len(governor.redactions) == before:
                return {}
            return {
                "hookSpecificOutput": {
                    "hookEventName": "PostToolUse",
                    "updatedToolOutput": cleaned,
                }
            }

        return hook

    # ------------------------------------------------------------ the options

    def build_options(self, tools: CaseTools, context: TurnContext) -> ClaudeAgentOptions:
        """The SDK options of one turn: the sandbox of the spec, field by field."""
        _require_sdk()
        from claude_agent_sdk import ClaudeAgentOptions, HookMatcher

        return ClaudeAgentOptions(
            tools=[],
            allowed_tools=list(ALLOWED_TOOLS),
            disallowed_tools=list(BUILTIN_TOOLS),
            setting_sources=[],
            permission_mode="bypassPermissions",
            mcp_servers={MCP_SERVER: self.mcp_server(tools)},
            strict_mcp_config=True,
            system_prompt=context.methodology,
            max_turns=self.max_turns,
            max_budget_usd=self.max_budget_usd,
            model=self.model,
            cwd=self.cwd,
            cli_path=self.cli_path,
            user=self.user,
            env={**self.env, **SANDBOX_ENV},
            extra_args=dict(SANDBOX_FLAGS),
            hooks={
                "PostToolUse": [
                    HookMatcher(
                        matcher="|".join(ALLOWED_TOOLS),
                        hooks=[self.post_tool_use_hook(tools.governor)],
                    )
                ]
            },
        )

    # ------------------------------------------------------------ the turn

    async def run(self, tools: CaseTools, context: TurnContext) -> str:
        """One session: the model reads and records through the tools; returns its
        final answer.

        Raises a :class:`~credit.errors.ModelTurnError` naming what went wrong when the
        session gives no usable outcome: :class:`~credit.errors.ModelApiError`,
        :class:`~credit.errors.ModelSessionError`,
        :class:`~credit.errors.UnknownToolError`,
        :class:`~credit.errors.UnderwriterTimeoutError`, or
        :class:`~credit.errors.NoDecisionError` when it ended with no decision recorded
        and no safety boundary refused one (a refused decision is the runtime's typed
        refusal, not an error). ``last_session`` says what the session did either way.
        """
        _require_sdk()
        query: QueryFn = self._query or _client_session
        session = _Session(self.name, tools)
        self.last_session = None
        prompt = context.prompt()
        failure: BaseException | None = None
        try:
            return await self._session(query, session, tools, context, prompt)
        except BaseException as err:
            failure = err
            raise
        finally:
            self._transcripts[context.turn] = session.transcript(
                context, prompt, requested_model=self.model, failure=failure
            )

    async def _session(
        self,
        query: QueryFn,
        session: _Session,
        tools: CaseTools,
        context: TurnContext,
        prompt: str,
    ) -> str:
        from claude_agent_sdk import ClaudeSDKError

        with contextlib.ExitStack() as stack:
            options = self.build_options(tools, context)
            if options.cwd is None:  # an empty folder: nothing there to read or disclose
                options.cwd = stack.enter_context(tempfile.TemporaryDirectory(prefix="spark-"))
                if self.user is not None:  # the CLI's user must be able to enter it
                    Path(options.cwd).chmod(0o755)
            options.stderr = session.stderr_line
            started = time.monotonic()
            try:
                with anyio.fail_after(self.timeout_s):
                    messages = query(prompt=prompt, options=options)
                    try:
                        async for message in messages:
                            session.observe(message)
                    finally:  # stops the CLI when the session is cut short
                        aclose = getattr(messages, "aclose", None)
                        if aclose is not None:
                            await aclose()
            except TimeoutError as err:
                raise UnderwriterTimeoutError(
                    f"the turn was stopped after {self.timeout_s} s with no result",
                    timeout_s=self.timeout_s,
                    **session.context(),
                ) from err
            except ClaudeSDKError as err:
                raise ModelSessionError(
                    f"the model session failed: {type(err).__name__}: {err}",
                    exit_code=getattr(err, "exit_code", None),
                    stderr=session.stderr_tail(),
                    **session.context(),
                ) from err
            finally:
                self.last_session = session.report(time.monotonic() - started)
        return session.outcome()


async def _client_session(*, prompt: str, options: ClaudeAgentOptions) -> AsyncIterator[Any]:
    """The SDK's session for one prompt, through :class:`claude_agent_sdk.ClaudeSDKClient`:
    its messages up to and including the result.

    Not ``claude_agent_sdk.query``: closing that generator early (an error, a timeout,
    an unknown tool) leaves the CLI running, since its inner generator is never
    closed. Here the client's context always disconnects, and a session cut short is
    first interrupted (the CLI aborts the API call it is waiting on), so the CLI exits
    at once on end of input instead of after the SDK's grace period."""
    from claude_agent_sdk import ClaudeSDKClient, ResultMessage

    async with ClaudeSDKClient(options=options) as client:
        ended = False  # the CLI has sent its result: its turn is over
        try:
            await client.query(prompt)
            async for message in client.receive_response():
                ended = ended or isinstance(message, ResultMessage)
                yield message
        finally:
            if not ended:
                with anyio.CancelScope(shield=True), anyio.move_on_after(_INTERRUPT_S):
                    await client.interrupt()


def _json_safe_text(value: object) -> str:
    text = value if isinstance(value, str) else dumps(value)
    return text[:_TEXT_LIMIT]


def _json_safe(value: Any) -> Any:
    """A JSON-safe copy of what the SDK gave (anything else as its text)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return str(value)


def _block_record(block: Any) -> dict[str, Any]:
    """One content block of a message as the transcript keeps it."""
    from claude_agent_sdk import TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock

    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ToolUseBlock):
        return {
            "type": "tool_use",
            "id": block.id,
            "name": block.name,
            "input": _json_safe(block.input),
        }
    if isinstance(block, ToolResultBlock):
        return {
            "type": "tool_result",
            "toolUseId": block.tool_use_id,
            "content": _json_safe(block.content),
            "isError": bool(block.is_error),
        }
    if isinstance(block, ThinkingBlock):  # its signature is the API's, not the model's words
        return {"type": "thinking", "thinking": block.thinking}
    return {"type": type(block).__name__, "value": str(block)}


def _assistant_record(message: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "messageId": message.message_id,  # one API reply may come as several messages
        "model": message.model,
        "content": [_block_record(b) for b in message.content],
        "stopReason": message.stop_reason,
        "usage": _json_safe(message.usage),
        "error": message.error,
    }


def _user_record(message: Any) -> dict[str, Any]:
    content = message.content
    shown = content if isinstance(content, str) else [_block_record(b) for b in content]
    return {"role": "user", "content": shown}


def _tool_calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every tool call in the conversation, in order, with the result the model read
    (None when the session ended before a result came back)."""
    results = {
        block["toolUseId"]: block
        for message in messages
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block["type"] == "tool_result"
    }
    calls = []
    for message in messages:
        if message["role"] != "assistant":
            continue
        for block in message["content"]:
            if block["type"] != "tool_use":
                continue
            result = results.get(block["id"])
            calls.append(
                {
                    "id": block["id"],
                    "tool": block["name"],
                    "arguments": block["input"],
                    "result": None if result is None else result["content"],
                    "isError": None if result is None else result["isError"],
                }
            )
    return calls


class _Session:
    """What one session did, read from the SDK's messages as they arrive; raises at the
    first sign that the turn cannot give a usable outcome."""

    def __init__(self, underwriter: str, tools: CaseTools) -> None:
        self.underwriter = underwriter
        self.tools = tools
        self.session_id: str | None = None
        self.tool_calls: list[str] = []
        self.tool_errors: list[str] = []
        self.texts: list[str] = []
        self.api_error_kind: str | None = None
        self.result: Any = None
        self.stderr: list[str] = []
        self.offered: list[str] | None = None  # the tools the CLI said it offers
        self.models: list[str] = []  # the models that answered, as they named themselves
        self.messages: list[dict[str, Any]] = []  # the conversation, for the transcript

    def context(self) -> dict[str, Any]:
        return {
            "case_id": self.tools.case_id,
            "underwriter": self.underwriter,
            "session_id": self.session_id,
            "tool_calls": tuple(self.tool_calls),
            "decision_recorded": self.tools.governor.committed is not None,
        }

    def stderr_line(self, line: str) -> None:
        self.stderr.append(line)
        del self.stderr[:-_STDERR_LINES]

    def stderr_tail(self) -> str | None:
        return "\n".join(self.stderr) if self.stderr else None

    def observe(self, message: Any) -> None:
        from claude_agent_sdk import (
            AssistantMessage,
            ResultMessage,
            SystemMessage,
            TextBlock,
            ToolResultBlock,
            ToolUseBlock,
            UserMessage,
        )

        if isinstance(message, SystemMessage) and message.subtype == "init":
            self.session_id = message.data.get("session_id", self.session_id)
            tools = message.data.get("tools")
            if isinstance(tools, list):
                self.offered = [str(t) for t in tools]
        elif isinstance(message, AssistantMessage):
            self.session_id = message.session_id or self.session_id
            if message.model and message.model not in self.models:
                self.models.append(message.model)
            self.messages.append(_assistant_record(message))
            if message.error is not None:
                self.api_error_kind = message.error
            for block in message.content:
                if isinstance(block, TextBlock):
                    self.texts.append(block.text)
                elif isinstance(block, ToolUseBlock):
                    self.tool_calls.append(block.name)
                    if block.name not in ALLOWED_TOOLS:
                        raise UnknownToolError(
                            f"the model called {block.name!r}, which is not one of the "
                            f"four tools ({', '.join(ALLOWED_TOOLS)}); the session was stopped",
                            tool=block.name,
                            **self.context(),
                        )
        elif isinstance(message, UserMessage):
            self.messages.append(_user_record(message))
            if isinstance(message.content, list):
                for block in message.content:
                    if isinstance(block, ToolResultBlock) and block.is_error:
                        self.tool_errors.append(_json_safe_text(block.content))
        elif isinstance(message, ResultMessage):
            self.session_id = message.session_id or self.session_id
            self.result = message
            if message.is_error:
                raise self._result_error(message)

    def _result_error(self, result: Any) -> ModelTurnError:
        status = getattr(result, "api_error_status", None)
        terminal = getattr(result, "terminal_reason", None)
        said = result.result or "; ".join(getattr(result, "errors", None) or ()) or None
        if status is not None or terminal == "api_error" or self.api_error_kind is not None:
            shown = f"HTTP {status}" if status is not None else "no HTTP status"
            return ModelApiError(
                f"the model's API answered an error ({shown}): {said}",
                status=status,
                kind=self.api_error_kind,
                api_message=said,
                **self.context(),
            )
        return ModelSessionError(
            f"the model session ended in error ({result.subtype}): {said}",
            subtype=result.subtype,
            terminal_reason=terminal,
            stderr=self.stderr_tail(),
            **self.context(),
        )

    def outcome(self) -> str:
        """The model's final answer, once the session has ended normally."""
        if self.result is None:
            raise ModelSessionError(
                "the model session ended without a result",
                stderr=self.stderr_tail(),
                **self.context(),
            )
        final = self.result.result if self.result.result is not None else "\n".join(self.texts)
        governor = self.tools.governor
        if governor.committed is None and not governor.verdict().violated:
            raise NoDecisionError(
                "the model session ended without recording a decision"
                + (
                    f" (its tool errors: {'; '.join(self.tool_errors)})" if self.tool_errors else ""
                ),
                final=final,
                tool_errors=self.tool_errors,
                **self.context(),
            )
        return str(final)

    def transcript(
        self,
        context: TurnContext,
        prompt: str,
        *,
        requested_model: str | None,
        failure: BaseException | None,
    ) -> dict[str, Any]:
        """What the model was sent and what it answered in this session (the format of
        :mod:`credit.underwriters.transcripts`)."""
        result = self.result
        usage = getattr(result, "usage", None) if result is not None else None
        outcome: dict[str, Any] = {"ended": failure is None}
        if isinstance(failure, ModelTurnError):
            outcome["error"] = failure.record()
        elif failure is not None:
            outcome["error"] = {"error": type(failure).__name__, "message": str(failure)}
        return {
            "format": TRANSCRIPT_FORMAT,
            "caseId": self.tools.case_id,
            "turn": context.turn,
            "underwriter": self.underwriter,
            "sessionId": self.session_id,
            "model": {"requested": requested_model, "answered": list(self.models)},
            "system": context.methodology,
            "prompt": prompt,
            "toolsOffered": self.offered,
            "messages": list(self.messages),
            "toolCalls": _tool_calls(self.messages),
            "final": getattr(result, "result", None) if result is not None else None,
            "usage": _json_safe(usage) if usage is not None else None,
            "turns": getattr(result, "num_turns", None) if result is not None else None,
            "durationMs": getattr(result, "duration_ms", None) if result is not None else None,
            "apiDurationMs": (
                getattr(result, "duration_api_ms", None) if result is not None else None
            ),
            "outcome": outcome,
        }

    def report(self, seconds: float) -> ModelSession:
        result = self.result
        usage: Mapping[str, Any] = (getattr(result, "usage", None) or {}) if result else {}
        return ModelSession(
            session_id=self.session_id,
            tool_calls=tuple(self.tool_calls),
            turns=int(getattr(result, "num_turns", 0) or 0),
            input_tokens=int(usage.get("input_tokens", 0) or 0),
            output_tokens=int(usage.get("output_tokens", 0) or 0),
            seconds=seconds,
            api_seconds=(getattr(result, "duration_api_ms", 0) or 0) / 1000,
            is_error=bool(getattr(result, "is_error", False)) if result else True,
        )


# ------------------------------------------------------------------ for the evals


def evals_underwriter(
    underwriter: Underwriter,
    *,
    methodology: str | None = None,
    transcripts: Path | str | None = None,
) -> Callable[[Case, Policy], Decision]:
    """A runtime underwriter as the evals take one (``credit.evals.runner``: a callable
    from a case and a policy to a Decision), on the governed path: each case is taken
    in by Onramp into a fresh in-memory journal and one Spark turn runs under that
    policy (with ``methodology`` as the system prompt, default the underwriter's own);
    the decision it recorded is returned. A refused turn, or one that recorded nothing,
    raises :class:`~credit.errors.UnderwriterError` naming the boundary and what broke
    it (the evals count the row failed); a failed model session raises its own error.
    A model's transcripts go to ``transcripts`` (default ``$CREDIT_TRANSCRIPTS``, else
    ``./transcripts``)."""

    def decide(case: Case, policy: Policy) -> Decision:
        store = InMemoryStore()
        intake(case.model_dump(mode="json", by_alias=True), store)
        runtime = SparkRuntime(
            store,
            registry=PolicyRegistry([policy]),
            methodology=methodology,
            transcripts=transcripts,
        )
        result = runtime.run_turn(case.case_id, underwriter)
        if result.error is not None and result.decision_entry is None:
            raise result.error  # the turn's own typed error (journaled as a failed turn)
        if result.refused or result.decision_entry is None:
            broken = [
                f"{r.boundary_id}: {r.detail}" for r in result.verdict.results if not r.upheld
            ]
            raise UnderwriterError(
                f"the turn was refused ({'; '.join(broken)})"
                if result.refused
                else f"the turn recorded no decision: {result.failure or result.surface}",
                case_id=case.case_id,
                underwriter=underwriter.name,
            )
        return parse_decision(result.decision_entry.payload["decision"], case_id=case.case_id)

    return decide
