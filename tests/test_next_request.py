"""Next-request helpers and preflight checks: the message lists each provider accepts, and its own refusal texts.

Each preflight is shown to refuse the three ways a transcript breaks the
pairing rules (a missing result, a result for no call, a duplicate result)
with the provider's error text from providers.md §3, and to accept what the
next-request helper assembles from a real closure's export.
"""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import Message
from openai.types.chat import ChatCompletion
from openai.types.responses import Response

from test_ingest import CHAT, CONVERSE, GEMINI, MESSAGE, RESPONSE
from tool_call_closure import Snapshot, ToolCallClosure
from tool_call_closure.providers import anthropic, bedrock, gemini, openai_chat, openai_responses
from tool_call_closure.providers.calls import ProviderRuleError


def _closed(calls: Any) -> tuple[ToolCallClosure, Snapshot]:
    """One call succeeds, the rest are cancelled by close: the aborted-batch scenario."""
    closure = ToolCallClosure()
    batch = closure.begin(calls)
    closure.succeed(batch.handle, calls[0].id, "ok")
    snapshot = closure.close(batch.handle)
    assert isinstance(snapshot, Snapshot)
    return closure, snapshot


def _refused(check: Any, messages: Any, text: str, **options: Any) -> ProviderRuleError:
    with pytest.raises(ProviderRuleError) as info:
        check(messages, **options)
    assert str(info.value) == text
    assert info.value.code == "provider_rule"
    return info.value


# --------------------------------------------------------------------------- OpenAI Chat

CHAT_MISSING = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. "
    "The following tool_call_ids did not have response messages: call_b"
)
CHAT_ORPHAN = (
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."
)


def test_chat_next_messages_echo_the_calls_then_the_results() -> None:
    completion = ChatCompletion.model_validate(CHAT)
    ingested = openai_chat.ingest(completion)
    closure, snapshot = _closed(ingested.calls)
    messages = openai_chat.next_messages(completion, closure.to_openai_chat_completions(snapshot))
    assert [m["role"] for m in messages] == ["assistant", "tool", "tool"]
    assert messages[0] == {
        "role": "assistant",
        "content": "Let me look.",
        "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Oslo"}'}},
            {"id": "call_b", "type": "function", "function": {"name": "time", "arguments": '{"tz": '}},
        ],
    }
    # From the ingested calls of a stream, the same echo without the text.
    assert openai_chat.assistant_message(ingested.calls)["tool_calls"] == messages[0]["tool_calls"]  # type: ignore[typeddict-item]


def test_chat_preflight_refuses_missing_orphan_and_duplicate_results() -> None:
    completion = ChatCompletion.model_validate(CHAT)
    closure, snapshot = _closed(openai_chat.ingest(completion).calls)
    assistant = openai_chat.assistant_message(completion)
    results = closure.to_openai_chat_completions(snapshot)
    user = {"role": "user", "content": "hi"}
    openai_chat.check_messages([user, assistant, *results, user])
    error = _refused(openai_chat.check_messages, [user, assistant, results[0], user], CHAT_MISSING)
    assert error.index == 1
    _refused(
        openai_chat.check_messages,
        [user, assistant, *results, results[0]],
        "Invalid parameter: Duplicate value for 'tool_call_id' of 'call_a', in messages[2] and messages[4].",
    )
    _refused(openai_chat.check_messages, [user, results[0]], CHAT_ORPHAN)
    _refused(openai_chat.check_messages, [user, assistant, *results, user, results[0]], CHAT_ORPHAN)
    _refused(openai_chat.check_messages, [user, assistant, results[0]], CHAT_MISSING)


# --------------------------------------------------------------------------- OpenAI Responses


def test_responses_next_input_with_and_without_previous_response_id() -> None:
    response = Response.model_validate(RESPONSE)
    closure, snapshot = _closed(openai_responses.ingest(response).calls)
    outputs = closure.to_openai_responses(snapshot)
    chained = openai_responses.next_input(response, outputs, previous_response_id=True)
    assert chained == outputs
    replayed = openai_responses.next_input(response, outputs)
    assert [item.get("type") for item in replayed] == [
        "reasoning",
        "function_call",
        "web_search_call",
        "function_call",
        "function_call_output",
        "function_call_output",
    ]
    assert replayed[1]["call_id"] == "call_1"  # type: ignore[typeddict-item]
    assert replayed[1]["id"] == "fc_1"  # type: ignore[typeddict-item]


