"""The coverage gate: what the vectors exercise, against everything the spec says must be exercised.

Theory of operation
-------------------
Coverage is computed from what the reference *did* while producing each
vector's expectations (the ``covers`` of the vector: rows fired, call events,
rejection reasons, error codes and kinds) plus the vector's hand tags
(catalogue rules, invariants, deviations).  The required sets come from the
spec files: every row of ``spec/machine.json``, every call transition, every
rejection reason, every error kind a subject can report, every error code, every
invariant, every catalogue rule that can be expressed over the protocol
(``spec/catalogue.json``: ``vector``), and every deviation visible over the
protocol (``spec/deviations.json``).  A few items cannot be reached over the
protocol at all; they are listed in ``UNREACHABLE`` with the reason.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Final

from tool_call_closure.conformance.vectors import Vector
from tool_call_closure.machine.table import TABLE
from tool_call_closure.spec_files import spec_path

__all__ = ["UNREACHABLE", "coverage", "coverage_table"]

# Items no protocol conversation can reach, with the reason; they are exempt from the gate.
UNREACHABLE: Final = {
    "error:illegal_transition": "the table's default: no row is missing in the shipped table",
    "error:content_circular": "protocol values are JSON trees (hooks' values are decoded afresh), so content "
    "cannot contain itself; tests/test_ecma.py covers it",
    "kind:InternalError": "reported only by a defective subject",
    "error:reentrant_call": "Python only: raised when a finalizer, signal handler or weakref callback enters an "
    "instance inside a locked phase; tests/test_reliability.py covers it",
    "error:closure_not_copyable": "Python only: copy and pickling of an instance; tests/test_reliability.py covers it",
    "invariant:I9": "exceptions landing inside a commit are injected inside the process, not over the protocol; "
    "tests/test_reliability.py, tests/test_stateful.py and proofs/bfs_check.py --faults check it",
    "error:closure_final": "Python only: subclassing ToolCallClosure; tests/test_mutants.py covers it",
}


def _spec_json(name: str) -> dict[str, object]:
    return json.loads(spec_path(name).read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _required() -> dict[str, list[str]]:
    catalogue = _spec_json("catalogue.json")
    deviations = _spec_json("deviations.json")
    rules = [
        r["id"]
        for r in catalogue["rules"]  # type: ignore[attr-defined]
        if r.get("applies", True) and r.get("vector", True)
    ]
    visible = [d["id"] for d in deviations["deviations"] if d.get("protocol")]  # type: ignore[attr-defined]
    return {
        "row": [r.id for r in TABLE.transitions],
        "event": [t.event for t in TABLE.call_transitions],
        "reason": list(TABLE.reasons),
        "kind": ["TypeError", "RangeError", "CallerError", "ProtocolError", "InternalError"],
        "error": list(TABLE.errors),
        "invariant": list(TABLE.invariants),
        "rule": rules,
        "deviation": visible,
    }


def coverage(vectors: Sequence[Vector]) -> dict[str, dict[str, list[str]]]:
    """For each dimension: item -> ids of the vectors that cover it (empty list: uncovered)."""
    result: dict[str, dict[str, list[str]]] = {}
    tagged = [(v.id, v.all_tags()) for v in vectors]
    for dimension, items in _required().items():
        result[dimension] = {item: [vid for vid, tags in tagged if f"{dimension}:{item}" in tags] for item in items}
    return result


def coverage_table(vectors: Sequence[Vector]) -> tuple[str, bool]:
    """A printable coverage table, and whether every required item is covered (or exempt)."""
    lines = [f"coverage of {len(vectors)} vectors:", ""]
    lines.append(f"{'dimension':<10} {'covered':>8} {'required':>9}  missing")
    complete = True
    for dimension, items in coverage(vectors).items():
        missing = [i for i, ids in items.items() if not ids and f"{dimension}:{i}" not in UNREACHABLE]
        exempt = [i for i, ids in items.items() if not ids and f"{dimension}:{i}" in UNREACHABLE]
        covered = sum(1 for ids in items.values() if ids)
        required = len(items) - len(exempt)
        complete = complete and not missing
        lines.append(f"{dimension:<10} {covered:>8} {required:>9}  {', '.join(missing) if missing else '-'}")
    lines.append("")
    for item, why in UNREACHABLE.items():
        lines.append(f"exempt {item}: {why}")
    lines.append("")
    return "\n".join(lines), complete
