"""The MCP wire under the runner: which request is which call, cancellation, progress, and results that come late.

Theory of operation
-------------------
The ``mcp`` package's ``ClientSession`` sends a ``tools/call`` request and
waits for its response; when the waiting task is cancelled (the runner's
per-call timeout, an abort, the deadline), it sends
``notifications/cancelled`` for the request — the MCP way to stop a call —
and forgets the request, so a response that was already on its way is
dropped with a debug log.  The runner must not lose it: a result that
arrives after its call's outcome is *fenced* and reported to ``on_late``.

So the session talks to the server through a :class:`Wire`, a pair of
pass-through streams around the transport's own:

* the write side finds each ``tools/call`` request the runner sent (its
  ``_meta`` carries a private key with the call's token, which the wire
  removes before the request leaves) and learns its JSON-RPC id;
* the read side sees every response before the session does and keeps the
  one answering a tracked id.

A call then ends in one of two ways.  Its task got the response from the
session: the wire forgets it.  Its task was cancelled: the session sent
``notifications/cancelled``; if the response already arrived it is handed
at once to the call's late handler, otherwise the wire hands it over when
it arrives — the runner offers it to the closure, which fences it after the
call's outcome, and ``on_late`` hears of it.  A response never comes when
the server honoured the cancellation (the ``mcp`` server never answers a
request it was told to cancel) or the connection ended; the wire then drops
the call when the connection ends.  At most :data:`MAX_ABANDONED` cancelled
calls wait at once (a long session with many cancellations stays bounded):
past that the oldest is given up and counted in ``Wire.given_up``.  Everything runs on the event loop that
runs the session, so the wire needs no lock.

Progress.  With ``progress_resets_timeout`` the request carries a progress
token (the session's ``progress_callback``), and each
``notifications/progress`` for it restarts the call's ``call_timeout``
through :meth:`~tool_call_closure.runners.asyncio_runner.RunningCall.reset_timeout`;
the batch ``deadline`` still ends the run whatever the progress.

``mcp`` is imported by this module only inside functions and under
``TYPE_CHECKING``: the library keeps zero runtime dependencies.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Self, cast, final

if TYPE_CHECKING:
    from mcp.client.session import ClientSession
    from mcp.shared.dispatcher import ProgressFnT
    from mcp.shared.message import SessionMessage
    from mcp_types import CallToolResult, RequestParamsMeta

__all__ = ["TOKEN_KEY", "LateHandler", "PassThroughReceiveStream", "PassThroughStream", "Wire", "call_on_wire"]

MAX_ABANDONED: Final = 10_000
"""How many cancelled calls the wire keeps waiting for a late answer; beyond it the oldest is given up (counted)."""

TOKEN_KEY: Final = "io.github.tool-call-closure/call"
"""The ``_meta`` key by which the wire recognises a runner's ``tools/call`` request (removed before sending)."""

LateHandler = Callable[["dict[str, Any] | Exception"], None]
"""Called with a late response: the ``result`` object of a JSON-RPC response, or an error (``MCPError``)."""


@final
@dataclass(slots=True)
class _Tracked:
    request_id: str | None = None
    response: dict[str, Any] | Exception | None = None
    on_late: LateHandler | None = None


