"""One conversation per provider API, driven through the real SDK client against the provider stub.

Each :class:`Conversation` keeps the transcript the way a user of that SDK
keeps it, and has two ways to send tool results: :meth:`send` with the
library's export of a closed snapshot, and :meth:`send_naive` with results
assembled by hand from whatever the naive loop has.  ``ask`` sends the
transcript, appends the model's turn and returns its calls as ingestion
produces them (streamed or not).
"""

from __future__ import annotations

from typing import Any

import anthropic
import boto3
import openai
from google import genai
from google.genai import types as genai_types

from provider_stub import ProviderStub
from tool_call_closure import Snapshot, ToolCallClosure
from tool_call_closure.providers import Ingested, ToolCall, openai_chat, openai_responses
from tool_call_closure.providers import anthropic as anthropic_provider
from tool_call_closure.providers import bedrock as bedrock_provider
from tool_call_closure.providers import gemini as gemini_provider

__all__ = ["CONVERSATIONS", "STREAMING", "Conversation", "RefusedError"]

PROMPT = "Plan my trip to Paris."


class RefusedError(Exception):
    """The stub refused a request; ``message`` is the provider's error text it answered with."""

    def __init__(self, message: str, sdk_error: Exception) -> None:
        super().__init__(message)
        self.message = message
        self.sdk_error = sdk_error


class Conversation:
    provider: str
    streams: bool = False

    def __init__(self, stub: ProviderStub) -> None:
        self.stub = stub
        self.turn: Any = None  # the model's last turn as the SDK returned it (or the ingested calls of a stream)
        self.echo: list[Any] = []  # that turn as the naive loop echoes it into the transcript

    def ask(self, *, stream: bool = False) -> Ingested:
        raise NotImplementedError

    def send(self, closure: ToolCallClosure, snapshot: Snapshot, user_text: str | None = None) -> Ingested:
        """Append the library's results (and a user message after them), ask again."""
        raise NotImplementedError

    def send_naive(self, results: list[tuple[ToolCall, str]], user_text: str | None = None) -> Ingested:
        """Append results built by hand from what the naive loop has (and a user message), ask again."""
        raise NotImplementedError

    def refused(self, error: Exception) -> RefusedError:
        last = self.stub.requests[-1]
        assert last.error is not None, "the SDK raised, but the stub did not refuse"
        return RefusedError(last.error, error)


class ChatConversation(Conversation):
    provider = "openai_chat"
    streams = True

    def __init__(self, stub: ProviderStub) -> None:
        super().__init__(stub)
        self.client = openai.OpenAI(base_url=f"{stub.base_url}/v1", api_key="stub", max_retries=0, timeout=30)
        self.messages: list[Any] = [{"role": "user", "content": PROMPT}]

    def _create(self, stream: bool) -> Ingested:
        try:
            if not stream:
                completion = self.client.chat.completions.create(model="gpt-stub", messages=self.messages)
                self.turn, self.echo = completion, [completion.choices[0].message.model_dump(exclude_none=True)]
                return openai_chat.ingest(completion)
            accumulator = openai_chat.ChatStream()
            for chunk in self.client.chat.completions.create(model="gpt-stub", messages=self.messages, stream=True):
                accumulator.add(chunk)
        except openai.BadRequestError as error:
            raise self.refused(error) from error
        ingested = accumulator.finish()
        echo = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments_json}}
            for c in ingested.calls
        ]
        self.turn, self.echo = ingested.calls, [{"role": "assistant", "content": None, "tool_calls": echo}]
        return ingested

    def ask(self, *, stream: bool = False) -> Ingested:
        return self._create(stream)

    def send(self, closure: ToolCallClosure, snapshot: Snapshot, user_text: str | None = None) -> Ingested:
        self.messages.extend(openai_chat.next_messages(self.turn, closure.to_openai_chat_completions(snapshot)))
        if user_text is not None:
            self.messages.append({"role": "user", "content": user_text})
        return self._create(False)

    def send_naive(self, results: list[tuple[ToolCall, str]], user_text: str | None = None) -> Ingested:
        self.messages.extend(self.echo)
        self.messages.extend({"role": "tool", "tool_call_id": c.id, "content": text} for c, text in results)
        if user_text is not None:
            self.messages.append({"role": "user", "content": user_text})
        return self._create(False)


