"""Streams through the real SDKs against the provider stub: a whole turn, and a turn whose connection drops.

For each API the SDK's own stream objects go into the accumulator.  A whole
turn gives exactly the scripted calls, and the next request built from the
stream (the whole turn echoed: text and calls) is accepted by the stub's
pairing rules.  A cut turn shows which exception the SDK raises for a dropped
connection (the stub ends the chunked body early, as a dropped connection
does), that ``finish()`` then answers every call and runs none (the opt-in
``unfinished="run_complete"`` runs the complete ones), and that the next
request with those answers is accepted.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import boto3
import httpx2
import openai
import pytest
import urllib3
from google import genai
from google.genai import types as genai_types

from provider_stub import Call, ProviderStub, Turn
from tool_call_closure import ToolCallClosure
from tool_call_closure.providers import anthropic as anthropic_provider
from tool_call_closure.providers import bedrock, gemini, openai_chat, openai_responses

PROMPT = "Plan my trip to Paris."
CALLS = {
    provider: tuple(
        Call(None if prefix is None else f"{prefix}{name}", name, json.dumps({"city": "Paris", "n": n}))
        for n, name in enumerate(("weather", "hotels"))
    )
    for provider, prefix in (
        ("openai_chat", "call_"),
        ("openai_responses", "call_"),
        ("anthropic", "toolu_"),
        ("gemini", None),
        ("bedrock", "tooluse_"),
    )
}
# Events of the turn sent before the connection drops: the first call whole, the second started.
CUT_AFTER = {"openai_chat": 5, "openai_responses": 7, "anthropic": 6, "gemini": 1, "bedrock": 6}
# What the SDK raises for a dropped connection (read in its source: openai wraps the transport error in
# Stream._iter_events; anthropic, google-genai and botocore let it through).
CUT_RAISES: dict[str, type[BaseException]] = {
    "openai_chat": openai.APIConnectionError,
    "openai_responses": openai.APIConnectionError,
    "anthropic": httpx2.RemoteProtocolError,
    "gemini": httpx2.RemoteProtocolError,
    "bedrock": urllib3.exceptions.ProtocolError,
}


class Driver:
    """One API: stream a request into its accumulator, and send the next request built from the stream."""

    def __init__(self, provider: str, stub: ProviderStub) -> None:
        self.provider = provider
        self.stub = stub
        self.history: list[Any] = []

    def events(self) -> Iterator[Any]:
        raise NotImplementedError

    def send(self, stream: Any, closure: ToolCallClosure, snapshot: Any) -> None:
        raise NotImplementedError


class ChatDriver(Driver):
    def events(self) -> Iterator[Any]:
        client = openai.OpenAI(base_url=f"{self.stub.base_url}/v1", api_key="stub", max_retries=0, timeout=30)
        self.client = client
        self.history = self.history or [{"role": "user", "content": PROMPT}]
        return iter(client.chat.completions.create(model="m", messages=self.history, stream=True))

    def send(self, stream: Any, closure: ToolCallClosure, snapshot: Any) -> None:
        self.history += openai_chat.next_messages(stream, closure.to_openai_chat_completions(snapshot))
        self.client.chat.completions.create(model="m", messages=self.history)


class ResponsesDriver(Driver):
    def events(self) -> Iterator[Any]:
        client = openai.OpenAI(base_url=f"{self.stub.base_url}/v1", api_key="stub", max_retries=0, timeout=30)
        self.client = client
        self.history = self.history or [{"role": "user", "content": PROMPT}]
        return iter(client.responses.create(model="m", input=self.history, stream=True))

    def send(self, stream: Any, closure: ToolCallClosure, snapshot: Any) -> None:
        self.history += openai_responses.next_input(stream, closure.to_openai_responses(snapshot))
        self.client.responses.create(model="m", input=self.history)


class AnthropicDriver(Driver):
    def events(self) -> Iterator[Any]:
        client = anthropic.Anthropic(base_url=self.stub.base_url, api_key="stub", max_retries=0, timeout=30)
        self.client = client
        self.history = self.history or [{"role": "user", "content": PROMPT}]
        return iter(client.messages.create(model="m", max_tokens=100, messages=self.history, stream=True))

    def send(self, stream: Any, closure: ToolCallClosure, snapshot: Any) -> None:
        results = closure.to_anthropic_tool_results(snapshot)
        self.history += anthropic_provider.next_messages(stream, results)
        self.client.messages.create(model="m", max_tokens=100, messages=self.history)


class GeminiDriver(Driver):
    def events(self) -> Iterator[Any]:
        client = genai.Client(api_key="stub", http_options=genai_types.HttpOptions(base_url=self.stub.base_url))
        self.client = client
        self.history = self.history or [{"role": "user", "parts": [{"text": PROMPT}]}]
        return iter(client.models.generate_content_stream(model="m", contents=self.history))

    def send(self, stream: Any, closure: ToolCallClosure, snapshot: Any) -> None:
        self.history += gemini.next_contents(stream, closure.to_gemini_function_responses(snapshot))
        self.client.models.generate_content(model="m", contents=self.history)


class BedrockDriver(Driver):
    def events(self) -> Iterator[Any]:
        client = boto3.client(
            "bedrock-runtime",
            region_name="us-east-1",
            endpoint_url=self.stub.base_url,
            aws_access_key_id="stub",
            aws_secret_access_key="stub",
        )
        self.client = client
        self.history = self.history or [{"role": "user", "content": [{"text": PROMPT}]}]
        return iter(client.converse_stream(modelId="m", messages=self.history)["stream"])

    def send(self, stream: Any, closure: ToolCallClosure, snapshot: Any) -> None:
        results = closure.to_bedrock_tool_results(snapshot)
        self.history += bedrock.next_messages(stream, results, then="Thanks; and tomorrow?")
        self.client.converse(modelId="m", messages=self.history)


DRIVERS: dict[str, type[Driver]] = {
    "openai_chat": ChatDriver,
    "openai_responses": ResponsesDriver,
    "anthropic": AnthropicDriver,
    "gemini": GeminiDriver,
    "bedrock": BedrockDriver,
}
STREAMS: dict[str, Callable[[], Any]] = {
    "openai_chat": openai_chat.ChatStream,
    "openai_responses": openai_responses.ResponsesStream,
    "anthropic": anthropic_provider.AnthropicStream,
    "gemini": gemini.GeminiStream,
    "bedrock": bedrock.BedrockStream,
}


@pytest.fixture
def stub() -> Iterator[ProviderStub]:
    with ProviderStub(max_requests=20) as server:
        yield server


def _feed(events: Iterator[Any], stream: Any) -> None:
    for event in events:
        stream.add(event)


def _answer(ingested: Any) -> tuple[ToolCallClosure, Any]:
    """Run nothing: the runnable calls succeed with a text, every other call is closed with an error."""
    closure = ToolCallClosure()
    batch = closure.begin(ingested.calls)
    for call in ingested.runnable:
        closure.succeed(batch.handle, call.id, f"{call.name}: {call.arguments}")
    return closure, closure.close(batch.handle)


@pytest.mark.parametrize("provider", list(DRIVERS))
def test_a_whole_streamed_turn_gives_the_calls_and_its_echo_is_accepted(stub: ProviderStub, provider: str) -> None:
    stub.script(provider, [Turn(CALLS[provider], preamble="Let me look.")])
    driver = DRIVERS[provider](provider, stub)
    stream = STREAMS[provider]()
    _feed(driver.events(), stream)
    ingested = stream.finish()
    assert ingested.unfinished is None
    assert [(c.name, c.arguments) for c in ingested.runnable] == [
        (call.name, json.loads(call.arguments)) for call in CALLS[provider]
    ]
    closure, snapshot = _answer(ingested)
    driver.send(stream, closure, snapshot)
    assert stub.refusals() == []
    echoed = json.dumps(stub.requests[-1].body)
    assert "Let me look." in echoed  # the text of the streamed turn went back with its calls


@pytest.mark.parametrize("provider", list(DRIVERS))
def test_a_cut_stream_raises_the_sdks_error_and_no_call_of_the_turn_runs(stub: ProviderStub, provider: str) -> None:
    stub.script(provider, [Turn(CALLS[provider], cut_after=CUT_AFTER[provider])])
    driver = DRIVERS[provider](provider, stub)
    stream = STREAMS[provider]()
    with pytest.raises(CUT_RAISES[provider]):
        _feed(driver.events(), stream)
    ingested = stream.finish()
    assert ingested.unfinished is not None
    assert ingested.unfinished.startswith("the stream ended before the turn was finished")
    assert ingested.runnable == ()
    opted = stream.finish(unfinished="run_complete")
    assert [c.name for c in opted.runnable] == ["weather"]  # the first call arrived whole; the second did not
    assert len(opted.calls) == (1 if provider == "gemini" else 2)  # Gemini's second call never arrived
    closure, snapshot = _answer(ingested)
    driver.send(stream, closure, snapshot)
    assert stub.refusals() == []
