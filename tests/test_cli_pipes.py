"""The printing commands stop quietly when the reader of their output goes away (``tool-call-closure demo | head``).

Two real pipes: one whose read end is closed before the command starts, so
its first write must meet a closed pipe (deterministic), and the shell
pipeline a user types.  ``serve`` is not covered here: the protocol server
handles its own pipes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tool_call_closure.cli.main import SIGPIPE_STATUS

COMMAND = [sys.executable, "-m", "tool_call_closure"]
PRINTING = [
    (["demo"], SIGPIPE_STATUS),
    (["table"], SIGPIPE_STATUS),
    (["table", "--diagram"], SIGPIPE_STATUS),
    (["--version"], 0),  # argparse itself ignores a failed write of its --version and --help texts
    (["demo", "--help"], 0),
]


@pytest.mark.parametrize(("arguments", "status"), PRINTING, ids=[" ".join(a) for a, _ in PRINTING])
def test_a_command_writing_into_a_closed_pipe_exits_quietly(arguments: list[str], status: int) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will ever read: the first write fails with EPIPE
    try:
        done = subprocess.run(
            [*COMMAND, *arguments], stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120, check=False
        )
    finally:
        os.close(write_end)
    assert done.stderr == ""
    assert done.returncode == status


def test_the_closed_pipe_status_is_the_shells_sigpipe_status() -> None:
    assert SIGPIPE_STATUS == 141


@pytest.mark.skipif(shutil.which("head") is None or shutil.which("sh") is None, reason="needs sh and head")
def test_demo_piped_into_head_prints_its_first_line_and_nothing_on_stderr(tmp_path: Path) -> None:
    script = f'{" ".join(COMMAND)} demo | head -1; echo "status ${{?}}" >&2'
    done = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path)
    assert done.stdout.splitlines() == ["1. begin: three calls announced in generation 1"]
    assert done.stderr == "status 0\n"  # head's status; the command's own is the first test's
