"""Deviation D22: tool results made of content parts, recorded frozen and rendered natively by every export.

* the API: ``content([...])`` checks each part and refuses a bad one with
  ``content_part_invalid`` naming its index and field, and nothing changes;
  ``max_result_bytes`` bounds ``ToolContent.size`` (spec/README.md "Content parts");
* the matrix: every kind of part × the five exports (and their options) is
  validated strictly against the SDKs' own types (pydantic ``TypeAdapter``,
  strict, and no key the TypedDict does not define, at any depth; google-genai's
  models; botocore's service model), and every media part is either carried
  natively or listed by ``content_fallbacks`` (and noted in the text): none
  is dropped in silence;
* the provider stub (``stub_content.py``) refuses what each API refuses, and
  takes the exports as they are, through the real SDK clients.
"""

from __future__ import annotations

import base64
import collections.abc
import functools
import json
import types
import typing
from collections.abc import Callable, Iterable
from typing import Any, get_args, get_origin, get_type_hints

import pytest

from stub_content import ContentRefusalError, check_content
from tool_call_closure import (
    FileInput,
    ImageInput,
    JsonInput,
    LimitError,
    Snapshot,
    TextInput,
    ToolCallClosure,
    ToolContent,
    UsageError,
    content,
    to_json,
)
from tool_call_closure.parts import MAX_PARTS, ImagePart, JsonPart, PartInput, TextPart
from tool_call_closure.providers import (
    ProviderRuleError,
    ToolCall,
    anthropic,
    bedrock,
    gemini,
    openai_chat,
    openai_responses,
)
from tool_call_closure.providers.parts_render import content_fallbacks

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(24))
PDF = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj <<>> endobj\n%%EOF"

KINDS: dict[str, PartInput] = {
    "text": TextInput("ünïcode text"),
    "json": JsonInput({"rows": [1, 2.5, None], "ok": True}, schema={"type": "object"}),
    "image_bytes": ImageInput(media_type="image/png", data=PNG),
    "image_base64": ImageInput(media_type="image/jpeg", base64=base64.b64encode(PNG).decode()),
    "image_url": ImageInput(media_type="image/webp", url="https://example.com/chart.webp"),
    "image_gif": ImageInput(media_type="image/gif", data=b"GIF89a" + bytes(8)),
    "pdf_bytes": FileInput(name="Q3 report.pdf", media_type="application/pdf", data=PDF),
    "pdf_url": FileInput(name="r.pdf", media_type="application/pdf", url="https://example.com/r.pdf"),
    "text_file": FileInput(name="notes.txt", media_type="text/plain", data="plain ✓".encode()),
    "csv_file": FileInput(name="data.csv", media_type="text/csv", base64=base64.b64encode(b"a,b\n1,2").decode()),
    "text_url": FileInput(name="n.md", media_type="text/markdown", url="http://example.com/n.md"),
}
CALLS = (ToolCall("call_parts", "chart", {}, "{}"), ToolCall("call_err", "search", {}, "{}"))


def settled(result: ToolContent) -> tuple[ToolCallClosure, Snapshot]:
    closure = ToolCallClosure()
    batch = closure.begin(CALLS)
    closure.succeed(batch.handle, "call_parts", result)
    closure.fail(batch.handle, "call_err", TimeoutError("slow"))
    snapshot = closure.seal(batch.handle)
    assert isinstance(snapshot, Snapshot)
    return closure, snapshot


# --------------------------------------------------------------------------- the API


def test_D22_content_records_frozen_parts_and_counts_the_bytes_the_spec_names() -> None:
    result = content(["hé", KINDS["json"], KINDS["image_base64"], KINDS["pdf_url"]])
    text, data, image, _pdf = result.parts
    assert text == TextPart("hé")
    assert isinstance(data, JsonPart)
    assert data.value == {"rows": [1, 2.5, None], "ok": True}
    assert isinstance(image, ImagePart)
    assert image.data == PNG  # base64 decoded once, when recorded
    json_bytes = len('{"rows":[1,2.5,null],"ok":true}') + len('{"type":"object"}')
    assert result.size == 3 + json_bytes + len(PNG) + len("https://example.com/r.pdf")
    data.value["rows"].append(3)  # a copy: the record does not change
    assert data.value["rows"] == [1, 2.5, None]
    with pytest.raises(AttributeError):
        result.parts = ()  # type: ignore[misc]


