"""Deterministic worlds for the runners: a virtual clock, a scheduler the checker controls, tools as scripted actors.

Theory of operation
-------------------
The runners are concurrent code: what they do depends on when tools finish,
when timers fire, and when other threads act.  Here that "when" is a choice,
and every choice is made by a :class:`Chooser`, so one sequence of choices is
one exactly repeatable execution of the *real* runner code
(:func:`~tool_call_closure.runners.asyncio_runner.run_on_loop` and
:func:`~tool_call_closure.runners.thread_runner.run_in_threads`), and the
checker (``runner_sim.py``) enumerates every sequence, depth first, by
re-running from the start with the next untried choice (stateless model
checking, as Rust's loom and CHESS do).

Two worlds, one per runner:

* :class:`AsyncWorld` — an asyncio event loop whose clock is virtual and whose
  "poll for I/O" is the scheduler: whenever the loop has nothing ready, the
  scheduler chooses what happens next — a tool finishes, a disturbance
  (abort, a later ``begin``, a ``close`` elsewhere, the awaiting task
  cancelled) happens, or the clock jumps to the next timer.  Ready callbacks
  run in asyncio's own FIFO order.  Between loop steps and at the batch's
  checkpoints a disturbance may also *preempt* (bounded, see below).
* :class:`ThreadWorld` — the thread runner's threads (the supervising
  thread, one per pool worker) as greenlets: each has its own stack and runs
  until the scheduler switches away from it, which happens only at the
  runner's synchronization points — waiting on its condition, a tool
  blocking until the scheduler lets it finish, the batch's checkpoints.
  There the scheduler chooses who runs next, which disturbance happens
  (abort, ``begin``, ``close`` elsewhere, an interrupt of the supervising
  thread, an executor failing a work item), or that the clock jumps to the
  next wake-up.  Locks are never held across a switch, so the real locks of
  the batch and the closure are never contended; switching stacks instead of
  operating-system threads makes each execution exactly repeatable and cheap.

Preemption bounding.  A switch away from an actor that could go on — to
another thread, or a tool finishing, between two steps of a busy runner — is
a *preemption*; each execution may contain at most ``preemptions`` of them
(CHESS's bound: most concurrency bugs need very few).  Where the running
thread blocks, the thread that has been runnable longest runs next, as in
asyncio's FIFO ready queue, unless a tool finishes or a disturbance happens
first (both always explored); other orders of runnable threads are reached
through preemptions at the checkpoints, where every thread's steps meet.
Disturbances (another thread's ``begin`` or ``close``, an abort, an
interrupt, an executor failure) happen once each, and may happen at any
checkpoint without counting as a preemption.

Tools are scripted: each call has a :data:`BEHAVIOURS` entry saying what its
tool does when the scheduler lets it finish (return, raise each kind of
exception, return a value whose conversion raises, hang ignoring
cancellation, finish during its cleanup).  Every value or exception a tool
produces carries a unique marker, so the checker can tell, for each one,
whether it became the call's outcome or was reported late.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from typing import Any

from greenlet import greenlet

__all__ = [
    "BEHAVIOURS",
    "AsyncWorld",
    "Chooser",
    "Production",
    "Runaway",
    "Stuck",
    "ThreadWorld",
]

MAX_STEPS = 400
"""Scheduler decisions one execution may take; more means the runner does not return (a violation)."""


class Stuck(Exception):  # noqa: N818  # a verdict, not an error of the checker
    """Nothing can happen any more, and the runner has not returned."""


class Runaway(Exception):  # noqa: N818
    """The runner took more than :data:`MAX_STEPS` scheduler steps."""


class Teardown(BaseException):
    """Raised in an actor still blocked when an execution ends, so its thread finishes."""


class Chooser:
    """Replays a prefix of choices, then takes the first option at every new choice point; records each point."""

    def __init__(self, prefix: list[int]) -> None:
        self.prefix = prefix
        self.trail: list[tuple[int, int]] = []  # (choice taken, number of options)
        self.labels: list[str] = []
        self.forced = False  # after the run returned: no more branching (the drain is deterministic)

    def choose(self, options: list[str]) -> int:
        if self.forced or len(options) == 1:
            return 0
        index = len(self.trail)
        choice = self.prefix[index] if index < len(self.prefix) else 0
        self.trail.append((choice, len(options)))
        self.labels.append(options[choice])
        return choice

    def next_prefix(self) -> list[int] | None:
        """The next sequence to try (depth first), or None when every sequence was tried."""
        trail = list(self.trail)
        while trail and trail[-1][0] + 1 >= trail[-1][1]:
            trail.pop()
        if not trail:
            return None
        return [choice for choice, _ in trail[:-1]] + [trail[-1][0] + 1]


BEHAVIOURS: dict[str, tuple[str, ...]] = {
    "asyncio": (
        "returns",
        "raises",
        "raises_generator_exit",
        "raises_base_exception",
        "raises_keyboard_interrupt",
        "raises_system_exit",
        "raises_cancelled",
        "bad_value",
        "broken_str",
        "hangs",
        "cleanup_late",
    ),
    "threads": (
        "returns",
        "raises",
        "raises_base_exception",
        "raises_keyboard_interrupt",
        "bad_value",
        "broken_str",
        "hangs",
    ),
}
"""What each call's tool does when the scheduler lets it finish, per runner.  ``hangs`` never finishes and
ignores cancellation; ``cleanup_late`` waits until it is cancelled, then finishes with a value in its cleanup."""


class CustomBase(BaseException):
    """A ``BaseException`` that is none of the standard ones."""


class BadJson:
    """A tool result whose conversion to JSON raises."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __json__(self) -> object:
        raise ValueError(f"cannot convert {self.marker}")


