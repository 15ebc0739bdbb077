"""Where a command writes, checked before it runs.

A benchmark or a fuzz run takes minutes; one that ends unable to write what
it measured or found has wasted them (and a traceback is all it would print).
So a command checks its output paths first and refuses, with one line, a
path it could not write.  The check is a forecast, not a guarantee — the
file system can change during the run — so the writes themselves are still
handled where they happen.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["output_problem"]


def output_problem(path: Path, *, directory: bool = False) -> str | None:
    """Why ``path`` could not be written, or ``None``.

    A file is written in its parent, which must be an existing, writable
    directory.  With ``directory``, ``path`` is a directory that is made
    (with its parents) if missing: it, or its nearest existing ancestor, must
    be a writable directory.
    """
    if path.is_dir():
        if not directory:
            return "is a directory"
        return None if os.access(path, os.W_OK | os.X_OK) else "the directory is not writable"
    if path.exists():
        if directory:
            return "exists and is not a directory"
        return None if os.access(path, os.W_OK) else "the file is not writable"
    place = path.parent
    if directory:
        while not place.exists() and place != place.parent:
            place = place.parent
    if not place.is_dir():
        return f"{place} is not an existing directory"
    return None if os.access(place, os.W_OK | os.X_OK) else f"{place} is not writable"
