"""Streaming accumulators: provider chunks and events become complete calls, incomplete ones carry a problem.

The chunks are built with the SDKs' own stream types where the SDK has them
(``ChatCompletionChunk``, ``RawMessageStreamEvent`` via ``TypeAdapter``), and
as the dicts the wire and boto3 give otherwise.  The quirks are those of
providers.md §2 (openai-python#3201, smolagents#1569, Gemini's OpenAI endpoint).
"""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import RawMessageStreamEvent
from openai.types.chat import ChatCompletionChunk
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter

from tool_call_closure.providers import UnfinishedPolicy, anthropic, bedrock, gemini, openai_chat, openai_responses


def _chunk(*tool_calls: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": {"tool_calls": list(tool_calls)}, "finish_reason": finish}],
    }


def _fragment(index: int | None, call_id: str | None = None, name: str | None = None, args: str = "") -> dict[str, Any]:
    fragment: dict[str, Any] = {"function": {"arguments": args}}
    if index is not None:
        fragment["index"] = index
    if call_id is not None:
        fragment["id"], fragment["type"] = call_id, "function"
    if name is not None:
        fragment["function"]["name"] = name
    return fragment


def _feed_chat(
    chunks: list[dict[str, Any]], *, sdk: bool, unfinished: UnfinishedPolicy = "answer"
) -> list[tuple[str, str, Any, str | None]]:
    stream = openai_chat.ChatStream()
    for chunk in chunks:
        assert stream.add(ChatCompletionChunk.model_validate(chunk) if sdk else chunk) == ()
    return [(c.id, c.name, c.arguments, c.problem) for c in stream.finish(unfinished=unfinished).calls]


@pytest.mark.parametrize("sdk", [False, True], ids=["dict", "sdk"])
def test_chat_deltas_grouped_by_index(sdk: bool) -> None:
    chunks = [
        _chunk(_fragment(0, "call_a", "weather"), _fragment(1, "call_b", "time")),
        _chunk(_fragment(0, args='{"city":'), _fragment(1, args="{}")),
        _chunk(_fragment(0, args='"Oslo"}')),
        _chunk(finish="tool_calls"),
    ]
    assert _feed_chat(chunks, sdk=sdk) == [
        ("call_a", "weather", {"city": "Oslo"}, None),
        ("call_b", "time", {}, None),
    ]


@pytest.mark.parametrize("sdk", [False, True], ids=["dict", "sdk"])
def test_chat_duplicate_indexes_in_the_first_chunk(sdk: bool) -> None:
    """openai-python#3201: two calls share index 0 in the first chunk; each id starts its own call."""
    chunks = [
        _chunk(_fragment(0, "call_a", "weather", '{"city":"Oslo"}'), _fragment(0, "call_b", "time", "{}")),
        _chunk(finish="tool_calls"),
    ]
    assert _feed_chat(chunks, sdk=sdk) == [
        ("call_a", "weather", {"city": "Oslo"}, None),
        ("call_b", "time", {}, None),
    ]


def test_chat_every_parallel_call_at_index_zero() -> None:
    """smolagents#1569: every call at index 0, each announced by its id, then continued without one."""
    chunks = [
        _chunk(_fragment(0, "call_a", "weather")),
        _chunk(_fragment(0, args='{"city":"Oslo"}')),
        _chunk(_fragment(0, "call_b", "time")),
        _chunk(_fragment(0, args="{}")),
        _chunk(finish="tool_calls"),
    ]
    assert _feed_chat(chunks, sdk=False) == [
        ("call_a", "weather", {"city": "Oslo"}, None),
        ("call_b", "time", {}, None),
    ]


def test_chat_no_index_at_all() -> None:
    """Gemini's OpenAI-compatible endpoint: calls in separate chunks with no index."""
    chunks = [
        _chunk(_fragment(None, "call_a", "weather", '{"city":"Oslo"}')),
        _chunk(_fragment(None, "call_b", "time", "{}")),
        _chunk(finish="tool_calls"),
    ]
    assert _feed_chat(chunks, sdk=False) == [
        ("call_a", "weather", {"city": "Oslo"}, None),
        ("call_b", "time", {}, None),
    ]


