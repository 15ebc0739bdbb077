"""Every MCP result shape, mapped to the call's outcome, in every provider export: valid, and nothing dropped silently.

Each shape of ``CallToolResult`` in ``tests/mcp_shapes.py`` (the ones ``tests/mcp_server.py`` answers with) is
mapped by :func:`~tool_call_closure.runners.mcp_results.outcome_of` exactly as the MCP runner maps a server's
answer, recorded in a closure, and exported to each of the five providers (with the model-family options where
an export has them).  Every payload, and the next request built from it, is validated as
``tests/test_sdk_payloads.py`` validates the text exports — strictly against the SDKs' own types, by
google-genai's models and botocore's service model — and passes the provider stub's rules
(``tests/provider_stub.py``).  Then nothing is lost: every content item of the MCP result is a part of the
outcome or a text that says what it was (reported as an :class:`McpFallback`), and every part reaches the
payload — natively, or as a note the export lists in ``content_fallbacks``.
"""

from __future__ import annotations

import base64
import functools
import json
from collections.abc import Iterable
from typing import Any, get_args

import botocore.session
import mcp_types
import pytest
from anthropic.types import MessageParam, ToolResultBlockParam
from botocore.validate import validate_parameters
from google.genai import types as genai
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolMessageParam
from openai.types.responses.response_input_item_param import FunctionCallOutput, ResponseInputItemParam
from pydantic import TypeAdapter
from typing_extensions import is_typeddict

from mcp_shapes import SHAPES
from provider_stub import check_anthropic, check_bedrock, check_chat, check_gemini, check_responses
from stub_content import STUB_CASES, check_content, send_results, strings_in
from test_sdk_payloads import _BedrockMessage
from tool_call_closure import BatchHandle, Snapshot, ToolCallClosure
from tool_call_closure.parts import FilePart, ImagePart, JsonPart, TextPart, ToolContent
from tool_call_closure.providers import ToolCall, anthropic, bedrock, gemini, openai_chat, openai_responses
from tool_call_closure.providers.parts_render import content_fallbacks
from tool_call_closure.runners.mcp_results import McpFallback, outcome_of
from tool_call_closure.runners.outcomes import ToolCallError

EXPORTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("openai_chat", {}),
    ("openai_responses", {}),
    ("anthropic", {}),
    ("gemini", {}),
    ("gemini", {"family": "gemini-2"}),
    ("bedrock", {}),
    ("bedrock", {"media": False}),
)
SCHEMA = {"type": "object", "properties": {"temperature": {"type": "number"}, "unit": {"type": "string"}}}
USER = "What is the weather?"


@functools.cache
def _adapter(kind: Any) -> TypeAdapter[Any]:
    return TypeAdapter(kind)


def _validate(kind: Any, value: Any) -> None:
    """As ``tests/test_sdk_payloads.py`` validates (strict, then no key the TypedDict lacks), adapters built once."""
    _adapter(kind).validate_python(value, strict=True)
    members = [m for m in get_args(kind) if is_typeddict(m)] if not is_typeddict(kind) else [kind]
    if members and isinstance(value, dict):
        assert any(set(value) <= (m.__required_keys__ | m.__optional_keys__) for m in members), value


def _tool(name: str) -> mcp_types.Tool:
    schema = SCHEMA if name == "structured" else None
    return mcp_types.Tool(name=name, input_schema={"type": "object"}, output_schema=schema)


def _record(closure: ToolCallClosure, handle: BatchHandle, call: ToolCall, fallbacks: list[McpFallback]) -> None:
    """The answer of the shape ``call.name`` as the MCP runner records it: the mapped value, or the error the server
    reported."""
    try:
        value = outcome_of(SHAPES[call.name], _tool(call.name), call_id=call.id, on_fallback=fallbacks.append)
    except ToolCallError as error:
        closure.fail(handle, call.id, error.message, error.code)
    else:
        closure.succeed(handle, call.id, value)


@functools.cache
def _recorded(shape: str) -> tuple[ToolCallClosure, Snapshot, ToolCall, tuple[McpFallback, ...]]:
    """The shape recorded as the MCP runner records it, in a sealed batch of its own."""
    call = ToolCall(f"call_{shape}", shape, {}, "{}")
    closure = ToolCallClosure()
    handle = closure.begin([call]).handle
    fallbacks: list[McpFallback] = []
    _record(closure, handle, call, fallbacks)
    snapshot = closure.seal(handle)
    assert isinstance(snapshot, Snapshot)
    return closure, snapshot, call, tuple(fallbacks)


def _bytes_as_base64(value: object) -> str:
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(type(value).__name__)


