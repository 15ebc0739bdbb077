"""``python -m tool_call_closure serve``: protocol v1, driven as a subprocess.

Each test feeds a script of request lines to a fresh ``serve`` process and
compares the exact response lines (key order and number spelling included).
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tool_call_closure.conformance.subject import ProcessSubject, SubjectError, reference_command

L = "\u2028"


def run_serve(*requests: dict[str, Any] | str) -> list[str]:
    """Run one serve process over ``requests``; return its response lines."""
    text = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in requests)
    done = subprocess.run(
        [sys.executable, "-m", "tool_call_closure", "serve"],
        input=text.encode("utf-8"),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stderr == b""
    return done.stdout.decode("utf-8").split("\n")[:-1]


NEW = {"id": 0, "cmd": "new"}
CALLS = [{"id": "a", "name": "t"}, {"id": "b", "name": "u"}]


def call(request_id: int, method: str, *args: Any) -> dict[str, Any]:
    return {"id": request_id, "cmd": "call", "method": method, "args": list(args)}


def test_hello_names_the_implementation() -> None:
    out = run_serve({"id": 1, "cmd": "hello", "protocol": 1})
    assert out == [
        '{"id":1,"protocol":1,"implementation":{"name":"tool-call-closure","language":"python","version":"1.0.0"},'
        '"capabilities":["hook","tamper","turn-guard","nesting-limit","gemini-export","bedrock-export",'
        '"undefined-properties","agents","content-parts","export-options","content-diagnostics"]}'
    ]


def test_hello_with_another_protocol_version_is_a_protocol_error() -> None:
    (line,) = run_serve({"id": "h", "cmd": "hello", "protocol": 2})
    response = json.loads(line)
    assert response["id"] == "h"
    assert response["error"]["kind"] == "ProtocolError"


def test_new_validates_options_like_the_original_constructor() -> None:
    out = run_serve(
        {"id": 1, "cmd": "new", "options": None},
        {"id": 2, "cmd": "new", "options": [1]},
        {"id": 3, "cmd": "new", "options": {"maxCalls": 0}},
        {"id": 4, "cmd": "new", "options": {"maxCalls": 1, "maxDiagnostics": True}},
        {"id": 5, "cmd": "new", "options": {"maxCalls": 1.0, "bogus": -1, "maxCodeBytes": None}},
        call(6, "begin", [{"id": "a", "name": "t"}, {"id": "b", "name": "t"}]),
    )
    assert out == [
        '{"id":1,"error":{"kind":"TypeError","message":"options must be an object"}}',
        '{"id":2,"error":{"kind":"TypeError","message":"options must be an object"}}',
        '{"id":3,"error":{"kind":"TypeError","message":"maxCalls must be a positive safe integer"}}',
        '{"id":4,"error":{"kind":"TypeError","message":"maxDiagnostics must be a positive safe integer"}}',
        '{"id":5,"ok":null}',
        '{"id":6,"error":{"kind":"RangeError","message":"calls exceed maxCalls (1)"}}',
    ]


def test_call_needs_a_current_instance() -> None:
    out = run_serve(
        call(1, "snapshot"),
        {"id": 2, "cmd": "new", "options": {"maxIdBytes": -1}},
        call(3, "snapshot"),
        NEW,
        call(4, "snapshot"),
    )
    assert [json.loads(line).get("error", {}).get("kind") for line in out] == [
        "ProtocolError",
        "TypeError",
        "ProtocolError",
        None,
        None,
    ]
    assert out[-1] == '{"id":4,"ok":null}'


def test_every_method_over_a_lifecycle() -> None:
    out = run_serve(
        NEW,
        call(1, "activeGeneration"),
        call(2, "begin", CALLS),
        call(3, "succeed", {"$handle": 1}, "a", {"n": 1.5, "t": True}),
        call(4, "settle", {"$handle": 1}, "b", {"status": "error", "code": "E", "message": "bad"}),
        call(5, "fail", {"$handle": 1}, "a", {"$error": "late"}),
        call(6, "cancel", {"$handle": 1}, "zz"),
        call(7, "seal", {"$handle": 1}),
        call(8, "close", {"$handle": 1}, {"status": "error"}),
        call(9, "snapshot"),
        call(10, "toOpenAIChatCompletions", {"$snapshot": 7}),
        call(11, "toOpenAIResponses"),
        call(12, "toAnthropicToolResults", {"$snapshot": 8}),
        call(13, "activeGeneration", "ignored"),
    )
    settlement_a = '{"status":"success","content":"{\\"n\\":1.5,\\"t\\":true}","provenance":"reported"}'
    settlement_b = '{"status":"error","code":"E","message":"bad","provenance":"reported"}'
    calls = (
        f'[{{"id":"a","name":"t","state":"success","settlement":{settlement_a}}},'
        f'{{"id":"b","name":"u","state":"error","settlement":{settlement_b}}}]'
    )
    diagnostics = (  # a diagnostic is the rejection without "accepted" (SET-11, DIAG-1)
        '[{"reason":"duplicate_settlement","callId":"a","generation":1,"observedStatus":null},'
        '{"reason":"unknown_call","callId":"zz","generation":1,"observedStatus":null}]'
    )
    snapshot = f'{{"generation":1,"closed":true,"closeReason":{{"status":"complete"}},"calls":{calls},"diagnostics":{diagnostics}}}'
    error_b = '{\\"error\\":{\\"code\\":\\"E\\",\\"message\\":\\"bad\\"}}'
    assert out == [
        '{"id":0,"ok":null}',
        '{"id":1,"ok":null}',
        '{"id":2,"ok":{"generation":1,"handle":{"generation":1},"superseded":null}}',
        f'{{"id":3,"ok":{{"accepted":true,"generation":1,"callId":"a","settlement":{settlement_a}}}}}',
        f'{{"id":4,"ok":{{"accepted":true,"generation":1,"callId":"b","settlement":{settlement_b}}}}}',
        '{"id":5,"ok":{"accepted":false,"reason":"duplicate_settlement","callId":"a","generation":1,"observedStatus":null}}',
        '{"id":6,"ok":{"accepted":false,"reason":"unknown_call","callId":"zz","generation":1,"observedStatus":null}}',
        f'{{"id":7,"ok":{snapshot}}}',
        f'{{"id":8,"ok":{snapshot}}}',
        f'{{"id":9,"ok":{snapshot}}}',
        '{"id":10,"ok":[{"role":"tool","tool_call_id":"a","content":"{\\"n\\":1.5,\\"t\\":true}"},'
        f'{{"role":"tool","tool_call_id":"b","content":"{error_b}"}}]}}',
        '{"id":11,"ok":[{"type":"function_call_output","call_id":"a","output":"{\\"n\\":1.5,\\"t\\":true}"},'
        f'{{"type":"function_call_output","call_id":"b","output":"{error_b}"}}]}}',
        '{"id":12,"ok":[{"type":"tool_result","tool_use_id":"a","content":"{\\"n\\":1.5,\\"t\\":true}"},'
        f'{{"type":"tool_result","tool_use_id":"b","content":"{error_b}","is_error":true}}]}}',
        '{"id":13,"ok":1}',
    ]


def test_handle_tags_forged_and_stale() -> None:
    out = run_serve(
        NEW,
        call(1, "begin", CALLS),
        call(2, "succeed", {"$forgedHandle": 1}, "a", 1),
        call(3, "begin", [{"id": "c", "name": "t"}]),
        call(4, "succeed", {"$handle": 1}, "a", 1),
        call(5, "close", {"$forgedHandle": 1.5}),
        call(6, "seal", {"$handle": 3}),
    )
    assert (
        out[2]
        == '{"id":2,"ok":{"accepted":false,"reason":"stale_generation","callId":"a","generation":1,"observedStatus":"success"}}'
    )
    superseded = json.loads(out[3])["ok"]["superseded"]
    assert [c["settlement"]["code"] for c in superseded["calls"]] == ["superseded", "superseded"]
    assert (
        out[4]
        == '{"id":4,"ok":{"accepted":false,"reason":"stale_generation","callId":"a","generation":1,"observedStatus":"success"}}'
    )
    assert (
        out[5]
        == '{"id":5,"ok":{"accepted":false,"reason":"stale_generation","callId":null,"generation":null,"observedStatus":null}}'
    )
    assert json.loads(out[6])["error"]["kind"] == "ProtocolError"


def test_snapshot_and_clone_tags() -> None:
    out = run_serve(
        NEW,
        call(1, "begin", [{"id": "a", "name": "t"}]),
        call(2, "begin", [{"id": "b", "name": "t"}]),
        call(3, "toOpenAIChatCompletions", {"$snapshot": 2}),
        call(4, "toOpenAIChatCompletions", {"$clone": 2}),
        call(5, "succeed", {"$handle": 2}, "zz", 1),
        call(6, "toOpenAIChatCompletions", {"$snapshot": 5}),
        call(7, "toOpenAIChatCompletions", {"$snapshot": 4}),
        call(8, "succeed", {"$handle": 2}, "b", {"$clone": 2}),
    )
    assert out[3].startswith(
        '{"id":3,"ok":[{"role":"tool","tool_call_id":"a","content":"{\\"error\\":{\\"code\\":\\"superseded\\"'
    )
    assert out[4] == ('{"id":4,"error":{"kind":"TypeError","message":"snapshot must be a ToolCallClosure snapshot"}}')
    # a rejection object is a value, not a snapshot
    assert json.loads(out[6])["error"]["message"] == "snapshot must be a ToolCallClosure snapshot"
    assert json.loads(out[7])["error"]["kind"] == "ProtocolError"  # request 4 raised: nothing to refer to
    content = json.loads(out[8])["ok"]["settlement"]["content"]
    assert json.loads(content)["closeReason"]["code"] == "superseded"


def test_undefined_nan_inf_error_and_literal_tags() -> None:
    out = run_serve(
        NEW,
        call(1, "begin", CALLS),
        call(2, "succeed", {"$handle": 1}, "a", {"$undefined": True}),
        call(3, "succeed", {"$handle": 1}, "a", [{"$nan": True}, {"$inf": 1}, {"$inf": -1}, 12345678901234567890]),
        call(4, "cancel", {"$handle": 1}, "b", {"$error": "why"}, {"$undefined": True}),
        call(5, "succeed", {"$handle": 1}, "zz", {"$literal": {"$handle": 1}}),
        call(6, "succeed", {"$handle": 1}, "a", {"x": {"$undefined": True}}),
        call(7, "succeed", {"$handle": 1}, "a", {"$bogus": 1}),
    )
    assert out[2] == (
        '{"id":2,"error":{"kind":"TypeError","message":"result content must be JSON-serializable or a string"}}'
    )
    assert json.loads(out[3])["ok"]["settlement"]["content"] == "[null,null,null,12345678901234567000]"
    assert json.loads(out[4])["ok"]["settlement"] == {
        "status": "cancelled",
        "code": "cancelled",
        "message": "Error: why",
        "provenance": "reported",
    }
    assert json.loads(out[5])["ok"]["reason"] == "unknown_call"
    assert json.loads(out[6])["error"]["kind"] == "ProtocolError"
    assert json.loads(out[7])["error"]["kind"] == "ProtocolError"


def test_hook_runs_nested_calls_first_and_the_first_result_wins() -> None:
    """RE-1 over the protocol: the hook's nested settle answers first (nested 1), then the outer rejection."""
    hook = {"$hook": {"calls": [call(20, "succeed", {"$handle": 1}, "a", "inner")], "then": {"v": 1}}}
    out = run_serve(NEW, call(1, "begin", CALLS), call(2, "succeed", {"$handle": 1}, "a", hook))
    assert out[2:] == [
        '{"id":20,"nested":1,"ok":{"accepted":true,"generation":1,"callId":"a","settlement":'
        '{"status":"success","content":"inner","provenance":"reported"}}}',
        '{"id":2,"ok":{"accepted":false,"reason":"duplicate_settlement","callId":"a","generation":1,'
        '"observedStatus":"success"}}',
    ]


