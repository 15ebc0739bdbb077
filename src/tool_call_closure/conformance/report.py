"""The conformance report: its data (one result per vector, the run), the JSONL file, the human summary, and
the diff of two reports.

Theory of operation
-------------------
Each vector ends in one of four outcomes, kept apart because they mean
different things:

* ``passed`` — every response agreed;
* ``failed`` — the behaviour differs: the report names the first divergent
  step with the request, the expected and the actual responses, and the JSON
  path of the first differing field;
* ``errored`` — the harness broke (the subject crashed, hung past its
  timeout, or wrote something that is not a response line); its stderr is
  kept;
* ``skipped`` — the vector needs a capability the subject did not declare in
  its ``hello``.

The JSONL report (schema ``spec/report.schema.json``) has a header (runner,
spec and manifest hashes, the subject's identity), one line per vector keyed
by ``id`` and ``sha256``, and a footer with the counts and the throughput.
:func:`diff_reports` joins two reports on the vector id, so runs are
comparable even when vectors were added or changed.  A report is read as
untrusted input: a malformed one is a :class:`ReportError` naming the line.
The runner that fills a :class:`ConformanceRun` is :mod:`.runner`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Final

__all__ = [
    "OUTCOMES",
    "REPORT_FORMAT",
    "ConformanceRun",
    "ReportError",
    "VectorResult",
    "diff_reports",
    "progress_printer",
    "read_report",
    "summarize",
    "write_report",
]

REPORT_FORMAT: Final = "tool-call-closure.report/1"
OUTCOMES: Final = ("passed", "failed", "errored", "skipped")


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
