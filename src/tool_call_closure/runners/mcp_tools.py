"""Tools served by MCP servers, run with the runners' guarantees.

Theory of operation
-------------------
:func:`connect_stdio`, :func:`connect_streamable_http` (or :func:`connect`,
for any pair of transport streams) open a ``ClientSession`` of the official
``mcp`` package through a :class:`~.mcp_wire.Wire`, initialise it and list
the server's tools: an :class:`McpServer`.  :func:`run_mcp_tool_calls` then
runs a model turn's calls on it through :func:`~.asyncio_runner.run_tool_calls`,
so the calls have exactly the asyncio runner's guarantees — per-call
timeout, batch deadline, abort, concurrency limit, every call exactly one
outcome, late results fenced and passed to ``on_late``:

* a call of a tool the server did not list is ``unknown_tool`` and is never
  sent; arguments that are not a JSON object are ``invalid_tool_call``;
* each other call is one ``tools/call`` request; its ``CallToolResult`` is
  mapped to the call's outcome by :func:`~.mcp_results.outcome_of`
  (``isError: true`` → an error with the server's own text and its
  ``structuredContent``);
* a protocol error answers the request: ``-32602`` (invalid params) is
  ``invalid_tool_call``, or ``unknown_tool`` when the server says the tool
  is unknown; any other error, and the connection closing before the answer
  (the server died), is ``tool_error`` with the error's text — the batch
  still closes, each call with its one outcome;
* a timeout, an abort, the deadline or the cancellation of the run cancels
  the call's task: the session sends ``notifications/cancelled`` for the
  request and an answer that still comes is late (see :mod:`.mcp_wire`);
* with ``progress_resets_timeout``, each progress notification for a call
  gives it its whole ``call_timeout`` again (never past ``deadline``).

``mcp`` is imported only when a function here runs (and under
``TYPE_CHECKING``); importing this module needs nothing but the library.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, final, overload

from tool_call_closure.closure import ToolCallClosure
from tool_call_closure.errors import UsageError
from tool_call_closure.providers.calls import ToolCall
from tool_call_closure.runners.asyncio_runner import RunningCall, run_on_loop, running_call
from tool_call_closure.runners.mcp_results import McpFallback, error_of, outcome_of
from tool_call_closure.runners.mcp_wire import Wire, call_on_wire
from tool_call_closure.runners.options import RunOptions, no_checkpoint
from tool_call_closure.runners.outcomes import AbortSignal, BatchRun, LateResult, StaleTurn
from tool_call_closure.values import TurnToken

if TYPE_CHECKING:
    from mcp.client.session import ClientSession
    from mcp_types import Tool

__all__ = ["McpServer", "connect", "connect_stdio", "connect_streamable_http", "list_mcp_tools", "run_mcp_tool_calls"]

_MAX_PAGES: Final = 100
"""``tools/list`` pages read at most (a server that pages forever cannot hang the listing)."""


@final
@dataclass(frozen=True, slots=True, eq=False)
class McpServer:
    """A connected MCP server: its initialised session, the wire under it, and the tools it listed."""

    session: ClientSession
    wire: Wire
    tools: tuple[Tool, ...]

    @property
    def tool_names(self) -> frozenset[str]:
        return frozenset(tool.name for tool in self.tools)

    def tool(self, name: str) -> Tool | None:
        return next((tool for tool in self.tools if tool.name == name), None)


async def list_mcp_tools(session: ClientSession) -> tuple[Tool, ...]:
    """Every tool the server lists (all pages, at most 100)."""
    tools: list[Tool] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        if cursor is None:
            page = await session.list_tools()
        else:
            from mcp_types import PaginatedRequestParams

            page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor))
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tuple(tools)


@contextlib.asynccontextmanager
async def connect(read_stream: Any, write_stream: Any) -> AsyncIterator[McpServer]:
    """An initialised session over a transport's stream pair (what ``mcp``'s transport clients yield)."""
    from mcp.client.session import ClientSession

    wire = Wire()
    async with ClientSession(wire.reader(read_stream), wire.writer(write_stream)) as session:
        await session.initialize()
        yield McpServer(session, wire, await list_mcp_tools(session))


@contextlib.asynccontextmanager
async def connect_stdio(
    command: str,
    args: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> AsyncIterator[McpServer]:
    """Start the server ``command args…`` as a subprocess and talk MCP over its stdin/stdout."""
    from mcp.client.stdio import StdioServerParameters, stdio_client

    if not isinstance(command, str) or not command:
        raise UsageError(f"command must be a non-empty str, got {command!r}")
    parameters = StdioServerParameters(
        command=command, args=list(args), env=None if env is None else dict(env), cwd=cwd
    )
    async with stdio_client(parameters) as streams, connect(streams[0], streams[1]) as server:
        yield server


@contextlib.asynccontextmanager
async def connect_streamable_http(url: str, *, http_client: Any = None) -> AsyncIterator[McpServer]:
    """Talk MCP to the server at ``url`` over streamable HTTP (``http_client``: an ``httpx2.AsyncClient``)."""
    from mcp.client.streamable_http import streamable_http_client

    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise UsageError(f"url must be an http:// or https:// URL, got {url!r}")
    async with (
        streamable_http_client(url, http_client=http_client) as streams,
        connect(streams[0], streams[1]) as server,
    ):
        yield server


# The two overloads differ only in ``turn`` and the result, and are needed: without ``turn`` a run cannot be stale,
# so the result is a ``BatchRun`` that callers use without a check; a single signature would make every call
# ``BatchRun | StaleTurn`` under ``mypy --strict``.  (A TypedDict unpacked as ``**options`` would shorten them but
# hide the option names and defaults from help and editors; run_tool_calls and ToolCallClosure.begin have the same
# pair of overloads.)
@overload
async def run_mcp_tool_calls(
    closure: ToolCallClosure,
    calls: Sequence[ToolCall],
    server: McpServer | Sequence[McpServer],
    *,
    turn: None = None,
    call_timeout: float | None = None,
    deadline: float | None = None,
    max_concurrency: int | None = None,
    abort: AbortSignal | None = None,
    cancel_grace: float = 1.0,
    on_late: Callable[[LateResult], None] | None = None,
    progress_resets_timeout: bool = False,
    on_fallback: Callable[[McpFallback], None] | None = None,
) -> BatchRun: ...


@overload
async def run_mcp_tool_calls(
    closure: ToolCallClosure,
    calls: Sequence[ToolCall],
    server: McpServer | Sequence[McpServer],
    *,
    turn: TurnToken,
    call_timeout: float | None = None,
    deadline: float | None = None,
    max_concurrency: int | None = None,
    abort: AbortSignal | None = None,
    cancel_grace: float = 1.0,
    on_late: Callable[[LateResult], None] | None = None,
    progress_resets_timeout: bool = False,
    on_fallback: Callable[[McpFallback], None] | None = None,
) -> BatchRun | StaleTurn: ...


async def run_mcp_tool_calls(
    closure: ToolCallClosure,
    calls: Sequence[ToolCall],
    server: McpServer | Sequence[McpServer],
    *,
    turn: TurnToken | None = None,
    call_timeout: float | None = None,
    deadline: float | None = None,
    max_concurrency: int | None = None,
    abort: AbortSignal | None = None,
    cancel_grace: float = 1.0,
    on_late: Callable[[LateResult], None] | None = None,
    progress_resets_timeout: bool = False,
    on_fallback: Callable[[McpFallback], None] | None = None,
) -> BatchRun | StaleTurn:
    """Announce ``calls`` on ``closure``, run them on the MCP ``server``, and return the closed batch's report.

    ``server`` may be several servers: each call goes to the one that listed
    its tool (a name two of them list is refused before anything is announced).

    The options are :func:`~.asyncio_runner.run_tool_calls`'s, with one more:
    ``progress_resets_timeout`` — each progress notification the server sends
    for a call restarts that call's ``call_timeout`` (the ``deadline`` still
    bounds the batch).  ``on_late`` also hears of answers that arrive after
    their call was cancelled (timeout, abort, deadline).  ``on_fallback`` is
    told of each content item passed to the model as a text that says what
    it was, because no provider slot takes it (audio, say; see
    :mod:`.mcp_results`).
    """
    servers = _servers_by_tool(server)
    if not isinstance(progress_resets_timeout, bool):
        raise UsageError(f"progress_resets_timeout must be a bool, got {type(progress_resets_timeout).__name__}")
    if on_fallback is not None and not callable(on_fallback):
        raise UsageError(f"on_fallback must be a function or None, got {type(on_fallback).__name__}")
    tools = {
        name: functools.partial(_call, owner, name, progress_resets_timeout, on_fallback)
        for name, owner in servers.items()
    }
    options = RunOptions.checked(call_timeout, deadline, max_concurrency, cancel_grace, abort, on_late)
    return await run_on_loop(no_checkpoint, closure, calls, tools, turn=turn, options=options)


def _servers_by_tool(server: object) -> dict[str, McpServer]:
    """Each tool name → the server that listed it; refused when a name is listed by two servers (ambiguous)."""
    servers = [server] if isinstance(server, McpServer) else server
    if not isinstance(servers, Sequence) or isinstance(servers, str) or not servers:
        raise UsageError(f"server must be an McpServer or a non-empty sequence of them, got {server!r}")
    owners: dict[str, McpServer] = {}
    for index, each in enumerate(servers):
        if not isinstance(each, McpServer):
            raise UsageError(f"server[{index}] must be an McpServer (from connect_stdio …), got {type(each).__name__}")
        for name in sorted(each.tool_names):
            if name in owners and owners[name] is not each:
                raise UsageError(f"tool {name!r} is listed by two of the servers: a call of it would be ambiguous")
            owners[name] = each
    return owners


async def _call(
    server: McpServer,
    name: str,
    progress_resets_timeout: bool,
    on_fallback: Callable[[McpFallback], None] | None,
    /,
    **arguments: object,
) -> object:
    """One call's tool: ``tools/call`` on the server; the result mapped, an error raised as the call's outcome.

    The parameters before ``/`` are positional-only, so the model's arguments may have any names (``name``,
    ``server`` …): they all land in ``arguments``.
    """
    from mcp.shared.exceptions import MCPError

    current = running_call()
    tool = server.tool(name)
    try:
        result = await call_on_wire(
            server.session,
            server.wire,
            name,
            dict(arguments),
            on_late=functools.partial(_late, current, tool, on_fallback),
            on_progress=current.reset_timeout if progress_resets_timeout else None,
        )
    except MCPError as exc:
        raise error_of(exc, name) from None
    return outcome_of(result, tool, call_id=current.call.id, on_fallback=on_fallback)


def _late(
    current: RunningCall,
    tool: Tool | None,
    on_fallback: Callable[[McpFallback], None] | None,
    response: dict[str, Any] | Exception,
) -> None:
    """An answer that came after the call's task ended: offered to the closure, which fences it (late)."""
    from mcp.shared.exceptions import MCPError
    from mcp_types import CallToolResult

    if isinstance(response, MCPError):
        current.deliver_error(error_of(response, current.call.name))
        return
    if isinstance(response, Exception):
        current.deliver_error(response)
        return
    try:
        result = CallToolResult.model_validate(response, by_name=False)
        value = outcome_of(result, tool, call_id=current.call.id, on_fallback=on_fallback)
    except Exception as exc:  # noqa: BLE001  # a malformed late answer is still reported late
        current.deliver_error(exc)
        return
    current.deliver(value)
