"""Every exported payload and every next-request list validates against the real SDK types.

The SDKs' parameter types are ``TypedDict``s; pydantic's ``TypeAdapter``
validates a payload against them in strict mode, and the keys are checked to
be the TypedDict's own (pydantic ignores unknown keys of a TypedDict).  For
google-genai the payloads are also loaded by the SDK's own pydantic models,
which forbid unknown fields; for Bedrock, botocore validates the whole
``converse`` request against the service model, as the client does before
sending.  The snapshot holds every kind of outcome: a success, a reported
error, a reported cancellation, a synthetic error with a side-effect state.
"""

from __future__ import annotations

from typing import Any, get_args

import botocore.session
import pytest
from anthropic.types import MessageParam, ToolResultBlockParam
from botocore.validate import validate_parameters
from google.genai import types as genai
from mypy_boto3_bedrock_runtime.type_defs import MessageTypeDef
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolMessageParam
from openai.types.responses.response_input_item_param import FunctionCallOutput, ResponseInputItemParam
from pydantic import ConfigDict, TypeAdapter
from typing_extensions import TypedDict, is_typeddict  # the SDKs build their TypedDicts with typing_extensions

from tool_call_closure import Snapshot, ToolCallClosure
from tool_call_closure.providers import ToolCall, anthropic, bedrock, gemini, openai_chat, openai_responses

CALLS = (
    ToolCall("call_ok", "weather", {"city": "Oslo"}, '{"city":"Oslo"}'),
    ToolCall("call_err", "search", {}, "{}"),
    ToolCall("call_cancel", "write", {}, "{}"),
    ToolCall("tcc_gemini_3", "noop", {}, "{}"),
)


@pytest.fixture
def exported() -> tuple[ToolCallClosure, Snapshot]:
    closure = ToolCallClosure()
    batch = closure.begin(CALLS)
    closure.succeed(batch.handle, "call_ok", {"temperatureC": 24})
    closure.fail(batch.handle, "call_err", TimeoutError())
    closure.cancel(batch.handle, "call_cancel", "user stopped")
    snapshot = closure.close(batch.handle, {"status": "error", "code": "aborted", "sideEffectState": "not_started"})
    assert isinstance(snapshot, Snapshot)
    return closure, snapshot


def _validate(kind: Any, value: Any) -> None:
    """Strict validation (required keys and value types), then no key the matching TypedDict does not define."""
    TypeAdapter(kind).validate_python(value, strict=True)
    members = [m for m in get_args(kind) if is_typeddict(m)] if not is_typeddict(kind) else [kind]
    if members and isinstance(value, dict):
        assert any(set(value) <= (m.__required_keys__ | m.__optional_keys__) for m in members), value


def test_chat_payloads(exported: tuple[ToolCallClosure, Snapshot]) -> None:
    closure, snapshot = exported
    results = closure.to_openai_chat_completions(snapshot)
    assert len(results) == 4
    for item in results:
        _validate(ChatCompletionToolMessageParam, item)
    messages = openai_chat.next_messages(CALLS, results)
    for message in messages:
        _validate(ChatCompletionMessageParam, message)


def test_responses_payloads(exported: tuple[ToolCallClosure, Snapshot]) -> None:
    closure, snapshot = exported
    outputs = closure.to_openai_responses(snapshot)
    for item in outputs:
        _validate(FunctionCallOutput, item)
    for item in openai_responses.next_input(CALLS, outputs):
        _validate(ResponseInputItemParam, item)


def test_anthropic_payloads(exported: tuple[ToolCallClosure, Snapshot]) -> None:
    closure, snapshot = exported
    results = closure.to_anthropic_tool_results(snapshot)
    assert [item.get("is_error") for item in results] == [None, True, True, True]
    for item in results:
        _validate(ToolResultBlockParam, item)
    for message in anthropic.next_messages(CALLS, results, then="go on"):
        TypeAdapter(MessageParam).validate_python(message, strict=True)


