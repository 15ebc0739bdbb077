"""Helpers for tests that run modified copies of the transition table."""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tool_call_closure import to_json
from tool_call_closure.closure import ToolCallClosure, _closure_with_machine
from tool_call_closure.conformance.subject import InProcessSubject
from tool_call_closure.machine.interpreter import Machine
from tool_call_closure.machine.table import TABLE_TEXT, Table, load_table

RAW: dict[str, Any] = json.loads(TABLE_TEXT)


def raw_table() -> dict[str, Any]:
    """A deep copy of the shipped table's JSON, to modify."""
    return copy.deepcopy(RAW)


def modified(change: Callable[[dict[str, Any]], object]) -> Table:
    """Load the shipped table after ``change`` edited a copy of its JSON (raises TableError if invalid)."""
    raw = raw_table()
    change(raw)
    return load_table(json.dumps(raw))


def closure_for(table: Table, **options: Any) -> ToolCallClosure:
    """A closure driven by ``table``."""
    return _closure_with_machine(Machine(table), **options)


def row(raw: dict[str, Any], row_id: str) -> dict[str, Any]:
    """The row with id ``row_id`` in a raw table."""
    return next(r for r in raw["transitions"] if r["id"] == row_id)


PROOFS = Path(__file__).resolve().parents[1] / "proofs"


def assert_bfs_agrees(explored: Machine, oracle: Machine, what: str) -> None:
    """Every transition the bounded model check explores on ``explored``, replayed on ``oracle`` from the same
    state: the same result or error, rows fired and state after; every row of the table fires."""
    sys.path.insert(0, str(PROOFS))
    try:
        import _explore as ex
    finally:
        sys.path.remove(str(PROOFS))

    bounds = ex.Bounds(calls=2, generations=2)
    compared = [0]

    def digest(outcome: Any, obs: Any) -> tuple[Any, ...]:
        error = outcome.error
        result = None if error is not None else (type(outcome.result).__name__, to_json(outcome.result))
        failure = None if error is None else (type(error).__name__, str(error))
        state = (obs.generation, obs.state, obs.calls, obs.close_reason, obs.diagnostics, obs.pending)
        return result, failure, tuple(outcome.trace or ()), state

    def visit(view: Any, _before: Any, action: Any, _after_world: Any, after: Any, outcome: Any) -> str | None:
        twin = view.clone()
        twin.closure._use_machine(oracle)
        replayed = ex.perform(twin, action, bounds, trace=True)
        assert replayed is not None
        compared[0] += 1
        if digest(outcome, after) != digest(replayed, ex.observe(twin)):
            return f"{what} disagree on {action}"
        return None

    stats, violation = ex.explore(explored, bounds, visit, lambda _obs: None, trace=True)
    assert violation is None, (violation.message, violation.path) if violation else None
    assert compared[0] == stats.transitions > 1000
    assert stats.rows == {r.id for r in explored.table.transitions}, "every row fired on the explored machine"


def transcript(machine: Machine, steps: list[dict[str, Any]]) -> list[tuple[list[str], list[str]]]:
    """Per step of a vector on ``machine``: the exact response lines and the row ids that fired."""
    trace: list[str] = []
    subject = InProcessSubject(machine, trace)
    out: list[tuple[list[str], list[str]]] = []
    for step in steps:
        trace.clear()
        subject.send(step["request"])
        out.append((subject.raw_lines(), list(trace)))
    return out
