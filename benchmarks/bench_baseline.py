"""The benchmark's baseline: the workload's hot path written by hand in plain Python, with no table.

Theory of operation
-------------------
``tool-call-closure bench`` reports three figures side by side: the
reference, the original on Node, and this baseline.  The baseline answers
"how fast can CPython do this work at all?": it is what a careful engineer
would write for the shared workload alone — one lock, tuples, a dict index,
``json`` — so the ratio of the reference to the baseline is the price of
the table, the ECMAScript semantics and the all-or-nothing commits, and the
ratio of the baseline to the original is what CPython costs against Node's
JIT before any design choice is made.

It keeps the checks the original makes on these paths, so the work is
comparable: ``begin`` checks every id and name (an exact, non-blank string
within its byte limit) and refuses a duplicate id; a settlement checks the
id, that the handle is the current one, that the call is known and pending,
and the content's byte limit, and returns a record of what it accepted;
``close`` checks the reason's code and bounds its message, cancels the
pending calls with it and returns an immutable snapshot; each export builds
its provider's items, the same items the reference builds for this workload
(a test holds them equal).  The limits are the table's defaults.  Each
call's text is written once, when the call is decided, as the reference's
exports compute each decided call's text once per snapshot.  It leaves out
what the workload never exercises: hooks, projections of non-JSON values,
diagnostics, the supersession of pending calls (the settle loop begins again
once every call is settled, so a new batch simply replaces the old one), the
Gemini and Bedrock exports.

It is a measuring stick, not an implementation: nothing outside the benchmark
imports it, and the conformance vectors do not run against it.
"""

from __future__ import annotations

import json
import threading
from typing import Any, Final

__all__ = ["LeanClosure"]

# The table's default limits (spec/machine.json "options").
_MAX_ID_BYTES: Final = 512
_MAX_NAME_BYTES: Final = 512
_MAX_CODE_BYTES: Final = 128
_MAX_MESSAGE_BYTES: Final = 4096
_MAX_RESULT_BYTES: Final = 1_048_576
_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode

# A call is a tuple (id, name, status, text, is_error): the text its exports carry, written once when
# the call is decided (a result's content, or the synthetic error of a close); pending: (id, name, None, None, False).
_Call = tuple[str, str, str | None, str | None, bool]


def _checked(value: object, limit: int, argument: str) -> str:
    if type(value) is not str or not value.strip():
        raise ValueError(f"{argument} must be a non-blank string")
    if (len(value) if value.isascii() else len(value.encode())) > limit:
        raise ValueError(f"{argument} exceeds {limit} bytes")
    return value


class LeanHandle:
    __slots__ = ("generation",)

    def __init__(self, generation: int) -> None:
        self.generation = generation


class LeanBegin:
    __slots__ = ("handle",)

    def __init__(self, handle: LeanHandle) -> None:
        self.handle = handle


class LeanClosure:
    """The workload's operations, written directly."""

    __slots__ = ("_calls", "_closed", "_generation", "_handle", "_index", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._generation = 0
        self._handle: LeanHandle | None = None
        self._calls: list[_Call] = []
        self._index: dict[str, int] = {}
        self._closed = False

    def begin(self, calls: list[dict[str, Any]]) -> LeanBegin:
        records: list[_Call] = []
        index: dict[str, int] = {}
        for position, call in enumerate(calls):
            call_id = _checked(call.get("id"), _MAX_ID_BYTES, "id")
            if call_id in index:
                raise ValueError(f"duplicate call id {call_id!r}")
            index[call_id] = position
            records.append((call_id, _checked(call.get("name"), _MAX_NAME_BYTES, "name"), None, None, False))
        with self._lock:
            self._generation += 1
            handle = LeanHandle(self._generation)
            self._handle, self._calls, self._index, self._closed = handle, records, index, False
        return LeanBegin(handle)

    def succeed(self, handle: LeanHandle, call_id: str, content: object) -> tuple[int, str, str] | None:
        """``(generation, call_id, "success")`` when the result is recorded, ``None`` when it is refused."""
        _checked(call_id, _MAX_ID_BYTES, "callId")
        text = content if type(content) is str else _encode(content)
        if (len(text) if text.isascii() else len(text.encode())) > _MAX_RESULT_BYTES:
            raise ValueError(f"content exceeds {_MAX_RESULT_BYTES} bytes")
        with self._lock:
            if handle is not self._handle or self._closed:
                return None
            position = self._index.get(call_id)
            if position is None or self._calls[position][2] is not None:
                return None
            call = self._calls[position]
            self._calls[position] = (call[0], call[1], "success", text, False)
            return (handle.generation, call_id, "success")

    def close(self, handle: LeanHandle, reason: dict[str, str]) -> tuple[_Call, ...]:
        status = reason["status"]
        message = reason["message"]
        if len(message.encode()) > _MAX_MESSAGE_BYTES:  # truncated at a character boundary, as the reference does
            message = message.encode()[:_MAX_MESSAGE_BYTES].decode(errors="ignore")
        error = {"code": _checked(reason["code"], _MAX_CODE_BYTES, "reason.code"), "message": message}
        text = _encode({"error": {**error, "side_effect_state": "unknown"}})
        with self._lock:
            if handle is not self._handle:
                raise ValueError("stale handle")
            if not self._closed:
                calls = self._calls
                for position, call in enumerate(calls):
                    if call[2] is None:
                        calls[position] = (call[0], call[1], status, text, True)
                self._closed = True
            return tuple(self._calls)

    @staticmethod
    def to_openai_chat_completions(snapshot: tuple[_Call, ...]) -> list[dict[str, Any]]:
        return [{"role": "tool", "tool_call_id": call[0], "content": call[3]} for call in snapshot]

    @staticmethod
    def to_openai_responses(snapshot: tuple[_Call, ...]) -> list[dict[str, Any]]:
        return [{"type": "function_call_output", "call_id": call[0], "output": call[3]} for call in snapshot]

    @staticmethod
    def to_anthropic_tool_results(snapshot: tuple[_Call, ...]) -> list[dict[str, Any]]:
        return [
            {"type": "tool_result", "tool_use_id": call[0], "content": call[3], "is_error": True}
            if call[4]
            else {"type": "tool_result", "tool_use_id": call[0], "content": call[3]}
            for call in snapshot
        ]
