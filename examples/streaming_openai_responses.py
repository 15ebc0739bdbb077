"""A streamed OpenAI Responses tool loop: accumulate events → finish → run → export → next input.

    python examples/streaming_openai_responses.py                 # offline, against the local provider stub
    python examples/streaming_openai_responses.py --base-url URL  # any server speaking the Responses API

Every event goes into a ``ResponsesStream``, which maps the argument deltas
(keyed by the ``fc_…`` item id) to the ``call_id`` the outputs must carry.
A dropped connection surfaces from the SDK as ``openai.APIConnectionError``
(its cause: ``httpx2.RemoteProtocolError``): the turn is then *unfinished*
(no ``response.completed``), and ``finish()`` answers every call of it with
an error, running none.  The next input echoes every output item of the
streamed response (reasoning, messages, calls) from the stream itself.
"""

from __future__ import annotations

import asyncio
import sys

import openai
from _offline import streaming_server
from openai.types.responses import ResponseInputItemParam
from openai_responses_loop import SCHEMAS  # the same tools as the non-streamed loop
from tools import TOOLS

from tool_call_closure import ToolCallClosure
from tool_call_closure.providers import openai_responses
from tool_call_closure.runners import run_tool_calls


async def agent(client: openai.AsyncOpenAI, prompt: str, *, max_turns: int = 5) -> str:
    closure = ToolCallClosure()
    items: list[ResponseInputItemParam] = [{"role": "user", "content": prompt}]
    for _ in range(max_turns):
        stream = openai_responses.ResponsesStream()
        text = ""
        events = await client.responses.create(  # a refused request raises here, before any event
            model="gpt-4.1", input=items, tools=SCHEMAS, stream=True
        )
        try:
            async for event in events:
                stream.add(event)
                if event.type == "response.completed":
                    text = event.response.output_text
        except openai.APIError as error:  # cut (APIConnectionError) or an error event: the turn never finished
            print(f"  the stream was cut ({type(error).__name__})")
        ingested = stream.finish()  # an unfinished turn: every call answered with an error, none run
        if not ingested.calls and ingested.unfinished is None:
            return text
        run = await run_tool_calls(closure, ingested.calls, TOOLS, call_timeout=0.5, deadline=10)
        outputs = closure.to_openai_responses(run.snapshot)
        for output in outputs:
            print(f"  {output['call_id']}: {output['output']}")
        items += openai_responses.next_input(stream, outputs)  # every output item, from the stream
    raise RuntimeError(f"no final answer after {max_turns} turns")


def main(argv: list[str] | None = None) -> int:
    with streaming_server("openai_responses", argv) as base_url:
        client = openai.AsyncOpenAI(base_url=f"{base_url}/v1", api_key="stub", max_retries=0)
        print(asyncio.run(agent(client, "What's the weather in Paris, and tomorrow's forecast?")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
