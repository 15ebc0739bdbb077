"""OpenAI Responses: ingestion of ``function_call`` items and stream events, one ``function_call_output`` per call.

Theory of operation
-------------------
A Responses ``function_call`` item has *two* ids: ``id`` (``fc_…``), the
item's own id, and ``call_id`` (``call_…``), the id its output must carry.
**Ingestion pairs on ``call_id``**, never on ``id``: an output paired on
``fc_…`` is refused by the provider (*"No tool call found for function call
output with call_id fc_…"*).  ``begin`` refuses such an item given directly
(error ``provider_item_ambiguous``), so the mistake cannot pass silently.

*Ingestion* (:func:`ingest`) reads a ``Response`` or its ``output`` list, SDK
objects or dicts.  Every other item is skipped with its reason: messages,
reasoning and server-side tools need no output from the caller; the
client-side tools with outputs of their own (``custom_tool_call``,
``computer_call``, ``local_shell_call`` …) are skipped and named, because their
outputs are not ``function_call_output`` items.  Arguments are JSON text
(:mod:`.arguments`).

*Streaming* (:class:`ResponsesStream`): argument deltas carry ``item_id``
(the ``fc_…`` id), not ``call_id``; the stream maps them through the
``response.output_item.added`` event that announced the item.  A call is
complete at its ``response.output_item.done`` (whose item, with the whole
arguments text, is authoritative).  The turn ends with
``response.completed`` or ``response.incomplete``; a call still open then,
or when the stream ends, carries a ``problem``, and a stream that ends
before its end of turn (or with ``response.failed``) is *unfinished*
(:mod:`.streaming`: by default every call is answered, none run).  Every
event has a ``sequence_number``: one that does not increase (an event
repeated, reordered, or of another stream) puts the stream *out of order*,
as does an event for an item never added or already done, or a response
event (``response.created`` …) naming another response.
The stream keeps every output item as it was done, so
:meth:`ResponsesStream.output_items` (and :func:`next_input` given the
stream) echoes the reasoning and messages as well as the calls.

*Export* (:func:`render_tool_results`): ``{"type": "function_call_output",
"call_id", "output"}`` per decided call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any, Final, NamedTuple

from tool_call_closure.providers.arguments import make_call, text_arguments
from tool_call_closure.providers.calls import Ingested, ProviderRuleError, SkippedItem, ToolCall
from tool_call_closure.providers.parts_render import responses_output
from tool_call_closure.providers.reading import (
    described,
    field,
    incomplete_problem,
    int_or_none,
    integer,
    items,
    plain,
    refuse_foreign_call,
    refuse_foreign_event,
    refuse_foreign_turns,
    require_fields,
    required_id,
    text,
    text_or_none,
)
from tool_call_closure.providers.result_text import export_rows
from tool_call_closure.providers.sdk_types import ResponsesFunctionCallOutput, ResponsesInputItem
from tool_call_closure.providers.streaming import TurnAccumulator
from tool_call_closure.values import CallRecord, Snapshot, call_records

__all__ = [
    "FORMAT",
    "PROVIDER",
    "ResponsesStream",
    "Stream",
    "check_input",
    "ingest",
    "next_input",
    "next_request",
    "preflight",
    "render_records",
    "render_tool_results",
]

FORMAT: Final = "openai_responses"
"""The export format this module renders (``spec/machine.json``)."""
PROVIDER: Final = "openai_responses"
"""The ``provider`` of the calls this module ingests."""

# Client-side tools whose result is an output item of their own kind, not a function_call_output.
OWN_OUTPUT_TYPES: Final = frozenset(
    {"custom_tool_call", "computer_call", "local_shell_call", "shell_call", "apply_patch_call", "mcp_approval_request"}
)


def _skip_reason(kind: str) -> str:
    if kind in OWN_OUTPUT_TYPES:
        return f"a {kind} is answered by its own output item, not by a function_call_output"
    if kind == "message":
        return "a message is not a tool call"
    if kind == "reasoning":
        return "a reasoning item is not a tool call (keep it with the call that follows it)"
    return f"a {kind} item is run by the provider and needs no output from the caller"


def _call(item: object, problem: str | None = None) -> ToolCall:
    if problem is None and text(field(item, "status")) == "incomplete":
        problem = "the provider marked this call incomplete"
    return make_call(
        PROVIDER, field(item, "call_id"), field(item, "name"), text_arguments(field(item, "arguments")), problem
    )


def _stop_of(response: object) -> str | None:
    return text(field(field(response, "incomplete_details"), "reason")) or text(field(response, "status"))


def ingest(value: object) -> Ingested:
    """The ``function_call`` items of a ``Response`` or of its ``output`` list, paired on ``call_id``."""
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        output, stop = items(value, "openai_responses.ingest"), None
    else:
        require_fields(value, ("output",), "openai_responses.ingest", "a Response or a list of its output items")
        output = items(field(value, "output"), "openai_responses.ingest: the output")
        stop = _stop_of(value)
    calls: list[ToolCall] = []
    skipped: list[SkippedItem] = []
    for index, item in enumerate(output):
        kind = text(field(item, "type")) or ""
        if kind == "function_call":
            calls.append(_call(item))
        else:
            refuse_foreign_call(item, f"item {index}", "openai_responses.ingest")
            skipped.append(SkippedItem(index, kind, _skip_reason(kind)))
    return Ingested.of(calls, skipped, stop)


@dataclass(slots=True)
class _Item:
    """One output item of the stream: added, then (for a call) its argument deltas, then done."""

    kind: str
    call_id: object = None
    name: object = None
    arguments: list[str] = dataclass_field(default_factory=list)
    problem: str | None = None
    done: object = None  # the item as its output_item.done event carried it
    call: ToolCall | None = None  # a function call completed by that event


_ENDS: Final = ("response.completed", "response.incomplete", "response.failed")


def _event_text(event: object, key: str) -> str | None:
    return text_or_none(field(event, key), f"ResponsesStream.add: the event's {key}")


class _Event(NamedTuple):
    """One stream event as read, before anything is taken from it."""

    kind: str
    sequence: int | None
    response_id: str | None  # the response a response.* event names
    stop: str | None  # its stop reason (incomplete_details.reason, or its status)
    key: str  # the item it is about: its id (fc_…), or "#<output_index>"
    output_index: int
    item: object  # the item an output_item event carries
    item_kind: str
    call_id: object
    name: object
    piece: str | None  # an arguments delta, or the whole arguments text
    problem: str | None  # an arguments fragment that is not text
    call: ToolCall | None  # the call an output_item.done completes


def _read_event(event: object) -> _Event:
    kind = _event_text(event, "type") or ""
    sequence = int_or_none(field(event, "sequence_number"), "ResponsesStream.add: the event's sequence_number")
    response = field(event, "response")
    item = field(event, "item")
    output_index = integer(field(event, "output_index"))
    key = text(field(item, "id")) or _event_text(event, "item_id") or f"#{output_index}"
    raw = field(event, "delta" if kind.endswith(".delta") else "arguments")
    problem = (
        f"an arguments fragment is {described(raw)}, not JSON text" if raw is not None and text(raw) is None else None
    )
    item_kind = text(field(item, "type")) or ""
    call = _call(item) if kind == "response.output_item.done" and item_kind == "function_call" else None
    return _Event(
        kind,
        sequence,
        text(field(response, "id")),
        _stop_of(response),
        key,
        output_index or 0,
        item,
        item_kind,
        field(item, "call_id"),
        field(item, "name"),
        text(raw),
        problem,
        call,
    )


class ResponsesStream(TurnAccumulator):
    """Accumulates Responses stream events (SDK objects or dicts) into calls.

    ``add(event)`` for every event returns the calls that event completed;
    ``finish()`` returns every call, incomplete ones with a ``problem``.
    """

    __slots__ = ("_by_key", "_id", "_order", "_sequence")
    READER = "ResponsesStream"
    CUT = "no response.completed"

    def __init__(self) -> None:
        super().__init__()
        self._by_key: dict[str, _Item] = {}  # item id (fc_…), or "#<output_index>" -> the item it announced
        self._order: list[_Item] = []
        self._id: str | None = None  # the response's id, from response.created
        self._sequence = -1  # the last sequence_number taken

    def add(self, event: object) -> tuple[ToolCall, ...]:
        """Take one event; returns the call it completed, if any.

        An event whose fields have the wrong types raises :class:`.UsageError`
        and is not taken: every field is read before anything is taken.
        """
        refuse_foreign_event(event, "openai_responses", "ResponsesStream.add")
        read = _read_event(event)
        if read.sequence is not None:
            if read.sequence <= self._sequence:
                self._turn.out_of_order(f"sequence_number {read.sequence} after {self._sequence}")
            self._sequence = max(self._sequence, read.sequence)
        if read.response_id and self._id is not None and read.response_id != self._id:
            # Only the response events name the response: the other response's item events cannot be told
            # apart from this one's, so the stream is out of order (a refusal of this event alone would let them in).
            self._turn.out_of_order(f"an event of another response ({read.response_id[:80]!r})")
        self._id = self._id or read.response_id or None
        if self._turn.ended and read.kind not in _ENDS:
            self._turn.out_of_order(f"a {read.kind} event after the response ended")
        return self._take(read)

    def _take(self, read: _Event) -> tuple[ToolCall, ...]:
        kind, key = read.kind, read.key
        found = self._by_key.get(key)
        if kind == "response.output_item.added":
            if found is not None:
                self._turn.out_of_order(f"item {key[:80]!r} added twice")
                return ()
            entry = _Item(read.item_kind, read.call_id, read.name)
            self._by_key[key] = entry
            self._order.append(entry)
            if read.item_kind != "function_call":
                self._skipped.append(SkippedItem(read.output_index, read.item_kind, _skip_reason(read.item_kind)))
        elif kind in ("response.function_call_arguments.delta", "response.function_call_arguments.done"):
            if found is None or found.done is not None:
                self._turn.out_of_order(
                    f"a {kind} event for item {key[:80]!r}, " + ("done" if found else "never added")
                )
                return ()
            if read.problem is not None:
                found.problem = found.problem or read.problem
            elif kind.endswith("done") and read.piece is not None:
                found.arguments = [read.piece]  # the complete text is authoritative
            elif read.piece:
                found.arguments.append(read.piece)
        elif kind == "response.output_item.done":
            if found is None or found.done is not None:
                self._turn.out_of_order(f"item {key[:80]!r} done " + ("twice" if found else "but never added"))
                return ()
            found.done = read.item
            if read.call is not None:
                found.call = read.call if found.problem is None else read.call.with_problem(found.problem)
                return (found.call,)
        elif kind in ("response.completed", "response.incomplete"):
            self._turn.end(read.stop)
        elif kind == "response.failed":
            self._turn.stop_reason = self._turn.stop_reason or read.stop or "failed"
        return ()

    def _calls_so_far(self) -> list[ToolCall]:
        """Every function_call item, in output order; one not done carries a ``problem``."""
        cause = incomplete_problem(self._turn.stop_reason, "the response ended")
        calls = [
            entry.call
            if entry.call is not None
            else make_call(PROVIDER, entry.call_id, entry.name, text_arguments("".join(entry.arguments)), cause)
            for entry in self._order
            if entry.kind == "function_call"
        ]
        return calls

    def _cut(self) -> str:
        return self.CUT if self._turn.stop_reason is None else f"response {self._turn.stop_reason}"

    def output_items(self) -> list[ResponsesInputItem]:
        """The response's output as input items for the next request: every item done, and every call.

        A call not done is rebuilt from what arrived (it gets a result too);
        another item not done (a message or a reasoning item the stream cut)
        is left out: only its done form is complete.
        """
        echoed: list[Any] = []
        for entry in self._order:
            if entry.done is not None:
                echoed.append(_input_item(entry.done))
            elif entry.kind == "function_call":
                call = make_call(PROVIDER, entry.call_id, entry.name, text_arguments("".join(entry.arguments)))
                echoed.append(_input_item(call))
        return echoed


def render_records(calls: Sequence[CallRecord], memo: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """ADP-4: ``{"type": "function_call_output", "call_id", "output"}`` per decided call, in announcement order.

    A success made of parts (D22) has a list of ``input_text``, ``input_image``
    and ``input_file`` items as its output (:mod:`.parts_render`).
    """
    return [
        {
            "type": "function_call_output",
            "call_id": call_id,
            "output": result if isinstance(result, str) else responses_output(result),
        }
        for call_id, _name, _state, result in export_rows(calls, memo)  # rendered once per snapshot (ADP-5)
    ]


def render_tool_results(snapshot: Snapshot) -> list[dict[str, Any]]:
    """:func:`render_records` of a snapshot's calls."""
    return render_records(call_records(snapshot))


