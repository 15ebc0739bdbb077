"""The conformance kit: vectors (schema, drift, coverage), the runner, reports, the trace checker, the fuzzer.

The runs against the JavaScript original are skipped when node or the original is missing.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from referencing import Registry, Resource

from tables import raw_table, row
from tool_call_closure.conformance.compare import diff_responses
from tool_call_closure.conformance.conform import (
    SubjectSpec,
    check_trace,
    diff_reports,
    read_report,
    run_conformance,
    select_vectors,
    summarize,
    write_report,
)
from tool_call_closure.conformance.coverage import coverage_table
from tool_call_closure.conformance.fuzz import ALL_EXPORTS, EXPORTS, PROBED_EXPORTS, fuzz, probe_exports
from tool_call_closure.conformance.serve import parse_request_line
from tool_call_closure.conformance.subject import (
    InProcessSubject,
    ProcessSubject,
    Subject,
    SubjectError,
    locate_original,
    original_command,
    reference_command,
)
from tool_call_closure.conformance.vectors import Vector, drift, load_vectors
from tool_call_closure.machine.table import TABLE

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "spec"
VECTORS = load_vectors(SPEC / "vectors")
ORIGINAL = locate_original()
HAVE_ORIGINAL = shutil.which("node") is not None and ORIGINAL is not None and ORIGINAL.is_file()
needs_original = pytest.mark.skipif(not HAVE_ORIGINAL, reason="node or the original is missing (set TCC_JS)")


def _schema(name: str) -> dict[str, Any]:
    return json.loads((SPEC / name).read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _validator(name: str) -> jsonschema.Draft202012Validator:
    registry: Registry[Any] = Registry().with_resources(
        (f"https://tool-call-closure.invalid/spec/{n}", Resource.from_contents(_schema(n)))
        for n in ("protocol.schema.json", "vector.schema.json", "report.schema.json")
    )
    return jsonschema.Draft202012Validator(_schema(name), registry=registry)


def _deviation_ids(vectors: list[Vector]) -> set[str]:
    return {v.id for v in vectors if any(t.startswith("deviation:") for t in v.tags)}


# --------------------------------------------------------------------------- vectors


def test_vectors_match_their_schema_and_the_protocol_schema() -> None:
    validator = _validator("vector.schema.json")
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)  # the validator recurses through the content-deep-nesting vector's 300 levels
    try:
        _validate_all(validator)
    finally:
        sys.setrecursionlimit(limit)


def _validate_all(validator: jsonschema.Draft202012Validator) -> None:
    protocol = _validator("protocol.schema.json")
    request_schema = {"$ref": "https://tool-call-closure.invalid/spec/protocol.schema.json#/$defs/request"}
    response_schema = {"$ref": "https://tool-call-closure.invalid/spec/protocol.schema.json#/$defs/response"}
    for vector in VECTORS:
        for index, step in enumerate(vector.steps):
            responses = step["responses"]
            for response in responses:
                assert protocol.evolve(schema=response_schema).is_valid(response), (vector.id, index, response)
            malformed = any(r.get("error", {}).get("kind") == "ProtocolError" for r in responses)
            if malformed:
                continue
            text = step["request"]
            request = parse_request_line(text) if isinstance(text, str) else text  # the protocol's number rule
            # (a vector may send a malformed request on purpose; it then expects a ProtocolError, skipped above)
            assert protocol.evolve(schema=request_schema).is_valid(request), (vector.id, index, request)
    for vector in VECTORS:
        errors = [f"{vector.path.name}: {e.json_path}: {e.message[:200]}" for e in validator.iter_errors(vector.data)]
        assert errors == []


def test_the_manifest_lists_every_vector_with_its_hash() -> None:
    manifest = json.loads((SPEC / "vectors" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["format"] == "tool-call-closure.manifest/1"
    assert {(e["id"], e["sha256"]) for e in manifest["vectors"]} == {(v.id, v.sha256) for v in VECTORS}
    assert manifest["count"] == len(VECTORS)


def test_committed_vectors_do_not_drift_from_the_reference() -> None:
    """The consensus-specs rule: expectations are what the reference produces now."""
    drifted = drift(SPEC / "vectors")
    assert drifted == [], "run: tool-call-closure vectors"


def test_coverage_gate() -> None:
    text, complete = coverage_table(VECTORS)
    print(text)
    assert complete, text


def test_the_turn_guard_vectors_need_the_capability_and_pin_deviation_d20() -> None:
    """D20 is an extension: every vector that uses it requires turn-guard (so a subject without it, the original
    included, skips it) and carries the deviation's tag; no other vector needs the capability."""
    from tool_call_closure.conformance.vectors import uses_turn_guard

    guarded = {v.id for v in VECTORS if "turn-guard" in v.requires}
    assert guarded == {v.id for v in VECTORS if uses_turn_guard(s["request"] for s in v.steps)}
    assert guarded == {v.id for v in VECTORS if "deviation:D20" in v.tags}
    assert len(guarded) >= 9
    assert "reentrancy-recheck-begin-stale-turn-observable" in guarded


@pytest.mark.parametrize(
    ("requests", "needed"),
    [
        ([{"cmd": "call", "method": "turnToken"}], True),
        ([{"cmd": "call", "method": "begin", "args": [[], {"turn": None}]}], True),
        ([{"cmd": "call", "method": "begin", "args": [[], "extra", 3]}], False),
        ([{"cmd": "call", "method": "begin", "args": [[], {}]}], False),
        ([{"cmd": "call", "method": "activeGeneration", "args": [{"turn": 1}]}], False),
        (
            [
                {
                    "cmd": "call",
                    "method": "close",
                    "args": [{"$hook": {"calls": [{"id": 9, "cmd": "call", "method": "turnToken"}]}}],
                }
            ],
            True,
        ),
    ],
)
def test_vectors_derive_the_turn_guard_requirement(requests: list[Any], needed: bool) -> None:
    from tool_call_closure.conformance.vectors import generate

    data = {"id": "x", "description": "d", "origin": "hand", "steps": [{"request": {"id": 1, "cmd": "new"}}]}
    data["steps"] += [{"request": {"id": n, **r}} for n, r in enumerate(requests, 2)]
    assert ("turn-guard" in generate(data)["requires"]) is needed


