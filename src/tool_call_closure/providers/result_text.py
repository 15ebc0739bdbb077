"""ADP-5: the text a provider payload carries for one call, the same in every format."""

from __future__ import annotations

from typing import Any

from tool_call_closure.ecma import json_stringify
from tool_call_closure.values import Settlement

__all__ = ["result_text"]


def result_text(settlement: Settlement) -> str:
    """A success's stored text; for an error or a cancellation, the JSON error object.

    ``{"error": {"code", "message"}}``, with ``side_effect_state`` added for a
    synthetic outcome (the model must know the tool may or may not have run).
    """
    if settlement.status == "success":
        return settlement.content  # type: ignore[return-value]
    error: dict[str, Any] = {"code": settlement.code, "message": settlement.message}
    if settlement.provenance == "synthetic":
        error["side_effect_state"] = settlement.side_effect_state
    return json_stringify({"error": error})
