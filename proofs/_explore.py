"""Breadth-first exploration of the real ``ToolCallClosure`` for small bounds.

Theory of operation
-------------------
A *world* is one real instance (driven by the shipped table or by ``--table``)
plus what a caller holds: every handle ``begin`` returned, the most recent
open snapshot and the most recent closed snapshot it was given.  An *action*
is one call of the public API with concrete arguments (:func:`actions`):
``begin`` with every ordered subset of the ids up to the bound and three
invalid call lists; ``settle``/``succeed``/``fail``/``cancel`` with the
current handle, the previous generation's handle, a look-alike
``BatchHandle(generation=current)`` and ``None``, for known ids and an unknown
one, with valid and invalid outcomes, plus an invalid call id; ``close`` with
each of those handles and the reasons absent / error / cancelled+not_started /
invalid; ``seal``; ``snapshot``; ``active_generation``; the three exports
of the default (fresh) snapshot, of the held open and closed snapshots, and of
a forged copy; and *hooked* actions, whose caller value runs a nested action
when the closure reads it (a settle outcome whose ``content``, a close reason
whose ``status``, a call entry whose ``name`` begins a generation, closes it
or settles the same call), which is what drives the recheck rows.  Turn
tokens (deviation D20): ``turn_token``, and ``begin`` given a token that is
current, one that is stale, and a value that is not a token, with a valid and
an invalid call list and with a call entry that begins a generation (so the
token goes stale while the calls are read).  A token is compared with the
counter only for equality, so "current" and "stale" (any other number) are
every case a held token can be in: the caller's tokens need no place in the
state.

Deduplication uses the state abstraction :func:`state_key`: everything that
determines future behaviour under this alphabet —

* the generation number, the run state, the close reason;
* the calls in order with their names, states and settlements (which carry
  provenance, status, content or code and message);
* the number of diagnostics (their content never influences control flow; the
  count matters because of the ``maxDiagnostics`` cap);
* whether the caller holds an open and a closed snapshot (an export of a
  held snapshot depends only on its registration and closed flag, fixed for
  good; its content is immutable and is checked on every transition where it
  is held);

with call ids renamed in order of appearance (*symmetry reduction*: the ids
are interchangeable, the alphabet treats them all alike, and no check depends
on which letter an id is).  ``--no-symmetry`` turns the renaming off.

Successors are computed on a *clone* of the state's world (the instance's
private state is copied: run record, call list, diagnostics, registry; frozen
values are shared), or, with ``--replay``, by replaying the state's path from a
fresh instance, which needs no knowledge of the private state and validates
the cloning (both modes must explore the same numbers).  Each state's world is
rebuilt once by replaying its path (parent pointers); states at the bound are
expanded too (every transition from them is checked), but successors beyond
the generation bound are not enqueued.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

try:
    from tool_call_closure import BatchHandle, BeginResult, ImageInput, Snapshot, ToolCallClosure, TurnToken, content
    from tool_call_closure.closure import _closure_with_machine
    from tool_call_closure.errors import ToolCallClosureError
    from tool_call_closure.machine.interpreter import MACHINE, Machine
    from tool_call_closure.machine.table import load_table
    from tool_call_closure.values import (
        CallSnapshot,
        CloseReason,
        Diagnostic,
        call_views,
        close_reason_view,
        diagnostic_views,
    )
except ModuleNotFoundError as exc:  # pragma: no cover - environment problem, reported plainly
    raise SystemExit(
        "proofs: cannot import tool_call_closure; install it (pip install -e .) or set PYTHONPATH=src"
    ) from exc

IDS: Final = ("a", "b", "c", "d", "e")
UNKNOWN_ID: Final = "z"
NAME: Final = "t"
IMAGE_URL: Final = "https://example.com/a.png"
EXPORTS: Final = ("to_openai_chat_completions", "to_openai_responses", "to_anthropic_tool_results")
HANDLES: Final = ("current", "stale", "lookalike", "none")
TURNS: Final = ("current", "stale", "invalid")  # the turn tokens a guarded begin is given (deviation D20)


@dataclass(frozen=True)
class Bounds:
    """How far to explore, and the limits of the explored instance."""

    calls: int = 3  # ids per generation (and max_calls)
    generations: int = 3  # successful begins
    max_diagnostics: int = 2
    max_message_bytes: int = 24  # small, so the built-in superseded message is truncated
    symmetry: bool = True
    replay: bool = False

    @property
    def ids(self) -> tuple[str, ...]:
        return IDS[: self.calls]

    def limits(self) -> dict[str, int]:
        return {
            "max_calls": self.calls,
            "max_diagnostics": self.max_diagnostics,
            "max_message_bytes": self.max_message_bytes,
            "text_only_tool_results": True,  # so settle's success, whose parts hold an image, records media_moved (D26)
        }


# --------------------------------------------------------------------------- arguments and actions

# Caller values by name: (value factory, the error its validation raises, or None if it is valid).
OUTCOMES: Final[dict[str, tuple[Callable[[], Any], str | None]]] = {
    # A success made of parts holding an image: with text_only_tool_results it fires settle.commit.media_moved
    # (D26); succeed("r") below is the plain text success.
    "success": (
        lambda: {"status": "success", "content": content([ImageInput(media_type="image/png", url=IMAGE_URL)])},
        None,
    ),
    # The same settlements as fail(h, id, ValueError("boom")) and cancel(h, id, "stop"): the forms take
    # other paths through normalization but lead to the same states, which keeps the state space small.
    "error": (lambda: {"status": "error", "code": "tool_error", "message": "boom"}, None),
    "cancelled": (lambda: {"status": "cancelled", "message": "stop"}, None),
    "bogus": (lambda: {"status": "bogus"}, "outcome_status_invalid"),
}
REASONS: Final[dict[str, tuple[Callable[[], Any], str | None]]] = {
    "absent": (lambda: None, None),
    "error": (lambda: {"status": "error"}, None),
    "not_started": (lambda: {"status": "cancelled", "sideEffectState": "not_started"}, None),
    "bogus": (lambda: {"status": "bogus"}, "close_status_invalid"),
}
# The forms: method -> {variant: (positional arguments after handle and id, error or None)}.
FORMS: Final[dict[str, dict[str, tuple[Callable[[], tuple[Any, ...]], str | None]]]] = {
    "succeed": {"r": (lambda: ("r",), None), "set": (lambda: ({1},), "content_not_serializable")},
    "fail": {"boom": (lambda: (ValueError("boom"),), None), "code=''": (lambda: ("x", ""), "string_empty")},
    "cancel": {"stop": (lambda: ("stop",), None)},
}


# Which effect reads the hooked key of each operation's caller value (the point where the nested action runs).
HOOK_EFFECT: Final = {"begin": "validate_calls", "settle": "normalize_outcome", "close": "normalize_close_reason"}
HOOK_KEY: Final = {"begin": "name", "settle": "content", "close": "status"}


@dataclass(frozen=True)
class Action:
    """One call of the public API; arguments are named, the values made fresh by :func:`perform`.

    With ``nested``, the caller value is *hooked*: reading its ``HOOK_KEY`` runs the nested action on
    the same instance (caller code calling back, as a property or ``__getitem__`` may).
    """

    method: str
    op: str  # the table operation the method runs
    handle: str | None = None  # current | stale | lookalike | none
    call_id: str | None = None
    arg: str | None = None  # outcome / reason / form variant / call list / snapshot selector
    nested: Action | None = None
    turn: str | None = None  # begin's turn token: current | stale | invalid (see turn_argument), or none given

    @property
    def label(self) -> str:
        parts = [p for p in (self.handle, repr(self.call_id) if self.call_id is not None else None, self.arg) if p]
        if self.turn is not None:
            parts.append(f"turn={self.turn}")
        hook = f" ~> {self.nested.label}" if self.nested is not None else ""
        return f"{self.method}({', '.join(parts)}{hook})"

    def invalid_error(self) -> str | None:
        """The error the action's caller value raises when its normalizer runs (None if the value is valid)."""
        if self.method == "settle":
            return OUTCOMES[self.arg or ""][1]
        if self.method in FORMS:
            return FORMS[self.method][self.arg or ""][1]
        if self.method == "close":
            return REASONS[self.arg or ""][1]
        return None


