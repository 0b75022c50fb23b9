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
  ``permission_mode="bypassPermissions"``, the Spark methodology as the system prompt;
- a ``PostToolUse`` hook as a second redaction layer: it re-runs the fair-lending guard
  on every tool response before the model reads it (a field the first layer missed is
  removed and journaled with ``layer: "hook"``).

The SDK is an optional extra (``pip install 'credit[llm]'``) and is imported only when
the adapter is used; without it, using the adapter raises
:class:`~credit.errors.MissingExtraError`. ``query`` may be injected: the tests drive
the same tools with a scripted model in place of the SDK's query loop (there is no
network here), and everything else (options, server, hook) is the real SDK's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from credit.canonical import dumps
from credit.errors import CreditError, MissingExtraError, SafetyBoundaryError, UnderwriterError
from credit.governance.governor import Governor
from credit.tools.governed import READ_TOOLS, TOOL_DESCRIPTIONS, TOOL_NAMES, CaseTools
from credit.underwriters.runtime import TurnContext

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
    "MCP_SERVER",
    "ClaudeUnderwriter",
    "QueryFn",
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

    ``model`` and ``max_turns`` go to the SDK; ``query`` replaces the SDK's query loop
    (tests); ``cwd`` is the session's working directory (nothing there is readable:
    there are no file tools).
    """

    def __init__(
        self,
        *,
        model: str | None = None,
        max_turns: int = 16,
        max_budget_usd: float | None = None,
        cwd: str | Path | None = None,
        query: QueryFn | None = None,
        name: str = "claude",
    ) -> None:
        self.model = model
        self.max_turns = max_turns
        self.max_budget_usd = max_budget_usd
        self.cwd = cwd
        self._query = query
        self._name = name

    @property
    def name(self) -> str:
        return self._name

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
                        "updatedToolOutput": f"withheld: {err}",
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
        final answer."""
        _require_sdk()
        from claude_agent_sdk import AssistantMessage, ResultMessage, TextBlock
        from claude_agent_sdk import query as sdk_query

        options = self.build_options(tools, context)
        query: QueryFn = self._query or sdk_query
        final: str | None = None
        texts: list[str] = []
        async for message in query(prompt=context.prompt(), options=options):
            if isinstance(message, ResultMessage):
                if message.is_error:
                    raise UnderwriterError(
                        f"the model session ended in error ({message.subtype})",
                        case_id=tools.case_id,
                        underwriter=self.name,
                    )
                final = message.result
            elif isinstance(message, AssistantMessage):
                texts.extend(b.text for b in message.content if isinstance(b, TextBlock))
        return final if final is not None else "\n".join(texts)