def broken_str_error(marker: str) -> Exception:
    """An exception whose ``__str__`` raises; its class name carries the marker (what the runner falls back to)."""

    def broken(self: object) -> str:
        raise RuntimeError("__str__ is broken")

    return type(f"BrokenStr_{marker}", (Exception,), {"__str__": broken})()


def produce(behaviour: str, marker: str) -> object:
    """Return the tool's value, or raise its exception."""
    raising: dict[str, Callable[[str], BaseException]] = {
        "raises": RuntimeError,
        "raises_generator_exit": GeneratorExit,
        "raises_base_exception": CustomBase,
        "raises_keyboard_interrupt": KeyboardInterrupt,
        "raises_system_exit": SystemExit,
        "raises_cancelled": asyncio.CancelledError,
        "broken_str": broken_str_error,
    }
    if behaviour in raising:
        raise raising[behaviour](marker)
    if behaviour == "bad_value":
        return BadJson(marker)
    return {"marker": marker}


@dataclass
class Production:
    """One value or exception a tool produced."""

    index: int
    marker: str
    kind: str  # "result" or "error"


@dataclass
class Observed:
    """What the harness saw of one execution, for the invariants."""

    entered: set[int] = field(default_factory=set)
    exited: set[int] = field(default_factory=set)
    invocations: list[int] = field(default_factory=list)  # each tool invocation, in order (a call runs at most once)
    productions: list[Production] = field(default_factory=list)
    entered_at_return: set[int] = field(default_factory=set)
    running_at_return: set[int] = field(default_factory=set)
    cancellations: dict[int, int] = field(default_factory=dict)  # how often each tool was asked to stop

    def returned(self) -> None:
        """The run returned (or raised): which tools had been invoked, which had not finished."""
        self.entered_at_return = set(self.entered)
        self.running_at_return = self.entered - self.exited

    def marker(self, index: int) -> str:
        return f"m{index}x{len(self.productions)}"


# --------------------------------------------------------------------------------------------------- asyncio


class _Selector:
    """The loop's I/O poll: when the loop is idle, the scheduler decides what happens."""

    def __init__(self, world: AsyncWorld) -> None:
        self.world = world

    def select(self, timeout: float | None) -> list[Any]:
        self.world.poll(timeout)
        return []


