"""The conformance kit as a bug finder: single-line bugs planted in copies of the JavaScript original.

``tests/data/planted_bugs.json`` lists the bugs (precedence of rejections, byte limits, rechecks after caller
code, idempotence, snapshot detachment, the diagnostics cap, export rules, default texts, provider flags).
Each applies to exactly one place of the original's ``src/index.cjs``.  The tests require that ``conform``
kills every one (some non-deviation vector fails) and that the fuzzer, in a short run, finds them too.

Run as a script to measure the fuzzer per bug with a time budget (the figure of issue 12)::

    python tests/test_planted_bugs.py 30
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from tool_call_closure.conformance.conform import SubjectSpec, run_conformance, select_vectors
from tool_call_closure.conformance.subject import locate_original, original_command
from tool_call_closure.conformance.vectors import load_vectors

ORIGINAL = locate_original()
PLANTED = json.loads((Path(__file__).parent / "data" / "planted_bugs.json").read_text())
BUGS: list[dict[str, Any]] = PLANTED["bugs"]  # the twelve of issue 12
MORE_BUGS: list[dict[str, Any]] = PLANTED["more_bugs"]  # written afterwards: the kit is not tuned to the twelve
EVERY_BUG = BUGS + MORE_BUGS

pytestmark = pytest.mark.skipif(
    ORIGINAL is None or not ORIGINAL.is_file() or shutil.which("node") is None,
    reason="node or the original is missing (set TCC_JS)",
)


def plant(bug: dict[str, Any], directory: Path) -> Path:
    """A copy of the original with ``bug`` planted: ``directory/src/index.cjs``."""
    assert ORIGINAL is not None
    source = ORIGINAL.read_text(encoding="utf-8")
    assert source.count(bug["old"]) == 1, f"{bug['id']}: the text to replace must occur exactly once"
    target = directory / "src" / "index.cjs"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(source.replace(bug["old"], bug["new"]), encoding="utf-8")
    return target


def killing_vectors(mutant: Path) -> list[str]:
    """The ids of the non-deviation vectors the mutant fails (or errors on)."""
    vectors = select_vectors(load_vectors(), skip_tags=["deviation:"])
    run = run_conformance(vectors, SubjectSpec(tuple(original_command(mutant))))
    return [r.id for r in run.results if r.outcome in ("failed", "errored")]


def test_every_bug_id_is_unique() -> None:
    ids = [bug["id"] for bug in EVERY_BUG]
    assert len(ids) == len(set(ids))


def test_there_are_at_least_twelve_bugs_in_every_named_category() -> None:
    categories = {bug["category"] for bug in BUGS}
    assert len(BUGS) >= 12
    assert categories >= {
        "precedence of rejections",
        "byte limits",
        "rechecks after caller code",
        "idempotence",
        "snapshot detachment",
        "the diagnostics cap",
        "export rules",
        "default texts",
        "provider flags",
    }


@pytest.mark.parametrize("bug", EVERY_BUG, ids=[bug["id"] for bug in EVERY_BUG])
def test_conform_kills_every_planted_bug(bug: dict[str, Any], tmp_path: Path) -> None:
    assert killing_vectors(plant(bug, tmp_path)), f"{bug['id']} survived every vector"


@pytest.mark.parametrize("bug", EVERY_BUG, ids=[bug["id"] for bug in EVERY_BUG])
def test_the_fuzzer_finds_every_planted_bug_in_a_short_run(bug: dict[str, Any], tmp_path: Path) -> None:
    from tool_call_closure.conformance.fuzz import fuzz

    result = fuzz(SubjectSpec(tuple(original_command(plant(bug, tmp_path)))), max_examples=2000, seed=12)
    assert result.divergence is not None, f"{bug['id']}: no divergence in {result.examples} scenarios"


def _measure(seconds: float) -> None:  # pragma: no cover - a measuring script, not a test
    import tempfile

    from tool_call_closure.conformance.fuzz import fuzz

    found = 0
    print("| bug | found by fuzz after | scenarios | shrunk steps | killed by vectors |")
    print("|---|---|---|---|---|")
    for bug in EVERY_BUG:
        with tempfile.TemporaryDirectory() as directory:
            mutant = plant(bug, Path(directory))
            result = fuzz(SubjectSpec(tuple(original_command(mutant))), seconds=seconds)
            killers = killing_vectors(mutant)
        after = f"{result.found_after:.1f} s" if result.found_after is not None else f"not found in {seconds:g} s"
        found += result.divergence is not None
        shown = ", ".join(killers[:4]) + (f" (+{len(killers) - 4})" if len(killers) > 4 else "")
        print(f"| {bug['id']} | {after} | {result.examples} | {len(result.scenario)} | {len(killers)}: {shown} |")
    print(f"\nfuzz found {found} of {len(EVERY_BUG)} in {seconds:g} s each")


if __name__ == "__main__":  # pragma: no cover
    _measure(float(sys.argv[1]) if len(sys.argv) > 1 else 30.0)
