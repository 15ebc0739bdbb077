"""A complete OpenAI Chat Completions tool loop: ingest → run → export → next request.

    python examples/openai_chat_loop.py                 # offline, against the local provider stub
    python examples/openai_chat_loop.py --base-url URL  # any server speaking Chat Completions (…/v1)

Each model turn's calls are ingested, run concurrently with a per-call
timeout and a batch deadline, and answered — every one, exactly once — in the
next request.  A call that times out is answered with ``tool_timeout``; its
result, should it still arrive, is fenced and never sent.
"""

from __future__ import annotations

import asyncio
import sys

import openai
from _offline import server
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolParam
from tools import TOOLS

from tool_call_closure import ToolCallClosure
from tool_call_closure.providers import openai_chat
from tool_call_closure.runners import StaleTurn, run_tool_calls

SCHEMAS: list[ChatCompletionToolParam] = [
    {
        "type": "function",
        "function": {"name": name, "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
    }
    for name in TOOLS
]


async def agent(client: openai.AsyncOpenAI, prompt: str, *, max_turns: int = 5) -> str:
    closure = ToolCallClosure()
    messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": prompt}]
    for _ in range(max_turns):
        token = closure.turn_token()  # before the request: a turn begun meanwhile makes this one stale
        completion = await client.chat.completions.create(model="gpt-4.1", messages=messages, tools=SCHEMAS)
        ingested = openai_chat.ingest(completion)
        if not ingested.calls:
            return completion.choices[0].message.content or ""
        run = await run_tool_calls(closure, ingested.calls, TOOLS, turn=token, call_timeout=0.5, deadline=10)
        if isinstance(run, StaleTurn):  # another task began a newer turn on this closure: it owns the conversation
            raise RuntimeError("a newer model turn replaced this one")
        results = closure.to_openai_chat_completions(run.snapshot)
        for message in results:
            print(f"  {message['tool_call_id']}: {message['content']}")
        messages += openai_chat.next_messages(completion, results)
    raise RuntimeError(f"no final answer after {max_turns} turns")


def main(argv: list[str] | None = None) -> int:
    with server("openai_chat", argv) as base_url:
        client = openai.AsyncOpenAI(base_url=f"{base_url}/v1", api_key="stub", max_retries=0)
        print(asyncio.run(agent(client, "What's the weather in Paris, and tomorrow's forecast?")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
