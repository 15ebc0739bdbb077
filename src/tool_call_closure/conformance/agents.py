"""The runner's side of the ``agents`` capability: concurrent scenarios, their histories, their allowed outcomes.

Theory of operation
-------------------
A scenario's requests are in program order.  Those without ``agent`` are sequential: each is written and its
answer read before the next.  A run of consecutive requests that name agents is a *concurrent block*: the runner
writes the first request of every agent at once, then, each time an agent's final response line arrives, that
agent's next request — as a client thread per agent would.  Every request's invocation (just before its line is
written) and response (just after its final line is read) are stamped with one monotonic clock
(:func:`time.perf_counter_ns`): that is the *history* (:func:`drive`, :class:`Record`).

A subprocess subject is driven through its pipes; the embedded reference (:class:`~.subject.InProcessSubject`)
through the same server, whose agents run on threads in this process and whose lines are collected in a queue.

Allowed outcomes (:func:`allowed_outcomes`).  A race with several legal answers cannot be pinned by one answer:
a vector of a concurrent scenario lists every outcome the table allows, found by running every interleaving of
its blocks (each agent's requests in their order) through the table's model (:mod:`.agents_model`, the
overlap-only answers included) and keeping each distinct list of answers once.  :func:`allowed_problem` says
whether the answers a subject gave are one of them.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from tool_call_closure.conformance.agents_model import TableModel, TableState, operation
from tool_call_closure.conformance.compare import diff_responses
from tool_call_closure.conformance.linearizability import Operation
from tool_call_closure.conformance.serve_agents import LockedOutput, agent_of
from tool_call_closure.conformance.subject import (
    InProcessSubject,
    ProcessSubject,
    Subject,
    SubjectError,
    encode_request,
    parse_response_line,
)

__all__ = ["Record", "allowed_outcomes", "allowed_problem", "drive", "history_of", "request_agent"]

Clock = Callable[[], int]
_BLOCK_GAP: Final = 10  # the model's time between two segments of a scenario (see allowed_outcomes)


@dataclass(slots=True)
class Record:
    """One request of a driven scenario: when it was invoked and answered, and its response lines."""

    index: int
    agent: int | None
    request: dict[str, Any] | str
    invoke: int
    response: int | None = None
    lines: list[dict[str, Any]] = field(default_factory=list)


def request_agent(request: dict[str, Any] | str) -> int | None:
    """The agent a scenario's request names (None: a sequential request)."""
    agent = agent_of(request) if isinstance(request, dict) else None
    return agent if type(agent) is int else None


# ---------------------------------------------------------------------------------------------- channels


class _Channel:
    """Lines to and from a subject, without the one-answer-per-request discipline of :class:`Subject`."""

    def write(self, line: str) -> None:
        raise NotImplementedError

    def read(self, timeout: float) -> str | None:
        raise NotImplementedError

    def close(self) -> None:
        """Stop reading (the subject stays usable)."""


class _ProcessChannel(_Channel):
    def __init__(self, subject: ProcessSubject) -> None:
        self._subject = subject

    def write(self, line: str) -> None:
        self._subject._write(line.encode("utf-8") + b"\n")

    def read(self, timeout: float) -> str | None:
        raw = self._subject._lines.read_line(timeout)
        return None if raw is None else raw.decode("utf-8", "replace")


class _QueueSink:
    def __init__(self) -> None:
        self.lines: queue.Queue[str] = queue.Queue()

    def write(self, data: bytes) -> int:
        for line in data.decode("utf-8").split("\n"):
            if line:
                self.lines.put(line)
        return len(data)

    def flush(self) -> None:
        pass


