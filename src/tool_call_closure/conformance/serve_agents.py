"""The ``agents`` capability of ``serve``: requests of different agents run on different threads of one instance.

Theory of operation
-------------------
A request line with an ``agent`` member (an integer 0…:data:`MAX_AGENTS` − 1; spec/protocol.md, *Agents*) is
handed to that agent's thread, created on first use, which carries the agent's requests out one after another, in
the order they arrived, on the session's current instance.  Requests of different agents run at the same time:
that is the point, a thread-safe port's races are exercised for real.  Each response line of an agent's request
(nested ones included) carries ``"agent":k`` after its ``id``; lines are written whole, under one lock, in the
order they are finished, so responses of different agents interleave as they come.

A request without ``agent`` waits until every agent has finished what it was given, then runs on the reading
thread, as before: a scenario's setup and its final observations are sequential, only its middle is concurrent.
``new``, ``hello``, ``tamper`` and ``bye`` are never an agent's (a ``ProtocolError``, answered at once, without
``agent``), nor is a malformed ``agent`` member.  End of input and ``bye`` wait for the agents too.

This module knows the server only as two callables (handle a line; write an error), so ``serve`` can use it
without an import cycle: :class:`Agents` is what a :class:`~.serve.Server` made with the capability holds.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import IO, Any, Final

from tool_call_closure.conformance.wire import parse_request_line

__all__ = ["MAX_AGENTS", "Agents", "LockedOutput", "agent_of"]

MAX_AGENTS: Final = 64
_NOT_AN_AGENT: Final = object()


def agent_of(request: Any) -> Any:
    """The agent a parsed request names: an int, None when it names none, a str saying what is wrong otherwise."""
    if not isinstance(request, dict) or "agent" not in request:
        return None
    agent = request["agent"]
    if type(agent) is not int or not 0 <= agent < MAX_AGENTS:
        return f"agent must be an integer from 0 to {MAX_AGENTS - 1}"
    if request.get("cmd") != "call":
        return "only a call request may name an agent"
    return agent


class LockedOutput:
    """An output stream whose ``write`` writes and flushes one whole line under a lock (one line per call)."""

    def __init__(self, target: IO[bytes]) -> None:
        self.target = target
        self._lock = threading.Lock()

    def write(self, data: bytes) -> int:
        with self._lock:
            written = self.target.write(data)
            self.target.flush()
            return written

    def flush(self) -> None:
        """Each write flushed already."""


class Agents:
    """The threads of a session's agents (see the module's docstring)."""

    def __init__(self, handle_line: Callable[[str], None], error: Callable[[Any, int, str, str], None]) -> None:
        self._handle_line = handle_line
        self._error = error
        self._local = threading.local()
        self._queues: dict[int, queue.Queue[str | None]] = {}
        self._threads: list[threading.Thread] = []

    def current(self) -> int | None:
        """The agent whose request this thread is carrying out (None on the reading thread)."""
        agent: int | None = getattr(self._local, "agent", None)
        return agent

    def mark(self, nested: str) -> str:
        """The members a response line carries between ``id`` and its value: ``agent`` first, on an agent's thread."""
        agent = self.current()
        return nested if agent is None else f',"agent":{agent}{nested}'

    def dispatch(self, line: str) -> bool:
        """Hand an agent's request to its thread (True); otherwise wait for the agents and return False.

        A request whose ``agent`` member is malformed is answered here (True).  On an agent's own thread this
        returns False at once: the line is that agent's, carried out where it is.
        """
        if self.current() is not None:
            return False
        agent: Any = None
        if '"agent"' in line:
            try:
                request = parse_request_line(line)
            except (ValueError, RecursionError):
                request = None
            agent = agent_of(request)
            if isinstance(agent, str):
                self.wait()
                request_id = request.get("id") if isinstance(request, dict) else None
                request_id = request_id if isinstance(request_id, (int, float, str)) else None
                self._error(request_id, 0, "ProtocolError", agent)
                return True
        if agent is None:
            self.wait()
            return False
        self._queue(agent).put(line)
        return True

    def _queue(self, agent: int) -> queue.Queue[str | None]:
        found = self._queues.get(agent)
        if found is None:
            found = self._queues[agent] = queue.Queue()
            worker = threading.Thread(target=self._work, args=(agent, found), name=f"agent-{agent}", daemon=True)
            self._threads.append(worker)
            worker.start()
        return found

    def _work(self, agent: int, lines: queue.Queue[str | None]) -> None:
        self._local.agent = agent
        while True:
            line = lines.get()
            try:
                if line is None:
                    return
                self._handle_line(line)
            finally:
                lines.task_done()

    def wait(self) -> None:
        """Until every agent has carried out every request it was given."""
        for lines in list(self._queues.values()):
            lines.join()

    def close(self) -> None:
        """Wait for the agents, then end their threads."""
        for lines in self._queues.values():
            lines.put(None)
        for worker in self._threads:
            worker.join()
        self._queues.clear()
        self._threads.clear()
