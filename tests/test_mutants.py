"""Tests written to kill surviving mutants (proofs/README.md §9).

Each test pins an observable behaviour that a mutant changed without any
other test noticing: compilation done afresh (not only at import), the texts of
errors a user sees, where the table is read from.  The equivalent mutants that
remain are listed, with reasons, in proofs/README.md §9.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tables import closure_for, modified
from tool_call_closure import TableError, ToolCallClosure, UsageError, spec_files
from tool_call_closure.conformance.conform import run_conformance
from tool_call_closure.conformance.subject import InProcessSubject, Subject
from tool_call_closure.conformance.vectors import load_vectors
from tool_call_closure.ecma import to_js_string
from tool_call_closure.ecma_json import json_stringify
from tool_call_closure.machine import table as _table
from tool_call_closure.machine.interpreter import MACHINE, Machine
from tool_call_closure.machine.table import TABLE, load_table
from tool_call_closure.values import BatchHandle, CloseReason


class _FreshlyCompiled:
    """A subject spec whose reference runs a Machine compiled in the test, not the one built at import."""

    command = None
    timeout = 10.0

    def start(self) -> Subject:
        return InProcessSubject(Machine(load_table()))

    def describe(self) -> str:
        return "reference compiled in the test"


def test_a_machine_compiled_afresh_passes_every_vector() -> None:
    # The shipped MACHINE is compiled once at import; this compiles the table again inside the test,
    # so a defect in compilation (row results, call-id rejections, phase grouping) fails here.
    vectors = load_vectors()
    run = run_conformance(vectors, _FreshlyCompiled())  # type: ignore[arg-type]
    failed = [(r.vector_id, r.message) for r in run.results if r.outcome != "passed"]
    assert failed == []
    assert len(run.results) == len(vectors) > 200


def test_load_table_without_text_reads_the_shipped_table() -> None:
    assert load_table() == TABLE


def test_text_that_is_not_json_is_refused_with_its_position() -> None:
    with pytest.raises(TableError) as info:
        load_table("{ not json")
    assert info.value.code == "table_invalid"
    assert str(info.value).startswith("invalid transition table: not JSON: Expecting property name")


def test_table_is_read_from_the_package_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    packaged = tmp_path / "_spec" / "machine.json"
    packaged.parent.mkdir()
    packaged.write_text("{}", encoding="utf-8")

    class Resources:
        @staticmethod
        def files(package: str) -> Path:
            assert package == "tool_call_closure"
            return tmp_path

    monkeypatch.setattr(spec_files, "resources", Resources)
    assert _table.table_path() == packaged


def test_table_falls_back_to_the_source_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class Resources:
        @staticmethod
        def files(package: str) -> Path:
            return tmp_path  # holds no _spec/machine.json

    monkeypatch.setattr(spec_files, "resources", Resources)
    assert _table.table_path() == Path(__file__).resolve().parents[1] / "spec" / "machine.json"
    monkeypatch.setattr(spec_files, "__file__", str(tmp_path / "a" / "b" / "spec_files.py"))
    with pytest.raises(TableError) as info:
        _table.table_path()
    assert str(info.value) == ("transition table not found: neither the package's _spec/ nor spec/ holds machine.json")


def test_the_default_error_names_the_operation_and_the_current_state() -> None:
    def change(raw: dict[str, Any]) -> None:
        raw["transitions"] = [r for r in raw["transitions"] if r["id"] != "snapshot.commit.take"]
        raw["defaulted"] += [{"state": s, "op": "snapshot"} for s in ("open", "complete", "error", "cancelled")]

    closure = closure_for(modified(change))
    handle = closure.begin([{"id": "a", "name": "t"}]).handle
    with pytest.raises(UsageError) as info:
        closure.snapshot()
    assert str(info.value) == "no transition for snapshot in state open"
    closure.close(handle)
    with pytest.raises(UsageError, match=r"^no transition for snapshot in state cancelled$"):
        closure.snapshot()


def test_subclassing_is_refused_with_a_message() -> None:
    with pytest.raises(TypeError) as info:

        class Mine(ToolCallClosure):  # type: ignore[misc]
            pass

    assert str(info.value) == "ToolCallClosure is final and cannot be subclassed"


@pytest.mark.parametrize("name", ["generation", "other"])
def test_value_writes_are_refused_with_the_name(name: str) -> None:
    handle = ToolCallClosure().begin([]).handle
    with pytest.raises(dataclasses.FrozenInstanceError) as assigned:
        setattr(handle, name, 2)
    assert str(assigned.value) == f"cannot assign to field {name!r}"
    with pytest.raises(dataclasses.FrozenInstanceError) as deleted:
        delattr(handle, name)
    assert str(deleted.value) == f"cannot delete field {name!r}"
    assert isinstance(handle, BatchHandle)
    assert handle.generation == 1


def test_close_reason_writes_are_refused() -> None:
    reason = CloseReason("cancelled", "c", "m", "unknown")
    with pytest.raises(dataclasses.FrozenInstanceError, match=r"^cannot assign to field 'code'$"):
        reason.code = "d"  # type: ignore[misc]
    assert reason.code == "c"


# --------------------------------------------------------------------------- ECMAScript conversions (ecma, ecma_json)


def _notes(value: object) -> list[str]:
    with pytest.raises(UsageError) as info:
        json_stringify(value)
    assert info.value.code == "content_not_serializable"
    return list(getattr(info.value, "__notes__", []))


class _Items(Mapping[str, Any]):
    """A mapping whose items() yields what it was given (a broken mapping)."""

    def __init__(self, items: list[Any]) -> None:
        self._items = items

    def __getitem__(self, key: str) -> Any:
        return 1

    def __len__(self) -> int:
        return 1

    def __iter__(self) -> Iterator[str]:
        return iter(["a"])

    def items(self) -> Any:
        return self._items


class _Hooked:
    def __json__(self) -> list[object]:
        return [1, object()]


@pytest.mark.parametrize(
    ("value", "note"),
    [
        ({1: "x"}, "key 1 (type int) (object keys must be str) at content"),
        ({None: "x"}, "key None (type NoneType) (object keys must be str) at content"),
        ({(1, 2): "x"}, "a key of type tuple (object keys must be str) at content"),
        ({"k": _Items([1])}, '_Items.items() yielding int at content["k"]'),
        ({"k": _Items([("a", 1, 2)])}, '_Items.items() yielding tuple at content["k"]'),
        # the path runs through a replaced value (its frame has no brackets of its own)
        ({"a": _Hooked()}, 'unsupported type builtins.object at content["a"][1]'),
        (10**5000, "an int with more digits than int_max_str_digits allows cannot be converted"),
    ],
    ids=["int-key", "none-key", "tuple-key", "items-int", "items-triple", "through-hook", "huge-int"],
)
def test_refusal_notes_say_what_and_where(value: object, note: str) -> None:
    assert _notes(value) == [note]


def test_integer_like_keys_come_first_in_numeric_order() -> None:
    # "99" and "5" are array indices: ECMAScript orders them numerically, before the other keys.
    assert json_stringify({"b": 1, "99": 2, "5": 3, "10": 4}) == '{"5":3,"10":4,"99":2,"b":1}'


def test_a_nested_array_containing_itself_joins_as_empty() -> None:
    inner: list[Any] = [1]
    inner.append(inner)
    assert to_js_string([inner, 2]) == "1,,2"


def test_a_str_subclass_returned_by_str_is_read_as_its_plain_value() -> None:
    class Loud(str):
        def __str__(self) -> str:
            return "overridden"

    class Value:
        def __str__(self) -> str:
            return Loud("plain")

    text = to_js_string(Value())
    assert text == "plain"
    assert type(text) is str


def test_joining_works_on_a_new_thread() -> None:
    # The join stack is per thread; a thread that never joined before gets a fresh one.
    out: list[str] = []
    worker = threading.Thread(target=lambda: out.append(to_js_string([1, [2, 3]])))
    worker.start()
    worker.join()
    assert out == ["1,2,3"]


# --------------------------------------------------------------------------- validator corners (_table)


def _refusal(change: Any) -> str:
    with pytest.raises(TableError) as info:
        modified(change)
    return str(info.value)


def test_only_an_unguarded_row_with_a_result_covers_a_pair() -> None:
    # seal.commit.seal guarded: (open, seal) is then ended only by guarded rows, which do not cover it.
    def change(raw: dict[str, Any]) -> None:
        next(r for r in raw["transitions"] if r["id"] == "seal.commit.seal")["guard"] = "handle_not_current"

    assert _refusal(change) == (
        "invalid transition table: transitions: missing pair (open, seal): no unguarded row ends it "
        "and it is not listed in defaulted"
    )


def test_an_unlocked_row_may_not_move_the_state() -> None:
    def change(raw: dict[str, Any]) -> None:
        validate = next(r for r in raw["transitions"] if r["id"] == "begin.prepare.validate")
        validate.update({"from": ["open"], "to": "open", "result": {"return": "begin_result"}})

    assert _refusal(change) == (
        "invalid transition table: transitions.begin.prepare.validate: "
        "unlocked phase 'prepare' cannot move the state or reject"
    )


def test_a_pair_defaulted_for_another_operation_does_not_excuse_this_one() -> None:
    # (complete|error|cancelled, active_generation) are defaulted; close still needs its recheck row.
    def change(raw: dict[str, Any]) -> None:
        raw["transitions"] = [r for r in raw["transitions"] if r["id"] != "close.recheck.closed"]
        next(r for r in raw["transitions"] if r["id"] == "active_generation.commit.current")["from"] = ["open"]
        raw["defaulted"] += [{"state": s, "op": "active_generation"} for s in ("complete", "error", "cancelled")]

    assert _refusal(change).startswith(
        "invalid transition table: transitions: missing pair (cancelled, close) after phase 'normalize'"
    )


def test_a_state_entered_only_from_itself_is_unreachable() -> None:
    def change(raw: dict[str, Any]) -> None:
        raw["run_states"].append({"id": "archived"})
        raw["transitions"].append(
            {
                "id": "seal.commit.archived",
                "op": "seal",
                "phase": "commit",
                "from": ["archived"],
                "to": "archived",
                "result": {"return": "snapshot"},
            }
        )

    assert _refusal(change) == "invalid transition table: run_states: state 'archived' is unreachable from 'none'"


# --------------------------------------------------------------------------- reading caller values (_semantics)


class _Status(str):
    __slots__ = ()


def test_a_str_subclass_status_outside_the_allowed_set_is_observed_as_invalid() -> None:
    closure = ToolCallClosure()
    handle = closure.begin([{"id": "a", "name": "t"}]).handle
    closure.close(handle)
    bogus = closure.settle(handle, "a", {"status": _Status("bogus")})
    assert bogus.observed_status == "invalid"
    success = closure.settle(handle, "a", {"status": _Status("success")})
    assert success.observed_status == "success"
    assert type(success.observed_status) is str


def test_repr_names_the_generation_and_its_state() -> None:
    closure = ToolCallClosure()
    assert repr(closure) == "<ToolCallClosure none>"
    handle = closure.begin([{"id": "a", "name": "t"}]).handle
    assert repr(closure) == "<ToolCallClosure generation 1 open>"
    closure.close(handle)
    assert repr(closure) == "<ToolCallClosure generation 1 cancelled>"


def test_consecutive_locked_phases_share_one_lock_acquisition() -> None:
    # spec/README.md §2: a recheck and its commit are atomic because they run under one acquisition.
    machine = Machine(load_table())
    shape = {op: [(locked, len(phases)) for locked, phases in plan] for op, plan in machine.plans.items()}
    assert shape["settle"] == [(False, 1), (True, 1), (False, 1), (True, 2)]
    assert shape["close"] == [(False, 1), (True, 1), (False, 1), (True, 2)]
    assert shape["snapshot"] == [(True, 1)]


def test_a_machine_compiled_afresh_traces_the_same_rows() -> None:
    # Compiled rows keep their table row (the trace and the coverage gate read its id).
    requests = [
        {"id": 1, "cmd": "new"},
        {"id": 2, "cmd": "call", "method": "begin", "args": [[{"id": "a", "name": "t"}]]},
        {"id": 3, "cmd": "call", "method": "seal", "args": [{"$handle": 1}]},
    ]
    traces: list[list[str]] = [[], []]
    for machine, trace in zip((MACHINE, Machine(load_table())), traces, strict=True):
        subject = InProcessSubject(machine, trace)
        for request in requests:
            subject.send(request)
    assert traces[0] == traces[1]
    assert "seal.admit.pending" in traces[1]