def test_gemini_payloads(exported: tuple[ToolCallClosure, Snapshot]) -> None:
    closure, snapshot = exported
    parts = closure.to_gemini_function_responses(snapshot)
    for part in parts:
        _validate(genai.PartDict, part)
        loaded = genai.Part.model_validate(part)  # the SDK's model: unknown fields are refused
        assert loaded.function_response is not None
        assert loaded.function_response.name
        response = loaded.function_response.response or {}
        assert set(response) in ({"output"}, {"error"})
    assert genai.Part.model_validate(parts[3]).function_response.id is None  # type: ignore[union-attr]
    model_turn = {
        "role": "model",
        "parts": [{"function_call": {"id": c.id, "name": c.name, "args": {}}} for c in CALLS],
    }
    model_turn["parts"][3]["function_call"].pop("id")
    for content in gemini.next_contents(model_turn, parts):
        _validate(genai.ContentDict, content)
        genai.Content.model_validate(content)
    with pytest.raises(ValueError, match="Extra inputs"):
        genai.Part.model_validate({"function_response": {"name": "x", "response": {}, "bogus": 1}})


class _BedrockMessage(TypedDict):
    """A wrapper that lets pydantic build a schema for the stubs' TypedDicts (they name IO types for blobs)."""

    __pydantic_config__ = ConfigDict(arbitrary_types_allowed=True)  # type: ignore[misc]
    message: MessageTypeDef


def test_bedrock_payloads_pass_botocore_validation(exported: tuple[ToolCallClosure, Snapshot]) -> None:
    closure, snapshot = exported
    results = closure.to_bedrock_tool_results(snapshot)
    adapter = TypeAdapter(_BedrockMessage)
    for message in bedrock.next_messages(CALLS, results):
        adapter.validate_python({"message": message}, strict=True)
    bad = {"role": "user", "content": [{"toolResult": {"toolUseId": "a", "content": [], "status": "failed"}}]}
    with pytest.raises(ValueError, match="status"):
        adapter.validate_python({"message": bad}, strict=True)
    assert [item["toolResult"].get("status") for item in results] == [None, "error", "error", "error"]
    assert all(item["toolResult"]["content"] for item in results)
    shape = botocore.session.get_session().get_service_model("bedrock-runtime").operation_model("Converse").input_shape
    messages = [{"role": "user", "content": [{"text": "hi"}]}, *bedrock.next_messages(CALLS, results)]
    validate_parameters({"modelId": "m", "messages": messages}, shape)
    with pytest.raises(Exception, match="Unknown parameter"):
        validate_parameters(
            {"modelId": "m", "messages": [{"role": "user", "content": [{"toolResult": {"bogus": 1}}]}]}, shape
        )


@pytest.mark.parametrize(
    ("kind", "payload"),
    [
        (ChatCompletionToolMessageParam, {"role": "tool", "content": "x"}),  # no tool_call_id
        (ChatCompletionToolMessageParam, {"role": "tool", "tool_call_id": "a", "content": "x", "name": "t"}),
        (FunctionCallOutput, {"type": "function_call_output", "call_id": "a", "output": 1}),
        (ToolResultBlockParam, {"type": "tool_result", "tool_use_id": "a", "is_error": "yes"}),
        (genai.PartDict, {"function_response": {"name": "x", "response": "text"}}),
    ],
)
def test_the_validation_refuses_what_the_sdk_types_refuse(kind: Any, payload: dict[str, Any]) -> None:
    with pytest.raises((ValueError, AssertionError)):
        _validate(kind, payload)


