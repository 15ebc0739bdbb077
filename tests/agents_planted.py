"""A threaded subject with planted concurrency bugs, run under a deterministic scheduler (issue 24).

The subject is a small re-implementation of the core of the table (begin, succeed, cancel, close, snapshot — the
``SMALL`` vocabulary of ``fuzz --agents``), answering protocol requests exactly as the reference does.  Its
threads are simulated: each agent is a generator, and every ``yield`` is a point where the scheduler may switch
to another agent (the points a real thread could be preempted at that matter: between reading shared state and
acting on it, inside a critical section).  The scheduler picks the next agent from a seeded random generator, so
a seed *is* an interleaving: a run is reproducible, and no test sleeps or depends on timing.  A lock is a flag
an agent spins on (yielding) while another holds it.

Without bugs the subject is linearizable (``tests/test_agents_planted.py`` checks thousands of schedules).  Each
bug in :data:`BUGS` is one classical mistake of a thread-safe port:

* ``commit-unlocked`` — the admission check and the commit are two critical sections (the lock is not held
  around the commit): two settlements of one call can both be accepted;
* ``generation-outside-lock`` — check-then-act on the generation: the handle's generation is compared before the
  lock is taken, and the settlement then goes to whatever run is current;
* ``run-read-before-lock`` — a settle reads the run before the lock and writes into it after: a settlement lands
  in a run that a begin has meanwhile superseded (and whose superseded snapshot was already handed out);
* ``snapshot-half-installed`` — snapshot reads without the lock while begin installs a run call by call;
* ``close-not-idempotent`` — close decides "still open" in one critical section and closes in another: two
  racing closes both close, and the second one's reason overwrites the first's.
"""

from __future__ import annotations

import random
from collections.abc import Generator, Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from tool_call_closure.conformance.agents_model import operation
from tool_call_closure.conformance.fuzz_agents import Executor, Program
from tool_call_closure.conformance.linearizability import Operation

BUGS: Final = (
    "commit-unlocked",
    "generation-outside-lock",
    "run-read-before-lock",
    "snapshot-half-installed",
    "close-not-idempotent",
)
CANCELLED: Final = "Tool call was cancelled."
SUPERSEDED: Final = "Tool call was superseded by a newer generation."

Step = Generator[None, None, Any]  # a simulated thread's operation: yields at switch points, returns its answer


@dataclass
class Run:
    generation: int
    calls: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    diagnostics: list[dict[str, Any]] = field(default_factory=list)
    close_reason: dict[str, Any] | None = None

    def view(self) -> dict[str, Any]:
        return {
            "generation": self.generation,
            "closed": self.close_reason is not None,
            "closeReason": self.close_reason,
            "calls": [
                {"id": i, "name": "t", "state": "pending" if s is None else s["status"], "settlement": s}
                for i, s in self.calls.items()
            ],
            "diagnostics": list(self.diagnostics),
        }

    def close(self, code: str, message: str) -> None:
        self.close_reason = {"status": "cancelled", "code": code, "message": message, "sideEffectState": "unknown"}
        for call_id, settlement in self.calls.items():
            if settlement is None:
                self.calls[call_id] = {
                    "status": "cancelled",
                    "code": code,
                    "message": message,
                    "provenance": "synthetic",
                    "sideEffectState": "unknown",
                }


class Lock:
    def __init__(self) -> None:
        self.held = False

    def acquire(self) -> Step:
        while self.held:
            yield
        self.held = True

    def release(self) -> None:
        self.held = False


def _rejection(reason: str, call_id: str | None, generation: int, observed: str | None) -> dict[str, Any]:
    return {
        "accepted": False,
        "reason": reason,
        "callId": call_id,
        "generation": generation,
        "observedStatus": observed,
    }