def test_chat_repeated_id_and_name_continue_the_same_call() -> None:
    chunks = [
        _chunk(_fragment(0, "call_a", "weather", '{"city":')),
        _chunk(_fragment(0, "call_a", "weather", '"Oslo"}')),
        _chunk(finish="tool_calls"),
    ]
    assert _feed_chat(chunks, sdk=False) == [("call_a", "weather", {"city": "Oslo"}, None)]


def test_chat_length_truncates_the_last_call_and_a_cut_stream_too() -> None:
    head = [_chunk(_fragment(0, "call_a", "weather", "{}")), _chunk(_fragment(1, "call_b", "time", '{"tz"'))]
    truncated = _feed_chat([*head, _chunk(finish="length")], sdk=False)
    assert truncated[0] == ("call_a", "weather", {}, None)
    assert truncated[1][2] is None
    assert "length" in str(truncated[1][3])
    cut = _feed_chat(head, sdk=False)  # no finish_reason: the turn never finished, so no call runs
    assert [(c[0], c[2]) for c in cut] == [("call_a", None), ("call_b", None)]
    assert "the stream ended before the turn was finished (no finish_reason)" in str(cut[0][3])
    assert "no finish_reason" in str(cut[1][3])
    opted = _feed_chat(head, sdk=False, unfinished="run_complete")  # the explicit opt-in runs the complete call
    assert opted[0] == ("call_a", "weather", {}, None)
    assert "no finish_reason" in str(opted[1][3])


def _responses_events() -> list[dict[str, Any]]:
    added = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "weather",
        "arguments": "",
        "status": "in_progress",
    }
    done = {**added, "arguments": '{"city":"Oslo"}', "status": "completed"}
    second = {
        "type": "function_call",
        "id": "fc_2",
        "call_id": "call_2",
        "name": "time",
        "arguments": "",
        "status": "in_progress",
    }
    return [
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "sequence_number": 1,
            "item": {"type": "reasoning", "id": "rs_1", "summary": []},
        },
        {"type": "response.output_item.added", "output_index": 1, "sequence_number": 2, "item": added},
        {
            "type": "response.function_call_arguments.delta",
            "item_id": "fc_1",
            "output_index": 1,
            "sequence_number": 3,
            "delta": '{"city":',
        },
        {"type": "response.output_item.added", "output_index": 2, "sequence_number": 4, "item": second},
        {
            "type": "response.function_call_arguments.delta",
            "item_id": "fc_2",
            "output_index": 2,
            "sequence_number": 5,
            "delta": '{"tz":',
        },
        {
            "type": "response.function_call_arguments.delta",
            "item_id": "fc_1",
            "output_index": 1,
            "sequence_number": 6,
            "delta": '"Oslo"}',
        },
        {"type": "response.output_item.done", "output_index": 1, "sequence_number": 7, "item": done},
    ]


@pytest.mark.parametrize("sdk", [False, True], ids=["dict", "sdk"])
def test_responses_deltas_map_through_item_id_to_call_id(sdk: bool) -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
    stream = openai_responses.ResponsesStream()
    completed = [
        call for event in _responses_events() for call in stream.add(adapter.validate_python(event) if sdk else event)
    ]
    assert [(c.id, c.arguments) for c in completed] == [("call_1", {"city": "Oslo"})]
    assert stream.finish().runnable == ()  # no response.completed: the turn never finished, no call runs
    assert stream.finish().unfinished == ("the stream ended before the turn was finished (no response.completed)")
    ingested = stream.finish(unfinished="run_complete")
    assert [c.id for c in ingested.calls] == ["call_1", "call_2"]
    assert ingested.calls[0] is completed[0]
    assert ingested.calls[1].problem is not None
    assert ingested.calls[1].arguments_json == '{"tz":'
    assert [s.type for s in ingested.skipped] == ["reasoning"]


def _anthropic_events(stop: str) -> list[dict[str, Any]]:
    return [
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}},
        },
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": '{"city":'}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": '"Oslo"}'}},
        {"type": "content_block_stop", "index": 1},
        {
            "type": "content_block_start",
            "index": 2,
            "content_block": {"type": "tool_use", "id": "toolu_2", "name": "noargs", "input": {}},
        },
        {"type": "content_block_stop", "index": 2},
        {
            "type": "content_block_start",
            "index": 3,
            "content_block": {"type": "tool_use", "id": "toolu_3", "name": "write", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 3,
            "delta": {"type": "input_json_delta", "partial_json": '{"text": "abc'},
        },
        {"type": "content_block_stop", "index": 3},
        {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 5}},
    ]


