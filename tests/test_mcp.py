"""MCP tools against real MCP servers started by the tests (slow tier): ``tests/mcp_server.py`` over stdio and over
streamable HTTP on 127.0.0.1, and the reference server ``@modelcontextprotocol/server-everything`` where ``.ci/run``
installed it.

One stdio server serves the module (its connection lives on an event loop in a thread of its own; each test runs
its scenario there); the tests that need their own connection — a server that dies, the held answers of the
races, HTTP — start one.  Orders are forced with the server's gates (``gate``/``open``/``stats``), not sleeps;
the tests that need time to pass (a timeout, progress) have margins of several times the interval.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from mcp_races import SERVER, Hold, run_races
from mcp_shapes import SHAPES
from tool_call_closure import ToolCallClosure, UsageError, to_json
from tool_call_closure.providers.calls import ToolCall
from tool_call_closure.runners import AbortSignal, BatchRun, LateResult
from tool_call_closure.runners.mcp_results import McpFallback, outcome_of
from tool_call_closure.runners.mcp_tools import (
    McpServer,
    connect,
    connect_stdio,
    connect_streamable_http,
    run_mcp_tool_calls,
)
from tool_call_closure.runners.outcomes import ToolCallError

pytestmark = pytest.mark.slow

T = TypeVar("T")
ROOT = Path(__file__).resolve().parent.parent
EVERYTHING = ROOT / ".ci" / "npm" / "node_modules" / "@modelcontextprotocol" / "server-everything"


class Connected:
    """A stdio connection to the test server, on an event loop running in its own thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.server: McpServer | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self.loop.run_until_complete, args=(self._main(),), daemon=True)
        self._thread.start()
        assert self._ready.wait(60), "the MCP test server did not start"

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        async with connect_stdio(sys.executable, [str(SERVER)]) as server:
            self.server = server
            self._ready.set()
            await self._stop.wait()

    def run(self, scenario: Callable[[McpServer], Awaitable[T]]) -> T:
        assert self.server is not None
        return asyncio.run_coroutine_threadsafe(scenario(self.server), self.loop).result(60)

    def close(self) -> None:
        assert self._stop is not None
        self.loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)


@pytest.fixture(scope="module")
def mcp() -> Iterator[Connected]:
    connected = Connected()
    yield connected
    connected.close()


def call(call_id: str, name: str, **arguments: object) -> ToolCall:
    return ToolCall(call_id, name, arguments, json.dumps(arguments))


def outcomes(run: BatchRun) -> dict[str, Any]:
    return {c.id: json.loads(to_json(c.settlement)) for c in run.snapshot.calls}


async def states(server: McpServer, *tokens: str) -> dict[str, str]:
    result = (await server.session.call_tool("stats", {"tokens": list(tokens)})).structured_content
    assert isinstance(result, dict)
    return result


async def until(condition: Callable[[], Awaitable[bool]]) -> None:
    for _ in range(2000):
        if await condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("never")


def test_every_result_shape_through_the_real_server_is_recorded_as_mapped(mcp: Connected) -> None:
    fallbacks: list[McpFallback] = []

    async def scenario(server: McpServer) -> BatchRun:
        calls = [call(f"c_{name}", name) for name in SHAPES]
        return await run_mcp_tool_calls(ToolCallClosure(), calls, server, on_fallback=fallbacks.append)

    run = mcp.run(scenario)
    assert run.ending == "completed"
    for name, result in SHAPES.items():
        closure = ToolCallClosure()
        handle = closure.begin([call(f"c_{name}", name)]).handle
        try:
            closure.succeed(handle, f"c_{name}", outcome_of(result, None))
        except ToolCallError as error:
            closure.fail(handle, f"c_{name}", error.message, error.code)
        expected = closure.seal(handle)
        assert to_json(run.snapshot.calls[list(SHAPES).index(name)]) == to_json(expected.calls[0])  # type: ignore[union-attr]
    assert sorted(f.name for f in fallbacks) == ["audio", "embedded_zip", "image_svg"]


