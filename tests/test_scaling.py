"""No operation does work that grows with the batch where it should not (no O(N²) lifecycle).

The work is counted, not timed: a tracer counts every Python line executed
inside the package (the interpreter's generated code, the semantics, values,
providers, ECMAScript rules) while a whole lifecycle runs.  A walk over the
batch done in C (``tuple(run.calls)``, ``list(...)``, ``sum(...)``) runs no
line of the package, so the run's call list is replaced by a list whose
iterator is Python code the tracer counts: every element any code iterates
over, in C or in Python, counts as one step.  Per announced call, the count
must be the same for a batch of 500 and a batch of 10,000 calls; a settle, a
rejection or an export that walked the batch would make the large
lifecycle's count 20 times larger per call (about 4·10⁸ steps, minutes of
work) and fail here.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import tool_call_closure
from tool_call_closure import create_tool_call_closure
from tool_call_closure.machine.context import Run

PACKAGE = str(Path(tool_call_closure.__file__).resolve().parent)
GENERATED = "<tool-call-closure machine "


class CountedList(list[Any]):
    """A list whose iteration runs Python code, so the tracer sees a C-level walk over it."""

    def __iter__(self) -> Any:
        for item in list.__iter__(self):  # noqa: UP028 - the loop is the point: one traced line per element
            yield item


COUNTED_CODE = CountedList.__iter__.__code__


@pytest.fixture(autouse=True)
def counted_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every call list stored in a run record (by whichever code builds the record) becomes a CountedList."""
    slot = Run.__dict__["calls"]

    def get(run: Run) -> Any:
        return slot.__get__(run, Run)

    def set_(run: Run, calls: list[Any]) -> None:
        slot.__set__(run, CountedList(calls))

    monkeypatch.setattr(Run, "calls", property(get, set_))


def _lines_executed(work: Callable[[], object]) -> int:
    """The number of Python lines of the package (and of the generated machine) that ``work`` executes."""
    count = 0

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return local

    def global_(frame: FrameType, event: str, arg: Any) -> Any:
        filename = frame.f_code.co_filename
        if filename.startswith((PACKAGE, GENERATED)) or frame.f_code is COUNTED_CODE:
            return local
        return None

    previous = sys.gettrace()
    sys.settrace(global_)
    try:
        work()
    finally:
        sys.settrace(previous)
    return count


def _lifecycle(n: int) -> Callable[[], object]:
    """Every operation on a batch of ``n``: supersede, settle, reject, snapshot, close, exports, seal."""
    calls = [{"id": f"call_{i}", "name": f"tool_{i % 7}"} for i in range(n)]
    c = create_tool_call_closure(max_calls=n, max_diagnostics=n)
    c.begin(calls)  # an open generation, so the measured begin supersedes it

    def work() -> None:
        handle = c.begin(calls).handle
        for i in range(n):
            if i % 10 == 1:
                c.fail(handle, f"call_{i}", ValueError("boom"))
            elif i % 10 == 2:
                c.cancel(handle, f"call_{i}", "stop")
            elif i % 10 == 3:
                c.settle(handle, f"call_{i}", {"status": "success", "content": {"i": i}})
            elif i % 10:
                c.succeed(handle, f"call_{i}", {"i": i, "ok": True, "text": "x" * 64})
        for i in range(0, n, 10):
            c.succeed(handle, f"call_{i}", "late") if i % 20 else c.succeed(handle, "unknown", "x")
        for i in range(1, n, 10):
            c.succeed(handle, f"call_{i}", "again")  # duplicates: rejected and recorded as diagnostics
        c.snapshot()
        closed = c.close(handle, {"status": "cancelled", "code": "timeout", "message": "deadline"})
        c.close(handle)  # idempotent
        c.to_openai_chat_completions(closed)
        c.to_openai_responses(closed)
        c.to_anthropic_tool_results(closed)
        c.succeed(handle, "call_0", "after close")
        sealed = c.begin(calls).handle
        for i in range(n):
            c.succeed(sealed, f"call_{i}", "ok")
        c.seal(sealed)

    return work


@pytest.mark.pure_machine  # counts Python lines: compiled code runs none (see conftest.py)
def test_the_work_per_call_of_a_lifecycle_does_not_grow_with_the_batch() -> None:
    small, large = 500, 10_000
    per_call_small = _lines_executed(_lifecycle(small)) / small
    per_call_large = _lines_executed(_lifecycle(large)) / large
    # Linear work gives equal figures (up to the per-lifecycle constant, spread over more calls); quadratic
    # work would give a 20x larger one.  5% leaves room for short ids becoming longer ones, nothing more.
    assert per_call_large <= per_call_small * 1.05, (per_call_small, per_call_large)
    assert per_call_small > 50  # the tracer saw the package's code (each call runs dozens of its lines)


@pytest.mark.pure_machine  # counts Python lines: compiled code runs none (see conftest.py)
def test_the_tracer_counts_work_that_grows_with_the_batch() -> None:
    """The measure can fail: a loop over the batch per settle shows up as quadratic growth."""

    def quadratic(n: int) -> Callable[[], object]:
        c = create_tool_call_closure(max_calls=n)
        calls = [{"id": f"c{i}", "name": "t"} for i in range(n)]

        def work() -> None:
            handle = c.begin(calls).handle
            for i in range(n):
                c.succeed(handle, f"c{i}", "ok")
                c.snapshot()  # a snapshot copies the batch: O(N) each, O(N²) in all

        return work

    assert _lines_executed(quadratic(400)) / 400 > 1.5 * _lines_executed(quadratic(100)) / 100