def test_D22_succeed_and_settle_record_the_parts_and_the_limit_bounds_their_size() -> None:
    result = content(["abcd", KINDS["image_bytes"]])
    closure = ToolCallClosure(max_result_bytes=result.size)
    batch = closure.begin([{"id": "a", "name": "t"}, {"id": "b", "name": "t"}])
    accepted = closure.settle(batch.handle, "a", {"status": "success", "content": result})
    assert accepted.accepted
    assert accepted.settlement.content is result
    with pytest.raises(LimitError) as info:
        closure.succeed(batch.handle, "b", content(["abcd", KINDS["image_bytes"], "!"]))
    assert info.value.code == "content_too_large"
    snapshot = closure.snapshot()
    assert snapshot is not None
    assert snapshot.calls[1].state == "pending"  # nothing changed
    assert to_json(snapshot.calls[0].settlement).startswith('{"status":"success","content":{"$parts":[{"type":"text"')


BAD: list[tuple[Any, str]] = [
    ([b"raw"], "parts[0].text must be text, not bytes"),
    (["ok", TextInput(b"raw")], "parts[1].text must be text, not bytes"),  # type: ignore[arg-type]
    ([""], "parts[0].text must not be empty"),
    ([ImageInput(media_type="image/bmp", data=b"x")], "parts[0].media_type 'image/bmp' is not one of"),
    ([ImageInput(media_type="image/png", url="ftp://host/x.png")], "parts[0].url is not an absolute http(s) URL"),
    ([ImageInput(media_type="image/png", url="https:///x")], "parts[0].url is not an absolute"),
    ([ImageInput(media_type="image/png", base64="not base64!")], "parts[0].base64 is not valid base64"),
    ([ImageInput(media_type="image/png")], "parts[0].data needs exactly one of data, base64 or url"),
    ([ImageInput(media_type="image/png", data=b"x", url="https://e.com/x")], "needs exactly one"),
    ([ImageInput(media_type="image/png", data="text")], "parts[0].data must be bytes, not str"),  # type: ignore[arg-type]
    ([FileInput(name="a.pdf", media_type="application/zip", data=b"x")], "parts[0].media_type 'application/zip'"),
    ([FileInput(name="a.txt", media_type="text/plain", data=b"\xff")], "parts[0].data is not UTF-8 text"),
    ([FileInput(name=" ", media_type="application/pdf", data=PDF)], "parts[0].name must be a non-empty name"),
    ([JsonInput(float("nan"))], "parts[0].value holds a non-finite number"),
    ([JsonInput({1: "x"})], "parts[0].value has a key that is not a string"),
    ([JsonInput({"at": object()})], "parts[0].value is not JSON (a object)"),
    ([JsonInput(1, schema={"bad": {1, 2}})], "parts[0].schema is not JSON (a set)"),  # type: ignore[dict-item]
    ([42], "parts[0].type is not a part: int"),
    ([], "parts must not be empty"),
    ([ImageInput(media_type="image/png", data=b"")], "parts[0].data must not be empty"),
    (["x", ImageInput(media_type="image/png", base64="")], "parts[1].base64 must not be empty"),
    ([FileInput(name="a.txt", media_type="text/plain", data=b"")], "parts[0].data must not be empty"),
    (["x"] * (MAX_PARTS + 1), f"parts has {MAX_PARTS + 1} parts; at most 1000 are allowed"),
    ("text", "parts must be a list of parts"),
]


