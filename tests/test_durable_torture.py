"""``tool-call-closure torture``: short runs on both stores (slow tier), a planted store bug it must catch, and its errors.

The documented long runs (4 processes, 120 s, kills every ~0.5 s) are the closing figures in docs/durable.md;
the tests run 8-10 s each.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tool_call_closure.cli.main import main
from tool_call_closure.cli.torture_model import CRASHED, model
from tool_call_closure.conformance.linearizability import Operation, check
from tool_call_closure.durable import FencedClosure
from tool_call_closure.durable.pg_server import MISSING, find_bin
from tool_call_closure.durable.store import RowStore


def torture(capsys: pytest.CaptureFixture[str], *arguments: str) -> tuple[int, str]:
    status = main(["torture", *arguments])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return status, captured.out + captured.err


@pytest.mark.slow
def test_torture_on_sqlite_finds_no_anomaly(capsys: pytest.CaptureFixture[str]) -> None:
    status, out = torture(capsys, "--store", "sqlite", "--processes", "3", "--seconds", "10", "--seed", "7")
    assert status == 0, out
    assert "linearizability: linearizable" in out
    assert "anomalies: 0" in out
    assert "lost outcomes: 0" in out
    assert "double accepts: 0" in out
    crashes = int(out.split("crashes: ")[1].split()[0])
    assert crashes >= 5


@pytest.mark.slow
def test_torture_on_postgres_finds_no_anomaly(capsys: pytest.CaptureFixture[str]) -> None:
    if find_bin() is None:
        if os.environ.get("TCC_REQUIRE_POSTGRES") == "1":
            pytest.fail(MISSING)
        pytest.skip(MISSING)
    status, out = torture(capsys, "--store", "postgres", "--processes", "3", "--seconds", "8", "--seed", "8")
    assert status == 0, out
    assert "anomalies: 0" in out


@pytest.mark.slow
def test_torture_catches_a_store_that_trusts_a_stale_copy(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A planted bug: each process reuses its own copy without comparing versions (the workers are forked: they
    inherit the patch), and the version it compares is the one it just read, so the compare-and-set passes: a lost
    update.  Two processes then accept the same call, or answer from a state that was overwritten."""
    original = RowStore._load

    def stale(self: RowStore, closure_id: str, version: int, secret: bytes, header: str) -> FencedClosure:
        cached = self._cache.get(closure_id)
        return cached[1] if cached is not None else original(self, closure_id, version, secret, header)

    monkeypatch.setattr(RowStore, "_load", stale)
    status, out = torture(
        capsys, "--store", "sqlite", "--processes", "3", "--seconds", "4", "--kill-every", "0", "--seed", "9"
    )
    assert status == 1, out
    assert "anomalies: 0" not in out


def test_torture_refuses_bad_arguments_in_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    status, out = torture(capsys, "--processes", "0")
    assert status == 2
    assert out.strip() == "torture: --processes must be >= 1, --seconds > 0 and --kill-every >= 0"


def test_the_model_lets_a_crashed_operation_take_effect_or_not() -> None:
    fenced = FencedClosure.new("torture", b"k" * 32)
    initial = fenced.image()
    begin = '["begin",["a"]]'
    image = '["image"]'
    began = FencedClosure.new("torture", b"k" * 32)
    began.begin([{"id": "a", "name": "tool"}])
    for final in (initial, began.image()):
        history = [
            Operation("w", 0.0, 1.0, begin, CRASHED),
            Operation("coordinator", 2.0, 3.0, image, final.decode("ascii")),
        ]
        assert check(history, model(initial, b"k" * 32)).verdict == "linearizable"
    wrong = [
        Operation("w", 0.0, 1.0, begin, ("begun", 1, 1)),
        Operation("coordinator", 2.0, 3.0, image, initial.decode("ascii")),
    ]
    assert check(wrong, model(initial, b"k" * 32)).verdict == "violation"
