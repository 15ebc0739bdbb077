"""The tooling gates run as tests, so the one test command checks them: mypy --strict, ruff, and the wheel."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)


def test_mypy_strict_is_clean() -> None:
    done = _run(sys.executable, "-m", "mypy")  # configuration: [tool.mypy] in pyproject.toml (strict)
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_is_clean() -> None:
    done = _run(sys.executable, "-m", "ruff", "check", "src", "tests", "proofs")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_wheel_ships_the_table_the_adapter_and_the_type_marker(tmp_path: Path) -> None:
    done = _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path), ".")
    if done.returncode != 0 and "hatchling" in done.stderr:
        pytest.skip("hatchling is not installed in this environment")
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = tmp_path.glob("tool_call_closure-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "tool_call_closure/_spec/machine.json" in names
    assert "tool_call_closure/conformance/node/adapter.cjs" in names
    assert "tool_call_closure/py.typed" in names
    assert "tool_call_closure/_spec/vectors/manifest.json" in names
    assert "tool_call_closure/_spec/catalogue.json" in names
    assert "tool_call_closure/_spec/deviations.json" in names
    # Pure Python unless built with the compiled machine's hook (tests/test_compiled.py), whatever the checkout holds.
    assert not [n for n in names if n.endswith((".so", ".pyd", "_compiled/build.json"))]
    assert "tool_call_closure/_compiled/__init__.py" in names
    shipped = zipfile.ZipFile(wheel).read("tool_call_closure/_spec/machine.json")
    assert shipped == (ROOT / "spec" / "machine.json").read_bytes()
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "tool-call-closure = tool_call_closure.cli.main:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


@pytest.mark.slow  # builds and installs a wheel in a new virtual environment
def test_an_installed_wheel_runs_conform_with_no_arguments(tmp_path: Path) -> None:
    """The README's main command works from a plain (non-editable) install: the vectors ship in the wheel."""
    wheels = tmp_path / "wheels"
    done = _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), ".")
    if done.returncode != 0 and "hatchling" in done.stderr:
        pytest.skip("hatchling is not installed in this environment")
    assert done.returncode == 0, done.stderr
    (wheel,) = wheels.glob("tool_call_closure-*.whl")
    target = tmp_path / "site"
    done = _run(sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(target), str(wheel))
    assert done.returncode == 0, done.stderr
    conform = subprocess.run(
        [sys.executable, "-m", "tool_call_closure", "conform", "--no-report"],
        cwd=tmp_path,
        env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert conform.returncode == 0, conform.stdout + conform.stderr
    assert "failed 0  errored 0" in conform.stdout
