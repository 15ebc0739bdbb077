"""Issue 18, providers and streams (items 12–17; item 18 is ``test_ingest.py::test_item18_…``).

Each test names its item and fails on the code before the fix: there, the
value raised ``RecursionError``, ``TypeError`` or ``AttributeError``, or a call
the model never sent in full was runnable, or the next request lost part of
the assistant turn, or Bedrock got two user turns in a row.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from anthropic.types import RawMessageStreamEvent
from openai.types.chat import ChatCompletionChunk
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter

from tool_call_closure import Snapshot, ToolCallClosure, UsageError
from tool_call_closure.providers import Ingested, ProviderRuleError, ToolCall, anthropic, bedrock, gemini, openai_chat
from tool_call_closure.providers import openai_responses as responses

DEEP = "[" * 1200 + "]" * 1200  # 2.4 KB of JSON text nested 1,200 deep: json.loads raises RecursionError
FINE = '{"city": "Oslo"}'


def _deep_value(depth: int) -> Any:
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


def _chat_call(call_id: str, arguments: object, name: object = "weather") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _chat_chunk(*fragments: dict[str, Any], finish: str | None = None, chunk_id: str = "chatcmpl-1") -> dict[str, Any]:
    choice = {"index": 0, "delta": {"tool_calls": list(fragments)}, "finish_reason": finish}
    return {"id": chunk_id, "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [choice]}


def _fragment(index: object, call_id: str | None, name: object = None, arguments: object = "") -> dict[str, Any]:
    fragment: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if call_id is not None:
        fragment["id"], fragment["type"] = call_id, "function"
    if name is not None:
        fragment["function"]["name"] = name
    return fragment


def _closed(calls: tuple[ToolCall, ...]) -> tuple[ToolCallClosure, Snapshot]:
    """The calls begun and closed: every one answered (cancelled), as the next request carries them."""
    closure = ToolCallClosure()
    snapshot = closure.close(closure.begin(calls).handle)
    assert isinstance(snapshot, Snapshot)
    return closure, snapshot


def _only_the_deep_call_has_a_problem(ingested: Ingested, deep_id: str) -> None:
    from tool_call_closure.providers.arguments import MAX_ARGUMENT_DEPTH  # (imported here: new in the fix)

    problems = {call.id: call.problem for call in ingested.calls}
    assert problems.pop(deep_id) == f"the arguments nest deeper than the limit of {MAX_ARGUMENT_DEPTH} levels"
    assert set(problems.values()) == {None}  # the rest of the turn is kept, and runnable
    assert ToolCallClosure().begin(ingested.calls).generation == 1


# --------------------------------------------------------------------------- item 12: deep argument JSON


def test_item12_deep_arguments_are_that_calls_problem_in_chat_and_responses_ingest() -> None:
    chat = {"role": "assistant", "content": None, "tool_calls": [_chat_call("a", FINE), _chat_call("b", DEEP)]}
    _only_the_deep_call_has_a_problem(openai_chat.ingest(chat), "b")
    output = [
        {"type": "function_call", "call_id": "a", "name": "weather", "arguments": FINE},
        {"type": "function_call", "call_id": "b", "name": "weather", "arguments": DEEP},
    ]
    _only_the_deep_call_has_a_problem(responses.ingest(output), "b")


def test_item12_deep_arguments_are_that_calls_problem_in_every_stream() -> None:
    chat = openai_chat.ChatStream()
    chat.add(_chat_chunk(_fragment(0, "a", "weather", FINE), _fragment(1, "b", "weather", DEEP), finish="tool_calls"))
    _only_the_deep_call_has_a_problem(chat.finish(), "b")

    events: list[dict[str, Any]] = []
    for index, (call_id, arguments) in enumerate((("a", FINE), ("b", DEEP))):
        block = {"type": "tool_use", "id": call_id, "name": "weather", "input": {}}
        delta = {"type": "input_json_delta", "partial_json": arguments}
        events += [
            {"type": "content_block_start", "index": index, "content_block": block},
            {"type": "content_block_delta", "index": index, "delta": delta},
            {"type": "content_block_stop", "index": index},  # the stop event parses the JSON
        ]
    events.append({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 1}})
    stream = anthropic.AnthropicStream()
    for event in events:
        stream.add(event)
    _only_the_deep_call_has_a_problem(stream.finish(), "b")

    converse = bedrock.BedrockStream()
    for index, (call_id, arguments) in enumerate((("a", FINE), ("b", DEEP))):
        converse.add(
            {
                "contentBlockStart": {
                    "start": {"toolUse": {"toolUseId": call_id, "name": "w"}},
                    "contentBlockIndex": index,
                }
            }
        )
        converse.add({"contentBlockDelta": {"delta": {"toolUse": {"input": arguments}}, "contentBlockIndex": index}})
        converse.add({"contentBlockStop": {"contentBlockIndex": index}})
    converse.add({"messageStop": {"stopReason": "tool_use"}})
    _only_the_deep_call_has_a_problem(converse.finish(), "b")


def test_item12_deep_parsed_arguments_are_that_calls_problem_too() -> None:
    """Anthropic ``input``, Gemini ``args`` and Bedrock ``input`` come parsed: the same limit holds for them."""
    deep = {"nested": _deep_value(5000)}
    message = {
        "content": [
            {"type": "tool_use", "id": "a", "name": "w", "input": {}},
            {"type": "tool_use", "id": "b", "name": "w", "input": deep},
        ]
    }
    _only_the_deep_call_has_a_problem(anthropic.ingest(message), "b")
    parts = [
        {"function_call": {"id": "a", "name": "w", "args": {}}},
        {"function_call": {"id": "b", "name": "w", "args": deep}},
    ]
    _only_the_deep_call_has_a_problem(gemini.ingest(parts), "b")
    blocks = [
        {"toolUse": {"toolUseId": "a", "name": "w", "input": {}}},
        {"toolUse": {"toolUseId": "b", "name": "w", "input": deep}},
    ]
    _only_the_deep_call_has_a_problem(bedrock.ingest(blocks), "b")


def test_item12_the_limit_is_exact_and_brackets_inside_strings_do_not_count() -> None:
    from tool_call_closure.providers.arguments import MAX_ARGUMENT_DEPTH, nests_deeper

    at_limit = "[" * MAX_ARGUMENT_DEPTH + "]" * MAX_ARGUMENT_DEPTH
    over = "[" + at_limit + "]"
    calls = openai_chat.ingest(
        [_chat_call("a", at_limit), _chat_call("b", over), _chat_call("c", json.dumps({"s": "[[[" * 500}))]
    ).calls
    assert [call.problem is None for call in calls] == [True, False, True]
    text = '{"a": "]]]][[[[\\"[[[", "b": [[1]]}'  # nested 3 deep; 10 brackets in all
    assert nests_deeper(text, limit=2)
    assert not nests_deeper(text, limit=3)


def test_item12_a_value_with_shared_parts_is_that_calls_problem_before_any_text_is_written() -> None:
    """30 levels of one list held twice: tiny to hold, 2**30 leaves to write. The walk visits each list once."""
    shared: Any = [1]
    for _ in range(30):
        shared = [shared, shared]
    ingested = anthropic.ingest([{"type": "tool_use", "id": "a", "name": "w", "input": {"x": shared}}])
    assert ingested.calls[0].problem == (
        "the arguments hold one list or object in two places (JSON text has no sharing)"
    )


# --------------------------------------------------------------------------- item 13: malformed JSON-shaped values


@pytest.mark.parametrize("arguments", [{"city": "Oslo"}, ["{}"], 7], ids=["object", "list", "number"])
def test_item13_arguments_that_are_not_text_are_that_calls_problem(arguments: object) -> None:
    chat = openai_chat.ingest([_chat_call("a", FINE), _chat_call("b", arguments)])
    output = [
        {"type": "function_call", "call_id": "a", "name": "w", "arguments": FINE},
        {"type": "function_call", "call_id": "b", "name": "w", "arguments": arguments},
    ]
    for ingested in (chat, responses.ingest(output)):
        first, second = ingested.calls
        assert first.runnable
        assert second.problem is not None
        assert second.problem.startswith("the arguments are ")
        assert second.problem.endswith(", not JSON text")
        assert type(arguments).__name__ in second.problem


def test_item13_chat_stream_fragments_of_the_wrong_type() -> None:
    named = openai_chat.ChatStream()
    named.add(_chat_chunk(_fragment(0, "a", 5, "{}"), _fragment(1, "b", "ok", "{}"), finish="tool_calls"))
    first, second = named.finish().calls
    assert first.problem == "a fragment's name is int, not text"
    assert second.runnable

    listed = openai_chat.ChatStream()
    listed.add(_chat_chunk(_fragment(0, "a", "w", ["{}"]), finish="tool_calls"))
    assert listed.finish().calls[0].problem == "an arguments fragment is list, not JSON text"

    indexed = openai_chat.ChatStream()
    indexed.add(_chat_chunk(_fragment(0, "a", "w", "{")))
    before = indexed.finish(unfinished="run_complete")
    with pytest.raises(UsageError) as raised:
        indexed.add(_chat_chunk(_fragment([0], None, None, "}")))
    assert str(raised.value) == "ChatStream.add: choices[0].delta.tool_calls[0].index is list, not an int"
    assert indexed.finish(unfinished="run_complete") == before  # refused: nothing of the chunk was taken


def test_item13_preflights_name_a_tool_call_without_an_id() -> None:
    chat = [{"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "w", "arguments": "{}"}}]}]
    with pytest.raises(
        UsageError,
        match=r"^openai_chat.check_messages: messages\[0\].tool_calls\[0\] has no id \(text\), got NoneType$",
    ):
        openai_chat.check_messages(chat)
    claude = [{"role": "assistant", "content": [{"type": "tool_use", "name": "w", "input": {}}]}]
    with pytest.raises(
        UsageError, match=r"^anthropic.check_messages: messages\[0\].content\[0\] has no id \(text\), got NoneType$"
    ):
        anthropic.check_messages(claude)


def test_item13_anthropic_next_messages_after_an_id_less_tool_use_names_it() -> None:
    message = {
        "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "w", "input": {}},
            {"type": "tool_use", "name": "w", "input": {}},
        ],
        "stop_reason": "tool_use",
    }
    ingested = anthropic.ingest(message)
    assert [call.id for call in ingested.calls] == ["toolu_1"]
    assert [item.type for item in ingested.skipped] == ["call_without_id"]
    closure, snapshot = _closed(ingested.calls)
    with pytest.raises(UsageError, match=r"messages\[0\].content\[1\] has no id"):
        anthropic.next_messages(message, closure.to_anthropic_tool_results(snapshot))


# --------------------------------------------------------------------------- item 14: never a call the model did not send


def test_item14_chat_chunks_of_another_completion_are_refused() -> None:
    stream = openai_chat.ChatStream()
    stream.add(_chat_chunk(_fragment(0, "call_a", "weather", '{"city":'), chunk_id="chatcmpl-1"))
    other = _chat_chunk(_fragment(0, "call_x", "time", "{}"), finish="tool_calls", chunk_id="chatcmpl-2")
    with pytest.raises(
        UsageError, match="the chunk is of completion 'chatcmpl-2', this stream accumulates 'chatcmpl-1'"
    ):
        stream.add(ChatCompletionChunk.model_validate(other))
    stream.add(_chat_chunk(_fragment(0, None, None, '"Oslo"}'), finish="tool_calls", chunk_id="chatcmpl-1"))
    assert [(c.id, c.arguments) for c in stream.finish().calls] == [("call_a", {"city": "Oslo"})]


def _tool_block(index: int, call_id: str) -> dict[str, Any]:
    block = {"type": "tool_use", "id": call_id, "name": "weather", "input": {}}
    return {"type": "content_block_start", "index": index, "content_block": block}


def test_item14_an_anthropic_stop_before_its_deltas_makes_no_runnable_call() -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(RawMessageStreamEvent)
    events = [
        _tool_block(0, "toolu_1"),
        {"type": "content_block_stop", "index": 0},  # early: it completed a call with {} ...
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": FINE}},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 1}},
        {"type": "message_stop"},
    ]
    stream = anthropic.AnthropicStream()
    for event in events:
        stream.add(adapter.validate_python(event))
    ingested = stream.finish(unfinished="run_complete")  # no policy runs a call of a stream out of order
    assert ingested.runnable == ()
    assert ingested.unfinished == (
        "the stream's events came out of order (a content_block_delta for block 0 after its content_block_stop)"
    )


def test_item14_a_bedrock_stop_before_its_deltas_makes_no_runnable_call() -> None:
    stream = bedrock.BedrockStream()
    for event in (
        {"messageStart": {"role": "assistant"}},
        {"contentBlockStart": {"start": {"toolUse": {"toolUseId": "tu_1", "name": "w"}}, "contentBlockIndex": 0}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"contentBlockDelta": {"delta": {"toolUse": {"input": FINE}}, "contentBlockIndex": 0}},
        {"messageStop": {"stopReason": "tool_use"}},
    ):
        stream.add(event)
    ingested = stream.finish(unfinished="run_complete")
    assert ingested.runnable == ()
    assert "a toolUse delta for block 0 after its contentBlockStop" in str(ingested.unfinished)


# --------------------------------------------------------------------------- item 15: a cut Gemini stream


def _gemini_chunk(*parts: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "response_id": "r1",
        "candidates": [{"content": {"role": "model", "parts": list(parts)}, "finish_reason": finish}],
    }


def test_item15_a_cut_gemini_stream_says_so_and_runs_nothing_by_default() -> None:
    stream = gemini.GeminiStream()
    delivered = stream.add(_gemini_chunk({"function_call": {"name": "weather", "args": {"city": "Oslo"}}}))
    assert [call.runnable for call in delivered] == [True]  # complete as announced ...
    ingested = stream.finish()  # ... but the turn never finished: the calls after the cut are unknown
    assert ingested.runnable == ()
    assert ingested.unfinished == "the stream ended before the turn was finished (no finish_reason)"
    assert "finish(unfinished='run_complete') runs it" in str(ingested.calls[0].problem)
    assert stream.finish(unfinished="run_complete").runnable == delivered  # the explicit opt-in
    assert gemini.GeminiStream().finish().unfinished is not None  # cut before any call: still said


# --------------------------------------------------------------------------- item 16: the next request echoes the whole turn


def test_item16_chat_stream_echoes_its_text() -> None:
    stream = openai_chat.ChatStream()
    stream.add({"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Let me "}}]})
    stream.add({"id": "c", "choices": [{"index": 0, "delta": {"content": "look."}}]})
    stream.add(_chat_chunk(_fragment(0, "call_a", "weather", FINE), finish="tool_calls", chunk_id="c"))
    closure, snapshot = _closed(stream.finish().calls)
    assistant, result = openai_chat.next_messages(stream, closure.to_openai_chat_completions(snapshot))
    assert assistant == {
        "role": "assistant",
        "content": "Let me look.",
        "tool_calls": [{"id": "call_a", "type": "function", "function": {"name": "weather", "arguments": FINE}}],
    }
    assert result["role"] == "tool"


def test_item16_anthropic_stream_echoes_thinking_with_its_signature_then_text_then_calls() -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(RawMessageStreamEvent)
    events = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "m",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            },
        },
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""},
        },
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Weather "}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "first."}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "c2lnbmF0dXJl"}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "redacted_thinking", "data": "ZW5jcnlwdGVk"},
        },
        {"type": "content_block_stop", "index": 1},
        {"type": "content_block_start", "index": 2, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 2, "delta": {"type": "text_delta", "text": "Checking."}},
        {"type": "content_block_stop", "index": 2},
        _tool_block(3, "toolu_1"),
        {"type": "content_block_delta", "index": 3, "delta": {"type": "input_json_delta", "partial_json": FINE}},
        {"type": "content_block_stop", "index": 3},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": None},
            "usage": {"output_tokens": 1},
        },
        {"type": "message_stop"},
    ]
    stream = anthropic.AnthropicStream()
    for event in events:
        stream.add(adapter.validate_python(event))
    closure, snapshot = _closed(stream.finish().calls)
    assistant, user = anthropic.next_messages(stream, closure.to_anthropic_tool_results(snapshot))
    assert assistant == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Weather first.", "signature": "c2lnbmF0dXJl"},
            {"type": "redacted_thinking", "data": "ZW5jcnlwdGVk"},
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Oslo"}},
        ],
    }
    assert [block["type"] for block in user["content"]] == ["tool_result"]  # type: ignore[index]


def test_item16_responses_stream_echoes_reasoning_and_messages() -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "opaque"}
    message = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "On it.", "annotations": []}],
    }
    call = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "weather",
        "arguments": FINE,
        "status": "completed",
    }
    response = {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "model": "m",
        "status": "completed",
        "output": [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }
    events: list[dict[str, Any]] = [{"type": "response.created", "response": {**response, "status": "in_progress"}}]
    for index, item in enumerate((reasoning, message, call)):
        events += [
            {"type": "response.output_item.added", "output_index": index, "item": item},
            {"type": "response.output_item.done", "output_index": index, "item": item},
        ]
    events.append({"type": "response.completed", "response": response})
    stream = responses.ResponsesStream()
    for number, event in enumerate(events):
        stream.add(adapter.validate_python({**event, "sequence_number": number}))
    closure, snapshot = _closed(stream.finish().calls)
    items = responses.next_input(stream, closure.to_openai_responses(snapshot))
    assert [item.get("type") for item in items] == ["reasoning", "message", "function_call", "function_call_output"]
    assert items[0]["encrypted_content"] == "opaque"  # type: ignore[typeddict-item]
    assert items[1]["content"][0]["text"] == "On it."  # type: ignore[index,typeddict-item]


def test_item16_gemini_stream_echoes_every_part_with_its_thought_signature() -> None:
    from google.genai import types as genai

    chunks = [
        _gemini_chunk({"text": "Planning", "thought": True}, {"text": "Let me look."}),
        _gemini_chunk(
            {"function_call": {"name": "weather", "args": {"city": "Oslo"}}, "thought_signature": "c2ln"}, finish="STOP"
        ),
    ]
    stream = gemini.GeminiStream()
    for chunk in chunks:
        stream.add(genai.GenerateContentResponse.model_validate(chunk))
    closure, snapshot = _closed(stream.finish().calls)
    model, user = gemini.next_contents(stream, closure.to_gemini_function_responses(snapshot))
    parts = list(model["parts"])  # type: ignore[typeddict-item]
    assert [("thought" in p, p.get("text"), "function_call" in p) for p in parts] == [
        (True, "Planning", False),
        (False, "Let me look.", False),
        (False, None, True),
    ]
    assert parts[2]["thought_signature"] == b"sig"  # the SDK's bytes, kept as they are
    assert len(user["parts"]) == 1  # type: ignore[typeddict-item,arg-type]


def test_item16_bedrock_stream_echoes_text_and_reasoning() -> None:
    stream = bedrock.BedrockStream()
    for event in (
        {"messageStart": {"role": "assistant"}},
        {"contentBlockDelta": {"delta": {"reasoningContent": {"text": "Think."}}, "contentBlockIndex": 0}},
        {"contentBlockDelta": {"delta": {"reasoningContent": {"signature": "sig"}}, "contentBlockIndex": 0}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"contentBlockDelta": {"delta": {"text": "On it."}, "contentBlockIndex": 1}},
        {"contentBlockStop": {"contentBlockIndex": 1}},
        {"contentBlockStart": {"start": {"toolUse": {"toolUseId": "tu_1", "name": "weather"}}, "contentBlockIndex": 2}},
        {"contentBlockDelta": {"delta": {"toolUse": {"input": FINE}}, "contentBlockIndex": 2}},
        {"contentBlockStop": {"contentBlockIndex": 2}},
        {"messageStop": {"stopReason": "tool_use"}},
    ):
        stream.add(event)
    closure, snapshot = _closed(stream.finish().calls)
    assistant, _ = bedrock.next_messages(stream, closure.to_bedrock_tool_results(snapshot))
    assert assistant == {
        "role": "assistant",
        "content": [
            {"reasoningContent": {"reasoningText": {"text": "Think.", "signature": "sig"}}},
            {"text": "On it."},
            {"toolUse": {"toolUseId": "tu_1", "name": "weather", "input": {"city": "Oslo"}}},
        ],
    }


# --------------------------------------------------------------------------- item 17: Bedrock's then=


def test_item17_bedrock_then_puts_the_new_user_text_in_the_results_turn() -> None:
    converse = {
        "output": {
            "message": {"role": "assistant", "content": [{"toolUse": {"toolUseId": "tu_1", "name": "w", "input": {}}}]}
        },
        "stopReason": "tool_use",
    }
    closure, snapshot = _closed(bedrock.ingest(converse).calls)
    results = closure.to_bedrock_tool_results(snapshot)
    messages = bedrock.next_messages(converse, results, then="Actually, make it Lyon.")
    assert [m["role"] for m in messages] == ["assistant", "user"]
    assert list(messages[1]["content"]) == [*results, {"text": "Actually, make it Lyon."}]
    blocks = bedrock.next_messages(converse, results, then=[{"text": "a"}, {"text": "b"}])
    assert list(blocks[1]["content"])[1:] == [{"text": "a"}, {"text": "b"}]
    naive = [
        *bedrock.next_messages(converse, results),
        {"role": "user", "content": [{"text": "Actually, make it Lyon."}]},
    ]
    with pytest.raises(ProviderRuleError, match=r"^A conversation must alternate between user and assistant roles"):
        bedrock.check_messages(naive)