def call_lists(bounds: Bounds) -> dict[str, tuple[Any, str | None]]:
    """begin's arguments by name: every ordered subset of the ids, and three invalid lists."""
    lists: dict[str, tuple[Any, str | None]] = {}
    for size in range(bounds.calls + 1):
        for ids in itertools.permutations(bounds.ids, size):
            lists["[" + "".join(ids) + "]"] = ([{"id": i, "name": NAME} for i in ids], None)
    lists["not-a-list"] = ("abc", "calls_not_array")
    duplicate_error = "duplicate_call_id" if bounds.calls >= 2 else "calls_exceed_max"  # the length is checked first
    lists["duplicate"] = ([{"id": "a", "name": NAME}, {"id": "a", "name": NAME}], duplicate_error)
    too_many = [*bounds.ids, UNKNOWN_ID]
    lists["too-many"] = ([{"id": i, "name": NAME} for i in too_many], "calls_exceed_max")
    return lists


def turn_argument(closure: ToolCallClosure, kind: str) -> Any:
    """The ``turn`` a guarded begin passes, taken when the action starts: a token of the current generation, a
    stale one (the previous generation's; before the first begin, generation 1's), or a mapping that is not a
    token."""
    generation = closure._generation  # read privately: the action's row trace holds only the begin's rows
    if kind == "current":
        return TurnToken(generation)
    if kind == "stale":
        return TurnToken(generation - 1 if generation else 1)
    return {"generation": generation}


