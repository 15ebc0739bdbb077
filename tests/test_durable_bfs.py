"""The bounded model check of the durable layer (``proofs/durable_bfs.py``, ``bfs_check.py --durable``).

It holds on the shipped layer, and it finds the planted bugs it is there for: a layer that forgets to compare
a token's epoch applies a result of an earlier epoch; a layer that skips the MAC applies a forged one.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tool_call_closure import BatchHandle
from tool_call_closure.durable import FencedClosure, TokenRejection
from tool_call_closure.durable.image import current_handle

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "proofs"))

import bfs_check
import durable_bfs


def test_durable_bfs_holds(capsys: pytest.CaptureFixture[str]) -> None:
    assert bfs_check.main(["--durable", "--calls", "1", "--generations", "1", "--epochs", "2"]) == 0
    out = capsys.readouterr().out
    assert "OK: no path applied a result from an earlier epoch or a forged token" in out
    assert "explored" in out


def test_durable_bfs_finds_a_layer_that_ignores_epochs(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def without_epochs(self: FencedClosure, token: object, kind: Any) -> Any:
        claims = self.codec.verify(token, kind)
        if isinstance(claims, TokenRejection):
            return claims
        handle = current_handle(self.closure)  # the epoch is never compared: an old epoch's token passes
        if handle is None or handle.generation != claims.generation:
            handle = BatchHandle(claims.generation)
        return claims, handle

    monkeypatch.setattr(FencedClosure, "_admit", without_epochs)
    assert durable_bfs.main(["--calls", "1", "--generations", "1", "--epochs", "2"]) == 1
    out = capsys.readouterr().out
    assert "VIOLATION:" in out
    assert "crash+restore" in out  # the shortest path goes through a restore


@pytest.mark.slow
def test_durable_bfs_finds_a_layer_that_skips_the_mac(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("hmac.compare_digest", lambda a, b: True)
    assert durable_bfs.main(["--calls", "1", "--generations", "1", "--epochs", "1"]) == 1
    assert "forged" in capsys.readouterr().out


@pytest.mark.slow
def test_durable_bfs_larger_bounds(capsys: pytest.CaptureFixture[str]) -> None:
    assert durable_bfs.main(["--calls", "1", "--generations", "2", "--epochs", "2"]) == 0
