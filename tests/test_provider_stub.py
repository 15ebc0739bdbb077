"""The provider stub itself: its pairing rules answer with the providers' exact messages, and its traffic is bounded."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from provider_stub import ProviderStub, StubRefusalError, check_anthropic, check_bedrock, check_chat, check_responses


def _assistant(*ids: str) -> dict[str, object]:
    return {
        "role": "assistant",
        "tool_calls": [{"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in ids],
    }


def test_chat_duplicate_names_both_positions_like_the_api() -> None:
    """agno#5116: the duplicate message names both message indexes."""
    messages = [
        {"role": "user", "content": "x"},
        _assistant("call_a"),
        {"role": "tool", "tool_call_id": "call_a", "content": "1"},
        {"role": "tool", "tool_call_id": "call_a", "content": "2"},
    ]
    with pytest.raises(StubRefusalError) as caught:
        check_chat(messages)
    assert (
        caught.value.message
        == "Invalid parameter: Duplicate value for 'tool_call_id' of 'call_a', in messages[2] and messages[3]."
    )


def test_chat_accepts_a_complete_answer_and_refuses_a_tool_message_without_calls() -> None:
    check_chat(
        [
            {"role": "user", "content": "x"},
            _assistant("a", "b"),
            {"role": "tool", "tool_call_id": "b", "content": ""},
            {"role": "tool", "tool_call_id": "a", "content": ""},
        ]
    )
    with pytest.raises(StubRefusalError, match="must be a response to a preceeding message with 'tool_calls'"):
        check_chat([{"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": "a", "content": ""}])


def test_responses_pairs_on_call_id_so_the_fc_item_id_is_an_unknown_call() -> None:
    items = [
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "fc_1", "output": "x"},
    ]
    with pytest.raises(StubRefusalError) as caught:
        check_responses(items)
    assert caught.value.message == "No tool call found for function call output with call_id fc_1."


def test_responses_duplicate_item_ids_are_refused_with_the_api_text() -> None:
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": "{}"}
    with pytest.raises(StubRefusalError) as caught:
        check_responses([item, item])
    assert (
        caught.value.message
        == "Duplicate item found with id fc_1. Remove duplicate items from your input and try again."
    )


def test_anthropic_results_after_text_do_not_count_as_immediately_after() -> None:
    messages = [
        {"role": "user", "content": "x"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "hi"},
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "r"},
            ],
        },
    ]
    with pytest.raises(StubRefusalError) as caught:
        check_anthropic(messages)
    assert caught.value.message.startswith(
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1."
    )


def test_bedrock_refuses_an_empty_error_result() -> None:
    messages = [
        {"role": "user", "content": [{"text": "x"}]},
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "f", "input": {}}}]},
        {"role": "user", "content": [{"toolResult": {"toolUseId": "t1", "content": [], "status": "error"}}]},
    ]
    with pytest.raises(StubRefusalError, match="toolResult cannot be empty when status value is error"):
        check_bedrock(messages)


def test_the_stub_answers_at_most_max_requests_then_429() -> None:
    with ProviderStub(max_requests=2) as stub:
        statuses = []
        for _ in range(3):
            request = urllib.request.Request(
                f"{stub.base_url}/v1/chat/completions",
                data=json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]}).encode(),
                headers={"content-type": "application/json"},
            )
            try:
                with urllib.request.urlopen(request, timeout=10) as answer:
                    statuses.append(answer.status)
            except urllib.error.HTTPError as error:
                statuses.append(error.code)
    assert statuses == [200, 200, 429]