@pytest.mark.parametrize(("parts", "message"), BAD)
def test_D22_a_bad_part_is_refused_naming_its_index_and_field(parts: Any, message: str) -> None:
    with pytest.raises(UsageError) as info:
        content(parts)
    assert info.value.code == "content_part_invalid"
    assert message in str(info.value)


def test_D22_a_tool_content_not_built_by_content_is_refused_and_nothing_changes() -> None:
    import dataclasses

    closure = ToolCallClosure()
    batch = closure.begin([{"id": "a", "name": "t"}])
    forged = dataclasses.replace(content(["ok"]), parts=(TextPart(b"raw"),))  # type: ignore[arg-type]
    with pytest.raises(UsageError) as info:
        closure.succeed(batch.handle, "a", forged)
    assert info.value.code == "content_part_invalid"
    assert str(info.value) == "content is a ToolContent not built by content()"
    snapshot = closure.snapshot()
    assert snapshot is not None
    assert snapshot.calls[0].state == "pending"


# --------------------------------------------------------------------------- strict SDK types, at every depth


def _known_keys(hint: Any, value: Any) -> bool:
    """True if ``value`` fits ``hint`` with no key a TypedDict on the way does not define (pydantic ignores them)."""
    origin = get_origin(hint)
    if origin in (typing.Required, typing.NotRequired, typing.Annotated) or str(origin).endswith(
        ("Required", "Annotated")
    ):
        return _known_keys(get_args(hint)[0], value)
    if origin in (typing.Union, types.UnionType):
        return any(_known_keys(arg, value) for arg in get_args(hint))
    if (isinstance(hint, type) and typing.is_typeddict(hint)) or hasattr(hint, "__required_keys__"):
        if not isinstance(value, dict) or not set(value) <= (hint.__required_keys__ | hint.__optional_keys__):
            return False
        hints = _hints(hint)
        return all(_known_keys(hints[key], item) for key, item in value.items())
    if origin in (list, collections.abc.Iterable, collections.abc.Sequence) and isinstance(value, list):
        return all(_known_keys(get_args(hint)[0], item) for item in value)
    return True


@functools.cache
def _hints(kind: Any) -> dict[str, Any]:
    return get_type_hints(kind, include_extras=True)


@functools.cache
def _adapter(kind: Any) -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(kind)


def strict(kind: Any, value: Any) -> None:
    _adapter(kind).validate_python(value, strict=True)
    assert _known_keys(kind, value), value


def _each_strict(kind: Any, values: Iterable[Any]) -> list[Any]:
    """``values``, each checked by :func:`strict` against ``kind``."""
    checked = list(values)
    for value in checked:
        strict(kind, value)
    return checked


def _validate_chat(closure: ToolCallClosure, snapshot: Snapshot) -> list[Any]:
    from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolMessageParam

    payload = _each_strict(ChatCompletionToolMessageParam, closure.to_openai_chat_completions(snapshot))
    return _each_strict(ChatCompletionMessageParam, openai_chat.next_messages(CALLS, payload, media_from=snapshot))


def _validate_responses(closure: ToolCallClosure, snapshot: Snapshot) -> list[Any]:
    from openai.types.responses.response_input_item_param import FunctionCallOutput, ResponseInputItemParam

    payload = _each_strict(FunctionCallOutput, closure.to_openai_responses(snapshot))
    return _each_strict(ResponseInputItemParam, openai_responses.next_input(CALLS, payload))


def _validate_anthropic(closure: ToolCallClosure, snapshot: Snapshot) -> list[Any]:
    from anthropic.types import MessageParam, ToolResultBlockParam

    payload = _each_strict(ToolResultBlockParam, closure.to_anthropic_tool_results(snapshot))
    return _each_strict(MessageParam, anthropic.next_messages(CALLS, payload))