def _each_valid(kind: Any, values: Iterable[Any]) -> list[Any]:
    """``values``, each checked by :func:`_validate` against ``kind``."""
    checked = list(values)
    for value in checked:
        _validate(kind, value)
    return checked


def _chat(closure: ToolCallClosure, snapshot: Snapshot, calls: tuple[ToolCall, ...]) -> list[Any]:
    results = _each_valid(ChatCompletionToolMessageParam, closure.to_openai_chat_completions(snapshot))
    messages = _each_valid(ChatCompletionMessageParam, openai_chat.next_messages(calls, results, media_from=snapshot))
    conversation = [{"role": "user", "content": USER}, *messages]
    check_content("openai_chat", "/v1/chat/completions", {"model": "gpt-4.1", "messages": conversation})
    check_chat(conversation)
    return messages


def _responses(closure: ToolCallClosure, snapshot: Snapshot, calls: tuple[ToolCall, ...]) -> list[Any]:
    outputs = _each_valid(FunctionCallOutput, closure.to_openai_responses(snapshot))
    items = _each_valid(ResponseInputItemParam, openai_responses.next_input(calls, outputs))
    check_content("openai_responses", "/v1/responses", {"model": "gpt-4.1", "input": items})
    check_responses(items)
    return items


def _anthropic(closure: ToolCallClosure, snapshot: Snapshot, calls: tuple[ToolCall, ...]) -> list[Any]:
    results = _each_valid(ToolResultBlockParam, closure.to_anthropic_tool_results(snapshot))
    messages = list(anthropic.next_messages(calls, results))
    for message in messages:
        _adapter(MessageParam).validate_python(message, strict=True)
    conversation = [{"role": "user", "content": USER}, *messages]
    check_content("anthropic", "/v1/messages", {"model": "claude", "messages": conversation})
    check_anthropic(conversation)
    return messages


def _gemini(closure: ToolCallClosure, snapshot: Snapshot, calls: tuple[ToolCall, ...], **options: Any) -> list[Any]:
    parts = closure.to_gemini_function_responses(snapshot, **options)
    for part in parts:
        _validate(genai.PartDict, part)
        assert genai.Part.model_validate(part).function_response is not None
    model_turn = {
        "role": "model",
        "parts": [{"function_call": {"id": c.id, "name": c.name, "args": {}}} for c in calls],
    }
    contents = list(gemini.next_contents(model_turn, parts, **options))
    wire = []
    for content in contents:
        _validate(genai.ContentDict, content)
        wire.append(genai.Content.model_validate(content).model_dump(mode="json", by_alias=True, exclude_none=True))
    conversation = [{"role": "user", "parts": [{"text": USER}]}, *wire]
    model = "gemini-2.5-flash" if options.get("family") == "gemini-2" else "gemini-3-pro-preview"
    raw = json.loads(json.dumps({"contents": [conversation[0], *contents]}, default=_bytes_as_base64))
    check_content("gemini", f"/v1beta/models/{model}:generateContent", raw)
    check_gemini(conversation)
    return contents


def _bedrock(closure: ToolCallClosure, snapshot: Snapshot, calls: tuple[ToolCall, ...], **options: Any) -> list[Any]:
    results = closure.to_bedrock_tool_results(snapshot, **options)
    messages = list(bedrock.next_messages(calls, results, **options))
    adapter = _adapter(_BedrockMessage)
    for message in messages:
        adapter.validate_python({"message": message}, strict=True)
    conversation = [{"role": "user", "content": [{"text": USER}]}, *messages]
    validate_parameters({"modelId": "m", "messages": conversation}, _converse_shape())
    model = "stub.no-media" if options.get("media") is False else "stub.model"
    wire = json.loads(json.dumps({"messages": conversation}, default=_bytes_as_base64))
    check_content("bedrock", f"/model/{model}/converse", wire)
    check_bedrock(conversation)
    return messages


@functools.cache
def _converse_shape() -> Any:
    return botocore.session.get_session().get_service_model("bedrock-runtime").operation_model("Converse").input_shape


RENDER = {
    "openai_chat": _chat,
    "openai_responses": _responses,
    "anthropic": _anthropic,
    "gemini": _gemini,
    "bedrock": _bedrock,
}


def _appears(needle: str, haystack: str) -> bool:
    """``needle`` is in the serialized payload, as it is or as the inside of a JSON string."""
    return needle in haystack or json.dumps(needle, ensure_ascii=False)[1:-1] in haystack


