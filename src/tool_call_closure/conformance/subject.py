"""Driving a protocol v1 subject: a subprocess, or the reference in process.

Theory of operation
-------------------
A *subject* is anything that serves protocol v1 (``spec/protocol.md``).  The
runner, the differential fuzzer and the tests talk to every subject through
one interface, :class:`Subject`: send one request, get back the list of
response lines it caused — the nested responses first, then the request's own
(the first line without ``"nested"``) — either parsed (:meth:`Subject.send`)
or as the exact text the subject wrote (:meth:`Subject.send_lines`, which the
runner compares with the expected text before it parses anything).

:class:`ProcessSubject` runs a command and talks over its pipes.  Its stdout
is read in the thread that sends the requests, waiting for output with
``select`` and a timeout, so every request has a timeout without handing each
line from a reader thread to the sender (on platforms whose pipes cannot be
polled, Windows, a reader thread moves the lines into a queue instead).  The
subject's stderr is collected by a thread for reports.  A subject that dies or
times out raises :class:`SubjectError`, which runners report as *errored* (the
harness broke), never as *failed* (the behaviour differs).

:class:`InProcessSubject` runs the reference's own :class:`~.serve.Server`
in this process: the same bytes, without a subprocess.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import queue
import selectors
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any, Final

from tool_call_closure.conformance.serve import CAPABILITIES, Server
from tool_call_closure.machine.interpreter import MACHINE, Machine

__all__ = [
    "DEFAULT_TIMEOUT",
    "InProcessSubject",
    "ProcessSubject",
    "Subject",
    "SubjectError",
    "encode_request",
    "locate_original",
    "node_adapter",
    "original_command",
    "parse_response_line",
    "reference_command",
]

DEFAULT_TIMEOUT: Final = 10.0
# How long a report waits for the last stderr of a subject that exited (at once, unless its child holds the pipe).
STDERR_DRAIN_SECONDS: Final = 2.0
MAX_TIMEOUT: Final = 86_400.0
"""The longest timeout a subject takes (one day): beyond it a deadline overflows the clocks select() and
Popen.wait() accept (``--timeout 1e300`` raised OverflowError), and no conformance step needs more."""
EXIT_GRACE_SECONDS: Final = 0.5
"""How long a subject whose output ended may take to exit before it is killed: it can answer nothing more, so
the runner only waits for its exit status, not for the rest of the request's timeout."""


class SubjectError(Exception):
    """The subject crashed, hung, or wrote something that is not a response line."""


class Subject:
    """One conversation with a protocol v1 subject."""

    def send(self, request: dict[str, Any] | str) -> list[dict[str, Any]]:
        """Send one request; return the parsed response lines it caused, the request's own last."""
        raise NotImplementedError

    def send_lines(self, request: dict[str, Any] | str, meanwhile: Callable[[], None] | None = None) -> list[str]:
        """Send one request; return the text of the response lines it caused (without their ``\\n``).

        :func:`parse_response_line` of each is what :meth:`send` returns.  ``meanwhile`` (which must not
        raise) is called once the request is on its way and before its answer is awaited: a subprocess works
        on the request meanwhile.  This default re-encodes what :meth:`send` parsed (the compact JSON of
        :func:`json.dumps`); the subjects below return what the subject wrote.
        """
        responses = self.send(request)
        if meanwhile is not None:
            meanwhile()
        return [_TEXT.encode(response) for response in responses]

    def stderr_text(self) -> str:
        """What the subject wrote to stderr so far (for reports)."""
        return ""

    def close(self) -> None:
        """End the conversation (sends ``bye`` if the subject is alive)."""

    def __enter__(self) -> Subject:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def encode_request(request: dict[str, Any] | str) -> str:
    """The line a request is sent as (without its ``\\n``): ``JSON.stringify`` of it, or the text itself."""
    if isinstance(request, str):
        return request
    from tool_call_closure.ecma_json import json_stringify

    return json_stringify(request)


_TEXT: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def parse_response_line(line: str) -> dict[str, Any]:
    """One response line, parsed; :class:`SubjectError` if it is not a JSON object."""
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

    def __init__(
        self, machine: Machine = MACHINE, trace: list[str] | None = None, capabilities: tuple[str, ...] | None = None
    ) -> None:
        """``capabilities``: the optional protocol features to serve (default: all the reference has)."""
        self._buffer = io.BytesIO()
        served = CAPABILITIES if capabilities is None else capabilities
        self._server = Server(self._buffer, machine, trace, capabilities=served)

    def send(self, request: dict[str, Any] | str) -> list[dict[str, Any]]:
        return [parse_response_line(line) for line in self.send_lines(request)]

    def send_lines(self, request: dict[str, Any] | str, meanwhile: Callable[[], None] | None = None) -> list[str]:
        self._buffer.seek(0)
        self._buffer.truncate()
        self._server.handle_line(encode_request(request))
        if self._server.agents is not None:  # an agent's request runs on its thread: its answer, then return
            self._server.agents.wait()
        if meanwhile is not None:
            meanwhile()
        return self.raw_lines()

    def close(self) -> None:
        """End the agents' threads (capability agents), if any ran."""
        if self._server.agents is not None:
            self._server.agents.close()

    def raw_lines(self) -> list[str]:
        """The exact text of the last request's response lines."""
        return [line for line in self._buffer.getvalue().decode("utf-8").split("\n") if line]


