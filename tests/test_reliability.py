"""Reliability: commits as one step under any exception, reentry, exports from the instance's own record.

Theory of operation
-------------------
Each test here reproduces one way the instance could be left broken and
checks it cannot happen (spec/README.md §14, invariants I4, I6, I9):

* **Commit as one step (I9).**  ``proofs/faults.py`` raises an exception at
  every opcode an operation executes while it holds the lock; after each
  fault the state must be exactly the state before (the install had not run)
  or exactly the state a clean run reaches (it had).  Real ``RecursionError``
  with the stack nearly exhausted, and a real signal handler raising in the
  middle of a 400-call ``close``, are reproduced too.
* **Reentry while locked.**  A finalizer run by ``gc.collect()``, a signal
  handler and a weakref callback that call back into the instance while it
  holds its lock get ``UsageError`` ``reentrant_call`` instead of deadlocking
  (each runs in a subprocess with a timeout, so a deadlock fails the test
  instead of hanging the suite).
* **Exports from the instance's own record (I6).**  ``object.__setattr__`` on
  a returned snapshot's fields (closed, calls, generation …) changes nothing
  exported, and a field holding caller code is never read.
* **Refusals.**  ``copy.copy``, ``copy.deepcopy`` and pickling of an instance;
  attribute writes on values (``FrozenInstanceError`` under the library root).
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tool_call_closure import (
    ImageInput,
    Rejection,
    Settlement,
    Snapshot,
    ToolCallClosure,
    ToolCallClosureError,
    UsageError,
    content,
    to_json,
)
from tool_call_closure.errors import FrozenValueError
from tool_call_closure.machine import semantics
from tool_call_closure.machine.context import Context
from tool_call_closure.machine.interpreter import Machine

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "proofs"))

from faults import FaultRun, InjectedFault, sweep

State = tuple[Any, ...]


def observe(closure: ToolCallClosure) -> State:
    """Everything committed, read without taking a snapshot (white box: nothing is registered)."""
    run = closure._run
    if run is None:
        return (closure._generation, None, tuple(closure._diagnostics))
    return (
        closure._generation,
        run.generation,
        run.state,
        run.close_reason,
        tuple(run.calls),
        tuple(closure._diagnostics),
        run.handle,
    )


# --------------------------------------------------------------------------- scenarios

Scenario = Callable[[], tuple[ToolCallClosure, Callable[[], Any]]]


def _open(ids: str = "abc", settled: str = "") -> tuple[ToolCallClosure, Any]:
    closure = ToolCallClosure(max_diagnostics=3)
    handle = closure.begin([{"id": i, "name": "t"} for i in ids]).handle
    for call_id in settled:
        closure.succeed(handle, call_id, {"done": call_id})
    return closure, handle


def _seal_nothing_pending() -> tuple[ToolCallClosure, Callable[[], Any]]:
    closure, handle = _open("ab", settled="ab")
    return closure, lambda: closure.seal(handle)


def _close_nothing_pending() -> tuple[ToolCallClosure, Callable[[], Any]]:
    closure, handle = _open("ab", settled="ab")
    return closure, lambda: closure.close(handle, {"status": "error", "code": "late"})


def _close_pending() -> tuple[ToolCallClosure, Callable[[], Any]]:
    closure, handle = _open("abcd", settled="b")
    return closure, lambda: closure.close(handle, {"status": "cancelled"})


def _first_begin() -> tuple[ToolCallClosure, Callable[[], Any]]:
    closure = ToolCallClosure()
    return closure, lambda: closure.begin([{"id": "a", "name": "t"}, {"id": "b", "name": "t"}])


def _superseding_begin() -> tuple[ToolCallClosure, Callable[[], Any]]:
    closure, _handle = _open("abc", settled="a")
    return closure, lambda: closure.begin([{"id": "x", "name": "t"}])


def _settle() -> tuple[ToolCallClosure, Callable[[], Any]]:
    closure, handle = _open("abc")
    return closure, lambda: closure.fail(handle, "b", ValueError("boom"), "E")


def _media_settle() -> tuple[ToolCallClosure, Callable[[], Any]]:
    """D26: a media success with text_only_tool_results commits the call and its media_moved as one draft."""
    closure = ToolCallClosure(max_diagnostics=3, text_only_tool_results=True)
    handle = closure.begin([{"id": i, "name": "t"} for i in "abc"]).handle
    image = content([ImageInput(media_type="image/png", url="https://example.com/a.png")])
    return closure, lambda: closure.succeed(handle, "b", image)


def _rejected_settle() -> tuple[ToolCallClosure, Callable[[], Any]]:
    closure, handle = _open("abc", settled="a")
    return closure, lambda: closure.succeed(handle, "a", "again")


def _turn_guarded_begin() -> tuple[ToolCallClosure, Callable[[], Any]]:
    closure, _handle = _open("abc", settled="a")
    token = closure.turn_token()  # current: the compare-and-set commits, superseding the open generation (D20)
    return closure, lambda: closure.begin([{"id": "x", "name": "t"}], turn=token)


def _stale_turn_begin() -> tuple[ToolCallClosure, Callable[[], Any]]:
    closure = ToolCallClosure(max_diagnostics=3)
    token = closure.turn_token()
    handle = closure.begin([{"id": "a", "name": "t"}, {"id": "b", "name": "t"}]).handle
    closure.succeed(handle, "a", "done")
    return closure, lambda: closure.begin([{"id": "x", "name": "t"}], turn=token)  # stale: one diagnostic only


def _export() -> tuple[ToolCallClosure, Callable[[], Any]]:
    closure, handle = _open("ab", settled="a")
    closed = closure.close(handle)
    return closure, lambda: closure.to_anthropic_tool_results(closed)  # type: ignore[arg-type]


SCENARIOS: dict[str, Scenario] = {
    "seal with nothing pending": _seal_nothing_pending,
    "close with nothing pending": _close_nothing_pending,
    "close with pending calls": _close_pending,
    "first begin": _first_begin,
    "superseding begin": _superseding_begin,
    "settle": _settle,
    "rejected settle": _rejected_settle,
    "media settle (D26)": _media_settle,
    "turn-guarded begin": _turn_guarded_begin,
    "stale turn begin": _stale_turn_begin,
    "export": _export,
}

FAULTS: dict[str, Callable[[], BaseException]] = {
    "injected": lambda: InjectedFault("injected"),
    "RecursionError": lambda: RecursionError("maximum recursion depth exceeded"),
    "MemoryError": MemoryError,
    "KeyboardInterrupt": KeyboardInterrupt,
}


def _check_fault(scenario: Scenario) -> Callable[[ToolCallClosure, FaultRun], None]:
    """The check of one faulted run: all or nothing, and the instance still works afterwards."""
    clean_closure, clean_op = scenario()
    clean_op()
    clean_after = observe(clean_closure)

    def check(closure: ToolCallClosure, run: FaultRun) -> None:
        after = observe(closure)
        # A fault raised inside a weakref callback (the registry's) is swallowed: the operation completes.
        if run.installed or run.error is None:
            assert _comparable(after) == _comparable(clean_after), "I9: installed, but not as a clean run installs"
        else:
            assert after == check.before, f"I9: {run.error!r} at point {run.points} changed the state"  # type: ignore[attr-defined]
        assert not closure._lock._is_owned(), "the lock was left held"
        # Still usable: the next begin takes the next number, and its generation seals once settled.
        generation = closure._generation
        begun = closure.begin([{"id": "z", "name": "t"}])
        assert begun.generation == generation + 1, "I7: a fault consumed a generation number"
        closure.succeed(begun.handle, "z", "ok")
        sealed = closure.seal(begun.handle)
        assert isinstance(sealed, Snapshot), f"seal after a fault answered {sealed!r}"
        assert sealed.closed

    return check


def _comparable(state: State) -> State:
    # A handle is compared by identity; two clean runs create two handles of the same number.
    return tuple(item for item in state if type(item).__name__ != "BatchHandle")


@pytest.mark.pure_machine  # patches the semantics or steps through Python frames (see conftest.py)
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # faults inside weakref callbacks
@pytest.mark.parametrize("fault", sorted(FAULTS))
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_I9_an_exception_at_any_point_of_a_commit_leaves_all_or_nothing(name: str, fault: str) -> None:
    """I9: a fault at every opcode of the locked segments leaves the state as before, or as a clean run leaves it."""
    scenario = SCENARIOS[name]
    check = _check_fault(scenario)

    def prepare() -> tuple[ToolCallClosure, Callable[[], Any]]:
        closure, operation = scenario()
        check.before = observe(closure)  # type: ignore[attr-defined]
        return closure, operation

    injected = sweep(prepare, check, make=FAULTS[fault])
    assert injected > 50, f"only {injected} injection points: the injector is not reaching the commit"


@pytest.mark.pure_machine  # patches the semantics or steps through Python frames (see conftest.py)
def test_I9_the_sweep_finds_the_unlocked_commit_of_a_broken_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check can fail: a commit that writes the installed run in place is caught half-done."""

    def in_place(ctx: Context) -> None:
        run = ctx.closure._run
        run.close_reason = semantics.COMPLETE_RECORD  # written before the move and the snapshot: not one step
        ctx.draft = run.draft()

    monkeypatch.setitem(semantics.EFFECTS, "record_complete", in_place)
    machine = Machine(semantics_table())
    failures = []

    def prepare() -> tuple[ToolCallClosure, Callable[[], Any]]:
        from tool_call_closure.closure import _closure_with_machine

        closure = _closure_with_machine(machine)
        handle = closure.begin([]).handle
        prepare.before = observe(closure)  # type: ignore[attr-defined]
        return closure, lambda: closure.seal(handle)

    def check(closure: ToolCallClosure, run: FaultRun) -> None:
        if not run.installed and observe(closure) != prepare.before:  # type: ignore[attr-defined]
            failures.append(run.points)

    sweep(prepare, check)
    assert failures, "the sweep did not notice a commit written in place"


