"""The conformance runner, its report, report diffs, and the trace checker.

Theory of operation
-------------------
``conform`` drives a subject (the embedded reference by default, or any
command that serves protocol v1) through every selected vector and compares
each response with the vector's expectation (:mod:`.compare`: the text first,
then, for a line whose text differs, the parsed value).  Each vector
ends in one of four outcomes, kept apart because they mean different things:

* ``passed`` — every response agreed;
* ``failed`` — the behaviour differs: the report names the first divergent
  step with the request, the expected and the actual responses;
* ``errored`` — the harness broke (the subject crashed, hung past the
  per-request timeout, or wrote something that is not a response line); the
  subject is restarted for the next vector and its stderr is kept;
* ``skipped`` — the vector needs a capability the subject did not declare in
  its ``hello``.

The JSONL report has a header (runner, spec and manifest hashes, the subject's
identity), one line per vector keyed by ``id`` and ``sha256``, and a footer
with the counts and the throughput.  ``report diff`` joins two reports on the
vector id, so runs are comparable even when vectors were added or changed.

``check`` replays a recorded trace (requests and the responses a port or a
production system gave) through the reference and reports the first step
where the recording differs.  A trace is untrusted input: it is parsed as
protocol data only, and malformed lines are reported with their line number.
"""

from __future__ import annotations

import functools
import hashlib
import json
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Final, cast

from tool_call_closure import __version__
from tool_call_closure.conformance.compare import diff_response, diff_responses, expected_text, first_difference
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

__all__ = [
    "REPORT_FORMAT",
    "ConformanceRun",
    "SubjectSpec",
    "VectorResult",
    "check_trace",
    "diff_reports",
    "read_report",
    "run_conformance",
    "select_vectors",
]

REPORT_FORMAT: Final = "tool-call-closure.report/1"
OUTCOMES: Final = ("passed", "failed", "errored", "skipped")
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


@dataclass(slots=True)
class VectorResult:
    id: str
    sha256: str
    outcome: str
    tags: list[str]
    seconds: float
    steps: int = 0
    step: int | None = None  # 1-based: step 1 is the vector's first request (the numbering of fuzz and check too)
    description: str | None = None
    path: str | None = None  # JSON path of the first differing field in the step's response lines
    expected_value: Any = None  # the values at that path, untruncated
    actual_value: Any = None
    missing: list[str] | None = None  # the capabilities behind a skip
    request: Any = None
    expected: Any = None
    actual: Any = None
    message: str | None = None
    stderr: str | None = None

    def to_line(self) -> dict[str, Any]:
        line: dict[str, Any] = {"type": "vector", "id": self.id, "sha256": self.sha256, "outcome": self.outcome}
        line["duration_ms"] = round(self.seconds * 1000, 3)
        if self.tags:
            line["tags"] = self.tags
        for key in ("step", "description", "path", "request", "expected", "actual", "message", "stderr", "missing"):
            value = getattr(self, key)
            if value is not None:
                line[key] = value
        if self.path is not None:
            line["expected_value"] = self.expected_value
            line["actual_value"] = self.actual_value
        return line


@dataclass(slots=True)
class ConformanceRun:
    header: dict[str, Any]
    results: list[VectorResult] = field(default_factory=list)
    seconds: float = 0.0

    def counts(self) -> dict[str, int]:
        return {outcome: sum(1 for r in self.results if r.outcome == outcome) for outcome in OUTCOMES}

    @property
    def steps(self) -> int:
        return sum(r.steps for r in self.results)

    def footer(self) -> dict[str, Any]:
        rate = self.steps / self.seconds if self.seconds > 0 else 0.0
        return {
            "type": "footer",
            "counts": self.counts(),
            "steps": self.steps,
            "seconds": round(self.seconds, 3),
            "steps_per_second": round(rate, 1),
        }

    def ok(self) -> bool:
        counts = self.counts()
        return counts["failed"] == 0 and counts["errored"] == 0


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


def write_report(run: ConformanceRun, out: IO[str]) -> None:
    """Write the JSONL report: header, one line per vector, footer."""
    out.write(json.dumps(run.header, ensure_ascii=True) + "\n")
    for result in run.results:
        out.write(json.dumps(result.to_line(), ensure_ascii=True) + "\n")
    out.write(json.dumps(run.footer(), ensure_ascii=True) + "\n")


