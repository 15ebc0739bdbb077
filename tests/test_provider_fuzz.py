"""The provider layer fuzzed: every reader returns a clean result or raises ``UsageError``, whatever it is given.

Property tests (Hypothesis) over generated SDK-shaped values, for the five
provider modules' ``ingest``, stream accumulators, next-request builders and
preflight checks.  The invariant, checked on every example:

* the reader returns, or raises :class:`UsageError` (a ``ProviderRuleError``
  is one) — never another exception; a stream's ``add`` that raises changes
  nothing (``finish()`` before and after are equal), and ``finish()`` never
  raises and changes nothing either;
* in what it returns, every runnable call carries exactly the arguments the
  model sent (``arguments`` is the parse of ``arguments_json``, and for the
  calls of a generated turn it is that call's arguments), its id is a
  non-empty text and no two calls share one; and ``ToolCallClosure.begin``
  accepts the calls of a generated turn.

The values:

* **turns** the generator writes in each API's shape — text, thinking and
  reasoning, calls with any JSON object as arguments, Gemini calls without
  ids — as dicts and as the SDKs' own models, ingested whole; and streamed:
  the arguments split into random fragments, the events **reordered,
  duplicated, interleaved with another response's, or cut anywhere** (up to
  three of those at once);
* the same turns **malformed and hostile**: a node anywhere replaced by a
  JSON value of another shape, text too long (1 MB), a list nested 3,000
  deep, a cycle, a mapping or an object whose every read raises, another
  provider's turn.

What a stream cannot see is stated, not hidden: Chat, Anthropic and Bedrock
deltas carry no sequence number, so a delta repeated or two deltas of one
call swapped are taken as they come (the oracle then asks that a runnable
call's arguments be exactly the fragments received, in order, rather than
the model's).  Everything else — a stop before its deltas, a block started
twice, an event after the end, another response's event, a cut — leaves no
call runnable that the model did not send whole.

Each property runs a few seconds under the ``ci`` profile (100 examples);
``HYPOTHESIS_PROFILE=long`` runs 5,000.
"""

from __future__ import annotations

import itertools
import json
import tracemalloc
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pytest
from anthropic.types import Message, RawMessageStreamEvent
from google.genai import types as genai
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from tool_call_closure import ToolCallClosure, UsageError
from tool_call_closure import providers as registry
from tool_call_closure.providers import Ingested, ToolCall, anthropic, bedrock, gemini, openai_chat
from tool_call_closure.providers import openai_responses as responses

# Every registered provider module: each needs its generators below (a test says which one lacks them).
PROVIDERS = tuple(module.PROVIDER for module in registry.PROVIDERS)
FUZZ = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large], deadline=None)

# --------------------------------------------------------------------------- generated turns

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**60), 2**60),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=12,
)
arguments = st.dictionaries(st.text(max_size=8), json_values, max_size=4)
names = st.from_regex(r"[a-z][a-z0-9_]{0,11}", fullmatch=True)


@dataclass(frozen=True)
class ModelCall:
    id: str | None  # None: a Gemini call sent without an id
    name: str
    arguments: dict[str, Any]

    @property
    def text(self) -> str:
        return json.dumps(self.arguments)


@dataclass(frozen=True)
class ModelTurn:
    """What a model said in one turn: text, then calls; ``tag`` makes its ids (and response id) its own."""

    tag: str
    text: str
    calls: tuple[ModelCall, ...]


@st.composite
def model_turns(draw: st.DrawFn, provider: str, tag: str = "t") -> ModelTurn:
    count = draw(st.integers(0, 4))
    calls = []
    for n in range(count):
        without_id = provider == "gemini" and draw(st.booleans())
        calls.append(ModelCall(None if without_id else f"{tag}_call_{n}", draw(names), draw(arguments)))
    return ModelTurn(tag, draw(st.text(max_size=10)), tuple(calls))


# --------------------------------------------------------------------------- whole turns, in each API's shape