@pytest.mark.parametrize("sdk", [False, True], ids=["dict", "sdk"])
def test_anthropic_input_json_deltas_joined_and_parsed_at_stop(sdk: bool) -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(RawMessageStreamEvent)
    stream = anthropic.AnthropicStream()
    completed = [
        c for e in _anthropic_events("max_tokens") for c in stream.add(adapter.validate_python(e) if sdk else e)
    ]
    assert [(c.id, c.arguments, c.problem is None) for c in completed] == [
        ("toolu_1", {"city": "Oslo"}, True),
        ("toolu_2", {}, True),  # no delta at all: {}
        ("toolu_3", None, False),  # max_tokens cut the JSON
    ]
    ingested = stream.finish()
    assert ingested.stop_reason == "max_tokens"
    assert [s.type for s in ingested.skipped] == ["text"]


def test_anthropic_block_never_stopped() -> None:
    stream = anthropic.AnthropicStream()
    for event in _anthropic_events("tool_use")[:4]:
        stream.add(event)
    (call,) = stream.finish().calls
    assert call.id == "toolu_1"
    assert "stream ended" in str(call.problem)


def _bedrock_events() -> list[dict[str, Any]]:
    return [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockDelta": {"delta": {"text": "On it."}, "contentBlockIndex": 0}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"contentBlockStart": {"start": {"toolUse": {"toolUseId": "tu_1", "name": "weather"}}, "contentBlockIndex": 1}},
        {"contentBlockDelta": {"delta": {"toolUse": {"input": '{"city":'}}, "contentBlockIndex": 1}},
        {"contentBlockDelta": {"delta": {"toolUse": {"input": '"Oslo"}'}}, "contentBlockIndex": 1}},
        {"contentBlockStop": {"contentBlockIndex": 1}},
        {"contentBlockStart": {"start": {"toolUse": {"toolUseId": "tu_2", "name": "time"}}, "contentBlockIndex": 2}},
        {"contentBlockDelta": {"delta": {"toolUse": {"input": '{"tz"'}}, "contentBlockIndex": 2}},
        {"messageStop": {"stopReason": "max_tokens"}},
    ]


def test_bedrock_content_block_deltas() -> None:
    stream = bedrock.BedrockStream()
    completed = [c for e in _bedrock_events() for c in stream.add(e)]
    assert [(c.id, c.arguments) for c in completed] == [("tu_1", {"city": "Oslo"})]
    ingested = stream.finish()
    assert [c.id for c in ingested.calls] == ["tu_1", "tu_2"]
    assert "max_tokens" in str(ingested.calls[1].problem)
    assert [s.type for s in ingested.skipped] == ["text"]


