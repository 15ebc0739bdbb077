"""Write the shipped table's compiled machine to ``machine/generated.py``, or check that it is current.

Theory of operation
-------------------
The machine that runs is checked in (:mod:`.generated`): a reader can open
it, step through it and read tracebacks and coverage against it.  It is
:func:`.module_form.module_source` of the shipped table, the semantics and the
contexts, formatted by ``ruff format`` (the pinned development tool; the
formatter only wraps lines, it changes no code), with a header naming the
digests of what it was generated from.  ``tests/test_generated.py`` holds the
file to this function's output, as ``tests/test_docs.py`` does the diagrams::

    python -m tool_call_closure.machine.regenerate           # write it
    python -m tool_call_closure.machine.regenerate --check   # exit status 1 if it is stale

When the file is stale at run time (a table or semantics changed and not
regenerated, a mutant), the interpreter does not use it: it generates the
machine at import instead (:func:`.interpreter.checked_in_module`).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Final

from tool_call_closure.machine.context import OPERATION_CONTEXTS
from tool_call_closure.machine.interpreter import GENERATED_FROM, HELPERS, implementations
from tool_call_closure.machine.module_form import digest_sources, module_source
from tool_call_closure.machine.table import TABLE, TABLE_TEXT

__all__ = ["GENERATED_PATH", "expected_text", "format_source", "main"]

GENERATED_PATH: Final = Path(__file__).with_name("generated.py")

# Isolated from any configuration found around the file, so the text depends on the pinned ruff alone.
_OPTIONS: Final = ("--isolated", "--line-length", "120", "--target-version", "py311")
_SORT: Final = ("ruff", "check", *_OPTIONS, "--select", "I", "--fix", "--exit-zero", "--quiet")
_FORMAT: Final = ("ruff", "format", *_OPTIONS)


def format_source(source: str) -> str:
    """``source`` with its imports sorted and its lines wrapped to 120 characters, as ruff writes them."""
    for command in (_SORT, _FORMAT):
        done = subprocess.run(
            [sys.executable, "-m", *command, "--stdin-filename", "generated.py", "-"],
            input=source,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"ruff failed on the generated machine: {done.stderr.strip()}")
        source = done.stdout
    return source


def expected_text() -> str:
    """What ``machine/generated.py`` must hold for the table, semantics, contexts and compiler present."""
    digests = digest_sources(TABLE_TEXT, GENERATED_FROM)
    return format_source(module_source(TABLE, implementations(), HELPERS, OPERATION_CONTEXTS, digests))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="exit with status 1 if the file is stale, write nothing")
    args = parser.parse_args(argv)
    text = expected_text()
    current = GENERATED_PATH.read_text(encoding="utf-8") if GENERATED_PATH.exists() else None
    if args.check:
        if current != text:
            print(f"{GENERATED_PATH} is stale: run python -m tool_call_closure.machine.regenerate", file=sys.stderr)
            return 1
        return 0
    if current != text:
        GENERATED_PATH.write_text(text, encoding="utf-8")
        print(f"wrote {GENERATED_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
