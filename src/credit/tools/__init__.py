"""The sandboxed tools: exactly four, bound to one case, governed at every call."""

from credit.tools.governed import READ_TOOLS, TOOL_DESCRIPTIONS, TOOL_NAMES, CaseTools, jsonable
from credit.tools.server import (
    SERVER_NAME,
    ToolHost,
    ToolOutcome,
    ToolSession,
    build_server,
    open_session,
)

__all__ = [
    "READ_TOOLS",
    "SERVER_NAME",
    "TOOL_DESCRIPTIONS",
    "TOOL_NAMES",
    "CaseTools",
    "ToolHost",
    "ToolOutcome",
    "ToolSession",
    "build_server",
    "jsonable",
    "open_session",
]