def test_hook_throw_is_a_caller_error_after_its_calls_and_triggers_once() -> None:
    inner = {"$hook": {"calls": [call(31, "activeGeneration")], "then": "m"}}
    hook = {"$hook": {"calls": [call(30, "cancel", {"$handle": 1}, "b", inner)], "then": "x", "throw": "boom"}}
    out = run_serve(
        NEW,
        call(1, "begin", CALLS),
        call(2, "cancel", {"$handle": 1}, "a", hook),
        call(3, "snapshot"),
    )
    assert out[2] == '{"id":31,"nested":2,"ok":1}'
    assert out[3].startswith('{"id":30,"nested":1,"ok":{"accepted":true,')
    assert out[4] == '{"id":2,"error":{"kind":"CallerError","message":"boom"}}'
    snapshot = json.loads(out[5])["ok"]
    assert [c["state"] for c in snapshot["calls"]] == ["pending", "cancelled"]  # the nested change is kept (RE-4)


def test_hook_as_a_mapping_triggers_on_the_first_key_read() -> None:
    """RE-9: a close reason whose first read closes the run: the outer close returns the nested snapshot."""
    hook = {"$hook": {"calls": [call(40, "close", {"$handle": 1}, {"code": "inner"})], "then": {"status": "error"}}}
    out = run_serve(NEW, call(1, "begin", CALLS), call(2, "close", {"$handle": 1}, hook))
    assert json.loads(out[2])["nested"] == 1
    assert json.loads(out[3])["ok"]["closeReason"]["code"] == "inner"