def actions(bounds: Bounds) -> tuple[Action, ...]:
    """The alphabet (see the module docstring)."""
    out = [Action("begin", "begin", arg=name) for name in call_lists(bounds)]
    known = bounds.ids
    for handle in HANDLES:
        ids = (*known, UNKNOWN_ID) if handle == "current" else (known[0], UNKNOWN_ID)
        outcomes = tuple(OUTCOMES) if handle == "current" else ("success", "bogus")
        for call_id in ids:
            out += [Action("settle", "settle", handle, call_id, o) for o in outcomes]
            for method, variants in FORMS.items():
                chosen = variants if handle == "current" else list(variants)[:1]
                out += [Action(method, "settle", handle, call_id, v) for v in chosen]
        out += [Action("close", "close", handle, arg=r) for r in REASONS]
        out.append(Action("seal", "seal", handle))
    out.append(Action("settle", "settle", "current", "", "success"))  # an invalid call id always raises
    # Caller code that calls back while the operation is in an unlocked phase (the recheck rows).
    nested_begin = Action("begin", "begin", arg="[" + known[-1] + "]")
    nested_close = Action("close", "close", "current", arg="absent")
    for call_id in known:
        for nested in (nested_begin, nested_close, Action("settle", "settle", "current", call_id, "error")):
            out.append(Action("settle", "settle", "current", call_id, "success", nested))
    out += [Action("close", "close", "current", arg="error", nested=n) for n in (nested_begin, nested_close)]
    out.append(Action("begin", "begin", arg="[" + known[0] + "]", nested=nested_begin))
    # Turn tokens (deviation D20): a current token commits; a stale one, or one a nested begin makes stale while
    # the calls are read, is rejected; a value that is not a token raises; invalid calls raise before the turn.
    out += [Action("begin", "begin", arg="[" + known[0] + "]", turn=turn) for turn in TURNS]
    out.append(Action("begin", "begin", arg="not-a-list", turn="stale"))
    out.append(Action("begin", "begin", arg="[" + known[0] + "]", nested=nested_begin, turn="current"))
    out.append(Action("turn_token", "turn_token"))
    out.append(Action("snapshot", "snapshot"))
    out.append(Action("active_generation", "active_generation"))
    out += [Action(m, "export", arg=s) for m in EXPORTS for s in ("default", "open", "closed", "forged")]
    return tuple(out)


# --------------------------------------------------------------------------- worlds


class World:
    """A real instance and what its caller holds."""

    __slots__ = ("closure", "forged", "handles", "held_closed", "held_open")

    def __init__(self, closure: ToolCallClosure) -> None:
        self.closure = closure
        self.handles: list[BatchHandle] = []  # as begin returned them, oldest first
        self.held_open: Snapshot | None = None
        self.held_closed: Snapshot | None = None
        self.forged: Snapshot | None = None  # an equal copy of a held snapshot: never registered

    def clone(self) -> World:
        twin = World(clone_closure(self.closure))
        twin.handles = list(self.handles)
        twin.held_open, twin.held_closed, twin.forged = self.held_open, self.held_closed, self.forged
        return twin

    def handle(self, which: str) -> Any:
        """The handle an action names (None when the world has none of that kind)."""
        if which == "current":
            return self.handles[-1] if self.handles else None
        if which == "stale":
            return self.handles[-2] if len(self.handles) >= 2 else None
        if which == "lookalike":
            return BatchHandle(max(len(self.handles), 1))
        return None

    def snapshot_arg(self, which: str) -> Snapshot | None:
        return {"default": None, "open": self.held_open, "closed": self.held_closed, "forged": self.forged}[which]

    def absorb(self, result: Any) -> None:
        """Keep what the caller was given: a new handle, the latest open and closed snapshots."""
        snapshots = []
        if isinstance(result, BeginResult):
            self.handles.append(result.handle)
            snapshots.append(result.superseded)
        elif isinstance(result, Snapshot):
            snapshots.append(result)
        for snap in snapshots:
            if snap is None:
                continue
            if snap.closed:
                self.held_closed = snap
            else:
                self.held_open = snap
            self.forged = dataclasses.replace(snap)