def _gemini_with(family: Any) -> Callable[[ToolCallClosure, Snapshot], list[Any]]:
    def validate(closure: ToolCallClosure, snapshot: Snapshot) -> list[Any]:
        from google.genai import types as genai

        payload = closure.to_gemini_function_responses(snapshot, family=family)
        for part in payload:
            genai.Part.model_validate(part)  # the SDK's model: unknown fields are refused, at any depth
        turn = {"role": "model", "parts": [{"function_call": {"id": c.id, "name": c.name, "args": {}}} for c in CALLS]}
        contents = gemini.next_contents(turn, payload, family=family)
        for item in contents:
            genai.Content.model_validate(item)
        return contents

    return validate


def _bedrock_with(media: bool) -> Callable[[ToolCallClosure, Snapshot], list[Any]]:
    def validate(closure: ToolCallClosure, snapshot: Snapshot) -> list[Any]:
        from botocore.validate import validate_parameters

        payload = closure.to_bedrock_tool_results(snapshot, media=media)
        shape = _converse_shape()
        turn = {"output": {"message": {"role": "assistant", "content": [
            {"toolUse": {"toolUseId": c.id, "name": c.name, "input": {}}} for c in CALLS
        ]}}}  # fmt: skip
        messages = bedrock.next_messages(turn, payload, media=media)
        validate_parameters(
            {"modelId": "m", "messages": [{"role": "user", "content": [{"text": "hi"}]}, *messages]}, shape
        )
        return messages

    return validate


@functools.cache
def _converse_shape() -> Any:
    import botocore.session

    return botocore.session.get_session().get_service_model("bedrock-runtime").operation_model("Converse").input_shape


EXPORTS: dict[str, tuple[str, dict[str, Any], Callable[[ToolCallClosure, Snapshot], list[Any]]]] = {
    "openai_chat": ("openai_chat", {}, _validate_chat),
    "openai_responses": ("openai_responses", {}, _validate_responses),
    "anthropic": ("anthropic", {}, _validate_anthropic),
    "gemini-3": ("gemini", {"family": "gemini-3"}, _gemini_with("gemini-3")),
    "gemini-2": ("gemini", {"family": "gemini-2"}, _gemini_with("gemini-2")),
    "bedrock": ("bedrock", {"media": True}, _bedrock_with(True)),
    "bedrock-no-media": ("bedrock", {"media": False}, _bedrock_with(False)),
}


def _native_media(export: str, payload: Any) -> int:
    """How many media items the export's payload carries natively (the media message included, for Chat)."""
    text = json.dumps(payload, default=lambda value: "<bytes>")
    markers = {
        "openai_chat": ('"type": "image_url"', '"type": "file"'),
        "openai_responses": ('"type": "input_image"', '"type": "input_file"'),
        "anthropic": ('"type": "image"', '"type": "document"'),
        "gemini": ('"inline_data"', '"file_data"'),
        "bedrock": ('{"image": {', '{"document": {'),
    }[export]
    return sum(text.count(marker) for marker in markers)


@pytest.mark.parametrize("export", list(EXPORTS))
@pytest.mark.parametrize("kind", list(KINDS))
def test_D22_every_part_kind_in_every_export_passes_the_sdk_types_and_none_is_dropped_silently(
    kind: str, export: str
) -> None:
    name, options, validate = EXPORTS[export]
    result = content(["Here it is:", KINDS[kind]])
    closure, snapshot = settled(result)
    payload = validate(closure, snapshot)
    fallbacks = content_fallbacks(snapshot, name, **options)
    media = 0 if kind in ("text", "json") else 1
    text_file = kind in ("text_file", "csv_file")
    natively = _native_media(name, payload)
    if name == "openai_chat" and fallbacks:  # moved to the user message: carried natively there, and listed
        assert natively + sum("a file by URL" in json.dumps(m) for m in payload[-1:]) >= 1
    elif text_file:
        assert not fallbacks  # a text file becomes text (or a document) everywhere
    else:
        assert natively + len(fallbacks) == media, (natively, fallbacks)
    for fallback in fallbacks:  # the note stands in its place in the text the model reads
        assert fallback.call_id == "call_parts"
        assert fallback.why in json.dumps(payload, default=str)


