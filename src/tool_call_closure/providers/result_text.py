"""ADP-5: the text a provider payload carries for one call, the same in every format.

Renderers read the instance's own records of a snapshot's calls
(:data:`~tool_call_closure.values.CallRecord`, :data:`~tool_call_closure.values.SettlementRecord`:
plain tuples), never the view a caller holds.  A close gives all its pending
calls one shared synthetic settlement record; the JSON text of each distinct
error or cancellation is rendered once for all the exports of a snapshot,
not once per call or once per export: :func:`export_rows` computes, on the
first export of a snapshot, each decided call with the text every format
carries for it, and keeps the rows in the memo the instance keeps beside its
record of the snapshot; the later exports of that snapshot render nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, TypeAlias

from tool_call_closure.ecma_json import json_stringify
from tool_call_closure.parts import ToolContent
from tool_call_closure.values import (
    CODE,
    CONTENT,
    MESSAGE,
    PROVENANCE,
    SIDE_EFFECT_STATE,
    STATUS,
    CallRecord,
    Settlement,
    SettlementRecord,
    settlement_record,
)

__all__ = [
    "ExportRow",
    "error_object",
    "export_rows",
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


def record_text(settlement: SettlementRecord) -> str | ToolContent:
    """A success's stored text (or parts, D22); for an error or a cancellation, :func:`record_error_object`'s JSON."""
    if settlement[STATUS] == "success":
        return settlement[CONTENT]  # type: ignore[return-value]  # a success always has its content
    return json_stringify(record_error_object(settlement))


def error_object(settlement: Settlement) -> dict[str, Any]:
    """:func:`record_error_object` of a :class:`~tool_call_closure.Settlement`."""
    return record_error_object(settlement_record(settlement))


def result_text(settlement: Settlement) -> str | ToolContent:
    """:func:`record_text` of a :class:`~tool_call_closure.Settlement`: the text every export carries for it."""
    return record_text(settlement_record(settlement))


ExportRow: TypeAlias = tuple[str, str, str, "str | ToolContent"]
"""``(call id, tool name, state, text)`` of one decided call: what every format is rendered from.

For a success recorded as parts (deviation D22) the text is the
:class:`~tool_call_closure.parts.ToolContent` itself, rendered by each
format (``providers/parts_render.py``).
"""

_ROWS: Final = "rows"  # the memo's key for the rows (ADP-5)


def export_rows(calls: Sequence[CallRecord], memo: dict[str, Any] | None = None) -> tuple[ExportRow, ...]:
    """The decided calls of ``calls``, in order, each with its :func:`record_text`, computed once per memo.

    ``memo`` is the dict the instance keeps beside its record of the snapshot
    (``SnapshotRecord.memo``): the first export of the snapshot stores the
    rows in it, every later one reads them (ADP-5).  Within the computation
    each distinct settlement record is rendered once (a close shares one
    synthetic record among its pending calls).  Without a memo the rows are
    computed for this export only.
    """
    if memo is not None:
        found: tuple[ExportRow, ...] | None = memo.get(_ROWS)
        if found is not None:
            return found
    # id(settlement record) -> its text; the records are alive for the whole loop
    texts: dict[int, str | ToolContent] = {}
    rows: list[ExportRow] = []
    for call_id, name, state, settlement in calls:
        if settlement is None:
            continue
        if settlement[STATUS] == "success":
            text: str | ToolContent = settlement[CONTENT]  # type: ignore[assignment]  # the stored text itself
        else:
            key = id(settlement)
            rendered = texts.get(key)
            if rendered is None:
                rendered = texts[key] = record_text(settlement)
            text = rendered
        rows.append((call_id, name, state, text))
    result = tuple(rows)
    if memo is not None:
        memo[_ROWS] = result
    return result
