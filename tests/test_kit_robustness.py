"""The conformance kit's own robustness (issue 12, section 6): hostile subjects and malformed inputs.

Each case runs the command line as a user would and requires a clear answer: a one-line error and exit
status 2 for a malformed input or argument, an *errored* vector (exit 1) for a subject that misbehaves, and
never a traceback.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tool_call_closure.spec_files import spec_path

VECTOR = next(spec_path("vectors").rglob("settle-forged-handle-is-stale.json"))


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tool_call_closure", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        timeout=timeout,
        check=False,
    )


def assert_one_line_error(done: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def one_vector_dir(tmp_path: Path, edit: object = None) -> Path:
    directory = tmp_path / "vectors"
    directory.mkdir()
    data = json.loads(VECTOR.read_text())
    if callable(edit):
        edit(data)
    (directory / VECTOR.name).write_text(json.dumps(data))
    return directory


# --------------------------------------------------------------------------- malformed inputs and arguments


def test_a_nonexistent_vectors_directory(tmp_path: Path) -> None:
    assert_one_line_error(cli("conform", "--vectors", str(tmp_path / "nowhere")), "no such directory")


@pytest.mark.parametrize(
    ("edit", "fragment"),
    [
        (lambda d: d["steps"][1].pop("responses"), "has no responses"),
        (lambda d: d.__setitem__("tags", 5), "tags must be an array of strings"),
        (lambda d: d.__setitem__("requires", "hook"), "requires must be an array of strings"),
        (lambda d: d["steps"].__setitem__(1, {"request": 5}), "needs a request"),
        (lambda d: d["steps"][1].__setitem__("responses", {"id": 1}), "responses must be a non-empty array"),
    ],
)
def test_malformed_vector_files(tmp_path: Path, edit: object, fragment: str) -> None:
    assert_one_line_error(cli("conform", "--vectors", str(one_vector_dir(tmp_path, edit))), fragment)


def test_a_deeply_nested_vector_file(tmp_path: Path) -> None:
    directory = tmp_path / "vectors"
    directory.mkdir()
    (directory / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    assert_one_line_error(cli("conform", "--vectors", str(directory)), "deep.json")
    (directory / "deep.json").write_text('{"a":' * 300 + "1" + "}" * 300)
    assert_one_line_error(cli("conform", "--vectors", str(directory)), "nests deeper")


def test_a_selection_that_matches_nothing_is_an_error() -> None:
    assert_one_line_error(cli("conform", "--tags", "rule:NO-SUCH-RULE"), "matches no vector")
    assert_one_line_error(cli("conform", "--vector", "no-such-vector"), "no vector has that id")


def test_one_vector_by_id() -> None:
    done = cli("conform", "--vector", "settle-forged-handle-is-stale")
    assert done.returncode == 0, done.stderr
    assert "vectors: 1  passed 1" in done.stdout


@pytest.mark.parametrize("timeout", ["-1", "0", "nan"])
def test_a_timeout_that_is_not_positive(timeout: str) -> None:
    assert_one_line_error(cli("conform", "--timeout", timeout), "--timeout must be a positive number")


def test_an_unwritable_report_path(tmp_path: Path) -> None:
    assert_one_line_error(cli("conform", "--report", str(tmp_path / "missing" / "r.jsonl")), "--report")


def test_the_report_is_written_only_where_report_says(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tool_call_closure", "conform", "--vector", "settle-forged-handle-is-stale"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0
    assert list(tmp_path.iterdir()) == []
    target = tmp_path / "out.jsonl"
    assert cli("conform", "--vector", "settle-forged-handle-is-stale", "--report", str(target)).returncode == 0
    assert [json.loads(line)["type"] for line in target.read_text().splitlines()] == ["header", "vector", "footer"]


def test_report_diff_of_a_binary_or_truncated_report(tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    assert cli("conform", "--vector", "settle-forged-handle-is-stale", "--report", str(good)).returncode == 0
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    assert_one_line_error(cli("report", "diff", str(good), str(binary)), "not UTF-8")
    truncated = tmp_path / "truncated.jsonl"
    truncated.write_text(good.read_text()[: len(good.read_text()) // 2])
    assert_one_line_error(cli("report", "diff", str(good), str(truncated)), "truncated.jsonl")
    no_footer = tmp_path / "no-footer.jsonl"
    no_footer.write_text("\n".join(good.read_text().splitlines()[:-1]) + "\n")
    assert_one_line_error(cli("report", "diff", str(good), str(no_footer)), "no footer")
    assert_one_line_error(cli("report", "diff", str(good), str(tmp_path / "absent.jsonl")), "absent.jsonl")


def test_a_trace_that_is_not_utf8(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_bytes(b'{"id":1,"cmd":"new"}\n\xc3\x28\n')
    assert_one_line_error(cli("check", str(trace)), "not UTF-8")


def test_a_fuzz_subject_that_does_not_start(tmp_path: Path) -> None:
    """Not a traceback after the fact: one line naming the command, exit 1 (as for a subject that breaks)."""
    done = cli("fuzz", "--max-examples", "5", "--out", str(tmp_path / "out"), "--", str(tmp_path / "no-such-subject"))
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        f"tool-call-closure fuzz: cannot start subject [{str(tmp_path / 'no-such-subject')!r}]: "
        f"[Errno 2] No such file or directory: {str(tmp_path / 'no-such-subject')!r}"
    ]


def test_a_table_path_that_is_a_directory_or_missing(tmp_path: Path) -> None:
    for path, reason in ((tmp_path, "Is a directory"), (tmp_path / "missing.json", "No such file or directory")):
        done = cli("table", str(path))
        assert done.returncode == 1, (done.stdout, done.stderr)
        assert done.stderr == f"tool-call-closure table: {path}: {reason}\n"


@pytest.mark.parametrize("content", [b"\x00\xff\xfe binary", b"[" * 100_000, b'{"a":' * 5000 + b"1" + b"}" * 5000])
def test_a_binary_or_deep_table_file(tmp_path: Path, content: bytes) -> None:
    table = tmp_path / "table.json"
    table.write_bytes(content)
    done = subprocess.run(
        [sys.executable, "-m", "tool_call_closure", "serve", "--table", str(table)],
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert_one_line_error(done, "--table")


# --------------------------------------------------------------------------- surrogates in reports


SURROGATE_SUBJECT = """
import json, sys
for line in sys.stdin:
    request = json.loads(line)
    if request.get("cmd") == "hello":
        print(json.dumps({"id": request["id"], "protocol": 1,
                          "implementation": {"name": "x", "language": "python", "version": "0"}}), flush=True)
    elif request.get("cmd") == "bye":
        print(json.dumps({"id": request["id"], "ok": None}), flush=True); break
    else:
        print('{"id":%s,"ok":"\\\\udc00 lone"}' % json.dumps(request["id"]), flush=True)
