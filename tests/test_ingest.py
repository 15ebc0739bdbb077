"""Ingestion: provider SDK objects and plain dicts become ToolCalls paired on the provider's call id.

Every provider is fed the official SDK object (built with the SDK's own
``model_validate``) and the equivalent dict; both must give the same calls.
"""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import Message
from google.genai import types as genai
from openai.types.chat import ChatCompletion
from openai.types.responses import Response

from tool_call_closure import ToolCallClosure
from tool_call_closure.providers import anthropic, bedrock, gemini, openai_chat, openai_responses
from tool_call_closure.providers.calls import ToolCall

CHAT: dict[str, Any] = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": "Let me look.",
                "tool_calls": [
                    {
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"city":"Oslo"}'},
                    },
                    {"id": "call_b", "type": "function", "function": {"name": "time", "arguments": '{"tz": '}},
                ],
            },
        }
    ],
}

RESPONSE: dict[str, Any] = {
    "id": "resp_1",
    "object": "response",
    "created_at": 1,
    "model": "gpt",
    "status": "completed",
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
    "output": [
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "weather",
            "arguments": '{"city":"Oslo"}',
            "status": "completed",
        },
        {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "x"}},
        {
            "type": "function_call",
            "id": "fc_2",
            "call_id": "call_2",
            "name": "time",
            "arguments": "",
            "status": "completed",
        },
    ],
}

MESSAGE: dict[str, Any] = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude",
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {"input_tokens": 1, "output_tokens": 1},
    "content": [
        {"type": "thinking", "thinking": "hm", "signature": "sig"},
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Oslo"}},
    ],
}

GEMINI: dict[str, Any] = {
    "response_id": "g-Resp_1",
    "candidates": [
        {
            "finish_reason": "STOP",
            "content": {
                "role": "model",
                "parts": [
                    {"text": "thinking", "thought": True},
                    {"function_call": {"name": "weather", "args": {"city": "Oslo"}}},
                    {"function_call": {"id": "real-7", "name": "time", "args": {}}},
                    {"function_call": {"name": "weather", "args": {"city": "Rome"}}},
                ],
            },
        }
    ],
}

CONVERSE: dict[str, Any] = {
    "output": {
        "message": {
            "role": "assistant",
            "content": [
                {"text": "On it."},
                {"toolUse": {"toolUseId": "tooluse_1", "name": "weather", "input": {"city": "Oslo"}}},
                {"toolUse": {"toolUseId": "tooluse_2", "name": "time", "input": {}}},
            ],
        }
    },
    "stopReason": "tool_use",
}


@pytest.mark.parametrize("source", [CHAT, ChatCompletion.model_validate(CHAT)], ids=["dict", "sdk"])
def test_chat_pairs_on_id_and_reports_invalid_json(source: object) -> None:
    ingested = openai_chat.ingest(source)
    assert [(c.id, c.name, c.arguments) for c in ingested.calls] == [
        ("call_a", "weather", {"city": "Oslo"}),
        ("call_b", "time", None),
    ]
    assert ingested.calls[0].arguments_json == '{"city":"Oslo"}'
    assert ingested.calls[1].arguments_json == '{"tz": '
    assert ingested.calls[1].problem is not None
    assert "not valid JSON" in ingested.calls[1].problem
    assert [c.id for c in ingested.runnable] == ["call_a"]
    assert [(s.index, s.type) for s in ingested.skipped] == [(-1, "content")]
    assert ingested.stop_reason == "tool_calls"
    assert all(c.provider == "openai_chat" for c in ingested.calls)


def test_chat_accepts_the_message_and_the_tool_calls_list_alike() -> None:
    whole = openai_chat.ingest(CHAT).calls
    sdk = ChatCompletion.model_validate(CHAT)
    assert openai_chat.ingest(sdk.choices[0].message).calls == whole
    assert openai_chat.ingest(sdk.choices[0].message.tool_calls or []).calls == whole


def test_chat_length_finish_marks_the_last_call() -> None:
    cut = {**CHAT, "choices": [{**CHAT["choices"][0], "finish_reason": "length"}]}
    cut["choices"][0]["message"] = {
        **CHAT["choices"][0]["message"],
        "tool_calls": CHAT["choices"][0]["message"]["tool_calls"][:1],
    }
    (call,) = openai_chat.ingest(cut).calls
    assert call.problem is not None
    assert "length" in call.problem
    assert call.arguments is None