def test_hook_in_options_finds_no_instance() -> None:
    hook = {"$hook": {"calls": [call(50, "snapshot")], "then": {"maxCalls": 2}}}
    out = run_serve(NEW, call(1, "begin", []), {"id": 2, "cmd": "new", "options": hook}, call(3, "activeGeneration"))
    assert json.loads(out[2]) == {"id": 50, "nested": 1, "error": json.loads(out[2])["error"]}
    assert json.loads(out[2])["error"]["kind"] == "ProtocolError"
    assert out[3:] == ['{"id":2,"ok":null}', '{"id":3,"ok":null}']


@pytest.mark.parametrize(
    "line",
    [
        "{not json",
        "[1,2]",
        '{"cmd":"call"}',
        '{"id":true,"cmd":"hello","protocol":1}',
        '{"id":1,"cmd":"dance"}',
        '{"id":1,"cmd":"call","method":"explode","args":[]}',
        '{"id":1,"cmd":"call","method":"begin","args":{}}',
        '{"id":1,"cmd":"call","method":"begin","args":[{"$hook":[]}]}',
        '{"id":1,"cmd":"call","method":"begin","args":[NaN]}',
    ],
)
def test_malformed_requests_are_protocol_errors_and_serving_continues(line: str) -> None:
    out = run_serve(NEW, line, call(9, "activeGeneration"))
    assert json.loads(out[1])["error"]["kind"] == "ProtocolError"
    assert out[2] == '{"id":9,"ok":null}'


