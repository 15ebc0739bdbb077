"""Exhaustive deterministic simulation of both runners: every interleaving of tools, timers and disturbances.

Theory of operation
-------------------
For each *scenario* — which runner, what each call's tool does
(:data:`_runner_worlds.BEHAVIOURS`), which bounds are set (``call_timeout``,
``deadline``, ``max_concurrency``) and which disturbances may happen (abort,
a later ``begin`` superseding the batch, a ``close`` by someone else, the
awaiting task cancelled, an interrupt of the supervising thread, the executor
failing a work item) — this script runs the *real* runner code in a
deterministic world (:mod:`_runner_worlds`) once per sequence of scheduler
choices, and enumerates every sequence depth first: every order in which the
tools finish, the timers fire and the disturbances happen, with up to
``--preemptions`` of them cutting between two steps of a busy runner.

At the end of every execution — after the run returned or raised, and after
every tool that could still finish did (late results) — it checks:

* **returns**: the runner returned, or raised only what it documents
  (``CancelledError`` when the awaiting task was cancelled; a
  ``KeyboardInterrupt``/``SystemExit`` that a tool raised or that interrupted
  the supervising thread), within a bounded number of scheduler steps — never
  stuck, never running away;
* **exactly one outcome**: the generation is closed and every announced call
  has its outcome (the closure admits at most one);
* **ending agrees with the snapshot**: ``superseded`` exactly when a later
  ``begin`` ended the generation, and then the snapshot is that ``begin``'s
  ``superseded``; ``closed_elsewhere`` exactly when the close reason is the
  other closer's; ``completed``/``deadline_exceeded``/``aborted`` with the
  runner's own seal or close;
* **late results**: every value or exception a tool produced is either its
  call's outcome or reported to ``on_late`` exactly once, never both;
* **still running**: every tool that had not finished when the run returned
  is in ``still_running``, and only started calls are;
* ``started`` is exactly the set of calls whose tool was invoked.

On the first violation it prints the scenario and the choices that lead to it
(replayable with ``--replay``) and exits 1.  Otherwise it prints, per runner,
the number of scenarios and of interleavings explored.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from _runner_worlds import BEHAVIOURS, AsyncWorld, Chooser, Runaway, Stuck, ThreadWorld
from runner_mutants import MUTANTS
from runner_mutants import apply as apply_mutant

from tool_call_closure import Snapshot, ToolCallClosure
from tool_call_closure.providers.calls import ToolCall
from tool_call_closure.runners import AbortSignal, BatchRun, LateResult
from tool_call_closure.runners.asyncio_runner import run_on_loop
from tool_call_closure.runners.options import RunOptions
from tool_call_closure.runners.thread_runner import ThreadPlatform, run_in_threads

_MARKER = re.compile(r"m\d+x\d+")
CALL_TIMEOUT = 1.0
DEADLINE = 2.5
CANCEL_GRACE = 1.5  # longer than CALL_TIMEOUT: a timer may fire while a cancelled tool cleans up
ELSEWHERE = {"status": "error", "code": "closed_by_other", "message": "closed by another party"}

DISTURBANCES: dict[str, tuple[str, ...]] = {
    "asyncio": ("abort", "supersede", "close_elsewhere", "cancel"),
    "threads": ("abort", "supersede", "close_elsewhere", "interrupt", "submit_fails", "future_fails"),
}


_ENDING = {"abort", "supersede", "close_elsewhere", "cancel", "interrupt"}


@dataclass(frozen=True)
class Scenario:
    runner: str
    behaviours: tuple[str, ...]
    call_timeout: bool
    deadline: bool
    max_concurrency: int | None
    disturbances: tuple[str, ...]

    def describe(self) -> str:
        bounds = [b for b, on in (("call_timeout", self.call_timeout), ("deadline", self.deadline)) if on]
        if self.max_concurrency is not None:
            bounds.append(f"max_concurrency={self.max_concurrency}")
        return (
            f"{self.runner}: tools {list(self.behaviours)}, bounds {bounds or 'none'}, "
            f"disturbances {list(self.disturbances) or 'none'}"
        )

    @property
    def bounded(self) -> bool:
        """Whether the run must end even if a tool never finishes on its own (an executor failure ends nothing)."""
        return self.call_timeout or self.deadline or bool(set(self.disturbances) & _ENDING)


@dataclass
class Execution:
    """What one execution produced, for the checks."""

    scenario: Scenario
    closure: ToolCallClosure
    report: BatchRun | None = None
    raised: BaseException | None = None
    superseded: Snapshot | None = None  # what the harness's own begin returned as superseded
    ended_before_superseding: Snapshot | None = None  # the runner's generation, when the harness began after it
    late: list[LateResult] = field(default_factory=list)
    tool_raised_base: set[str] = field(default_factory=set)  # KeyboardInterrupt / SystemExit a tool raised
    cancelled: bool = False
    interrupted: bool = False


def _calls(scenario: Scenario) -> list[ToolCall]:
    return [ToolCall(f"c{i}", f"tool{i}", {}, "{}", None, "sim") for i in range(len(scenario.behaviours))]


def _options(scenario: Scenario, run: Execution, abort: AbortSignal) -> RunOptions:
    """The runner options both runners take, as the scenario sets them (``cancel_grace`` is the asyncio runner's)."""
    return RunOptions.checked(
        call_timeout=CALL_TIMEOUT if scenario.call_timeout else None,
        deadline=DEADLINE if scenario.deadline else None,
        max_concurrency=scenario.max_concurrency,
        cancel_grace=CANCEL_GRACE,
        abort=abort,
        on_late=run.late.append,
    )


def _disturb(world: AsyncWorld | ThreadWorld, scenario: Scenario, run: Execution, abort: AbortSignal) -> None:
    closure = run.closure

    def announced() -> bool:
        return closure.active_generation is not None

    def supersede() -> None:
        before = closure.snapshot()
        run.superseded = closure.begin([{"id": "next", "name": "next"}]).superseded
        if run.superseded is None and before is not None and before.generation == 1:
            run.ended_before_superseding = before  # the runner's generation had ended: kept as it was

    def close_elsewhere() -> None:
        current = closure._run  # the proof harness plays another party holding the current handle
        if current is not None and current.generation == 1:
            closure.close(current.handle, ELSEWHERE)  # type: ignore[arg-type]

    for name in scenario.disturbances:
        if name == "abort":
            world.add_event("abort", lambda: abort.abort("aborted by the user"), disturbance=True)
        elif name == "supersede":
            world.add_event("another begin", supersede, disturbance=True, guard=announced)
        elif name == "close_elsewhere":
            world.add_event("close elsewhere", close_elsewhere, disturbance=True, guard=announced)


def execute_asyncio(scenario: Scenario, world: AsyncWorld) -> Execution:
    run = Execution(scenario, ToolCallClosure())
    abort = AbortSignal()
    _disturb(world, scenario, run, abort)
    tools = {f"tool{i}": world.tool(i, b) for i, b in enumerate(scenario.behaviours)}
    loop = world.loop

    async def main() -> BatchRun:
        world.main_task = asyncio.current_task()
        task = world.runner_task = loop.create_task(
            run_on_loop(
                world.checkpoint,
                run.closure,
                _calls(scenario),
                tools,
                options=_options(scenario, run, abort),
            )
        )
        if "cancel" in scenario.disturbances:

            def cancel() -> None:
                run.cancelled = run.cancelled or not task.done()
                task.cancel()

            world.add_event("cancel the awaiting task", cancel, disturbance=True)
        try:
            return await task
        finally:
            world.observed.returned()

    try:
        run.report = loop.run_until_complete(main())
    except (KeyboardInterrupt, SystemExit) as exc:  # from a tool; asyncio.run then cancels every task
        run.raised = exc
        # asyncio.run's own cancellation of every task is not the runner's: a tool the runner had already
        # cancelled (its timer fired) and that is still in its cleanup is cancelled again by asyncio.run, which
        # the runner cannot prevent; "each tool cancelled at most once" counts the runner's requests only.
        by_the_runner = dict(world.observed.cancellations)  # before asyncio.run's own requests
        pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
        for task in pending:
            task.cancel()
        # asyncio.run waits for every task; a tool that ignores cancellation would hold it forever, which is
        # asyncio.run's affair: what the runner must do is end its batch, so the wait is for the runner's task.
        runner_tasks = [task for task in pending if task is world.runner_task or task is world.main_task]
        if runner_tasks:
            loop.run_until_complete(asyncio.gather(*runner_tasks, return_exceptions=True))
        counted = world.observed.cancellations
        for index, times in counted.items():  # asyncio.run asks each pending task once: one observation is its own
            before = by_the_runner.get(index, 0)
            counted[index] = before + max(0, times - before - 1)
    except (Stuck, Runaway):
        raise
    except BaseException as exc:  # noqa: BLE001  # checked below: only CancelledError is documented
        run.raised = exc
    return run


def execute_threads(scenario: Scenario, world: ThreadWorld) -> Execution:
    world.interrupt_armed = "interrupt" in scenario.disturbances
    run = Execution(scenario, ToolCallClosure())
    abort = AbortSignal()
    _disturb(world, scenario, run, abort)
    tools = {f"tool{i}": world.tool(i, b) for i, b in enumerate(scenario.behaviours)}
    platform = ThreadPlatform(world.monotonic, world.condition, world.thread_pool, world.checkpoint, 1e9)
    try:
        run.report = run_in_threads(
            platform,
            run.closure,
            _calls(scenario),
            tools,
            options=_options(scenario, run, abort),
        )
    except (Stuck, Runaway):
        raise
    except KeyboardInterrupt as exc:
        run.raised = exc
        run.interrupted = True
    except BaseException as exc:  # noqa: BLE001  # checked below
        run.raised = exc
    world.observed.returned()
    return run


# ------------------------------------------------------------------------------------------------- the checks


def _mentions(snapshot: Snapshot, index: int, marker: str) -> bool:
    settlement = snapshot.calls[index].settlement
    if settlement is None:
        return False
    return any(marker in (text or "") for text in (settlement.content, settlement.message))


def _late_marker(late: LateResult) -> str:
    """The marker of the production a late result carries (a value's, or found in an error's text)."""
    value = late.value
    if isinstance(value, dict):
        return str(value.get("marker"))
    text = str(getattr(value, "marker", value))
    found = _MARKER.search(text)
    return found.group(0) if found else text


def check(run: Execution, world: AsyncWorld | ThreadWorld) -> str | None:
    """The invariants of one finished execution; the first violated one, in words, or None."""
    closure = run.closure
    raised = run.raised
    if raised is not None:
        documented = (
            (isinstance(raised, asyncio.CancelledError) and run.cancelled)
            or (isinstance(raised, KeyboardInterrupt) and (run.interrupted or _tool_raised(run, world, "keyboard")))
            or (isinstance(raised, SystemExit) and _tool_raised(run, world, "system_exit"))
        )
        if not documented:
            return f"returns: the runner raised {type(raised).__name__}: {raised}"
    final = run.superseded or run.ended_before_superseding or closure.snapshot()
    if final is None and raised is not None:
        return None  # cancelled before it began: nothing was announced
    if final is None or final.generation != 1:
        return "exactly one outcome: the runner's generation cannot be found"
    if not final.closed:
        return f"exactly one outcome: the generation was left open ({_pending(final)} pending)"
    invoked = world.observed.invocations
    if len(invoked) != len(set(invoked)):
        return f"started: a tool was invoked twice ({invoked})"
    twice = sorted(i for i, times in world.observed.cancellations.items() if times > 1)
    if twice:
        return f"returns: the tools of calls {twice} were cancelled more than once (a cleanup cut short)"
    if isinstance(world, AsyncWorld):
        logged = world.loop.errors + world.loop.unretrieved()
        if logged:
            return f"returns: the event loop reported {logged[0]!r}"
    report = run.report
    if report is not None:
        problem = _check_report(run, world, report)
        if problem is not None:
            return problem
    return _check_late(run, world, final)


def _tool_raised(run: Execution, world: AsyncWorld | ThreadWorld, kind: str) -> bool:
    wanted = {"keyboard": "raises_keyboard_interrupt", "system_exit": "raises_system_exit"}[kind]
    return any(run.scenario.behaviours[p.index] == wanted for p in world.observed.productions)


def _pending(snapshot: Snapshot) -> int:
    return sum(call.settlement is None for call in snapshot.calls)


def _check_report(run: Execution, world: AsyncWorld | ThreadWorld, report: BatchRun) -> str | None:
    snapshot = report.snapshot
    reason = snapshot.close_reason
    if snapshot.generation != 1 or not snapshot.closed or reason is None:
        return "ending: the report's snapshot is not the runner's closed generation"
    if _pending(snapshot):
        return "exactly one outcome: the report's snapshot has a pending call"
    expected = {
        "completed": "complete",
        "deadline_exceeded": "deadline_exceeded",
        "aborted": "run_aborted",
        "superseded": "superseded",
        "closed_elsewhere": ELSEWHERE["code"],
    }
    code = "complete" if reason.status == "complete" else reason.code
    if expected.get(report.ending) != code:
        return f"ending: the run ended {report.ending!r} but its snapshot's close reason is {code!r}"
    if report.ending == "superseded" and snapshot is not run.superseded:
        return "ending: superseded, but the snapshot is not the one the superseding begin returned"
    if report.ending == "closed_elsewhere" and reason.message != ELSEWHERE["message"]:
        return "ending: closed_elsewhere, but the close reason is not the other party's"
    observed = world.observed
    started = {int(call_id[1:]) for call_id in report.started}
    if started != observed.entered_at_return:
        invoked = sorted(observed.entered_at_return)
        return f"started: the report says {sorted(started)}, the tools invoked were {invoked}"
    still = {int(call_id[1:]) for call_id in report.still_running}
    if not observed.running_at_return <= still:
        missing = sorted(observed.running_at_return - still)
        return f"still running: tools {missing} had not finished when the run returned but are not reported"
    if not still <= started:
        return f"still running: calls {sorted(still - started)} are reported running but never started"
    if not set(map(id, report.late)) <= set(map(id, run.late)):
        return "late results: a late result in the report never reached on_late"
    return None


def _check_late(run: Execution, world: AsyncWorld | ThreadWorld, final: Snapshot) -> str | None:
    counts: dict[str, int] = {}
    for late in run.late:
        marker = _late_marker(late)
        counts[marker] = counts.get(marker, 0) + 1
    for production in world.observed.productions:
        outcome = _mentions(final, production.index, production.marker)
        reported = counts.pop(production.marker, 0)
        if outcome and reported:
            return f"late results: {production.marker} of call c{production.index} is both its outcome and late"
        if not outcome and reported != 1:
            return (
                f"late results: {production.marker} of call c{production.index} was not its outcome and reached "
                f"on_late {reported} times"
            )
    if counts:
        return f"late results: on_late got {sorted(counts)} that no tool produced"
    return None


# ------------------------------------------------------------------------------------------------- exploring


def explore(scenario: Scenario, preemptions: int, limit: int) -> tuple[int, str | None, list[str]]:
    """Every interleaving of one scenario: (how many, the first violation or None, its choice labels)."""
    prefix: list[int] | None = []
    count = 0
    while prefix is not None:
        chooser = Chooser(prefix)
        count += 1
        violation = run_once(scenario, chooser, preemptions)
        if violation is not None:
            return count, violation, chooser.labels
        if count >= limit:
            return count, f"more than {limit} interleavings (raise --limit)", []
        prefix = chooser.next_prefix()
    return count, None, []


def run_once(
    scenario: Scenario, chooser: Chooser, preemptions: int, on_world: Callable[[Any], None] | None = None
) -> str | None:
    """One execution: run, drain, check, and always end every actor (no thread or task outlives it)."""
    if scenario.runner == "asyncio":
        world: AsyncWorld | ThreadWorld = AsyncWorld(chooser, preemptions)
        execute: Callable[..., Execution] = execute_asyncio
    else:
        failure = next((d for d in scenario.disturbances if d in ("submit_fails", "future_fails")), None)
        world = ThreadWorld(chooser, preemptions, failure)
        execute = execute_threads
    if on_world is not None:
        on_world(world)
    try:
        try:
            run = execute(scenario, world)
        except Stuck as exc:
            return f"returns: the runner is stuck: {exc}"
        except Runaway as exc:
            return f"returns: the runner does not return: {exc}"
        try:
            world.drain()
        except (Stuck, Runaway) as exc:
            return f"late results: the tools could not finish after the run: {exc}"
        if isinstance(world, AsyncWorld):  # the hanging tasks end first: what the loop logs as they go is checked
            world.teardown()
        return check(run, world)
    finally:
        if isinstance(world, AsyncWorld):
            world.teardown()
        else:
            world.finish()


def scenarios(runner: str, calls: int, disturbances: int, behaviours: Sequence[str] | None) -> Iterator[Scenario]:
    """Every scenario of ``calls`` calls with up to ``disturbances`` disturbances at once."""
    kinds = tuple(behaviours) if behaviours else BEHAVIOURS[runner]
    available = DISTURBANCES[runner]
    for combo in itertools.combinations_with_replacement(kinds, calls):
        for size in range(disturbances + 1):
            for chosen in itertools.combinations(available, size):
                if "submit_fails" in chosen and "future_fails" in chosen:
                    continue
                for call_timeout, deadline in itertools.product((False, True), repeat=2):
                    for concurrency in (None, 1) if calls > 1 else (None,):
                        scenario = Scenario(runner, combo, call_timeout, deadline, concurrency, chosen)
                        if scenario.bounded or not set(combo) & {"hangs", "cleanup_late"}:
                            yield scenario


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runner", choices=("asyncio", "threads", "both"), default="both")
    parser.add_argument("--calls", type=int, default=1, help="calls per batch (default 1)")
    parser.add_argument("--disturbances", type=int, default=1, help="disturbances per scenario (default 1)")
    parser.add_argument("--behaviours", help="comma-separated tool behaviours (default: all of the runner's)")
    parser.add_argument("--preemptions", type=int, default=1, help="preemptions per execution (default 1)")
    parser.add_argument("--limit", type=int, default=200_000, help="interleavings per scenario before giving up")
    parser.add_argument("--mutant", choices=sorted(MUTANTS), help="plant this bug first (runner_mutants.py)")
    args = parser.parse_args(argv)
    if args.mutant:
        apply_mutant(args.mutant)
    runners = ("asyncio", "threads") if args.runner == "both" else (args.runner,)
    chosen = args.behaviours.split(",") if args.behaviours else None
    started = time.perf_counter()
    total = 0
    for runner in runners:
        if chosen and not set(chosen) <= set(BEHAVIOURS[runner]):
            kinds = [b for b in chosen if b in BEHAVIOURS[runner]]
        else:
            kinds = chosen
        count = interleavings = 0
        for scenario in scenarios(runner, args.calls, args.disturbances, kinds):
            explored, violation, labels = explore(scenario, args.preemptions, args.limit)
            count += 1
            interleavings += explored
            if violation is not None:
                print(f"VIOLATION in {scenario.describe()}")
                print(f"  {violation}")
                print(f"  after {explored} interleavings; choices: {labels}")
                return 1
        total += interleavings
        print(
            f"{runner}: {count} scenarios, {interleavings} interleavings, every invariant holds "
            f"({args.calls} call(s), up to {args.disturbances} disturbance(s), {args.preemptions} preemption(s))"
        )
    print(f"{total} interleavings in {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