class _InProcessChannel(_Channel):
    def __init__(self, subject: InProcessSubject) -> None:
        server = subject._server
        if server.agents is None or not isinstance(server._out, LockedOutput):
            raise SubjectError("the embedded subject was made without the agents capability")
        self._output = server._out
        self._server = server
        self._saved = server._out.target
        self._sink = _QueueSink()
        self._output.target = self._sink  # type: ignore[assignment]

    def write(self, line: str) -> None:
        self._server.handle_line(line)

    def read(self, timeout: float) -> str | None:
        try:
            return self._sink.lines.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError from None

    def close(self) -> None:
        assert self._server.agents is not None
        self._server.agents.wait()
        self._output.target = self._saved


def _channel(subject: Subject) -> _Channel:
    if isinstance(subject, ProcessSubject):
        return _ProcessChannel(subject)
    if isinstance(subject, InProcessSubject):
        return _InProcessChannel(subject)
    raise SubjectError(f"a {type(subject).__name__} cannot run agents")


# ---------------------------------------------------------------------------------------------- driving


def drive(
    subject: Subject, requests: Sequence[dict[str, Any] | str], deadline: float, clock: Clock = time.perf_counter_ns
) -> list[Record]:
    """Run a scenario's ``requests`` (see the module's docstring); the records in request order.

    ``deadline`` is a :func:`time.perf_counter` time; :class:`SubjectError` when the subject does not answer by
    then, writes a line that is not a response, or answers for an agent with nothing outstanding.
    """
    channel = _channel(subject)
    records: list[Record] = []
    try:
        index = 0
        while index < len(requests):
            end = index
            while end < len(requests) and request_agent(requests[end]) is not None:
                end += 1
            if end == index:
                end = index + 1
            records.extend(_block(channel, requests, range(index, end), deadline, clock))
            index = end
    finally:
        channel.close()
    return records


def _read(channel: _Channel, deadline: float) -> dict[str, Any]:
    try:
        line = channel.read(max(0.0, deadline - time.perf_counter()))
    except TimeoutError:
        raise SubjectError("the subject did not answer the concurrent scenario in time") from None
    if line is None:
        raise SubjectError("the subject closed its output during a concurrent scenario")
    return parse_response_line(line)


def _block(
    channel: _Channel, requests: Sequence[dict[str, Any] | str], indices: range, deadline: float, clock: Clock
) -> list[Record]:
    """Run one block (a sequential request is a block of one): each agent's requests in order, agents at once."""
    programs: dict[int | None, list[int]] = {}
    for index in indices:
        programs.setdefault(request_agent(requests[index]), []).append(index)
    records: list[Record] = []
    running: dict[int | None, Record] = {}

    def start(agent: int | None) -> None:
        index = programs[agent].pop(0)
        line = encode_request(requests[index])
        record = Record(index, agent, requests[index], clock())
        running[agent] = record
        records.append(record)
        channel.write(line)

    for agent in list(programs):
        start(agent)
    while running:
        response = _read(channel, deadline)
        agent = response.get("agent")
        record = running.get(agent)
        if record is None:
            raise SubjectError(f"a response for agent {agent!r}, which has no request outstanding: {response}")
        record.lines.append(response)
        if "nested" not in response:
            record.response = clock()
            del running[agent]
            if programs[agent]:
                start(agent)
    return sorted(records, key=lambda r: r.index)


def history_of(records: Sequence[Record]) -> list[Operation]:
    """The records as a history for the table's model."""
    return [
        operation("main" if r.agent is None else r.agent, r.invoke, r.response, r.request, r.lines) for r in records
    ]


# ---------------------------------------------------------------------------------------------- allowed outcomes


def _segments(requests: Sequence[dict[str, Any] | str]) -> list[list[int]]:
    """The request indices by segment: a sequential request alone, a concurrent block together."""
    segments: list[list[int]] = []
    for index, request in enumerate(requests):
        concurrent = request_agent(request) is not None
        if concurrent and segments and request_agent(requests[segments[-1][0]]) is not None:
            segments[-1].append(index)
        else:
            segments.append([index])
    return segments


