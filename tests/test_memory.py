"""Memory stays bounded by the limits, however many operations and generations go by (invariant I8).

The workload (``workload``) runs generation after generation on one instance with small limits: a begin of 1 to
``max_calls`` calls (now and then one call too many, refused), reported settlements in every form, rejections of
every kind — far more than ``max_diagnostics`` per generation —, ``seal`` while calls are pending, a snapshot per
generation kept in a bounded window (older ones dropped), ``close`` with a long message or supersession by the
next begin, exports of kept closed snapshots, ``active_generation``.

What is measured, and why this way:

* **a million operations** (``MILLION``) run *without* tracemalloc (under tracemalloc the closure runs ~10× slower,
  and a traced million would take minutes): every snapshot taken is checked against the limits, the registry of
  snapshots is checked to hold no more than the window, and ``sys.getallocatedblocks()`` (CPython's count of live
  memory blocks, no tracing needed) after the run is compared with its value after a warm-up;
* a **traced run** (``TRACED`` operations after a warm-up) checks with tracemalloc that the traced memory after the
  run is within a small constant of the memory after the warm-up, twice in a row, so growth proportional to the
  number of operations would show;
* the **registry** is checked to hold snapshots weakly: snapshots dropped by the caller (from ``snapshot()``,
  ``close``, ``seal`` and supersession) die.

The figures (operations, seconds, operations/s, blocks and bytes before/after) are printed (``pytest -s``).
``HYPOTHESIS_PROFILE=long`` runs ten times more operations.
"""

from __future__ import annotations

import collections
import gc
import os
import random
import sys
import time
import tracemalloc
import weakref
from collections.abc import Callable

import pytest

from tool_call_closure import Accepted, BatchHandle, LimitError, Rejection, Snapshot, ToolCallClosure

LONG = os.environ.get("HYPOTHESIS_PROFILE") == "long"
MILLION = 10_000_000 if LONG else 1_000_000
TRACED = 1_000_000 if LONG else 100_000
WARM_UP = 20_000
WINDOW = 16  # snapshots kept by the caller at any time
MAX_CALLS = 4
MAX_DIAGNOSTICS = 5
MAX_MESSAGE_BYTES = 64


def node_utf8_length(text: str) -> int:
    view = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return len(view.encode("utf-8", "surrogatepass"))


def check_snapshot(snapshot: Snapshot) -> None:
    """The state a snapshot shows is within the limits."""
    assert len(snapshot.calls) <= MAX_CALLS
    assert len(snapshot.diagnostics) <= MAX_DIAGNOSTICS
    reason = snapshot.close_reason
    if reason is not None and reason.message is not None:
        assert node_utf8_length(reason.message) <= MAX_MESSAGE_BYTES
    for call in snapshot.calls:
        if call.settlement is not None and call.settlement.message is not None:
            assert node_utf8_length(call.settlement.message) <= MAX_MESSAGE_BYTES


class Counters:
    def __init__(self) -> None:
        self.operations = 0
        self.generations = 0
        self.capped = 0  # generations whose diagnostics reached max_diagnostics


