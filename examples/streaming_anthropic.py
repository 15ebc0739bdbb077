"""A streamed Anthropic Messages tool loop: accumulate events → finish → run → export → next request.

    python examples/streaming_anthropic.py                 # offline, against the local provider stub
    python examples/streaming_anthropic.py --base-url URL  # any server speaking the Messages API

Every event goes into an ``AnthropicStream``.  A dropped connection surfaces
from the SDK as ``httpx2.RemoteProtocolError`` (the SDK does not wrap it; an
``error`` event mid-stream raises ``anthropic.APIStatusError``): the turn is
then *unfinished*, and ``finish()`` answers every call of it with an error,
running none.  The next request echoes the whole streamed turn (text,
thinking with its signature, the calls) from the stream itself.
"""

from __future__ import annotations

import asyncio
import sys

import anthropic
import httpx2
from _offline import streaming_server
from anthropic.types import MessageParam
from anthropic_loop import SCHEMAS  # the same tools as the non-streamed loop
from tools import TOOLS

from tool_call_closure import ToolCallClosure
from tool_call_closure.providers import anthropic as anthropic_provider
from tool_call_closure.runners import run_tool_calls


async def agent(client: anthropic.AsyncAnthropic, prompt: str, *, max_turns: int = 5) -> str:
    closure = ToolCallClosure()
    messages: list[MessageParam] = [{"role": "user", "content": prompt}]
    for _ in range(max_turns):
        stream = anthropic_provider.AnthropicStream()
        text = ""
        events = await client.messages.create(  # a refused request raises here, before any event
            model="claude-sonnet-4-5", max_tokens=1024, messages=messages, tools=SCHEMAS, stream=True
        )
        try:
            async for event in events:
                stream.add(event)
                if event.type == "content_block_delta" and event.delta.type == "text_delta":
                    text += event.delta.text
        except (httpx2.TransportError, anthropic.APIStatusError) as error:  # cut: the turn never finished
            print(f"  the stream was cut ({type(error).__name__})")
        ingested = stream.finish()  # an unfinished turn: every call answered with an error, none run
        if not ingested.calls and ingested.unfinished is None:
            return text
        run = await run_tool_calls(closure, ingested.calls, TOOLS, call_timeout=0.5, deadline=10)
        results = closure.to_anthropic_tool_results(run.snapshot)
        for result in results:
            print(f"  {result['tool_use_id']}: {result.get('content')}")
        messages += anthropic_provider.next_messages(stream, results)  # the whole turn, from the stream
    raise RuntimeError(f"no final answer after {max_turns} turns")


def main(argv: list[str] | None = None) -> int:
    with streaming_server("anthropic", argv) as base_url:
        client = anthropic.AsyncAnthropic(base_url=base_url, api_key="stub", max_retries=0)
        print(asyncio.run(agent(client, "What's the weather in Paris, and tomorrow's forecast?")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
