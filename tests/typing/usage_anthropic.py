"""Anthropic Messages: tool_result blocks first in the next user message — under mypy --strict, no cast."""

from __future__ import annotations

from anthropic import Anthropic
from anthropic.types import MessageParam

from tool_call_closure import ToolCallClosure
from tool_call_closure.providers import anthropic


def step(client: Anthropic, history: list[MessageParam]) -> None:
    message = client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, messages=history)
    ingested = anthropic.ingest(message)
    closure = ToolCallClosure()
    batch = closure.begin(ingested.calls)
    closure.begin([block for block in message.content if block.type == "tool_use"])  # ToolUseBlock is a CallLike
    for call in ingested.runnable:
        closure.fail(batch.handle, call.id, TimeoutError())
    results = closure.to_anthropic_tool_results(closure.close(batch.handle))
    client.messages.create(
        model="claude-sonnet-4-5",
        max_tokens=1024,
        messages=[*history, {"role": "assistant", "content": message.content}, {"role": "user", "content": results}],
    )
    client.messages.create(
        model="claude-sonnet-4-5",
        max_tokens=1024,
        messages=[*history, *anthropic.next_messages(message, results, then="Carry on.")],
    )


def streamed(client: Anthropic, history: list[MessageParam]) -> None:
    stream = anthropic.AnthropicStream()
    with client.messages.stream(model="claude-sonnet-4-5", max_tokens=1024, messages=history) as events:
        for event in events:
            stream.add(event)
    closure = ToolCallClosure()
    closure.begin(stream.finish().calls)