def workload(
    closure: ToolCallClosure,
    operations: int,
    rng: random.Random,
    kept: collections.deque[Snapshot],
    counters: Counters,
    check: Callable[[Snapshot], None] | None = check_snapshot,
) -> None:
    """Run at least ``operations`` operations (see the module docstring); ``kept`` is the caller's window."""
    target = counters.operations + operations
    previous: BatchHandle | None = None
    ops = 0
    while counters.operations + ops < target:
        generation = (closure.active_generation or 0) + 1
        if generation % 97 == 0:  # one call too many: refused before any entry is read
            with pytest.raises(LimitError):
                closure.begin([{"id": f"x{i}", "name": "t"} for i in range(MAX_CALLS + 1)])
            ops += 1
        count = rng.randint(1, MAX_CALLS)
        ids = [f"g{generation}.{i}" for i in range(count)]
        handle = closure.begin([{"id": call_id, "name": "tool"} for call_id in ids]).handle
        ops += 1
        form = generation % 4
        first = ids[0]
        if form == 0:
            result = closure.succeed(handle, first, {"generation": generation, "text": "x" * 50})
        elif form == 1:
            result = closure.fail(handle, first, RuntimeError("é" * 100), "E" * 8)
        elif form == 2:
            result = closure.cancel(handle, first, ["stop", generation])
        else:
            result = closure.settle(handle, first, {"status": "success", "content": [generation] * 3})
        assert type(result) is Accepted
        ops += 1
        for call_id in ids[1:-1]:
            assert type(closure.succeed(handle, call_id, call_id)) is Accepted
            ops += 1
        # rejections: far more than max_diagnostics per generation
        for _ in range(3):
            closure.succeed(handle, first, 1)  # duplicate_settlement
            closure.fail(handle, "nope")  # unknown_call
            closure.cancel(BatchHandle(generation), first)  # a look-alike: stale_generation
            ops += 3
        if previous is not None:
            closure.settle(previous, first, {"status": "error"})  # a superseded handle: stale_generation
            closure.close(previous)
            ops += 2
        if count > 2:
            assert type(closure.seal(handle)) is Rejection  # pending_calls
            ops += 1
        snapshot = closure.snapshot()
        ops += 1
        assert snapshot is not None
        if check is not None:
            check(snapshot)
        counters.capped += len(snapshot.diagnostics) == MAX_DIAGNOSTICS
        kept.append(snapshot)
        if generation % 3 == 0:
            closed = closure.close(handle, {"status": "error", "code": "deadline", "message": "late " * 40})
            ops += 1
            assert type(closed) is Snapshot
            if check is not None:
                check(closed)
            kept.append(closed)
        elif generation % 3 == 1 and count <= 2:
            if count == 2:
                closure.succeed(handle, ids[-1], "last")
                ops += 1
            sealed = closure.seal(handle)
            ops += 1
            assert type(sealed) is Snapshot
            kept.append(sealed)
        # otherwise the next begin supersedes it (its superseded snapshot is dropped at once)
        closed_ones = [s for s in kept if s.closed]
        if closed_ones and generation % 2 == 0:
            exported = closure.to_anthropic_tool_results(rng.choice(closed_ones))
            assert len(exported) >= 1
            ops += 1
        assert closure.active_generation == generation
        ops += 1
        previous = handle
        counters.generations += 1
    counters.operations += ops


def new_closure() -> ToolCallClosure:
    return ToolCallClosure(max_calls=MAX_CALLS, max_diagnostics=MAX_DIAGNOSTICS, max_message_bytes=MAX_MESSAGE_BYTES)


def live_blocks() -> int:
    gc.collect()
    return sys.getallocatedblocks()


@pytest.mark.slow
def test_a_million_operations_stay_within_the_limits() -> None:
    closure = new_closure()
    rng = random.Random(1)
    kept: collections.deque[Snapshot] = collections.deque(maxlen=WINDOW)
    counters = Counters()
    workload(closure, WARM_UP, rng, kept, counters)
    blocks_before = live_blocks()
    started = time.perf_counter()
    run = Counters()
    chunk = MILLION // 10
    registry_sizes = []
    while run.operations < MILLION:
        workload(closure, chunk, rng, kept, run)
        gc.collect()
        registry_sizes.append(len(closure._records))  # white box: the id -> snapshot record registry of this instance
    elapsed = time.perf_counter() - started
    blocks_after = live_blocks()
    print(
        f"\nmemory: {run.operations} operations over {run.generations} generations in {elapsed:.1f} s "
        f"({run.operations / elapsed:,.0f} operations/s); allocated blocks {blocks_before} -> {blocks_after} "
        f"({blocks_after - blocks_before:+}); registry sizes {sorted(set(registry_sizes))}; "
        f"{run.capped} generations hit max_diagnostics"
    )
    assert run.operations >= MILLION
    assert run.capped == run.generations  # every generation pushed its diagnostics to the cap
    assert max(registry_sizes) <= WINDOW  # after gc the registry holds only the caller's window
    assert blocks_after - blocks_before < 2_000  # no growth proportional to 10**6 operations


