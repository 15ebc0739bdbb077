"""ADP-5: the text a provider payload carries for one call, the same in every format.

Renderers read the instance's own records of a snapshot's calls
(:data:`~tool_call_closure.values.CallRecord`, :data:`~tool_call_closure.values.SettlementRecord`:
plain tuples), never the view a caller holds.  A close gives all its pending
calls one shared synthetic settlement record; the JSON text of each distinct
error or cancellation is rendered once for all the exports of a snapshot
(:func:`export_texts`, with the memo the instance keeps beside its record of
the snapshot), not once per call or once per export.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tool_call_closure.ecma import json_stringify
from tool_call_closure.values import (
    CODE,
    CONTENT,
    MESSAGE,
    PROVENANCE,
    SIDE_EFFECT_STATE,
    STATUS,
    Settlement,
    SettlementRecord,
    settlement_record,
)

__all__ = [
    "error_object",
    "export_texts",
    "record_error_object",
    "record_text",
    "result_text",
]


def record_error_object(settlement: SettlementRecord) -> dict[str, Any]:
    """``{"error": {"code", "message", "side_effect_state"?}}`` for an error or a cancellation.

    ``side_effect_state`` is added for a synthetic outcome (the model must know
    the tool may or may not have run).
    """
    error: dict[str, Any] = {"code": settlement[CODE], "message": settlement[MESSAGE]}
    if settlement[PROVENANCE] == "synthetic":
        error["side_effect_state"] = settlement[SIDE_EFFECT_STATE]
    return {"error": error}


def record_text(settlement: SettlementRecord) -> str:
    """A success's stored text; for an error or a cancellation, the JSON text of :func:`record_error_object`."""
    if settlement[STATUS] == "success":
        return settlement[CONTENT]  # type: ignore[return-value]  # a success always has its content
    return json_stringify(record_error_object(settlement))


def error_object(settlement: Settlement) -> dict[str, Any]:
    """:func:`record_error_object` of a :class:`~tool_call_closure.Settlement`."""
    return record_error_object(settlement_record(settlement))


def result_text(settlement: Settlement) -> str:
    """:func:`record_text` of a :class:`~tool_call_closure.Settlement`: the text every export carries for it."""
    return record_text(settlement_record(settlement))


def export_texts(texts: dict[int, str] | None = None) -> Callable[[SettlementRecord], str]:
    """:func:`record_text` memoized in ``texts``: each distinct error or cancellation is rendered once.

    Keyed by the record's identity.  The instance passes the memo it keeps
    with its record of the snapshot (``SnapshotRecord.texts``), which holds
    every settlement record alive as long as the memo: the text is rendered
    once for all the exports of that snapshot, and goes with it.  Without a
    memo, one for this export only.
    """
    if texts is None:
        texts = {}

    def text(settlement: SettlementRecord) -> str:
        if settlement[STATUS] == "success":
            return settlement[CONTENT]  # type: ignore[return-value]  # the stored text itself: nothing to render
        key = id(settlement)
        found = texts.get(key)
        if found is None:
            found = texts[key] = record_text(settlement)
        return found

    return text
