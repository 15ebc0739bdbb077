"""MCP tools in an Anthropic Messages loop: the tools come from an MCP server started over stdio.

    python examples/mcp_stdio_loop.py                 # offline: the provider stub, and tests/mcp_server.py
    python examples/mcp_stdio_loop.py --base-url URL  # any server speaking the Messages API

The MCP server's tools are listed and declared to the model; its calls run
on the server under the runner's guarantees (a per-call timeout here: the
slow tool is cancelled with ``notifications/cancelled``), and the results go
back as native content blocks — the chart as an ``image`` block, the
structured content as JSON text.
"""

from __future__ import annotations

import asyncio
import sys

import anthropic
from _offline import MCP_SERVER, mcp_turns_server
from anthropic.types import MessageParam, ToolParam

from tool_call_closure import ToolCallClosure
from tool_call_closure.providers import anthropic as anthropic_provider
from tool_call_closure.runners import StaleTurn
from tool_call_closure.runners.mcp_tools import McpServer, connect_stdio, run_mcp_tool_calls

CALLS: list[tuple[str, dict[str, object]]] = [("text_image", {}), ("structured", {}), ("slow", {"seconds": 30})]


def declarations(server: McpServer) -> list[ToolParam]:
    return [
        {"name": tool.name, "description": tool.description or "", "input_schema": tool.input_schema}
        for tool in server.tools
    ]


async def agent(client: anthropic.AsyncAnthropic, server: McpServer, prompt: str, *, max_turns: int = 5) -> str:
    closure = ToolCallClosure()
    messages: list[MessageParam] = [{"role": "user", "content": prompt}]
    for _ in range(max_turns):
        token = closure.turn_token()
        message = await client.messages.create(
            model="claude-sonnet-4-5", max_tokens=1024, messages=messages, tools=declarations(server)
        )
        ingested = anthropic_provider.ingest(message)
        if not ingested.calls:
            return "".join(block.text for block in message.content if block.type == "text")
        run = await run_mcp_tool_calls(closure, ingested.calls, server, turn=token, call_timeout=1.0, deadline=20)
        if isinstance(run, StaleTurn):
            raise RuntimeError("a newer model turn replaced this one")
        results = closure.to_anthropic_tool_results(run.snapshot)
        for result in results:
            content = result.get("content")
            kinds = [block["type"] for block in content] if isinstance(content, list) else content
            print(f"  {result['tool_use_id']}: {kinds}")
        messages += anthropic_provider.next_messages(message, results)
    raise RuntimeError(f"no final answer after {max_turns} turns")


async def run(base_url: str) -> str:
    client = anthropic.AsyncAnthropic(base_url=base_url, api_key="stub", max_retries=0)
    async with connect_stdio(sys.executable, [str(MCP_SERVER)]) as server:
        return await agent(client, server, "Chart this week's sales and fetch the slow report.")


def main(argv: list[str] | None = None) -> int:
    with mcp_turns_server("anthropic", argv, CALLS) as base_url:
        print(asyncio.run(run(base_url)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
