"""Fault injection: raise an exception at the k-th point of an operation's locked segments.

Theory of operation
-------------------
A commit must take effect as one step (spec/README.md §14, invariant I9):
whatever exception lands while an operation holds the instance's lock —
``RecursionError`` with the stack nearly exhausted, ``MemoryError``,
``KeyboardInterrupt``, an exception a signal handler raises — the instance is
left either exactly as it was (no generation number consumed) or, if the
exception landed after the one installing assignment, exactly as the
operation completes it.  Never half-written.

:func:`run_with_fault` runs one operation under ``sys.settrace`` with opcode
events and raises :class:`InjectedFault` at the k-th *point*: an opcode
executed while the instance's lock is held in a frame of the instance's own
code (the generated operations, the effects, guards, results, snapshot
building, the view builders) or of the standard library's ``weakref`` code
the registry runs — not in other code that happens to run then, such as a
test framework's garbage-collector callback, whose timing is the collector's
— except inside
``install`` (a check and the one assignment: the atomic step itself) and
the lock plumbing: the ``with lock:`` line of each generated operation
(acquiring the lock and registering its release is one opcode, and
releasing it at the end of the block runs with no interpreter check before
the C-level ``__exit__``) and the frames of ``Machine.walk`` (the row walk's
own ``with lock:``) and ``Machine.run``, which only dispatches.  Their safety
rests on there being no interpreter check inside them, not on surviving an
exception at every opcode; every other opcode of the generated operations,
and the rows the walk fires (``_fire``), is a point.  Opcode granularity is
finer than real asynchronous exceptions, which the interpreter delivers only
at calls and backward jumps, and covers every ``MemoryError`` an allocation
can raise.

A settlement's commit in a method copy (``machine.specialize``) is not a
call but the one item assignment ``run.calls[position] = call`` in the copy
itself: each opcode of that line is a point (a fault there leaves the state
as before), and the install counts as done from the frame's next opcode on,
once its ``STORE_SUBSCR`` (:func:`_is_install_store`) has run without a
fault.

The result says whether the fault fired and whether :func:`install
<tool_call_closure.machine.context.install>` had already run when it did; the
checkers (``tests/test_stateful.py``, ``proofs/bfs_check.py --faults``,
``tests/test_reliability.py``) compare the state after the fault with the
state before (install not reached) or with the state a clean run of the same
operation reaches (install done).  Sweeping k = 1, 2, … until the fault no
longer fires injects at every point of every commit.
"""

from __future__ import annotations

import _weakrefset
import dis
import linecache
import sys
import types
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import tool_call_closure
from tool_call_closure.machine import generated

__all__ = ["FaultRun", "InjectedFault", "run_with_fault", "sweep"]

_PACKAGE = tool_call_closure.__file__.rsplit("/", 1)[0]
# The interpreter's methods that acquire the lock (Machine.walk) or only dispatch (Machine.run).
_LOCK_PLUMBING = frozenset({"run", "walk"})
_GENERATED = "<tool-call-closure machine "  # a table compiled at import: its file name (machine/compiler.py)
_CHECKED_IN = generated.__file__  # the shipped table's compiled machine, checked in (machine/generated.py)
_OWN_GENERATED = "<tool-call-closure "  # the compiled table and the view builders (values.py)
_WEAKREF_FILES = frozenset({weakref.__file__, _weakrefset.__file__})  # the registry's WeakValueDictionary
_PLUMBING_LINE = "with lock:"  # a generated operation's acquisition and release of the lock
_INSTALLS = frozenset({"install", "install_fields", "install_diagnostic"})  # the one-assignment steps of context.py
_INLINE_INSTALL = "run.calls["  # a method copy's settlement commit: run.calls[position] = call (machine.specialize)
_STORE_SUBSCR = dis.opmap["STORE_SUBSCR"]


class InjectedFault(BaseException):
    """The exception raised at the chosen point."""


@dataclass
class FaultRun:
    """What one faulted run did."""

    fired: bool  # the fault was raised (k was within the operation's points)
    installed: bool  # install() had returned before the fault was raised
    points: int  # points counted (all of them, when the fault did not fire)
    result: Any = None
    error: BaseException | None = None