def test_strings_are_written_as_json_stringify_writes_them() -> None:
    out = run_serve(NEW, call(1, "begin", [{"id": "\ud800x", "name": f"n{L}\u00e9\x7f\x01"}]), call(2, "snapshot"))
    assert '"id":"\\ud800x","name":"n\u2028\u00e9\x7f\\u0001"' in out[2]


def test_bye_answers_and_exits_zero() -> None:
    out = run_serve(NEW, {"id": "end", "cmd": "bye"}, call(1, "snapshot"))
    assert out == ['{"id":0,"ok":null}', '{"id":"end","ok":null}']


def test_process_subject_drives_serve_and_reports_a_dead_subject() -> None:
    with ProcessSubject(reference_command()) as subject:
        assert subject.send({"id": 1, "cmd": "new"}) == [{"id": 1, "ok": None}]
        assert subject.send(call(2, "begin", []))[-1]["ok"]["generation"] == 1
    dead = ProcessSubject([sys.executable, "-c", "pass"], timeout=5)
    with pytest.raises(SubjectError, match="exited"):
        dead.send({"id": 1, "cmd": "hello", "protocol": 1})
    dead.close()


def _deep_list(levels: int) -> str:
    return "[" * levels + '"x"' + "]" * levels


def test_request_nesting_is_bounded_at_128_levels_without_internal_error() -> None:
    """spec/protocol.md, Limits: 128 levels are served, 129 and 5,000 are ProtocolErrors that change nothing."""

    def succeed(request_id: int, call_id: str, content: str) -> str:
        return json.dumps(call(request_id, "succeed", {"$handle": 1}, call_id, "CONTENT")).replace('"CONTENT"', content)

    out = run_serve(
        NEW,
        call(1, "begin", CALLS),
        succeed(2, "a", _deep_list(126)),
        succeed(3, "b", _deep_list(127)),
        succeed(4, "b", _deep_list(5000)),
        call(5, "succeed", {"$handle": 1}, "b", "ok"),
    )
    assert json.loads(out[2])["ok"]["accepted"] is True
    assert json.loads(out[3]) == {
        "id": 3,
        "error": {"kind": "ProtocolError", "message": "the request nests deeper than 128 levels"},
    }
    assert json.loads(out[4])["error"]["kind"] == "ProtocolError"
    assert json.loads(out[5])["ok"]["accepted"] is True
    assert "InternalError" not in "".join(out)


