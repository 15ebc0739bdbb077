"""Anthropic Messages: one ``tool_result`` content block per call, ``is_error`` on every failure."""

from __future__ import annotations

from typing import Any, Final

from tool_call_closure.providers.result_text import result_text
from tool_call_closure.values import Snapshot

__all__ = ["FORMAT", "render_tool_results"]

FORMAT: Final = "anthropic"
"""The export format this module renders (``spec/machine.json``)."""


def render_tool_results(snapshot: Snapshot) -> list[dict[str, Any]]:
    """ADP-4/ADP-6: ``{"type": "tool_result", "tool_use_id", "content", "is_error"?}`` per decided call.

    ``is_error: true`` marks every call that did not succeed; a success has no
    ``is_error`` key at all.
    """
    payload: list[dict[str, Any]] = []
    for call in snapshot.calls:
        if call.settlement is None:
            continue
        item: dict[str, Any] = {"type": "tool_result", "tool_use_id": call.id, "content": result_text(call.settlement)}
        if call.state != "success":
            item["is_error"] = True
        payload.append(item)
    return payload