@final
class Wire:
    """Pass-through streams between a ``ClientSession`` and its transport that keep each runner call's response."""

    __slots__ = ("_abandoned", "_by_id", "_calls", "_closed", "_tokens", "given_up")

    def __init__(self) -> None:
        self._tokens = itertools.count(1)
        self._calls: dict[str, _Tracked] = {}
        self._by_id: dict[str, str] = {}
        self._abandoned: dict[str, None] = {}  # cancelled calls waiting for a late answer, oldest first
        self._closed = False
        self.given_up = 0
        """Cancelled calls no longer waited for (more than :data:`MAX_ABANDONED` at once): a late answer to one
        of them is dropped as the session drops it."""

    # -- the streams -------------------------------------------------------------------------------------------

    def reader(self, stream: Any) -> _Reader:
        """The session's read stream: ``stream`` (the transport's), seen by the wire first."""
        return _Reader(self, stream)

    def writer(self, stream: Any) -> _Writer:
        """The session's write stream: ``stream`` (the transport's), with the runner's requests recognised."""
        return _Writer(self, stream)

    def _sending(self, item: SessionMessage) -> SessionMessage:
        from mcp_types import JSONRPCRequest

        message = item.message
        if not isinstance(message, JSONRPCRequest) or message.method != "tools/call" or not message.params:
            return item
        meta = message.params.get("_meta")
        if not isinstance(meta, dict) or TOKEN_KEY not in meta:
            return item
        token = str(meta[TOKEN_KEY])
        rest = {key: value for key, value in meta.items() if key != TOKEN_KEY}
        params = {key: value for key, value in message.params.items() if key != "_meta"}
        if rest:
            params["_meta"] = rest
        tracked = self._calls.get(token)
        if tracked is not None:
            tracked.request_id = str(message.id)
            self._by_id[str(message.id)] = token
        clean = JSONRPCRequest(jsonrpc="2.0", id=message.id, method=message.method, params=params)
        return type(item)(message=clean, metadata=item.metadata)

    def _received(self, item: object) -> None:
        from mcp.shared.exceptions import MCPError
        from mcp.shared.message import SessionMessage
        from mcp_types import JSONRPCError, JSONRPCResponse

        if not isinstance(item, SessionMessage):
            return
        message = item.message
        if not isinstance(message, JSONRPCResponse | JSONRPCError):
            return
        token = self._by_id.pop(str(message.id), None)
        if token is None:
            return
        tracked = self._calls.get(token)
        if tracked is None:
            return
        if isinstance(message, JSONRPCResponse):
            tracked.response = dict(message.result)
        else:
            tracked.response = MCPError.from_error_data(message.error)
        if tracked.on_late is not None:  # the call's task ended without it: the result is late
            del self._calls[token]
            self._abandoned.pop(token, None)
            tracked.on_late(tracked.response)

    def _ended(self) -> None:
        """The connection ended: no tracked call will be answered any more."""
        self._closed = True
        for token in self._abandoned:
            self._calls.pop(token, None)
        self._abandoned.clear()
        self._by_id.clear()

    # -- the calls ---------------------------------------------------------------------------------------------

    def track(self) -> str:
        """A new call's token (put in its request's ``_meta`` under :data:`TOKEN_KEY`)."""
        token = str(next(self._tokens))
        self._calls[token] = _Tracked()
        return token

    def forget(self, token: str) -> None:
        """The call's task got its answer (or its error) from the session."""
        tracked = self._calls.pop(token, None)
        if tracked is not None and tracked.request_id is not None:
            self._by_id.pop(tracked.request_id, None)

    def abandon(self, token: str, on_late: LateHandler) -> None:
        """The call's task ended without its answer: hand the answer to ``on_late``, now if it came, else when it
        comes (never, if the server honours the cancellation or the connection ends)."""
        tracked = self._calls.get(token)
        if tracked is None:
            return
        if tracked.response is not None:
            del self._calls[token]
            on_late(tracked.response)
        elif self._closed or tracked.request_id is None:  # never sent, or nobody can answer any more
            self.forget(token)
        else:
            tracked.on_late = on_late
            self._abandoned[token] = None
            if len(self._abandoned) > MAX_ABANDONED:
                oldest = next(iter(self._abandoned))
                del self._abandoned[oldest]
                self.forget(oldest)
                self.given_up += 1

    @property
    def pending(self) -> int:
        """How many calls the wire still tracks (abandoned ones waiting for a late answer included)."""
        return len(self._calls)


class PassThroughStream:
    """A stream around a transport's own (``_stream``) that passes through what it does not define: ``aclose``,
    ``async with`` and every attribute the session reads (``last_context`` …)."""

    __slots__ = ("_stream",)

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class PassThroughReceiveStream(PassThroughStream):
    """A pass-through read side: ``async for`` over :meth:`receive` until the stream ends."""

    __slots__ = ()

    async def receive(self) -> Any:
        return await self._stream.receive()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None


@final
class _Reader(PassThroughReceiveStream):
    __slots__ = ("_wire",)

    def __init__(self, wire: Wire, stream: Any) -> None:
        super().__init__(stream)
        self._wire = wire

    async def receive(self) -> Any:
        import anyio

        try:
            item = await self._stream.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._wire._ended()
            raise
        self._wire._received(item)
        return item

    async def aclose(self) -> None:
        self._wire._ended()
        await self._stream.aclose()


@final
class _Writer(PassThroughStream):
    __slots__ = ("_wire",)

    def __init__(self, wire: Wire, stream: Any) -> None:
        super().__init__(stream)
        self._wire = wire

    async def send(self, item: SessionMessage, /) -> None:
        await self._stream.send(self._wire._sending(item))


async def call_on_wire(
    session: ClientSession,
    wire: Wire,
    name: str,
    arguments: dict[str, Any],
    *,
    on_late: LateHandler,
    on_progress: Callable[[], None] | None = None,
) -> CallToolResult:
    """Send ``tools/call`` and wait for the result; cancelled, leave the late answer to ``on_late``.

    Cancellation of the calling task is the runner's timeout, abort or
    deadline: the session sends ``notifications/cancelled`` on the way out,
    and the wire hands the answer — if one arrives regardless — to
    ``on_late``.  ``on_progress`` is called on each progress notification.
    """
    import asyncio

    progress: ProgressFnT | None = None
    if on_progress is not None:
        tick = on_progress

        async def progressed(progress: float, total: float | None, message: str | None) -> None:
            tick()

        progress = progressed
    token = wire.track()
    meta = cast("RequestParamsMeta", {TOKEN_KEY: token})
    try:
        result: CallToolResult = await session.call_tool(name, arguments, progress_callback=progress, meta=meta)
    except asyncio.CancelledError:
        wire.abandon(token, on_late)
        raise
    except BaseException:
        wire.forget(token)
        raise
    wire.forget(token)
    return result