"""


def test_a_lone_surrogate_in_a_failing_step_does_not_crash_the_summary(tmp_path: Path) -> None:
    script = tmp_path / "subject.py"
    script.write_text(SURROGATE_SUBJECT)
    report = tmp_path / "r.jsonl"
    done = cli(
        "conform",
        "--vector",
        "settle-forged-handle-is-stale",
        "--report",
        str(report),
        "--",
        sys.executable,
        str(script),
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert "FAILED settle-forged-handle-is-stale" in done.stdout
    assert "\\udc00 lone" in done.stdout  # escaped, not a crash
    assert "first difference at $[0].ok" in done.stdout
    assert report.is_file()


def test_a_lone_surrogate_in_a_differing_trace_does_not_crash_check(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_text('{"id":1,"cmd":"new"}\n{"id":1,"ok":"\\udc00"}\n')
    done = cli("check", str(trace))
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "step 1 (request on line 1) differs" in done.stdout
    assert "\\udc00" in done.stdout


# --------------------------------------------------------------------------- hostile subjects

HOSTILE = """
import json, os, sys, time
mode = sys.argv[1]
for line in sys.stdin:
    request = json.loads(line)
    rid = json.dumps(request["id"])
    if request.get("cmd") == "hello":
        implementation = '"python"' if mode == "implementation" else '{"name":"x","language":"python","version":"0"}'
        protocol = "true" if mode == "protocol-true" else "1"
        if mode == "close-stdin-after-hello":
            os.close(0)  # before answering: every request the runner writes next meets a broken pipe
        print('{"id":%s,"protocol":%s,"implementation":%s,"capabilities":[]}' % (rid, protocol, implementation),
              flush=True)
        if mode == "exit-after-hello":
            sys.exit(0)
        if mode == "close-stdin-after-hello":
            time.sleep(600)
        continue
    if mode == "deep":
        print('{"id":%s,"ok":%s}' % (rid, "[" * 100000 + "]" * 100000), flush=True)
    elif mode == "stream-nested":
        while True:
            print('{"id":%s,"nested":1,"ok":null}' % rid, flush=True)
            time.sleep(0.01)
    elif mode == "close-stdout":
        os.close(1)  # the file descriptor itself: sys.stdout.close() would leave fd 1 open
        time.sleep(600)
    else:
        print('{"id":%s,"ok":null}' % rid, flush=True)
"""


@pytest.mark.parametrize(
    ("mode", "fragment"),
    [
        ("implementation", "implementation must be an object"),
        ("protocol-true", "does not speak protocol 1"),
        ("exit-after-hello", "exited"),
        ("close-stdin-after-hello", "closed its input"),
        ("deep", "nested too deeply"),
        ("stream-nested", "did not answer within 1 s"),
        ("close-stdout", "closed its output but did not exit"),
    ],
)
def test_a_hostile_subject_is_errored_with_a_clear_message(tmp_path: Path, mode: str, fragment: str) -> None:
    script = tmp_path / "hostile.py"
    script.write_text(HOSTILE)
    started = time.monotonic()
    done = cli(
        "conform",
        "--vector",
        "settle-forged-handle-is-stale",
        "--timeout",
        "1",
        "--",
        sys.executable,
        str(script),
        mode,
    )
    assert time.monotonic() - started < 60
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr + done.stdout
    assert "errored 1" in done.stdout
    assert fragment in done.stdout, done.stdout


def test_the_vector_timeout_bounds_a_whole_vector(tmp_path: Path) -> None:
    """A subject that answers every request just within the request timeout still cannot hold a vector forever."""
    from tool_call_closure.conformance.conform import SubjectSpec, run_conformance
    from tool_call_closure.conformance.vectors import load_vectors

    slow = tmp_path / "slow.py"
    slow.write_text(
        "import json, sys, time\n"
        "for line in sys.stdin:\n"
        "    r = json.loads(line)\n"
        "    if r.get('cmd') == 'hello':\n"
        "        print(json.dumps({'id': r['id'], 'protocol': 1, 'implementation': "
        "{'name': 'x', 'language': 'python', 'version': '0'}}), flush=True); continue\n"
        "    time.sleep(0.4)\n"
        "    print(json.dumps({'id': r['id'], 'ok': None}), flush=True)\n"
    )
    vector = next(v for v in load_vectors() if v.id == "settle-forged-handle-is-stale")
    run = run_conformance([vector], SubjectSpec((sys.executable, str(slow)), timeout=5, vector_timeout=0.5))
    (result,) = run.results
    assert result.outcome == "errored"
    assert "longer than 0.5 s" in (result.message or "")