def _traced(frame: types.FrameType) -> bool:
    """The instance's own code and the weakref code it runs, but not the lock plumbing.

    Points are only counted while the lock is held.  Frames of other code that happens to run
    then — a test framework's garbage-collector callback, a profiler — are not points: they run
    when the cyclic collector decides, so counting them would make the k-th point differ from one
    run of the same operation to the next.
    """
    filename = frame.f_code.co_filename
    if filename.startswith(_PACKAGE):
        return not (filename.endswith("interpreter.py") and frame.f_code.co_name in _LOCK_PLUMBING)
    return filename.startswith(_OWN_GENERATED) or filename in _WEAKREF_FILES


def _is_plumbing_line(frame: types.FrameType) -> bool:
    """The opcode belongs to a generated operation's ``with lock:`` line (acquire, or release at block end)."""
    filename = frame.f_code.co_filename
    if not (filename.startswith(_GENERATED) or filename == _CHECKED_IN):
        return False
    return linecache.getline(filename, frame.f_lineno).strip() == _PLUMBING_LINE


def _is_install(frame: types.FrameType) -> bool:
    return frame.f_code.co_name in _INSTALLS and frame.f_code.co_filename.endswith("context.py")


def _is_install_store(frame: types.FrameType) -> bool:
    """The opcode about to run is the item assignment of a method copy's inline install (into the installed run)."""
    code = frame.f_code
    if code.co_code[frame.f_lasti] != _STORE_SUBSCR:
        return False
    if not (code.co_filename.startswith(_GENERATED) or code.co_filename == _CHECKED_IN):
        return False
    return linecache.getline(code.co_filename, frame.f_lineno).strip().startswith(_INLINE_INSTALL)


def run_with_fault(
    closure: Any,
    operation: Callable[[], Any],
    k: int,
    make: Callable[[], BaseException] = lambda: InjectedFault("injected"),
) -> FaultRun:
    """Run ``operation`` and raise ``make()`` at the k-th point (1-based) while ``closure``'s lock is held."""
    if closure._machine.origin == "compiled":  # no Python frame to step through: the sweep would prove nothing
        raise RuntimeError("the fault injector cannot enter compiled code: check I9 with TCC_MACHINE=pure")
    lock = closure._lock
    state = FaultRun(fired=False, installed=False, points=0)
    storing: list[types.FrameType] = []  # the frame whose inline install's item assignment is the opcode running

    def installing(frame: types.FrameType, event: str, arg: Any) -> Any:
        if event == "return":
            state.installed = True
        return installing

    def local(frame: types.FrameType, event: str, arg: Any) -> Any:
        if event != "opcode":
            return local
        if storing:  # the opcode before this one was an inline install's item assignment, and it ran
            assigned = storing.pop() is frame
            state.installed = state.installed or assigned
        if state.fired or not lock._is_owned() or _is_plumbing_line(frame):
            return local
        state.points += 1
        if state.points == k:
            state.fired = True
            raise make()
        if _is_install_store(frame):
            storing.append(frame)
        return local

    def global_(frame: types.FrameType, event: str, arg: Any) -> Any:
        if event != "call" or not _traced(frame):
            return None
        if _is_install(frame):
            return installing  # the one assignment: atomic by design, so no point inside it
        frame.f_trace_opcodes = True
        return local

    previous = sys.gettrace()
    sys.settrace(global_)
    try:
        state.result = operation()
    except BaseException as exc:  # noqa: BLE001 - the injected fault, or whatever it turned into
        state.error = exc
    finally:
        sys.settrace(previous)
    return state


def sweep(
    prepare: Callable[[], tuple[Any, Callable[[], Any]]],
    check: Callable[[Any, FaultRun], None],
    *,
    limit: int = 100_000,
    make: Callable[[], BaseException] = lambda: InjectedFault("injected"),
) -> int:
    """Inject at every point: for k = 1, 2, … build a fresh (closure, operation), fault it, check it.

    Stops at the first k whose fault does not fire; returns the number of faults injected.
    """
    for k in range(1, limit + 1):
        closure, operation = prepare()
        run = run_with_fault(closure, operation, k, make)
        if not run.fired:
            return k - 1
        check(closure, run)
    raise AssertionError(f"more than {limit} injection points")