NAMED = {"text": "any argument names", "name": "n", "server": "s", "on_fallback": "f"}


def test_protocol_errors_and_calls_the_server_never_sees(mcp: Connected) -> None:
    async def scenario(server: McpServer) -> BatchRun:
        calls = [
            call("unknown", "no_such_tool"),
            call("invalid", "bad_params", why="city is required"),
            ToolCall("not_object", "echo", [1, 2], "[1, 2]"),
            call("error", "error_structured"),
            ToolCall("named", "echo", NAMED, json.dumps(NAMED)),
        ]
        return await run_mcp_tool_calls(ToolCallClosure(), calls, server)

    got = outcomes(mcp.run(scenario))
    assert got["unknown"]["code"] == "unknown_tool"
    assert got["invalid"] == {
        "status": "error",
        "code": "invalid_tool_call",
        "message": "Invalid params: city is required",
        "provenance": "reported",
    }
    assert got["not_object"]["code"] == "invalid_tool_call"
    assert got["named"]["content"] == "any argument names"
    assert got["error"]["message"] == 'Quota exceeded.\n{"retry_after":300,"quota":"daily"}'


def test_a_timeout_cancels_the_request_in_the_server(mcp: Connected) -> None:
    async def scenario(server: McpServer) -> tuple[BatchRun, dict[str, str]]:
        run = await run_mcp_tool_calls(
            ToolCallClosure(), [call("t", "gate", token="timeout")], server, call_timeout=0.2
        )
        await until(lambda: _cancelled(server, "timeout"))
        return run, await states(server, "timeout")

    run, state = mcp.run(scenario)
    assert outcomes(run)["t"]["code"] == "tool_timeout"
    assert state == {"timeout": "cancelled"}


async def _cancelled(server: McpServer, token: str) -> bool:
    return (await states(server, token))[token] == "cancelled"


def test_abort_and_deadline_cancel_every_running_request(mcp: Connected) -> None:
    async def scenario(server: McpServer) -> tuple[BatchRun, BatchRun, dict[str, str]]:
        abort = AbortSignal()
        calls = [call(f"a{i}", "gate", token=f"abort{i}") for i in range(3)]
        task = asyncio.ensure_future(run_mcp_tool_calls(ToolCallClosure(), calls, server, abort=abort))
        await until(lambda: _all(server, "started", "abort0", "abort1", "abort2"))
        abort.abort("The user stopped the run.")
        aborted = await task
        calls = [call(f"d{i}", "gate", token=f"deadline{i}") for i in range(2)]
        late = await run_mcp_tool_calls(ToolCallClosure(), calls, server, deadline=0.3)
        tokens = ("abort0", "abort1", "abort2", "deadline0", "deadline1")
        await until(lambda: _all(server, "cancelled", *tokens))
        return aborted, late, await states(server, *tokens)

    aborted, late, state = mcp.run(scenario)
    assert {o["code"] for o in outcomes(aborted).values()} == {"run_aborted"}
    assert aborted.ending == "aborted"
    assert {o["code"] for o in outcomes(late).values()} == {"deadline_exceeded"}
    assert set(state.values()) == {"cancelled"}


async def _all(server: McpServer, state: str, *tokens: str) -> bool:
    return set((await states(server, *tokens)).values()) == {state}


def test_the_concurrency_limit_holds_in_the_server(mcp: Connected) -> None:
    async def scenario(server: McpServer) -> tuple[list[dict[str, str]], BatchRun]:
        tokens = [f"limit{i}" for i in range(4)]
        calls = [call(f"l{i}", "gate", token=token) for i, token in enumerate(tokens)]
        task = asyncio.ensure_future(run_mcp_tool_calls(ToolCallClosure(), calls, server, max_concurrency=2))
        seen = []
        for first in (0, 2):
            await until(lambda first=first: _all(server, "started", *tokens[first : first + 2]))  # type: ignore[misc]
            seen.append(await states(server, *tokens))
            await server.session.call_tool("open", {"tokens": tokens[first : first + 2]})
        return seen, await task

    seen, run = mcp.run(scenario)
    assert list(seen[0].values()) == ["started", "started", "absent", "absent"]
    assert list(seen[1].values()) == ["answered", "answered", "started", "started"]
    assert run.ending == "completed"