class PlantedClosure:
    """The core of the table, thread-safe unless a bug is planted (see the module's docstring)."""

    def __init__(self, bugs: Iterable[str] = ()) -> None:
        self.bugs = frozenset(bugs)
        assert self.bugs <= set(BUGS), self.bugs
        self.lock = Lock()
        self.generation = 0
        self.run: Run | None = None

    def begin(self, ids: list[str]) -> Step:
        yield from self.lock.acquire()
        superseded = None
        if self.run is not None and self.run.close_reason is None:
            self.run.close("superseded", SUPERSEDED)
            superseded = self.run.view()
        self.generation += 1
        self.run = Run(self.generation)  # installed call by call: readers must hold the lock
        for call_id in ids:
            yield
            self.run.calls[call_id] = None
        self.lock.release()
        return {"generation": self.generation, "handle": {"generation": self.generation}, "superseded": superseded}

    def settle(self, handle: tuple[bool, int], call_id: str, settlement: dict[str, Any]) -> Step:
        status = settlement["status"]
        real, generation = handle
        if "run-read-before-lock" in self.bugs:
            run = self.run  # read, and checked, before the lock: written after it
            assert run is not None
            answer = self._admit(run, not real or generation != self.generation, generation, call_id, status)
            yield
            yield from self.lock.acquire()
        else:
            if "generation-outside-lock" in self.bugs:
                stale = not real or generation != self.generation  # checked, then the lock, then acted on
                yield
                yield from self.lock.acquire()
            else:
                yield from self.lock.acquire()
                stale = not real or generation != self.generation
            run = self.run
            assert run is not None
            answer = self._admit(run, stale, generation, call_id, status)
            if answer is None and "commit-unlocked" in self.bugs:
                self.lock.release()
                yield  # admitted: the commit takes the lock again and checks nothing
                yield from self.lock.acquire()
        if answer is None:
            run.calls[call_id] = settlement
            answer = {"accepted": True, "generation": run.generation, "callId": call_id, "settlement": settlement}
        self.lock.release()
        return answer

    def _admit(self, run: Run, stale: bool, generation: int, call_id: str, status: str) -> dict[str, Any] | None:
        if stale:
            rejection = _rejection("stale_generation", call_id, generation, status)
        elif run.close_reason is not None:
            rejection = _rejection("run_closed", call_id, run.generation, status)
        elif call_id not in run.calls:
            rejection = _rejection("unknown_call", call_id, run.generation, None)
        elif run.calls[call_id] is not None:
            rejection = _rejection("duplicate_settlement", call_id, run.generation, None)
        else:
            return None
        assert self.run is not None
        self.run.diagnostics.append({k: v for k, v in rejection.items() if k not in ("accepted",)})
        return rejection

    def close(self, handle: tuple[bool, int], code: str | None) -> Step:
        real, generation = handle
        yield from self.lock.acquire()
        run = self.run
        assert run is not None
        if not real or generation != self.generation:
            rejection = _rejection("stale_generation", None, generation, None)
            run.diagnostics.append({k: v for k, v in rejection.items() if k != "accepted"})
            self.lock.release()
            return rejection
        if "close-not-idempotent" in self.bugs and run.close_reason is None:
            self.lock.release()
            yield  # decided to close; closes in a second critical section without looking again
            yield from self.lock.acquire()
            run.close(code or "cancelled", CANCELLED)
        elif run.close_reason is None:
            run.close(code or "cancelled", CANCELLED)
        view = run.view()
        self.lock.release()
        return view

    def snapshot(self) -> Step:
        if "snapshot-half-installed" not in self.bugs:
            yield from self.lock.acquire()
        else:
            yield
        view = None if self.run is None else self.run.view()
        if "snapshot-half-installed" not in self.bugs:
            self.lock.release()
        return view

    # ------------------------------------------------------------------ protocol requests

    def request(self, request: dict[str, Any]) -> Step:
        """Carry out a protocol request of the SMALL vocabulary; its answer is the response's ``ok``."""
        method, args = request["method"], request.get("args", [])
        if method == "begin":
            return (yield from self.begin([entry["id"] for entry in args[0]]))
        if method == "snapshot":
            return (yield from self.snapshot())
        handle = _handle(args[0])
        if method == "close":
            return (yield from self.close(handle, args[1]["code"] if len(args) > 1 else None))
        if method == "succeed":
            settlement = {"status": "success", "content": args[2], "provenance": "reported"}
        else:
            message = args[2] if len(args) > 2 else CANCELLED
            settlement = {"status": "cancelled", "code": "cancelled", "message": message, "provenance": "reported"}
        return (yield from self.settle(handle, args[1], settlement))


def _handle(tag: dict[str, int]) -> tuple[bool, int]:
    """(is a real handle, generation) of a ``$handle`` or ``$forgedHandle`` tag."""
    return ("$handle" in tag, tag.get("$handle", tag.get("$forgedHandle", 0)))


def run_program(program: Program, seed: int, bugs: Iterable[str] = ()) -> list[Operation]:
    """One interleaving (chosen by ``seed``) of ``program`` on a fresh subject: its history, in logical times."""
    rng = random.Random(seed)
    closure = PlantedClosure(bugs)
    history: list[Operation] = []
    clock = 0
    block: dict[Any, list[dict[str, Any]]] = {}
    for request in [*program.requests(), None]:
        if request is not None and "agent" in request:
            block.setdefault(request["agent"], []).append(request)
            continue
        if block:
            clock = _run_block(closure, block, rng, clock, history)
            block = {}
        if request is None:
            break
        if request["cmd"] == "new":
            history.append(operation("main", clock, clock + 1, request, [{"id": request["id"], "ok": None}]))
            clock += 2
        else:
            clock = _run_block(closure, {None: [request]}, rng, clock, history)
    return history


def _run_block(
    closure: PlantedClosure,
    programs: dict[Any, list[dict[str, Any]]],
    rng: random.Random,
    clock: int,
    history: list[Operation],
) -> int:
    """Run the agents' requests, switching between agents at every yield (the seed's choice)."""
    running: dict[Any, tuple[dict[str, Any], Step, int]] = {}
    queues = {agent: list(requests) for agent, requests in programs.items()}
    while queues or running:
        for agent in [a for a in queues if a not in running]:
            if queues[agent]:
                request = queues[agent].pop(0)
                running[agent] = (request, closure.request(request), clock)
                clock += 1
            else:
                del queues[agent]
        if not running:
            break
        agent = rng.choice(sorted(running, key=repr))
        request, step, invoked = running[agent]
        try:
            next(step)
        except StopIteration as done:
            del running[agent]
            name = "main" if agent is None else agent
            response = [{"id": request["id"], "ok": done.value}]
            history.append(operation(name, invoked, clock, request, response))
        clock += 1
    return clock


def planted_executor(bugs: Iterable[str] = ()) -> Executor:
    """An executor for :func:`.fuzz_agents.fuzz_agents`: each seed one interleaving on the planted subject."""
    chosen = tuple(bugs)

    def execute(program: Program, seed: int) -> list[Operation]:
        return run_program(program, seed, chosen)

    return execute
