"""Google Gemini (google-genai): ingestion of ``function_call`` parts, and ``function_response`` parts in one Content.

Theory of operation
-------------------
*Ingestion* (:func:`ingest`) reads a ``GenerateContentResponse`` (its first
candidate), a ``Candidate``, a ``Content`` or a list of parts — SDK objects or
dicts — and turns each ``function_call`` part into a call.  Every field of a
Gemini ``FunctionCall`` is optional, and Gemini 2.x often sends no ``id``.
``args`` is already parsed (:mod:`.arguments` bounds it).

**Ids for calls without one** are ``tcc_gemini_<turn>_<n>``: ``<n>`` is the
zero-based position of the call among the function calls of the turn
(across all chunks of a stream), and ``<turn>`` tells the turns apart, so a
late result or a log line names the turn it belongs to:

* the response's ``response_id`` when it has one of 1–64 characters of
  ``[A-Za-z0-9_-]`` (Gemini's ids have that form): the same response always
  gets the same ids, so a retry or a replay pairs the same way;
* ``h`` and the first 16 hex digits of the SHA-256 of a ``response_id`` of
  another form (deterministic too);
* ``local<k>`` when the value has no ``response_id`` (a candidate, a
  ``Content``, parts, a stream whose chunks carry none): ``<k>`` counts the
  turns so read in this process, so such ids differ from turn to turn but
  not from run to run of a program.

The export never sends such an id to Gemini (it would be an id Gemini never
issued): a response to a call without an id is paired by its ``name`` and
its position, as Gemini's own SDK does.  :func:`is_synthetic_id` also
recognises the ``tcc_gemini_<n>`` form of earlier versions.  A provider id
that happens to have either form is indistinguishable, and is treated the
same way (Gemini issues no such ids).

*Streaming* (:class:`GeminiStream`): each chunk is a
``GenerateContentResponse``; parallel calls arrive whole, in separate chunks,
with no index.  A call is complete as soon as its part arrives; the turn
ends with a candidate's ``finish_reason``.  A stream that ends before it is
*unfinished* (:mod:`.streaming`): by default every call that did arrive is
answered and none run, and :attr:`.Ingested.unfinished` says so even when
no call arrived.  A chunk of another response (another ``response_id``) is
refused (:class:`.UsageError`); a part after the ``finish_reason`` puts the
stream *out of order*.  Streamed partial arguments (``will_continue:
true``) are not assembled: such a call carries a ``problem``.  The stream
keeps every part (text, thoughts and their ``thought_signature``), so
:meth:`GeminiStream.model_content` (and :func:`next_contents` given the
stream) echoes the model's turn as it was.

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

import hashlib
import itertools
import re
from collections.abc import Sequence
from typing import Any, Final

from tool_call_closure.errors import UsageError
from tool_call_closure.parts import ToolContent
from tool_call_closure.providers.arguments import make_call, parsed_arguments
from tool_call_closure.providers.calls import Ingested, ProviderRuleError, SkippedItem, ToolCall
from tool_call_closure.providers.parts_render import (
    GEMINI_2_PARTS,
    GEMINI_2_SIBLING_MEDIA,
    GeminiFamily,
    gemini_family,
    gemini_response,
)
from tool_call_closure.providers.reading import (
    described,
    field,
    items,
    plain,
    present,
    refuse_foreign_call,
    refuse_foreign_event,
    refuse_foreign_turns,
    require_fields,
    text,
    text_or_none,
)
from tool_call_closure.providers.result_text import record_error_object
from tool_call_closure.providers.sdk_types import GeminiContent, GeminiPart
from tool_call_closure.providers.streaming import TurnAccumulator
from tool_call_closure.values import CONTENT, STATUS, CallRecord, Snapshot, call_records

__all__ = [
    "FORMAT",
    "PROVIDER",
    "SYNTHETIC_ID_PREFIX",
    "GeminiStream",
    "Stream",
    "check_contents",
    "ingest",
    "is_synthetic_id",
    "next_contents",
    "next_request",
    "preflight",
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
_SYNTHETIC: Final = re.compile(r"tcc_gemini_(?:[A-Za-z0-9_-]{1,64}_)?(0|[1-9][0-9]*)")
_USABLE_RESPONSE_ID: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
_LOCAL_TURNS: Final = itertools.count(1)  # next() on a count is atomic: safe from any thread


def turn_tag(response_id: str | None) -> str:
    """The ``<turn>`` part of the ids of one turn's calls without an id (see the module docstring)."""
    if response_id is None:
        return f"local{next(_LOCAL_TURNS)}"
    if _USABLE_RESPONSE_ID.fullmatch(response_id):
        return response_id
    return "h" + hashlib.sha256(response_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def synthetic_id(position: int, turn: str | None = None) -> str:
    """The id of the call at ``position`` (zero-based) among the function calls of a turn, when it has none.

    ``turn`` is the turn's :func:`turn_tag`; without it, the ``tcc_gemini_<n>``
    form of earlier versions (the same in every turn).
    """
    return f"{SYNTHETIC_ID_PREFIX}{position}" if turn is None else f"{SYNTHETIC_ID_PREFIX}{turn}_{position}"


def is_synthetic_id(call_id: str) -> bool:
    """True for an id :func:`synthetic_id` makes (never sent to Gemini)."""
    return _SYNTHETIC.fullmatch(call_id) is not None


def _value(enum_or_text: object, reader: str) -> str | None:
    """A google-genai enum member (a ``str`` enum) or a plain string, as its plain text; anything else refused."""
    return text_or_none(enum_or_text, f"{reader}: the finish_reason")  # a member's own str value, unoverridden


_EXPECTED: Final = "a GenerateContentResponse, a candidate, a Content or a list of parts"


def _parts_of(value: object, reader: str) -> tuple[list[Any], str | None, str | None]:
    """(the parts, the finish_reason, the response_id) of a response, a candidate, a Content or a list of parts."""
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return items(value, reader), None, None
    response_id = None
    candidates = field(value, "candidates")
    if candidates is not None:
        response_id = text_or_none(field(value, "response_id"), f"{reader}: the response_id")
        listed = items(candidates, f"{reader}: the candidates")
        value = listed[0] if listed else None  # none: the prompt was blocked, nothing to read
    finish = _value(field(value, "finish_reason"), reader)
    content = field(value, "content")
    if content is not None:  # a candidate's content (None when it was stopped before any, e.g. for safety)
        require_fields(content, ("parts", "role"), reader, "a candidate's content to be a Content (parts, role)")
        value = content
    return items(field(value, "parts"), f"{reader}: the parts"), finish, response_id


def _skip_reason(part: object) -> tuple[str, str]:
    if present(field(part, "thought")):
        return "thought", "a thought part is not a tool call (keep it in the model's turn)"
    for kind in ("text", "executable_code", "code_execution_result", "inline_data", "file_data"):
        if field(part, kind) is not None:
            if kind in ("executable_code", "code_execution_result"):
                return kind, f"a {kind} part is run by the provider and needs no function response"
            return kind, f"a {kind} part is not a tool call"
    return "unknown", "a part without a function_call needs no function response"


def _call(function_call: object, position: int, turn: str) -> ToolCall:
    problem = None
    if present(field(function_call, "will_continue")):
        problem = "streamed partial arguments (will_continue) are not assembled; the call is incomplete"
    elif not present(field(function_call, "name")):
        problem = "Gemini sent this function call without a name"
    raw_id = field(function_call, "id")
    call_id = synthetic_id(position, turn) if raw_id is None or text(raw_id) == "" else raw_id
    return make_call(
        PROVIDER, call_id, field(function_call, "name"), parsed_arguments(field(function_call, "args")), problem
    )


def ingest(value: object) -> Ingested:
    """The ``function_call`` parts of a response, candidate, content or part list, with ids for those lacking one."""
    if not (isinstance(value, Sequence) and not isinstance(value, str | bytes)):
        require_fields(value, ("candidates", "content", "parts"), "gemini.ingest", _EXPECTED)
        refuse_foreign_call(value, "the value", "gemini.ingest")
    parts, finish, response_id = _parts_of(value, "gemini.ingest")
    turn: str | None = None
    calls: list[ToolCall] = []
    skipped: list[SkippedItem] = []
    for index, part in enumerate(parts):
        function_call = field(part, "function_call")
        if function_call is not None:
            turn = turn or turn_tag(response_id)
            calls.append(_call(function_call, len(calls), turn))
        else:
            refuse_foreign_call(part, f"item {index}", "gemini.ingest")
            kind, reason = _skip_reason(part)
            skipped.append(SkippedItem(index, kind, reason))
    return Ingested.of(calls, skipped, finish)


class GeminiStream(TurnAccumulator):
    """Accumulates ``generate_content_stream`` chunks into calls; a call completes when its part arrives."""

    __slots__ = ("_calls", "_parts", "_response_id", "_turn_tag")
    READER = "GeminiStream"
    CUT = "no finish_reason"

    def __init__(self) -> None:
        super().__init__()
        self._calls: list[ToolCall] = []
        self._parts: list[Any] = []  # every part of the model's turn, as the echo carries it
        self._response_id: str | None = None
        self._turn_tag: str | None = None  # the <turn> of the synthetic ids, fixed by the first chunk

    def add(self, chunk: object) -> tuple[ToolCall, ...]:
        """Take one chunk; returns the calls it carried.

        A chunk of another response (another ``response_id``), or one whose
        structure is not a response's, raises :class:`.UsageError` and is not taken.
        """
        refuse_foreign_event(chunk, "gemini", "GeminiStream.add")
        parts, finish, response_id = _parts_of(chunk, "GeminiStream.add")
        if response_id is not None and self._response_id is not None and response_id != self._response_id:
            raise UsageError(
                f"GeminiStream.add: the chunk is of response {response_id[:80]!r}, this stream accumulates "
                f"{self._response_id[:80]!r}: use one GeminiStream per response",
                code="provider_value_invalid",
            )
        echoed = [plain(part, "GeminiStream.add", "a part", json_mode=False) for part in parts]
        tag = self._turn_tag or turn_tag(response_id)  # the <turn> of this stream's ids: fixed by its first chunk
        completed: list[ToolCall] = []
        skipped: list[SkippedItem] = []
        for number, part in enumerate(parts, start=len(self._parts)):  # read it all before taking any of it
            function_call = field(part, "function_call")
            if function_call is not None:
                completed.append(_call(function_call, len(self._calls) + len(completed), tag))
            else:
                kind, reason = _skip_reason(part)
                skipped.append(SkippedItem(number, kind, reason))
        self._turn_tag = tag
        self._response_id = self._response_id or response_id
        if parts and self._turn.ended:
            self._turn.out_of_order("a part after the finish_reason")
        self._calls += completed
        self._skipped += skipped
        self._parts += echoed
        if finish is not None:
            self._turn.end(finish)
        return tuple(completed)

    def _calls_so_far(self) -> list[ToolCall]:
        """The calls that arrived: each is complete (a Gemini call arrives whole, in one part)."""
        return self._calls

    def model_content(self) -> GeminiContent:
        """The model's turn as streamed: one ``Content`` with every part, in order (thought signatures intact)."""
        typed: GeminiContent = {"role": "model", "parts": list(self._parts)}  # type: ignore[typeddict-item,unused-ignore]
        return typed


def render_records(
    calls: Sequence[CallRecord], memo: dict[str, Any] | None = None, *, family: GeminiFamily = "gemini-3"
) -> list[dict[str, Any]]:
    """``{"function_response": {"id"?, "name", "response": {"output"} | {"error"}}}`` per decided call.

    ``memo`` is accepted like every renderer's and unused: the error goes in as an object, not a text.
    A success made of parts (D22): ``output`` is their text (one JSON part
    alone: its value) and, for ``family="gemini-3"``, the media go in the
    function response's ``parts`` (:mod:`.parts_render`).
    """
    family = gemini_family(family)
    payload: list[dict[str, Any]] = []
    for call_id, name, _state, settlement in calls:
        if settlement is None:
            continue
        media: list[dict[str, Any]] = []
        if settlement[STATUS] != "success":
            response = record_error_object(settlement)
        elif type(result := settlement[CONTENT]) is ToolContent:
            output, media = gemini_response(result, family)
            response = {"output": output}
        else:
            response = {"output": result}
        function_response: dict[str, Any] = {"name": name, "response": response}
        if media:
            function_response["parts"] = media
        if not is_synthetic_id(call_id):
            function_response = {"id": call_id, **function_response}
        payload.append({"function_response": function_response})
    return payload


def render_tool_results(snapshot: Snapshot) -> list[dict[str, Any]]:
    """:func:`render_records` of a snapshot's calls."""
    return render_records(call_records(snapshot))


# --------------------------------------------------------------------------- the next request


def _model_content(source: object) -> Any:
    """The model's turn: a response's first candidate content, a candidate's content, a Content, or a stream's."""
    if isinstance(source, GeminiStream):
        return source.model_content()
    candidates = field(source, "candidates")
    if candidates is not None:
        listed = items(candidates)
        source = field(listed[0], "content") if listed else None
    elif field(source, "content") is not None and field(source, "parts") is None:
        source = field(source, "content")
    return plain(source, "gemini.next_contents", "the model's content", json_mode=False)  # thought_signature bytes kept


COUNT_MISMATCH: Final = (
    "Please ensure that the number of function response parts is equal to the number of function call parts "
    "of the function call turn."
)


def _parts(content: object, index: int) -> list[Any]:
    return items(field(content, "parts"), f"gemini.check_contents: contents[{index}].parts")


def _ids(values: list[Any], index: int, what: str) -> list[str]:
    """The ids of function calls or responses (``""`` for none), refused unless text."""
    found: list[str] = []
    for value in values:
        raw = field(value, "id")
        if raw is not None and text(raw) is None:
            raise UsageError(
                f"gemini.check_contents: a {what} in contents[{index}] has an id that is {described(raw)}, not text",
                code="provider_value_invalid",
            )
        found.append(text(raw) or "")
    return sorted(found)


def check_contents(contents: Sequence[Any], *, family: GeminiFamily = "gemini-3") -> None:
    """Preflight: raise :class:`.ProviderRuleError` with the API's own text where Gemini would refuse.

    The rule: the content right after a turn with function calls has exactly
    as many function responses (and, where the calls carry ids, one for each id).
    ``family="gemini-2"`` also refuses a function response with ``parts``
    (multimodal function responses are Gemini 3) and media parts beside
    function responses (Gemini 2.x counts them as response parts, and its
    count check fails), saying why (D22).
    """
    family = gemini_family(family)
    refuse_foreign_turns(contents, "gemini", "gemini.check_contents", "contents")
    listed = items(contents, "gemini.check_contents")
    for index, content in enumerate(listed):
        if family == "gemini-2":
            _refuse_response_parts(content, index)
        calls = [field(part, "function_call") for part in _parts(content, index)]
        calls = [call for call in calls if call is not None]
        if not calls:
            continue
        following = listed[index + 1] if index + 1 < len(listed) else None
        responses = [field(part, "function_response") for part in _parts(following, index + 1)]
        responses = [response for response in responses if response is not None]
        call_ids = _ids(calls, index, "function_call")
        response_ids = _ids(responses, index + 1, "function_response")
        if len(responses) != len(calls) or (all(call_ids) and call_ids != response_ids):
            raise ProviderRuleError(COUNT_MISMATCH, provider=PROVIDER, index=index + 1)


def _refuse_response_parts(content: object, index: int) -> None:
    """Gemini 2.x: no ``parts`` in a function response, and no media beside function responses (D22)."""
    parts = _parts(content, index)
    answering = any(field(part, "function_response") is not None for part in parts)
    for position, part in enumerate(parts):
        response = field(part, "function_response")
        if response is not None and items(field(response, "parts")):
            problem = GEMINI_2_PARTS.format(index=index, part=position)
            raise ProviderRuleError(problem, provider=PROVIDER, index=index)
        media = next((kind for kind in ("inline_data", "file_data") if field(part, kind) is not None), None)
        if answering and media is not None:
            problem = GEMINI_2_SIBLING_MEDIA.format(index=index, part=position, kind=media)
            raise ProviderRuleError(problem, provider=PROVIDER, index=index)


def next_contents(
    model_turn: object, function_responses: Sequence[GeminiPart], *, family: GeminiFamily = "gemini-3"
) -> list[GeminiContent]:
    """The model's turn as it came (thought signatures intact), then **one** user Content with every response.

    ``model_turn`` is the ``GenerateContentResponse`` (or its candidate, or its
    ``Content``), or the :class:`GeminiStream` it was streamed into (every
    part of every chunk, in order); ``function_responses`` is
    ``closure.to_gemini_function_responses(snapshot)``.  Checked with
    :func:`check_contents` (``family`` passed on).
    """
    if not isinstance(model_turn, GeminiStream):
        ingest(model_turn)  # the turn ingest reads: another provider's value is refused here too
    parts = items(function_responses, "gemini.next_contents")
    contents: list[Any] = [_model_content(model_turn), {"role": "user", "parts": parts}]
    check_contents(contents, family=family)
    return contents


# The provider contract (providers.contract): the same names in every provider module.
Stream = GeminiStream
next_request = next_contents
preflight = check_contents