def semantics_table() -> Any:
    from tool_call_closure.machine.table import TABLE

    return TABLE


# --------------------------------------------------------------------------- real exceptions


def _at_depth(depth: int, call: Callable[[], Any]) -> Any:
    if depth <= 0:
        return call()
    return _at_depth(depth - 1, call)


@pytest.mark.pure_machine  # patches the semantics or steps through Python frames (see conftest.py)
@pytest.mark.parametrize("name", ["seal with nothing pending", "close with nothing pending", "first begin"])
def test_I9_recursion_error_with_the_stack_nearly_exhausted_changes_nothing(name: str) -> None:
    """I9: at every stack depth where the operation hits RecursionError, it changed nothing and cost no number."""
    scenario = SCENARIOS[name]
    limit = sys.getrecursionlimit()
    base = len(_frames())
    hit = 0
    try:
        sys.setrecursionlimit(base + 200)
        for slack in range(1, 120):
            closure, operation = scenario()
            before = observe(closure)
            try:
                _at_depth(200 - slack, operation)
            except RecursionError:
                hit += 1
                assert observe(closure) == before, f"RecursionError at slack {slack} changed the state"
                assert not closure._lock._is_owned()
                generation = closure._generation
                assert closure.begin([]).generation == generation + 1, "I7: RecursionError consumed a number"
    finally:
        sys.setrecursionlimit(limit)
    assert hit > 5, "the sweep never reached the operation's frames"