def test_chat_arguments_nan_is_not_json() -> None:
    entry = {"id": "c", "type": "function", "function": {"name": "f", "arguments": '{"x": NaN}'}}
    (call,) = openai_chat.ingest([entry]).calls
    assert call.problem is not None


@pytest.mark.parametrize("source", [RESPONSE, Response.model_validate(RESPONSE)], ids=["dict", "sdk"])
def test_responses_pairs_on_call_id_never_the_item_id(source: object) -> None:
    ingested = openai_responses.ingest(source)
    assert [(c.id, c.name, c.arguments) for c in ingested.calls] == [
        ("call_1", "weather", {"city": "Oslo"}),
        ("call_2", "time", {}),
    ]
    assert [(s.index, s.type) for s in ingested.skipped] == [(0, "reasoning"), (2, "web_search_call")]
    assert "provider" in ingested.skipped[1].reason


def test_responses_output_list_and_closure_round_trip() -> None:
    response = Response.model_validate(RESPONSE)
    ingested = openai_responses.ingest(response.output)
    closure = ToolCallClosure()
    batch = closure.begin(ingested.calls)
    closure.succeed(batch.handle, "call_1", "sunny")
    snapshot = closure.close(batch.handle)
    assert [item["call_id"] for item in closure.to_openai_responses(snapshot)] == ["call_1", "call_2"]


def test_responses_custom_tool_call_is_skipped_and_named() -> None:
    ingested = openai_responses.ingest([{"type": "custom_tool_call", "call_id": "c", "name": "x", "input": "y"}])
    assert ingested.calls == ()
    assert "custom_tool_call" in ingested.skipped[0].reason


@pytest.mark.parametrize("source", [MESSAGE, Message.model_validate(MESSAGE)], ids=["dict", "sdk"])
def test_anthropic_tool_use_blocks(source: object) -> None:
    ingested = anthropic.ingest(source)
    assert ingested.calls == (ToolCall("toolu_1", "weather", {"city": "Oslo"}, '{"city":"Oslo"}', None, "anthropic"),)
    assert [(s.index, s.type) for s in ingested.skipped] == [(0, "thinking"), (1, "text")]


def test_anthropic_max_tokens_inside_the_last_tool_use() -> None:
    ingested = anthropic.ingest({**MESSAGE, "stop_reason": "max_tokens"})
    assert ingested.calls[0].problem is not None
    assert "max_tokens" in ingested.calls[0].problem


@pytest.mark.parametrize("source", [GEMINI, genai.GenerateContentResponse.model_validate(GEMINI)], ids=["dict", "sdk"])
def test_gemini_calls_without_ids_get_positional_ids(source: object) -> None:
    ingested = gemini.ingest(source)
    assert [(c.id, c.name, c.arguments) for c in ingested.calls] == [
        ("tcc_gemini_g-Resp_1_0", "weather", {"city": "Oslo"}),
        ("real-7", "time", {}),
        ("tcc_gemini_g-Resp_1_2", "weather", {"city": "Rome"}),
    ]
    assert [(s.index, s.type) for s in ingested.skipped] == [(0, "thought")]
    assert ingested.stop_reason == "STOP"
    assert gemini.ingest(source) == ingested  # deterministic: the response id names the turn


def test_gemini_synthetic_ids_are_recognised_exactly() -> None:
    assert gemini.is_synthetic_id("tcc_gemini_0")  # the form of earlier versions
    assert gemini.is_synthetic_id("tcc_gemini_12")
    assert gemini.is_synthetic_id("tcc_gemini_g-Resp_1_0")
    assert gemini.is_synthetic_id("tcc_gemini_local3_12")
    assert gemini.is_synthetic_id(gemini.synthetic_id(4, gemini.turn_tag("x" * 65)))
    assert not gemini.is_synthetic_id("tcc_gemini_01")
    assert not gemini.is_synthetic_id("tcc_gemini_a_01")
    assert not gemini.is_synthetic_id("x_tcc_gemini_1")
    assert not gemini.is_synthetic_id("tcc_gemini_" + "a" * 65 + "_1")


