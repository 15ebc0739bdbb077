"""OpenAI Chat Completions: ingest, run, close, export, next request — under mypy --strict, no cast."""

from __future__ import annotations

from openai import OpenAI
from openai.types.chat import ChatCompletionMessageParam

from tool_call_closure import ToolCallClosure
from tool_call_closure.providers import openai_chat


def step(client: OpenAI, history: list[ChatCompletionMessageParam]) -> list[ChatCompletionMessageParam]:
    completion = client.chat.completions.create(model="gpt-5", messages=history)
    ingested = openai_chat.ingest(completion)
    closure = ToolCallClosure()
    batch = closure.begin(ingested.calls)
    for call in ingested.runnable:
        closure.succeed(batch.handle, call.id, {"echo": call.arguments})
    snapshot = closure.close(batch.handle, {"status": "error", "code": "not_run", "sideEffectState": "not_started"})
    results = closure.to_openai_chat_completions(snapshot)
    following = [*history, *openai_chat.next_messages(completion, results)]
    client.chat.completions.create(model="gpt-5", messages=following)
    return following


def streamed(client: OpenAI, history: list[ChatCompletionMessageParam]) -> None:
    stream = openai_chat.ChatStream()
    for chunk in client.chat.completions.create(model="gpt-5", messages=history, stream=True):
        stream.add(chunk)
    ingested = stream.finish()
    closure = ToolCallClosure()
    batch = closure.begin(ingested.calls)
    for call in ingested.problems:
        closure.fail(batch.handle, call.id, call.problem, code="incomplete_call")
    results = closure.to_openai_chat_completions(closure.close(batch.handle))
    client.chat.completions.create(
        model="gpt-5", messages=[*history, openai_chat.assistant_message(ingested.calls), *results]
    )
