"""A streamed OpenAI Chat Completions tool loop: accumulate chunks → finish → run → export → next request.

    python examples/streaming_openai_chat.py                 # offline, against the local provider stub
    python examples/streaming_openai_chat.py --base-url URL  # any server speaking Chat Completions

Every chunk goes into a ``ChatStream``.  A dropped connection surfaces from
the SDK as ``openai.APIConnectionError`` (its cause: ``httpx2.RemoteProtocolError``):
the turn is then *unfinished* (no ``finish_reason``), and ``finish()``
answers every call of it with an error, running none.  The next request
echoes the streamed assistant message — its text and its calls — from the
stream itself.
"""

from __future__ import annotations

import asyncio
import sys

import openai
from _offline import streaming_server
from openai.types.chat import ChatCompletionMessageParam
from openai_chat_loop import SCHEMAS  # the same tools as the non-streamed loop
from tools import TOOLS

from tool_call_closure import ToolCallClosure
from tool_call_closure.providers import openai_chat
from tool_call_closure.runners import run_tool_calls


async def agent(client: openai.AsyncOpenAI, prompt: str, *, max_turns: int = 5) -> str:
    closure = ToolCallClosure()
    messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": prompt}]
    for _ in range(max_turns):
        stream = openai_chat.ChatStream()
        text = ""
        chunks = await client.chat.completions.create(  # a refused request raises here, before any chunk
            model="gpt-4.1", messages=messages, tools=SCHEMAS, stream=True
        )
        try:
            async for chunk in chunks:
                stream.add(chunk)
                text += "".join(choice.delta.content or "" for choice in chunk.choices if choice.index == 0)
        except openai.APIError as error:  # cut (APIConnectionError) or an error event: the turn never finished
            print(f"  the stream was cut ({type(error).__name__})")
        ingested = stream.finish()  # an unfinished turn: every call answered with an error, none run
        if not ingested.calls and ingested.unfinished is None:
            return text
        run = await run_tool_calls(closure, ingested.calls, TOOLS, call_timeout=0.5, deadline=10)
        results = closure.to_openai_chat_completions(run.snapshot)
        for result in results:
            print(f"  {result['tool_call_id']}: {result['content']}")
        messages += openai_chat.next_messages(stream, results)  # the text and the calls, from the stream
    raise RuntimeError(f"no final answer after {max_turns} turns")


def main(argv: list[str] | None = None) -> int:
    with streaming_server("openai_chat", argv) as base_url:
        client = openai.AsyncOpenAI(base_url=f"{base_url}/v1", api_key="stub", max_retries=0)
        print(asyncio.run(agent(client, "What's the weather in Paris, and tomorrow's forecast?")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
