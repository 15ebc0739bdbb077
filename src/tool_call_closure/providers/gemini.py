"""Google Gemini (google-genai): ingestion of ``function_call`` parts, and ``function_response`` parts in one Content.

Theory of operation
-------------------
*Ingestion* (:func:`ingest`) reads a ``GenerateContentResponse`` (its first
candidate), a ``Candidate``, a ``Content`` or a list of parts — SDK objects or
dicts — and turns each ``function_call`` part into a call.  Every field of a
Gemini ``FunctionCall`` is optional, and Gemini 2.x often sends no ``id``.

**Ids for calls without one** are deterministic: ``tcc_gemini_<n>``, where
``<n>`` is the zero-based position of the call among the function calls of
the turn (across all chunks of a stream).  The same turn always gets the same
ids, so a retry or a replay pairs the same way.  The export never sends such
an id to Gemini (it would be an id Gemini never issued): a response to a call
without an id is paired by its ``name`` and its position, as Gemini's own SDK
does.  A provider id that happens to have that form is indistinguishable, and
is treated the same way (Gemini issues no such ids).

*Streaming* (:class:`GeminiStream`): each chunk is a
``GenerateContentResponse``; parallel calls arrive whole, in separate chunks,
with no index.  A call is complete as soon as its part arrives.  Streamed
partial arguments (``will_continue: true``) are not assembled: such a call
carries a ``problem``.

*Export* (:func:`render_tool_results`): one ``function_response`` part
per decided call, ``{"function_response": {"id"?, "name", "response":
{"output": text}}}`` for a success and ``{"response": {"error": {"code",
"message", "side_effect_state"?}}}`` otherwise (the keys Gemini documents).
The parts go back **all in one** ``Content(role="user")``
(:func:`next_contents`): ``thought_signature`` is only on the first of
parallel calls, so splitting the responses loses it.  Keys are the
google-genai SDK's (snake case).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

from tool_call_closure.errors import UsageError
from tool_call_closure.providers.calls import Ingested, ProviderRuleError, SkippedItem, ToolCall
from tool_call_closure.providers.reading import (
    arguments_text,
    field,
    items,
    refuse_foreign_call,
    refuse_foreign_event,
    refuse_foreign_turns,
    require_fields,
)
from tool_call_closure.providers.result_text import record_error_object
from tool_call_closure.providers.sdk_types import GeminiContent, GeminiPart
from tool_call_closure.values import CONTENT, STATUS, CallRecord, Snapshot, call_records

__all__ = [
    "FORMAT",
    "PROVIDER",
    "SYNTHETIC_ID_PREFIX",
    "GeminiStream",
    "check_contents",
    "ingest",
    "is_synthetic_id",
    "next_contents",
    "render_records",
    "render_tool_results",
    "synthetic_id",
]

FORMAT: Final = "gemini"
"""The export format this module renders (``spec/machine.json``)."""
PROVIDER: Final = "gemini"
"""The ``provider`` of the calls this module ingests."""
SYNTHETIC_ID_PREFIX: Final = "tcc_gemini_"
"""The prefix of the ids given to calls Gemini sent without one."""
_SYNTHETIC: Final = re.compile(r"tcc_gemini_(0|[1-9][0-9]*)")


def synthetic_id(position: int) -> str:
    """The id of the call at ``position`` (zero-based) among the function calls of a turn, when it has none."""
    return f"{SYNTHETIC_ID_PREFIX}{position}"


def is_synthetic_id(call_id: str) -> bool:
    """True for an id :func:`synthetic_id` makes (never sent to Gemini)."""
    return _SYNTHETIC.fullmatch(call_id) is not None


def _value(enum_or_text: object) -> str | None:
    """A google-genai enum member (a ``str`` enum) or a plain string, as its plain text."""
    if enum_or_text is None:
        return None
    return str(getattr(enum_or_text, "value", enum_or_text))


_EXPECTED: Final = "a GenerateContentResponse, a candidate, a Content or a list of parts"


def _parts_of(value: object, reader: str) -> tuple[list[Any], str | None]:
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return list(value), None
    candidates = field(value, "candidates")
    if candidates is not None:
        listed = items(candidates, f"{reader}: the candidates")
        value = listed[0] if listed else None  # none: the prompt was blocked, nothing to read
    finish = _value(field(value, "finish_reason"))
    content = field(value, "content")
    if content is not None:  # a candidate's content (None when it was stopped before any, e.g. for safety)
        require_fields(content, ("parts", "role"), reader, "a candidate's content to be a Content (parts, role)")
        value = content
    return items(field(value, "parts"), f"{reader}: the parts"), finish


def _skip_reason(part: object) -> tuple[str, str]:
    if field(part, "thought"):
        return "thought", "a thought part is not a tool call (keep it in the model's turn)"
    for kind in ("text", "executable_code", "code_execution_result", "inline_data", "file_data"):
        if field(part, kind) is not None:
            if kind in ("executable_code", "code_execution_result"):
                return kind, f"a {kind} part is run by the provider and needs no function response"
            return kind, f"a {kind} part is not a tool call"
    return "unknown", "a part without a function_call needs no function response"


def _call(function_call: object, position: int) -> ToolCall:
    arguments = field(function_call, "args")
    text, problem = arguments_text(arguments)
    if problem is None and field(function_call, "will_continue"):
        problem = "streamed partial arguments (will_continue) are not assembled; the call is incomplete"
    if problem is None and not field(function_call, "name"):
        problem = "Gemini sent this function call without a name"
    return ToolCall(
        field(function_call, "id") or synthetic_id(position),
        field(function_call, "name") or "",
        None if problem else ({} if arguments is None else arguments),
        text,
        problem,
        PROVIDER,
    )


def ingest(value: object) -> Ingested:
    """The ``function_call`` parts of a response, candidate, content or part list, with ids for those lacking one."""
    if not (isinstance(value, Sequence) and not isinstance(value, str | bytes)):
        require_fields(value, ("candidates", "content", "parts"), "gemini.ingest", _EXPECTED)
        refuse_foreign_call(value, "the value", "gemini.ingest")
    parts, finish = _parts_of(value, "gemini.ingest")
    calls: list[ToolCall] = []
    skipped: list[SkippedItem] = []
    for index, part in enumerate(parts):
        function_call = field(part, "function_call")
        if function_call is not None:
            calls.append(_call(function_call, len(calls)))
        else:
            refuse_foreign_call(part, f"item {index}", "gemini.ingest")
            kind, reason = _skip_reason(part)
            skipped.append(SkippedItem(index, kind, reason))
    return Ingested.of(calls, skipped, finish)


class GeminiStream:
    """Accumulates ``generate_content_stream`` chunks into calls; a call completes when its part arrives."""

    __slots__ = ("_calls", "_finish", "_parts_seen", "_skipped")

    def __init__(self) -> None:
        self._calls: list[ToolCall] = []
        self._skipped: list[SkippedItem] = []
        self._finish: str | None = None
        self._parts_seen = 0

    def add(self, chunk: object) -> tuple[ToolCall, ...]:
        """Take one chunk; returns the calls it carried."""
        refuse_foreign_event(chunk, "gemini", "GeminiStream.add")
        parts, finish = _parts_of(chunk, "GeminiStream.add")
        self._finish = finish or self._finish
        completed: list[ToolCall] = []
        for part in parts:
            function_call = field(part, "function_call")
            if function_call is not None:
                call = _call(function_call, len(self._calls))
                self._calls.append(call)
                completed.append(call)
            else:
                kind, reason = _skip_reason(part)
                self._skipped.append(SkippedItem(self._parts_seen, kind, reason))
            self._parts_seen += 1
        return tuple(completed)

    def finish(self) -> Ingested:
        """Every call of the stream, in order."""
        return Ingested.of(self._calls, self._skipped, self._finish)


def render_records(calls: Sequence[CallRecord], memo: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """``{"function_response": {"id"?, "name", "response": {"output"} | {"error"}}}`` per decided call.

    ``memo`` is accepted like every renderer's and unused: the error goes in as an object, not a text.
    """
    payload: list[dict[str, Any]] = []
    for call_id, name, _state, settlement in calls:
        if settlement is None:
            continue
        response = (
            {"output": settlement[CONTENT]} if settlement[STATUS] == "success" else record_error_object(settlement)
        )
        function_response: dict[str, Any] = {"name": name, "response": response}
        if not is_synthetic_id(call_id):
            function_response = {"id": call_id, **function_response}
        payload.append({"function_response": function_response})
    return payload


def render_tool_results(snapshot: Snapshot) -> list[dict[str, Any]]:
    """:func:`render_records` of a snapshot's calls."""
    return render_records(call_records(snapshot))


