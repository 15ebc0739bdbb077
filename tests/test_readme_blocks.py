"""Every Python block in the README and in ``docs/`` runs; each provider's agent-loop block is short.

``tests/test_typing.py`` checks every block with ``mypy --strict`` (the SDKs
are pinned dev dependencies).  The provider blocks define functions only, so
running them checks their imports and definitions at run time.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCKS = [
    block
    for page in PAGES
    for block in re.findall(r"^```python\n(.*?)^```$", page.read_text(encoding="utf-8"), flags=re.S | re.M)
]


def _agent_loop_blocks() -> list[str]:
    providers = (ROOT / "docs" / "providers.md").read_text(encoding="utf-8")
    section = providers.split("## Agent loops", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^```python\n(.*?)^```$", section, flags=re.S | re.M)


def test_the_readme_has_the_quick_start_and_one_agent_loop_and_docs_one_per_provider() -> None:
    readme_blocks = re.findall(r"^```python\n(.*?)^```$", README, flags=re.S | re.M)
    assert len(readme_blocks) == 2
    assert "providers import openai_chat" in readme_blocks[1]
    loops = _agent_loop_blocks()
    for module in ("openai_chat", "openai_responses", "anthropic", "gemini", "bedrock"):
        assert sum(f"providers import {module}" in block for block in loops) == 1, module


@pytest.mark.parametrize("index", range(len(_agent_loop_blocks())))
def test_each_agent_loop_block_is_under_23_lines(index: int) -> None:
    """Short enough to read at a glance: imports, one tool, one turn (the turn token and its check included)."""
    assert len(_agent_loop_blocks()[index].splitlines()) < 23


@pytest.mark.parametrize("number", range(len(BLOCKS)))
def test_every_readme_python_block_runs(tmp_path: Path, number: int) -> None:
    path = tmp_path / f"readme_block_{number}.py"
    path.write_text(BLOCKS[number], encoding="utf-8")
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
