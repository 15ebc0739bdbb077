"""Deferred views: a snapshot's calls and diagnostics, an Accepted's settlement, a BeginResult's superseded snapshot.

Each is built on first read.

The instance hands out views of its records (values.py, "Records").  The
nested views of a snapshot and of an ``Accepted`` are often never read — an
agent loop passes the snapshot straight to an export, which renders the
records — so they are built when first read (``values._deferring``).  These
tests pin what that must not change: the values, one object per field for
every reader (threads and a reentrant read included), the dataclass surface
(fields, equality, hash, repr, replace, pickling), and the errors.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
import threading
from typing import Any

import pytest

from tool_call_closure import create_tool_call_closure, to_json
from tool_call_closure import values as values_module
from tool_call_closure.errors import FrozenValueError
from tool_call_closure.machine import context
from tool_call_closure.values import Accepted, BatchHandle, BeginResult, Settlement, Snapshot


def _closed_snapshot() -> Snapshot:
    closure = create_tool_call_closure()
    handle = closure.begin([{"id": "a", "name": "t"}, {"id": "b", "name": "t"}]).handle
    closure.succeed(handle, "a", {"n": 1})
    closure.succeed(handle, "zz", "unknown id: one diagnostic")
    snapshot = closure.close(handle, {"status": "cancelled", "code": "timeout", "message": "deadline"})
    assert isinstance(snapshot, Snapshot)
    return snapshot


def _is_built(view: object, field: str) -> bool:
    slot = getattr(type(view), field)  # the slot's own descriptor (a deferred field's wrapper gives it on the class)
    try:
        slot.__get__(view, type(view))
    except AttributeError:
        return False
    return True


def test_snapshot_calls_and_diagnostics_are_built_on_first_read_once() -> None:
    snapshot = _closed_snapshot()
    assert not _is_built(snapshot, "calls")
    assert not _is_built(snapshot, "diagnostics")
    calls = snapshot.calls
    assert _is_built(snapshot, "calls")
    assert _is_built(snapshot, "diagnostics")
    assert snapshot.calls is calls  # one object for every later read
    assert [(call.id, call.state) for call in calls] == [("a", "success"), ("b", "cancelled")]
    assert calls[0].settlement is not None
    assert calls[0].settlement.content == '{"n":1}'
    assert calls[1].settlement is not None
    assert calls[1].settlement.code == "timeout"
    assert [(d.reason, d.call_id) for d in snapshot.diagnostics] == [("unknown_call", "zz")]


def test_an_export_does_not_build_the_views() -> None:
    closure = create_tool_call_closure()
    handle = closure.begin([{"id": "a", "name": "t"}]).handle
    snapshot = closure.close(handle)
    assert isinstance(snapshot, Snapshot)
    closure.to_openai_chat_completions(snapshot)
    closure.to_anthropic_tool_results(snapshot)
    assert not _is_built(snapshot, "calls")


def test_accepted_settlement_is_built_on_first_read_once() -> None:
    closure = create_tool_call_closure()
    handle = closure.begin([{"id": "a", "name": "t"}]).handle
    accepted = closure.succeed(handle, "a", "ok")
    assert isinstance(accepted, Accepted)
    assert not _is_built(accepted, "settlement")
    settlement = accepted.settlement
    assert settlement is accepted.settlement
    assert settlement == Settlement("success", "reported", "ok", None, None, None)
    snapshot = closure.snapshot()
    assert snapshot is not None
    assert snapshot.calls[0].settlement == settlement
    assert snapshot.calls[0].settlement is not settlement  # every view has objects of its own


def test_an_unread_view_has_the_dataclass_surface_of_a_read_one() -> None:
    unread, read = _closed_snapshot(), _closed_snapshot()
    read.calls  # noqa: B018 (the read builds the fields)
    assert [field.name for field in dataclasses.fields(unread)] == [
        "generation",
        "closed",
        "close_reason",
        "calls",
        "diagnostics",
    ]
    assert not _is_built(unread, "calls")
    assert unread == read
    assert hash(unread) == hash(read)
    assert repr(_closed_snapshot()) == repr(read)
    for other in (dataclasses.replace(_closed_snapshot()), copy.deepcopy(_closed_snapshot())):
        assert other == read
    assert pickle.loads(pickle.dumps(_closed_snapshot())) == read


def test_writes_are_refused_before_and_after_the_first_read() -> None:
    snapshot = _closed_snapshot()
    with pytest.raises(FrozenValueError):
        snapshot.calls = ()  # type: ignore[misc]
    assert len(snapshot.calls) == 2
    with pytest.raises(FrozenValueError):
        snapshot.calls = ()  # type: ignore[misc]
    assert len(snapshot.calls) == 2


def test_a_missing_attribute_is_an_attribute_error_naming_it_and_builds_nothing() -> None:
    snapshot = _closed_snapshot()
    with pytest.raises(AttributeError, match="'Snapshot' object has no attribute 'cals'") as raised:
        snapshot.cals  # type: ignore[attr-defined]  # noqa: B018
    assert raised.value.name == "cals"
    assert not _is_built(snapshot, "calls")
    assert getattr(snapshot, "__deepcopy__", None) is None  # the protocol probes copy and pickle make


def test_a_snapshot_made_without_its_init_reports_its_unset_fields() -> None:
    bare = object.__new__(Snapshot)
    with pytest.raises(AttributeError, match="'Snapshot' object has no attribute 'calls'"):
        bare.calls  # noqa: B018


def test_every_thread_reading_a_fresh_view_first_gets_the_same_objects() -> None:
    for _ in range(20):
        snapshot = _closed_snapshot()
        barrier = threading.Barrier(8)
        seen: list[Any] = []

        def read(view: Snapshot = snapshot, barrier: threading.Barrier = barrier, seen: list[Any] = seen) -> None:
            barrier.wait()
            seen.append(view.calls)

        threads = [threading.Thread(target=read) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(seen) == 8
        assert all(calls is seen[0] for calls in seen)


def test_a_read_reentering_while_the_fields_are_built_sees_the_same_objects(monkeypatch: pytest.MonkeyPatch) -> None:
    """A signal handler of the building thread reading the same view: both reads agree (the RLock and the recheck)."""
    snapshot = _closed_snapshot()
    inner: list[Any] = []
    real_call_views = values_module.call_views

    def call_views_reading_the_view(records: Any) -> Any:
        if not inner:
            inner.append(None)
            inner.append(snapshot.calls)  # the reentrant read builds and sets the fields first
        return real_call_views(records)

    monkeypatch.setattr(values_module, "call_views", call_views_reading_the_view)
    outer = snapshot.calls
    assert inner[1] is outer  # the outer build found the fields set and kept them


def test_a_failed_build_sets_nothing_and_the_next_read_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    snapshot = _closed_snapshot()

    def failing(records: Any) -> Any:
        raise MemoryError

    monkeypatch.setattr(values_module, "diagnostic_views", failing)
    with pytest.raises(MemoryError):
        snapshot.calls  # noqa: B018
    assert not _is_built(snapshot, "calls")
    assert not _is_built(snapshot, "diagnostics")
    monkeypatch.undo()
    assert len(snapshot.calls) == 2
    assert len(snapshot.diagnostics) == 1


# --------------------------------------------------------------------------- BeginResult.superseded
# A superseding begin freezes the superseded generation's records at its commit; the snapshot (a view, and
# its record in the instance's identity registry) is built when ``superseded`` is first read
# (values._deferred_field, a descriptor: the result's other fields are read as plain slots).

_REASON = {"status": "cancelled", "code": "timeout", "message": "deadline"}


def _superseding(closure: Any) -> BeginResult:
    handle = closure.begin([{"id": "a", "name": "t"}, {"id": "b", "name": "t"}]).handle
    closure.succeed(handle, "a", {"n": 1})
    closure.succeed(handle, "zz", "unknown id: one diagnostic")
    result = closure.begin([{"id": "c", "name": "t"}])
    assert isinstance(result, BeginResult)
    return result


def test_the_superseded_snapshot_is_built_and_registered_on_first_read_once() -> None:
    closure = create_tool_call_closure()
    result = _superseding(closure)
    assert not _is_built(result, "superseded")
    registered = len(closure._records)
    superseded = result.superseded
    assert isinstance(superseded, Snapshot)
    assert _is_built(result, "superseded")
    assert result.superseded is superseded  # one object for every later read
    assert len(closure._records) == registered + 1  # registered for exports when built, not before
    assert closure._records[id(superseded)]() is superseded
    assert (superseded.generation, superseded.closed) == (1, True)
    assert [(call.id, call.state) for call in superseded.calls] == [("a", "success"), ("b", "cancelled")]
    assert [(d.reason, d.call_id) for d in superseded.diagnostics] == [("unknown_call", "zz")]
    assert closure.to_openai_chat_completions(superseded)[1]["tool_call_id"] == "b"


def test_a_begin_that_supersedes_nothing_has_none_set_and_builds_nothing() -> None:
    closure = create_tool_call_closure()
    result = closure.begin([{"id": "a", "name": "t"}])
    assert isinstance(result, BeginResult)
    assert _is_built(result, "superseded")
    assert result.superseded is None
    closure.close(result.handle)
    after_close = closure.begin([])  # a closed generation is not superseded
    assert isinstance(after_close, BeginResult)
    assert after_close.superseded is None


def test_the_superseded_snapshot_is_the_generation_as_it_was_at_the_commit() -> None:
    """Read long after the begin, with the instance moved on, it equals a snapshot read at once (records frozen)."""
    late, eager = create_tool_call_closure(), create_tool_call_closure()
    unread = _superseding(late)
    read_at_once = _superseding(eager)
    eager_snapshot = read_at_once.superseded
    assert eager_snapshot is not None
    late.succeed(unread.handle, "c", "ok")  # the live run moves on: settled, closed, superseded again
    late.close(unread.handle, _REASON)
    late.begin([{"id": "a", "name": "t"}, {"id": "b", "name": "t"}])
    late_snapshot = unread.superseded
    assert late_snapshot is not None
    assert late_snapshot == eager_snapshot
    assert to_json(unread) == to_json(read_at_once)
    for export in ("to_openai_chat_completions", "to_openai_responses", "to_anthropic_tool_results"):
        assert getattr(late, export)(late_snapshot) == getattr(eager, export)(eager_snapshot)


def test_an_unread_begin_result_has_the_dataclass_surface_of_a_read_one() -> None:
    read = _superseding(create_tool_call_closure())
    read.superseded  # noqa: B018 (the read builds the field)
    assert [field.name for field in dataclasses.fields(BeginResult)] == ["generation", "handle", "superseded"]
    unread = _superseding(create_tool_call_closure())
    assert repr(unread) == repr(read).replace(repr(read.handle), repr(unread.handle))
    for fresh in (_superseding(create_tool_call_closure()) for _ in range(4)):
        assert not _is_built(fresh, "superseded")
    copied = dataclasses.replace(fresh := _superseding(create_tool_call_closure()))
    assert copied.superseded == fresh.superseded
    assert copy.deepcopy(_superseding(create_tool_call_closure())).superseded == read.superseded
    assert pickle.loads(pickle.dumps(_superseding(create_tool_call_closure()))).superseded == read.superseded
    assert hash(unread) == hash(dataclasses.replace(unread))  # the handle is the same object: equal, same hash
    assert BeginResult.__match_args__ == ("generation", "handle", "superseded")


def test_begin_result_writes_are_refused_before_and_after_the_first_read() -> None:
    result = _superseding(create_tool_call_closure())
    for _ in range(2):
        with pytest.raises(FrozenValueError):
            result.superseded = None  # type: ignore[misc]
        with pytest.raises(FrozenValueError):
            del result.superseded  # type: ignore[misc]
        assert result.superseded is not None  # the second round: after the read


def test_a_begin_result_made_otherwise_reads_as_before() -> None:
    handle = BatchHandle(3)
    made = BeginResult(3, handle, None)  # the public constructor sets every field
    assert made.superseded is None
    assert made == BeginResult(3, handle, None)
    bare = object.__new__(BeginResult)
    with pytest.raises(AttributeError, match="'BeginResult' object has no attribute 'superseded'"):
        bare.superseded  # noqa: B018
    with pytest.raises(AttributeError, match="'BeginResult' object has no attribute 'supersede'"):
        _superseding(create_tool_call_closure()).supersede  # type: ignore[attr-defined]  # noqa: B018


def test_every_thread_reading_a_fresh_superseded_first_gets_the_same_snapshot_registered_once() -> None:
    for _ in range(20):
        closure = create_tool_call_closure()
        result = _superseding(closure)
        registered = len(closure._records)
        barrier = threading.Barrier(8)
        seen: list[Any] = []

        def read(view: BeginResult = result, barrier: threading.Barrier = barrier, seen: list[Any] = seen) -> None:
            barrier.wait()
            seen.append(view.superseded)

        threads = [threading.Thread(target=read) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(seen) == 8
        assert all(snapshot is seen[0] for snapshot in seen)
        assert len(closure._records) == registered + 1


def test_a_read_of_superseded_reentering_its_build_sees_the_same_snapshot(monkeypatch: pytest.MonkeyPatch) -> None:
    closure = create_tool_call_closure()
    result = _superseding(closure)
    inner: list[Any] = []
    real_snapshot_view = context.snapshot_view

    def snapshot_view_reading_the_result(*records: Any) -> Any:
        if not inner:
            inner.append(None)
            inner.append(result.superseded)  # the reentrant read builds and sets the field first
        return real_snapshot_view(*records)

    monkeypatch.setattr(context, "snapshot_view", snapshot_view_reading_the_result)
    outer = result.superseded
    assert inner[1] is outer  # the outer build found the field set and kept it
    assert closure._records[id(outer)]() is outer


def test_a_failed_build_of_superseded_registers_nothing_and_the_next_read_builds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    closure = create_tool_call_closure()
    result = _superseding(closure)
    registered = dict(closure._records)

    def failing(*records: Any) -> Any:
        raise MemoryError

    monkeypatch.setattr(context, "snapshot_view", failing)
    with pytest.raises(MemoryError):
        result.superseded  # noqa: B018
    assert not _is_built(result, "superseded")
    assert closure._records == registered
    monkeypatch.undo()
    superseded = result.superseded
    assert superseded is not None
    assert closure._records[id(superseded)]() is superseded


def test_on_end_receives_the_results_superseded_snapshot() -> None:
    closure = create_tool_call_closure()
    ended: list[tuple[Snapshot, str]] = []
    closure.begin([{"id": "a", "name": "t"}], on_end=lambda snapshot, how: ended.append((snapshot, how)))
    result = closure.begin([])
    assert isinstance(result, BeginResult)
    assert ended == [(result.superseded, "superseded")]
    assert ended[0][0] is result.superseded