def allowed_outcomes(requests: Sequence[dict[str, Any] | str], limit: int = 10_000) -> list[list[list[dict[str, Any]]]]:
    """Every outcome the table allows for a scenario: per outcome, each request's response lines (as a subject
    with ``agents`` writes them: an agent's lines carry ``agent``).  The first is program order's.

    Each segment's operations are given the same span in the model (a block's operations all overlap; a
    sequential one overlaps nothing), so the model offers the overlap-only answers for a race between two
    agents of one block.  ``limit`` bounds the interleavings walked (ValueError beyond it).
    """
    model = TableModel()
    segments = _segments(requests)
    operations = [
        operation(None, _BLOCK_GAP * number, _BLOCK_GAP * number + 1, requests[index], [])
        for number, segment in enumerate(segments)
        for index in segment
    ]
    order = [index for segment in segments for index in segment]
    by_index = {index: operations[position] for position, index in enumerate(order)}
    found: dict[str, list[list[dict[str, Any]]]] = {}
    for walked, answers in enumerate(_interleavings(model, segments, requests, by_index), 1):
        if walked > limit:
            raise ValueError(f"the scenario has more than {limit} interleavings")
        lines = [_with_agent(answers[index], request_agent(requests[index])) for index in range(len(requests))]
        found.setdefault(repr(lines), lines)
    return list(found.values())


def _with_agent(lines: list[dict[str, Any]], agent: int | None) -> list[dict[str, Any]]:
    if agent is None:
        return lines
    return [{"id": line.get("id"), "agent": agent, **{k: v for k, v in line.items() if k != "id"}} for line in lines]


def _interleavings(
    model: TableModel,
    segments: list[list[int]],
    requests: Sequence[dict[str, Any] | str],
    by_index: dict[int, Operation],
) -> Iterator[dict[int, list[dict[str, Any]]]]:
    answers: dict[int, list[dict[str, Any]]] = {}

    def walk(state: TableState, segment: int, left: dict[int | None, list[int]]) -> Iterator[None]:
        if not any(left.values()):
            if segment + 1 == len(segments):
                yield None
                return
            following: dict[int | None, list[int]] = {}
            for index in segments[segment + 1]:
                following.setdefault(request_agent(requests[index]), []).append(index)
            yield from walk(state, segment + 1, following)
            return
        for agent, indices in left.items():
            if not indices:
                continue
            index = indices[0]
            for next_state, answer in model.steps(state, by_index[index]):
                answers[index] = answer
                yield from walk(next_state, segment, {**left, agent: indices[1:]})

    for _ in walk(model.init, -1, {}):
        yield dict(answers)


def allowed_problem(
    allowed: dict[str, Any], steps: Sequence[dict[str, Any]], actual: Sequence[list[dict[str, Any]]]
) -> str | None:
    """None if ``actual`` (each step's response lines) is one of a vector's allowed outcomes, else what is wrong.

    ``allowed`` is the vector's member: ``steps``, the indices of the steps whose answers vary, and ``outcomes``,
    for each allowed outcome the response lines of those steps; every other step must answer its ``responses``.
    """
    varying = list(allowed["steps"])
    for index, step in enumerate(steps):
        if index not in varying:
            problem = diff_responses(step["responses"], actual[index])
            if problem is not None:
                return f"step {index + 1}: {problem}"
    for outcome in allowed["outcomes"]:
        if all(diff_responses(lines, actual[index]) is None for index, lines in zip(varying, outcome, strict=True)):
            return None
    first = allowed["outcomes"][0]
    closest = next(
        (index, problem)
        for index, lines in zip(varying, first, strict=True)
        if (problem := diff_responses(lines, actual[index])) is not None
    )
    return (
        f"the answers of steps {', '.join(str(i + 1) for i in varying)} are none of the "
        f"{len(allowed['outcomes'])} allowed outcomes (against the first, step {closest[0] + 1}: {closest[1]})"
    )
