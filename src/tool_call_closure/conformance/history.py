"""Recorded histories: the JSON-lines format of ``check --history`` (spec/protocol.md, *Histories*).

Theory of operation
-------------------
A history file is what a deployment with several workers on one instance can log, in the spirit of Jepsen's and
porcupine's histories: one JSON object per line, each an *event* of a process (a worker, a thread, an agent):

* ``{"type":"invoke","process":P,"time":T,"request":R}`` — process ``P`` sent request ``R`` (a protocol request:
  ``new`` or ``call``, with its ``id``) at time ``T``;
* ``{"type":"ok","process":P,"time":T,"response":L}`` — the answer of ``P``'s outstanding request arrived at ``T``:
  ``L`` is its response line, or the list of its lines (nested ones first), as the protocol writes them (an
  ``error`` answer is still ``ok`` here: the request was carried out and answered);
* ``{"type":"info","process":P,"time":T}`` — ``P``'s outstanding request has an unknown outcome (the worker died,
  the log line was lost): it may or may not have taken effect.  A request with no completion at all when the file
  ends is the same.

``P`` is a string or an integer; a process has at most one outstanding request; times are numbers of one
monotonic clock (only their order matters, and a request's answer never precedes it).  Blank lines are skipped.
The history starts from a fresh instance: when its first request is not a ``new``, one (default options) is
assumed before everything.  :func:`read_history` turns the lines into operations for the checker; the table's
model (:mod:`.agents_model`) resolves the unobserved ones by search.  :func:`write_history` writes a driven
scenario's records (:mod:`.agents`) in the same format.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from typing import IO, Any, Final

from tool_call_closure.conformance.agents import Record
from tool_call_closure.conformance.agents_model import operation
from tool_call_closure.conformance.linearizability import Operation

__all__ = ["HistoryError", "read_history", "write_history"]

HISTORY_TYPES: Final = ("invoke", "ok", "info")


class HistoryError(ValueError):
    """A history file that does not follow the format (the message names the line and the problem)."""


def _event(number: int, text: str) -> dict[str, Any]:
    try:
        event = json.loads(text)
    except (ValueError, RecursionError):
        raise HistoryError(f"line {number}: not JSON") from None
    if not isinstance(event, dict):
        raise HistoryError(f"line {number}: an event must be a JSON object")
    if event.get("type") not in HISTORY_TYPES:
        raise HistoryError(f"line {number}: type must be one of {', '.join(HISTORY_TYPES)}")
    process = event.get("process")
    if isinstance(process, bool) or not isinstance(process, (str, int)):
        raise HistoryError(f"line {number}: process must be a string or an integer")
    time = event.get("time")
    if isinstance(time, bool) or not isinstance(time, (int, float)) or not math.isfinite(time):
        raise HistoryError(f"line {number}: time must be a finite number")
    return event


def _request(number: int, event: dict[str, Any]) -> dict[str, Any]:
    request = event.get("request")
    if not isinstance(request, dict) or request.get("cmd") not in ("new", "call"):
        raise HistoryError(f"line {number}: request must be a protocol request whose cmd is new or call")
    if "id" not in request:
        request = {"id": f"line{number}", **request}
    return request


def _response(number: int, event: dict[str, Any], request_id: Any) -> list[dict[str, Any]]:
    lines = event.get("response")
    lines = [lines] if isinstance(lines, dict) else lines
    if not isinstance(lines, list) or not lines or not all(isinstance(line, dict) for line in lines):
        raise HistoryError(f"line {number}: response must be a response object or a non-empty list of them")
    final = lines[-1]
    if "ok" not in final and "error" not in final:
        raise HistoryError(f"line {number}: a response needs ok or error")
    if "id" not in final:
        lines = [*lines[:-1], {"id": request_id, **final}]
    return lines


def read_history(lines: Iterable[str]) -> list[Operation]:
    """The operations of a history file's lines (see the module's docstring); HistoryError if malformed."""
    operations: list[Operation] = []
    outstanding: dict[Any, tuple[int, dict[str, Any], float]] = {}
    for number, text in enumerate(lines, 1):
        if not text.strip():
            continue
        event = _event(number, text)
        process, time = event["process"], float(event["time"])
        key = (type(process).__name__, process)
        if event["type"] == "invoke":
            if key in outstanding:
                raise HistoryError(f"line {number}: process {process!r} invoked again before its last request ended")
            outstanding[key] = (number, _request(number, event), time)
            continue
        if key not in outstanding:
            raise HistoryError(f"line {number}: process {process!r} has no request outstanding")
        started, request, invoked = outstanding.pop(key)
        if time < invoked:
            raise HistoryError(f"line {number}: the response precedes its request (line {started})")
        answered = _response(number, event, request.get("id")) if event["type"] == "ok" else None
        response_time = time if answered is not None else None
        operations.append(operation(process, invoked, response_time, request, answered or []))
    for (_, process), (_, request, invoked) in outstanding.items():
        operations.append(operation(process, invoked, None, request, []))
    if not operations:
        raise HistoryError("the history holds no request")
    first = min(operations, key=lambda o: o.invoke)
    if not str(first.op).startswith('{"id":') or json.loads(str(first.op)).get("cmd") != "new":
        fresh = {"id": "assumed-new", "cmd": "new"}
        operations.insert(0, operation("assumed", -math.inf, -math.inf, fresh, [{"id": "assumed-new", "ok": None}]))
    return operations


def write_history(records: Sequence[Record], out: IO[str]) -> None:
    """Write a driven scenario's records as history lines (invocations and completions in time order)."""
    events: list[tuple[float, int, dict[str, Any]]] = []
    for record in records:
        process: Any = "main" if record.agent is None else record.agent
        request = (
            {k: v for k, v in record.request.items() if k != "agent"} if isinstance(record.request, dict) else None
        )
        if request is None:
            continue
        events.append(
            (record.invoke, 0, {"type": "invoke", "process": process, "time": record.invoke, "request": request})
        )
        if record.response is None:
            events.append((math.inf, 1, {"type": "info", "process": process, "time": record.invoke}))
        else:
            lines = [{k: v for k, v in line.items() if k != "agent"} for line in record.lines]
            events.append(
                (record.response, 1, {"type": "ok", "process": process, "time": record.response, "response": lines})
            )
    for _, _, event in sorted(events, key=lambda e: (e[0], e[1])):
        out.write(json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n")