def _gemini_turn(response_id: str | None) -> dict[str, Any]:
    turn: dict[str, Any] = {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"function_call": {"name": "now", "args": {}}}]},
                "finish_reason": "STOP",
            }
        ]
    }
    if response_id is not None:
        turn["response_id"] = response_id
    return turn


def test_item18_gemini_generated_ids_differ_from_turn_to_turn() -> None:
    """Issue 18: every turn's first id-less call was ``tcc_gemini_0``, so a late result or a log line could not say
    which turn it belonged to.  The id names the turn: the response id, or a counter when there is none."""
    by_response = [gemini.ingest(_gemini_turn(rid)).calls[0].id for rid in ("r1", "r2", "r1")]
    assert by_response == ["tcc_gemini_r1_0", "tcc_gemini_r2_0", "tcc_gemini_r1_0"]  # the same response: the same id
    without = [gemini.ingest(_gemini_turn(None)).calls[0].id for _ in range(3)]
    assert len(set(without)) == 3
    assert all(gemini.is_synthetic_id(i) and i.startswith("tcc_gemini_local") for i in without)
    odd = gemini.ingest(_gemini_turn("id with spaces/" + "é" * 80)).calls[0].id
    assert odd == gemini.ingest(_gemini_turn("id with spaces/" + "é" * 80)).calls[0].id
    assert gemini.is_synthetic_id(odd)
    assert len(odd.encode()) <= 64  # well within the closure's 512-byte id limit
    streamed = [gemini.GeminiStream() for _ in range(2)]
    ids = [stream.add(_gemini_turn(None))[0].id for stream in streamed]
    assert ids[0] != ids[1]


@pytest.mark.parametrize("source", [CONVERSE, CONVERSE["output"]["message"], CONVERSE["output"]["message"]["content"]])
def test_bedrock_tool_use_blocks(source: object) -> None:
    ingested = bedrock.ingest(source)
    assert [(c.id, c.name, c.arguments, c.problem) for c in ingested.calls] == [
        ("tooluse_1", "weather", {"city": "Oslo"}, None),
        ("tooluse_2", "time", {}, None),
    ]
    assert [(s.index, s.type) for s in ingested.skipped] == [(0, "text")]


def test_bedrock_malformed_tool_use_marks_every_call() -> None:
    ingested = bedrock.ingest({**CONVERSE, "stopReason": "malformed_tool_use"})
    assert all(c.problem and "malformed_tool_use" in c.problem for c in ingested.calls)
    assert ingested.runnable == ()


@pytest.mark.parametrize(
    "ingest", [openai_chat.ingest, openai_responses.ingest, anthropic.ingest, gemini.ingest, bedrock.ingest]
)
def test_a_value_that_is_no_turn_is_refused_with_the_package_error(ingest: Any) -> None:
    from tool_call_closure import UsageError

    with pytest.raises(UsageError, match="expected a list of provider items, got str"):
        ingest({"choices": "x", "output": "x", "content": "x", "candidates": "x"})


def test_chat_other_choices_are_reported_not_dropped() -> None:
    two = {**CHAT, "choices": [CHAT["choices"][0], {**CHAT["choices"][0], "index": 1}]}
    ingested = openai_chat.ingest(ChatCompletion.model_validate(two))
    assert [c.id for c in ingested.calls] == ["call_a", "call_b"]
    assert [(s.index, s.type) for s in ingested.skipped] == [(-1, "content"), (1, "choice")]
    assert openai_chat.ingest(ChatCompletion.model_validate(two).choices[1]).calls == ingested.calls


# --------------------------------------------------------------------------- another provider's value


