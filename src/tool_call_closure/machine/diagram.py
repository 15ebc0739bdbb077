"""Mermaid state diagrams generated from the table.

The diagrams in ``spec/diagram.md`` and ``README.md`` are this module's
output; a test regenerates them and fails when a committed copy is stale.
Only rows that move a state are drawn (labelled with the operation and the
row id); rejections and idempotent returns leave the state where it is.
"""

from __future__ import annotations

from tool_call_closure.machine.table import Table

__all__ = ["mermaid"]


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
