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
from dataclasses import dataclass
from typing import Any, Final

from tool_call_closure.conformance.vectors import Vector
from tool_call_closure.errors import ToolCallClosureError
from tool_call_closure.machine.table import TABLE
from tool_call_closure.spec_files import spec_path

__all__ = [
    "EQUIVALENT",
    "NEEDS_CAPABILITY",
    "UNREACHABLE",
    "Mutant",
    "coverage",
    "coverage_table",
    "kill_coverage",
    "kill_report",
    "table_mutants",
]

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


# Catalogue rules that no vector can show without an optional capability, with the reason; every other rule
# must be covered by at least one vector that requires nothing (a port without hooks still checks it).
_CALLER_CODE: Final = "only caller code running inside an operation (the hook capability) can reach it"
NEEDS_CAPABILITY: Final = {
    **{f"RE-{n}": _CALLER_CODE for n in range(1, 11)},
    "BEG-5": _CALLER_CODE,
    "SET-9": _CALLER_CODE,
    "CLO-5": _CALLER_CODE,
    "SNAP-3": "only a subject that tries to modify a returned value (the tamper capability) can show it",
    "IMM-1": "only a subject that tries to modify a returned value (the tamper capability) can show it",
}

# Mutants of the table no protocol conversation can tell from the table itself, with the reason.
EQUIVALENT: Final = {
    "observed normalized instead": "before normalization there is no normalized status: the interpreter reports "
    "the preview, so the rejection is the same",
    "observed preview instead": "the preview and the normalized status are two reads of the same outcome "
    "status; over the protocol a hook's then is fixed, so both reads give the same value",
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
    found = coverage(vectors)
    plain = {v.id for v in vectors if not v.requires}
    # The same rules again, counting only the vectors that need no optional capability.
    found["plainrule"] = {
        rule: [vid for vid in ids if vid in plain]
        for rule, ids in found["rule"].items()
        if rule not in NEEDS_CAPABILITY
    }
    for dimension, items in found.items():
        missing = [i for i, ids in items.items() if not ids and f"{dimension}:{i}" not in UNREACHABLE]
        exempt = [i for i, ids in items.items() if not ids and f"{dimension}:{i}" in UNREACHABLE]
        covered = sum(1 for ids in items.values() if ids)
        required = len(items) - len(exempt)
        complete = complete and not missing
        lines.append(f"{dimension:<10} {covered:>8} {required:>9}  {', '.join(missing) if missing else '-'}")
    lines.append("")
    for item, why in UNREACHABLE.items():
        lines.append(f"exempt {item}: {why}")
    lines.append(
        "plainrule: a rule covered by a vector that needs no capability; exempt, because "
        + _CALLER_CODE
        + ": "
        + ", ".join(r for r, why in NEEDS_CAPABILITY.items() if why == _CALLER_CODE)
        + "; because only the tamper capability shows it: SNAP-3, IMM-1"
    )
    lines.append("")
    return "\n".join(lines), complete


# --------------------------------------------------------------------------- kill-based coverage


@dataclass(frozen=True, slots=True)
class Mutant:
    """One way of breaking one row of the table: ``raw`` is the whole mutated table."""

    row: str
    operator: str
    raw: dict[str, Any]


def _alternatives(row: dict[str, Any], reasons: Sequence[str], returns: Sequence[str]) -> list[tuple[str, Any]]:
    """(operator, mutated row or None for 'delete') for one row of the table."""
    found: list[tuple[str, Any]] = [("delete the row", None)]
    result = row.get("result") or {}
    if "reject" in result:
        other = reasons[(reasons.index(result["reject"]) + 1) % len(reasons)]
        found.append((f"reject {other} instead", {**row, "result": {**result, "reject": other}}))
        for key, values in (("observed", ("none", "preview", "normalized")), ("call_id", ("none", "argument"))):
            if key in result:
                for value in values:
                    if value != result[key]:
                        found.append((f"{key} {value} instead", {**row, "result": {**result, key: value}}))
    if "return" in result:
        for value in returns:
            if value != result["return"]:
                found.append((f"return {value} instead", {**row, "result": {"return": value}}))
    if "raise" in result:
        found.append(("return a snapshot instead", {**row, "result": {"return": "snapshot"}}))
    effects = row.get("effects") or []
    for index, effect in enumerate(effects):
        found.append((f"skip effect {effect}", {**row, "effects": [e for i, e in enumerate(effects) if i != index]}))
    return found


def table_mutants() -> list[Mutant]:
    """Every valid single-row mutant of the shipped table (an invalid one is refused by the loader and left out)."""
    from tool_call_closure.machine.interpreter import Machine
    from tool_call_closure.machine.table import TABLE_TEXT, parse_table

    text = TABLE_TEXT
    base = json.loads(text)
    reasons = [r["id"] if isinstance(r, dict) else r for r in base["reasons"]]
    returns = [r["id"] for r in base["results"]]
    mutants = []
    for index, row in enumerate(base["transitions"]):
        for operator, replacement in _alternatives(row, reasons, returns):
            raw = json.loads(text)
            if replacement is None:
                del raw["transitions"][index]
            else:
                raw["transitions"][index] = replacement
            try:
                Machine(parse_table(raw))
            except ToolCallClosureError:
                continue
            mutants.append(Mutant(row["id"], operator, raw))
    return mutants


def _fails(vector: Vector, machine: Any) -> bool:
    from tool_call_closure.conformance.compare import diff_responses
    from tool_call_closure.conformance.subject import InProcessSubject

    subject = InProcessSubject(machine)
    try:
        return any(diff_responses(step["responses"], subject.send(step["request"])) for step in vector.steps)
    except Exception:  # noqa: BLE001 - a mutant the reference cannot even serve is killed
        return True


def kill_coverage(vectors: Sequence[Vector], rows: Sequence[str] | None = None) -> dict[str, dict[str, list[str]]]:
    """Row id -> operator -> the ids of the vectors that fail when the row is broken that way."""
    from tool_call_closure.machine.interpreter import Machine
    from tool_call_closure.machine.table import parse_table

    killed: dict[str, dict[str, list[str]]] = {}
    for mutant in table_mutants():
        if rows is not None and mutant.row not in rows:
            continue
        machine = Machine(parse_table(mutant.raw))
        killed.setdefault(mutant.row, {})[mutant.operator] = [v.id for v in vectors if _fails(v, machine)]
    return killed


def kill_report(vectors: Sequence[Vector]) -> tuple[str, bool]:
    """Per row and per catalogue rule: the vectors that fail when it is broken; and whether every mutant dies.

    A rule's killers are those of the rows that implement it (the rows' ``catalogue``); a rule no row names is
    checked by the vectors tagged with it, which this report cannot mutate.
    """
    killed = kill_coverage(vectors)
    plain = {v.id for v in vectors if not v.requires}
    lines = [f"kill-based coverage of {len(vectors)} vectors: each table row broken every way the loader accepts", ""]
    complete = True
    for row in TABLE.transitions:
        operators = killed.get(row.id, {})
        union = sorted({vid for ids in operators.values() for vid in ids})
        survivors = [op for op, ids in operators.items() if not ids and op not in EQUIVALENT]
        equivalent = [op for op, ids in operators.items() if not ids and op in EQUIVALENT]
        complete = complete and not survivors and bool(operators)
        without = sorted(set(union) & plain)
        lines.append(
            f"row {row.id}: {len(operators)} mutant(s), killed by {len(union)} vector(s)"
            f" ({len(without)} need no capability)"
            + (f"; SURVIVES: {', '.join(survivors)}" if survivors else "")
            + (f"; equivalent: {', '.join(equivalent)}" if equivalent else "")
        )
        lines.append("    " + (", ".join(union[:8]) + (f" … (+{len(union) - 8})" if len(union) > 8 else "") or "-"))
    lines.append("")
    by_rule: dict[str, set[str]] = {}
    for row in TABLE.transitions:
        for rule in row.catalogue:
            by_rule.setdefault(rule, set()).update(vid for ids in killed.get(row.id, {}).values() for vid in ids)
    for rule in sorted(by_rule):
        ids = sorted(by_rule[rule])
        lines.append(f"rule {rule}: killed by {len(ids)} vector(s): {', '.join(ids[:6])}{' …' if len(ids) > 6 else ''}")
    tag_only = sorted(set(_required()["rule"]) - set(by_rule))
    lines.append(f"rules no row implements (checked by the vectors tagged with them): {', '.join(tag_only)}")
    for operator, why in EQUIVALENT.items():
        lines.append(f"equivalent mutant '{operator}': {why}")
    lines.append("")
    return "\n".join(lines), complete
