"""Generated documentation stays current, and the README's commands are the ones CI runs.

Regenerate with ``UPDATE_DOCS=1 python -m pytest tests/test_docs.py``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from tool_call_closure.machine.diagram import mermaid, transitions_markdown
from tool_call_closure.machine.table import TABLE

ROOT = Path(__file__).resolve().parents[1]
START, END = "<!-- diagram:start -->", "<!-- diagram:end -->"


def _check_or_update(path: Path, expected: str) -> None:
    if os.environ.get("UPDATE_DOCS"):
        path.write_text(expected, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == expected, f"{path.name} is stale: run UPDATE_DOCS=1 pytest {__file__}"


def test_spec_diagram_is_generated_from_the_table() -> None:
    _check_or_update(ROOT / "spec" / "diagram.md", "# State diagrams\n\n" + mermaid(TABLE))


def test_spec_transitions_listing_is_generated_from_the_table() -> None:
    _check_or_update(ROOT / "spec" / "transitions.md", transitions_markdown(TABLE))


def test_the_transitions_listing_has_every_row_once_in_table_order() -> None:
    from tables import modified, row

    listed = re.findall(r"^\| `([a-z_]+\.[a-z_]+\.[a-z_.]+)` \|", transitions_markdown(TABLE), flags=re.M)
    assert listed == [r.id for r in TABLE.transitions]
    changed = modified(lambda raw: row(raw, "close.commit.close").update(to=["error", "cancelled", "complete"]))
    assert "error or cancelled or complete" in transitions_markdown(changed)
    assert "error or cancelled or complete" not in transitions_markdown(TABLE)


def test_the_architecture_pages_diagram_is_generated_from_the_table() -> None:
    page = ROOT / "docs" / "architecture.md"
    before, rest = page.read_text(encoding="utf-8").split(START)
    _, after = rest.split(END)
    _check_or_update(page, f"{before}{START}\n{mermaid(TABLE)}{END}{after}")


def test_a_changed_table_changes_the_diagram() -> None:
    from tables import modified, row

    changed = modified(lambda raw: row(raw, "close.commit.close").update(to=["error", "cancelled", "complete"]))
    assert "open --> complete: close complete, seal" in mermaid(changed)
    assert "open --> complete: seal\n" in mermaid(TABLE)


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = re.findall(r"^(python -m pip install .+?)\s+#", readme, flags=re.M)
    assert len(commands) == 2, commands
    test_command = commands[1].strip()
    assert "pytest" in test_command
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test_command in ci.splitlines()