@pytest.mark.parametrize("resets", [True, False])
def test_progress_resets_the_timeout_only_when_asked(mcp: Connected, resets: bool) -> None:
    async def scenario(server: McpServer) -> BatchRun:
        calls = [call("p", "progress", steps=12, interval=0.1)]
        return await run_mcp_tool_calls(
            ToolCallClosure(), calls, server, call_timeout=0.6, progress_resets_timeout=resets
        )

    got = outcomes(mcp.run(scenario))["p"]
    assert got == ({"status": "success", "content": "progress done", "provenance": "reported"} if resets else got)
    if not resets:
        assert got["code"] == "tool_timeout"


def test_progress_does_not_outlast_the_deadline(mcp: Connected) -> None:
    async def scenario(server: McpServer) -> BatchRun:
        calls = [call("p", "progress", steps=100, interval=0.05)]
        return await run_mcp_tool_calls(
            ToolCallClosure(), calls, server, call_timeout=0.5, deadline=1.0, progress_resets_timeout=True
        )

    assert outcomes(mcp.run(scenario))["p"]["code"] == "deadline_exceeded"


def test_an_answer_after_the_timeout_is_fenced_and_reported_late() -> None:
    async def scenario() -> tuple[BatchRun, list[LateResult]]:
        from mcp.client.stdio import StdioServerParameters, stdio_client

        late: list[LateResult] = []
        parameters = StdioServerParameters(command=sys.executable, args=[str(SERVER)])
        async with stdio_client(parameters) as (read_stream, write_stream):
            hold = Hold(read_stream)
            hold.hold.add("held")
            async with connect(hold, write_stream) as server:
                closure = ToolCallClosure()
                task = asyncio.ensure_future(
                    run_mcp_tool_calls(
                        closure, [call("h", "gate", token="held")], server, call_timeout=0.3, on_late=late.append
                    )
                )
                await until(lambda: _all(server, "started", "held"))
                await server.session.call_tool("open", {"tokens": ["held"]})
                while "held" not in hold.parked:  # the answer was sent before the timeout, and is held
                    await asyncio.sleep(0.005)
                run = await task  # the timeout is the outcome
                hold.hold.clear()
                hold.release(hold.changed)
                while not late:
                    await asyncio.sleep(0.005)
                assert server.wire.pending == 0
        return run, late

    run, late = asyncio.run(scenario())
    assert outcomes(run)["h"]["code"] == "tool_timeout"
    assert [(item.call_id, item.kind, item.rejection.reason) for item in late] == [("h", "result", "run_closed")]
    assert "gate held opened" in to_json(late[0].value)


