"""``fuzz --agents N``: random concurrent programs, run many times, checked for linearizability, failures shrunk.

Theory of operation
-------------------
A *program* (:class:`Program`) is a setup (a fresh instance, a first generation of calls ``a`` ``b`` ``c``, a
second of ``a`` ``b``: so ``$handle`` 1 is stale and 2 is current), then 2–N agents with a few requests each (a
concurrent block, capability ``agents``), then a final ``snapshot``.  Agents settle the calls in every form with
the current, the stale or a look-alike handle, close (with or without a reason), seal, begin new generations,
take snapshots, export and read the active generation — the operations whose races the table decides.

Each program is run ``repeat`` times (a race shows only in some interleavings) by an *executor*: a function from a
program and a seed to a history (:class:`~.linearizability.Operation` list).  The protocol executor
(:func:`protocol_executor`) drives a subject through :func:`.agents.drive` (real threads in the subject); tests
plug in executors of their own, such as a deterministic scheduler over simulated threads.  Every history is
checked against the table's model (:func:`.agents_model.table_model`).  A history the checker refutes is a
*failure*; one it cannot decide within its budget is counted as ``unknown``, never as a pass.

A failure is shrunk (:func:`shrink`): first whole agents are dropped (fewest agents), then single requests
(fewest operations), each candidate kept when some of ``attempts`` runs of it still fails the same way (a
violation).  The smallest program is written as a vector (:func:`failure_vector`, origin ``fuzz``): its allowed
outcomes come from the reference, so the vector fails the subject the way the fuzzer saw.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from tool_call_closure.conformance.agents import drive, history_of
from tool_call_closure.conformance.agents_model import table_model
from tool_call_closure.conformance.linearizability import DEFAULT_BUDGET, CheckResult, Operation, check
from tool_call_closure.conformance.subject import InProcessSubject, Subject

__all__ = [
    "FULL",
    "SMALL",
    "Executor",
    "Failure",
    "FuzzRun",
    "Program",
    "draw_program",
    "failure_vector",
    "fuzz_agents",
    "protocol_executor",
    "shrink",
]

Request = dict[str, Any]
Executor = Callable[["Program", int], list[Operation]]

CALLS: Final = ("a", "b", "c")
# The operations an agent draws: every form, for the reference and ports; SMALL for subjects that know only the
# core (the planted subject of the tests).
FULL: Final = (
    "succeed",
    "fail",
    "cancel",
    "settle",
    "close",
    "seal",
    "begin",
    "snapshot",
    "activeGeneration",
    "toOpenAIChatCompletions",
)
SMALL: Final = ("succeed", "cancel", "close", "begin", "snapshot")


@dataclass(frozen=True, slots=True)
class Program:
    """A concurrent program: per agent, its requests (without ids and agents; :meth:`requests` numbers them)."""

    agents: tuple[tuple[Request, ...], ...]

    def requests(self) -> list[Request]:
        """The scenario: setup, the agents' requests (a concurrent block), a final snapshot; ids 1, 2, …"""
        setup: list[Request] = [
            {"cmd": "new"},
            _call("begin", [[{"id": c, "name": "t"} for c in CALLS]]),
            _call("begin", [[{"id": c, "name": "t"} for c in CALLS[:2]]]),
        ]
        block = [{**request, "agent": agent} for agent, program in enumerate(self.agents) for request in program]
        scenario = [*setup, *block, _call("snapshot", [])]
        return [{"id": number, **request} for number, request in enumerate(scenario, 1)]

    @property
    def size(self) -> tuple[int, int]:
        """(agents, operations): what shrinking makes smaller, in that order."""
        return len(self.agents), sum(len(program) for program in self.agents)

    def describe(self) -> str:
        agents, operations = self.size
        return f"{agents} agents × {operations} operations"


def _call(method: str, args: list[Any]) -> Request:
    return {"cmd": "call", "method": method, "args": args}


def _handle(rng: random.Random) -> Any:
    roll = rng.random()
    return {"$handle": 2} if roll < 0.75 else {"$handle": 1} if roll < 0.92 else {"$forgedHandle": 2}


def _request(rng: random.Random, methods: Sequence[str], agent: int, number: int) -> Request:
    method = rng.choice(methods)
    call_id = rng.choice(CALLS)
    content = f"{agent}.{number}"
    if method == "succeed":
        return _call(method, [_handle(rng), call_id, content])
    if method == "fail":
        return _call(method, [_handle(rng), call_id, {"$error": content}])
    if method == "cancel":
        return _call(method, [_handle(rng), call_id, content] if rng.random() < 0.5 else [_handle(rng), call_id])
    if method == "settle":
        status = rng.choice(("success", "error", "cancelled"))
        outcome = {"status": status, "content": content} if status == "success" else {"status": status}
        return _call(method, [_handle(rng), call_id, outcome])
    if method == "close":
        reason = {"status": "cancelled", "code": f"code{agent}"}
        return _call(method, [_handle(rng), reason] if rng.random() < 0.5 else [_handle(rng)])
    if method == "seal":
        return _call(method, [_handle(rng)])
    if method == "begin":
        return _call(method, [[{"id": c, "name": "t"} for c in rng.sample(CALLS, rng.randint(1, 2))]])
    return _call(method, [])