class SimLoop(asyncio.BaseEventLoop):
    """An event loop on a virtual clock whose idle moments are the scheduler's choice points."""

    def __init__(self, world: AsyncWorld) -> None:
        super().__init__()
        self.world = world
        self.now = 0.0
        self._selector = _Selector(world)  # type: ignore[attr-defined]
        self._clock_resolution = 1e-9
        self.errors: list[str] = []  # what the loop would have logged: every one is a finding
        self.set_exception_handler(lambda loop, context: self.errors.append(str(context.get("message"))))
        self.tasks: list[asyncio.Task[Any]] = []
        self.set_task_factory(self._new_task)

    def _new_task(self, loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
        task = asyncio.Task(coro, loop=loop, **kwargs)
        self.tasks.append(task)
        return task

    def unretrieved(self) -> list[str]:
        """Tasks that ended with an exception nobody retrieved (asyncio would log each when collected)."""
        return [
            f"Task exception was never retrieved: {task.get_name()} {task.exception()!r}"
            for task in self.tasks
            if task.done() and not task.cancelled() and task._log_traceback  # type: ignore[attr-defined]
        ]

    def time(self) -> float:
        return self.now

    def _process_events(self, event_list: list[Any]) -> None:
        pass

    def _write_to_self(self) -> None:
        pass  # call_soon_threadsafe: every actor runs on this thread

    def _run_once(self) -> None:
        self.world.count_step()
        super()._run_once()  # type: ignore[misc]

    def next_timer(self) -> float | None:
        live = [handle.when() for handle in self._scheduled if not handle.cancelled()]  # type: ignore[attr-defined]
        return min(live) if live else None


class _Events:
    """The external events of a world: each fires at most once, when the scheduler picks it (and its guard holds).

    A *disturbance* comes from outside the runner (another thread, the user);
    the other events are tools finishing.
    """

    def __init__(self) -> None:
        self.events: dict[str, Callable[[], None]] = {}
        self.disturbances: set[str] = set()
        self.guards: dict[str, Callable[[], bool]] = {}

    def add_event(
        self, name: str, fire: Callable[[], None], *, disturbance: bool = False, guard: Callable[[], bool] | None = None
    ) -> None:
        """An external event the scheduler may fire once."""
        self.events[name] = fire
        if disturbance:
            self.disturbances.add(name)
        if guard is not None:
            self.guards[name] = guard

    def _enabled(self, names: list[str] | set[str] | dict[str, Any]) -> list[str]:
        return [name for name in names if self.guards.get(name, _always)()]


def _always() -> bool:
    return True


class AsyncWorld(_Events):
    """One execution of the asyncio runner under the scheduler."""

    def __init__(self, chooser: Chooser, preemptions: int) -> None:
        self.chooser = chooser
        self.preemptions = preemptions
        super().__init__()
        self.loop = SimLoop(self)
        self.steps = 0
        self.observed = Observed()
        self.runner_task: asyncio.Task[Any] | None = None
        self.main_task: asyncio.Task[Any] | None = None
        self.draining = False  # the run returned: no more choices; let late results come
        self.tearing_down = False  # ending every task still pending
        self.tearing_down_timers_only = False

    def count_step(self) -> None:
        self.steps += 1
        if self.steps > 20 * MAX_STEPS:
            raise Runaway(f"{self.steps} loop iterations")

    def _fire(self, name: str) -> None:
        self.disturbances.discard(name)
        self.events.pop(name)()

    def poll(self, timeout: float | None) -> None:
        """The loop asks for I/O: idle (``timeout`` not 0) means the scheduler must make something happen."""
        if self.draining:
            self._drain_step(timeout)
            return
        if timeout == 0:  # callbacks are ready: a disturbance (free) or a tool (a preemption) may still come first
            free = self._enabled(self.disturbances)
            costly = [n for n in self._enabled(self.events) if n not in self.disturbances] if self.preemptions else []
            if free or costly:
                options = ["go on", *free, *costly]
                choice = self.chooser.choose(options)
                if choice:
                    if options[choice] in costly:
                        self.preemptions -= 1
                    self._fire(options[choice])
            return
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise Runaway(f"{self.steps} scheduler steps")
        when = self.loop.next_timer()
        options = [*self._enabled(self.events), *(["advance clock"] if when is not None else [])]
        if not options:
            raise Stuck("the loop is idle: no timer, no tool or disturbance left to act")
        choice = options[self.chooser.choose(options)]
        if choice == "advance clock":
            assert when is not None
            self.loop.now = max(self.loop.now, when)
        else:
            self._fire(choice)

    def _drain_step(self, timeout: float | None) -> None:
        """After the run: deterministically let whatever can still happen happen, then stop the loop."""
        if timeout == 0:
            return
        enabled = [name for name in self._enabled(self.events) if name not in self.disturbances]
        when = self.loop.next_timer()
        if enabled:
            self._fire(enabled[0])
        elif when is not None and not self.tearing_down_timers_only:
            self.loop.now = max(self.loop.now, when)
        else:
            self.loop.stop()

    def checkpoint(self, label: str) -> None:
        """A step boundary inside the batch: another thread's disturbance may act here (free: it fires once)."""
        if self.draining:
            return
        free = self._enabled(self.disturbances)
        if not free:
            return
        options = ["go on", *sorted(free)]
        choice = self.chooser.choose(options)
        if choice:
            self._fire(options[choice])

    def tool(self, index: int, behaviour: str) -> Callable[..., Any]:
        async def tool(**arguments: object) -> object:
            observed = self.observed
            observed.entered.add(index)
            observed.invocations.append(index)
            try:
                return await self._act(index, behaviour)
            finally:
                observed.exited.add(index)

        return tool

    async def _act(self, index: int, behaviour: str) -> object:
        loop = self.loop
        cancellations = self.observed.cancellations
        if behaviour in ("hangs", "cleanup_late"):
            while True:
                try:
                    await loop.create_future()  # never resolved
                except asyncio.CancelledError:
                    if self.tearing_down:
                        raise
                    cancellations[index] = cancellations.get(index, 0) + 1
                    if behaviour == "cleanup_late":
                        try:
                            await self._go(index, "cleanup")
                        except asyncio.CancelledError:  # cancelled again in its cleanup: what it had is lost
                            cancellations[index] += 1
                            raise
                        return self._produce(index, "returns")
                    # hangs: ignores the cancellation and waits again
        try:
            await self._go(index, "go")
        except asyncio.CancelledError:
            if not self.tearing_down:
                cancellations[index] = cancellations.get(index, 0) + 1
            raise
        return self._produce(index, behaviour)

    async def _go(self, index: int, what: str) -> None:
        future: asyncio.Future[None] = self.loop.create_future()
        self.add_event(f"tool {index} {what}", lambda: future.done() or future.set_result(None))
        await future

    def _produce(self, index: int, behaviour: str) -> object:
        marker = self.observed.marker(index)
        kind = "result" if behaviour in ("returns", "bad_value") else "error"
        self.observed.productions.append(Production(index, marker, kind))
        return produce(behaviour, marker)

    def drain(self) -> None:
        """The run returned: let every tool that can still finish do so, and every timer fire (no choices)."""
        self.draining = True
        self.chooser.forced = True
        self.loop.run_forever()

    def teardown(self) -> None:
        """End every task still pending (hanging tools), so nothing outlives the execution."""
        if self.loop.is_closed():
            return
        self.draining = self.tearing_down = self.tearing_down_timers_only = True
        self.chooser.forced = True
        self.events.clear()
        loop = self.loop
        pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.close()


# --------------------------------------------------------------------------------------------------- threads


@dataclass(eq=False)
class Actor:
    """One thread of the world: the supervising (main) thread or a pool worker."""

    name: str
    glet: greenlet | None = None  # the actor's own stack; switching to it is switching threads
    state: str = "runnable"  # runnable | blocked | done
    wake_at: float = float("inf")
    notified: bool = False
    condition: SimCondition | None = None
    interrupt: bool = False  # main only: a KeyboardInterrupt lands when it resumes
    teardown: bool = False
    since: int = 0  # when it last became runnable: runnable threads run in that order unless preempted

    def __setattr__(self, name: str, value: object) -> None:
        if name == "state" and value == "runnable" and getattr(self, "state", None) != "runnable":
            object.__setattr__(self, "since", next(_RUNNABLE_ORDER))
        object.__setattr__(self, name, value)


_RUNNABLE_ORDER = itertools.count(1)


class SimCondition:
    """The runner's condition: waiting gives the baton to the scheduler; no real lock (one actor runs at a time)."""

    def __init__(self, world: ThreadWorld) -> None:
        self.world = world

    def __enter__(self) -> bool:
        return True

    def __exit__(self, *exc: object) -> None:
        return None

    def wait(self, timeout: float | None = None) -> bool:
        world = self.world
        me = world.current
        me.state, me.condition, me.notified = "blocked", self, False
        me.wake_at = float("inf") if timeout is None else world.now + timeout
        world.switch()
        me.condition = None
        world.resumed(me)
        return me.notified

    def notify_all(self) -> None:
        for actor in self.world.actors:
            if actor.state == "blocked" and actor.condition is self:
                actor.state, actor.notified, actor.condition = "runnable", True, None


class SimPool(Executor):
    """A thread pool of ``workers`` actors; optionally failing the first work item (``submit`` or its future)."""

    def __init__(self, world: ThreadWorld, workers: int, failure: str | None) -> None:
        self.world = world
        self.workers = workers
        self.failure = failure
        self.queue: list[tuple[Future[Any], Callable[..., Any], tuple[Any, ...]]] = []
        self.busy = 0
        self.submitted = 0

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.submitted += 1
        if self.failure == "submit_fails" and self.submitted == 1:
            raise RuntimeError("cannot schedule new futures after shutdown")
        future: Future[Any] = Future()
        if self.failure == "future_fails" and self.submitted == 1:  # never runs; fails when the scheduler says
            self.world.add_event(
                "executor fails work item 1",
                lambda: future.done() or future.set_exception(RuntimeError("cannot pickle the work item")),
                disturbance=True,
            )
            return future
        self.queue.append((future, fn, args))
        if self.busy < self.workers:
            self.busy += 1
            self.world.spawn(f"worker {self.busy}", self._work)
        return future

    def _work(self) -> None:
        while self.queue:
            future, fn, args = self.queue.pop(0)
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(*args))
            except BaseException as exc:  # noqa: BLE001  # a work item's exception belongs to its future
                future.set_exception(exc)
        self.busy -= 1

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        if cancel_futures:
            queued, self.queue = self.queue, []
            for future, _, _ in queued:
                future.cancel()


