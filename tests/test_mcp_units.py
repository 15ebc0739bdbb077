"""MCP tools, the parts that need no server: the wire's bookkeeping, the mapping of answers, the runner hooks
(``running_call``, ``ToolCallError``), and that the library never imports ``mcp`` by itself.

The real servers are in ``tests/test_mcp.py`` (slow tier).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from typing import Any

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

from mcp_shapes import PNG, SHAPES, result, text
from tool_call_closure import ToolCallClosure, UsageError, to_json
from tool_call_closure.parts import MAX_PARTS, ToolContent
from tool_call_closure.providers.calls import ToolCall
from tool_call_closure.runners import run_tool_calls
from tool_call_closure.runners.asyncio_runner import running_call
from tool_call_closure.runners.mcp_results import NO_MESSAGE, McpFallback, error_of, outcome_of
from tool_call_closure.runners.mcp_tools import run_mcp_tool_calls
from tool_call_closure.runners.mcp_wire import TOKEN_KEY, Wire
from tool_call_closure.runners.outcomes import ToolCallError


def call(call_id: str, name: str, **arguments: object) -> ToolCall:
    return ToolCall(call_id, name, arguments, json.dumps(arguments))


# -- the library does not import mcp -------------------------------------------------------------------------------


def test_importing_the_library_and_the_mcp_modules_does_not_import_mcp() -> None:
    code = (
        "import sys, tool_call_closure, tool_call_closure.runners, tool_call_closure.runners.mcp_tools; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types', 'anyio', 'pydantic')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# -- the mapping ---------------------------------------------------------------------------------------------------


def test_one_text_stays_a_text_and_no_content_is_an_empty_text() -> None:
    assert outcome_of(SHAPES["text"], None) == "sunny, 21 °C"
    assert outcome_of(SHAPES["empty"], None) == ""
    assert outcome_of(result(text(""), text("kept")), None) == "kept"  # an empty text carries nothing


def test_every_text_block_is_kept_in_order() -> None:
    value = outcome_of(SHAPES["texts"], None)
    assert isinstance(value, ToolContent)
    assert [json.loads(to_json(part)) for part in value.parts] == [
        {"type": "text", "text": "first block"},
        {"type": "text", "text": "second block"},
    ]


def test_structured_content_is_a_json_part_with_the_tools_output_schema() -> None:
    schema = {"type": "object"}
    tool = types.Tool(name="t", input_schema={"type": "object"}, output_schema=schema)
    value = outcome_of(SHAPES["structured_only"], tool)
    assert isinstance(value, ToolContent)
    assert json.loads(to_json(value)) == {"$parts": [{"type": "json", "value": {"rows": [1, 2, 3]}, "schema": schema}]}


def test_an_error_keeps_the_servers_text_and_structured_content() -> None:
    with pytest.raises(ToolCallError) as caught:
        outcome_of(SHAPES["error_structured"], None)
    assert caught.value.code == "tool_error"
    assert caught.value.message == 'Quota exceeded.\n{"retry_after":300,"quota":"daily"}'
    assert caught.value.structured == {"retry_after": 300, "quota": "daily"}
    with pytest.raises(ToolCallError, match=NO_MESSAGE):
        outcome_of(result(is_error=True), None)
    image = types.ImageContent(type="image", data=PNG, mime_type="image/png")
    with pytest.raises(ToolCallError, match=r"^broken\n\[image image/png not shown: an error carries text only\]$"):
        outcome_of(result(text("broken"), image, is_error=True), None)


def test_what_no_provider_takes_is_a_text_saying_so_and_a_reported_fallback() -> None:
    fallbacks: list[McpFallback] = []
    value = outcome_of(SHAPES["audio"], None, call_id="c1", on_fallback=fallbacks.append)
    assert isinstance(value, ToolContent)
    note = value.parts[1]
    assert [(f.call_id, f.index, f.item_type, f.media_type) for f in fallbacks] == [("c1", 1, "audio", "audio/wav")]
    assert fallbacks[0].text == getattr(note, "text", None)
    assert "audio/wav" in fallbacks[0].text


def test_an_empty_image_or_blob_is_a_reported_fallback_and_too_many_parts_end_the_call_as_an_error() -> None:
    fallbacks: list[McpFallback] = []
    empty_image = types.ImageContent(type="image", data="", mime_type="image/png")
    blob = types.BlobResourceContents(uri="file:///r.pdf", mime_type="application/pdf", blob="")
    empty_blob = types.EmbeddedResource(type="resource", resource=blob)
    value = outcome_of(result(text("two"), empty_image, empty_blob), None, call_id="c", on_fallback=fallbacks.append)
    assert isinstance(value, ToolContent)
    assert [f.index for f in fallbacks] == [1, 2]
    assert all("not shown: it is empty" in f.text for f in fallbacks)
    assert [getattr(part, "text", None) for part in value.parts[1:]] == [f.text for f in fallbacks]
    outcome_of(result(*[text("x")] * MAX_PARTS), None)
    with pytest.raises(ToolCallError, match=f"has {MAX_PARTS + 1} parts; a result holds at most {MAX_PARTS}"):
        outcome_of(result(*[text("x")] * (MAX_PARTS + 1)), None)


@pytest.mark.parametrize(
    ("code", "message", "expected"),
    [
        (-32602, "Unknown tool: nope", "unknown_tool"),
        (-32602, "Invalid params: city", "invalid_tool_call"),
        (-32000, "Connection closed", "tool_error"),
        (-32603, "Internal error", "tool_error"),
    ],
)
def test_protocol_errors(code: int, message: str, expected: str) -> None:
    error = error_of(MCPError(code, message), "weather")
    assert error.code == expected
    if code == -32602:
        assert error.message == message  # the server's own words


# -- ToolCallError and running_call on the plain asyncio runner ---------------------------------------------------


def test_a_tool_call_error_settles_with_its_own_code_and_text() -> None:
    async def tool() -> object:
        raise ToolCallError("city must be a name", code="invalid_tool_call")

    run = asyncio.run(run_tool_calls(ToolCallClosure(), [call("c", "t")], {"t": tool}))
    assert json.loads(to_json(run.snapshot.calls[0].settlement)) == {
        "status": "error",
        "code": "invalid_tool_call",
        "message": "city must be a name",
        "provenance": "reported",
    }


def test_tool_call_error_refuses_a_code_that_is_not_a_tools() -> None:
    with pytest.raises(UsageError, match="code"):
        ToolCallError("x", code="run_aborted")
    with pytest.raises(UsageError, match="message"):
        ToolCallError(b"x")  # type: ignore[arg-type]


def test_running_call_is_only_available_in_a_tool() -> None:
    with pytest.raises(UsageError, match="running_call"):
        running_call()


def test_reset_timeout_gives_the_call_its_whole_timeout_again_from_now() -> None:
    async def tool() -> object:
        current = running_call()
        loop = asyncio.get_running_loop()
        before = current._timer.when()  # type: ignore[union-attr]
        await asyncio.sleep(0.01)
        current.reset_timeout()
        after = current._timer.when()  # type: ignore[union-attr]
        return [after > before, abs(after - (loop.time() + 30)) < 1]

    run = asyncio.run(run_tool_calls(ToolCallClosure(), [call("c", "t")], {"t": tool}, call_timeout=30))
    assert json.loads(to_json(run.snapshot.calls[0].settlement))["content"] == "[true,true]"  # stored as JSON text


def test_reset_timeout_does_nothing_after_the_timeout_fired_or_the_tool_returned() -> None:
    kept: list[Any] = []

    async def tool() -> object:
        current = running_call()
        kept.append(current)
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            timer = current._timer
            current.reset_timeout()  # the timeout fired: nothing to restart
            kept.append(current._timer is timer)
            raise
        return None

    asyncio.run(run_tool_calls(ToolCallClosure(), [call("c", "t")], {"t": tool}, call_timeout=0.01))
    assert kept[1] is True
    timer = kept[0]._timer
    kept[0].reset_timeout()  # the tool's task is over
    assert kept[0]._timer is timer


def test_a_value_delivered_after_the_outcome_is_reported_late() -> None:
    late: list[Any] = []

    async def tool() -> object:
        current = running_call()
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            current.deliver("too late")  # what a wire does with an answer that came after the timeout
            raise
        return None

    run = asyncio.run(
        run_tool_calls(ToolCallClosure(), [call("c", "t")], {"t": tool}, call_timeout=0.05, on_late=late.append)
    )
    assert json.loads(to_json(run.snapshot.calls[0].settlement))["code"] == "tool_timeout"
    assert [(item.value, item.rejection.reason) for item in late] == [("too late", "duplicate_settlement")]


def test_run_mcp_tool_calls_checks_its_arguments_first() -> None:
    closure = ToolCallClosure()
    with pytest.raises(UsageError, match="McpServer"):
        asyncio.run(run_mcp_tool_calls(closure, [call("c", "t")], object()))  # type: ignore[arg-type]
    assert closure.snapshot() is None


# -- the wire ------------------------------------------------------------------------------------------------------


class _Pipe:
    """A transport stream of the tests: what is sent is kept; what is received comes from a queue."""

    def __init__(self) -> None:
        self.sent: list[Any] = []
        self.incoming: asyncio.Queue[Any] = asyncio.Queue()

    async def send(self, item: Any) -> None:
        self.sent.append(item)

    async def receive(self) -> Any:
        return await self.incoming.get()

    async def aclose(self) -> None:
        pass


def _request(request_id: int, token: str, **meta: Any) -> SessionMessage:
    params = {"name": "t", "arguments": {}, "_meta": {TOKEN_KEY: token, **meta}}
    return SessionMessage(types.JSONRPCRequest(jsonrpc="2.0", id=request_id, method="tools/call", params=params))


def _response(request_id: int, value: str) -> SessionMessage:
    answer = {"content": [{"type": "text", "text": value}], "isError": False}
    return SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result=answer))


def test_the_wire_removes_its_key_and_keeps_the_rest_of_meta() -> None:
    async def scenario() -> list[Any]:
        wire, pipe = Wire(), _Pipe()
        token = wire.track()
        await wire.writer(pipe).send(_request(7, token, progressToken=7))
        return pipe.sent

    (sent,) = asyncio.run(scenario())
    assert sent.message.params["_meta"] == {"progressToken": 7}


def test_the_wire_hands_a_late_answer_over_now_or_when_it_comes_and_forgets_answered_calls() -> None:
    async def scenario() -> tuple[list[Any], int]:
        wire, pipe = Wire(), _Pipe()
        reader, writer = wire.reader(pipe), wire.writer(pipe)
        late: list[Any] = []
        answered, early, later = wire.track(), wire.track(), wire.track()
        for number, token in enumerate((answered, early, later), start=1):
            await writer.send(_request(number, token))
        for number in (1, 2):
            await pipe.incoming.put(_response(number, f"answer {number}"))
            await reader.receive()
        wire.forget(answered)  # its task got the answer from the session
        wire.abandon(early, late.append)  # cancelled after its answer came: handed over at once
        wire.abandon(later, late.append)  # cancelled before: handed over when it comes
        assert len(late) == 1
        await pipe.incoming.put(_response(3, "answer 3"))
        await reader.receive()
        return late, wire.pending

    late, pending = asyncio.run(scenario())
    assert [item["content"][0]["text"] for item in late] == ["answer 2", "answer 3"]
    assert pending == 0


def test_the_wire_drops_abandoned_calls_when_the_connection_ends() -> None:
    async def scenario() -> int:
        import anyio

        wire, pipe = Wire(), _Pipe()
        token = wire.track()
        await wire.writer(pipe).send(_request(1, token))
        wire.abandon(token, lambda response: None)
        reader = wire.reader(pipe)

        async def ended() -> Any:
            raise anyio.EndOfStream

        pipe.receive = ended  # type: ignore[method-assign]
        with pytest.raises(anyio.EndOfStream):
            await reader.receive()
        return wire.pending

    assert asyncio.run(scenario()) == 0


def test_an_error_answer_is_kept_as_an_mcp_error() -> None:
    async def scenario() -> list[Any]:
        wire, pipe = Wire(), _Pipe()
        token = wire.track()
        await wire.writer(pipe).send(_request(1, token))
        late: list[Any] = []
        wire.abandon(token, late.append)
        error = types.JSONRPCError(jsonrpc="2.0", id=1, error=types.ErrorData(code=-32602, message="Unknown tool: t"))
        await pipe.incoming.put(SessionMessage(error))
        await wire.reader(pipe).receive()
        return late

    (error,) = asyncio.run(scenario())
    assert isinstance(error, MCPError)
    assert error.code == -32602


def test_the_wire_waits_for_a_bounded_number_of_cancelled_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    from tool_call_closure.runners import mcp_wire

    monkeypatch.setattr(mcp_wire, "MAX_ABANDONED", 2)

    async def scenario() -> tuple[int, int, list[Any]]:
        wire, pipe = Wire(), _Pipe()
        writer, late = wire.writer(pipe), list[Any]()
        tokens = [wire.track() for _ in range(3)]
        for number, token in enumerate(tokens, start=1):
            await writer.send(_request(number, token))
            wire.abandon(token, late.append)
        await pipe.incoming.put(_response(1, "given up"))
        await pipe.incoming.put(_response(3, "still awaited"))
        reader = wire.reader(pipe)
        await reader.receive()
        await reader.receive()
        return wire.pending, wire.given_up, late

    pending, given_up, late = asyncio.run(scenario())
    assert (pending, given_up) == (1, 1)
    assert [item["content"][0]["text"] for item in late] == ["still awaited"]


def _listing(*names: str) -> Any:
    from tool_call_closure.runners.mcp_tools import McpServer

    tools = tuple(types.Tool(name=name, input_schema={"type": "object"}) for name in names)
    return McpServer(None, Wire(), tools)  # type: ignore[arg-type]  # never connected: only its listing is read


def test_several_servers_share_a_batch_unless_two_list_the_same_tool() -> None:
    closure = ToolCallClosure()
    with pytest.raises(UsageError, match="'search' is listed by two"):
        asyncio.run(run_mcp_tool_calls(closure, [call("c", "t")], [_listing("search", "a"), _listing("search")]))
    with pytest.raises(UsageError, match="non-empty"):
        asyncio.run(run_mcp_tool_calls(closure, [call("c", "t")], []))
    assert closure.snapshot() is None
    run = asyncio.run(run_mcp_tool_calls(closure, [call("c", "elsewhere")], [_listing("a"), _listing("b")]))
    assert json.loads(to_json(run.snapshot.calls[0].settlement))["code"] == "unknown_tool"  # no server lists it