def _turns() -> dict[str, list[tuple[str, object]]]:
    """Every shape each provider's ingest accepts, as the SDK object and as the dict, by provider."""
    chat = ChatCompletion.model_validate(CHAT)
    response = Response.model_validate(RESPONSE)
    message = Message.model_validate(MESSAGE)
    reply = genai.GenerateContentResponse.model_validate(GEMINI)
    assert chat.choices[0].message.tool_calls is not None
    assert reply.candidates is not None
    assert reply.candidates[0].content is not None
    return {
        "openai_chat": [
            ("completion", chat),
            ("completion dict", CHAT),
            ("choice", chat.choices[0]),
            ("message", chat.choices[0].message),
            ("tool calls", chat.choices[0].message.tool_calls),
        ],
        "openai_responses": [("response", response), ("response dict", RESPONSE), ("output", response.output)],
        "anthropic": [("message", message), ("message dict", MESSAGE), ("content", message.content)],
        "gemini": [
            ("response", reply),
            ("response dict", GEMINI),
            ("candidate", reply.candidates[0]),
            ("content", reply.candidates[0].content),
            ("parts", reply.candidates[0].content.parts),
        ],
        "bedrock": [
            ("response", CONVERSE),
            ("message", CONVERSE["output"]["message"]),
            ("content", CONVERSE["output"]["message"]["content"]),
        ],
    }


_READERS = {
    "openai_chat": openai_chat,
    "openai_responses": openai_responses,
    "anthropic": anthropic,
    "gemini": gemini,
    "bedrock": bedrock,
}
_CASES = [
    (owner, shape, reader)
    for owner, shapes in _turns().items()
    for shape, _ in shapes
    for reader in _READERS
    if reader != owner
]


@pytest.mark.parametrize(("owner", "shape", "reader"), _CASES, ids=[f"{o}-{s}-to-{r}" for o, s, r in _CASES])
def test_another_providers_turn_is_refused_never_read_as_one_without_calls(owner: str, shape: str, reader: str) -> None:
    """Read as empty, its tool calls would get no result: the next request fails far from the cause, or the loop
    ends as if the model had asked for nothing. Every shape of every provider, given to every other provider."""
    from tool_call_closure import UsageError

    value = dict(_turns()[owner])[shape]
    with pytest.raises(UsageError) as raised:
        _READERS[reader].ingest(value)
    assert raised.value.code == "provider_value_invalid"
    assert str(raised.value).startswith(f"{reader}.ingest")


@pytest.mark.parametrize("owner", list(_READERS))
def test_each_provider_still_reads_every_shape_of_its_own(owner: str) -> None:
    counts = {shape: len(_READERS[owner].ingest(value).calls) for shape, value in _turns()[owner]}
    assert all(count > 0 for count in counts.values()), counts


def test_the_refusal_names_what_it_got_and_what_it_expected() -> None:
    from tool_call_closure import UsageError

    with pytest.raises(UsageError) as raised:
        openai_responses.ingest(ChatCompletion.model_validate(CHAT))
    assert str(raised.value) == (
        "openai_responses.ingest expected a Response or a list of its output items, "
        "got openai.types.chat.chat_completion.ChatCompletion"
    )
    with pytest.raises(UsageError) as raised:
        anthropic.ingest(CONVERSE)
    assert str(raised.value) == (
        "anthropic.ingest expected a Message or a list of its content blocks, got a dict with keys output, stopReason"
    )
    with pytest.raises(UsageError) as raised:
        bedrock.ingest(Message.model_validate(MESSAGE))
    assert str(raised.value) == (
        "bedrock.ingest: item 2 is an Anthropic tool_use block: ingest it with its own provider's module"
    )


@pytest.mark.parametrize(
    ("reader", "value"),
    [
        (openai_chat, {**CHAT, "choices": []}),  # no choice at all
        (openai_chat, {"role": "assistant", "content": None}),  # a message without calls or text
        (openai_responses, {**RESPONSE, "output": []}),
        (anthropic, {**MESSAGE, "content": []}),
        (gemini, {"candidates": []}),  # the prompt was blocked
        (gemini, {"candidates": [{"finish_reason": "SAFETY", "content": None}]}),  # stopped before any content
        (gemini, {"candidates": [{"finish_reason": "MAX_TOKENS", "content": {"role": "model"}}]}),  # no parts
        (bedrock, {"output": {"message": {"role": "assistant", "content": []}}, "stopReason": "end_turn"}),
    ],
)
def test_a_turn_of_its_own_provider_without_calls_still_reads_as_none(reader: Any, value: object) -> None:
    assert reader.ingest(value).calls == ()
