"""Cancel-versus-complete races against a real stdio MCP server (``tests/mcp_server.py``), both orders forced.

``python tests/mcp_races.py [N]`` runs N races (default 10,000) and prints the figures; ``tests/test_mcp.py`` runs
them in the slow tier.  Every race is one call of the server's ``gate`` tool in a batch of
:data:`BATCH` run by :func:`~tool_call_closure.runners.mcp_tools.run_mcp_tool_calls`, ended by an abort.  Which
comes first — the server's answer or the cancellation — is chosen, not left to sleeps:

* ``complete_first``: the test opens the call's gate in the server and waits until the answer is the call's outcome,
  then aborts;
* ``cancel_first``: the test holds the answer in the client's transport (:class:`Hold`, under the runner's
  wire), opens the gate, waits until the answer is held, aborts — the answer is released only after the run
  returned, so it arrives after the call's outcome and must be reported late;
* ``never_answered``: the gate stays shut; the abort's ``notifications/cancelled`` stops the server's handler,
  which logs that it was cancelled and never answers;
* ``free``: the gate is opened and the batch aborted a few loop turns apart, so either may win.

Checked for every call: exactly one outcome in the final snapshot; every answer the client received is either
the call's outcome or reported to ``on_late``, never both, never neither; every answer the server sent was
received; every call the server did not answer was cancelled in the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tool_call_closure import ToolCallClosure
from tool_call_closure.providers.calls import ToolCall
from tool_call_closure.runners import AbortSignal, LateResult
from tool_call_closure.runners.mcp_tools import McpServer, connect, run_mcp_tool_calls
from tool_call_closure.runners.mcp_wire import PassThroughReceiveStream

SERVER = Path(__file__).with_name("mcp_server.py")
BATCH = 50
SCENARIOS = ("complete_first", "cancel_first", "never_answered", "free")


class Hold(PassThroughReceiveStream):
    """The client transport's read stream, passing every message on except the ``gate`` answers it is told to hold.

    A pump task reads the transport and queues what passes; a held answer is queued when :meth:`release` says so.
    """

    _END = object()

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self.hold: set[str] = set()
        self.parked: dict[str, Any] = {}
        self.received: Counter[str] = Counter()
        self.changed = asyncio.Event()
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._pump: asyncio.Task[None] | None = None

    @staticmethod
    def token_of(item: Any) -> str | None:
        result = getattr(getattr(item, "message", None), "result", None)
        if isinstance(result, dict) and isinstance(result.get("structuredContent"), dict):
            token = result["structuredContent"].get("token")
            return token if isinstance(token, str) else None
        return None

    async def _run_pump(self) -> None:
        try:
            while True:
                item = await self._stream.receive()
                token = self.token_of(item)
                if token is not None and token in self.hold:
                    self.parked[token] = item
                    self.changed.set()
                else:
                    self._queue.put_nowait(item)
        except Exception:  # noqa: BLE001  # the end of the stream (or its failure) ends the reading side
            self._queue.put_nowait(self._END)

    async def receive(self) -> Any:
        import anyio

        if self._pump is None:
            self._pump = asyncio.ensure_future(self._run_pump())
        item = await self._queue.get()
        if item is self._END:
            self._queue.put_nowait(self._END)
            raise anyio.EndOfStream
        token = self.token_of(item)
        if token is not None:
            self.received[token] += 1
        self.changed.set()
        return item

    def release(self, changed: asyncio.Event) -> None:
        for item in self.parked.values():
            self._queue.put_nowait(item)
        self.parked.clear()
        changed.set()

    async def aclose(self) -> None:
        if self._pump is not None:
            self._pump.cancel()
        await super().aclose()


@dataclass
class Figures:
    races: int = 0
    scenarios: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)
    late_reported: int = 0
    answers_silenced_by_cancel: int = 0
    two_outcomes: int = 0
    no_outcome: int = 0
    received_unaccounted: int = 0
    answered_not_received: int = 0
    unanswered_not_cancelled: int = 0

    @property
    def ok(self) -> bool:
        bad = (
            self.two_outcomes,
            self.no_outcome,
            self.received_unaccounted,
            self.answered_not_received,
            self.unanswered_not_cancelled,
        )
        return self.races > 0 and not any(bad)


def _call(token: str) -> ToolCall:
    arguments = {"token": token}
    return ToolCall(f"call_{token}", "gate", arguments, json.dumps(arguments))


async def _until(condition: Any, changed: asyncio.Event | None = None, *, bound: float = 10.0) -> bool:
    """Wait until ``condition()`` holds (woken by ``changed`` when given, else every loop turn), at most ``bound``
    seconds; say whether it held."""
    loop = asyncio.get_running_loop()
    ends = loop.time() + bound
    while not condition():
        if loop.time() > ends:
            return False
        if changed is None:
            await asyncio.sleep(0)
            continue
        changed.clear()
        if condition():
            break
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(changed.wait(), 0.05)
    return True


def _settled(closure: ToolCallClosure, tokens: list[str]) -> bool:
    snapshot = closure.snapshot()
    ids = {f"call_{t}" for t in tokens}
    return snapshot is not None and all(c.state != "pending" for c in snapshot.calls if c.id in ids)


async def _states(server: McpServer, tokens: list[str]) -> dict[str, str]:
    states = (await server.session.call_tool("stats", {"tokens": tokens})).structured_content
    assert isinstance(states, dict)
    return states


async def _all_started(server: McpServer, tokens: list[str]) -> None:
    """Every ``gate`` call of the batch has reached its handler in the server (so a cancel will find it there)."""
    for _ in range(10_000):
        if all(state != "absent" for state in (await _states(server, tokens)).values()):
            return
    raise AssertionError("the server never saw every call of the batch")


async def _one_batch(server: McpServer, hold: Hold, number: int, rng: random.Random, figures: Figures) -> None:
    tokens = [f"{number}_{i}" for i in range(BATCH)]
    kinds = {token: SCENARIOS[i % len(SCENARIOS)] for i, token in enumerate(tokens)}
    by_kind = {kind: [t for t in tokens if kinds[t] == kind] for kind in SCENARIOS}
    closure, abort, late = ToolCallClosure(), AbortSignal(), list[LateResult]()
    hold.hold |= set(by_kind["cancel_first"])
    calls = [_call(t) for t in tokens]
    run = asyncio.ensure_future(run_mcp_tool_calls(closure, calls, server, abort=abort, on_late=late.append))
    await _all_started(server, tokens)
    await server.session.call_tool("open", {"tokens": by_kind["complete_first"] + by_kind["cancel_first"]})
    await _until(lambda: _settled(closure, by_kind["complete_first"]), hold.changed)
    await _until(lambda: set(by_kind["cancel_first"]) <= set(hold.parked), hold.changed)
    opening = asyncio.ensure_future(server.session.call_tool("open", {"tokens": by_kind["free"]}))
    for _ in range(rng.randrange(300)):  # from none to about the time the answers take to come back
        await asyncio.sleep(0)
    abort.abort()
    report = await run
    await opening
    hold.hold -= set(by_kind["cancel_first"])
    hold.release(hold.changed)
    states = await _states(server, tokens)
    answered = [t for t in tokens if states[t] == "answered"]
    late_ids = lambda: {item.call_id for item in late}  # noqa: E731
    await _until(
        lambda: all(
            _outcome_kind(report.snapshot, t) == "success" or f"call_{t}" in late_ids()
            for t in answered
            if hold.received[t] or kinds[t] != "free"
        ),
        hold.changed,
        bound=5.0,
    )
    _account(figures, kinds, report.snapshot, late, hold, states)


def _outcome_kind(snapshot: Any, token: str) -> str:
    call = next(c for c in snapshot.calls if c.id == f"call_{token}")
    if call.settlement is None:
        return "none"
    return "success" if call.settlement.status == "success" else str(call.settlement.code)


def _account(
    figures: Figures, kinds: dict[str, str], snapshot: Any, late: list[LateResult], hold: Hold, states: dict[str, str]
) -> None:
    late_by_token = Counter(item.call_id.removeprefix("call_") for item in late)
    for token, kind in kinds.items():
        figures.races += 1
        figures.scenarios[kind] += 1
        outcome = _outcome_kind(snapshot, token)
        figures.outcomes[f"{kind}:{outcome}"] += 1
        figures.no_outcome += outcome == "none"
        received, used = hold.received[token], int(outcome == "success")
        figures.received_unaccounted += received != used + late_by_token[token]
        figures.two_outcomes += bool(used and late_by_token[token])
        if states[token] == "answered" and not received:
            if kind == "free":  # the cancel reached the server between the tool's return and the answer's write
                figures.answers_silenced_by_cancel += 1
            else:
                figures.answered_not_received += 1
        figures.unanswered_not_cancelled += states[token] not in ("answered", "cancelled")
        figures.late_reported += late_by_token[token]


async def run_races(count: int, seed: int = 22) -> Figures:
    from mcp.client.stdio import StdioServerParameters, stdio_client

    figures = Figures()
    rng = random.Random(seed)
    parameters = StdioServerParameters(command=sys.executable, args=[str(SERVER)])
    async with stdio_client(parameters) as (read_stream, write_stream):
        hold = Hold(read_stream)
        async with connect(hold, write_stream) as server:
            for number in range((count + BATCH - 1) // BATCH):
                await _one_batch(server, hold, number, rng, figures)
    return figures


def main(argv: list[str]) -> None:
    count = int(argv[0]) if argv else 10_000
    figures = asyncio.run(run_races(count))
    print(json.dumps({**figures.__dict__, "ok": figures.ok}, default=dict, indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