def test_a_server_that_dies_mid_call_ends_its_calls_as_errors_and_the_batch_closes() -> None:
    async def scenario() -> BatchRun:
        async with connect_stdio(sys.executable, [str(SERVER)]) as server:
            calls = [call("die", "die"), call("gate", "gate", token="orphan"), call("echo", "echo", text="hi")]
            return await run_mcp_tool_calls(ToolCallClosure(), calls, server, deadline=30)

    run = asyncio.run(scenario())
    got = outcomes(run)
    assert run.snapshot.closed
    assert got["echo"]["content"] == "hi"
    assert got["die"]["code"] == got["gate"]["code"] == "tool_error"
    assert "closed the connection" in got["die"]["message"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_streamable_http_on_localhost() -> None:
    port = _free_port()
    process = subprocess.Popen([sys.executable, str(SERVER), "--http", str(port)], stderr=subprocess.DEVNULL)
    try:

        async def scenario() -> tuple[BatchRun, dict[str, str]]:
            for _ in range(400):
                try:
                    socket.create_connection(("127.0.0.1", port), 0.1).close()
                    break
                except OSError:
                    await asyncio.sleep(0.025)
            async with connect_streamable_http(f"http://127.0.0.1:{port}/mcp") as server:
                calls = [call("e", "echo", text="over http"), call("g", "gate", token="http"), call("i", "image")]
                run = await run_mcp_tool_calls(ToolCallClosure(), calls, server, call_timeout=0.5)
                await until(lambda: _cancelled(server, "http"))
                return run, await states(server, "http")

        run, state = asyncio.run(scenario())
    finally:
        process.terminate()
        process.wait(10)
    got = outcomes(run)
    assert got["e"]["content"] == "over http"
    assert got["g"]["code"] == "tool_timeout"
    assert got["i"]["content"]["$parts"][0]["type"] == "image"
    assert state == {"http": "cancelled"}


def test_connect_refuses_what_is_not_a_server_address() -> None:
    async def scenario() -> None:
        with pytest.raises(UsageError, match="url"):
            async with connect_streamable_http("ftp://127.0.0.1/mcp"):
                pass

    asyncio.run(scenario())


def test_ten_thousand_cancel_versus_complete_races() -> None:
    figures = asyncio.run(run_races(10_000))
    assert figures.ok, figures
    assert figures.races == 10_000
    assert figures.scenarios["cancel_first"] == figures.outcomes["cancel_first:run_aborted"]
    assert figures.outcomes["free:success"], figures.outcomes  # the free races went both ways
    assert figures.outcomes["free:run_aborted"], figures.outcomes


def test_the_reference_server_everything() -> None:
    entry = EVERYTHING / "dist" / "index.js"
    if shutil.which("node") is None or not entry.is_file():
        pytest.skip("@modelcontextprotocol/server-everything is not installed (.ci/run installs it into .ci/npm)")

    async def scenario() -> tuple[BatchRun, frozenset[str]]:
        async with connect_stdio("node", [str(entry), "stdio"], env=dict(os.environ)) as server:
            names = server.tool_names
            calls = [call("echo", "echo", message="hello"), call("sum", "get-sum", a=2, b=3)]
            calls += [call("image", "get-tiny-image"), call("missing", "no-such-tool")]
            calls += [call("structured", "get-structured-content", location="New York")]
            calls += [call("links", "get-resource-links", count=2)]
            calls += [call("progress", "trigger-long-running-operation", duration=1.5, steps=10)]
            run = await run_mcp_tool_calls(
                ToolCallClosure(), calls, server, call_timeout=0.6, progress_resets_timeout=True, deadline=30
            )
            return run, names

    run, names = asyncio.run(scenario())
    got = outcomes(run)
    assert {"echo", "get-sum", "get-tiny-image"} <= names
    assert "hello" in json.dumps(got["echo"])
    assert "5" in json.dumps(got["sum"])
    assert any(part["type"] == "image" for part in got["image"]["content"]["$parts"])
    assert got["missing"]["code"] == "unknown_tool"
    assert any(part["type"] == "json" for part in got["structured"]["content"]["$parts"])
    assert json.dumps(got["links"]).count("Resource link:") == 2
    assert got["progress"]["status"] == "success"  # 1.5 s under a 0.6 s timeout: the progress kept it alive


def test_two_servers_serve_one_batch() -> None:
    async def scenario() -> BatchRun:
        async with (
            connect_stdio(sys.executable, [str(SERVER), "--only", "echo,stats"]) as first,
            connect_stdio(sys.executable, [str(SERVER), "--only", "image,gate"]) as second,
        ):
            assert first.tool_names == {"echo", "stats"}
            calls = [call("e", "echo", text="from the first"), call("i", "image"), call("t", "text")]
            return await run_mcp_tool_calls(ToolCallClosure(), calls, [first, second])

    got = outcomes(asyncio.run(scenario()))
    assert got["e"]["content"] == "from the first"
    assert got["i"]["content"]["$parts"][0]["type"] == "image"
    assert got["t"]["code"] == "unknown_tool"  # neither lists it
