"""Deviation D22 end to end: a result made of every kind of part, through the real SDK clients, to the provider stub.

The stub (``stub_content.py``) checks each request against the provider's
native content rules; each export (with the option its model needs) is
accepted, and the same payload sent where the model refuses it is refused,
so the options and the preflights are about something real.  One model turn
and one answer per case: bounded traffic on 127.0.0.1.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest

from conversations import CONVERSATIONS, BedrockConversation, GeminiConversation, RefusedError
from provider_stub import Call, ProviderStub, Turn
from stub_content import STUB_CASES, send_results, strings_in
from tool_call_closure import FileInput, ImageInput, JsonInput, Snapshot, ToolCallClosure, content
from tool_call_closure.providers import Ingested, bedrock, gemini, openai_chat
from tool_call_closure.providers.parts_render import content_fallbacks

pytestmark = pytest.mark.slow  # a server and five SDK clients

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(24))
EVERYTHING = content(
    [
        "Sales chart and report:",
        ImageInput(media_type="image/png", data=PNG),
        ImageInput(media_type="image/jpeg", url="https://example.com/c.jpg"),
        FileInput(name="Q3 report.pdf", media_type="application/pdf", base64=base64.b64encode(b"%PDF-1.4").decode()),
        FileInput(name="notes.txt", media_type="text/plain", data=b"plain notes"),
        JsonInput({"total": 1234}, schema={"type": "object"}),
    ]
)
IDS = {
    "openai_chat": "call_",
    "openai_responses": "call_",
    "anthropic": "toolu_",
    "bedrock": "tooluse_",
    "gemini": None,
}


class ModelGemini(GeminiConversation):
    model = "gemini-3-pro-preview"

    def _create(self) -> Ingested:
        from google import genai

        try:
            response = self.client.models.generate_content(model=self.model, contents=self.contents)
        except genai.errors.ClientError as error:
            raise self.refused(error) from error
        assert response.candidates
        self.turn = response
        return gemini.ingest(response)


class ModelBedrock(BedrockConversation):
    model = "stub.model"

    def _create(self) -> Ingested:
        try:
            response = self.client.converse(modelId=self.model, messages=self.messages)
        except self.client.exceptions.ValidationException as error:
            raise self.refused(error) from error
        self.turn = response
        return bedrock.ingest(response)


@pytest.fixture
def stub() -> Iterator[ProviderStub]:
    with ProviderStub(max_requests=20) as server:
        yield server


def _settled(ingested: Ingested) -> tuple[ToolCallClosure, Snapshot]:
    closure = ToolCallClosure()
    batch = closure.begin(ingested.calls)
    closure.succeed(batch.handle, ingested.calls[0].id, EVERYTHING)
    closure.fail(batch.handle, ingested.calls[1].id, TimeoutError("slow"))
    snapshot = closure.seal(batch.handle)
    assert isinstance(snapshot, Snapshot)
    return closure, snapshot


def _start(stub: ProviderStub, provider: str, model: str | None = None) -> tuple[Any, ToolCallClosure, Snapshot]:
    prefix = IDS[provider]
    calls = tuple(Call(None if prefix is None else f"{prefix}{n}", n) for n in ("chart", "search"))
    stub.script(provider, [Turn(calls)])
    kind = {"gemini": ModelGemini, "bedrock": ModelBedrock}.get(provider, CONVERSATIONS[provider])
    conversation = kind(stub)
    if model is not None:
        conversation.model = model  # type: ignore[attr-defined]
    closure, snapshot = _settled(conversation.ask())
    return conversation, closure, snapshot


@pytest.mark.parametrize(("provider", "model", "options"), STUB_CASES)
def test_D22_every_export_of_every_part_kind_is_taken_by_the_provider_stub(
    stub: ProviderStub, provider: str, model: str | None, options: dict[str, Any]
) -> None:
    conversation, closure, snapshot = _start(stub, provider, model)
    send_results(provider, conversation, closure, snapshot, **options)
    assert stub.refusals() == []
    name = provider
    sent = strings_in(stub.requests[-1].body)
    for fallback in content_fallbacks(snapshot, name, **options):
        assert any(fallback.why in text for text in sent)  # the note the model reads


@pytest.mark.parametrize(
    ("provider", "model", "refused"),
    [
        ("gemini", "gemini-2.5-flash", "does not support parts in a function response"),
        ("bedrock", "stub.no-media", "doesn't support the image content block"),
    ],
)
def test_D22_without_the_option_the_model_refuses_the_media(
    stub: ProviderStub, provider: str, model: str, refused: str
) -> None:
    conversation, closure, snapshot = _start(stub, provider, model)
    with pytest.raises(RefusedError, match=refused):
        send_results(provider, conversation, closure, snapshot)


def test_D22_chat_media_in_a_tool_message_is_refused_by_the_stub(stub: ProviderStub) -> None:
    conversation, closure, snapshot = _start(stub, "openai_chat")
    tool = closure.to_openai_chat_completions(snapshot)
    naive: list[Any] = [dict(message) for message in openai_chat.next_messages(conversation.turn, tool)]
    naive[1]["content"] = [{"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]
    conversation.messages.extend(naive)
    with pytest.raises(RefusedError, match="a tool message takes only 'text' parts"):
        conversation._create(False)


COUNT_CHECK = (
    "Please ensure that the number of function response parts is equal to the number of function call parts "
    "of the function call turn."
)


def test_D22_gemini_2_media_beside_the_function_responses_break_the_count_and_the_gemini_2_export_passes(
    stub: ProviderStub,
) -> None:
    # Gemini 2.x has no media in a function response; sending them as sibling inline_data / file_data parts of the
    # answering Content (gemini-cli#16135) is refused with the count check's text, not a content rule of the stub.
    conversation, closure, snapshot = _start(stub, "gemini", "gemini-2.5-flash")
    multimodal: list[Any] = [dict(part) for part in closure.to_gemini_function_responses(snapshot)]  # gemini-3
    siblings: list[dict[str, Any]] = []
    for index, part in enumerate(multimodal):
        response = dict(part["function_response"])
        for media in response.pop("parts", []):
            inline = media.get("inline_data")
            if inline is not None:  # a Part's Blob: no display_name in the Gemini API
                siblings.append({"inline_data": {"mime_type": inline["mime_type"], "data": inline["data"]}})
            else:
                siblings.append(dict(media))
        multimodal[index] = {"function_response": response}
    assert len(siblings) == 4
    naive = gemini.next_contents(conversation.turn, multimodal, family="gemini-2")  # the preflight sees no parts
    naive[-1]["parts"].extend(siblings)
    conversation.contents.extend(naive)
    with pytest.raises(RefusedError) as refused:
        conversation._create()
    assert refused.value.message == COUNT_CHECK
    assert not refused.value.message.startswith("STUB:")  # the provider's own text
    del conversation.contents[-len(naive) :]
    send_results("gemini", conversation, closure, snapshot, family="gemini-2")  # a note per media part: taken
    assert [r.status for r in stub.requests[-2:]] == [400, 200]
