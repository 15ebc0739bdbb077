"""ADP-5: the text a provider payload carries for one call, the same in every format.

Every export of a snapshot carries the same text for a call, and a close gives
all its pending calls one shared synthetic settlement, so the JSON text of an
error object is rendered once per distinct settlement and then reused by every
export (a bounded cache keyed by the frozen settlement's value).
"""

from __future__ import annotations

from typing import Any, Final

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


_CACHE_SIZE: Final = 4096
_error_texts: dict[Settlement, str] = {}  # settlement (by value) -> its error object's JSON text


def result_text(settlement: Settlement) -> str:
    """A success's stored text; for an error or a cancellation, the JSON text of :func:`error_object`."""
    if settlement.status == "success":
        return settlement.content  # type: ignore[return-value]
    text = _error_texts.get(settlement)
    if text is None:
        text = json_stringify(error_object(settlement))
        if len(_error_texts) >= _CACHE_SIZE:
            _error_texts.clear()  # bounded: a burst of distinct failures costs a re-render, never memory
        _error_texts[settlement] = text
    return text
