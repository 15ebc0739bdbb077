"""Where the shipped specification files are: ``machine.json``, the catalogue, the deviations, the vectors.

Theory of operation
-------------------
The specification is data under ``spec/`` in the source tree.  The wheel
ships the parts the library and the conformance kit read as
``tool_call_closure/_spec/``; a source checkout has no ``_spec/`` and is read
from ``spec/`` instead.  This module only locates and reads those files; what
they mean is decided elsewhere (the table by :mod:`tool_call_closure.machine.table`,
the error texts by :mod:`tool_call_closure.errors`).  It imports nothing of the
package, so every layer may use it.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["SpecFileMissingError", "machine_document", "machine_text", "spec_path"]


class SpecFileMissingError(LookupError):
    """Neither the package's ``_spec/`` nor the source tree's ``spec/`` holds the file."""


def spec_path(name: str) -> Path:
    """The shipped spec file (or directory) ``name``: inside the installed package, else the source tree's ``spec/``."""
    packaged = resources.files("tool_call_closure").joinpath("_spec").joinpath(name)
    if packaged.is_file() or packaged.is_dir():
        return Path(str(packaged))
    source = Path(__file__).resolve().parents[2] / "spec" / name
    if source.exists():
        return source
    raise SpecFileMissingError(f"neither the package's _spec/ nor spec/ holds {name}")


@functools.cache
def machine_text() -> str:
    """The text of the shipped transition table (read once)."""
    return spec_path("machine.json").read_text(encoding="utf-8")


@functools.cache
def machine_document() -> Any:
    """The shipped transition table parsed as plain JSON, unvalidated (the table loader validates it)."""
    return json.loads(machine_text())