def test_D22_preflights_refuse_media_where_the_model_refuses_them_and_say_why() -> None:
    closure, snapshot = settled(content(["see", KINDS["image_bytes"]]))
    chat = closure.to_openai_chat_completions(snapshot)
    chat[0]["content"] = [{"type": "image_url", "image_url": {"url": "https://e.com/x.png"}}]  # type: ignore[typeddict-item]
    with pytest.raises(ProviderRuleError, match="a tool message takes text only"):
        openai_chat.next_messages(CALLS, chat)
    results = closure.to_bedrock_tool_results(snapshot)
    with pytest.raises(ProviderRuleError, match="refuses media in a tool result"):
        bedrock.next_messages(_bedrock_turn(), results, media=False)
    responses = closure.to_gemini_function_responses(snapshot)
    turn = {"role": "model", "parts": [{"function_call": {"id": c.id, "name": c.name, "args": {}}} for c in CALLS]}
    with pytest.raises(ProviderRuleError, match=r"Gemini 2\.x"):
        gemini.next_contents(turn, responses, family="gemini-2")
    with pytest.raises(UsageError):
        closure.to_gemini_function_responses(snapshot, family="gemini-1")  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        closure.to_bedrock_tool_results(snapshot, media="no")  # type: ignore[arg-type]


def test_D22_gemini_2_preflight_refuses_media_beside_the_function_responses() -> None:
    # Gemini 2.x counts a media part beside the function responses as a response part and fails its count check
    # (gemini-cli#16135): the preflight says so, with the API's text, before the request is sent.
    closure, snapshot = settled(content(["see", KINDS["image_bytes"]]))
    turn = {"role": "model", "parts": [{"function_call": {"id": c.id, "name": c.name, "args": {}}} for c in CALLS]}
    responses = closure.to_gemini_function_responses(snapshot, family="gemini-2")
    contents: list[Any] = list(gemini.next_contents(turn, responses, family="gemini-2"))  # the library's: passes
    sibling = {"inline_data": {"mime_type": "image/png", "data": b"\x89PNG"}}
    contents[-1] = {"role": "user", "parts": [*contents[-1]["parts"], sibling]}
    with pytest.raises(ProviderRuleError, match="number of function response parts") as refused:
        gemini.check_contents(contents, family="gemini-2")
    assert refused.value.index == 1
    assert "contents[1].parts[2]: inline_data beside function responses" in str(refused.value)
    gemini.check_contents(contents)  # Gemini 3's rule is another matter: not refused here
    media_alone = [{"role": "user", "parts": [sibling]}]
    gemini.check_contents(media_alone, family="gemini-2")  # media in a user turn that answers no call: fine


def _bedrock_turn() -> dict[str, Any]:
    blocks = [{"toolUse": {"toolUseId": c.id, "name": c.name, "input": {}}} for c in CALLS]
    return {"output": {"message": {"role": "assistant", "content": blocks}}}


def test_D22_text_results_render_exactly_as_before() -> None:
    closure = ToolCallClosure()
    batch = closure.begin(CALLS)
    closure.succeed(batch.handle, "call_parts", {"a": 1})
    closure.fail(batch.handle, "call_err", "x")
    snapshot = closure.seal(batch.handle)
    assert isinstance(snapshot, Snapshot)
    assert closure.to_anthropic_tool_results(snapshot)[0]["content"] == '{"a":1}'
    assert closure.to_bedrock_tool_results(snapshot, media=False) == closure.to_bedrock_tool_results(snapshot)
    assert closure.to_gemini_function_responses(snapshot, family="gemini-2") == closure.to_gemini_function_responses(
        snapshot
    )
    assert openai_chat.next_messages(CALLS, closure.to_openai_chat_completions(snapshot), media_from=snapshot) == (
        openai_chat.next_messages(CALLS, closure.to_openai_chat_completions(snapshot))
    )


