"""ADP-5: the text a provider payload carries for one call, the same in every format.

A close gives all its pending calls one shared synthetic settlement, so an
export renders the JSON text of each distinct settlement once
(:func:`export_texts`) instead of once per call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tool_call_closure.ecma import json_stringify
from tool_call_closure.values import Settlement

__all__ = ["error_object", "export_texts", "result_text"]


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


def export_texts() -> Callable[[Settlement], str]:
    """:func:`result_text` for one export: each distinct settlement object is rendered once.

    Keyed by identity, which is stable for the length of one export: the
    snapshot being rendered holds every settlement alive.  Nothing outlives the
    export, so memory stays bounded by the snapshot.
    """
    texts: dict[int, str] = {}

    def text(settlement: Settlement) -> str:
        key = id(settlement)
        found = texts.get(key)
        if found is None:
            found = texts[key] = result_text(settlement)
        return found

    return text
