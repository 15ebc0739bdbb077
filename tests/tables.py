"""Helpers for tests that run modified copies of the transition table."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from tool_call_closure.closure import ToolCallClosure, _closure_with_machine
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
