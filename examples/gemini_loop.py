"""A complete Gemini (google-genai) tool loop: ingest → run → export → next request.

    python examples/gemini_loop.py                 # offline, against the local provider stub
    python examples/gemini_loop.py --base-url URL  # any server speaking generateContent

Gemini 2.x sends calls without ids: ingestion gives them deterministic ids
(documented in ``tool_call_closure.providers.gemini``) and the export answers
them by name, every response in one ``Content`` after the model's turn.
"""

from __future__ import annotations

import asyncio
import sys

from _offline import server
from google import genai
from google.genai import types
from tools import TOOLS

from tool_call_closure import ToolCallClosure
from tool_call_closure.providers import gemini
from tool_call_closure.runners import StaleTurn, run_tool_calls

DECLARATIONS = types.Tool(
    function_declarations=[
        types.FunctionDeclaration(
            name=name, parameters_json_schema={"type": "object", "properties": {"city": {"type": "string"}}}
        )
        for name in TOOLS
    ]
)


async def agent(client: genai.Client, prompt: str, *, max_turns: int = 5) -> str:
    closure = ToolCallClosure()
    contents: list[types.ContentUnionDict] = [{"role": "user", "parts": [{"text": prompt}]}]
    config = types.GenerateContentConfig(tools=[DECLARATIONS])
    for _ in range(max_turns):
        token = closure.turn_token()  # before the request: a turn begun meanwhile makes this one stale
        response = await client.aio.models.generate_content(model="gemini-2.5-flash", contents=contents, config=config)
        ingested = gemini.ingest(response)
        if not ingested.calls:
            return response.text or ""
        run = await run_tool_calls(closure, ingested.calls, TOOLS, turn=token, call_timeout=0.5, deadline=10)
        if isinstance(run, StaleTurn):  # another task began a newer turn on this closure: it owns the conversation
            raise RuntimeError("a newer model turn replaced this one")
        parts = closure.to_gemini_function_responses(run.snapshot)
        for part in parts:
            print(f"  {part['function_response']}")
        contents += gemini.next_contents(response, parts)
    raise RuntimeError(f"no final answer after {max_turns} turns")


def main(argv: list[str] | None = None) -> int:
    with server("gemini", argv) as base_url:
        client = genai.Client(api_key="stub", http_options=types.HttpOptions(base_url=base_url))
        print(asyncio.run(agent(client, "What's the weather in Paris, and tomorrow's forecast?")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