class ResponsesConversation(Conversation):
    provider = "openai_responses"
    streams = True

    def __init__(self, stub: ProviderStub) -> None:
        super().__init__(stub)
        self.client = openai.OpenAI(base_url=f"{stub.base_url}/v1", api_key="stub", max_retries=0, timeout=30)
        self.items: list[Any] = [{"role": "user", "content": PROMPT}]

    def _create(self, stream: bool) -> Ingested:
        try:
            if not stream:
                response = self.client.responses.create(model="gpt-stub", input=self.items)
                self.turn, self.echo = response, [item.model_dump(exclude_none=True) for item in response.output]
                return openai_responses.ingest(response)
            accumulator = openai_responses.ResponsesStream()
            for event in self.client.responses.create(model="gpt-stub", input=self.items, stream=True):
                accumulator.add(event)
        except openai.BadRequestError as error:
            raise self.refused(error) from error
        ingested = accumulator.finish()
        self.turn = ingested.calls
        self.echo = [
            {"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments_json}
            for c in ingested.calls
        ]
        return ingested

    def ask(self, *, stream: bool = False) -> Ingested:
        return self._create(stream)

    def send(self, closure: ToolCallClosure, snapshot: Snapshot, user_text: str | None = None) -> Ingested:
        self.items.extend(openai_responses.next_input(self.turn, closure.to_openai_responses(snapshot)))
        if user_text is not None:
            self.items.append({"role": "user", "content": user_text})
        return self._create(False)

    def send_naive(self, results: list[tuple[ToolCall, str]], user_text: str | None = None) -> Ingested:
        self.items.extend(self.echo)
        self.items.extend({"type": "function_call_output", "call_id": c.id, "output": text} for c, text in results)
        if user_text is not None:
            self.items.append({"role": "user", "content": user_text})
        return self._create(False)


class AnthropicConversation(Conversation):
    provider = "anthropic"
    streams = True

    def __init__(self, stub: ProviderStub) -> None:
        super().__init__(stub)
        self.client = anthropic.Anthropic(base_url=stub.base_url, api_key="stub", max_retries=0, timeout=30)
        self.messages: list[Any] = [{"role": "user", "content": PROMPT}]

    def _create(self, stream: bool) -> Ingested:
        try:
            if not stream:
                message = self.client.messages.create(model="claude-stub", max_tokens=1024, messages=self.messages)
                self.turn = message
                self.echo = [
                    {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]}
                ]
                return anthropic_provider.ingest(message)
            accumulator = anthropic_provider.AnthropicStream()
            for event in self.client.messages.create(
                model="claude-stub", max_tokens=1024, messages=self.messages, stream=True
            ):
                accumulator.add(event)
        except anthropic.BadRequestError as error:
            raise self.refused(error) from error
        ingested = accumulator.finish()
        blocks = [
            {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments if c.runnable else {}}
            for c in ingested.calls
        ]
        self.turn, self.echo = ingested.calls, [{"role": "assistant", "content": blocks}]
        return ingested

    def ask(self, *, stream: bool = False) -> Ingested:
        return self._create(stream)

    def send(self, closure: ToolCallClosure, snapshot: Snapshot, user_text: str | None = None) -> Ingested:
        results = closure.to_anthropic_tool_results(snapshot)
        then = () if user_text is None else user_text  # a new user message goes after the results
        self.messages.extend(anthropic_provider.next_messages(self.turn, results, then=then))
        return self._create(False)

    def send_naive(self, results: list[tuple[ToolCall, str]], user_text: str | None = None) -> Ingested:
        self.messages.extend(self.echo)
        blocks: list[Any] = [{"type": "tool_result", "tool_use_id": c.id, "content": text} for c, text in results]
        if user_text is not None:
            blocks.append({"type": "text", "text": user_text})
        self.messages.append({"role": "user", "content": blocks})
        return self._create(False)


