"""MCP tools in an OpenAI Responses loop: the tools come from an MCP server over streamable HTTP.

    python examples/mcp_http_loop.py                 # offline: the provider stub, and tests/mcp_server.py on 127.0.0.1
    python examples/mcp_http_loop.py --base-url URL  # any server speaking the Responses API

The example starts the MCP server on a free port of 127.0.0.1 and talks to it
over streamable HTTP; the calls run under the runner's guarantees (the slow
tool times out and is cancelled in the server), and the results go back as
``function_call_output`` items — the chart as ``input_image``, the structured
content as ``input_text``.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import openai
from _offline import MCP_SERVER, mcp_turns_server
from openai.types.responses import FunctionToolParam, ResponseInputItemParam

from tool_call_closure import ToolCallClosure
from tool_call_closure.providers import openai_responses
from tool_call_closure.runners import StaleTurn
from tool_call_closure.runners.mcp_tools import McpServer, connect_streamable_http, run_mcp_tool_calls

CALLS: list[tuple[str, dict[str, object]]] = [("text_image", {}), ("structured", {}), ("slow", {"seconds": 30})]


def declarations(server: McpServer) -> list[FunctionToolParam]:
    return [
        {"type": "function", "name": tool.name, "parameters": tool.input_schema, "strict": False}
        for tool in server.tools
    ]


async def agent(client: openai.AsyncOpenAI, server: McpServer, prompt: str, *, max_turns: int = 5) -> str:
    closure = ToolCallClosure()
    items: list[ResponseInputItemParam] = [{"role": "user", "content": prompt}]
    for _ in range(max_turns):
        token = closure.turn_token()
        response = await client.responses.create(model="gpt-4.1", input=items, tools=declarations(server))
        ingested = openai_responses.ingest(response)
        if not ingested.calls:
            return response.output_text
        run = await run_mcp_tool_calls(closure, ingested.calls, server, turn=token, call_timeout=1.0, deadline=20)
        if isinstance(run, StaleTurn):
            raise RuntimeError("a newer model turn replaced this one")
        outputs = closure.to_openai_responses(run.snapshot)
        for output in outputs:
            value = output["output"]
            kinds = [item["type"] for item in value] if isinstance(value, list) else value
            print(f"  {output['call_id']}: {kinds}")
        items += openai_responses.next_input(response, outputs)
    raise RuntimeError(f"no final answer after {max_turns} turns")


@contextlib.contextmanager
def mcp_http_server() -> Iterator[str]:
    """``tests/mcp_server.py --http PORT`` on a free port of 127.0.0.1, for the duration; its MCP endpoint's URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, str(MCP_SERVER), "--http", str(port)], stderr=subprocess.DEVNULL)
    try:
        while not _listening(port):
            if process.poll() is not None:
                raise RuntimeError("the MCP server did not start")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), 0.1).close()
    except OSError:
        return False
    return True


async def run(base_url: str, mcp_url: str) -> str:
    client = openai.AsyncOpenAI(base_url=f"{base_url}/v1", api_key="stub", max_retries=0)
    async with connect_streamable_http(mcp_url) as server:
        return await agent(client, server, "Chart this week's sales and fetch the slow report.")


def main(argv: list[str] | None = None) -> int:
    with mcp_turns_server("openai_responses", argv, CALLS) as base_url, mcp_http_server() as mcp_url:
        print(asyncio.run(run(base_url, mcp_url)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
