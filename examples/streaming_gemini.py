"""A streamed Gemini (google-genai) tool loop: accumulate chunks → finish → run → export → next contents.

    python examples/streaming_gemini.py                 # offline, against the local provider stub
    python examples/streaming_gemini.py --base-url URL  # any server speaking streamGenerateContent

Every chunk goes into a ``GeminiStream``.  Parallel calls arrive whole, one
chunk each, and Gemini 2.x sends them without ids: each gets an id naming
its turn (``tcc_gemini_<response id>_<n>``).  A dropped connection surfaces
from the SDK as ``httpx2.RemoteProtocolError`` (google-genai does not wrap
it): the turn is then *unfinished* (no ``finish_reason``), and ``finish()``
answers every call that did arrive with an error, running none — the calls
after the cut are unknown.  The next request echoes every part of the
streamed turn (text, thoughts and their signatures, the calls).
"""

from __future__ import annotations

import asyncio
import sys

import httpx2
from _offline import streaming_server
from gemini_loop import DECLARATIONS  # the same tools as the non-streamed loop
from google import genai
from google.genai import errors, types
from tools import TOOLS

from tool_call_closure import ToolCallClosure
from tool_call_closure.providers import gemini
from tool_call_closure.runners import run_tool_calls


async def agent(client: genai.Client, prompt: str, *, max_turns: int = 5) -> str:
    closure = ToolCallClosure()
    contents: list[types.ContentUnionDict] = [{"role": "user", "parts": [{"text": prompt}]}]
    config = types.GenerateContentConfig(tools=[DECLARATIONS])
    for _ in range(max_turns):
        stream = gemini.GeminiStream()
        chunks = await client.aio.models.generate_content_stream(  # a refused request raises here
            model="gemini-2.5-flash", contents=contents, config=config
        )
        try:
            async for chunk in chunks:
                stream.add(chunk)
        except (httpx2.TransportError, errors.APIError) as error:  # cut: the turn never finished
            print(f"  the stream was cut ({type(error).__name__})")
        ingested = stream.finish()  # an unfinished turn: every call answered with an error, none run
        if not ingested.calls and ingested.unfinished is None:
            return "".join(part.get("text") or "" for part in stream.model_content().get("parts") or [])
        run = await run_tool_calls(closure, ingested.calls, TOOLS, call_timeout=0.5, deadline=10)
        parts = closure.to_gemini_function_responses(run.snapshot)
        for part in parts:
            print(f"  {part['function_response']}")
        contents += gemini.next_contents(stream, parts)  # every part of the turn, from the stream
    raise RuntimeError(f"no final answer after {max_turns} turns")


def main(argv: list[str] | None = None) -> int:
    with streaming_server("gemini", argv) as base_url:
        client = genai.Client(api_key="stub", http_options=types.HttpOptions(base_url=base_url))
        print(asyncio.run(agent(client, "What's the weather in Paris, and tomorrow's forecast?")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
