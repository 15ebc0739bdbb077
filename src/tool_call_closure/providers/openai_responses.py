"""OpenAI Responses: one ``function_call_output`` input item per call, paired on ``call_id``."""

from __future__ import annotations

from typing import Any, Final

from tool_call_closure.providers.result_text import result_text
from tool_call_closure.values import Snapshot

__all__ = ["FORMAT", "render_tool_results"]

FORMAT: Final = "openai_responses"
"""The export format this module renders (``spec/machine.json``)."""


def render_tool_results(snapshot: Snapshot) -> list[dict[str, Any]]:
    """ADP-4: ``{"type": "function_call_output", "call_id", "output"}`` per decided call, in announcement order."""
    return [
        {"type": "function_call_output", "call_id": call.id, "output": result_text(call.settlement)}
        for call in snapshot.calls
        if call.settlement is not None
    ]