class _PolledLines:
    """A subject's stdout as lines, read in the caller's thread: ``select`` waits for output, ``os.read`` takes
    what is there.  Lines end at ``\\n`` only; the text after the last ``\\n`` is a line too when the output ends."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._fd = stream.fileno()
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._fd, selectors.EVENT_READ)
        self._buffer = bytearray()
        self._scanned = 0  # how much of the buffer is known to hold no newline: a long line is scanned once
        self._ended = False

    def read_line(self, timeout: float) -> bytes | None:
        """The next line without its ``\\n``, ``None`` once the output has ended; TimeoutError after ``timeout`` s."""
        deadline = time.perf_counter() + timeout
        while True:
            end = self._buffer.find(b"\n", self._scanned)
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                self._scanned = 0
                return line
            self._scanned = len(self._buffer)
            if self._ended:
                if self._buffer:
                    line = bytes(self._buffer)
                    self._buffer.clear()
                    self._scanned = 0
                    return line
                return None
            if not self._selector.select(max(0.0, deadline - time.perf_counter())):
                raise TimeoutError
            try:
                chunk = os.read(self._fd, 65536)
            except OSError:
                chunk = b""  # a pipe that fails to read is the end of the output too
            if chunk:
                self._buffer += chunk
            else:
                self._ended = True

    def close(self) -> None:
        self._selector.close()


class _ThreadedLines:
    """The same, for pipes that cannot be polled (Windows): a reader thread moves the lines into a queue."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._ended = False
        threading.Thread(target=self._pump, args=(stream, self._lines), daemon=True).start()

    @staticmethod
    def _pump(stream: IO[bytes], lines: queue.Queue[bytes | None]) -> None:
        # close() may close the pipe while this thread still reads it: that is the end of the output too.
        with contextlib.suppress(OSError, ValueError):
            for line in iter(stream.readline, b""):
                lines.put(line[:-1] if line.endswith(b"\n") else line)
        lines.put(None)

    def read_line(self, timeout: float) -> bytes | None:
        if self._ended:
            return None
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError from None
        self._ended = line is None
        return line

    def close(self) -> None:
        pass


# selectors can wait on pipes everywhere but on Windows, where they take sockets only.
_LineReader: Final = _ThreadedLines if os.name == "nt" else _PolledLines