def _frames() -> list[Any]:
    frame, frames = sys._getframe(), []
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back  # type: ignore[assignment]
    return frames


@pytest.mark.pure_machine  # patches the semantics or steps through Python frames (see conftest.py)
def test_I9_a_signal_handler_raising_inside_a_close_of_400_calls_changes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """I9: KeyboardInterrupt from a real signal handler half-way through synthesizing 400 calls: nothing changed,
    every call can still be settled, and seal then closes the generation (no stale pending count)."""
    closure, handle = _open([f"c{i}" for i in range(400)])  # type: ignore[arg-type]
    before = observe(closure)
    real = Machine.apply_call_event
    seen = [0]

    def counting(self: Machine, call: Any, event: str, settlement: Any) -> Any:
        seen[0] += 1
        if seen[0] == 200:
            signal.raise_signal(signal.SIGUSR1)  # the handler runs at the next check: right here
        return real(self, call, event, settlement)

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGUSR1, interrupt)
    monkeypatch.setattr(Machine, "apply_call_event", counting)
    try:
        with pytest.raises(KeyboardInterrupt):
            closure.close(handle)
    finally:
        signal.signal(signal.SIGUSR1, previous)
        monkeypatch.undo()
    assert observe(closure) == before, "the interrupted close left calls synthetic"
    for i in range(400):
        assert closure.succeed(handle, f"c{i}", "ok").accepted
    sealed = closure.seal(handle)
    assert isinstance(sealed, Snapshot), f"seal answered {sealed!r}"
    assert sealed.close_reason is not None