# --------------------------------------------------------------------------- the next request


def _content_dict(content: object) -> Any:
    if isinstance(content, dict):
        return dict(content)
    dump = getattr(content, "model_dump", None)
    if callable(dump):  # an SDK Content: thought_signature bytes are kept as they are
        return dump(exclude_none=True)
    raise UsageError(
        f"a Gemini content must be a dict or an SDK Content, not {type(content).__name__}",
        code="provider_value_invalid",
    )


def _model_content(source: object) -> Any:
    """The model's turn: a response's first candidate content, a candidate's content, or a Content."""
    candidates = field(source, "candidates")
    if candidates is not None:
        listed = items(candidates)
        source = field(listed[0], "content") if listed else None
    elif field(source, "content") is not None and field(source, "parts") is None:
        source = field(source, "content")
    return _content_dict(source)


COUNT_MISMATCH: Final = (
    "Please ensure that the number of function response parts is equal to the number of function call parts "
    "of the function call turn."
)


def check_contents(contents: Sequence[Any]) -> None:
    """Preflight: raise :class:`.ProviderRuleError` with the API's own text where Gemini would refuse.

    The rule: the content right after a turn with function calls has exactly
    as many function responses (and, where the calls carry ids, one for each id).
    """
    refuse_foreign_turns(contents, "gemini", "gemini.check_contents", "contents")
    for index, content in enumerate(contents):
        calls = [field(part, "function_call") for part in items(field(content, "parts"))]
        calls = [call for call in calls if call is not None]
        if not calls:
            continue
        following = contents[index + 1] if index + 1 < len(contents) else None
        responses = [field(part, "function_response") for part in items(field(following, "parts"))]
        responses = [response for response in responses if response is not None]
        call_ids = sorted(field(call, "id") or "" for call in calls)
        response_ids = sorted(field(response, "id") or "" for response in responses)
        if len(responses) != len(calls) or (all(call_ids) and call_ids != response_ids):
            raise ProviderRuleError(COUNT_MISMATCH, provider=PROVIDER, index=index + 1)


def next_contents(model_turn: object, function_responses: Sequence[GeminiPart]) -> list[GeminiContent]:
    """The model's turn as it came (thought signatures intact), then **one** user Content with every response.

    ``model_turn`` is the ``GenerateContentResponse`` (or its candidate, or its
    ``Content``); ``function_responses`` is ``closure.to_gemini_function_responses(snapshot)``.
    For a stream, pass the model Content you assembled from its chunks.
    Checked with :func:`check_contents`.
    """
    ingest(model_turn)  # the turn ingest reads: another provider's value is refused here too
    contents: list[Any] = [_model_content(model_turn), {"role": "user", "parts": list(function_responses)}]
    check_contents(contents)
    return contents
