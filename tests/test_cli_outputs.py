"""``cli.outputs.output_problem``: the output paths a command checks before a long run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tool_call_closure.cli import outputs
from tool_call_closure.cli.outputs import output_problem


def test_a_file_is_written_in_an_existing_writable_directory(tmp_path: Path) -> None:
    assert output_problem(tmp_path / "new.json") is None
    existing = tmp_path / "old.json"
    existing.write_text("{}", encoding="utf-8")
    assert output_problem(existing) is None
    assert output_problem(tmp_path) == "is a directory"
    assert output_problem(tmp_path / "missing" / "new.json") == f"{tmp_path / 'missing'} is not an existing directory"
    assert output_problem(existing / "under_a_file.json") == f"{existing} is not an existing directory"


def test_a_directory_is_made_under_its_nearest_existing_ancestor(tmp_path: Path) -> None:
    assert output_problem(tmp_path, directory=True) is None
    assert output_problem(tmp_path / "a" / "b" / "c", directory=True) is None  # made with its parents
    a_file = tmp_path / "a_file"
    a_file.write_text("", encoding="utf-8")
    assert output_problem(a_file, directory=True) == "exists and is not a directory"
    assert output_problem(a_file / "sub" / "dir", directory=True) == f"{a_file} is not an existing directory"


def test_an_unwritable_directory_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Asked of the operating system (``os.access``), so it holds for any user; here it answers "not writable"."""
    locked = tmp_path / "locked"
    locked.mkdir()
    monkeypatch.setattr(outputs.os, "access", lambda path, mode: Path(path) != locked)
    assert output_problem(locked / "x.json") == f"{locked} is not writable"
    assert output_problem(locked, directory=True) == "the directory is not writable"
    assert output_problem(locked / "sub", directory=True) == f"{locked} is not writable"
    assert output_problem(tmp_path / "x.json") is None
