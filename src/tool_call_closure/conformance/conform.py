"""The conformance kit's front: the runner, its report, report diffs, and the trace checker.

Theory of operation
-------------------
``conform`` runs vectors against a subject (:mod:`.runner`) and reports
each vector's outcome (:mod:`.report`: passed, failed, errored, skipped; the
JSONL report and its diff).  This module keeps the names the command line
and port authors import (everything of both, re-exported) and holds the
trace checker.

``check`` replays a recorded trace (requests and the responses a port or a
production system gave) through the reference and reports the first step
where the recording differs.  A trace is untrusted input: it is parsed as
protocol data only, and malformed lines are reported with their line number.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import IO, Any

from tool_call_closure.conformance.compare import diff_responses
from tool_call_closure.conformance.report import (
    OUTCOMES,
    REPORT_FORMAT,
    ConformanceRun,
    ReportError,
    VectorResult,
    diff_reports,
    progress_printer,
    read_report,
    summarize,
    write_report,
)
from tool_call_closure.conformance.runner import (
    DEFAULT_VECTOR_TIMEOUT,
    HELLO,
    SubjectSpec,
    run_conformance,
    select_vectors,
)
from tool_call_closure.conformance.subject import InProcessSubject

__all__ = [
    "DEFAULT_VECTOR_TIMEOUT",
    "HELLO",
    "OUTCOMES",
    "REPORT_FORMAT",
    "ConformanceRun",
    "ReportError",
    "SubjectSpec",
    "TraceError",
    "VectorResult",
    "check_trace",
    "diff_reports",
    "progress_printer",
    "read_report",
    "run_conformance",
    "select_vectors",
    "summarize",
    "write_report",
]


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
    """Replay a recorded trace through the reference; 0 if every recorded response agrees, 1 at the first that
    does not, 2 for a malformed trace or one with nothing to check (no request but ``hello``)."""
    try:
        groups = _read_trace(lines)
    except TraceError as exc:
        out.write(f"malformed trace: {exc}\n")
        return 2
    checked = sum(1 for _, request, _ in groups if request.get("cmd") != "hello")
    if not checked:
        # An empty file (a wrong path) or a trace cut after the handshake: agreement would be a false pass.
        out.write(f"nothing to check: the trace holds no request{' but hello' if groups else ''}\n")
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
    out.write(f"trace agrees with the reference: {checked} request{'' if checked == 1 else 's'} checked\n")
    return 0