def clone_closure(closure: ToolCallClosure) -> ToolCallClosure:
    """A copy of the instance's private state: run record, call list, index, diagnostics, registry, a new lock.

    Built field by field on a new instance (``copy.copy`` of an instance is refused, and would share the lock).
    """
    twin = _closure_with_machine(closure._machine, **dataclasses.asdict(closure.limits))
    twin._trace = closure._trace
    twin._no_run_diagnostics = list(closure._no_run_diagnostics)
    twin._records = closure._records.copy()  # (a KeptRecords stays one: its copy keeps the views alive too)
    run = closure._run
    if run is not None:
        twin_run = run.draft()
        twin_run.index = dict(run.index)
        twin_run.diagnostics = list(run.diagnostics)
        twin._run = twin_run
    return twin


def machine_for(table_path: Path | None) -> Machine:
    """The compiled shipped table, or the table at ``table_path``.

    Raises :class:`TableError` when the reference's own validator refuses the table.
    """
    if table_path is None:
        return MACHINE
    return Machine(load_table(table_path.read_text(encoding="utf-8")))


@dataclass
class Outcome:
    """What an action did: its result or exception, the rows that fired (when traced), and its nested action."""

    result: Any = None
    error: BaseException | None = None
    trace: list[str] | None = None
    handle: Any = None  # the handle object passed
    turn: Any = None  # the turn token (or non-token) a guarded begin passed
    nested: tuple[Action, Outcome, Observation] | None = None  # the nested action, its outcome, the state after it


class Hooked(Mapping[str, Any]):
    """A caller value whose first read of ``key`` runs ``hook`` (caller code calling back into the closure)."""

    def __init__(self, data: Mapping[str, Any], key: str, hook: Callable[[], None]) -> None:
        self._data = data
        self._key = key
        self._hook: Callable[[], None] | None = hook

    def __getitem__(self, key: str) -> Any:
        if key == self._key and self._hook is not None:
            hook, self._hook = self._hook, None
            hook()
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


def perform(
    world: World, action: Action, bounds: Bounds, *, trace: bool = False, inner: bool = False
) -> Outcome | None:
    """Run ``action`` on ``world`` (None if the world lacks the handle or snapshot the action needs).

    ``inner`` marks a nested action: it leaves the outer action's row trace in place.
    """
    c = world.closure
    handle = world.handle(action.handle) if action.handle is not None else None
    if action.handle in ("current", "stale") and handle is None:
        return None
    if action.op == "export" and action.arg != "default" and world.snapshot_arg(action.arg or "") is None:
        return None
    outcome = Outcome(trace=[] if trace else None, handle=handle)
    if not inner:
        c._trace = outcome.trace
    try:
        outcome.result = _call(c, world, action, handle, bounds, outcome)
    except Exception as exc:  # noqa: BLE001 - every exception is an observation
        outcome.error = exc
    finally:
        if not inner:
            c._trace = None
    world.absorb(outcome.result)
    return outcome


def _hook(world: World, action: Action, bounds: Bounds, outer: Outcome) -> Callable[[], None]:
    def run_nested() -> None:
        assert action.nested is not None
        inner = perform(world, action.nested, bounds, inner=True)
        assert inner is not None, "a nested action always has what it needs"
        outer.nested = (action.nested, inner, observe(world))

    return run_nested


