"""Driving a protocol v1 subject: a subprocess, or the reference in process.

Theory of operation
-------------------
A *subject* is anything that serves protocol v1 (``spec/protocol.md``).  The
runner, the differential fuzzer and the tests talk to every subject through
one interface, :class:`Subject`: send one request, get back the list of
response lines it caused — the nested responses first, then the request's own
(the first line without ``"nested"``).

:class:`ProcessSubject` runs a command and talks over its pipes.  A reader
thread moves stdout lines into a queue, so every request has a timeout; the
subject's stderr is collected for reports.  A subject that dies or times out
raises :class:`SubjectError`, which runners report as *errored* (the harness
broke), never as *failed* (the behaviour differs).

:class:`InProcessSubject` runs the reference's own :class:`~._serve.Server`
in this process: the same bytes, without a subprocess.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, Final

from tool_call_closure.conformance.serve import Server
from tool_call_closure.machine.interpreter import MACHINE, Machine

__all__ = [
    "DEFAULT_TIMEOUT",
    "InProcessSubject",
    "ProcessSubject",
    "Subject",
    "SubjectError",
    "locate_original",
    "node_adapter",
    "original_command",
    "reference_command",
]

DEFAULT_TIMEOUT: Final = 10.0


class SubjectError(Exception):
    """The subject crashed, hung, or wrote something that is not a response line."""


class Subject:
    """One conversation with a protocol v1 subject."""

    def send(self, request: dict[str, Any] | str) -> list[dict[str, Any]]:
        """Send one request; return the parsed response lines it caused, the request's own last."""
        raise NotImplementedError

    def stderr_text(self) -> str:
        """What the subject wrote to stderr so far (for reports)."""
        return ""

    def close(self) -> None:
        """End the conversation (sends ``bye`` if the subject is alive)."""

    def __enter__(self) -> Subject:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _encode(request: dict[str, Any] | str) -> str:
    if isinstance(request, str):
        return request
    from tool_call_closure.ecma import json_stringify

    return json_stringify(request)


def _parse_response(line: str) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except RecursionError:
        raise SubjectError(f"subject wrote a line nested too deeply to parse: {line[:200]!r}") from None
    except ValueError as exc:
        raise SubjectError(f"subject wrote a line that is not JSON: {line[:200]!r}") from exc
    if not isinstance(value, dict):
        raise SubjectError(f"subject wrote a JSON value that is not an object: {line[:200]!r}")
    return value


class InProcessSubject(Subject):
    """The reference itself, without a subprocess (the runner's default subject)."""

    def __init__(self, machine: Machine = MACHINE, trace: list[str] | None = None) -> None:
        self._buffer = io.BytesIO()
        self._server = Server(self._buffer, machine, trace)

    def send(self, request: dict[str, Any] | str) -> list[dict[str, Any]]:
        self._buffer.seek(0)
        self._buffer.truncate()
        self._server.handle_line(_encode(request))
        lines = self._buffer.getvalue().decode("utf-8").split("\n")
        return [_parse_response(line) for line in lines if line]

    def raw_lines(self) -> list[str]:
        """The exact text of the last request's response lines."""
        return [line for line in self._buffer.getvalue().decode("utf-8").split("\n") if line]


class ProcessSubject(Subject):
    """A subject running as a subprocess (for example ``node adapter.cjs index.cjs``)."""

    def __init__(self, command: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT, env: dict[str, str] | None = None):
        self.command = list(command)
        self.timeout = timeout
        # When set (time.perf_counter() seconds), no request may run past it: the runner's limit for a vector.
        self.deadline: float | None = None
        try:
            self._process = subprocess.Popen(
                self.command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env={**os.environ, **(env or {})},
            )
        except OSError as exc:
            raise SubjectError(f"cannot start subject {self.command!r}: {exc}") from exc
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._stderr: list[bytes] = []
        assert self._process.stdout is not None
        assert self._process.stderr is not None
        threading.Thread(target=self._pump, args=(self._process.stdout, self._lines), daemon=True).start()
        threading.Thread(target=self._drain, args=(self._process.stderr,), daemon=True).start()

    @staticmethod
    def _pump(stream: IO[bytes], lines: queue.Queue[bytes | None]) -> None:
        # close() may close the pipe while this thread still reads it: that is the end of the output too.
        with contextlib.suppress(OSError, ValueError):
            for line in iter(stream.readline, b""):
                lines.put(line)
        lines.put(None)

    def _drain(self, stream: IO[bytes]) -> None:
        with contextlib.suppress(OSError, ValueError):
            for chunk in iter(lambda: stream.read(4096), b""):
                self._stderr.append(chunk)

    def stderr_text(self) -> str:
        return b"".join(self._stderr).decode("utf-8", "replace")

    def alive(self) -> bool:
        return self._process.poll() is None

    def send(self, request: dict[str, Any] | str) -> list[dict[str, Any]]:
        stdin = self._process.stdin
        assert stdin is not None
        try:
            stdin.write(_encode(request).encode("utf-8") + b"\n")
            stdin.flush()
        except OSError as exc:
            # A subject that already exited closes its input too: name the exit, the more useful fact.
            try:
                code = self._process.wait(timeout=min(self.timeout, 1.0))
            except subprocess.TimeoutExpired:
                raise SubjectError(f"subject closed its input: {exc}") from exc
            raise SubjectError(f"subject exited with status {code} before answering ({exc})") from exc
        responses: list[dict[str, Any]] = []
        # The timeout bounds the whole request, however many nested lines the subject writes meanwhile.
        deadline = time.perf_counter() + self.timeout
        if self.deadline is not None:
            deadline = min(deadline, self.deadline)
        while True:
            try:
                raw = self._lines.get(timeout=max(0.0, deadline - time.perf_counter()))
            except queue.Empty:
                self._process.kill()
                raise SubjectError(f"subject did not answer within {self.timeout:g} s") from None
            if raw is None:
                try:
                    code = self._process.wait(timeout=max(0.0, deadline - time.perf_counter()))
                except subprocess.TimeoutExpired:
                    self._process.kill()
                    raise SubjectError("subject closed its output but did not exit") from None
                raise SubjectError(f"subject exited with status {code} before answering")
            response = _parse_response(raw.decode("utf-8", "replace").rstrip("\n"))
            responses.append(response)
            if "nested" not in response:
                return responses

    def close(self) -> None:
        if self.alive():
            with contextlib.suppress(SubjectError):
                self.send({"id": "bye", "cmd": "bye"})
        try:
            self._process.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        for stream in (self._process.stdin, self._process.stdout, self._process.stderr):
            if stream is not None:
                stream.close()


def reference_command() -> list[str]:
    """The command that runs this reference as a subprocess subject."""
    return [sys.executable, "-m", "tool_call_closure", "serve"]


def node_adapter() -> Path:
    """The Node adapter that serves protocol v1 for the JavaScript original (shipped in the package)."""
    return Path(__file__).resolve().parent / "node" / "adapter.cjs"


def locate_original() -> Path | None:
    """The original's ``index.cjs``: ``$TCC_JS``, else ``../shared/seed/…`` beside the source checkout."""
    configured = os.environ.get("TCC_JS")
    if configured:
        return Path(configured)
    beside = Path(__file__).resolve().parents[4] / "shared" / "seed" / "tool-call-closure-1.0.0" / "src" / "index.cjs"
    return beside if beside.is_file() else None


def original_command(original: Path) -> list[str]:
    """The command that runs the JavaScript original as a subject."""
    return ["node", str(node_adapter()), str(original)]
