"""A complete Anthropic Messages tool loop: ingest → run → export → next request.

    python examples/anthropic_loop.py                 # offline, against the local provider stub
    python examples/anthropic_loop.py --base-url URL  # any server speaking the Messages API

The next request appends the assistant turn and one user message whose
``tool_result`` blocks come first (``is_error`` set on the failed ones).
"""

from __future__ import annotations

import asyncio
import sys

import anthropic
from _offline import server
from anthropic.types import MessageParam, ToolParam
from tools import TOOLS

from tool_call_closure import ToolCallClosure
from tool_call_closure.providers import anthropic as anthropic_provider
from tool_call_closure.runners import StaleTurn, run_tool_calls

SCHEMAS: list[ToolParam] = [
    {"name": name, "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}} for name in TOOLS
]


async def agent(client: anthropic.AsyncAnthropic, prompt: str, *, max_turns: int = 5) -> str:
    closure = ToolCallClosure()
    messages: list[MessageParam] = [{"role": "user", "content": prompt}]
    for _ in range(max_turns):
        token = closure.turn_token()  # before the request: a turn begun meanwhile makes this one stale
        message = await client.messages.create(
            model="claude-sonnet-4-5", max_tokens=1024, messages=messages, tools=SCHEMAS
        )
        ingested = anthropic_provider.ingest(message)
        if not ingested.calls:
            return "".join(block.text for block in message.content if block.type == "text")
        run = await run_tool_calls(closure, ingested.calls, TOOLS, turn=token, call_timeout=0.5, deadline=10)
        if isinstance(run, StaleTurn):  # another task began a newer turn on this closure: it owns the conversation
            raise RuntimeError("a newer model turn replaced this one")
        results = closure.to_anthropic_tool_results(run.snapshot)
        for result in results:
            print(f"  {result['tool_use_id']}: {result.get('content')}")
        messages += anthropic_provider.next_messages(message, results)
    raise RuntimeError(f"no final answer after {max_turns} turns")


def main(argv: list[str] | None = None) -> int:
    with server("anthropic", argv) as base_url:
        client = anthropic.AsyncAnthropic(base_url=base_url, api_key="stub", max_retries=0)
        print(asyncio.run(agent(client, "What's the weather in Paris, and tomorrow's forecast?")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