# --------------------------------------------------------------------------- reentry while locked

_REENTRY_PRELUDE = """
import gc, signal, sys, weakref
from tool_call_closure import ToolCallClosure, UsageError
from tool_call_closure.machine import semantics

closure = ToolCallClosure()
handle = closure.begin([{"id": "a", "name": "t"}, {"id": "b", "name": "t"}]).handle
seen = []

def call_back(where):
    try:
        closure.snapshot()
        seen.append(where + ": entered")
    except UsageError as exc:
        seen.append(where + ": " + exc.code)

# A step of succeed's commit, under the lock (the result is built before the install): read through semantics.
real = semantics.ACCEPTED_TWIN
def under_lock(action):
    def patched():
        action()
        return real()
    semantics.ACCEPTED_TWIN = patched
"""

_REENTRY_CASES = {
    "finalizer": """
class Cycle:
    def __del__(self):
        call_back("finalizer")

def collect():
    a = Cycle(); a.me = a; del a  # garbage only a collection frees
    gc.collect()                  # a real collection, run while the lock is held
under_lock(collect)
result = closure.succeed(handle, "a", "ok")
""",
    "signal handler": """
def handler(signum, frame):
    call_back("signal handler")
signal.signal(signal.SIGUSR1, handler)
under_lock(lambda: signal.raise_signal(signal.SIGUSR1))
result = closure.succeed(handle, "a", "ok")
""",
    "weakref callback": """
class Target:
    pass
holder = [Target()]
ref = weakref.ref(holder[0], lambda _ref: call_back("weakref callback"))
under_lock(lambda: holder.clear())  # the last reference dies while the lock is held
result = closure.succeed(handle, "a", "ok")
""",
}


@pytest.mark.pure_machine  # patches the semantics or steps through Python frames (see conftest.py)
@pytest.mark.parametrize("case", sorted(_REENTRY_CASES))
def test_reentry_while_locked_raises_reentrant_call_instead_of_deadlocking(case: str) -> None:
    """A finalizer, signal handler or weakref callback entering the instance while it holds its lock gets
    UsageError ``reentrant_call`` (instead of waiting on its own lock forever); the lock is free afterwards."""
    script = (
        _REENTRY_PRELUDE
        + _REENTRY_CASES[case]
        + textwrap.dedent("""
        semantics.ACCEPTED_TWIN = real
        print(seen)
        print(type(result).__name__ if not isinstance(result, BaseException) else result)
        print(closure.seal(handle).__class__.__name__, closure.succeed(handle, "b", "ok").accepted)
    """)
    )
    try:
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{case}: the instance deadlocked on its own lock")
    assert done.returncode == 0, done.stderr
    # The refusal was caught by the code that called back; the operation it interrupted then completed.
    assert done.stdout.splitlines() == [repr([f"{case}: reentrant_call"]), "Accepted", "Rejection True"], (
        done.stdout,
        done.stderr,
    )


@pytest.mark.pure_machine  # patches the semantics or steps through Python frames (see conftest.py)
def test_a_signal_handler_reentering_aborts_the_interrupted_operation_cleanly() -> None:
    """The signal handler's UsageError lands inside the outer operation's commit: that operation raises it
    and changes nothing; the instance works afterwards."""
    script = _REENTRY_PRELUDE + textwrap.dedent("""
        def handler(signum, frame):
            closure.snapshot()
        signal.signal(signal.SIGUSR1, handler)
        under_lock(lambda: signal.raise_signal(signal.SIGUSR1))
        try:
            closure.succeed(handle, "a", "ok")
        except UsageError as exc:
            print(exc.code)
        semantics.ACCEPTED_TWIN = real
        print([call.state for call in closure.snapshot().calls])
        print(closure.succeed(handle, "a", "ok").accepted)
    """)
    try:
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail("the instance deadlocked on its own lock")
    assert done.stdout.splitlines() == ["reentrant_call", "['pending', 'pending']", "True"], done.stderr