class ProcessSubject(Subject):
    """A subject running as a subprocess (for example ``node adapter.cjs index.cjs``)."""

    def __init__(self, command: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT, env: dict[str, str] | None = None):
        self.command = list(command)
        if not 0 < timeout <= MAX_TIMEOUT:  # also refuses NaN
            raise ValueError(f"timeout must be a number of seconds in (0, {MAX_TIMEOUT:g}], not {timeout}")
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
        self._stderr: list[bytes] = []
        assert self._process.stdout is not None
        assert self._process.stderr is not None
        self._lines = _LineReader(self._process.stdout)
        # Set by close(): the drain stops even when a child of the subject still holds the pipe open.
        self._stop_drain = threading.Event()
        self._idle_polls = 0
        self._stderr_drain = threading.Thread(target=self._drain, args=(self._process.stderr,), daemon=True)
        self._stderr_drain.start()

    def _drain(self, stream: IO[bytes]) -> None:
        """Keep the subject's stderr.  On POSIX the pipe is polled, so close() can stop the drain: a blocking
        read would hold the stream's lock until the pipe's last writer (perhaps a grandchild that lives on)
        closes it, and close() would wait that long to close the stream."""
        with contextlib.suppress(OSError, ValueError):
            if os.name == "nt":
                for chunk in iter(lambda: stream.read(4096), b""):
                    self._stderr.append(chunk)
                return
            fd = stream.fileno()
            with selectors.DefaultSelector() as selector:
                selector.register(fd, selectors.EVENT_READ)
                while not self._stop_drain.is_set():
                    if not selector.select(0.05):
                        self._idle_polls += 1  # the pipe was empty for a whole poll
                        continue
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        return
                    self._stderr.append(chunk)

    def stderr_text(self) -> str:
        if self._process.poll() is not None:
            # The subject exited: what it wrote last may still be in the pipe. Its end of the pipe is closed, so
            # the drain reaches end of file at once -- unless a child of the subject still holds it. Then the
            # drain is done once a whole poll that began after the exit found the pipe empty (POSIX), and in
            # any case after STDERR_DRAIN_SECONDS.
            polls = self._idle_polls
            give_up = time.perf_counter() + STDERR_DRAIN_SECONDS
            while self._stderr_drain.is_alive() and time.perf_counter() < give_up:
                if os.name != "nt" and self._idle_polls >= polls + 2:
                    break
                self._stderr_drain.join(timeout=0.01)
        return b"".join(self._stderr).decode("utf-8", "replace")

    def alive(self) -> bool:
        return self._process.poll() is None

    def send(self, request: dict[str, Any] | str) -> list[dict[str, Any]]:
        return [response for _, response in self._exchange(request)]

    def send_lines(self, request: dict[str, Any] | str, meanwhile: Callable[[], None] | None = None) -> list[str]:
        return [line for line, _ in self._exchange(request, meanwhile)]

    def send_ahead(self, requests: Sequence[str]) -> None:
        """Write request lines now, each answered in turn by a later :meth:`receive_lines`.

        The runner writes a vector's requests ahead of reading their answers,
        so the subject works while the runner compares (a few KiB at most:
        well within a pipe's buffer, so the write never waits on the subject).
        """
        self._write("".join(f"{request}\n" for request in requests).encode("utf-8"))

    def receive_lines(self) -> list[str]:
        """The response lines of the oldest request written ahead and not yet received."""
        return [line for line, _ in self._answer(None)]

    def _write(self, data: bytes) -> None:
        stdin = self._process.stdin
        assert stdin is not None
        try:
            stdin.write(data)
            stdin.flush()
        except OSError as exc:
            # A subject that already exited closes its input too: name the exit, the more useful fact.
            try:
                code = self._process.wait(timeout=min(self.timeout, 1.0))
            except subprocess.TimeoutExpired:
                raise SubjectError(f"subject closed its input: {exc}") from exc
            raise SubjectError(f"subject exited with status {code} before answering ({exc})") from exc

    def _exchange(
        self, request: dict[str, Any] | str, meanwhile: Callable[[], None] | None = None
    ) -> list[tuple[str, dict[str, Any]]]:
        """Write one request; read its response lines (text and parsed) up to the request's own."""
        self._write(encode_request(request).encode("utf-8") + b"\n")
        return self._answer(meanwhile)

    def _answer(self, meanwhile: Callable[[], None] | None) -> list[tuple[str, dict[str, Any]]]:
        """Read one request's response lines (text and parsed), up to the request's own."""
        responses: list[tuple[str, dict[str, Any]]] = []
        # The timeout bounds the whole request, however many nested lines the subject writes meanwhile.
        deadline = time.perf_counter() + self.timeout
        if self.deadline is not None:
            deadline = min(deadline, self.deadline)
        if meanwhile is not None:
            meanwhile()
        while True:
            try:
                # Checked before every line, not only when waiting: a subject that writes nested lines faster
                # than they are read would otherwise always have one ready, and the request would never end.
                left = deadline - time.perf_counter()
                if left <= 0:
                    raise TimeoutError
                raw = self._lines.read_line(left)
            except TimeoutError:
                self._process.kill()
                raise SubjectError(f"subject did not answer within {self.timeout:g} s") from None
            if raw is None:
                try:
                    code = self._process.wait(timeout=min(EXIT_GRACE_SECONDS, max(0.0, deadline - time.perf_counter())))
                except subprocess.TimeoutExpired:
                    self._process.kill()
                    raise SubjectError("subject closed its output but did not exit (killed)") from None
                raise SubjectError(f"subject exited with status {code} before answering")
            line = raw.decode("utf-8", "replace")
            response = parse_response_line(line)
            responses.append((line, response))
            if "nested" not in response:
                return responses

    def close(self) -> None:
        if self.alive():
            with contextlib.suppress(SubjectError):
                self.send({"id": "bye", "cmd": "bye"})
        # End of input means bye as well (spec/protocol.md): a subject that answers bye but goes on reading
        # exits now, instead of after the whole timeout.
        if self._process.stdin is not None:
            with contextlib.suppress(OSError):
                self._process.stdin.close()
        try:
            self._process.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._lines.close()
        self._stop_drain.set()
        self._stderr_drain.join(timeout=1.0)
        for stream in (self._process.stdin, self._process.stdout, self._process.stderr):
            if stream is not None:
                # A subject that exited before reading a request leaves it in stdin's buffer; closing flushes
                # it into the broken pipe. The exit was already reported; the pipe error is not the runner's own.
                with contextlib.suppress(OSError):
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