def test_drift_is_detected(tmp_path: Path) -> None:
    copy = tmp_path / "vectors"
    shutil.copytree(SPEC / "vectors", copy)
    victim = next(copy.rglob("settle-forged-handle-is-stale.json"))
    data = json.loads(victim.read_text())
    data["steps"][2]["responses"][0]["ok"]["observedStatus"] = None
    victim.write_text(json.dumps(data))
    assert victim in drift(copy)


def test_vector_ids_are_unique_and_are_their_file_names(tmp_path: Path) -> None:
    from tool_call_closure.conformance.vectors import VectorError

    source = next((SPEC / "vectors").rglob("settle-forged-handle-is-stale.json"))
    (tmp_path / "a").mkdir()
    shutil.copy(source, tmp_path / "a" / source.name)
    (tmp_path / "b").mkdir()
    shutil.copy(source, tmp_path / "b" / source.name)
    with pytest.raises(VectorError, match="already used"):
        load_vectors(tmp_path)
    shutil.rmtree(tmp_path / "b")
    shutil.copy(source, tmp_path / "a" / "renamed.json")
    with pytest.raises(VectorError, match="file name must be the vector id"):
        load_vectors(tmp_path)


# --------------------------------------------------------------------------- the runner


def test_conform_passes_on_the_reference_in_process_and_as_a_subprocess() -> None:
    for spec in (SubjectSpec(), SubjectSpec(tuple(reference_command()))):
        run = run_conformance(VECTORS, spec)
        assert run.counts() == {"passed": len(VECTORS), "failed": 0, "errored": 0, "skipped": 0}
        assert run.header["subject"]["implementation"]["language"] == "python"


def test_conform_report_lines_match_the_report_schema(tmp_path: Path) -> None:
    run = run_conformance(VECTORS[:5], SubjectSpec())
    report = io.StringIO()
    write_report(run, report)
    validator = _validator("report.schema.json")
    lines = [json.loads(line) for line in report.getvalue().splitlines()]
    assert [line["type"] for line in lines] == ["header"] + ["vector"] * 5 + ["footer"]
    for line in lines:
        assert list(validator.iter_errors(line)) == []


@needs_original
def test_the_original_fails_exactly_the_deviation_vectors() -> None:
    assert ORIGINAL is not None
    run = run_conformance(VECTORS, SubjectSpec(tuple(original_command(ORIGINAL))))
    failed = {r.id for r in run.results if r.outcome == "failed"}
    skipped = {r.id for r in run.results if r.outcome == "skipped"}
    assert run.counts()["errored"] == 0
    # The original has neither the turn guard (D20) nor the Gemini and Bedrock exports (D8) nor content parts (D22, D26)
    # nor agents (concurrency) nor export options (D22), extensions of the reference behind capabilities: their vectors
    # are skipped, not failed.
    lacking = {"turn-guard", "gemini-export", "bedrock-export", "content-parts", "agents", "export-options"}
    lacking.add("content-diagnostics")
    assert run.header["subject"]["capabilities"] == ["hook", "tamper", "nesting-limit", "undefined-properties"]
    assert skipped == {v.id for v in VECTORS if set(v.requires) & lacking}
    assert {c for r in run.results if r.outcome == "skipped" for c in r.missing or ()} == lacking
    assert failed == _deviation_ids([v for v in VECTORS if v.id not in skipped])
    assert run.header["subject"]["implementation"]["language"] == "javascript"


def _broken_table(tmp_path: Path) -> Path:
    """The reference with the unknown-call and duplicate rejection reasons swapped in the admit phase."""
    raw = raw_table()
    unknown, duplicate = row(raw, "settle.admit.unknown"), row(raw, "settle.admit.duplicate")
    unknown["result"]["reject"], duplicate["result"]["reject"] = "duplicate_settlement", "unknown_call"
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(raw))
    return path


def test_conform_catches_a_broken_subject(tmp_path: Path) -> None:
    broken = SubjectSpec((*reference_command(), "--table", str(_broken_table(tmp_path))))
    run = run_conformance(VECTORS, broken)
    failed = [r for r in run.results if r.outcome == "failed"]
    assert failed, "the broken subject passed every vector"
    assert all(r.message for r in failed)


def test_a_subprocess_subject_gets_a_vectors_requests_ahead_of_its_answers(tmp_path: Path) -> None:
    """The runner writes the steps of a vector before reading their answers: the subject's first read after
    the handshake holds several requests (one at a time, it would hold one)."""
    log = tmp_path / "reads.txt"
    subject = tmp_path / "counting.py"
    subject.write_text(
        "import json, os, sys\n"
        f"log = open({str(log)!r}, 'w')\n"
        "buffer = b''\n"
        "while True:\n"
        "    chunk = os.read(0, 1 << 16)\n"
        "    if not chunk:\n"
        "        break\n"
        "    buffer += chunk\n"
        "    *lines, buffer = buffer.split(b'\\n')\n"
        "    log.write(f'{len(lines)}\\n'); log.flush()\n"
        "    for line in lines:\n"
        "        r = json.loads(line)\n"
        "        if r.get('cmd') == 'hello':\n"
        "            answer = {'id': r['id'], 'protocol': 1, 'implementation': {'name': 'x', 'language': 'py',"
        " 'version': '0'}, 'capabilities': []}\n"
        "        else:\n"
        "            answer = {'id': r['id'], 'ok': None}\n"
        "        sys.stdout.write(json.dumps(answer) + '\\n'); sys.stdout.flush()\n"
    )
    vector = next(v for v in VECTORS if len(v.steps) >= 4 and not v.requires)
    run_conformance([vector], SubjectSpec((sys.executable, str(subject)), timeout=5))
    reads = [int(n) for n in log.read_text().split()]
    assert reads[0] == 1  # the handshake, alone
    assert max(reads[1:]) > 1, reads  # the vector's requests, written ahead


