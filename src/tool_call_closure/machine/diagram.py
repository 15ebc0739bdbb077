"""Renderings of the table for readers: Mermaid state diagrams and a one-row-per-line listing.

The diagrams in ``spec/diagram.md`` and ``docs/architecture.md`` and the
listing in ``spec/transitions.md`` are this module's output; tests
regenerate them and fail when a committed copy is stale (regenerate with
``UPDATE_DOCS=1 python -m pytest tests/test_docs.py``).  Only rows that move
a state are drawn in the diagrams (labelled with the operation and the row
id); rejections and idempotent returns leave the state where it is.  The
listing shows every row, in table order, which is the order the machine
tries them in.
"""

from __future__ import annotations

from tool_call_closure.machine.table import Row, Table

__all__ = ["mermaid", "transitions_markdown"]


def _run_edges(table: Table) -> dict[tuple[str, str], list[str]]:
    edges: dict[tuple[str, str], list[str]] = {}
    for row in table.transitions:
        effects = [table.effects[e] for e in row.effects]
        starts_new = any(e.writes == "new_run" for e in effects)
        for source in row.from_states:
            for effect in effects:
                if effect.run_to is not None:  # the current generation is closed by this effect
                    edges.setdefault((source, effect.run_to), []).append(f"{row.op} ({effect.id})")
            for target in row.to:
                label = row.op if len(row.to) == 1 else f"{row.op} {target}"
                edges.setdefault((source, target), []).append(label + (" (new generation)" if starts_new else ""))
    return edges


def mermaid(table: Table) -> str:
    """The run-state and call-state diagrams as one Markdown document."""
    lines = [
        "<!-- Generated from spec/machine.json by `tool-call-closure table --diagram`; do not edit. -->",
        "",
        "Generation (run) states:",
        "",
        "```mermaid",
        "stateDiagram-v2",
        f"    [*] --> {table.initial_run_state}",
    ]
    for (source, target), labels in _run_edges(table).items():
        unique = list(dict.fromkeys(labels))
        lines.append(f"    {source} --> {target}: {', '.join(unique)}")
    lines += ["```", "", "Call states:", "", "```mermaid", "stateDiagram-v2", f"    [*] --> {table.initial_call_state}"]
    for transition in table.call_transitions:
        lines.append(f"    {transition.from_state} --> {transition.to}: {transition.event}")
    for state in sorted(table.terminal_call_states):
        lines.append(f"    {state} --> [*]")
    lines += ["```", ""]
    return "\n".join(lines)


def _result_text(row: Row) -> str:
    if row.result is None:
        return ""
    text = f"{row.result.kind} `{row.result.name}`"
    if row.result.kind == "reject":
        text += f" (call id: {row.result.call_id}, observed: {row.result.observed})"
    return text


def _target_text(row: Row) -> str:
    if not row.to:
        return ""
    if row.to_by is not None:
        return f"{' or '.join(row.to)} (by `{row.to_by}`)"
    return row.to[0]


def transitions_markdown(table: Table) -> str:
    """Every row of the table on one line, operation by operation, in the order the machine tries them."""
    lines = [
        "# Transitions",
        "",
        "<!-- Generated from spec/machine.json by tests/test_docs.py (UPDATE_DOCS=1); do not edit. -->",
        "",
        f"Table version {table.version}. Each operation runs its phases in order; in each phase the first row",
        "whose run state (`from`, `*` for any) and guard match fires: its effects run in order, the run moves",
        "to its target (none: unchanged) and its result, if any, ends the operation. Rules name the",
        "catalogue (`spec/catalogue.json`) and deviations (`spec/deviations.json`).",
    ]
    for op, spec in table.operations.items():
        lines += ["", f"## `{op}`: {' → '.join(spec.phases)}", ""]
        lines.append("| row | phase | from | guard | effects | to | result | rules |")
        lines.append("|---|---|---|---|---|---|---|---|")
        for row in table.transitions:
            if row.op != op:
                continue
            states = "*" if set(row.from_states) == set(table.run_states) else ", ".join(row.from_states)
            cells = [
                f"`{row.id}`",
                row.phase,
                states,
                f"`{row.guard}`" if row.guard else "",
                ", ".join(f"`{effect}`" for effect in row.effects),
                _target_text(row),
                _result_text(row),
                ", ".join(row.catalogue),
            ]
            lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "## Call transitions", "", "| row | from | event | to |", "|---|---|---|---|"]
    for transition in table.call_transitions:
        lines.append(f"| `{transition.id}` | {transition.from_state} | {transition.event} | {transition.to} |")
    return "\n".join(lines) + "\n"