def test_next_requests_built_from_sdk_objects_validate() -> None:
    from anthropic.types import Message
    from openai.types.chat import ChatCompletion
    from openai.types.responses import Response

    from test_ingest import CHAT, MESSAGE, RESPONSE

    def closed(calls: Any) -> tuple[ToolCallClosure, Snapshot]:
        closure = ToolCallClosure()
        snapshot = closure.close(closure.begin(calls).handle)
        assert isinstance(snapshot, Snapshot)
        return closure, snapshot

    response = Response.model_validate(RESPONSE)
    closure, snapshot = closed(openai_responses.ingest(response).calls)
    replayed = openai_responses.next_input(response, closure.to_openai_responses(snapshot))
    assert len(replayed) == 6
    for item in replayed:
        _validate(ResponseInputItemParam, item)
    completion = ChatCompletion.model_validate(CHAT)
    closure, snapshot = closed(openai_chat.ingest(completion).calls)
    for message in openai_chat.next_messages(completion, closure.to_openai_chat_completions(snapshot)):
        _validate(ChatCompletionMessageParam, message)
    sdk_message = Message.model_validate(MESSAGE)
    closure, snapshot = closed(anthropic.ingest(sdk_message).calls)
    for param in anthropic.next_messages(sdk_message, closure.to_anthropic_tool_results(snapshot)):
        TypeAdapter(MessageParam).validate_python(param, strict=True)


def test_ADP_5_an_export_renders_each_distinct_settlement_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from tool_call_closure import Snapshot, ToolCallClosure
    from tool_call_closure.providers import result_text as module

    rendered: list[object] = []
    real = module.record_text

    def counting(value: Any) -> str:
        rendered.append(value)
        return real(value)

    monkeypatch.setattr(module, "record_text", counting)
    closure = ToolCallClosure()
    batch = closure.begin([{"id": f"c{i}", "name": "t"} for i in range(6)])
    closure.succeed(batch.handle, "c0", "ok")
    closure.fail(batch.handle, "c1", "first")
    closure.fail(batch.handle, "c2", "second")
    snapshot = closure.close(batch.handle, {"message": "shared by the three pending calls"})
    chat = closure.to_openai_chat_completions(snapshot)
    assert len(rendered) == 3  # two reported failures and the one synthetic settlement c3..c5 share
    responses = closure.to_openai_responses(snapshot)
    anthropic = closure.to_anthropic_tool_results(snapshot)
    assert len(rendered) == 3  # rendered once for all the exports of the snapshot, not once per export
    closure.to_bedrock_tool_results(snapshot)
    assert len(rendered) == 3
    again = closure.close(batch.handle)  # a new snapshot: a memo of its own
    assert isinstance(again, Snapshot)
    closure.to_openai_chat_completions(again)
    assert len(rendered) == 6
    assert [m["content"] for m in chat] == [r["output"] for r in responses] == [b["content"] for b in anthropic]
    assert chat[3]["content"] == chat[5]["content"] == module.result_text(snapshot.calls[4].settlement)  # type: ignore[arg-type]
    assert '"message":"second"' in chat[2]["content"]


def test_ADP_4_render_tool_results_of_a_snapshot_equals_the_instance_export_of_its_records() -> None:
    """Each provider's public ``render_tool_results(snapshot)`` renders what the instance's export renders."""
    from tool_call_closure import Snapshot, ToolCallClosure
    from tool_call_closure.providers import anthropic, bedrock, gemini, openai_chat, openai_responses

    closure = ToolCallClosure()
    batch = closure.begin([{"id": f"c{i}", "name": "t"} for i in range(4)])
    closure.succeed(batch.handle, "c0", {"rows": [1, 2]})
    closure.fail(batch.handle, "c1", ValueError("broken"))
    closure.cancel(batch.handle, "c2")
    snapshot = closure.close(batch.handle, {"status": "error", "code": "stopped"})
    assert isinstance(snapshot, Snapshot)
    pairs = [
        (openai_chat, closure.to_openai_chat_completions),
        (openai_responses, closure.to_openai_responses),
        (anthropic, closure.to_anthropic_tool_results),
        (gemini, closure.to_gemini_function_responses),
        (bedrock, closure.to_bedrock_tool_results),
    ]
    for module, export in pairs:
        rendered = module.render_tool_results(snapshot)
        assert rendered == export(snapshot), module.__name__
        assert len(rendered) == 4