def _hook_chain(levels: int, method: str) -> str:
    """A request line: ``method`` on a hook whose calls run ``method`` on a hook whose calls … (``levels`` deep)."""
    arg = json.dumps({"$handle": 1})
    for number in range(levels):
        nested = json.dumps(call(100 + number, method, "ARG")).replace('"ARG"', arg)
        arg = json.dumps({"$hook": {"calls": ["CALL"], "then": {"generation": 1}}}).replace('"CALL"', nested)
    return json.dumps(call(9, method, "ARG")).replace('"ARG"', arg)


@pytest.mark.parametrize("levels", [25, 110])
def test_hook_chains_never_answer_internal_error(levels: int) -> None:
    """A seal whose handle is a chain of hooks, each sealing again: within the bound it runs, beyond it the
    whole line is refused, and in neither case is the answer an InternalError."""
    out = run_serve(NEW, call(1, "begin", CALLS), _hook_chain(levels, "seal"), call(2, "snapshot"))
    last = json.loads(out[-2])
    assert "InternalError" not in "".join(out)
    if levels == 25:
        assert len(out) == 2 + levels + 2
    else:
        assert last == {
            "id": 9,
            "error": {"kind": "ProtocolError", "message": "the request nests deeper than 128 levels"},
        }
        assert json.loads(out[-1])["ok"]["closed"] is False  # the refused line changed nothing


def test_serve_exits_quietly_when_its_reader_closes_the_pipe() -> None:
    """issue 10: no BrokenPipeError traceback; exit status 0 (spec/protocol.md, Limits: Output)."""
    reader_closes = subprocess.run(
        [
            "bash",
            "-c",
            f"yes '{json.dumps(NEW)}' | head -c 2000000 | {sys.executable} -m tool_call_closure serve | head -1",
        ],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert reader_closes.stdout == b'{"id":0,"ok":null}\n'
    assert b"Traceback" not in reader_closes.stderr
    assert reader_closes.stderr == b""
    script = f"yes '{json.dumps(NEW)}' | head -c 2000000 | {sys.executable} -m tool_call_closure serve | head -1 >/dev/null; echo ${{PIPESTATUS[2]}}"
    status = subprocess.run(["bash", "-c", script], capture_output=True, timeout=120, check=False)
    assert status.stdout.strip() == b"0"


def test_serve_reports_a_full_disk_in_one_line() -> None:
    """issue 10: ENOSPC is one line on stderr and exit status 1, no traceback."""
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            [sys.executable, "-m", "tool_call_closure", "serve"],
            input=json.dumps(NEW).encode() + b"\n",
            stdout=full,
            stderr=subprocess.PIPE,
            timeout=60,
            check=False,
        )
    assert done.returncode == 1
    assert done.stderr.decode().splitlines() == [
        "tool-call-closure serve: cannot write the output: No space left on device"
    ]


def test_tamper_tries_to_modify_a_returned_value_and_the_snapshot_holds() -> None:
    """spec/protocol.md, tamper: frozen values refuse every write (SNAP-3, IMM-1); plain export data changes."""
    out = run_serve(
        NEW,
        call(1, "begin", CALLS),
        call(2, "succeed", {"$handle": 1}, "a", "ok"),
        call(3, "close", {"$handle": 1}),
        {"id": 4, "cmd": "tamper", "target": 3},
        call(5, "toOpenAIChatCompletions", {"$snapshot": 3}),
        {"id": 6, "cmd": "tamper", "target": 5},
        call(7, "toOpenAIChatCompletions", {"$snapshot": 3}),
        call(8, "begin", []),
        call(9, "succeed", {"$forgedHandle": 2}, "a", {"$snapshot": 5}),
        {"id": 10, "cmd": "tamper", "target": 99},
    )
    assert out[4] == '{"id":4,"ok":null}'
    assert out[5] == out[7].replace('"id":7', '"id":5')  # the tampered snapshot exports as before
    assert json.loads(out[5])["ok"][0]["content"] == "ok"
    assert json.loads(out[10])["error"]["kind"] == "ProtocolError"