def test_caller_code_in_unlocked_phases_may_still_call_back() -> None:
    """Reentry is refused only while the lock is held: a hook in the normalize phase calls back freely (RE-1)."""
    closure, handle = _open("ab")

    class Content:
        def __json__(self) -> Any:
            closure.succeed(handle, "b", "nested")
            return {"outer": True}

    assert closure.succeed(handle, "a", Content()).accepted
    assert [call.state for call in closure.snapshot().calls] == ["success", "success"]  # type: ignore[union-attr]


# --------------------------------------------------------------------------- exports from the instance's record


def _closed_pair() -> tuple[ToolCallClosure, Snapshot, list[dict[str, Any]]]:
    closure, handle = _open("ab", settled="a")
    closed = closure.close(handle)
    assert isinstance(closed, Snapshot)
    return closure, closed, closure.to_openai_chat_completions(closed)


def test_I6_an_open_snapshot_doctored_closed_is_still_refused() -> None:
    """ADP-3/I6: ``object.__setattr__(open_snapshot, "closed", True)`` does not make it exportable."""
    closure, _handle = _open("ab", settled="a")
    snapshot = closure.snapshot()
    object.__setattr__(snapshot, "closed", True)
    with pytest.raises(UsageError) as info:
        closure.to_openai_chat_completions(snapshot)
    assert info.value.code == "snapshot_open"


def test_I6_rewritten_calls_export_as_the_instance_recorded_them() -> None:
    """I6: replacing a closed snapshot's calls (pending ones dropped, decided ones forged) changes nothing exported."""
    closure, closed, first = _closed_pair()
    forged = dataclasses.replace(
        closed.calls[1], state="success", settlement=Settlement("success", "reported", "forged")
    )
    object.__setattr__(closed, "calls", (forged,))
    object.__setattr__(closed, "generation", 99)
    assert closure.to_openai_chat_completions(closed) == first
    assert closure.to_anthropic_tool_results(closed)[1]["is_error"] is True
    assert closure.snapshot().calls[1].state == "cancelled"  # type: ignore[union-attr]


def test_I6_a_field_holding_caller_code_is_never_read() -> None:
    """I6: a doctored field whose reading would run caller code is never read, so no caller code runs (under the
    lock or at all)."""
    closure, closed, first = _closed_pair()
    ran: list[str] = []

    class Hostile:
        def __iter__(self) -> Any:
            ran.append("iter")
            closure.snapshot()
            return iter(())

        def __bool__(self) -> bool:
            ran.append("bool")
            return True

    for field in ("calls", "closed", "close_reason", "generation"):
        object.__setattr__(closed, field, Hostile())
    for method in ("to_openai_chat_completions", "to_openai_responses", "to_anthropic_tool_results"):
        getattr(closure, method)(closed)
    assert ran == []
    assert closure.to_openai_chat_completions(closed) == first


def _export_all(closure: ToolCallClosure, snapshot: Snapshot) -> list[Any]:
    methods = (
        "to_openai_chat_completions",
        "to_openai_responses",
        "to_anthropic_tool_results",
        "to_gemini_function_responses",
        "to_bedrock_tool_results",
    )
    return [getattr(closure, method)(snapshot) for method in methods]


def test_I6_doctoring_what_is_inside_a_snapshot_reaches_no_export_and_no_later_snapshot() -> None:
    """I6/I3: the call records, settlements, diagnostics and close reason inside a snapshot are views of their own:
    ``object.__setattr__`` on any of them changes no export of that snapshot and nothing a later snapshot shows."""
    closure, handle = _open("abc", settled="a")
    closure.fail(handle, "b", "broken")
    closure.succeed(handle, "zz", "unknown id: a diagnostic")
    closed = closure.close(handle, {"status": "error", "code": "stopped", "message": "by the test"})
    assert isinstance(closed, Snapshot)
    exported = _export_all(closure, closed)
    later = to_json(closure.snapshot())
    for call in closed.calls:
        assert call.settlement is not None
        object.__setattr__(call, "id", "forged")
        object.__setattr__(call, "state", "success")
        for field in ("status", "content", "code", "message", "provenance"):
            object.__setattr__(call.settlement, field, "forged")
    object.__setattr__(closed.diagnostics[0], "reason", "forged")
    assert closed.close_reason is not None
    object.__setattr__(closed.close_reason, "message", "forged")
    assert _export_all(closure, closed) == exported
    assert to_json(closure.snapshot()) == later
    assert "forged" not in later