def whole(provider: str, turn: ModelTurn) -> dict[str, Any]:
    """The turn as the API's non-streamed response, a plain dict."""
    calls = turn.calls
    if provider == "openai_chat":
        message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
        if calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.text}} for c in calls
            ]
        choice = {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
        return {
            "id": f"chatcmpl-{turn.tag}",
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": [choice],
        }
    if provider == "openai_responses":
        text = {"type": "output_text", "text": turn.text, "annotations": []}
        output: list[dict[str, Any]] = [
            {"type": "reasoning", "id": f"rs_{turn.tag}", "summary": []},
            {"type": "message", "id": f"msg_{turn.tag}", "role": "assistant", "status": "completed", "content": [text]},
        ]
        output += [
            {"type": "function_call", "id": f"fc_{turn.tag}_{n}", "call_id": c.id, "name": c.name, "arguments": c.text}
            for n, c in enumerate(calls)
        ]
        head = {"id": f"resp_{turn.tag}", "object": "response", "created_at": 1, "model": "m", "status": "completed"}
        return {**head, "output": output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}
    if provider == "anthropic":
        content: list[dict[str, Any]] = [{"type": "thinking", "thinking": "hm", "signature": "c2ln"}]
        content += [{"type": "text", "text": turn.text}] if turn.text else []
        content += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in calls]
        usage = {"input_tokens": 1, "output_tokens": 1}
        return {"id": f"msg_{turn.tag}", "type": "message", "role": "assistant", "model": "m", "content": content,
                "stop_reason": "tool_use" if calls else "end_turn", "stop_sequence": None, "usage": usage}  # fmt: skip
    if provider == "gemini":
        parts: list[dict[str, Any]] = [{"text": turn.text}] if turn.text else []
        for c in calls:
            function_call: dict[str, Any] = {"name": c.name, "args": c.arguments}
            if c.id is not None:
                function_call["id"] = c.id
            parts.append({"function_call": function_call})
        candidate = {"content": {"role": "model", "parts": parts}, "finish_reason": "STOP"}
        return {"response_id": f"resp-{turn.tag}", "candidates": [candidate]}
    blocks: list[dict[str, Any]] = [{"text": turn.text}] if turn.text else []
    blocks += [{"toolUse": {"toolUseId": c.id, "name": c.name, "input": c.arguments}} for c in calls]
    return {"output": {"message": {"role": "assistant", "content": blocks}}, "stopReason": "tool_use"}


SDK_MODELS: dict[str, Callable[[dict[str, Any]], object]] = {
    "openai_chat": ChatCompletion.model_validate,
    "openai_responses": Response.model_validate,
    "anthropic": Message.model_validate,
    "gemini": genai.GenerateContentResponse.model_validate,
    "bedrock": lambda value: value,  # boto3 gives dicts
}
INGEST = {
    "openai_chat": openai_chat.ingest,
    "openai_responses": responses.ingest,
    "anthropic": anthropic.ingest,
    "gemini": gemini.ingest,
    "bedrock": bedrock.ingest,
}


# --------------------------------------------------------------------------- streams, in each API's events


@dataclass(frozen=True)
class Tag:
    """What one generated event is: its turn, the call it belongs to, and its role in the stream."""

    turn: str
    call: int | None = None  # the index of the call in the turn
    kind: str = "struct"  # "delta" (carries argument text), "struct" or "end" (the end of the turn)
    fragment: str = ""  # a delta's argument text
    number: int = -1  # a delta's position among its call's deltas
    total: int = 0  # how many deltas its call was split into


Events = list[tuple[Any, Tag]]


def _split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({min(max(c, 0), len(text)) for c in cuts} | {0, len(text)})
    pieces = [text[a:b] for a, b in itertools.pairwise(points)]
    return pieces or [""]


