"""A complete OpenAI Responses tool loop: ingest → run → export → next request.

    python examples/openai_responses_loop.py                 # offline, against the local provider stub
    python examples/openai_responses_loop.py --base-url URL  # any server speaking the Responses API (…/v1)

Ingestion pairs on each ``function_call``'s ``call_id`` (never its ``fc_…``
item id); the next ``input`` replays the response's output items and then the
results.  With ``previous_response_id`` the results alone would do
(``next_input(…, previous_response_id=True)``).
"""

from __future__ import annotations

import asyncio
import sys

import openai
from _offline import server
from openai.types.responses import FunctionToolParam, ResponseInputItemParam
from tools import TOOLS

from tool_call_closure import ToolCallClosure
from tool_call_closure.providers import openai_responses
from tool_call_closure.runners import StaleTurn, run_tool_calls

SCHEMAS: list[FunctionToolParam] = [
    {
        "type": "function",
        "name": name,
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        "strict": False,
    }
    for name in TOOLS
]


async def agent(client: openai.AsyncOpenAI, prompt: str, *, max_turns: int = 5) -> str:
    closure = ToolCallClosure()
    items: list[ResponseInputItemParam] = [{"role": "user", "content": prompt}]
    for _ in range(max_turns):
        token = closure.turn_token()  # before the request: a turn begun meanwhile makes this one stale
        response = await client.responses.create(model="gpt-4.1", input=items, tools=SCHEMAS)
        ingested = openai_responses.ingest(response)
        if not ingested.calls:
            return response.output_text
        run = await run_tool_calls(closure, ingested.calls, TOOLS, turn=token, call_timeout=0.5, deadline=10)
        if isinstance(run, StaleTurn):  # another task began a newer turn on this closure: it owns the conversation
            raise RuntimeError("a newer model turn replaced this one")
        outputs = closure.to_openai_responses(run.snapshot)
        for output in outputs:
            print(f"  {output['call_id']}: {output['output']}")
        items += openai_responses.next_input(response, outputs)
    raise RuntimeError(f"no final answer after {max_turns} turns")


def main(argv: list[str] | None = None) -> int:
    with server("openai_responses", argv) as base_url:
        client = openai.AsyncOpenAI(base_url=f"{base_url}/v1", api_key="stub", max_retries=0)
        print(asyncio.run(agent(client, "What's the weather in Paris, and tomorrow's forecast?")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