def _call(c: ToolCallClosure, world: World, action: Action, handle: Any, bounds: Bounds, outcome: Outcome) -> Any:
    method, arg = action.method, action.arg or ""

    def hooked(value: Any) -> Any:
        if action.nested is None:
            return value
        return Hooked(value, HOOK_KEY[action.op], _hook(world, action, bounds, outcome))

    if method == "begin":
        calls = call_lists(bounds)[arg][0]
        given = [hooked(calls[0]), *calls[1:]] if action.nested is not None else calls
        if action.turn is None:
            return c.begin(given)
        outcome.turn = turn_argument(c, action.turn)
        return c.begin(given, turn=outcome.turn)
    if method == "settle":
        return c.settle(handle, action.call_id, hooked(OUTCOMES[arg][0]()))
    if method in FORMS:
        return getattr(c, method)(handle, action.call_id, *FORMS[method][arg][0]())
    if method == "close":
        return c.close(handle, hooked(REASONS[arg][0]()))
    if method == "seal":
        return c.seal(handle)
    if method == "snapshot":
        return c.snapshot()
    if method == "active_generation":
        return c.active_generation
    if method == "turn_token":
        return c.turn_token()
    return getattr(c, method)(world.snapshot_arg(arg))


def fresh_world(machine: Machine, bounds: Bounds, *, strong_registry: bool = False) -> World:
    """A new instance driven by ``machine``; with ``strong_registry`` its registry keeps every snapshot alive."""
    closure = _closure_with_machine(machine, **bounds.limits())
    if strong_registry:
        closure._records = KeptRecords()
    return World(closure)


class KeptRecords(dict[int, Any]):
    """An instance's ``_records`` that also keeps every snapshot view alive, in the order they were produced.

    The instance's registry is its records, each a weak reference to its view
    (``machine/context.py``, ``SnapshotRecord``).  The model's registry only
    grows, so the strong-registry mode keeps every view: no record is ever
    removed, and ``views`` lists the produced snapshots by registry index.
    """

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.views: list[Snapshot] = []

    def __setitem__(self, key: int, record: Any) -> None:
        super().__setitem__(key, record)
        self.views.append(record())

    def copy(self) -> KeptRecords:
        twin = KeptRecords(self)
        twin.views = list(self.views)
        return twin


def produced_snapshots(closure: ToolCallClosure) -> list[Snapshot]:
    """The snapshots a strong-registry instance produced, by registry index."""
    records = closure._records
    assert isinstance(records, KeptRecords), "only a strong-registry world keeps its snapshots"
    return records.views


# --------------------------------------------------------------------------- observation and abstraction


@dataclass(frozen=True)
class Observation:
    """The state of a world: the instance's state (compared by ``==``) and the caller's snapshots."""

    generation: int
    state: str
    calls: tuple[CallSnapshot, ...]
    close_reason: CloseReason | None
    diagnostics: tuple[Diagnostic, ...]
    handle: BatchHandle | None
    pending: int  # the run's pending counter (an internal cache, checked against the calls)
    run_generation: int
    held: tuple[Snapshot | None, ...] = dataclasses.field(compare=False)  # open, closed
    held_copies: tuple[Snapshot | None, ...] = dataclasses.field(compare=False)  # deep copies, if asked for


def observe(world: World, *, copy_held: bool = False) -> Observation:
    """Read the instance's private state (read-only: observing registers no snapshot).

    With ``copy_held``, deep copies of the caller's snapshots are kept, to show later that they never changed.
    """
    c = world.closure
    run = c._run
    held = (world.held_open, world.held_closed)
    copies = copy.deepcopy(held) if copy_held else ()
    # The instance's records (plain tuples) are read as the views a snapshot would show (compared by value).
    if run is None:
        return Observation(c._generation, "none", (), None, diagnostic_views(c._diagnostics), None, 0, 0, held, copies)
    return Observation(
        c._generation,
        run.state,
        call_views(run.calls),
        close_reason_view(run.close_reason),
        diagnostic_views(c._diagnostics),
        run.handle,
        run.pending,
        run.generation,
        held,
        copies,
    )


def state_key(obs: Observation, bounds: Bounds) -> tuple[Any, ...]:
    """The state abstraction used for deduplication (see the module docstring)."""
    rename = {call.id: IDS[i] for i, call in enumerate(obs.calls)} if bounds.symmetry else {}
    calls = tuple((rename.get(c.id, c.id), c.name, c.state, c.settlement) for c in obs.calls)
    held = tuple(s is not None for s in obs.held)
    return (obs.generation, obs.state, calls, obs.close_reason, len(obs.diagnostics), held)


# --------------------------------------------------------------------------- breadth-first search


@dataclass
class Stats:
    states: int = 0
    transitions: int = 0
    depth: int = 0
    seconds: float = 0.0
    rows: set[str] = dataclasses.field(default_factory=set)  # the rows that fired (when traced)