def test_responses_preflight_texts() -> None:
    response = Response.model_validate(RESPONSE)
    closure, snapshot = _closed(openai_responses.ingest(response).calls)
    outputs = closure.to_openai_responses(snapshot)
    items = [item.model_dump(mode="json", exclude_none=True) for item in response.output]
    _refused(openai_responses.check_input, [*items, outputs[0]], "No tool output found for function call call_2.")
    misread = {**outputs[0], "call_id": "fc_1"}
    _refused(
        openai_responses.check_input,
        [*items, misread, outputs[1]],
        "No tool call found for function call output with call_id fc_1.",
    )
    _refused(
        openai_responses.check_input,
        [*items, items[1], *outputs],
        "Duplicate item found with id fc_1. Remove duplicate items from your input and try again.",
    )
    _refused(
        openai_responses.check_input,
        [items[0], *outputs],
        "Item 'rs_1' of type 'reasoning' was provided without its required following item.",
        previous_response_id=True,
    )
    openai_responses.check_input(outputs, previous_response_id=True)


# --------------------------------------------------------------------------- Anthropic

ANTHROPIC_MISSING = (
    "messages.0: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1. "
    "Each `tool_use` block must have a corresponding `tool_result` block in the next message."
)


def test_anthropic_next_messages_put_results_first_then_the_new_user_content() -> None:
    message = Message.model_validate(MESSAGE)
    closure, snapshot = _closed(anthropic.ingest(message).calls)
    messages = anthropic.next_messages(message, closure.to_anthropic_tool_results(snapshot), then="Also, hurry.")
    assert messages[0]["role"] == "assistant"
    assert list(messages[0]["content"]) == list(message.content)  # the SDK blocks as they came, signatures intact
    user_content = list(messages[1]["content"])
    assert [block["type"] for block in user_content] == ["tool_result", "text"]  # type: ignore[index]


def test_anthropic_preflight_texts() -> None:
    closure, snapshot = _closed(anthropic.ingest(MESSAGE).calls)
    (result,) = closure.to_anthropic_tool_results(snapshot)
    assistant = {"role": "assistant", "content": MESSAGE["content"]}
    text = {"type": "text", "text": "next"}
    anthropic.check_messages([assistant, {"role": "user", "content": [result, text]}])
    _refused(anthropic.check_messages, [assistant, {"role": "user", "content": [text, result]}], ANTHROPIC_MISSING)
    _refused(anthropic.check_messages, [assistant, {"role": "user", "content": "no results"}], ANTHROPIC_MISSING)
    _refused(anthropic.check_messages, [assistant], ANTHROPIC_MISSING)
    _refused(
        anthropic.check_messages,
        [assistant, {"role": "user", "content": [result, {**result, "tool_use_id": "toolu_9"}]}],
        "messages.1.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_9. "
        "Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
    )
    _refused(
        anthropic.check_messages,
        [{"role": "user", "content": [result]}],
        "messages.0.content.0: `tool_result` block(s) provided when previous message does not contain any "
        "`tool_use` blocks",
    )
    _refused(
        anthropic.check_messages,
        [assistant, {"role": "user", "content": [result, result]}],
        "messages.1.content.1: each tool_use must have a single result. Found multiple `tool_result` blocks with id: "
        "toolu_1",
    )


# --------------------------------------------------------------------------- Gemini

GEMINI_COUNT = (
    "Please ensure that the number of function response parts is equal to the number of function call parts "
    "of the function call turn."
)


def test_gemini_next_contents_one_user_content_with_every_response() -> None:
    from google.genai import types as genai

    response = genai.GenerateContentResponse.model_validate(GEMINI)
    closure, snapshot = _closed(gemini.ingest(response).calls)
    parts = closure.to_gemini_function_responses(snapshot)
    contents = gemini.next_contents(response, parts)
    assert len(contents) == 2
    assert contents[1] == {"role": "user", "parts": parts}
    assert contents[0]["role"] == "model"
    names = [part["function_response"]["name"] for part in parts]  # type: ignore[index]
    assert names == ["weather", "time", "weather"]
    assert [part["function_response"].get("id") for part in parts] == [None, "real-7", None]  # type: ignore[union-attr]
    _refused(gemini.check_contents, [contents[0], {"role": "user", "parts": parts[:2]}], GEMINI_COUNT)
    _refused(gemini.check_contents, [contents[0]], GEMINI_COUNT)


# --------------------------------------------------------------------------- Bedrock


def test_bedrock_next_messages_and_preflight() -> None:
    closure, snapshot = _closed(bedrock.ingest(CONVERSE).calls)
    results = closure.to_bedrock_tool_results(snapshot)
    messages = bedrock.next_messages(CONVERSE, results)
    assert [m["role"] for m in messages] == ["assistant", "user"]
    assert messages[1]["content"] == results
    assistant = messages[0]
    _refused(
        bedrock.check_messages,
        [assistant, {"role": "user", "content": [*results, results[0]]}],
        "The number of toolResult blocks exceeds the number of toolUse blocks of previous turn.",
    )
    _refused(
        bedrock.check_messages,
        [assistant, {"role": "user", "content": results[:1]}],
        "Expected toolResult blocks at messages.1.content for the following Ids: tooluse_2",
    )
    empty = {"toolResult": {"toolUseId": "tooluse_2", "content": [], "status": "error"}}
    _refused(
        bedrock.check_messages,
        [assistant, {"role": "user", "content": [results[0], empty]}],
        "messages.1.content.1: toolResult cannot be empty when status value is error",
    )