def test_gemini_parallel_calls_in_separate_chunks_without_ids() -> None:
    def chunk(*parts: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        candidate = {"content": {"role": "model", "parts": list(parts)}, "finish_reason": finish}
        return {"response_id": "r7", "candidates": [candidate]}

    stream = gemini.GeminiStream()
    first = stream.add(chunk({"text": "ok"}, {"function_call": {"name": "weather", "args": {"city": "Oslo"}}}))
    second = stream.add(chunk({"function_call": {"name": "weather", "args": {"city": "Rome"}}}, finish="STOP"))
    assert [(c.id, c.arguments) for c in first + second] == [
        ("tcc_gemini_r7_0", {"city": "Oslo"}),
        ("tcc_gemini_r7_1", {"city": "Rome"}),
    ]
    assert stream.finish().calls == first + second


def test_gemini_stream_of_sdk_chunks_with_finish_reason() -> None:
    from google.genai import types as genai

    chunks = [
        {
            "response_id": "r8",
            "candidates": [
                {"content": {"role": "model", "parts": [{"function_call": {"id": "g1", "name": "a", "args": {}}}]}}
            ],
        },
        {
            "response_id": "r8",
            "candidates": [
                {"content": {"role": "model", "parts": [{"function_call": {"name": "b"}}]}, "finish_reason": "STOP"}
            ],
        },
    ]
    stream = gemini.GeminiStream()
    completed = [c for chunk in chunks for c in stream.add(genai.GenerateContentResponse.model_validate(chunk))]
    assert [(c.id, c.name, c.arguments) for c in completed] == [("g1", "a", {}), ("tcc_gemini_r8_1", "b", {})]
    assert stream.finish().stop_reason == "STOP"


def test_chat_fragment_without_any_id_is_reported_not_announced() -> None:
    from tool_call_closure import ToolCallClosure

    chunks = [
        _chunk(_fragment(0, args="{}")),
        _chunk(_fragment(1, "call_b", "time", "{}")),
        _chunk(finish="tool_calls"),
    ]
    stream = openai_chat.ChatStream()
    for chunk in chunks:
        stream.add(chunk)
    ingested = stream.finish()
    assert [c.id for c in ingested.calls] == ["call_b"]
    assert [(s.index, s.type) for s in ingested.skipped] == [(0, "call_without_id")]
    assert ToolCallClosure().begin(ingested.calls).generation == 1


# --------------------------------------------------------------------------- another provider's events


def _streams() -> dict[str, list[object]]:
    """A tool-calling stream of each provider, as the SDK's event objects where the SDK has them."""
    from google.genai import types as genai

    responses: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
    events: TypeAdapter[Any] = TypeAdapter(RawMessageStreamEvent)
    gemini_chunk = {
        "candidates": [{"content": {"role": "model", "parts": [{"function_call": {"name": "weather", "args": {}}}]}}]
    }
    return {
        "openai_chat": [
            ChatCompletionChunk.model_validate(_chunk(_fragment(0, "call_1", "weather", '{"city":"Oslo"}'))),
            ChatCompletionChunk.model_validate(_chunk(finish="tool_calls")),
        ],
        "openai_responses": [responses.validate_python(event) for event in _responses_events()],
        "anthropic": [events.validate_python(event) for event in _anthropic_events("tool_use")],
        "gemini": [genai.GenerateContentResponse.model_validate(gemini_chunk), gemini_chunk],
        "bedrock": list(_bedrock_events()),
    }


_STREAMS = {
    "openai_chat": openai_chat.ChatStream,
    "openai_responses": openai_responses.ResponsesStream,
    "anthropic": anthropic.AnthropicStream,
    "gemini": gemini.GeminiStream,
    "bedrock": bedrock.BedrockStream,
}
_STREAM_CASES = [(owner, reader) for owner in _STREAMS for reader in _STREAMS if reader != owner]


@pytest.mark.parametrize(("owner", "reader"), _STREAM_CASES, ids=[f"{o}-to-{r}" for o, r in _STREAM_CASES])
def test_another_providers_stream_is_refused_at_its_first_event(owner: str, reader: str) -> None:
    """An accumulator passes over events it has no use for; another provider's would all be passed over, and the
    stream would finish with no calls. Each is refused at its first event, naming whose event it is."""
    from tool_call_closure import UsageError

    first = _streams()[owner][0]
    stream = _STREAMS[reader]()
    with pytest.raises(UsageError) as raised:
        stream.add(first)
    assert raised.value.code == "provider_value_invalid"
    assert str(raised.value).startswith(f"{_STREAMS[reader].__name__}.add: the event is a {owner} stream event")
    assert stream.finish().calls == ()  # refused: nothing of it taken


@pytest.mark.parametrize("owner", list(_STREAMS))
def test_each_accumulator_still_takes_every_event_of_its_own(owner: str) -> None:
    stream = _STREAMS[owner]()
    for event in _streams()[owner]:
        stream.add(event)
    assert stream.finish().calls


def test_an_event_that_names_no_api_is_passed_over_as_before() -> None:
    """Events that carry nothing to take (a ping, an error, a usage-only chunk) are not another API's: no refusal."""
    for stream, event in (
        (anthropic.AnthropicStream(), {"type": "ping"}),
        (openai_responses.ResponsesStream(), {"type": "error", "message": "m"}),
        (gemini.GeminiStream(), {"usageMetadata": {"totalTokenCount": 3}}),
        (bedrock.BedrockStream(), {"unknownEvent": {}}),
    ):
        assert stream.add(event) == ()
