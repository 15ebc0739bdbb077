"""OpenAI Chat Completions: one ``role: "tool"`` message per call."""

from __future__ import annotations

from typing import Any, Final

from tool_call_closure.providers.result_text import result_text
from tool_call_closure.values import Snapshot

__all__ = ["FORMAT", "render_tool_results"]

FORMAT: Final = "openai_chat"
"""The export format this module renders (``spec/machine.json``)."""


def render_tool_results(snapshot: Snapshot) -> list[dict[str, Any]]:
    """ADP-4: ``{"role": "tool", "tool_call_id", "content"}`` per decided call, in announcement order."""
    return [
        {"role": "tool", "tool_call_id": call.id, "content": result_text(call.settlement)}
        for call in snapshot.calls
        if call.settlement is not None
    ]