class ThreadWorld(_Events):
    """One execution of the thread runner: real threads, one at a time, switched by the scheduler."""

    def __init__(self, chooser: Chooser, preemptions: int, failure: str | None = None) -> None:
        self.chooser = chooser
        self.preemptions = preemptions
        self.failure = failure
        self.now = 0.0
        self.main = Actor("main", glet=greenlet.getcurrent())
        self.current = self.main
        self.actors: list[Actor] = [self.main]
        super().__init__()
        self.verdict: Stuck | Runaway | None = None
        self.interrupt_armed = False  # the scenario lets the supervising thread be interrupted (once)
        self.returned = False
        self.steps = 0
        self.observed = Observed()
        self.fault: BaseException | None = None  # an error of the world itself, raised in main at the end

    # -- the platform the runner is given

    def monotonic(self) -> float:
        return self.now

    def condition(self) -> SimCondition:
        return SimCondition(self)

    def thread_pool(self, workers: int) -> SimPool:
        self.checkpoint("pool")
        return SimPool(self, workers, self.failure)

    def checkpoint(self, label: str) -> None:
        if self.returned:
            return
        me = self.current
        self.switch()
        self.resumed(me)

    # -- actors and events

    def spawn(self, name: str, body: Callable[[], None]) -> None:
        actor = Actor(name)

        def run() -> None:
            try:
                if not actor.teardown:
                    body()
            except Teardown:
                pass
            except BaseException as exc:  # noqa: BLE001  # the world's own bug: reported in main
                self.fault = exc
            finally:
                actor.state = "done"
                self.switch(leaving=True)

        actor.glet = greenlet(run)
        self.actors.append(actor)

    def tool(self, index: int, behaviour: str) -> Callable[..., Any]:
        def tool(**arguments: object) -> object:
            me = self.current
            self.observed.entered.add(index)
            self.observed.invocations.append(index)
            try:
                if behaviour != "hangs":
                    self.add_event(f"tool {index} finishes", lambda: setattr(me, "state", "runnable"))
                me.state, me.wake_at = "blocked", float("inf")
                self.switch()
                self.resumed(me)
                marker = self.observed.marker(index)
                kind = "result" if behaviour in ("returns", "bad_value") else "error"
                self.observed.productions.append(Production(index, marker, kind))
                return produce(behaviour, marker)
            finally:
                self.observed.exited.add(index)

        return tool

    def resumed(self, me: Actor) -> None:
        """Back from a switch: a torn-down actor leaves; the supervising thread may have been interrupted."""
        if me.teardown:
            raise Teardown
        if me is self.main and self.verdict is not None:
            verdict, self.verdict = self.verdict, None
            raise verdict
        if me.interrupt:
            me.interrupt = False
            raise KeyboardInterrupt("interrupted by the scheduler")

    # -- the scheduler

    def switch(self, *, leaving: bool = False) -> None:
        """The current actor blocks, leaves, or reached a checkpoint: choose what happens next, then hand over."""
        me = self.current
        try:
            nxt = self._decide(me)
            while nxt is None:
                nxt = self._decide(me)
        except (Stuck, Runaway) as verdict:
            if me is self.main:
                raise
            self.verdict = verdict  # main learns it when it resumes, wherever it waits
            self.main.state, self.main.condition = "runnable", None
            nxt = self.main
        if nxt is me:
            return
        self.current = nxt
        assert nxt.glet is not None
        nxt.glet.switch()  # back here when the scheduler switches to this actor again (never, if it is leaving)

    def _decide(self, me: Actor) -> Actor | None:
        """One scheduler step: the actor to run next, or None after an event fired or the clock moved."""
        running = me.state == "runnable"
        others = [a for a in self.actors if a is not me and a.state == "runnable"]
        if self.returned:  # the drain after the run returned: deterministic, main last
            workers = [a for a in others if a is not self.main]
            if workers:
                return workers[0]
            enabled = [name for name in self._enabled(self.events) if name not in self.disturbances]
            if enabled:
                self.events.pop(enabled[0])()
                return None
            return me if running else self.main
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise Runaway(f"{self.steps} scheduler steps")
        events = self._enabled(self.events)
        free: list[tuple[str, Any]] = [(name, name) for name in events if name in self.disturbances]
        main_waits = self.main.state == "blocked" and self.main.condition is not None
        if self.interrupt_armed and (me is self.main or main_waits):
            free.append(("interrupt main", "interrupt"))
        tools = [(name, name) for name in events if name not in self.disturbances]
        options: list[tuple[str, Any]] = []
        if running:  # a checkpoint: switching to another thread, or a tool finishing, here is a preemption
            costly = [(f"run {a.name}", a) for a in others] + tools
            options = [("go on", me), *free, *(costly if self.preemptions > 0 else [])]
        else:  # the thread blocks: the thread runnable longest runs next, unless a tool or a disturbance acts first
            costly = []
            first = min(others, key=lambda a: a.since, default=None)
            options = [*([(f"run {first.name}", first)] if first is not None else []), *tools, *free]
            if not others:
                wake = min((a.wake_at for a in self.actors if a.state == "blocked"), default=float("inf"))
                if wake != float("inf"):
                    options.append(("advance clock", "advance"))
        if not options:
            raise Stuck("every thread is blocked, and no tool, timer or disturbance is left to act")
        label, target = options[self.chooser.choose([label for label, _ in options])]
        if running and (label, target) in costly:
            self.preemptions -= 1
        if isinstance(target, Actor):
            return target
        if target == "advance":
            self.now = min(a.wake_at for a in self.actors if a.state == "blocked")
            for actor in self.actors:
                if actor.state == "blocked" and actor.wake_at <= self.now:
                    actor.state, actor.condition = "runnable", None
            return None
        if target == "interrupt":
            self.interrupt_armed = False
            self.main.interrupt = True
            self.main.state, self.main.condition = "runnable", None
            return None
        self.disturbances.discard(target)
        self.events.pop(target)()
        return None

    def finish(self) -> None:
        """After the run returned and was checked: let every actor end."""
        self.returned = True
        self.chooser.forced = True
        for actor in self.actors:
            if actor is not self.main and actor.state == "blocked":
                actor.teardown = True
                actor.state = "runnable"
        self.events.clear()
        while any(a.state == "runnable" for a in self.actors if a is not self.main):
            self.switch()
        if self.fault is not None:
            raise self.fault

    def drain(self) -> None:
        """The run returned: let tools that can still finish do so (late results), deterministically."""
        self.returned = True
        self.chooser.forced = True
        self.main.state = "runnable"
        for _ in range(10 * MAX_STEPS):
            others = [a for a in self.actors if a is not self.main and a.state == "runnable"]
            if not others and not [name for name in self.events if name not in self.disturbances]:
                return
            self.switch()
        raise Runaway("the drain did not end")