def test_tamper_changes_a_mutable_value_post_order() -> None:
    from tool_call_closure.conformance.serve import tamper

    value: Any = {"a": [1, {"b": 2}], "c": (3,)}
    inner = value["a"]
    tamper(value)
    assert value == {"a": "tampered", "c": "tampered", "tampered": True}
    assert inner == ["tampered", "tampered", "tampered"]


# --------------------------------------------------------------------------- bounded work (issue 19 item 6)


def test_clone_copies_a_value_once_per_line_however_often_the_line_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """An 11 KiB line of $clone references cost 15 s and 328 MB when each reference re-parsed the value."""
    import io

    from tool_call_closure.conformance import serve

    server = serve.Server(io.BytesIO())
    server.handle_line(json.dumps({"id": 1, "cmd": "new"}))
    server.handle_line(json.dumps(call(2, "begin", [{"id": f"c{i}", "name": "t"} for i in range(50)])))
    server.handle_line(json.dumps(call(3, "snapshot")))
    parsed: list[str] = []
    real = serve.parse_request_line

    def counting(line: str) -> Any:
        parsed.append(line)
        return real(line)

    monkeypatch.setattr(serve, "parse_request_line", counting)
    server.handle_line(json.dumps(call(4, "succeed", {"$handle": 1}, "c0", [{"$clone": 3}] * 500)))
    assert len(parsed) == 2  # the line itself, then one copy of the snapshot for its 500 references
    server.handle_line(json.dumps(call(5, "succeed", {"$handle": 1}, "c1", [{"$clone": 3}] * 3)))
    assert len(parsed) == 4  # a new line copies afresh (a tamper in between may have changed the value)


def test_an_integer_literal_of_5000_digits_is_a_double_not_invalid_json() -> None:
    out = run_serve(
        NEW,
        call(1, "begin", CALLS),
        '{"id":2,"cmd":"call","method":"succeed","args":[{"$handle":1},"a",[' + "9" * 5000 + "]]}",
    )
    assert json.loads(out[-1])["ok"]["settlement"]["content"] == "[null]"  # Infinity, as JSON.parse reads it


def test_serve_with_its_output_closed_says_so_without_a_traceback() -> None:
    done = subprocess.run(
        ["sh", "-c", 'exec "$0" -m tool_call_closure serve 1>&-', sys.executable],
        input=b'{"id":1,"cmd":"bye"}\n',
        capture_output=False,
        stderr=subprocess.PIPE,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.decode() == "tool-call-closure serve: cannot write standard output: it is closed\n"


def test_serve_with_fewer_capabilities_is_a_frozen_v1_subject() -> None:
    """``serve --capabilities none`` is protocol v1 as first published: the later additions are refused."""
    done = subprocess.run(
        [sys.executable, "-m", "tool_call_closure", "serve", "--capabilities", "none"],
        input=b'{"id":1,"cmd":"hello","protocol":1}\n{"id":2,"cmd":"new"}\n'
        b'{"id":3,"cmd":"call","method":"toGeminiFunctionResponses"}\n',
        capture_output=True,
        timeout=60,
        check=False,
    )
    hello, _, gemini = (json.loads(line) for line in done.stdout.decode().splitlines())
    assert hello["capabilities"] == []
    assert gemini["error"] == {"kind": "ProtocolError", "message": "unknown method 'toGeminiFunctionResponses'"}
    refused = subprocess.run(
        [sys.executable, "-m", "tool_call_closure", "serve", "--capabilities", "hook,telepathy"],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert refused.returncode == 2
    assert refused.stderr.decode().startswith(
        "tool-call-closure serve: --capabilities: unknown telepathy (known: hook,"
    )