# --------------------------------------------------------------------------- another provider's turn


_NEXT: dict[str, Any] = {
    "openai_chat": lambda turn: openai_chat.next_messages(turn, []),
    "openai_responses": lambda turn: openai_responses.next_input(turn, []),
    "anthropic": lambda turn: anthropic.next_messages(turn, []),
    "gemini": lambda turn: gemini.next_contents(turn, []),
    "bedrock": lambda turn: bedrock.next_messages(turn, []),
}
_TURNS: dict[str, object] = {
    "openai_chat": CHAT,
    "openai_responses": RESPONSE,
    "anthropic": MESSAGE,
    "gemini": GEMINI,
    "bedrock": CONVERSE,
}
_NEXT_CASES = [(owner, builder) for owner in _TURNS for builder in _NEXT if builder != owner]


@pytest.mark.parametrize(("owner", "builder"), _NEXT_CASES, ids=[f"{o}-to-{b}" for o, b in _NEXT_CASES])
def test_the_next_request_refuses_another_providers_turn(owner: str, builder: str) -> None:
    """Built from another provider's turn, the request would echo no calls (or the wrong ones) and the provider
    would refuse it; the builder reads the turn as its ingest does, and refuses it the same way."""
    from tool_call_closure import UsageError

    with pytest.raises(UsageError) as raised:
        _NEXT[builder](_TURNS[owner])
    assert raised.value.code == "provider_value_invalid"
    assert str(raised.value).startswith(f"{builder}.ingest")


@pytest.mark.parametrize("owner", list(_TURNS))
def test_the_next_request_of_its_own_turn_is_still_checked_by_the_providers_rule(owner: str) -> None:
    """With no results the pair breaks the provider's rule: the preflight's error, not a refusal of the turn."""
    with pytest.raises(ProviderRuleError):
        _NEXT[owner](_TURNS[owner])


# --------------------------------------------------------------------------- another provider's transcript


_TRANSCRIPTS: dict[str, list[Any]] = {  # a user turn, then an assistant turn whose call has no result yet
    "openai_chat": [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        },
    ],
    "anthropic": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}]},
    ],
    "openai_responses": [
        {"role": "user", "content": "hi"},
        {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}"},
    ],
    "gemini": [
        {"role": "user", "parts": [{"text": "hi"}]},
        {"role": "model", "parts": [{"function_call": {"name": "f", "args": {}}}]},
    ],
    "bedrock": [
        {"role": "user", "content": [{"text": "hi"}]},
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "tooluse_1", "name": "f", "input": {}}}]},
    ],
}
_CHECKS: dict[str, Any] = {
    "openai_chat": (openai_chat.check_messages, "messages"),
    "anthropic": (anthropic.check_messages, "messages"),
    "openai_responses": (openai_responses.check_input, "input_items"),
    "gemini": (gemini.check_contents, "contents"),
    "bedrock": (bedrock.check_messages, "messages"),
}
_CHECK_CASES = [(owner, checker) for owner in _TRANSCRIPTS for checker in _CHECKS if checker != owner]


@pytest.mark.parametrize(("owner", "checker"), _CHECK_CASES, ids=[f"{o}-to-{c}" for o, c in _CHECK_CASES])
def test_a_preflight_refuses_another_providers_transcript(owner: str, checker: str) -> None:
    """It finds none of its own calls in another API's transcript, so it would pass one whose calls have no result:
    the very thing it is there to catch. It names where the foreign call is and which module checks it."""
    from tool_call_closure import UsageError

    check, argument = _CHECKS[checker]
    with pytest.raises(UsageError) as raised:
        check(_TRANSCRIPTS[owner])
    assert raised.value.code == "provider_value_invalid"
    assert str(raised.value).startswith(f"{check.__module__.rsplit('.', 1)[1]}.{check.__name__}: {argument}[1]")
    assert str(raised.value).endswith(f"check it with providers.{owner}")


@pytest.mark.parametrize("owner", list(_TRANSCRIPTS))
def test_a_preflight_of_its_own_transcript_still_applies_the_providers_rule(owner: str) -> None:
    with pytest.raises(ProviderRuleError):
        _CHECKS[owner][0](_TRANSCRIPTS[owner])
