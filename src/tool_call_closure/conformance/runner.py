"""The conformance runner: a subject driven through vectors, each compared step by step.

Theory of operation
-------------------
:func:`run_conformance` drives a subject (the embedded reference by default,
or any command that serves protocol v1, :class:`SubjectSpec`) through every
selected vector and compares each response with the vector's expectation
(:mod:`.compare`: the text first, then, for a line whose text differs, the
parsed value).  A session (:class:`_Session`) shakes hands once and is
restarted after the subject breaks, so one crash costs one vector
(``errored``, :mod:`.report`), not the run.  A vector that needs a capability
the subject did not declare is skipped.

Time is bounded twice: the subject's timeout bounds one request with all its
nested lines, and ``vector_timeout`` the whole vector.  To keep two processes
busy instead of taking turns, the first requests of a vector are written
ahead (at most :data:`_AHEAD_BYTES`, well within a pipe's buffer) and the
next step's line is encoded while the subject works (:class:`_StepTexts`); a
vector that fails early drains the answers still on the way, or restarts the
subject, so the next vector never reads them.
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, cast

from tool_call_closure import __version__
from tool_call_closure.conformance.agents import allowed_problem, drive
from tool_call_closure.conformance.compare import diff_response, diff_responses, expected_text, first_difference
from tool_call_closure.conformance.report import REPORT_FORMAT, ConformanceRun, VectorResult
from tool_call_closure.conformance.subject import (
    DEFAULT_TIMEOUT,
    InProcessSubject,
    ProcessSubject,
    Subject,
    SubjectError,
    encode_request,
    parse_response_line,
)
from tool_call_closure.conformance.vectors import Vector, spec_hash
from tool_call_closure.machine.table import TABLE

__all__ = ["DEFAULT_VECTOR_TIMEOUT", "HELLO", "SubjectSpec", "run_conformance", "select_vectors"]

HELLO: Final = {"id": "hello", "cmd": "hello", "protocol": 1}
DEFAULT_VECTOR_TIMEOUT: Final = 60.0


@dataclass(frozen=True, slots=True)
class SubjectSpec:
    """How to start a subject: a command, or ``None`` for the embedded reference."""

    command: tuple[str, ...] | None = None
    timeout: float = DEFAULT_TIMEOUT  # for one request, nested responses included
    vector_timeout: float = DEFAULT_VECTOR_TIMEOUT  # for one whole vector
    capabilities: tuple[str, ...] | None = None  # the embedded reference's, when not all (a frozen v1 subject)

    def start(self) -> Subject:
        if self.command is None:
            return InProcessSubject(capabilities=self.capabilities)
        return ProcessSubject(self.command, timeout=self.timeout)

    def describe(self) -> str | list[str]:
        return "reference (in process)" if self.command is None else list(self.command)


def select_vectors(vectors: Iterable[Vector], tags: Sequence[str] = (), skip_tags: Sequence[str] = ()) -> list[Vector]:
    """Vectors carrying any of ``tags`` (all when empty) and none of ``skip_tags``.

    A tag ending in ``:`` selects a whole namespace (``deviation:`` = every deviation-tagged vector).
    """

    def matches(vector_tags: set[str], wanted: str) -> bool:
        return any(t.startswith(wanted) for t in vector_tags) if wanted.endswith(":") else wanted in vector_tags

    chosen = []
    for vector in vectors:
        vector_tags = vector.all_tags()
        if tags and not any(matches(vector_tags, t) for t in tags):
            continue
        if any(matches(vector_tags, t) for t in skip_tags):
            continue
        chosen.append(vector)
    return chosen


def _manifest_hash(vectors: Sequence[Vector]) -> str | None:
    if not vectors:
        return None
    manifest = vectors[0].path.parent
    while manifest.parent != manifest and not (manifest / "manifest.json").is_file():
        manifest = manifest.parent
    path = manifest / "manifest.json"
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


class _Session:
    """A subject with its handshake; restarted after it breaks."""

    def __init__(self, spec: SubjectSpec) -> None:
        self.spec = spec
        self.subject: Subject | None = None
        self.implementation: Any = None
        self.capabilities: list[str] = []

    def ensure(self) -> Subject:
        if self.subject is None:
            subject = self.spec.start()
            try:
                (response,) = subject.send(HELLO)[-1:]
            except SubjectError:
                subject.close()
                raise
            problem = _hello_problem(response)
            if problem is not None:
                subject.close()
                raise SubjectError(f"hello: {problem}: {json.dumps(response, ensure_ascii=True)[:300]}")
            self.implementation = response["implementation"]
            self.capabilities = list(response.get("capabilities", []))
            self.subject = subject
        return self.subject

    def restart(self) -> None:
        if self.subject is not None:
            self.subject.close()
        self.subject = None

    def stderr(self) -> str:
        return self.subject.stderr_text() if self.subject is not None else ""


def _hello_problem(response: dict[str, Any]) -> str | None:
    """What is wrong with a hello response, or None."""
    if "error" in response:
        return "the subject refused the handshake"
    if type(response.get("protocol")) is not int or response["protocol"] != 1:
        return "the subject does not speak protocol 1"
    implementation = response.get("implementation")
    if not isinstance(implementation, dict) or not all(
        isinstance(implementation.get(key), str) for key in ("name", "language", "version")
    ):
        return "implementation must be an object with string name, language and version"
    capabilities = response.get("capabilities", [])
    if not isinstance(capabilities, list) or not all(isinstance(c, str) for c in capabilities):
        return "capabilities must be an array of strings"
    return None


def _locate(expected: list[dict[str, Any]], actual: list[dict[str, Any]]) -> tuple[str, Any, Any]:
    """The JSON path (into the step's list of response lines) of the first field where they disagree."""
    for index, (want, got) in enumerate(zip(expected, actual, strict=False)):
        if diff_response(want, got) is not None:
            found = first_difference(want, got, f"$[{index}]")
            if found is not None:
                return found
    return "$", expected, actual  # a different number of lines


class _StepTexts:
    """The line each step of a vector sends and the text it expects back, worked out one step ahead.

    While a subprocess subject works on step *k*, the runner encodes what step *k* expects and the line of
    step *k* + 1 (:meth:`Subject.send_lines`' ``meanwhile``), so that work is off the path that waits.  An
    encoding that fails raises when its step is reached, as if nothing had been worked out ahead.
    """

    __slots__ = ("_expected", "_lines", "_steps")

    def __init__(self, steps: list[dict[str, Any]]) -> None:
        self._steps = steps
        self._lines: dict[int, str | Exception] = {}
        self._expected: dict[int, list[str] | None] = {}

    def request_line(self, index: int) -> str:
        if index not in self._lines:
            self._encode(index)
        line = self._lines.pop(index)
        if isinstance(line, Exception):
            raise line
        return line

    def keep(self, index: int, line: str) -> None:
        """Put back step ``index``'s line (taken, then not sent ahead)."""
        self._lines[index] = line

    def expected(self, index: int) -> list[str] | None:
        if index not in self._expected:
            self._expected[index] = expected_text(self._steps[index]["responses"])
        return self._expected.pop(index)

    def prepare(self, index: int) -> None:
        """Work out step ``index``'s expected text and step ``index + 1``'s line (raises nothing)."""
        self._expected[index] = expected_text(self._steps[index]["responses"])
        if index + 1 < len(self._steps):
            self._encode(index + 1)

    def _encode(self, index: int) -> None:
        try:
            self._lines[index] = encode_request(self._steps[index]["request"])
        except Exception as exc:  # noqa: BLE001 - raised at its own step, by request_line
            self._lines[index] = exc


# How much of a vector the runner writes ahead of reading the answers (a subprocess subject): well within a
# pipe's buffer, so writing never waits on the subject, whatever it does.
_AHEAD_BYTES: Final = 16 * 1024


def _send_ahead(subject: Subject, texts: _StepTexts, count: int, deadline: float) -> int:
    """Write the first steps' requests at once to a subprocess subject; return how many were written.

    The subject then answers step *k* while the runner compares step *k* − 1:
    the two processes work side by side instead of in turns.  The answers are
    read one step at a time, as before, so what a step is told and what it
    answers is unchanged.  A step whose request does not encode, and the
    steps after it, are sent as they come (the error is raised at its step).
    """
    if not isinstance(subject, ProcessSubject):
        return 0
    lines: list[str] = []
    size = 0
    for index in range(count):
        try:
            line = texts.request_line(index)
        except Exception:  # noqa: BLE001 - raised again at its own step
            break
        size += len(line.encode("utf-8")) + 1
        if size > _AHEAD_BYTES:
            texts.keep(index, line)
            break
        lines.append(line)
    if lines:
        subject.deadline = deadline
        subject.send_ahead(lines)
    return len(lines)


def _run_vector(session: _Session, vector: Vector) -> VectorResult:
    started = time.perf_counter()
    result = VectorResult(vector.id, vector.sha256, "passed", vector.tags, 0.0)
    result.description = str(vector.data.get("description", "")) or None
    # A duck-typed spec (anything with start/describe/command/timeout) gets the default limit.
    vector_timeout = getattr(session.spec, "vector_timeout", DEFAULT_VECTOR_TIMEOUT)
    deadline = started + vector_timeout
    try:
        subject = session.ensure()
        missing = sorted(set(vector.requires) - set(session.capabilities))
        if missing:
            result.outcome = "skipped"
            result.missing = missing
            result.message = f"the subject lacks {', '.join(missing)}"
            return result
        if "allowed" in vector.data:  # a concurrent scenario (capability agents): one of its allowed outcomes
            return _run_concurrent(subject, vector, result, deadline)
        steps = vector.steps
        texts = _StepTexts(steps)
        ahead = _send_ahead(subject, texts, len(steps), deadline)
        for index, step in enumerate(steps):
            if isinstance(subject, ProcessSubject):
                subject.deadline = deadline
            if time.perf_counter() > deadline:
                raise SubjectError(f"the vector took longer than {vector_timeout:g} s")
            if index < ahead:
                lines = cast(ProcessSubject, subject).receive_lines()
            else:
                lines = subject.send_lines(texts.request_line(index), functools.partial(texts.prepare, index))
            if texts.expected(index) == lines:  # the common case: no parsing, no walk (compare.expected_text)
                result.steps += 1
                continue
            actual = [parse_response_line(line) for line in lines]
            result.steps += 1
            problem = diff_responses(step["responses"], actual)
            if problem is not None:
                result.outcome = "failed"
                result.step = index + 1
                result.request = step["request"]
                result.expected = step["responses"]
                result.actual = actual
                result.message = problem
                result.path, result.expected_value, result.actual_value = _locate(step["responses"], actual)
                if index + 1 < ahead:  # requests written ahead are still to be answered: drain, or start afresh
                    try:
                        for _ in range(index + 1, ahead):
                            cast(ProcessSubject, subject).receive_lines()
                    except SubjectError:
                        session.restart()
                break
    except SubjectError as exc:
        result.outcome = "errored"
        over = time.perf_counter() >= deadline
        result.message = f"the vector took longer than {vector_timeout:g} s ({exc})" if over else str(exc)
        result.stderr = session.stderr()[-4000:] or None
        session.restart()
    finally:
        result.seconds = time.perf_counter() - started
    return result


def _run_concurrent(subject: Subject, vector: Vector, result: VectorResult, deadline: float) -> VectorResult:
    """Run a vector with agents (:func:`.agents.drive`) and check its answers are one of its allowed outcomes."""
    steps = vector.steps
    records = drive(subject, [step["request"] for step in steps], deadline)
    result.steps = len(records)
    actual = [record.lines for record in records]
    problem = allowed_problem(vector.data["allowed"], steps, actual)
    if problem is not None:
        result.outcome = "failed"
        result.message = problem
        result.actual = [line for lines in actual for line in lines]
    return result


def run_conformance(
    vectors: Sequence[Vector],
    spec: SubjectSpec,
    progress: Callable[[int, int, dict[str, int]], None] | None = None,
) -> ConformanceRun:
    """Run ``vectors`` against the subject ``spec`` describes."""
    session = _Session(spec)
    run = ConformanceRun(header={})
    started = time.perf_counter()
    try:
        try:
            session.ensure()
            started = time.perf_counter()  # throughput counts the vectors, not the subject's start-up
        except SubjectError as exc:
            run.header = _header(spec, session, vectors, error=str(exc))
            run.results = [
                VectorResult(v.id, v.sha256, "errored", v.tags, 0.0, message=f"the subject did not start: {exc}")
                for v in vectors
            ]
            return run
        run.header = _header(spec, session, vectors)
        for number, vector in enumerate(vectors, 1):
            run.results.append(_run_vector(session, vector))
            if progress is not None:
                progress(number, len(vectors), run.counts())
    finally:
        session.restart()
        run.seconds = time.perf_counter() - started
    return run


def _header(
    spec: SubjectSpec, session: _Session, vectors: Sequence[Vector], error: str | None = None
) -> dict[str, Any]:
    header: dict[str, Any] = {
        "type": "header",
        "format": REPORT_FORMAT,
        "runner": {"name": "tool-call-closure conform", "version": __version__},
        "spec": {"version": TABLE.version, "sha256": spec_hash()},
        "manifest": {"sha256": _manifest_hash(vectors)},
        "subject": {
            "command": spec.describe(),
            "implementation": session.implementation,
            "capabilities": session.capabilities,
        },
        "vectors": len(vectors),
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    if error is not None:
        header["subject"]["error"] = error
    return header