class GeminiConversation(Conversation):
    provider = "gemini"

    def __init__(self, stub: ProviderStub) -> None:
        super().__init__(stub)
        self.client = genai.Client(api_key="stub", http_options=genai_types.HttpOptions(base_url=stub.base_url))
        self.contents: list[Any] = [{"role": "user", "parts": [{"text": PROMPT}]}]

    def _create(self) -> Ingested:
        try:
            response = self.client.models.generate_content(model="gemini-stub", contents=self.contents)
        except genai.errors.ClientError as error:
            raise self.refused(error) from error
        assert response.candidates
        assert response.candidates[0].content is not None
        self.turn, self.echo = response, [response.candidates[0].content]
        return gemini_provider.ingest(response)

    def ask(self, *, stream: bool = False) -> Ingested:
        assert not stream
        return self._create()

    def send(self, closure: ToolCallClosure, snapshot: Snapshot, user_text: str | None = None) -> Ingested:
        contents: list[Any] = gemini_provider.next_contents(self.turn, closure.to_gemini_function_responses(snapshot))
        if user_text is not None:
            contents[-1]["parts"].append({"text": user_text})
        self.contents.extend(contents)
        return self._create()

    def send_naive(self, results: list[tuple[ToolCall, str]], user_text: str | None = None) -> Ingested:
        self.contents.extend(self.echo)
        parts: list[Any] = [
            genai_types.Part.from_function_response(name=c.name, response={"output": text}) for c, text in results
        ]
        if user_text is not None:
            parts.append(genai_types.Part(text=user_text))
        self.contents.append(genai_types.Content(role="user", parts=parts))
        return self._create()


class BedrockConversation(Conversation):
    provider = "bedrock"

    def __init__(self, stub: ProviderStub) -> None:
        super().__init__(stub)
        self.client = boto3.client(
            "bedrock-runtime",
            region_name="us-east-1",
            endpoint_url=stub.base_url,
            aws_access_key_id="stub",
            aws_secret_access_key="stub",
        )
        self.messages: list[Any] = [{"role": "user", "content": [{"text": PROMPT}]}]

    def _create(self) -> Ingested:
        try:
            response = self.client.converse(modelId="stub.model", messages=self.messages)
        except self.client.exceptions.ValidationException as error:
            raise self.refused(error) from error
        self.turn, self.echo = response, [response["output"]["message"]]
        return bedrock_provider.ingest(response)

    def ask(self, *, stream: bool = False) -> Ingested:
        assert not stream
        return self._create()

    def send(self, closure: ToolCallClosure, snapshot: Snapshot, user_text: str | None = None) -> Ingested:
        messages: list[Any] = bedrock_provider.next_messages(self.turn, closure.to_bedrock_tool_results(snapshot))
        if user_text is not None:
            messages[-1]["content"].append({"text": user_text})
        self.messages.extend(messages)
        return self._create()

    def send_naive(self, results: list[tuple[ToolCall, str]], user_text: str | None = None) -> Ingested:
        self.messages.extend(self.echo)
        blocks: list[Any] = [{"toolResult": {"toolUseId": c.id, "content": [{"text": text}]}} for c, text in results]
        if user_text is not None:
            blocks.append({"text": user_text})
        self.messages.append({"role": "user", "content": blocks})
        return self._create()


CONVERSATIONS: dict[str, type[Conversation]] = {
    c.provider: c
    for c in (ChatConversation, ResponsesConversation, AnthropicConversation, GeminiConversation, BedrockConversation)
}
STREAMING = [name for name, c in CONVERSATIONS.items() if c.streams]