# --------------------------------------------------------------------------- the stub's content rules


@pytest.mark.parametrize(
    ("provider", "path", "body"),
    [
        ("openai_chat", "/v1/chat/completions", {"messages": [{"role": "tool", "content": [{"type": "image_url"}]}]}),
        ("openai_responses", "/v1/responses", {"input": [{"type": "function_call_output", "output": [
            {"type": "input_file", "file_data": "data:application/pdf;base64,JVBE"}]}]}),
        ("anthropic", "/v1/messages", {"messages": [{"role": "user", "content": [{"type": "tool_result", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/bmp", "data": "AA=="}}]}]}]}),
        ("gemini", "/v1beta/models/gemini-2.5-flash:generateContent", {"contents": [{"parts": [
            {"functionResponse": {"name": "t", "parts": [{"inlineData": {"mimeType": "image/png", "data": "AA=="}}]}}]}]}),
        ("bedrock", "/model/m.no-media/converse", {"messages": [{"role": "user", "content": [{"toolResult": {
            "content": [{"image": {"format": "png", "source": {"bytes": "AA=="}}}]}}]}]}),
        ("bedrock", "/model/m/converse", {"messages": [{"role": "user", "content": [{"toolResult": {
            "content": [{"document": {"format": "pdf", "name": "a.pdf", "source": {"bytes": "AA=="}}}]}}]}]}),
    ],
)  # fmt: skip
def test_D22_the_stub_refuses_what_each_api_refuses(provider: str, path: str, body: dict[str, Any]) -> None:
    with pytest.raises(ContentRefusalError):
        check_content(provider, path, body)


# --------------------------------------------------------------------------- the runners


def test_D22_a_tool_that_returns_parts_is_run_and_recorded_and_an_oversize_one_is_an_explicit_error() -> None:
    import asyncio

    from tool_call_closure.runners import run_tool_calls

    async def chart(**_: Any) -> ToolContent:
        return content(["chart:", KINDS["image_bytes"]])

    async def huge(**_: Any) -> ToolContent:
        return content(["x" * 64])

    closure = ToolCallClosure(max_result_bytes=48)
    run = asyncio.run(run_tool_calls(closure, CALLS, {"chart": chart, "search": huge}))
    first, second = run.snapshot.calls
    assert first.settlement is not None
    assert isinstance(first.settlement.content, ToolContent)
    assert second.settlement is not None
    assert (second.state, second.settlement.code) == ("error", "result_too_large")


def test_D22_mistral_takes_the_chat_fallback_with_its_own_document_chunks() -> None:
    from tool_call_closure.providers import mistral

    closure, snapshot = settled(content(["see", KINDS["image_bytes"], KINDS["pdf_bytes"], KINDS["pdf_url"]]))
    messages = openai_chat.next_messages(CALLS, closure.to_openai_chat_completions(snapshot), media_from=snapshot)
    mapped = mistral.to_mistral_messages(messages)
    assert [m["role"] for m in mapped] == ["assistant", "tool", "tool", "user"]
    kinds = [part["type"] for part in mapped[-1]["content"]]
    assert kinds == ["text", "image_url", "document_url", "text"]  # the PDF by URL: a note (Chat takes files inline)
    assert all(len(m.get("tool_call_id", "x" * 9)) == 9 for m in mapped)


def test_D22_a_copy_or_a_pickle_of_a_result_is_still_a_result() -> None:
    import copy
    import pickle

    result = content(["x", KINDS["json"], KINDS["image_url"], KINDS["text_file"]])
    loaded = pickle.loads(pickle.dumps(result))
    assert copy.copy(result) is result
    assert copy.deepcopy(result) is result
    assert loaded == result
    assert loaded is not result
    closure = ToolCallClosure()
    batch = closure.begin(CALLS)
    assert closure.succeed(batch.handle, "call_parts", loaded).accepted
    assert closure.succeed(batch.handle, "call_err", copy.deepcopy(result)).accepted