def draw_program(rng: random.Random, agents: int, operations: tuple[int, int], methods: Sequence[str]) -> Program:
    """A random program of 2…``agents`` agents with ``operations`` (min, max) requests each."""
    count = rng.randint(2, max(2, agents))
    return Program(
        tuple(
            tuple(_request(rng, methods, agent, number) for number in range(rng.randint(*operations)))
            for agent in range(count)
        )
    )


def protocol_executor(subject: Subject, timeout: float = 10.0) -> Executor:
    """Run programs on a subject that has the ``agents`` capability (a new instance each time)."""

    def execute(program: Program, seed: int) -> list[Operation]:
        if not isinstance(subject, InProcessSubject):
            return history_of(drive(subject, program.requests(), time.perf_counter() + timeout))
        interval = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)  # the agents' threads are this process's: switch often, so they interleave
        try:
            return history_of(drive(subject, program.requests(), time.perf_counter() + timeout))
        finally:
            sys.setswitchinterval(interval)

    return execute


def judge(history: list[Operation], budget: int = DEFAULT_BUDGET) -> CheckResult:
    """The checker's verdict on a history of a program, with the table as the model."""
    return check(history, table_model(history), budget=budget)


@dataclass(slots=True)
class Failure:
    """A program that failed, shrunk: its history and the checker's result."""

    program: Program
    history: list[Operation]
    result: CheckResult
    found_after: float  # seconds from the start of the fuzz run
    original: Program | None = None

    def describe(self) -> str:
        lines = [f"not linearizable: {self.program.describe()} (found after {self.found_after:.2f} s)"]
        lines.append(f"  {self.result.message}")
        for record in self.history:
            answer = "unobserved" if record.answer is None else _short(record.answer)
            lines.append(f"  agent {record.agent}: [{record.invoke} {record.response}] {record.op} -> {answer}")
        return "\n".join(lines)


def _short(value: Any, limit: int = 160) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(slots=True)
class FuzzRun:
    """What a fuzz run saw."""

    programs: int = 0
    histories: int = 0
    operations: int = 0
    unknown: int = 0
    seconds: float = 0.0
    failures: list[Failure] = field(default_factory=list)


def _fails(program: Program, execute: Executor, attempts: int, seed: int, budget: int) -> Failure | None:
    for attempt in range(attempts):
        history = execute(program, seed * 7919 + attempt)
        result = judge(history, budget)
        if result.verdict == "violation":
            return Failure(program, history, result, 0.0)
    return None


def shrink(
    failure: Failure, execute: Executor, *, attempts: int = 20, seed: int = 0, budget: int = DEFAULT_BUDGET
) -> Failure:
    """The smallest program (fewest agents, then fewest operations) that still fails (see the module's docstring)."""
    best = failure
    improved = True
    while improved:
        improved = False
        agents = best.program.agents
        candidates = [Program(agents[:i] + agents[i + 1 :]) for i in range(len(agents))] if len(agents) > 1 else []
        candidates += [
            Program((*agents[:i], program[:j] + program[j + 1 :], *agents[i + 1 :]))
            for i, program in enumerate(agents)
            for j in range(len(program))
        ]
        for candidate in candidates:
            if candidate.size[1] == 0:
                continue
            found = _fails(candidate, execute, attempts, seed, budget)
            if found is not None:
                best = Failure(found.program, found.history, found.result, failure.found_after, failure.original)
                improved = True
                break
    return best


def fuzz_agents(
    execute: Executor,
    *,
    agents: int = 3,
    runs: int = 100,
    repeat: int = 5,
    seed: int = 0,
    operations: tuple[int, int] = (1, 3),
    methods: Sequence[str] = FULL,
    budget: int = DEFAULT_BUDGET,
    stop_after: int = 1,
    progress: Callable[[FuzzRun], None] | None = None,
) -> FuzzRun:
    """Draw ``runs`` programs, run each ``repeat`` times, check each history; shrink the first failures."""
    rng = random.Random(seed)
    run = FuzzRun()
    started = time.perf_counter()
    for number in range(runs):
        program = draw_program(rng, agents, operations, methods)
        run.programs += 1
        for attempt in range(repeat):
            history = execute(program, seed * 1_000_003 + number * 101 + attempt)
            run.histories += 1
            run.operations += len(history)
            result = judge(history, budget)
            if result.verdict == "unknown":
                run.unknown += 1
            if result.verdict != "violation":
                continue
            found = Failure(program, history, result, time.perf_counter() - started, program)
            run.failures.append(shrink(found, execute, seed=seed + number, budget=budget))
            break
        if progress is not None:
            progress(run)
        if len(run.failures) >= stop_after:
            break
    run.seconds = time.perf_counter() - started
    return run


def failure_vector(failure: Failure, vector_id: str) -> dict[str, Any]:
    """A vector source (requests only; ``tool-call-closure vectors`` or :func:`.vectors.generate` fills in the
    reference's allowed outcomes) for a shrunk failure."""
    return {
        "format": "tool-call-closure.vector/1",
        "id": vector_id,
        "description": f"Found by fuzz --agents: {failure.program.describe()} whose history was not linearizable "
        f"on the subject ({failure.result.message}).",
        "origin": "fuzz",
        "tags": ["area:agents", "origin:fuzz"],
        "steps": [{"request": request} for request in failure.program.requests()],
    }
