"""ADP-5: the text a provider payload carries for one call, the same in every format."""

from __future__ import annotations

from typing import Any

from tool_call_closure.ecma import json_stringify
from tool_call_closure.values import Settlement

__all__ = ["error_object", "result_text"]


def error_object(settlement: Settlement) -> dict[str, Any]:
    """``{"error": {"code", "message", "side_effect_state"?}}`` for an error or a cancellation.

    ``side_effect_state`` is added for a synthetic outcome (the model must know
    the tool may or may not have run).
    """
    error: dict[str, Any] = {"code": settlement.code, "message": settlement.message}
    if settlement.provenance == "synthetic":
        error["side_effect_state"] = settlement.side_effect_state
    return {"error": error}


def result_text(settlement: Settlement) -> str:
    """A success's stored text; for an error or a cancellation, the JSON text of :func:`error_object`."""
    if settlement.status == "success":
        return settlement.content  # type: ignore[return-value]
    return json_stringify(error_object(settlement))
