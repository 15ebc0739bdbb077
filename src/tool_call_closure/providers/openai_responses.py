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
outputs are not ``function_call_output`` items.

*Streaming* (:class:`ResponsesStream`): argument deltas carry ``item_id``
(the ``fc_…`` id), not ``call_id``; the stream maps them through the
``response.output_item.added`` event that announced the item.  A call is
complete at its ``response.output_item.done``; a call still open when the
stream ends, or when the response ends ``incomplete``, carries a ``problem``.

*Export* (:func:`render_tool_results`): ``{"type": "function_call_output",
"call_id", "output"}`` per decided call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any, Final

from tool_call_closure.errors import UsageError
from tool_call_closure.providers.calls import Ingested, ProviderRuleError, SkippedItem, ToolCall
from tool_call_closure.providers.reading import (
    field,
    incomplete_problem,
    items,
    parse_arguments,
    refuse_foreign_call,
    refuse_foreign_event,
    refuse_foreign_turns,
    require_fields,
)
from tool_call_closure.providers.result_text import export_rows
from tool_call_closure.providers.sdk_types import ResponsesFunctionCallOutput, ResponsesInputItem
from tool_call_closure.values import CallRecord, Snapshot, call_records

__all__ = [
    "FORMAT",
    "PROVIDER",
    "ResponsesStream",
    "check_input",
    "ingest",
    "next_input",
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
    text = field(item, "arguments") or ""
    arguments, invalid = parse_arguments(text)
    problem = problem or invalid
    if problem is None and field(item, "status") == "incomplete":
        problem = "the provider marked this call incomplete"
    return ToolCall(
        field(item, "call_id") or "", field(item, "name") or "", None if problem else arguments, text, problem, PROVIDER
    )


def ingest(value: object) -> Ingested:
    """The ``function_call`` items of a ``Response`` or of its ``output`` list, paired on ``call_id``."""
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        output, stop = list(value), None
    else:
        require_fields(value, ("output",), "openai_responses.ingest", "a Response or a list of its output items")
        output = items(field(value, "output"), "openai_responses.ingest: the output")
        stop = field(field(value, "incomplete_details"), "reason") or field(value, "status")
    calls: list[ToolCall] = []
    skipped: list[SkippedItem] = []
    for index, item in enumerate(output):
        kind = field(item, "type") or ""
        if kind == "function_call":
            calls.append(_call(item))
        else:
            refuse_foreign_call(item, f"item {index}", "openai_responses.ingest")
            skipped.append(SkippedItem(index, kind, _skip_reason(kind)))
    return Ingested.of(calls, skipped, stop)


@dataclass(slots=True)
class _Partial:
    call_id: str
    name: str
    arguments: list[str] = dataclass_field(default_factory=list)
    done: ToolCall | None = None


class ResponsesStream:
    """Accumulates Responses stream events (SDK objects or dicts) into calls.

    ``add(event)`` for every event returns the calls that event completed;
    ``finish()`` returns every call, incomplete ones with a ``problem``.
    """

    __slots__ = ("_by_item", "_order", "_skipped", "_stop")

    def __init__(self) -> None:
        self._by_item: dict[str, _Partial] = {}  # item id (fc_…) -> the call it announced
        self._order: list[_Partial] = []
        self._skipped: list[SkippedItem] = []
        self._stop: str | None = None

    def add(self, event: object) -> tuple[ToolCall, ...]:
        """Take one event; returns the call it completed, if any."""
        refuse_foreign_event(event, "openai_responses", "ResponsesStream.add")
        kind = field(event, "type")
        item = field(event, "item")
        partial: _Partial | None
        if kind == "response.output_item.added":
            item_kind = field(item, "type") or ""
            if item_kind == "function_call":
                partial = _Partial(field(item, "call_id") or "", field(item, "name") or "")
                self._by_item[field(item, "id") or f"#{field(event, 'output_index')}"] = partial
                self._order.append(partial)
            else:
                self._skipped.append(SkippedItem(field(event, "output_index") or 0, item_kind, _skip_reason(item_kind)))
        elif kind == "response.function_call_arguments.delta":
            partial = self._partial(event)
            if partial is not None and field(event, "delta"):
                partial.arguments.append(field(event, "delta"))
        elif kind == "response.function_call_arguments.done":
            partial = self._partial(event)
            if partial is not None and field(event, "arguments") is not None:
                partial.arguments = [field(event, "arguments")]  # the complete text is authoritative
        elif kind == "response.output_item.done" and field(item, "type") == "function_call":
            partial = self._by_item.get(field(item, "id") or f"#{field(event, 'output_index')}")
            if partial is not None and partial.done is None:
                partial.done = _call(item)
                return (partial.done,)
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            response = field(event, "response")
            self._stop = field(field(response, "incomplete_details"), "reason") or field(response, "status")
        return ()

    def _partial(self, event: object) -> _Partial | None:
        return self._by_item.get(field(event, "item_id") or f"#{field(event, 'output_index')}")

    def finish(self) -> Ingested:
        """Every call of the stream, in order; a call never completed carries a ``problem``."""
        cause = incomplete_problem(self._stop, "the response ended")
        calls = [
            partial.done
            if partial.done is not None
            else ToolCall(partial.call_id, partial.name, None, "".join(partial.arguments), cause, PROVIDER)
            for partial in self._order
        ]
        return Ingested.of(calls, self._skipped, self._stop)


def render_records(calls: Sequence[CallRecord], memo: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """ADP-4: ``{"type": "function_call_output", "call_id", "output"}`` per decided call, in announcement order."""
    return [
        {"type": "function_call_output", "call_id": call_id, "output": text}
        for call_id, _name, _state, text in export_rows(calls, memo)  # rendered once per snapshot (ADP-5)
    ]


def render_tool_results(snapshot: Snapshot) -> list[dict[str, Any]]:
    """:func:`render_records` of a snapshot's calls."""
    return render_records(call_records(snapshot))


# --------------------------------------------------------------------------- the next request


def _input_item(item: object) -> Any:
    """An output item as an input item: dicts are copied, SDK models dumped, ingested calls rebuilt."""
    if isinstance(item, ToolCall):
        return {"type": "function_call", "call_id": item.id, "name": item.name, "arguments": item.arguments_json}
    if isinstance(item, dict):
        return dict(item)
    dump = getattr(item, "model_dump", None)
    if callable(dump):  # an SDK model: its JSON form is the input item's form
        return dump(mode="json", exclude_none=True)
    raise UsageError(
        f"an output item must be a dict, an SDK model or a ToolCall, not {type(item).__name__}",
        code="provider_value_invalid",
    )


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
    calls: dict[str, int] = {}
    outputs: dict[str, int] = {}
    ids: set[str] = set()
    for index, item in enumerate(input_items):
        kind = field(item, "type")
        item_id = field(item, "id")
        if item_id is not None:
            if item_id in ids:
                raise ProviderRuleError(DUPLICATE_ITEM.format(id=item_id), provider=PROVIDER, index=index)
            ids.add(item_id)
        if kind == "function_call":
            call_id = field(item, "call_id")
            if call_id in calls:
                raise ProviderRuleError(DUPLICATE_ITEM.format(id=item_id or call_id), provider=PROVIDER, index=index)
            calls[call_id] = index
        elif kind == "function_call_output":
            call_id = field(item, "call_id")
            if call_id in outputs:
                raise ProviderRuleError(DUPLICATE_ITEM.format(id=call_id), provider=PROVIDER, index=index)
            if call_id not in calls and not previous_response_id:
                raise ProviderRuleError(NO_CALL.format(id=call_id), provider=PROVIDER, index=index)
            outputs[call_id] = index
        elif kind == "reasoning":
            following = input_items[index + 1] if index + 1 < len(input_items) else None
            if following is None or field(following, "type") in ("reasoning", "function_call_output", None):
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
    ``output`` list, or the ingested calls of a stream), in order, then the
    results.  Checked with :func:`check_input` before it is returned.
    """
    next_items: list[Any]
    if previous_response_id:
        next_items = list(outputs)
    else:
        ingest(output)  # the turn ingest reads: another provider's value is refused here too
        source = items(field(output, "output")) if field(output, "output") is not None else items(output)
        next_items = [*(_input_item(item) for item in source), *outputs]
    check_input(next_items, previous_response_id=previous_response_id)
    return next_items