def test_a_failed_vectors_answers_written_ahead_are_drained(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A vector that fails before its last step leaves answers on the way; the next vector must not read them.
    The same broken subject, with nothing written ahead, is the oracle: every vector's outcome and message agree."""
    from tool_call_closure.conformance import runner as runner_module

    broken = SubjectSpec((*reference_command(), "--table", str(_broken_table(tmp_path))))
    sequential = [v for v in VECTORS if "agents" not in v.requires]  # a race's failure may differ run to run
    ahead = run_conformance(sequential, broken)
    early = [r for r in ahead.results if r.outcome == "failed" and (r.step or 0) < len(_steps_of(r.id))]
    assert early, "no vector failed before its last step: nothing was left to drain"
    monkeypatch.setattr(runner_module, "_AHEAD_BYTES", 0)
    lockstep = run_conformance(sequential, broken)
    assert [(r.id, r.outcome, r.step, r.message) for r in ahead.results] == [
        (r.id, r.outcome, r.step, r.message) for r in lockstep.results
    ]


def _steps_of(vector_id: str) -> list[Any]:
    return next(v.steps for v in VECTORS if v.id == vector_id)


def test_closing_a_subject_ends_its_input_after_bye(tmp_path: Path) -> None:
    """End of input means bye (spec/protocol.md): after sending bye the runner closes the subject's input.

    This subject answers bye but reads on until end of input, then exits 0.  Without the close it would be
    killed after the whole timeout (status -9) instead of exiting by itself.
    """
    seen = tmp_path / "seen.txt"
    lingering = tmp_path / "lingering.py"
    lingering.write_text(
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    r = json.loads(line)\n"
        "    answer = {'id': r['id'], 'ok': None}\n"
        "    if r.get('cmd') == 'hello':\n"
        "        answer = {'id': r['id'], 'protocol': 1, 'implementation': {'name': 'x', 'language': 'py',"
        " 'version': '0'}, 'capabilities': []}\n"
        "    print(json.dumps(answer), flush=True)\n"
        f"open({str(seen)!r}, 'w').write('end of input')\n"
    )
    subject = ProcessSubject([sys.executable, str(lingering)], timeout=20)
    assert subject.send({"id": 1, "cmd": "hello", "protocol": 1})[0]["protocol"] == 1
    subject.close()
    assert seen.read_text() == "end of input"
    assert subject._process.returncode == 0  # exited by itself, not killed


def test_errored_is_kept_apart_from_failed(tmp_path: Path) -> None:
    crasher = tmp_path / "crasher.py"
    crasher.write_text(
        "import sys, json\n"
        "for line in sys.stdin:\n"
        "    r = json.loads(line)\n"
        "    if r.get('cmd') == 'hello':\n"
        "        print(json.dumps({'id': r['id'], 'protocol': 1, 'implementation': {'name': 'x', 'language': 'py',"
        " 'version': '0'}, 'capabilities': []}), flush=True)\n"
        "    elif r.get('cmd') == 'call':\n"
        "        sys.stderr.write('boom\\n'); sys.exit(3)\n"
        "    else:\n"
        "        print(json.dumps({'id': r['id'], 'ok': None}), flush=True)\n"
    )
    chosen = [v for v in VECTORS if not v.requires][:3] + [v for v in VECTORS if "hook" in v.requires][:1]
    run = run_conformance(chosen, SubjectSpec((sys.executable, str(crasher)), timeout=5))
    outcomes = [r.outcome for r in run.results]
    assert outcomes[:3] == ["errored"] * 3  # restarted after each crash
    assert outcomes[3] == "skipped"  # the crasher declares no hook capability
    assert "boom" in (run.results[0].stderr or "")


def test_tag_filters() -> None:
    deviations = select_vectors(VECTORS, tags=["deviation:"])
    assert {v.id for v in deviations} == _deviation_ids(VECTORS)
    without = select_vectors(VECTORS, skip_tags=["deviation:"])
    assert len(without) + len(deviations) == len(VECTORS)
    rows = select_vectors(VECTORS, tags=["row:settle.admit.stale"])
    assert rows
    assert all("row:settle.admit.stale" in v.all_tags() for v in rows)


def test_report_diff_joins_runs_by_vector_id(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    with good.open("w") as out:
        write_report(run_conformance(VECTORS, SubjectSpec()), out)
    broken = SubjectSpec((*reference_command(), "--table", str(_broken_table(tmp_path))))
    with bad.open("w") as out:
        write_report(run_conformance(VECTORS, broken), out)
    text = io.StringIO()
    assert diff_reports(good, good, text) == 0
    text = io.StringIO()
    assert diff_reports(good, bad, text) == 1
    _, lines, _ = read_report(bad)
    changed = [vid for vid, line in lines.items() if line["outcome"] != "passed"]
    assert changed
    assert all(f"! {vid}: passed -> failed" in text.getvalue() for vid in changed)


# --------------------------------------------------------------------------- the trace checker


def _trace_lines(vector: Vector) -> list[str]:
    lines = []
    for step in vector.steps:
        lines.append(json.dumps(step["request"]))
        lines += [json.dumps(response) for response in step["responses"]]
    return lines


def test_check_accepts_a_faithful_trace_and_pinpoints_a_divergent_step() -> None:
    vector = next(v for v in VECTORS if v.id == "settle-forged-handle-is-stale")
    out = io.StringIO()
    assert check_trace(_trace_lines(vector), out) == 0
    assert "4 requests checked" in out.getvalue()
    lines = _trace_lines(vector)
    tampered = [line.replace('"observedStatus": "success"', '"observedStatus": null') for line in lines]
    out = io.StringIO()
    assert check_trace(tampered, out) == 1
    report = out.getvalue()
    assert "step 3 (request on line 5)" in report
    assert "observedStatus" in report


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (['{"id":1,"cmd":"new"}', "{oops"], "line 2: not JSON"),
        (['{"id":1,"ok":null}'], "line 1: a response before any request"),
        (['{"id":1,"cmd":"new"}', "[1]"], "line 2: a trace line must be a JSON object"),
        (['{"id":1,"cmd":"new"}', '{"id":1}'], "line 2: neither a request"),
    ],
)
def test_check_reports_malformed_traces_with_their_line_number(lines: list[str], message: str) -> None:
    out = io.StringIO()
    assert check_trace(lines, out) == 2
    assert message in out.getvalue()


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([], "the trace holds no request"),
        (["", "  "], "the trace holds no request"),
        (['{"id":"h","cmd":"hello"}', '{"id":"h","protocol":1}'], "the trace holds no request but hello"),
    ],
)
def test_check_of_a_trace_with_nothing_to_check_is_not_agreement(lines: list[str], message: str) -> None:
    # A wrong path (an empty file) or a trace cut after the handshake checked nothing: "agrees" would be a false pass.
    out = io.StringIO()
    assert check_trace(lines, out) == 2
    assert message in out.getvalue()
    assert "agrees" not in out.getvalue()