@pytest.mark.slow
def test_traced_memory_does_not_grow_with_the_number_of_operations() -> None:
    closure = new_closure()
    rng = random.Random(2)
    kept: collections.deque[Snapshot] = collections.deque(maxlen=WINDOW)
    counters = Counters()
    tracemalloc.start()
    try:
        workload(closure, WARM_UP, rng, kept, counters, check=None)
        gc.collect()
        after_warm_up = tracemalloc.get_traced_memory()[0]
        started = time.perf_counter()
        workload(closure, TRACED, rng, kept, counters, check=None)
        gc.collect()
        after_first = tracemalloc.get_traced_memory()[0]
        workload(closure, TRACED, rng, kept, counters, check=None)
        gc.collect()
        after_second, peak = tracemalloc.get_traced_memory()
        elapsed = time.perf_counter() - started
    finally:
        tracemalloc.stop()
    print(
        f"\ntraced memory: after warm-up {after_warm_up:,} B, after {TRACED:,} more operations {after_first:,} B "
        f"({after_first - after_warm_up:+,}), after {TRACED:,} more {after_second:,} B ({after_second - after_first:+,}); "
        f"peak {peak:,} B; {2 * TRACED / elapsed:,.0f} operations/s under tracemalloc"
    )
    # a leak of one byte per operation would be 100 000 bytes here
    assert after_first - after_warm_up < 32 * 1024
    assert after_second - after_first < 32 * 1024


def test_the_snapshot_registry_holds_snapshots_weakly() -> None:
    closure = new_closure()
    handle = closure.begin([{"id": "a", "name": "t"}, {"id": "b", "name": "t"}]).handle
    kept = closure.snapshot()
    assert kept is not None
    dropped = [weakref.ref(closure.snapshot()) for _ in range(100)]  # type: ignore[arg-type]
    superseded = closure.begin([{"id": "a", "name": "t"}]).superseded
    assert superseded is not None
    dropped.append(weakref.ref(superseded))
    del superseded
    handle = closure.begin([{"id": "a", "name": "t"}]).handle  # supersedes: that snapshot is never referenced
    closure.succeed(handle, "a", 1)
    dropped.append(weakref.ref(closure.seal(handle)))  # type: ignore[arg-type]
    dropped.append(weakref.ref(closure.close(handle)))  # type: ignore[arg-type]
    gc.collect()
    assert [ref for ref in dropped if ref() is not None] == []
    assert [record() for record in closure._records.values()] == [kept]  # white box: only the one still referenced
    # the kept one is still recognized as this instance's own
    with pytest.raises(Exception, match="sealed"):
        closure.to_openai_responses(kept)


@pytest.mark.parametrize("max_diagnostics", [1, 2, 100])
def test_diagnostics_never_exceed_max_diagnostics(max_diagnostics: int) -> None:
    closure = ToolCallClosure(max_diagnostics=max_diagnostics)
    for _ in range(3 * max_diagnostics):  # before the first begin: recorded, bounded, then discarded by begin
        closure.succeed(BatchHandle(1), "a", 1)
        assert len(closure._diagnostics) <= max_diagnostics  # white box: no snapshot exists yet
    old = closure.begin([{"id": "a", "name": "t"}]).handle
    snapshot = closure.snapshot()
    assert snapshot is not None
    assert snapshot.diagnostics == ()
    handle = closure.begin([{"id": "a", "name": "t"}, {"id": "b", "name": "t"}]).handle
    closure.succeed(handle, "a", 1)
    for _ in range(3 * max_diagnostics):
        closure.succeed(handle, "a", 2)
        closure.succeed(handle, "zz", 2)
        closure.succeed(old, "a", 2)
        closure.close(old)
        closure.seal(handle)
        snapshot = closure.snapshot()
        assert snapshot is not None
        assert len(snapshot.diagnostics) <= max_diagnostics
    closed = closure.close(handle)
    assert type(closed) is Snapshot
    assert len(closed.diagnostics) == max_diagnostics
    for _ in range(3 * max_diagnostics):  # after close, rejections keep accumulating, still bounded (DIAG-4)
        closure.succeed(handle, "b", 1)
    snapshot = closure.snapshot()
    assert snapshot is not None
    assert len(snapshot.diagnostics) == max_diagnostics
