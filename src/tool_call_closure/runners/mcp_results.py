"""What an MCP server's answer becomes: a ``CallToolResult`` or a protocol error as the call's outcome.

Theory of operation
-------------------
(interim: text and structured content; content parts follow)
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Final

from tool_call_closure.runners.outcomes import ToolCallError

if TYPE_CHECKING:
    from mcp.shared.exceptions import MCPError
    from mcp_types import CallToolResult, Tool

__all__ = ["error_of", "outcome_of"]

INVALID_PARAMS: Final = -32602
CONNECTION_CLOSED: Final = -32000


def _text_of(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


def outcome_of(result: CallToolResult, tool: Tool | None) -> object:
    """The call's outcome: its value, or a raised :class:`ToolCallError` when the server said ``isError``."""
    text = _text_of(result)
    structured = result.structured_content
    if result.is_error:
        message = text if structured is None else f"{text}\n{json.dumps(structured)}".strip()
        raise ToolCallError(message or "The MCP tool reported an error.", structured=structured)
    if structured is not None:
        return {"text": text, "structuredContent": structured}
    return text


def error_of(error: MCPError, name: str) -> ToolCallError:
    """A JSON-RPC error answering ``tools/call`` (or the connection's end) as the call's outcome."""
    if error.code == INVALID_PARAMS:
        unknown = "unknown tool" in error.message.lower()
        return ToolCallError(error.message, code="unknown_tool" if unknown else "invalid_tool_call")
    if error.code == CONNECTION_CLOSED:
        return ToolCallError(f"The MCP server closed the connection before answering ({error.message}).")
    return ToolCallError(f"MCP error {error.code}: {error.message}")