def stream_events(provider: str, turn: ModelTurn, cuts: list[int]) -> Events:
    """The turn as the API streams it; ``cuts`` says where the argument texts are split."""
    t = turn.tag
    out: Events = []

    def deltas(n: int, call: ModelCall, make: Callable[[str], Any]) -> None:
        pieces = _split(call.text, cuts)
        for number, piece in enumerate(pieces):
            out.append((make(piece), Tag(t, n, "delta", piece, number, len(pieces))))

    if provider == "openai_chat":

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            choice = {"index": 0, "delta": delta, "finish_reason": finish}
            return {"id": f"chatcmpl-{t}", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [choice]}  # fmt: skip

        out.append((chunk({"role": "assistant", "content": turn.text}), Tag(t)))
        for n, call in enumerate(turn.calls):
            pieces = _split(call.text, cuts)
            first = {
                "index": n,
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": pieces[0]},
            }
            out.append((chunk({"tool_calls": [first]}), Tag(t, n, "delta", pieces[0], 0, len(pieces))))
            for number, piece in enumerate(pieces[1:], start=1):
                fragment = {"index": n, "function": {"arguments": piece}}
                out.append((chunk({"tool_calls": [fragment]}), Tag(t, n, "delta", piece, number, len(pieces))))
        out.append((chunk({}, "tool_calls" if turn.calls else "stop"), Tag(t, kind="end")))
    elif provider == "openai_responses":
        response = {"id": f"resp_{t}", "object": "response", "created_at": 1, "model": "m", "output": [],
                    "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}  # fmt: skip
        out.append(({"type": "response.created", "response": {**response, "status": "in_progress"}}, Tag(t)))
        for n, call in enumerate(turn.calls):
            item = {"type": "function_call", "id": f"fc_{t}_{n}", "call_id": call.id, "name": call.name,
                    "arguments": "", "status": "in_progress"}  # fmt: skip
            out.append(({"type": "response.output_item.added", "output_index": n, "item": item}, Tag(t, n)))
            deltas(n, call, lambda piece, n=n: {"type": "response.function_call_arguments.delta",
                                                "item_id": f"fc_{t}_{n}", "output_index": n, "delta": piece})  # fmt: skip
            done = {**item, "arguments": call.text, "status": "completed"}
            out.append(({"type": "response.output_item.done", "output_index": n, "item": done}, Tag(t, n)))
        out.append(
            ({"type": "response.completed", "response": {**response, "status": "completed"}}, Tag(t, kind="end"))
        )
        out = [({**event, "sequence_number": number}, tag) for number, (event, tag) in enumerate(out)]
    elif provider == "anthropic":
        message = {"id": f"msg_{t}", "type": "message", "role": "assistant", "model": "m", "content": [],
                   "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}  # fmt: skip
        out.append(({"type": "message_start", "message": message}, Tag(t)))
        out.append(({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}, Tag(t)))
        text_delta = {"type": "text_delta", "text": turn.text}
        out.append(({"type": "content_block_delta", "index": 0, "delta": text_delta}, Tag(t)))
        out.append(({"type": "content_block_stop", "index": 0}, Tag(t)))
        for n, call in enumerate(turn.calls, start=1):
            block = {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
            out.append(({"type": "content_block_start", "index": n, "content_block": block}, Tag(t, n - 1)))
            deltas(n - 1, call, lambda piece, n=n: {"type": "content_block_delta", "index": n,
                                                    "delta": {"type": "input_json_delta", "partial_json": piece}})  # fmt: skip
            out.append(({"type": "content_block_stop", "index": n}, Tag(t, n - 1)))
        stop = {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None}, "usage": {"output_tokens": 1}}  # fmt: skip
        out += [(stop, Tag(t, kind="end")), ({"type": "message_stop"}, Tag(t, kind="end"))]
    elif provider == "gemini":

        def gchunk(part: dict[str, Any], finish: str | None) -> dict[str, Any]:
            candidate = {"content": {"role": "model", "parts": [part]}, "finish_reason": finish}
            return {"response_id": f"resp-{t}", "candidates": [candidate]}

        parts: list[tuple[dict[str, Any], int | None]] = [({"text": turn.text or "ok"}, None)]
        for n, call in enumerate(turn.calls):
            function_call: dict[str, Any] = {"name": call.name, "args": call.arguments}
            if call.id is not None:
                function_call["id"] = call.id
            parts.append(({"function_call": function_call}, n))
        for position, (part, n) in enumerate(parts):
            last = position == len(parts) - 1
            out.append((gchunk(part, "STOP" if last else None), Tag(t, n, "end" if last else "struct")))
    else:
        out.append(({"messageStart": {"role": "assistant"}}, Tag(t)))
        out.append(({"contentBlockDelta": {"delta": {"text": turn.text or "ok"}, "contentBlockIndex": 0}}, Tag(t)))
        out.append(({"contentBlockStop": {"contentBlockIndex": 0}}, Tag(t)))
        for n, call in enumerate(turn.calls, start=1):
            start = {"start": {"toolUse": {"toolUseId": call.id, "name": call.name}}, "contentBlockIndex": n}
            out.append(({"contentBlockStart": start}, Tag(t, n - 1)))
            deltas(n - 1, call, lambda piece, n=n: {"contentBlockDelta": {"delta": {"toolUse": {"input": piece}}, "contentBlockIndex": n}})  # fmt: skip
            out.append(({"contentBlockStop": {"contentBlockIndex": n}}, Tag(t, n - 1)))
        out.append(({"messageStop": {"stopReason": "tool_use"}}, Tag(t, kind="end")))
        out.append(({"metadata": {"usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}}}, Tag(t)))
    return out


STREAM_MODELS: dict[str, Callable[[Any], Any]] = {
    "openai_chat": ChatCompletionChunk.model_validate,
    "openai_responses": TypeAdapter(ResponseStreamEvent).validate_python,
    "anthropic": TypeAdapter(RawMessageStreamEvent).validate_python,
    "gemini": genai.GenerateContentResponse.model_validate,
    "bedrock": lambda event: event,
}
STREAMS: dict[str, Callable[[], Any]] = {
    "openai_chat": openai_chat.ChatStream,
    "openai_responses": responses.ResponsesStream,
    "anthropic": anthropic.AnthropicStream,
    "gemini": gemini.GeminiStream,
    "bedrock": bedrock.BedrockStream,
}


@st.composite
def perturbed(draw: st.DrawFn, provider: str) -> tuple[dict[str, ModelTurn], Events, list[str], bool]:
    """The turns (``"t"``, and one per interleaving), the events perturbed, what was done, and whether the events
    are SDK models."""
    turns = {"t": draw(model_turns(provider))}
    cuts = draw(st.lists(st.integers(0, 40), max_size=4))
    events = stream_events(provider, turns["t"], cuts)
    done: list[str] = []
    for _ in range(draw(st.integers(0, 3))):
        action = draw(st.sampled_from(["reorder", "duplicate", "interleave", "cut"]))
        if action == "interleave":
            tag = f"o{len(turns)}"
            turns[tag] = draw(model_turns(provider, tag=tag))
            theirs = stream_events(provider, turns[tag], cuts)
            merged: Events = []
            mine, yours = list(events), list(theirs)
            while mine or yours:
                take_mine = bool(mine) and (not yours or draw(st.booleans()))
                merged.append((mine if take_mine else yours).pop(0))
            events = merged
        elif action == "cut":
            events = events[: draw(st.integers(0, len(events)))]
        elif events:
            source = draw(st.integers(0, len(events) - 1))
            target = draw(st.integers(0, len(events)))
            event = events[source] if action == "duplicate" else events.pop(source)
            events.insert(min(target, len(events)), event)
        done.append(action)
    return turns, events, done, draw(st.booleans()) and provider != "bedrock"


# --------------------------------------------------------------------------- the invariant


def same_json(a: Any, b: Any) -> bool:
    """Equal as JSON values: a number written from a float (``1e16`` is written ``10000000000000000``, as
    ``JSON.stringify`` does) parses back as an int; JSON has one number type, so numbers compare as doubles."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[key], b[key]) for key in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    numbers = (int, float)
    if type(a) in numbers and type(b) in numbers and float in (type(a), type(b)):
        return float(a) == float(b)
    return type(a) is type(b) and a == b


def check_clean(ingested: object) -> Ingested:
    """A clean result: an Ingested whose calls have text ids (no two alike) and whose runnable arguments parse."""
    assert isinstance(ingested, Ingested), type(ingested)
    ids = [call.id for call in ingested.calls]
    assert len(set(ids)) == len(ids)
    for call in ingested.calls:
        assert isinstance(call, ToolCall)
        assert type(call.id) is str
        assert call.id
        assert type(call.name) is str
        assert type(call.arguments_json) is str
        if call.runnable:
            expected = json.loads(call.arguments_json) if call.arguments_json.strip() else {}
            assert same_json(call.arguments, expected), call
        else:
            assert call.arguments is None
            assert type(call.problem) is str
            assert call.problem
    return ingested


def check_exact(ingested: Ingested, turn: ModelTurn) -> None:
    """The calls of an unperturbed turn: exactly the model's, all runnable, accepted by ``begin``."""
    assert [(c.name, c.arguments) for c in ingested.calls] == [(m.name, m.arguments) for m in turn.calls]
    assert all(c.runnable for c in ingested.calls)
    assert [c.id for c in ingested.calls if not gemini.is_synthetic_id(c.id)] == [m.id for m in turn.calls if m.id]
    ToolCallClosure().begin(ingested.calls)


def _received(events: Events, taken: list[bool], tag: str) -> dict[int, list[Tag]]:
    """The deltas of each call of turn ``tag`` that the stream took, in the order it took them."""
    deltas: dict[int, list[Tag]] = {}
    for (_, event_tag), took in zip(events, taken, strict=True):
        if took and event_tag.turn == tag and event_tag.kind == "delta" and event_tag.call is not None:
            deltas.setdefault(event_tag.call, []).append(event_tag)
    return deltas


def owner(events: Events, taken: list[bool]) -> str | None:
    """The turn whose event the stream took first: the response it accumulates."""
    return next((tag.turn for (_, tag), took in zip(events, taken, strict=True) if took), None)


# Where every chunk or event names its response (or a response event does), a stream never mixes two
# responses' calls; Bedrock's events name nothing, so there each call is only checked against its own turn.
NAMED = ("openai_chat", "openai_responses", "anthropic", "gemini")


def check_stream(
    provider: str, ingested: Ingested, turns: dict[str, ModelTurn], events: Events, taken: list[bool]
) -> None:
    """Every runnable call is one a model sent: its arguments exactly the model's, or — where the protocol
    cannot see a repeated or swapped delta — exactly the fragments received, in order."""
    check_clean(ingested)
    first = owner(events, taken)
    sent = {m.id: (tag, n, m) for tag, turn in turns.items() for n, m in enumerate(turn.calls) if m.id is not None}
    for call in ingested.runnable:
        if provider == "gemini" and gemini.is_synthetic_id(call.id):
            parts = {(tag.turn, tag.call) for (_, tag), took in zip(events, taken, strict=True) if took}
            assert any(  # whole parts: a call the model sent (one a repeated chunk carried again)
                (first, n) in parts and (m.name, m.arguments) == (call.name, call.arguments)
                for n, m in enumerate(turns[first or "t"].calls)
            ), call
            continue
        assert call.id in sent, call
        tag, n, model = sent[call.id]
        if provider in NAMED:
            assert tag == first, (call, first)  # never a call of another response
        assert call.name == model.name
        received = _received(events, taken, tag).get(n, [])
        intact = bool(received) and [t.number for t in received] == list(range(received[0].total))
        if provider in ("openai_responses", "gemini") or intact:
            assert same_json(call.arguments, model.arguments), (call, model)
        else:  # a repeated or swapped delta, which these protocols cannot see: taken as it came
            assert call.arguments_json == "".join(t.fragment for t in received), (call, received)


def feed(provider: str, events: Events, sdk: bool) -> tuple[Any, list[bool]]:
    """Feed every event; an ``add`` may raise UsageError only, and then changes nothing."""
    stream = STREAMS[provider]()
    convert = STREAM_MODELS[provider] if sdk else (lambda event: event)
    taken: list[bool] = []
    for event, _ in events:
        before = stream.finish(unfinished="run_complete")
        try:
            stream.add(convert(event))
        except UsageError:
            assert stream.finish(unfinished="run_complete") == before  # refused: nothing of it taken
            taken.append(False)
        else:
            taken.append(True)
    return stream, taken


def ended(events: Events, taken: list[bool], turn: str | None) -> bool:
    """Whether the stream took an end of turn: of ``turn``, or (``None``) of any turn."""
    return any(
        took and tag.kind == "end" and turn in (None, tag.turn) for (_, tag), took in zip(events, taken, strict=True)
    )


NEXT: dict[str, Callable[[Any, Any], Any]] = {
    "openai_chat": lambda turn, closure_snapshot: openai_chat.next_messages(
        turn, closure_snapshot[0].to_openai_chat_completions(closure_snapshot[1])
    ),
    "openai_responses": lambda turn, cs: responses.next_input(turn, cs[0].to_openai_responses(cs[1])),
    "anthropic": lambda turn, cs: anthropic.next_messages(turn, cs[0].to_anthropic_tool_results(cs[1]), then="go"),
    "gemini": lambda turn, cs: gemini.next_contents(turn, cs[0].to_gemini_function_responses(cs[1])),
    "bedrock": lambda turn, cs: bedrock.next_messages(turn, cs[0].to_bedrock_tool_results(cs[1]), then="go"),
}
CHECKS: dict[str, Callable[[Any], None]] = {
    "openai_chat": openai_chat.check_messages,
    "openai_responses": responses.check_input,
    "anthropic": anthropic.check_messages,
    "gemini": gemini.check_contents,
    "bedrock": bedrock.check_messages,
}


def closed(calls: tuple[ToolCall, ...]) -> tuple[ToolCallClosure, Any]:
    """Every call closed (cancelled): what the next request sends back for them."""
    closure = ToolCallClosure()
    return closure, closure.close(closure.begin(calls).handle)


def answerable(calls: tuple[ToolCall, ...]) -> tuple[ToolCall, ...]:
    """The calls ``begin`` takes: a name, and an id and a name within its limits (the closure's own rules)."""
    return tuple(
        c
        for c in calls
        if c.name
        and len(c.id.encode("utf-8", "surrogatepass")) <= 512
        and len(c.name.encode("utf-8", "surrogatepass")) <= 512
    )


# --------------------------------------------------------------------------- properties: valid turns


@pytest.mark.parametrize("provider", PROVIDERS)
@FUZZ
@given(data=st.data())
def test_a_whole_turn_is_ingested_exactly_and_its_next_request_passes_the_preflight(
    provider: str, data: st.DataObject
) -> None:
    turn = data.draw(model_turns(provider))
    value = whole(provider, turn)
    for shape in (value, SDK_MODELS[provider](value)):
        ingested = check_clean(INGEST[provider](shape))
        check_exact(ingested, turn)
        request = NEXT[provider](shape, closed(ingested.calls))
        CHECKS[provider](request)


@pytest.mark.parametrize("provider", PROVIDERS)
@FUZZ
@given(data=st.data())
def test_a_whole_stream_gives_the_calls_exactly_and_echoes_the_turn(provider: str, data: st.DataObject) -> None:
    turn = data.draw(model_turns(provider))
    events = stream_events(provider, turn, data.draw(st.lists(st.integers(0, 40), max_size=4)))
    stream, taken = feed(provider, events, data.draw(st.booleans()) and provider != "bedrock")
    assert all(taken)
    ingested = stream.finish()
    assert ingested.unfinished is None
    check_exact(check_clean(ingested), turn)
    assert stream.finish() == ingested  # finish changes nothing
    NEXT[provider](stream, closed(ingested.calls))


# --------------------------------------------------------------------------- properties: perturbed streams


@pytest.mark.parametrize("provider", PROVIDERS)
@FUZZ
@given(data=st.data())
def test_a_perturbed_stream_never_makes_a_call_the_model_did_not_send(provider: str, data: st.DataObject) -> None:
    turns, events, done, sdk = data.draw(perturbed(provider))
    stream, taken = feed(provider, events, sdk)
    default = stream.finish()
    opted = stream.finish(unfinished="run_complete")
    for ingested in (default, opted):
        check_stream(provider, ingested, turns, events, taken)
    if not ended(events, taken, owner(events, taken) if provider in NAMED else None):
        assert default.unfinished is not None
        assert default.runnable == ()  # the default never runs a call of a turn that did not finish
    if not done:
        check_exact(default, turns["t"])
    _usage_or(lambda: NEXT[provider](stream, closed(default.calls)))  # built and checked, or refused


# --------------------------------------------------------------------------- hostile and malformed values


class Raising:
    """An object every attribute read of which raises (a property of an SDK model that fails)."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"no {name}")


class RaisingMapping(Mapping[str, Any]):
    """A mapping every read of which raises."""

    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("getitem")

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("iter")

    def __len__(self) -> int:
        return 1


class RaisingList(list[Any]):
    """A list whose iteration raises."""

    def __iter__(self) -> Iterator[Any]:
        raise RuntimeError("iter")


class Text(str):
    """A str subclass whose methods lie."""

    def strip(self, chars: str | None = None) -> str:
        raise RuntimeError("strip")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("eq")

    __hash__ = str.__hash__


def _deep(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


def _cycle() -> Any:
    value: dict[str, Any] = {"a": 1}
    value["self"] = value
    return value


HOSTILE: dict[str, Callable[[], Any]] = {
    "raising object": Raising,
    "raising mapping": RaisingMapping,
    "raising list": lambda: RaisingList([1]),
    "lying str": lambda: Text("x"),
    "deep list": lambda: _deep(3000),
    "cycle": _cycle,
    "huge text": lambda: "x" * 1_000_000,
    "huge deep text": lambda: "[" * 100_000 + "]" * 100_000,
    "another provider's turn": lambda: whole("anthropic", ModelTurn("h", "hi", (ModelCall("x", "f", {}),))),
    "bool": lambda: True,
    "bytes": lambda: b"{}",
    "tuple": lambda: ("a", 1),
}
replacements = st.one_of(
    json_values.map(lambda value: ("json", value)),
    st.sampled_from(sorted(HOSTILE)).map(lambda name: ("hostile", name)),
)


def _paths(value: Any) -> list[tuple[Any, ...]]:
    """Every node's path in a generated (plain, acyclic) value, the root's ``()`` first."""
    found: list[tuple[Any, ...]] = []
    stack: list[tuple[tuple[Any, ...], Any]] = [((), value)]
    while stack:
        path, node = stack.pop()
        found.append(path)
        if type(node) is dict:
            stack += [((*path, key), inner) for key, inner in node.items()]
        elif type(node) is list:
            stack += [((*path, index), inner) for index, inner in enumerate(node)]
    return found


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    """``value`` with the node at ``path`` replaced (copies along the path); unchanged where the path is gone."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    if type(value) is dict and head in value:
        return {**value, head: _replace(value[head], rest, new)}
    if type(value) is list and type(head) is int and head < len(value):
        copy = list(value)
        copy[head] = _replace(value[head], rest, new)
        return copy
    return value


Mutation = tuple[tuple[Any, ...], str, Any]  # (path, "json" or "hostile", the JSON value or the hostile's name)


@st.composite
def mutations(draw: st.DrawFn, value: Any) -> list[Mutation]:
    """Up to three nodes of ``value`` to replace, each by a JSON value of any shape or a hostile value (by name:
    the values are built at run time, so Hypothesis never prints a 3,000-deep list)."""
    paths = _paths(value)
    return [(draw(st.sampled_from(paths)), *draw(replacements)) for _ in range(draw(st.integers(1, 3)))]


def mutated(value: Any, changes: list[Mutation]) -> Any:
    for path, kind, what in changes:
        value = _replace(value, path, what if kind == "json" else HOSTILE[what]())
    return value


def _usage_or(function: Callable[[], Any]) -> Any:
    """The result of ``function()``, or ``None`` when it raised UsageError; any other exception fails the test."""
    try:
        return function()
    except UsageError:
        return None


@pytest.mark.parametrize("provider", PROVIDERS)
@FUZZ
@given(data=st.data())
def test_ingest_of_a_malformed_or_hostile_turn_is_clean_or_a_usage_error(provider: str, data: st.DataObject) -> None:
    turn = data.draw(model_turns(provider))
    original = whole(provider, turn)
    value = mutated(original, data.draw(mutations(original)))
    ingested = _usage_or(lambda: INGEST[provider](value))
    if ingested is not None:
        check_clean(ingested)
        _usage_or(lambda: NEXT[provider](value, closed(answerable(ingested.calls))))


@pytest.mark.parametrize("provider", PROVIDERS)
@FUZZ
@given(data=st.data())
def test_a_stream_of_malformed_or_hostile_events_is_clean_or_a_usage_error(provider: str, data: st.DataObject) -> None:
    turn = data.draw(model_turns(provider))
    events = stream_events(provider, turn, data.draw(st.lists(st.integers(0, 40), max_size=3)))
    position = data.draw(st.integers(0, len(events) - 1))
    event, tag = events[position]
    events[position] = (mutated(event, data.draw(mutations(event))), tag)
    stream, _ = feed(provider, events, sdk=False)
    for policy in ("answer", "run_complete"):
        check_clean(stream.finish(unfinished=policy))
    _usage_or(lambda: NEXT[provider](stream, closed(answerable(stream.finish().calls))))


@pytest.mark.parametrize("provider", PROVIDERS)
@FUZZ
@given(data=st.data())
def test_a_preflight_of_a_malformed_or_hostile_transcript_passes_or_raises_usage_error(
    provider: str, data: st.DataObject
) -> None:
    turn = data.draw(model_turns(provider))
    ingested = INGEST[provider](whole(provider, turn))
    request = NEXT[provider](whole(provider, turn), closed(ingested.calls))
    plain = json.loads(json.dumps(request, default=str))
    transcript = mutated(plain, data.draw(mutations(plain)))
    _usage_or(lambda: CHECKS[provider](transcript))


# --------------------------------------------------------------------------- bounded work and memory


def _peak(function: Callable[[], Any]) -> tuple[Any, int]:
    """``function()`` and the peak of the memory it allocated (tracemalloc: counted, not timed)."""
    tracemalloc.start()
    try:
        result = function()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _deep_list(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


def _shared(levels: int) -> Any:
    value: Any = [1]
    for _ in range(levels):
        value = [value, value]
    return value


def test_memory_is_bounded_by_the_input_whatever_its_shape() -> None:
    """Large, deep and self-sharing inputs: each reader's peak memory is a small multiple of the input's size
    (or a constant: a too-deep value is refused at the first level past the limit, without reading the rest)."""
    megabyte = "[" + ",".join(["1"] * 500_000) + "]"
    ingested, peak = _peak(
        lambda: openai_chat.ingest([{"id": "a", "type": "function", "function": {"name": "f", "arguments": megabyte}}])
    )
    assert ingested.calls[0].runnable
    assert peak < 8 * len(megabyte)  # the parsed list: 8 bytes a member
    deep_text = "[" * 100_000 + "]" * 100_000
    ingested, peak = _peak(
        lambda: responses.ingest([{"type": "function_call", "call_id": "a", "name": "f", "arguments": deep_text}])
    )
    assert "nest deeper" in str(ingested.calls[0].problem)
    assert peak < 64 * 1024
    for value in (_deep_list(100_000), _shared(40)):  # 100,000 deep; 2**40 leaves when written
        for reader, call in (
            (anthropic.ingest, [{"type": "tool_use", "id": "a", "name": "f", "input": {"x": value}}]),
            (gemini.ingest, [{"function_call": {"id": "a", "name": "f", "args": {"x": value}}}]),
            (bedrock.ingest, [{"toolUse": {"toolUseId": "a", "name": "f", "input": {"x": value}}}]),
        ):
            ingested, peak = _peak(lambda reader=reader, call=call: reader(call))
            assert ingested.calls[0].problem is not None
            assert peak < 64 * 1024
    stream = openai_chat.ChatStream()

    def fragments() -> Ingested:
        stream.add(_chat_chunk({"index": 0, "id": "a", "function": {"name": "f", "arguments": "["}}))
        for _ in range(20_000):
            stream.add(_chat_chunk({"index": 0, "function": {"arguments": "1,"}}))
        stream.add(_chat_chunk({"index": 0, "function": {"arguments": "1]"}}, finish="tool_calls"))
        return stream.finish()

    ingested, peak = _peak(fragments)
    assert ingested.calls[0].arguments == [1] * 20_001
    assert peak < 100 * 40_000  # the fragments kept, then joined and parsed once


def _chat_chunk(fragment: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [fragment]}, "finish_reason": finish}]}


class _ItemWhoseTypeRaises:
    """A Responses item whose id reads and whose type raises (a property that fails)."""

    id = "fc_1"

    @property
    def type(self) -> str:
        raise RuntimeError("type")


_OK_TEXT = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok"}}
# (a valid prefix, an event refused with UsageError, an event that must then be taken as if the refused one never came)
REFUSED: dict[str, tuple[list[Any], Any, Any]] = {
    "openai_chat": (
        [_chat_chunk({"index": 0, "id": "a", "function": {"name": "f", "arguments": "{}"}})],
        _chat_chunk({"index": [0], "function": {"arguments": "x"}}),
        _chat_chunk({"index": 0, "function": {"arguments": ""}}, finish="tool_calls"),
    ),
    "openai_responses": (
        [{"type": "response.created", "sequence_number": 2, "response": {"id": "resp_1"}}],
        {"type": "response.output_item.added", "sequence_number": 3, "output_index": 0, "item": _ItemWhoseTypeRaises()},
        {"type": "response.completed", "sequence_number": 3, "response": {"id": "resp_1", "status": "completed"}},
    ),
    "anthropic": (
        [
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}},
        ],
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": {"not": "text"}}},
        {"type": "message_stop"},
    ),
    "gemini": (
        [],
        {"response_id": "r1", "candidates": [{"content": {"role": "model", "parts": [RaisingMapping()]}}]},
        {
            "response_id": "r2",
            "candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]}, "finish_reason": "STOP"}],
        },
    ),
    "bedrock": (
        [{"messageStart": {"role": "assistant"}}],
        {"contentBlockDelta": {"delta": {"text": {"not": "text"}}, "contentBlockIndex": 0}},
        {"messageStop": {"stopReason": "end_turn"}},
    ),
}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_refused_event_changes_nothing(provider: str) -> None:
    """``add`` reads the whole event before it takes any of it: a refused event leaves no trace (no block opened,
    no sequence number or response id taken, no event counted after the end), so the next event is taken as if
    the refused one never came."""
    prefix, refused, following = REFUSED[provider]
    stream = STREAMS[provider]()
    for event in prefix:
        stream.add(event)
    before = stream.finish(unfinished="run_complete")
    with pytest.raises(UsageError):
        stream.add(refused)
    assert stream.finish(unfinished="run_complete") == before
    stream.add(following)  # the events out of order or of another response only if the refused one was taken
    assert stream.finish(unfinished="run_complete").unfinished is None or provider == "gemini"
    if provider == "gemini":  # r1's chunk was refused: r2 is the stream's response, and its turn finished
        assert stream.finish().unfinished is None


FOREIGN = [(owner, reader) for owner in PROVIDERS for reader in PROVIDERS if owner != reader]


@pytest.mark.parametrize(("owner", "reader"), FOREIGN, ids=[f"{o}-to-{r}" for o, r in FOREIGN])
def test_another_providers_turn_and_events_are_refused(owner: str, reader: str) -> None:
    turn = ModelTurn("x", "hi", (ModelCall("x_1", "weather", {"city": "Oslo"}),))
    with pytest.raises(UsageError):
        INGEST[reader](whole(owner, turn))
    stream, taken = feed(reader, stream_events(owner, turn, []), sdk=False)
    assert not all(taken)
    assert stream.finish(unfinished="run_complete").runnable == ()


def test_every_registered_provider_has_its_generators_here() -> None:
    # The properties above are stated once for every provider; a provider added to the registry must bring the
    # shapes of its turns and events, or it would silently go untested.
    tables = {"SDK_MODELS": SDK_MODELS, "INGEST": INGEST, "STREAM_MODELS": STREAM_MODELS, "STREAMS": STREAMS}
    tables |= {"NEXT": NEXT, "CHECKS": CHECKS, "REFUSED": REFUSED}
    for name, table in tables.items():
        assert set(table) == set(PROVIDERS), f"tests/test_provider_fuzz.py {name}: add {set(PROVIDERS) - set(table)}"
