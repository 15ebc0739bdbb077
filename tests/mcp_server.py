"""A real MCP server for the tests, written with the ``mcp`` package's low-level server API.

Run as ``python tests/mcp_server.py`` (stdio) or ``python tests/mcp_server.py --http PORT`` (streamable HTTP on
127.0.0.1 only).  Its tools return every shape of ``CallToolResult`` the client maps (:data:`SHAPES`), fail in
the ways a server fails (``isError``, protocol errors, dying mid-call), and hold their answers behind gates the
tests open (``gate``/``open``), so the order of a result and a cancellation is chosen, not left to sleeps.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from mcp_shapes import SHAPES, result, text

Handler = Callable[[ServerRequestContext[Any], dict[str, Any]], Awaitable[types.CallToolResult]]

_gates: dict[str, anyio.Event] = {}
_log: dict[str, str] = {}
"""``gate`` token → ``started``, then ``answered`` or ``cancelled``."""


async def _shape(ctx: ServerRequestContext[Any], args: dict[str, Any], name: str) -> types.CallToolResult:
    return SHAPES[name]


async def _echo(ctx: ServerRequestContext[Any], args: dict[str, Any]) -> types.CallToolResult:
    return result(text(str(args.get("text", ""))))


async def _slow(ctx: ServerRequestContext[Any], args: dict[str, Any]) -> types.CallToolResult:
    await anyio.sleep(float(args.get("seconds", 30)))
    return result(text("slow done"))


async def _gate(ctx: ServerRequestContext[Any], args: dict[str, Any]) -> types.CallToolResult:
    """Answer only once ``open`` opened this token's gate; log whether it answered or was cancelled."""
    token = str(args["token"])
    event = _gates.setdefault(token, anyio.Event())
    _log[token] = "started"
    try:
        await event.wait()
    except anyio.get_cancelled_exc_class():
        _log[token] = "cancelled"
        raise
    _log[token] = "answered"
    return result(text(f"gate {token} opened"), structured={"token": token})


async def _open(ctx: ServerRequestContext[Any], args: dict[str, Any]) -> types.CallToolResult:
    for token in args["tokens"]:
        _gates.setdefault(str(token), anyio.Event()).set()
    return result(text("opened"))


async def _stats(ctx: ServerRequestContext[Any], args: dict[str, Any]) -> types.CallToolResult:
    """What became of the ``gate`` calls of ``tokens``: ``started``, ``answered``, ``cancelled`` or absent."""
    states = {str(token): _log.get(str(token), "absent") for token in args.get("tokens", [])}
    return result(text("stats"), structured=states)


async def _progress(ctx: ServerRequestContext[Any], args: dict[str, Any]) -> types.CallToolResult:
    """Report progress ``steps`` times, ``interval`` seconds apart, then answer."""
    token = None if ctx.meta is None else ctx.meta.get("progress_token")
    steps = int(args.get("steps", 10))
    for step in range(steps):
        await anyio.sleep(float(args.get("interval", 0.1)))
        if token is not None:
            await ctx.session.send_progress_notification(token, step + 1, steps, related_request_id=ctx.request_id)
    return result(text("progress done"))


async def _die(ctx: ServerRequestContext[Any], args: dict[str, Any]) -> types.CallToolResult:
    await anyio.sleep(float(args.get("after", 0.05)))
    os._exit(3)


async def _raise(ctx: ServerRequestContext[Any], args: dict[str, Any]) -> types.CallToolResult:
    raise MCPError(code=types.INVALID_PARAMS, message=f"Invalid params: {args.get('why', 'no reason')}")


TOOLS: dict[str, Handler] = {
    "echo": _echo,
    "slow": _slow,
    "gate": _gate,
    "open": _open,
    "stats": _stats,
    "progress": _progress,
    "die": _die,
    "bad_params": _raise,
}


def _tool(name: str) -> types.Tool:
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    return types.Tool(name=name, description=f"test tool {name}", input_schema=schema)


async def list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[_tool(name) for name in [*SHAPES, *TOOLS] if _ONLY is None or name in _ONLY])


async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
    args = dict(params.arguments or {})
    if params.name in SHAPES:
        return await _shape(ctx, args, params.name)
    handler = TOOLS.get(params.name)
    if handler is None:
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
    return await handler(ctx, args)


server: Server[Any] = Server("tcc-test-server", on_list_tools=list_tools, on_call_tool=call_tool)


async def _stdio() -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


_ONLY: set[str] | None = None
"""``--only a,b``: list only these tools (so that two servers can serve one batch without a shared name)."""


def main(argv: list[str]) -> None:
    global _ONLY
    if len(argv) >= 2 and argv[0] == "--only":
        _ONLY = set(argv[1].split(","))
        argv = argv[2:]
    if len(argv) == 2 and argv[0] == "--http":
        import uvicorn

        app = server.streamable_http_app(host="127.0.0.1")
        uvicorn.run(app, host="127.0.0.1", port=int(argv[1]), log_level="warning")
    else:
        anyio.run(_stdio)


if __name__ == "__main__":
    main(sys.argv[1:])