def test_I6_doctoring_an_accepted_settlement_reaches_nothing_the_instance_recorded() -> None:
    """I6: the settlement of an ``Accepted`` is the caller's own view: forging it changes no snapshot or export."""
    closure, handle = _open("ab")
    accepted = closure.succeed(handle, "a", "real")
    assert accepted.accepted
    object.__setattr__(accepted.settlement, "content", "forged")
    object.__setattr__(accepted.settlement, "status", "error")
    closed = closure.close(handle)
    assert isinstance(closed, Snapshot)
    assert closed.calls[0].settlement == Settlement("success", "reported", content="real")
    assert closure.to_openai_chat_completions(closed)[0]["content"] == "real"
    assert "is_error" not in closure.to_anthropic_tool_results(closed)[0]


def test_I6_a_nested_field_holding_caller_code_is_never_read() -> None:
    """I6: caller code planted in a call record or a settlement inside a snapshot never runs during an export."""
    closure, closed, first = _closed_pair()
    ran: list[str] = []

    class Hostile(str):
        def __eq__(self, other: object) -> bool:
            ran.append("eq")
            closure.snapshot()
            return True

        __hash__ = str.__hash__

    for call in closed.calls:
        object.__setattr__(call, "state", Hostile("success"))
        object.__setattr__(call, "settlement", Hostile("settlement"))
    assert closure.to_openai_chat_completions(closed) == first
    _export_all(closure, closed)
    assert ran == []


def test_the_record_goes_with_the_view() -> None:
    """The instance's records are kept exactly as long as the handed-out views (no growth)."""
    closure, handle = _open("a", settled="a")
    for _ in range(50):
        closure.snapshot()
    kept = closure.seal(handle)
    assert list(closure._records) == [id(kept)]


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("how", "operation"),
    [
        ("copy.copy", copy.copy),
        ("copy.deepcopy", copy.deepcopy),
        ("pickling", pickle.dumps),
        ("pickling", lambda closure: pickle.dumps(closure, protocol=0)),
    ],
)
def test_an_instance_cannot_be_copied_or_pickled(how: str, operation: Callable[[Any], Any]) -> None:
    """A copy would share the lock, run and registry (settling the original's calls): refused with a UsageError."""
    closure, _handle = _open("a")
    with pytest.raises(UsageError) as info:
        operation(closure)
    assert info.value.code == "closure_not_copyable"
    assert how in str(info.value)


def test_limits_attribute_assignment_raises_frozen_instance_error() -> None:
    """Limits, like every value, refuses any attribute write with FrozenInstanceError (not TypeError)."""
    limits = ToolCallClosure().limits
    for name in ("max_calls", "not_a_field"):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(limits, name, 5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        del limits.max_calls
    assert limits.max_calls == 1000


def test_every_error_the_library_raises_is_under_its_root() -> None:
    """Value writes, subclassing, copying and reentry all raise ToolCallClosureError subclasses."""
    with pytest.raises(ToolCallClosureError):
        Rejection("run_closed", None, None, None).reason = "x"  # type: ignore[misc]
    assert issubclass(FrozenValueError, dataclasses.FrozenInstanceError)
    with pytest.raises(ToolCallClosureError) as info:
        type("Sub", (ToolCallClosure,), {})
    assert isinstance(info.value, TypeError)
    assert info.value.code == "closure_final"
    with pytest.raises(ToolCallClosureError):
        copy.copy(ToolCallClosure())


def test_an_error_is_judged_by_its_real_class_not_a_claimed_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """Spec §3: ``fail``'s error is an exception only if ``type()`` says so; a ``__class__`` property never runs."""
    ran: list[str] = []

    class Claims:
        @property  # type: ignore[misc]
        def __class__(self) -> type:
            ran.append("__class__")
            return ValueError

        def __str__(self) -> str:
            return "plain object"

    converted: list[object] = []
    from tool_call_closure.machine import reading  # where error_message_text and message_text live

    monkeypatch.setattr(reading, "message_text", lambda value, default, limit: converted.append(value) or "m")
    assert semantics.error_message_text(Claims(), "default", 100) == "m"
    assert ran == []  # the claimed class was never asked for
    assert len(converted) == 1  # converted as a message, not formatted as an exception