# --------------------------------------------------------------------------- the next request


def _input_item(item: object) -> Any:
    """An output item as an input item: dicts are copied, SDK models dumped, ingested calls rebuilt."""
    if isinstance(item, ToolCall):
        return {"type": "function_call", "call_id": item.id, "name": item.name, "arguments": item.arguments_json}
    return plain(item, "openai_responses.next_input", "an output item (a dict, an SDK model or a ToolCall)")


NO_OUTPUT: Final = "No tool output found for function call {id}."
NO_CALL: Final = "No tool call found for function call output with call_id {id}."
DUPLICATE_ITEM: Final = "Duplicate item found with id {id}. Remove duplicate items from your input and try again."
ORPHAN_REASONING: Final = "Item '{id}' of type 'reasoning' was provided without its required following item."


def check_input(input_items: Sequence[Any], *, previous_response_id: bool = False) -> None:
    """Preflight: raise :class:`.ProviderRuleError` with the API's own text where Responses would refuse.

    Every ``function_call`` has exactly one ``function_call_output`` with its
    ``call_id``; every output answers a call in the input — or, with
    ``previous_response_id=True``, a call of the previous response, which this
    check cannot see, so only duplicates are checked for such outputs; no two
    items share an ``id``; a ``reasoning`` item is followed by another model item.
    """
    refuse_foreign_turns(input_items, "openai_responses", "openai_responses.check_input", "input_items")
    listed = items(input_items, "openai_responses.check_input")
    calls: dict[str, int] = {}
    outputs: dict[str, int] = {}
    ids: set[str] = set()
    for index, item in enumerate(listed):
        kind = text(field(item, "type"))
        item_id = text_or_none(field(item, "id"), f"openai_responses.check_input: input_items[{index}].id")
        if item_id is not None:
            if item_id in ids:
                raise ProviderRuleError(DUPLICATE_ITEM.format(id=item_id), provider=PROVIDER, index=index)
            ids.add(item_id)
        if kind == "function_call":
            call_id = required_id(item, "call_id", f"openai_responses.check_input: input_items[{index}]")
            if call_id in calls:
                raise ProviderRuleError(DUPLICATE_ITEM.format(id=item_id or call_id), provider=PROVIDER, index=index)
            calls[call_id] = index
        elif kind == "function_call_output":
            call_id = required_id(item, "call_id", f"openai_responses.check_input: input_items[{index}]")
            if call_id in outputs:
                raise ProviderRuleError(DUPLICATE_ITEM.format(id=call_id), provider=PROVIDER, index=index)
            if call_id not in calls and not previous_response_id:
                raise ProviderRuleError(NO_CALL.format(id=call_id), provider=PROVIDER, index=index)
            outputs[call_id] = index
        elif kind == "reasoning":
            following = listed[index + 1] if index + 1 < len(listed) else None
            if following is None or text(field(following, "type")) in ("reasoning", "function_call_output", None):
                raise ProviderRuleError(ORPHAN_REASONING.format(id=item_id), provider=PROVIDER, index=index)
    for call_id, index in calls.items():
        if call_id not in outputs:
            raise ProviderRuleError(NO_OUTPUT.format(id=call_id), provider=PROVIDER, index=index)


def next_input(
    output: object, outputs: Sequence[ResponsesFunctionCallOutput], *, previous_response_id: bool = False
) -> list[ResponsesInputItem]:
    """The ``input`` of the next request around the results (``closure.to_openai_responses(snapshot)``).

    With ``previous_response_id=True`` (the next request names the previous
    response, whose items the server keeps) that is the results alone;
    otherwise the previous response's output items (a ``Response``, its
    ``output`` list, the :class:`ResponsesStream` it was streamed into, or
    the ingested calls of a stream), in order, then the results.  Checked
    with :func:`check_input` before it is returned.
    """
    next_items: list[Any]
    results = items(outputs, "openai_responses.next_input")
    if previous_response_id:
        next_items = results
    elif isinstance(output, ResponsesStream):
        next_items = [*output.output_items(), *results]
    else:
        ingest(output)  # the turn ingest reads: another provider's value is refused here too
        source = items(field(output, "output")) if field(output, "output") is not None else items(output)
        next_items = [*(_input_item(item) for item in source), *results]
    check_input(next_items, previous_response_id=previous_response_id)
    return next_items


# The provider contract (providers.contract): the same names in every provider module.
Stream = ResponsesStream
next_request = next_input
preflight = check_input