def test_check_counts_the_requests_it_compared() -> None:
    out = io.StringIO()
    hello = ['{"id":"h","cmd":"hello"}', '{"id":"h","protocol":1}']
    assert check_trace([*hello, '{"id":"1","cmd":"new"}', '{"id":"1","ok":null}'], out) == 0
    assert out.getvalue() == "trace agrees with the reference: 1 request checked\n"


def test_check_command_line(tmp_path: Path) -> None:
    vector = next(v for v in VECTORS if v.id == "settle-forged-handle-is-stale")
    trace = tmp_path / "trace.jsonl"
    trace.write_text("\n".join(_trace_lines(vector)) + "\n")
    done = subprocess.run(
        [sys.executable, "-m", "tool_call_closure", "check", str(trace)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


# --------------------------------------------------------------------------- the fuzzer


def test_fuzz_finds_no_divergence_in_the_reference_itself() -> None:
    result = fuzz(SubjectSpec(tuple(reference_command())), max_examples=30, seed=1)
    assert result.divergence is None
    assert result.examples >= 30


def test_fuzz_catches_a_broken_subject_and_shrinks_to_a_minimal_vector(tmp_path: Path) -> None:
    broken = SubjectSpec((*reference_command(), "--table", str(_broken_table(tmp_path))))
    result = fuzz(broken, max_examples=300, seed=2, out_dir=tmp_path / "out")
    assert result.divergence is not None
    assert result.vector_path is not None
    vector = load_vectors(tmp_path / "out")[0]
    assert vector.data["origin"] == "fuzz"
    # Minimal: new, a begin, and the one settlement whose reason differs.
    assert len(vector.steps) <= 3, vector.steps
    # 1-minimal: dropping any step but the first (new) makes the subject agree with the reference.
    for dropped in range(1, len(vector.steps)):
        steps = [s["request"] for i, s in enumerate(vector.steps) if i != dropped]
        run = _run_requests(steps, broken)
        assert run is None, f"still diverges without step {dropped}"


def _run_requests(requests: list[dict[str, Any]], spec: SubjectSpec) -> str | None:
    """The first divergence between the reference and ``spec`` on ``requests``, or None."""
    from tool_call_closure.conformance.compare import diff_responses
    from tool_call_closure.conformance.subject import InProcessSubject

    reference, subject = InProcessSubject(), spec.start()
    try:
        for request in requests:
            problem = diff_responses(reference.send(request), subject.send(request))
            if problem is not None:
                return problem
    finally:
        subject.close()
    return None


@needs_original
def test_fuzz_against_the_original_finds_no_undocumented_divergence() -> None:
    assert ORIGINAL is not None
    result = fuzz(SubjectSpec(tuple(original_command(ORIGINAL))), max_examples=100, seed=3)
    assert result.divergence is None, (result.divergence, result.scenario)
    assert result.exports == EXPORTS  # the original has no Gemini or Bedrock export (D8): never drawn
    assert _probed(ProcessSubject(original_command(ORIGINAL))) == EXPORTS


# --------------------------------------------------------------------------- the fuzzer: which exports it draws


class _AnswersInstead(InProcessSubject):
    """The reference, except that a call of one of ``methods`` gets ``answer`` (an ``ok`` or an ``error``)."""

    def __init__(self, methods: tuple[str, ...], answer: dict[str, Any]) -> None:
        super().__init__()
        self.methods, self.answer = methods, answer

    def send(self, request: dict[str, Any] | str) -> list[dict[str, Any]]:
        if isinstance(request, dict) and request.get("cmd") == "call" and request.get("method") in self.methods:
            return [{"id": request["id"], **self.answer}]
        return super().send(request)


class _WithoutD8(_AnswersInstead):
    """A subject without the Gemini and Bedrock exports: it answers them as the original's adapter does."""

    def __init__(self) -> None:
        super().__init__(PROBED_EXPORTS, {"error": {"kind": "ProtocolError", "message": "unknown method"}})


class _GeminiDropsSideEffectState(InProcessSubject):
    """A planted bug in a Gemini export: a synthetic outcome's error loses its ``side_effect_state``."""

    def send(self, request: dict[str, Any] | str) -> list[dict[str, Any]]:
        responses = super().send(request)
        if isinstance(request, dict) and request.get("method") == "toGeminiFunctionResponses":
            for entry in responses[-1].get("ok") or []:
                entry["function_response"]["response"].get("error", {}).pop("side_effect_state", None)
        return responses


@dataclass(frozen=True)
class _FakeSpec(SubjectSpec):
    make: Callable[[], Subject] = InProcessSubject

    def start(self) -> Subject:
        return self.make()


def _probed(subject: Subject) -> tuple[str, ...]:
    try:
        subject.send({"id": 0, "cmd": "hello", "protocol": 1})
        return probe_exports(subject)
    finally:
        subject.close()


def test_the_fuzzers_exports_are_the_machines_export_methods() -> None:
    (export,) = [op for op in raw_table()["operations"] if op["id"] == "export"]
    assert ALL_EXPORTS == EXPORTS + PROBED_EXPORTS
    assert [m["protocol"] for m in export["methods"]] == list(ALL_EXPORTS)
    assert PROBED_EXPORTS[:2] == ("toGeminiFunctionResponses", "toBedrockToolResults")  # D8, then any added since
    assert EXPORTS == ("toOpenAIChatCompletions", "toOpenAIResponses", "toAnthropicToolResults")  # the original's


def test_the_export_probe_finds_all_five_on_serve_and_in_process() -> None:
    assert _probed(ProcessSubject(reference_command())) == ALL_EXPORTS
    assert _probed(InProcessSubject()) == ALL_EXPORTS


@pytest.mark.parametrize(
    ("answer", "drawn"),
    [
        ({"error": {"kind": "ProtocolError", "message": "unknown method"}}, False),
        ({"error": {"kind": "TypeError", "message": "snapshot must be a ToolCallClosure snapshot"}}, True),
        ({"error": {"kind": "InternalError", "message": "boom"}}, True),  # the method is there (and broken)
        ({"ok": []}, True),
    ],
    ids=["ProtocolError", "TypeError", "InternalError", "ok"],
)
def test_the_export_probe_leaves_out_only_a_method_answered_with_a_protocol_error(
    answer: dict[str, Any], drawn: bool
) -> None:
    for method in PROBED_EXPORTS:
        others = tuple(m for m in PROBED_EXPORTS if m != method)
        assert _probed(_AnswersInstead((method,), answer)) == (EXPORTS + PROBED_EXPORTS if drawn else EXPORTS + others)


def test_the_export_probe_sends_one_new_then_the_probed_methods_without_arguments() -> None:
    """The probe's requests: one new, then each method beyond the original's with no arguments; nothing else."""
    sent: list[Any] = []

    class Recording(InProcessSubject):
        def send(self, request: dict[str, Any] | str) -> list[dict[str, Any]]:
            sent.append(request)
            return super().send(request)

    assert probe_exports(Recording()) == ALL_EXPORTS
    assert sent[0] == {"id": "probe:new", "cmd": "new"}
    assert sent[1:3] == [
        {"id": "probe:toGeminiFunctionResponses", "cmd": "call", "method": "toGeminiFunctionResponses"},
        {"id": "probe:toBedrockToolResults", "cmd": "call", "method": "toBedrockToolResults"},
    ]
    assert sent[1:] == [{"id": f"probe:{method}", "cmd": "call", "method": method} for method in PROBED_EXPORTS]


def test_a_failed_new_leaves_the_probe_nothing_to_ask_and_only_the_three_are_drawn() -> None:
    class NoInstance(InProcessSubject):
        def send(self, request: dict[str, Any] | str) -> list[dict[str, Any]]:
            if isinstance(request, dict) and request.get("cmd") == "new":
                return [{"id": request["id"], "error": {"kind": "TypeError", "message": "options must be an object"}}]
            return super().send(request)

    assert probe_exports(NoInstance()) == EXPORTS


def test_a_subject_that_breaks_on_the_probe_is_reported_as_broken_by_the_probe() -> None:
    class Breaks(InProcessSubject):
        def send(self, request: dict[str, Any] | str) -> list[dict[str, Any]]:
            if isinstance(request, dict) and request.get("method") == "toBedrockToolResults":
                raise SubjectError("subject exited with status 1")
            return super().send(request)

    result = fuzz(_FakeSpec(make=Breaks), max_examples=5, seed=1)
    assert result.divergence == "the subject broke: while probing for the exports: subject exited with status 1"
    assert result.examples == 0


def test_fuzz_against_serve_draws_gemini_and_bedrock_exports() -> None:
    result = fuzz(SubjectSpec(tuple(reference_command())), max_examples=30, seed=1)
    assert result.divergence is None
    assert result.exports == ALL_EXPORTS
    for method in PROBED_EXPORTS:  # drawn, answered with payloads by both sides, and compared
        assert result.coverage[f"export:{method}:entries"] > 0, method


def test_fuzz_against_a_subject_without_the_two_draws_only_the_three_and_finds_no_divergence() -> None:
    result = fuzz(_FakeSpec(make=_WithoutD8), max_examples=100, seed=3)
    assert result.divergence is None, (result.divergence, result.scenario)
    assert result.exports == EXPORTS
    assert not [key for key in result.coverage if any(method in key for method in PROBED_EXPORTS)]
    drawn = fuzz(SubjectSpec(None), max_examples=100, seed=3)  # the same run on a subject that has them
    assert [key for key in drawn.coverage if any(method in key for method in PROBED_EXPORTS)]


def test_the_fuzzer_finds_a_bug_planted_in_a_gemini_export_and_shrinks_it_to_that_export() -> None:
    result = fuzz(_FakeSpec(make=_GeminiDropsSideEffectState), max_examples=500, seed=1)
    assert result.exports == ALL_EXPORTS
    assert result.divergence is not None
    assert "side_effect_state" in result.divergence
    assert result.scenario[-1]["method"] == "toGeminiFunctionResponses"
    assert _run_requests(result.scenario, _FakeSpec(make=_GeminiDropsSideEffectState)) is not None
    assert _run_requests(result.scenario, SubjectSpec(None)) is None


def test_a_fuzz_vector_that_calls_a_d8_export_is_tagged_with_the_deviation(tmp_path: Path) -> None:
    """So the original's run (`--skip-tags deviation:`) skips it, as it skips the shipped D8 vectors."""
    from tool_call_closure.conformance.fuzz import write_vector
    from tool_call_closure.conformance.vectors import load_vectors

    new = {"id": 1, "cmd": "new"}
    for method, tags in (
        ("toGeminiFunctionResponses", ["area:fuzz", "deviation:D8"]),
        ("toBedrockToolResults", ["area:fuzz", "deviation:D8"]),
        ("toAnthropicToolResults", ["area:fuzz"]),
    ):
        path = write_vector([new, {"id": 2, "cmd": "call", "method": method}], "planted", tmp_path / method)
        assert json.loads(path.read_text(encoding="utf-8"))["tags"] == tags
    nested = {"id": 900, "cmd": "call", "method": "toBedrockToolResults"}
    hooked = {"id": 2, "cmd": "call", "method": "close", "args": [{"$hook": {"calls": [nested], "then": 1}}]}
    path = write_vector([new, hooked], "planted", tmp_path / "hooked")
    assert "deviation:D8" in json.loads(path.read_text(encoding="utf-8"))["tags"]
    (vector,) = load_vectors(tmp_path / "toGeminiFunctionResponses")
    assert "deviation:D8" in vector.tags


# --------------------------------------------------------------------------- kill-based coverage (issue 12)

RECHECK_ROWS = [r.id for r in TABLE.transitions if r.phase == "recheck"]


@pytest.mark.slow  # the table-kill check: every row broken in turn, every vector run against each
def test_every_recheck_row_is_killed_by_a_vector_whose_outcome_differs_when_the_recheck_is_skipped() -> None:
    """Deleting a recheck row (or changing its answer) must make some vector fail: BEG-5, SET-9, CLO-5, RE-*."""
    from tool_call_closure.conformance.coverage import kill_coverage

    killed = kill_coverage(VECTORS, rows=RECHECK_ROWS)
    assert sorted(killed) == sorted(RECHECK_ROWS)
    for row_id, operators in killed.items():
        observable = [v for ids in operators.values() for v in ids if v.startswith("reentrancy-recheck-")]
        assert observable, f"{row_id}: no reentrancy-recheck-* vector fails when it is broken"


@pytest.mark.slow
def test_every_table_mutant_is_killed_or_documented_as_equivalent() -> None:
    from tool_call_closure.conformance.coverage import kill_report

    text, complete = kill_report(VECTORS)
    assert complete, "\n".join(line for line in text.splitlines() if "SURVIVES" in line)


def test_every_rule_without_a_capability_need_has_a_capability_free_vector() -> None:
    """A port without the hook capability still checks BEG-1 and CLO-2 (and every rule not in NEEDS_CAPABILITY)."""
    from tool_call_closure.conformance.coverage import NEEDS_CAPABILITY, coverage

    plain = {v.id for v in VECTORS if not v.requires}
    for rule, ids in coverage(VECTORS)["rule"].items():
        if rule not in NEEDS_CAPABILITY:
            assert set(ids) & plain, f"{rule} is covered only by vectors that need a capability: {ids}"


# --------------------------------------------------------------------------- the explorer (issue 12)


def test_the_explorer_reaches_the_success_path() -> None:
    """Most requests are valid and aimed at live targets: settlements are accepted, closes synthesize outcomes,
    exports of every format have synthetic and reported entries, and Anthropic, Bedrock and Gemini exports carry
    their error marks."""
    result = fuzz(SubjectSpec(None), max_examples=300, seed=5)
    assert result.divergence is None
    coverage = result.coverage
    for key in ("accepted:success", "accepted:error", "accepted:cancelled", "event:synthetic_cancelled"):
        assert coverage[key] >= 50, (key, coverage[key])
    for method in ALL_EXPORTS:
        assert coverage[f"export:{method}:synthetic"] > 0, method
        assert coverage[f"export:{method}:reported"] > 0, method
    assert coverage["export:toAnthropicToolResults:error_mark"] > 0
    assert coverage["export:toBedrockToolResults:error_mark"] > 0
    assert coverage["export:toGeminiFunctionResponses:error_mark"] > 0
    assert coverage["error:calls_not_array"] < coverage["row:begin.commit.start@none"]
    for intent in ("nested settle same call", "nested close other reason", "snapshot as content", "hook in begin"):
        assert coverage[f"intent:{intent}"] > 0
    assert coverage["nested:2"] > 0  # caller code inside caller code


def test_scenarios_are_reproducible_per_seed_and_differ_across_seeds() -> None:
    from tool_call_closure.conformance.fuzz import Explorer

    explorer = Explorer(None)
    scenarios = []
    for seed in (1, 2, 1):
        explorer.run(seed)
        scenarios.append(json.dumps(explorer.sent))
    assert scenarios[0] == scenarios[2]
    assert scenarios[0] != scenarios[1]


def test_fuzz_shards_across_jobs_and_prints_coverage_and_the_shrunk_scenario(tmp_path: Path) -> None:
    result = fuzz(SubjectSpec(None), max_examples=20, seed=3, jobs=2)
    assert result.examples == 20
    assert result.divergence is None
    broken = (*reference_command(), "--table", str(_broken_table(tmp_path)))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tool_call_closure",
            "fuzz",
            "--max-examples",
            "300",
            "--seed",
            "2",
            "--out",
            str(tmp_path / "out"),
            "--",
            *broken,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert "coverage (key: times reached):" in done.stdout
    assert f"exports drawn: {', '.join(ALL_EXPORTS)}\n" in done.stdout
    assert "DIVERGENCE" in done.stdout
    assert "  step 1: {" in done.stdout  # the shrunk scenario, step by step, numbered from 1
    vector = load_vectors(tmp_path / "out")[0]
    assert vector.steps[0]["request"].get("options", {}) == {}  # irrelevant new options were dropped


def test_fuzz_refuses_an_out_it_could_not_write_before_it_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tool_call_closure.cli.main import main

    def never(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("the run started")

    monkeypatch.setattr("tool_call_closure.conformance.fuzz.fuzz", never)
    a_file = tmp_path / "a_file"
    a_file.write_text("", encoding="utf-8")
    for out, problem in ((a_file, "exists and is not a directory"), (a_file / "sub", "is not an existing directory")):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            assert main(["fuzz", "--max-examples", "5", "--out", str(out)]) == 2
        assert err.getvalue().startswith(f"tool-call-closure fuzz: --out {out}: ")
        assert problem in err.getvalue()


def test_a_divergence_whose_vector_cannot_be_written_is_still_reported(tmp_path: Path) -> None:
    """The finding stands: the result keeps the shrunk scenario and says why no vector was written."""
    a_file = tmp_path / "a_file"
    a_file.write_text("", encoding="utf-8")
    result = fuzz(_FakeSpec(make=_GeminiDropsSideEffectState), max_examples=500, seed=1, out_dir=a_file)
    assert result.divergence is not None
    assert result.scenario
    assert result.vector_path is None
    assert result.vector_error is not None
    assert str(a_file) in result.vector_error


def test_a_failure_names_the_vector_the_step_and_the_first_differing_field(tmp_path: Path) -> None:
    """issue 12 §4: description, 1-based step, JSON path and both values untruncated; schema-valid lines."""
    broken = SubjectSpec((*reference_command(), "--table", str(_broken_table(tmp_path))))
    chosen = [v for v in VECTORS if v.id == "settle-unknown-and-duplicate-observe-null"]
    run = run_conformance(chosen, broken)
    (result,) = run.results
    assert result.outcome == "failed"
    assert result.description == chosen[0].data["description"]
    first = next(
        number
        for number, step in enumerate(chosen[0].steps, 1)
        if "unknown_call" in json.dumps(step["responses"]) or "duplicate_settlement" in json.dumps(step["responses"])
    )
    assert result.step == first
    assert result.path == "$[0].ok.reason"
    assert {result.expected_value, result.actual_value} == {"unknown_call", "duplicate_settlement"}
    report = io.StringIO()
    write_report(run, report)
    validator = _validator("report.schema.json")
    for line in report.getvalue().splitlines():
        assert list(validator.iter_errors(json.loads(line))) == []
    summary = io.StringIO()
    summarize(run, summary)
    assert f"step {result.step}:" in summary.getvalue()
    assert "first difference at $[0].ok.reason:" in summary.getvalue()
    assert chosen[0].data["description"] in summary.getvalue()


def test_the_first_difference_is_found_without_recursion_and_reports_key_order() -> None:
    from tool_call_closure.conformance.compare import first_difference

    assert first_difference({"a": [1, {"b": "x" * 1000}]}, {"a": [1, {"b": "y"}]}) == ("$.a[1].b", "x" * 1000, "y")
    assert first_difference({"a": 1, "b": 2}, {"b": 2, "a": 1}) == ("$", {"a": 1, "b": 2}, {"b": 2, "a": 1})
    assert first_difference([1, 1.0], [1.0, 1]) is None


def test_the_last_stderr_of_a_subject_that_exited_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A subject's last words can still sit in the pipe when it exits: the report must wait for the reader, not race
    # it. The reader is held back until after the exit is seen; the wait is made unbounded so the test needs no clock.
    import threading

    from tool_call_closure.conformance import subject as subject_module

    gate = threading.Event()
    drain = ProcessSubject._drain

    def held_back(self: ProcessSubject, stream: Any) -> None:
        gate.wait()
        drain(self, stream)

    monkeypatch.setattr(ProcessSubject, "_drain", held_back)
    monkeypatch.setattr(subject_module, "STDERR_DRAIN_SECONDS", math.inf)
    dying = tmp_path / "dying.py"
    dying.write_text("import sys\nsys.stdin.readline()\nsys.stderr.write('boom')\nsys.exit(3)\n")
    subject = ProcessSubject([sys.executable, str(dying)], timeout=5)
    with pytest.raises(SubjectError, match="status 3"):
        subject.send({"id": "1", "cmd": "hello"})
    threading.Timer(0.2, gate.set).start()
    text = subject.stderr_text()
    subject.close()
    assert text == "boom"


# --------------------------------------------------------------------------- the test summary (issue 19 item 7)


def test_the_summary_says_when_the_comparisons_with_the_original_were_skipped() -> None:
    import conftest  # tests/conftest.py, on the path as the tests' rootdir

    class Reporter:
        def __init__(self, reasons: list[str]) -> None:
            self.stats = {"skipped": [type("R", (), {"longrepr": ("f.py", 1, r)})() for r in reasons]}
            self.lines: list[str] = []

        def write_sep(self, sep: str, title: str, **markup: bool) -> None:
            self.lines.append(title)

        def write_line(self, line: str) -> None:
            self.lines.append(line)

    missing = Reporter(["Skipped: the original is missing (set TCC_JS)"] * 66 + ["Skipped: no z3"])
    conftest.pytest_terminal_summary(missing)
    assert missing.lines[-1].startswith("66 comparisons with the JavaScript original skipped: the original is missing.")
    assert "TCC_JS=" in missing.lines[-1]
    quiet = Reporter(["Skipped: no z3"])
    conftest.pytest_terminal_summary(quiet)
    assert quiet.lines == []


# --------------------------------------------------------------------------- deviation vectors are pure (issue 19)


def _replay(requests: list[Any], original: Subject) -> list[tuple[Any, Any]]:
    """Per request: (the reference's answer, the original's answer), each in a fresh session."""
    reference = InProcessSubject()
    original.send({"id": "purity", "cmd": "new"})
    return [(reference.send(request), original.send(request)) for request in requests]


def _divergent(answers: list[tuple[Any, Any]]) -> list[bool]:
    return [diff_responses(expected, actual) is not None for expected, actual in answers]


@needs_original
def test_no_vector_mixes_deviation_and_non_deviation_steps() -> None:
    """Replayed on the original, a deviation vector is its setup, then only steps that diverge; and each setup
    step is needed (without it the first divergence moves or goes).  So ``--skip-tags deviation:`` drops no
    assertion the original shares: those live in vectors of their own.  The vectors that need a capability the
    Node adapter lacks cannot be replayed on the original and are left out."""
    assert ORIGINAL is not None
    original = ProcessSubject(original_command(ORIGINAL))
    try:
        (hello,) = original.send({"id": "h", "cmd": "hello", "protocol": 1})
        capabilities = set(hello["capabilities"])
        checked, mixed = 0, []
        for vector in VECTORS:
            if not any(t.startswith("deviation:") for t in vector.tags) or set(vector.requires) - capabilities:
                continue
            checked += 1
            requests = [step["request"] for step in vector.steps]
            answers = _replay(requests, original)
            marks = _divergent(answers)
            if not any(marks):
                mixed.append(f"{vector.id}: the original agrees with every step (not a deviation)")
                continue
            first = marks.index(True)
            agreeing_after = [i + 1 for i in range(first, len(marks)) if not marks[i]]
            if agreeing_after:
                mixed.append(f"{vector.id}: steps {agreeing_after} after the deviation are not deviations")
            for skipped in range(1, first):  # step 1 is new: always needed
                shorter = _replay(requests[:skipped] + requests[skipped + 1 :], original)
                # Needed: without it, the deviating step is answered otherwise (by either), or agrees.
                if shorter[first - 1] == answers[first] and _divergent(shorter)[first - 1]:
                    mixed.append(f"{vector.id}: step {skipped + 1} is not needed for the deviation")
        assert checked >= 15
        assert mixed == [], "\n".join(mixed)
    finally:
        original.close()


# --------------------------------------------------------------------------- kit commands end, clearly (issue 19 item 6)

_HELLO_THEN = (
    "import json, os, subprocess, sys\n"
    "request = json.loads(sys.stdin.readline())\n"
    "print(json.dumps({'id': request['id'], 'protocol': 1, 'implementation': "
    "{'name': 'x', 'language': 'python', 'version': '0'}, 'capabilities': []}), flush=True)\n"
)
_ENDLESS_NESTED = _HELLO_THEN + (
    "sys.stdin.readline()\n"
    "while True:\n"
    '    sys.stdout.write(\'{"id":1,"nested":1,"ok":null}\\n\' * 2000)\n'
    "    sys.stdout.flush()\n"
)
# Closes its output and exits, but a child it started keeps both pipes open (for much longer than any limit).
_CLOSES_OUTPUT_CHILD_LIVES = _HELLO_THEN + (
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\nos.close(1)\nos.close(2)\n"
)


def _kit(*arguments: str, stdout: Any = subprocess.PIPE, shell_suffix: str = "") -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "tool_call_closure", *arguments]
    if shell_suffix:  # e.g. "1>&-": descriptor 1 closed, which subprocess cannot arrange by itself
        command = ["sh", "-c", 'exec "$@" ' + shell_suffix, "sh", *command]
    # A session of its own: the subjects' children that outlive the run (on purpose, below) are ended with it.
    process = subprocess.Popen(command, stdout=stdout, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = process.communicate(timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    return subprocess.CompletedProcess(command, process.returncode, out, err)


def test_conform_timeout_bounds_a_step_whose_subject_writes_nested_lines_forever() -> None:
    # A subject that always has the next nested line ready used to keep the step alive for ever.
    done = _kit(
        "conform",
        "--vector",
        "begin-calls-must-be-an-array-plain",
        "--timeout",
        "1",
        "--",
        sys.executable,
        "-c",
        _ENDLESS_NESTED,
    )
    assert done.returncode == 1
    assert "ERRORED begin-calls-must-be-an-array-plain" in done.stdout
    assert "subject did not answer within 1 s" in done.stdout


def test_conform_ends_when_the_subject_exits_but_a_child_keeps_its_pipes() -> None:
    # The runner's stderr drain held the pipe's lock until the child ended (600 s here): close() waited on it.
    done = _kit(
        "conform", "--vector", "begin-calls-must-be-an-array-plain", "--timeout", "1", "--", sys.executable, "-c",
        _CLOSES_OUTPUT_CHILD_LIVES,
    )  # fmt: skip
    assert done.returncode == 1
    assert "ERRORED begin-calls-must-be-an-array-plain" in done.stdout


def test_conform_ends_when_the_subject_closes_its_output_at_once() -> None:
    # sh closes its stdout and waits for sleep, which holds stderr: the runner, having killed sh, used to wait
    # for the sleep to end (30 s in the issue, 600 s here) before it could close the stderr pipe.
    done = _kit("conform", "--timeout", "1", "--", "sh", "-c", "exec 1>&-; sleep 600; :")
    assert done.returncode == 1
    assert "the subject did not start: subject closed its output but did not exit (killed)" in done.stdout


@pytest.mark.parametrize("timeout", ["inf", "1e300", "nan", "0", "-1", "86401"])
def test_conform_refuses_a_timeout_no_clock_can_wait(timeout: str) -> None:
    done = _kit("conform", "--timeout", timeout, "--", sys.executable, "-c", "pass")
    assert done.returncode == 2
    assert done.stderr.startswith(
        "tool-call-closure conform: --timeout must be a positive number of seconds, at most 86400, not"
    )
    assert "Traceback" not in done.stderr


TRACE = '{"id":1,"cmd":"new"}\n{"id":1,"ok":null}\n'


@pytest.mark.parametrize(
    "arguments",
    [
        ("demo",),
        ("table", "--diagram"),
        ("check", "TRACE"),
        ("conform", "--vector", "begin-calls-must-be-an-array-plain"),
    ],
    ids=" ".join,
)
@pytest.mark.parametrize("where", ["full", "closed"])
def test_a_command_whose_output_cannot_be_written_says_so_in_one_line(
    arguments: tuple[str, ...], where: str, tmp_path: Path
) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_text(TRACE, encoding="utf-8")
    arguments = tuple(str(trace) if a == "TRACE" else a for a in arguments)
    if where == "full":
        with open("/dev/full", "w") as full:
            done = _kit(*arguments, stdout=full)
        reason = "No space left on device"
    else:
        done = _kit(*arguments, stdout=None, shell_suffix="1>&-")
        reason = "it is closed"
    assert done.returncode == 1
    assert done.stderr == f"tool-call-closure {arguments[0]}: cannot write standard output: {reason}\n"


def test_conform_says_when_its_report_cannot_be_written() -> None:
    done = _kit("conform", "--vector", "begin-calls-must-be-an-array-plain", "--report", "/dev/full")
    assert done.returncode == 1
    assert done.stderr == "tool-call-closure conform: cannot write the report to /dev/full: No space left on device\n"
    assert "passed 1" in done.stdout