def summarize(run: ConformanceRun, out: IO[str], *, limit: int = 20) -> None:
    """The human summary: counts, throughput, and the first divergent step of each failure."""
    subject = run.header.get("subject", {})
    implementation = subject.get("implementation") or {}
    who = " ".join(str(implementation.get(k, "?")) for k in ("language", "name", "version")) if implementation else "?"
    out.write(f"subject: {who} — {subject.get('command')}\n")
    counts = run.counts()
    footer = run.footer()
    out.write(
        f"vectors: {len(run.results)}  passed {counts['passed']}  failed {counts['failed']}  "
        f"errored {counts['errored']}  skipped {counts['skipped']}  "
        f"({footer['steps']} steps in {footer['seconds']:.2f} s, {footer['steps_per_second']:.0f} steps/s)\n"
    )
    behind: dict[str, int] = {}
    for result in run.results:
        for capability in result.missing or ():
            behind[capability] = behind.get(capability, 0) + 1
    for capability, count in sorted(behind.items()):
        out.write(f"skipped: {count} vector{'s' if count != 1 else ''} need the capability {capability!r}\n")
    shown = 0
    for result in run.results:
        if result.outcome not in ("failed", "errored"):
            continue
        shown += 1
        if shown > limit:
            out.write(f"… and {counts['failed'] + counts['errored'] - limit} more (see the report)\n")
            break
        deviations = [t for t in result.tags if t.startswith("deviation:")]
        tags = f" [{', '.join(deviations)}]" if deviations else ""
        out.write(f"\n{result.outcome.upper()} {result.id}{tags}\n")
        if result.description:
            out.write(f"  {result.description}\n")
        if result.outcome == "failed":
            out.write(f"  step {result.step}: {result.message}\n")
            if result.path is not None:
                out.write(f"  first difference at {result.path}:\n")
                out.write(f"    expected {json.dumps(result.expected_value, ensure_ascii=False)}\n")
                out.write(f"    actual   {json.dumps(result.actual_value, ensure_ascii=False)}\n")
            out.write(f"  request  {json.dumps(result.request, ensure_ascii=False)}\n")
            out.write(f"  expected {json.dumps(result.expected, ensure_ascii=False)}\n")
            out.write(f"  actual   {json.dumps(result.actual, ensure_ascii=False)}\n")
        else:
            out.write(f"  {result.message}\n")
            if result.stderr:
                out.write("  stderr: " + result.stderr.strip().replace("\n", "\n          ")[-1500:] + "\n")


# --------------------------------------------------------------------------- report diff


class ReportError(ValueError):
    """A report file is malformed."""


def read_report(path: Path) -> tuple[dict[str, Any], dict[str, dict[str, Any]], dict[str, Any]]:
    """(header, vector lines by id, footer) of a JSONL report."""
    header: dict[str, Any] = {}
    footer: dict[str, Any] = {}
    lines: dict[str, dict[str, Any]] = {}
    try:
        content = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ReportError(f"{path}: not a report: not UTF-8 text (byte {exc.start})") from None
    for number, text in enumerate(content.split("\n"), 1):
        if not text.strip():
            continue
        try:
            line = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise ReportError(f"{path}:{number}: not JSON: {exc}") from None
        kind = line.get("type") if isinstance(line, dict) else None
        if kind == "header":
            header = line
        elif kind == "footer":
            footer = line
        elif kind == "vector" and isinstance(line.get("id"), str):
            lines[line["id"]] = line
        else:
            raise ReportError(f"{path}:{number}: not a report line")
    if header.get("format") != REPORT_FORMAT:
        raise ReportError(f"{path}: not a {REPORT_FORMAT} report")
    if not footer:
        raise ReportError(f"{path}: truncated: the report has no footer line")
    for vector_id, line in lines.items():
        if line.get("outcome") not in OUTCOMES or not isinstance(line.get("sha256", ""), str):
            raise ReportError(f"{path}: vector {vector_id}: outcome must be one of {', '.join(OUTCOMES)}")
    return header, lines, footer


