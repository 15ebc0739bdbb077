"""A closure image: the whole committed state of a closure as versioned, byte-stable JSON (``spec/durable.md``).

Theory of operation
-------------------
An image is a JSON object (schema ``spec/image.schema.json``)::

    {"format": "tool-call-closure.image/1", "closureId": …, "epoch": …,
     "limits": {"maxCalls": …, …}, "generation": n,
     "diagnostics": [ … ]            # before the first begin only (begin discards them)
     "run": null | {"state", "closeReason", "calls": [ … ], "diagnostics": [ … ]}}

It holds the instance's own records (``values.CallRecord`` …) field for field,
nothing else: no lock, no snapshot registry, no ``on_end`` callbacks (those
belong to one process).  Its text is canonical — keys sorted, no spaces,
ASCII with ``\\u`` escapes (so a lone surrogate survives) — so equal states
give equal bytes.  Every string and list in it is bounded by a limit the
image itself carries, so its size is bounded too (:func:`image_bound`).

Restoring (:func:`closure_of`) validates the image completely — shape,
limits, and the consistency of states, settlements and close reason — and
builds a new instance in exactly the imaged state; the run gets a new
``BatchHandle``, so a handle of the imaged instance is a look-alike there.
A store writes an image as a header (:func:`split`) and one row per call
(:func:`call_json`), and reads it back with :func:`assemble`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from tool_call_closure.closure import ToolCallClosure
from tool_call_closure.ecma import utf8_length
from tool_call_closure.errors import ToolCallClosureError, UsageError
from tool_call_closure.machine.context import Run
from tool_call_closure.machine.interpreter import MACHINE
from tool_call_closure.machine.reading import MAX_SAFE_INTEGER
from tool_call_closure.machine.table import TABLE
from tool_call_closure.parts import (
    FILE_MEDIA_TYPES,
    IMAGE_MEDIA_TYPES,
    MAX_PARTS,
    FileInput,
    ImageInput,
    JsonInput,
    JsonPart,
    Part,
    PartInput,
    TextInput,
    ToolContent,
    content,
)
from tool_call_closure.values import (
    COMPLETE_RECORD,
    BatchHandle,
    CallRecord,
    CloseReasonRecord,
    DiagnosticRecord,
    Limits,
    SettlementRecord,
)

__all__ = [
    "IMAGE_FORMAT",
    "assemble",
    "call_json",
    "closure_of",
    "current_handle",
    "decode",
    "encode",
    "header_of",
    "image_bound",
    "image_of",
    "limits_json",
    "split",
]

IMAGE_FORMAT: Final = "tool-call-closure.image/1"
_RUN_STATES: Final = ("open", "complete", "error", "cancelled")
_REASONS: Final = TABLE.reasons  # the table's diagnostic reasons (media_moved: an accepted success's, D26)
_OBSERVED: Final = ("success", "error", "cancelled", "invalid", None)
_SIDE_EFFECTS: Final = ("unknown", "not_started")
_SETTLEMENT_KEYS: Final = ("status", "provenance", "content", "code", "message", "sideEffectState")
_CLOSE_KEYS: Final = ("status", "code", "message", "sideEffectState")
_DIAGNOSTIC_KEYS: Final = ("reason", "callId", "generation", "observedStatus")
DEFAULT_CODES: Final = frozenset(
    {text for key, text in MACHINE.texts.items() if key.endswith("_code")} | {"error", "cancelled"}
)
"""The codes the closure writes itself (``tool_error``, ``superseded``, a close's status): not bound by maxCodeBytes."""


def _invalid(where: str, problem: str) -> UsageError:
    return UsageError(f"image invalid: {where} {problem}", code="image_invalid")


# --------------------------------------------------------------------------- records -> JSON


def _settlement_json(record: SettlementRecord | None) -> dict[str, Any] | None:
    if record is None:
        return None
    settlement: dict[str, Any] = dict(zip(_SETTLEMENT_KEYS, record, strict=True))
    if isinstance(record[2], ToolContent):  # content parts (D22)
        settlement["content"] = {"$parts": [_part_json(part) for part in record[2].parts]}
    return settlement


def _part_json(part: Part) -> dict[str, Any]:
    """A recorded part as the image writes it: a JSON part as its JSON *text* (sorted keys must not reorder it)."""
    if isinstance(part, JsonPart):
        return {"type": "json", "json": part.json, "schema": part.schema_json}
    return part.__json__()


def call_json(record: CallRecord) -> dict[str, Any]:
    """One call record as the image writes it (a store's call row)."""
    call_id, name, state, settlement = record
    return {"id": call_id, "name": name, "state": state, "settlement": _settlement_json(settlement)}


def _diagnostics_json(records: Sequence[DiagnosticRecord]) -> list[dict[str, Any]]:
    return [dict(zip(_DIAGNOSTIC_KEYS, record, strict=True)) for record in records]


def limits_json(limits: Limits) -> dict[str, int | bool]:
    """The limits under the table's option ids (``maxCalls`` …); a flag (D26) only when set, so an image of a
    closure without one is the same text as before the flags existed."""
    flags = {flag.id: True for flag in TABLE.flags if getattr(limits, flag.python)}
    return {**{option.id: getattr(limits, option.python) for option in TABLE.options}, **flags}


def header_of(
    closure: ToolCallClosure, closure_id: str, epoch: int
) -> tuple[dict[str, Any], Run | None, tuple[CallRecord, ...]]:
    """The image's header (:func:`split`'s first part) of ``closure``'s committed state, its run and call records."""
    run, calls, diagnostics = closure._committed_state()
    header: dict[str, Any] = {
        "format": IMAGE_FORMAT,
        "closureId": closure_id,
        "epoch": epoch,
        "limits": limits_json(closure.limits),
        "generation": 0 if run is None else run.generation,
        "diagnostics": [] if run is not None else _diagnostics_json(diagnostics),
        "run": None,
    }
    if run is not None:
        reason = run.close_reason
        header["run"] = {
            "state": run.state,
            "closeReason": None if reason is None else dict(zip(_CLOSE_KEYS, reason, strict=True)),
            "diagnostics": _diagnostics_json(diagnostics),
        }
    return header, run, calls


def image_of(closure: ToolCallClosure, closure_id: str, epoch: int) -> dict[str, Any]:
    """The image of ``closure``'s committed state, as a JSON-compatible dict (:func:`encode` gives its bytes)."""
    header, _run, calls = header_of(closure, closure_id, epoch)
    return assemble(header, [call_json(call) for call in calls])


def encode(image: Mapping[str, Any]) -> bytes:
    """The canonical bytes of an image: sorted keys, no spaces, ASCII (equal states, equal bytes)."""
    return json.dumps(image, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode("ascii")


def split(image: Mapping[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """An image as a store keeps it: the header (the run without its calls) and the call rows."""
    header = dict(image)
    run = header.get("run")
    if run is None:
        return header, []
    header["run"] = {key: value for key, value in run.items() if key != "calls"}
    return header, list(run["calls"])


def assemble(header: Mapping[str, Any], calls: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """:func:`split` undone."""
    image = dict(header)
    if image.get("run") is not None:
        image["run"] = {**image["run"], "calls": list(calls)}
    return image


def decode(data: bytes | str) -> dict[str, Any]:
    """An image's bytes parsed and validated (:func:`closure_of` restores it); ``UsageError`` ``image_invalid``."""
    try:
        image = json.loads(data)
    except (ValueError, UnicodeDecodeError) as error:
        raise _invalid("text", f"is not JSON ({error})") from None
    _parse(image)
    return image  # type: ignore[no-any-return]  # checked above


# --------------------------------------------------------------------------- validation


def _dict(value: object, where: str, keys: Sequence[str]) -> dict[str, Any]:
    if type(value) is not dict or sorted(value) != sorted(keys):
        raise _invalid(where, f"must be an object with exactly the keys {', '.join(sorted(keys))}")
    return value


def _int(value: object, where: str, low: int) -> int:
    if type(value) is not int or not low <= value <= MAX_SAFE_INTEGER:
        raise _invalid(where, f"must be an integer in {low}..2**53-1")
    return value


def _text(
    value: object, where: str, limit: int | None, *, nullable: bool = False, exempt: frozenset[str] = frozenset()
) -> str | None:
    if value is None and nullable:
        return None
    if type(value) is not str:
        raise _invalid(where, "must be a string" + (" or null" if nullable else ""))
    if limit is not None and utf8_length(value) > limit and value not in exempt:
        raise _invalid(where, f"exceeds its byte limit ({limit})")
    return value


def _member(value: object, where: str, allowed: Sequence[object]) -> Any:
    if value not in allowed or type(value) not in (str, type(None)):
        raise _invalid(where, f"must be one of {', '.join(json.dumps(a) for a in allowed)}")
    return value


def _parse(image: object) -> tuple[Limits, Run | None, list[DiagnosticRecord]]:
    """A validated image's limits, run and diagnostics before the first begin."""
    keys = ("format", "closureId", "epoch", "limits", "generation", "diagnostics", "run")
    image = _dict(image, "image", keys)
    if image["format"] != IMAGE_FORMAT:
        raise _invalid("format", f"must be {IMAGE_FORMAT!r}")
    if not _text(image["closureId"], "closureId", 256):
        raise _invalid("closureId", "must not be empty")
    _int(image["epoch"], "epoch", 1)
    limits = _limits(image["limits"])
    generation = _int(image["generation"], "generation", 0)
    if (image["run"] is None) != (generation == 0):
        raise _invalid("run", "must be null exactly when generation is 0")
    if image["run"] is not None and image["diagnostics"]:
        raise _invalid("diagnostics", "must be empty once a run exists (begin discards them)")
    diagnostics = _diagnostic_records(image["diagnostics"], "diagnostics", limits)
    run = None if image["run"] is None else _run_of(image["run"], generation, limits)
    return limits, run, diagnostics


def _limits(value: object) -> Limits:
    present = [flag.id for flag in TABLE.flags if type(value) is dict and flag.id in value]
    limits = _dict(value, "limits", [option.id for option in TABLE.options] + present)
    numbers: dict[str, Any] = {o.python: _int(limits[o.id], f"limits.{o.id}", 1) for o in TABLE.options}
    for flag in TABLE.flags:  # written only when set (limits_json): present means true
        if flag.id in present and limits[flag.id] is not True:
            raise _invalid(f"limits.{flag.id}", "must be true when present (an unset flag is left out)")
    return Limits(**numbers, **{flag.python: flag.id in present for flag in TABLE.flags})


def _diagnostic_records(value: object, where: str, limits: Limits) -> list[DiagnosticRecord]:
    if type(value) is not list or len(value) > limits.max_diagnostics:
        raise _invalid(where, f"must be a list of at most maxDiagnostics ({limits.max_diagnostics}) diagnostics")
    records: list[DiagnosticRecord] = []
    for index, item in enumerate(value):
        at = f"{where}[{index}]"
        entry = _dict(item, at, _DIAGNOSTIC_KEYS)
        generation = entry["generation"]
        records.append(
            (
                _member(entry["reason"], f"{at}.reason", _REASONS),
                _text(entry["callId"], f"{at}.callId", limits.max_id_bytes, nullable=True),
                None if generation is None else _int(generation, f"{at}.generation", 1),
                _member(entry["observedStatus"], f"{at}.observedStatus", _OBSERVED),
            )
        )
    return records


def _settlement(value: object, where: str, limits: Limits) -> SettlementRecord:
    entry = _dict(value, where, _SETTLEMENT_KEYS)
    status = _member(entry["status"], f"{where}.status", ("success", "error", "cancelled"))
    provenance = _member(entry["provenance"], f"{where}.provenance", ("reported", "synthetic"))
    raw = entry["content"]
    recorded: str | ToolContent | None
    if type(raw) is dict:
        recorded = _parts(raw, f"{where}.content", limits)
    else:
        recorded = _text(raw, f"{where}.content", limits.max_result_bytes, nullable=True)
    code = _text(entry["code"], f"{where}.code", limits.max_code_bytes, nullable=True, exempt=DEFAULT_CODES)
    message = _text(entry["message"], f"{where}.message", limits.max_message_bytes, nullable=True)
    side = _member(entry["sideEffectState"], f"{where}.sideEffectState", (*_SIDE_EFFECTS, None))
    if status == "success":
        shape_ok = provenance == "reported" and recorded is not None and code is message is side is None
    else:
        shape_ok = recorded is None and code is not None and message is not None
        shape_ok = shape_ok and (side is None) == (provenance == "reported")
    if not shape_ok:
        raise _invalid(where, "has the fields of no settlement variant (spec/durable.md)")
    return (status, provenance, recorded, code, message, side)


def _part_input(part: object, where: str) -> PartInput:
    if type(part) is not dict:
        raise _invalid(where, "must be an object")
    kind, media = part.get("type"), {"media_type": part.get("mediaType"), "base64": part.get("base64")}
    if "url" in part:
        media = {"media_type": part.get("mediaType"), "url": part["url"]}
    expected = {"text": {"type", "text"}, "json": {"type", "json", "schema"}}.get(str(kind))
    if expected is not None and set(part) != expected:
        raise _invalid(where, f"must have exactly the keys of a {kind} part")
    if kind == "text":
        return TextInput(part["text"])
    if kind == "json":
        try:
            schema = None if part["schema"] is None else json.loads(part["schema"])
            return JsonInput(json.loads(part["json"]), schema)
        except (TypeError, ValueError):
            raise _invalid(where, "must hold a JSON text and a JSON text or null schema") from None
    if kind == "image" and set(part) <= {"type", "mediaType", "base64", "url"}:
        return ImageInput(**media)  # type: ignore[arg-type]
    if kind == "file" and set(part) <= {"type", "name", "mediaType", "base64", "url"}:
        return FileInput(name=part.get("name"), **media)  # type: ignore[arg-type]
    raise _invalid(where, "is not a text, image, file or json part")


def _parts(value: dict[str, Any], where: str, limits: Limits) -> ToolContent:
    """Content parts (D22) from their canonical form, checked again as ``content()`` checks them."""
    if sorted(value) != ["$parts"] or type(value["$parts"]) is not list:
        raise _invalid(where, 'must be a string or {"$parts": [...]}')
    inputs = [_part_input(part, f"{where}.$parts[{i}]") for i, part in enumerate(value["$parts"])]
    try:
        recorded = content(inputs)
    except ToolCallClosureError as error:
        raise _invalid(where, f"holds an invalid part ({error})") from None
    if recorded.size > limits.max_result_bytes:
        raise _invalid(where, f"exceeds its byte limit ({limits.max_result_bytes})")
    return recorded


def _call(value: object, where: str, limits: Limits) -> CallRecord:
    entry = _dict(value, where, ("id", "name", "state", "settlement"))
    call_id = _text(entry["id"], f"{where}.id", limits.max_id_bytes)
    name = _text(entry["name"], f"{where}.name", limits.max_name_bytes)
    state = _member(entry["state"], f"{where}.state", ("pending", "success", "error", "cancelled"))
    settlement = (
        None if entry["settlement"] is None else _settlement(entry["settlement"], f"{where}.settlement", limits)
    )
    if (settlement is None and state != "pending") or (settlement is not None and settlement[0] != state):
        raise _invalid(f"{where}.state", "must be pending without a settlement, else the settlement's status")
    assert call_id is not None  # not nullable
    assert name is not None
    return (call_id, name, state, settlement)


def _close_reason(value: object, state: str, limits: Limits) -> CloseReasonRecord | None:
    if value is None:
        if state != "open":
            raise _invalid("run.closeReason", "must be present exactly when the run is closed")
        return None
    entry = _dict(value, "run.closeReason", _CLOSE_KEYS)
    status = _member(entry["status"], "run.closeReason.status", ("complete", "error", "cancelled"))
    if status != state:
        raise _invalid("run.closeReason.status", "must equal run.state")
    if status == "complete":
        if entry["code"] is not None or entry["message"] is not None or entry["sideEffectState"] is not None:
            raise _invalid("run.closeReason", "of a sealed run has only its status")
        return COMPLETE_RECORD
    code = _text(entry["code"], "run.closeReason.code", limits.max_code_bytes, exempt=DEFAULT_CODES)
    message = _text(entry["message"], "run.closeReason.message", limits.max_message_bytes)
    side = _member(entry["sideEffectState"], "run.closeReason.sideEffectState", _SIDE_EFFECTS)
    return (status, code, message, side)


def _run_of(value: object, generation: int, limits: Limits) -> Run:
    entry = _dict(value, "run", ("state", "closeReason", "calls", "diagnostics"))
    state = _member(entry["state"], "run.state", _RUN_STATES)
    close_reason = _close_reason(entry["closeReason"], state, limits)
    raw_calls = entry["calls"]
    if type(raw_calls) is not list or len(raw_calls) > limits.max_calls:
        raise _invalid("run.calls", f"must be a list of at most maxCalls ({limits.max_calls}) calls")
    shared: dict[SettlementRecord, SettlementRecord] = {}  # a close's one settlement record, shared again
    calls: list[CallRecord] = []
    index: dict[str, int] = {}
    for position, item in enumerate(raw_calls):
        call_id, name, call_state, settlement = _call(item, f"run.calls[{position}]", limits)
        if call_id in index:
            raise _invalid(f"run.calls[{position}].id", "repeats an earlier call's id")
        if settlement is not None:
            settlement = shared.setdefault(settlement, settlement)
        if state == "complete" and (settlement is None or settlement[1] != "reported"):
            raise _invalid(f"run.calls[{position}]", "of a sealed run must have a reported settlement")
        if state != "open" and settlement is None:
            raise _invalid(f"run.calls[{position}]", "of a closed run must be settled")
        index[call_id] = position
        calls.append((call_id, name, call_state, settlement))
    diagnostics = _diagnostic_records(entry["diagnostics"], "run.diagnostics", limits)
    return Run(generation, BatchHandle(generation), calls, index, diagnostics, state, close_reason)


# --------------------------------------------------------------------------- restore


def closure_of(image: Mapping[str, Any]) -> ToolCallClosure:
    """A new instance in exactly the state of ``image`` (validated first; ``UsageError`` ``image_invalid``).

    Its run has a new handle (``closure_of(image)._run.handle``): handles of
    the imaged instance are look-alikes here (``stale_generation``).
    """
    limits, run, diagnostics = _parse(image)
    names = [option.python for option in TABLE.options] + [flag.python for flag in TABLE.flags]
    closure = ToolCallClosure(**{name: getattr(limits, name) for name in names})
    closure._with_committed_state(run, diagnostics)
    return closure


def current_handle(closure: ToolCallClosure) -> BatchHandle | None:
    """The handle of the restored run (the durable layer settles with it; never handed to a caller)."""
    run, _calls, _diagnostics = closure._committed_state()
    return None if run is None else run.handle


def image_bound(limits: Limits) -> int:
    """An upper bound on the size in bytes of any image with these limits.

    A UTF-8 byte is at most 6 bytes of escaped ASCII (``\\u0001``); the constants
    cover the keys, punctuation and numbers of each object.  A result made of
    content parts (D22) writes its counted bytes within the same 6 per byte
    (base64 is 4 per 3), and beyond them at most :data:`MAX_PARTS` parts, each
    with its keys, a file name of at most 256 UTF-8 bytes and a media type.
    """
    per_string = 6
    code_bytes = max(limits.max_code_bytes, *(len(code) for code in DEFAULT_CODES))
    media_type = max(len(name) for name in IMAGE_MEDIA_TYPES | FILE_MEDIA_TYPES)
    parts = 20 + MAX_PARTS * (80 + per_string * (256 + media_type))
    settlement = 160 + parts + per_string * (limits.max_result_bytes + code_bytes + limits.max_message_bytes)
    call = 60 + per_string * (limits.max_id_bytes + limits.max_name_bytes) + settlement
    diagnostic = 110 + per_string * limits.max_id_bytes
    close = 100 + per_string * (code_bytes + limits.max_message_bytes)
    return 700 + per_string * 256 + limits.max_calls * (call + 1) + limits.max_diagnostics * (diagnostic + 1) + close