@dataclass(frozen=True)
class Violation:
    path: tuple[Action, ...]  # from a new instance to the state where the violating action starts
    action: Action
    message: str
    before: Observation
    after: Observation | None


# visit(world before, action, world after, outcome) -> a violation message, or None
Visit = Callable[[World, Observation, Action, World, Observation, Outcome], str | None]


def replay(machine: Machine, bounds: Bounds, path: Sequence[Action], *, strong_registry: bool) -> World:
    world = fresh_world(machine, bounds, strong_registry=strong_registry)
    for action in path:
        perform(world, action, bounds)
    return world


def explore(
    machine: Machine,
    bounds: Bounds,
    visit: Visit,
    check_state: Callable[[Observation], str | None],
    *,
    strong_registry: bool = False,
    trace: bool = False,
) -> tuple[Stats, Violation | None]:
    """Breadth-first search; stops at the first violation (returned with the shortest path to it)."""
    started = time.perf_counter()
    alphabet = actions(bounds)
    stats = Stats()
    root = fresh_world(machine, bounds, strong_registry=strong_registry)
    root_obs = observe(root)
    problem = check_state(root_obs)
    if problem is not None:
        return stats, Violation((), Action("new", "new"), problem, root_obs, None)
    parents: dict[tuple[Any, ...], tuple[tuple[Any, ...] | None, Action | None]] = {
        state_key(root_obs, bounds): (None, None)
    }
    queue: deque[tuple[tuple[Any, ...], int]] = deque([(state_key(root_obs, bounds), 0)])

    def path_to(key: tuple[Any, ...]) -> tuple[Action, ...]:
        steps: list[Action] = []
        parent, action = parents[key]
        while parent is not None and action is not None:
            steps.append(action)
            key = parent
            parent, action = parents[key]
        return tuple(reversed(steps))

    while queue:
        key, depth = queue.popleft()
        stats.states += 1
        stats.depth = max(stats.depth, depth)
        path = path_to(key)
        world = replay(machine, bounds, path, strong_registry=strong_registry)
        before = observe(world, copy_held=True)
        for action in alphabet:
            view, action_before = world, before  # the world as it was before the action, and its observation
            if bounds.replay:  # handles are identities: observe the very instance that acts, before it acts
                after_world = replay(machine, bounds, path, strong_registry=strong_registry)
                action_before = observe(after_world, copy_held=True)
                view = replay(machine, bounds, path, strong_registry=strong_registry)
            else:
                after_world = world.clone()
            outcome = perform(after_world, action, bounds, trace=trace)
            if outcome is None:
                continue
            stats.transitions += 1
            stats.rows.update(outcome.trace or ())
            after = observe(after_world)
            successor = state_key(after, bounds)
            problem = visit(view, action_before, action, after_world, after, outcome)
            if problem is None and successor not in parents:  # a state seen before was checked when first seen
                problem = check_state(after)
            if problem is not None:
                stats.seconds = time.perf_counter() - started
                return stats, Violation(path, action, problem, action_before, after)
            if successor not in parents and after.generation <= bounds.generations:
                parents[successor] = (key, action)
                queue.append((successor, depth + 1))
    stats.seconds = time.perf_counter() - started
    return stats, None


def describe(obs: Observation) -> str:
    """A one-line rendering of an observation for traces."""
    calls = ", ".join(
        f"{c.id}:{c.state}" + (f"({c.settlement.provenance})" if c.settlement is not None else "") for c in obs.calls
    )
    reason = "-" if obs.close_reason is None else obs.close_reason.status
    return (
        f"generation={obs.generation} run={obs.state} calls=[{calls}] close-reason={reason} "
        f"diagnostics={len(obs.diagnostics)}"
    )


def error_code(error: BaseException) -> str:
    """The spec error code of an exception the closure raised, or ``crash:<type>`` for anything else."""
    if isinstance(error, ToolCallClosureError):
        return error.code
    return f"crash:{type(error).__name__}"


def iter_violation_lines(violation: Violation) -> Iterator[str]:
    yield f"VIOLATION: {violation.message}"
    yield "  shortest trace from a new instance:"
    for i, action in enumerate(violation.path, 1):
        yield f"    {i}. {action.label}"
    yield f"    {len(violation.path) + 1}. {violation.action.label}   <-- violates"
    yield f"  before: {describe(violation.before)}"
    if violation.after is not None:
        yield f"  after:  {describe(violation.after)}"