def _carried(part: object, payload: str) -> bool:
    if isinstance(part, TextPart):
        return _appears(part.text, payload)
    if isinstance(part, JsonPart):
        compact = json.dumps(part.value, ensure_ascii=False, separators=(",", ":"))
        spaced = json.dumps(part.value, ensure_ascii=False)
        return any(_appears(form, payload) for form in (compact, spaced))
    assert isinstance(part, ImagePart | FilePart)
    if part.data is None:
        return part.url is not None and _appears(part.url, payload)
    inline = base64.b64encode(part.data).decode("ascii") in payload
    if isinstance(part, FilePart) and part.media_type.startswith("text/"):  # its text, or the file itself
        return inline or _appears(part.data.decode("utf-8"), payload)
    return inline


def _content_items(shape: str) -> int:
    result = SHAPES[shape]
    return len(result.content) + (result.structured_content is not None)


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize(
    ("export", "options"), EXPORTS, ids=[f"{e}{''.join(f'-{v}' for v in o.values())}" for e, o in EXPORTS]
)
def test_an_mcp_result_in_an_export_is_valid_and_complete(shape: str, export: str, options: dict[str, Any]) -> None:
    closure, snapshot, call, mcp_fallbacks = _recorded(shape)
    payload = RENDER[export](closure, snapshot, (call,), **options)
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), default=_bytes_as_base64)
    settlement = snapshot.calls[0].settlement
    assert settlement is not None
    result = SHAPES[shape]
    if settlement.status != "success":  # isError: the server's own text, and its structured content, as the message
        assert result.is_error
        assert settlement.code == "tool_error"
        for item in result.content:
            assert _appears(item.text, str(settlement.message))  # type: ignore[union-attr]
            assert _appears(item.text, text)  # type: ignore[union-attr]
        if result.structured_content is not None:
            compact = json.dumps(result.structured_content, separators=(",", ":"))
            assert compact in str(settlement.message)
        return
    value = settlement.content
    parts = value.parts if isinstance(value, ToolContent) else ((TextPart(value),) if value else ())
    assert len(parts) == _content_items(shape), "every content item is a part (or a text saying what it was)"
    notes = {(f.call_id, f.index) for f in content_fallbacks(snapshot, export, **options)}
    for index, part in enumerate(parts):
        assert _carried(part, text) or (call.id, index) in notes, (export, part)
    for fallback in mcp_fallbacks:
        assert fallback.text in [p.text for p in parts if isinstance(p, TextPart)]


def test_the_shapes_cover_every_kind_of_mcp_content() -> None:
    kinds = {item.type for result in SHAPES.values() for item in result.content}
    assert kinds == {"text", "image", "audio", "resource_link", "resource"}
    assert any(r.structured_content is not None and r.is_error for r in SHAPES.values())
    assert any(r.structured_content is not None and not r.content for r in SHAPES.values())
    assert len(SHAPES) >= 12


def test_what_has_no_provider_slot_is_reported_as_a_fallback() -> None:
    reported = {shape: [f.item_type for f in _recorded(shape)[3]] for shape in SHAPES}
    assert reported["audio"] == ["audio"]
    assert reported["image_svg"] == ["image"]
    assert reported["embedded_zip"] == ["resource"]
    assert not reported["image"]
    assert not reported["embedded_pdf"]
    assert not reported["mixed"]


@pytest.mark.slow  # a provider stub and five real SDK clients
@pytest.mark.parametrize(("provider", "model", "options"), STUB_CASES)
def test_every_mcp_shape_through_the_real_sdk_client_is_taken_by_the_provider_stub(
    provider: str, model: str | None, options: dict[str, Any]
) -> None:
    from conversations import CONVERSATIONS
    from provider_stub import Call, ProviderStub, Turn
    from test_content_parts_stub import IDS, ModelBedrock, ModelGemini

    prefix = IDS[provider]
    calls = tuple(Call(None if prefix is None else f"{prefix}{name}", name) for name in SHAPES)
    with ProviderStub(max_requests=4) as stub:
        stub.script(provider, [Turn(calls)])
        kind = {"gemini": ModelGemini, "bedrock": ModelBedrock}.get(provider, CONVERSATIONS[provider])
        conversation = kind(stub)
        if model is not None:
            conversation.model = model
        ingested = conversation.ask()
        closure = ToolCallClosure()
        handle = closure.begin(ingested.calls).handle
        fallbacks: list[McpFallback] = []
        for tool_call in ingested.calls:
            _record(closure, handle, tool_call, fallbacks)
        snapshot = closure.seal(handle)
        assert isinstance(snapshot, Snapshot)
        send_results(provider, conversation, closure, snapshot, **options)
        assert stub.refusals() == []
        sent = "\n".join(strings_in(stub.requests[-1].body))
    for note in [f.why for f in content_fallbacks(snapshot, provider, **options)] + [f.text for f in fallbacks]:
        assert note in sent  # what the model reads where a part could not go natively