def diff_reports(a: Path, b: Path, out: IO[str]) -> int:
    """Compare two reports by vector id; return 0 when every vector has the same outcome and hash."""
    header_a, lines_a, _ = read_report(a)
    header_b, lines_b, _ = read_report(b)
    differences = 0
    if header_a.get("spec") != header_b.get("spec"):
        out.write(f"spec: {header_a.get('spec')} -> {header_b.get('spec')}\n")
    for vector_id in sorted(set(lines_a) | set(lines_b)):
        left, right = lines_a.get(vector_id), lines_b.get(vector_id)
        if left is None:
            out.write(f"+ {vector_id}: {right['outcome']} (only in {b.name})\n")  # type: ignore[index]
            differences += 1
        elif right is None:
            out.write(f"- {vector_id}: {left['outcome']} (only in {a.name})\n")
            differences += 1
        elif left.get("sha256") != right.get("sha256"):
            out.write(f"~ {vector_id}: the vector changed ({left['outcome']} -> {right['outcome']})\n")
            differences += 1
        elif left["outcome"] != right["outcome"]:
            out.write(f"! {vector_id}: {left['outcome']} -> {right['outcome']}\n")
            differences += 1
    out.write(f"{differences} difference{'s' if differences != 1 else ''} between {a.name} and {b.name}\n")
    return 0 if differences == 0 else 1


# --------------------------------------------------------------------------- trace checker


class TraceError(ValueError):
    """A trace file is malformed (the message names the line)."""


def _read_trace(lines: Iterable[str]) -> list[tuple[int, dict[str, Any], list[tuple[int, dict[str, Any]]]]]:
    """Group a trace into (line number, request, [(line number, response)…])."""
    groups: list[tuple[int, dict[str, Any], list[tuple[int, dict[str, Any]]]]] = []
    for number, text in enumerate(lines, 1):
        if not text.strip(" \t\r\n"):
            continue
        try:
            value = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise TraceError(f"line {number}: not JSON: {exc}") from None
        if not isinstance(value, dict):
            raise TraceError(f"line {number}: a trace line must be a JSON object (a request or a response)")
        if "cmd" in value:
            groups.append((number, value, []))
        elif "ok" in value or "error" in value or "protocol" in value:
            if not groups:
                raise TraceError(f"line {number}: a response before any request")
            groups[-1][2].append((number, value))
        else:
            raise TraceError(f"line {number}: neither a request (no cmd) nor a response (no ok, error or protocol)")
    return groups


def check_trace(lines: Iterable[str], out: IO[str], *, context: int = 3) -> int:
    """Replay a recorded trace through the reference; return 0 if every recorded response agrees."""
    try:
        groups = _read_trace(lines)
    except TraceError as exc:
        out.write(f"malformed trace: {exc}\n")
        return 2
    reference = InProcessSubject()
    history: list[str] = []
    for index, (number, request, recorded) in enumerate(groups):
        expected = reference.send(request)
        if request.get("cmd") == "hello":  # implementations name themselves differently
            history.append(f"  line {number}: {json.dumps(request)[:200]}")
            continue
        problem = diff_responses(expected, [response for _, response in recorded])
        if problem is not None:
            out.write(f"step {index + 1} (request on line {number}) differs from the reference: {problem}\n")
            if history:
                out.write("context:\n" + "\n".join(history[-context:]) + "\n")
            out.write(f"  request   line {number}: {json.dumps(request, ensure_ascii=False)}\n")
            for line_number, response in recorded:
                out.write(f"  recorded  line {line_number}: {json.dumps(response, ensure_ascii=False)}\n")
            for response in expected:
                out.write(f"  reference: {json.dumps(response, ensure_ascii=False)}\n")
            return 1
        history.append(f"  line {number}: {json.dumps(request, ensure_ascii=False)[:200]}")
    out.write(f"trace agrees with the reference: {len(groups)} requests checked\n")
    return 0


def progress_printer(stream: IO[str] = sys.stderr) -> Callable[[int, int, dict[str, int]], None] | None:
    """A live progress line on a terminal (nothing when stderr is not a terminal)."""
    if not stream.isatty():
        return None

    def show(done: int, total: int, counts: dict[str, int]) -> None:
        stream.write(
            f"\r[{done}/{total}] passed {counts['passed']} failed {counts['failed']} "
            f"errored {counts['errored']} skipped {counts['skipped']}"
        )
        if done == total:
            stream.write("\n")
        stream.flush()

    return show
