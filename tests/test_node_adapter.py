"""The Node adapter (``src/tool_call_closure/conformance/node/adapter.cjs``) serving protocol v1 for the JavaScript original.

Every test starts the adapter as a subprocess against the original, feeds it request lines, and compares the
response lines exactly (byte for byte after UTF-8 decoding), except for ProtocolError messages, which the
protocol leaves free.  Expected values come from the behaviour catalogue
(``/work/shared/reference/seed-behavior.md``; rule IDs in the test names) and were checked by running the
original by hand with ``node -e``.

The original is looked up at ``$TCC_JS`` or at the shared seed path; the module is skipped when it or ``node``
is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.node

ROOT = Path(__file__).resolve().parents[1]
ADAPTER = ROOT / "src" / "tool_call_closure" / "conformance" / "node" / "adapter.cjs"
SEED = Path("/work/shared/seed/tool-call-closure-1.0.0/src/index.cjs")
ORIGINAL = Path(os.environ.get("TCC_JS") or SEED)
NODE = shutil.which("node")

if NODE is None:
    pytest.skip("node is not on PATH", allow_module_level=True)
if not ORIGINAL.is_file():
    pytest.skip(f"the original's index.cjs is not at {ORIGINAL} (set TCC_JS)", allow_module_level=True)


# --------------------------------------------------------------------------- driving the adapter


@dataclass
class Run:
    lines: list[str]  # stdout split on "\n" only, each decoded as strict UTF-8
    returncode: int
    stderr: str


def encode(request: Any) -> str:
    """A request object as one protocol line (non-ASCII raw, as a runner would send it)."""
    return json.dumps(request, ensure_ascii=False, separators=(",", ":"))


def serve(*requests: Any, argv: list[str] | None = None, env: dict[str, str] | None = None) -> Run:
    """Send the requests (objects, raw lines, or raw bytes sent as is) and collect the responses."""
    chunks = []
    for request in requests:
        if isinstance(request, bytes):
            chunks.append(request)
        elif isinstance(request, str):
            chunks.append(request.encode("utf-8") + b"\n")
        else:
            chunks.append(encode(request).encode("utf-8") + b"\n")
    command = [NODE, str(ADAPTER), *([str(ORIGINAL)] if argv is None else argv)]
    environment = {k: v for k, v in os.environ.items() if k != "TCC_JS"} if env is None else env
    done = subprocess.run(command, input=b"".join(chunks), capture_output=True, timeout=60, env=environment)
    out = done.stdout
    assert out == b"" or out.endswith(b"\n"), f"response not ended by a newline: {out[-80:]!r}"
    lines = [part.decode("utf-8") for part in out.split(b"\n")[:-1]]  # strict: raises on invalid UTF-8
    return Run(lines, done.returncode, done.stderr.decode("utf-8", "replace"))


def responses(*requests: Any) -> list[str]:
    run = serve(*requests)
    assert run.returncode == 0, run.stderr
    return run.lines


def call(request_id: Any, method: str, *args: Any) -> dict[str, Any]:
    return {"id": request_id, "cmd": "call", "method": method, "args": list(args)}


def hook(calls: list[Any] | None = None, **members: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {} if calls is None else {"calls": calls}
    spec.update(members)
    return {"$hook": spec}


NEW = {"id": "new", "cmd": "new"}
NEW_OK = '{"id":"new","ok":null}'
H1 = {"$handle": 1}
CALLS_AB = [{"id": "a", "name": "n"}, {"id": "b", "name": "m"}]
BEGIN_AB = call(1, "begin", CALLS_AB)
BEGIN_1 = '{"id":1,"ok":{"generation":1,"handle":{"generation":1},"superseded":null}}'
AFTER = call("after", "activeGeneration")  # any cheap request proves the adapter is still serving


def assert_protocol_error(line: str, request_id: Any, nested: int | None = None) -> None:
    """ProtocolError messages are free text: check everything else exactly."""
    response = json.loads(line)
    keys = ["id", "error"] if nested is None else ["id", "nested", "error"]
    assert list(response) == keys, line
    assert response["id"] == request_id, line
    assert type(response["id"]) is type(request_id), line
    if nested is not None:
        assert response["nested"] == nested, line
    error = response["error"]
    assert list(error) == ["kind", "message"], line
    assert error["kind"] == "ProtocolError", line
    assert isinstance(error["message"], str), line
    assert error["message"], line


def expected_version() -> str:
    manifest = ORIGINAL.parent.parent / "package.json"
    return json.loads(manifest.read_text())["version"] if manifest.is_file() else "unknown"


# --------------------------------------------------------------------------- handshake, startup, exit


def test_hello_names_the_original_and_its_capabilities() -> None:
    lines = responses({"id": 1, "cmd": "hello", "protocol": 1})
    version = expected_version()
    if ORIGINAL == SEED:
        assert version == "1.0.0"
    assert lines == [
        '{"id":1,"protocol":1,"implementation":{"name":"tool-call-closure","language":"javascript","version":"'
        + version
        + '"},"capabilities":["hook","tamper","nesting-limit","undefined-properties"]}'
    ]


@pytest.mark.parametrize("protocol", [2, "1", None, True])
def test_hello_with_another_protocol_is_a_protocol_error(protocol: Any) -> None:
    lines = responses({"id": "h", "cmd": "hello", "protocol": protocol}, NEW, AFTER)
    assert len(lines) == 3
    assert_protocol_error(lines[0], "h")
    assert lines[1:] == [NEW_OK, '{"id":"after","ok":null}']


def test_bye_answers_then_exits_0_and_reads_no_further() -> None:
    run = serve(NEW, {"id": 9, "cmd": "bye"}, AFTER)
    assert run.returncode == 0
    assert run.lines == [NEW_OK, '{"id":9,"ok":null}']


def test_end_of_input_means_bye() -> None:
    run = serve(NEW, AFTER)
    assert run.returncode == 0
    assert run.lines == [NEW_OK, '{"id":"after","ok":null}']


def test_without_a_library_path_prints_usage_and_exits_2() -> None:
    run = serve({"id": 1, "cmd": "hello", "protocol": 1}, argv=[], env={"PATH": os.environ.get("PATH", "")})
    assert run.returncode == 2
    assert run.lines == []
    assert run.stderr.startswith("usage:")


def test_library_path_from_TCC_JS_when_no_argument() -> None:
    env = {"PATH": os.environ.get("PATH", ""), "TCC_JS": str(ORIGINAL)}
    run = serve(NEW, call(1, "begin", []), argv=[], env=env)
    assert run.returncode == 0, run.stderr
    assert run.lines == [NEW_OK, BEGIN_1]


# --------------------------------------------------------------------------- new


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (None, "options must be an object"),  # OPT-2: null is passed through, not defaulted
        (0, "options must be an object"),  # OPT-2
        ([], "options must be an object"),  # OPT-2
        ({"maxCalls": 0}, "maxCalls must be a positive safe integer"),  # OPT-4
        ({"maxCalls": 1.5}, "maxCalls must be a positive safe integer"),  # OPT-4
        ({"maxDiagnostics": 0, "maxCodeBytes": 0}, "maxDiagnostics must be a positive safe integer"),  # OPT-5
    ],
)
def test_OPT_2_4_5_new_with_bad_options_is_a_TypeError(options: Any, message: str) -> None:
    lines = responses({"id": 2, "cmd": "new", "options": options})
    assert lines == ['{"id":2,"error":{"kind":"TypeError","message":"' + message + '"}}']


def test_OPT_1_new_without_options_uses_the_defaults() -> None:
    calls = [{"id": f"c{i}", "name": "n"} for i in range(1000)]
    lines = responses(NEW, call(1, "begin", calls), call(2, "activeGeneration"))
    assert lines == [NEW_OK, BEGIN_1, '{"id":2,"ok":1}']  # maxCalls 1000 (BEG-3: length == maxCalls is allowed)


def test_OPT_4_JS_6_integral_double_limit_and_RangeError_on_violation() -> None:
    lines = responses({"id": "n", "cmd": "new", "options": {"maxCalls": 1.0, "bogus": -1}}, call(1, "begin", CALLS_AB))
    assert lines == [
        '{"id":"n","ok":null}',
        '{"id":1,"error":{"kind":"RangeError","message":"calls exceed maxCalls (1)"}}',
    ]


def test_failed_new_leaves_no_current_instance() -> None:
    lines = responses(NEW, call(1, "begin", []), {"id": 2, "cmd": "new", "options": None}, call(3, "snapshot"))
    assert lines[:3] == [NEW_OK, BEGIN_1, '{"id":2,"error":{"kind":"TypeError","message":"options must be an object"}}']
    assert_protocol_error(lines[3], 3)


def test_new_resets_handles_and_results() -> None:
    lines = responses(
        NEW,
        call(1, "begin", []),
        call(2, "snapshot"),
        NEW,
        call(3, "seal", H1),
        call(4, "toOpenAIResponses", {"$snapshot": 2}),
        call(5, "begin", []),
        call(6, "seal", H1),  # generation 1 of the new instance: a different handle
    )
    assert lines[:4] == [NEW_OK, BEGIN_1, '{"id":2,"ok":' + EMPTY_OPEN_SNAPSHOT + "}", NEW_OK]
    assert_protocol_error(lines[4], 3)
    assert_protocol_error(lines[5], 4)
    assert lines[6:] == [
        '{"id":5,"ok":{"generation":1,"handle":{"generation":1},"superseded":null}}',
        '{"id":6,"ok":{"generation":1,"closed":true,"closeReason":{"status":"complete"},"calls":[],"diagnostics":[]}}',
    ]


EMPTY_OPEN_SNAPSHOT = '{"generation":1,"closed":false,"closeReason":null,"calls":[],"diagnostics":[]}'


def test_hook_in_options_finds_no_instance_for_its_calls() -> None:
    options = hook([call("c1", "activeGeneration")], then={"maxCalls": 1})
    lines = responses({"id": "n", "cmd": "new", "options": options}, call(1, "begin", CALLS_AB))
    assert len(lines) == 3
    assert_protocol_error(lines[0], "c1", nested=1)  # new discards the instance before constructing
    assert lines[1:] == [
        '{"id":"n","ok":null}',  # OPT-3: options.maxCalls read through the hook: then.maxCalls == 1
        '{"id":1,"error":{"kind":"RangeError","message":"calls exceed maxCalls (1)"}}',
    ]


# --------------------------------------------------------------------------- a full lifecycle

SETTLED_A = '{"status":"success","content":"{\\"ok\\":true}","provenance":"reported"}'
SYNTHETIC_ABORT = (
    '{"status":"cancelled","code":"request_aborted","message":"gone","provenance":"synthetic",'
    '"sideEffectState":"unknown"}'
)
CLOSED_AB = (
    '{"generation":1,"closed":true,'
    '"closeReason":{"status":"cancelled","code":"request_aborted","message":"gone","sideEffectState":"unknown"},'
    '"calls":[{"id":"a","name":"n","state":"success","settlement":' + SETTLED_A + "},"
    '{"id":"b","name":"m","state":"cancelled","settlement":' + SYNTHETIC_ABORT + "}],"
    '"diagnostics":[]}'
)
ERROR_B = (
    '{\\"error\\":{\\"code\\":\\"request_aborted\\",\\"message\\":\\"gone\\",\\"side_effect_state\\":\\"unknown\\"}}'
)


def test_SUP_6_SET_10_CLO_6_ADP_4_ADP_5_lifecycle_and_all_three_exports() -> None:
    lines = responses(
        {"id": 0, "cmd": "hello", "protocol": 1},
        NEW,
        BEGIN_AB,
        call(2, "succeed", H1, "a", {"ok": True}),
        call(3, "close", H1, {"status": "cancelled", "code": "request_aborted", "message": "gone"}),
        call(4, "toOpenAIChatCompletions", {"$snapshot": 3}),
        call(5, "toOpenAIResponses", {"$snapshot": 3}),
        call(6, "toAnthropicToolResults"),  # ADP-1: absent means a fresh snapshot of the (closed) run
        call(7, "activeGeneration"),
    )
    assert lines[1:] == [
        NEW_OK,
        BEGIN_1,
        '{"id":2,"ok":{"accepted":true,"generation":1,"callId":"a","settlement":' + SETTLED_A + "}}",
        '{"id":3,"ok":' + CLOSED_AB + "}",
        '{"id":4,"ok":[{"role":"tool","tool_call_id":"a","content":"{\\"ok\\":true}"},'
        '{"role":"tool","tool_call_id":"b","content":"' + ERROR_B + '"}]}',
        '{"id":5,"ok":[{"type":"function_call_output","call_id":"a","output":"{\\"ok\\":true}"},'
        '{"type":"function_call_output","call_id":"b","output":"' + ERROR_B + '"}]}',
        '{"id":6,"ok":[{"type":"tool_result","tool_use_id":"a","content":"{\\"ok\\":true}"},'
        '{"type":"tool_result","tool_use_id":"b","content":"' + ERROR_B + '","is_error":true}]}',
        '{"id":7,"ok":1}',  # GEN-1: still 1 after close
    ]


def test_GEN_1_SNAP_1_before_begin_and_activeGeneration_ignores_args() -> None:
    lines = responses(NEW, call(1, "activeGeneration", 5, "x"), call(2, "snapshot"))
    assert lines == [NEW_OK, '{"id":1,"ok":null}', '{"id":2,"ok":null}']


# --------------------------------------------------------------------------- the guard pipeline


def test_SET_4_forged_handle_is_stale() -> None:
    forged = call(2, "succeed", {"$forgedHandle": 1}, "a", 1)
    lines = responses(NEW, BEGIN_AB, forged, call(3, "seal", {"$forgedHandle": 0}))
    assert lines == [
        NEW_OK,
        BEGIN_1,
        '{"id":2,"ok":{"accepted":false,"reason":"stale_generation","callId":"a","generation":1,"observedStatus":"success"}}',
        # SEAL-1 / SET-2: generation 0 is not a positive safe integer, so it is reported as null
        '{"id":3,"ok":{"accepted":false,"reason":"stale_generation","callId":null,"generation":null,"observedStatus":null}}',
    ]


def test_SET_4_old_handle_is_stale_after_a_newer_begin() -> None:
    lines = responses(NEW, call(1, "begin", []), call(2, "begin", CALLS_AB), call(3, "cancel", H1, "a"))
    assert lines[3] == (
        '{"id":3,"ok":{"accepted":false,"reason":"stale_generation","callId":"a","generation":1,"observedStatus":"cancelled"}}'
    )


def test_SET_5_run_closed_reports_the_observed_status() -> None:
    lines = responses(
        NEW,
        BEGIN_AB,
        call(2, "close", H1),
        call(3, "settle", H1, "nope", {"status": "bogus"}),
        call(4, "succeed", H1, "a", {"$undefined": True}),  # CONV-4: content is never serialized on this path
    )
    assert lines[3:] == [
        '{"id":3,"ok":{"accepted":false,"reason":"run_closed","callId":"nope","generation":1,"observedStatus":"invalid"}}',
        '{"id":4,"ok":{"accepted":false,"reason":"run_closed","callId":"a","generation":1,"observedStatus":"success"}}',
    ]


def test_SET_6_unknown_call_has_observedStatus_null() -> None:
    lines = responses(NEW, BEGIN_AB, call(2, "settle", H1, "zz", {"status": "error"}))
    assert lines[2] == (
        '{"id":2,"ok":{"accepted":false,"reason":"unknown_call","callId":"zz","generation":1,"observedStatus":null}}'
    )


def test_SET_7_duplicate_precheck_has_observedStatus_null() -> None:
    lines = responses(NEW, BEGIN_AB, call(2, "succeed", H1, "a", 1), call(3, "settle", H1, "a", 42))
    assert lines[3] == (
        '{"id":3,"ok":{"accepted":false,"reason":"duplicate_settlement","callId":"a","generation":1,"observedStatus":null}}'
    )


# --------------------------------------------------------------------------- $snapshot / $clone


def test_ADP_2_exact_snapshot_is_accepted_and_its_clone_refused() -> None:
    lines = responses(
        NEW,
        call(1, "begin", [{"id": "a", "name": "n"}]),
        call(2, "succeed", H1, "a", "hi"),
        call(3, "seal", H1),
        call(4, "toOpenAIChatCompletions", {"$clone": 3}),
        call(5, "toOpenAIChatCompletions", {"$snapshot": 3}),
        call(6, "toOpenAIChatCompletions", {"$snapshot": 2}),  # a rejection/result object is not a snapshot
    )
    assert lines[4:] == [
        '{"id":4,"error":{"kind":"TypeError","message":"snapshot must be a ToolCallClosure snapshot"}}',
        '{"id":5,"ok":[{"role":"tool","tool_call_id":"a","content":"hi"}]}',  # NORM-8: strings are stored raw
        '{"id":6,"error":{"kind":"TypeError","message":"snapshot must be a ToolCallClosure snapshot"}}',
    ]


def test_ADP_3_open_snapshot_is_refused_and_SUP_3_ADP_6_superseded_snapshot_exports() -> None:
    lines = responses(
        NEW,
        call(1, "begin", [{"id": "a", "name": "n"}]),
        call(2, "snapshot"),
        call(3, "toOpenAIResponses", {"$snapshot": 2}),
        call(4, "begin", []),  # $snapshot 4 is this begin's `superseded`
        call(5, "toOpenAIResponses", {"$snapshot": 4}),
    )
    assert lines[3] == (
        '{"id":3,"error":{"kind":"TypeError","message":"snapshot must be sealed before provider export"}}'
    )
    assert lines[5] == (
        '{"id":5,"ok":[{"type":"function_call_output","call_id":"a","output":"{\\"error\\":{'
        '\\"code\\":\\"superseded\\",\\"message\\":\\"Tool call was superseded by a newer generation.\\",'
        '\\"side_effect_state\\":\\"unknown\\"}}"}]}'
    )


def test_reference_to_a_call_that_raised_or_was_replaced_is_a_protocol_error() -> None:
    lines = responses(
        NEW,
        BEGIN_AB,
        call("x", "snapshot"),
        call("x", "succeed", H1, "a", {"$undefined": True}),  # raises; now the latest "x" returned nothing
        call(3, "toOpenAIResponses", {"$snapshot": "x"}),
        call(4, "toOpenAIResponses", {"$clone": "never"}),
        call("y", "snapshot"),
        call("y", "snapshot", {"$bogus": 1}),  # a ProtocolError also replaces the earlier "y"
        call(5, "toOpenAIResponses", {"$clone": "y"}),
        AFTER,
    )
    assert lines[3] == (
        '{"id":"x","error":{"kind":"TypeError","message":"result content must be JSON-serializable or a string"}}'
    )
    assert_protocol_error(lines[4], 3)
    assert_protocol_error(lines[5], 4)
    assert lines[6].startswith('{"id":"y","ok":{"generation":1,')
    assert_protocol_error(lines[7], "y")
    assert_protocol_error(lines[8], 5)
    assert lines[9] == '{"id":"after","ok":1}'


# --------------------------------------------------------------------------- value tags


def test_CONV_1_undefined_content_is_a_TypeError_and_CONV_2_absent_error_is_undefined() -> None:
    lines = responses(
        NEW,
        BEGIN_AB,
        call(2, "succeed", H1, "a", {"$undefined": True}),
        call(3, "succeed", H1, "a"),  # fewer args than parameters: the rest are absent
        call(4, "fail", H1, "a", {"$undefined": True}, {"$undefined": True}),
        call(5, "succeed", H1, "b", None, "extra", "args"),  # JS-8: null is not absent; extra args are ignored
    )
    message = '"result content must be JSON-serializable or a string"'
    assert lines[2:] == [
        '{"id":2,"error":{"kind":"TypeError","message":' + message + "}}",
        '{"id":3,"error":{"kind":"TypeError","message":' + message + "}}",
        '{"id":4,"ok":{"accepted":true,"generation":1,"callId":"a","settlement":'
        '{"status":"error","code":"tool_error","message":"undefined","provenance":"reported"}}}',
        '{"id":5,"ok":{"accepted":true,"generation":1,"callId":"b","settlement":'
        '{"status":"success","content":"null","provenance":"reported"}}}',
    ]


def test_CONV_3_cancel_message_absent_takes_the_default() -> None:
    lines = responses(NEW, BEGIN_AB, call(2, "cancel", H1, "a", {"$undefined": True}, "c"))
    assert lines[2] == (
        '{"id":2,"ok":{"accepted":true,"generation":1,"callId":"a","settlement":'
        '{"status":"cancelled","code":"c","message":"Tool call was cancelled.","provenance":"reported"}}}'
    )


def test_CLO_4_close_reason_undefined_is_empty_but_null_throws_natively() -> None:
    lines = responses(NEW, BEGIN_AB, call(2, "close", H1, None), call(3, "close", H1, {"$undefined": True}))
    assert lines[2] == (
        '{"id":2,"error":{"kind":"TypeError","message":"Cannot read properties of null (reading \'status\')"}}'
    )
    assert lines[3].startswith(
        '{"id":3,"ok":{"generation":1,"closed":true,"closeReason":{"status":"cancelled","code":"cancelled"'
    )


def test_NORM_8_nan_and_infinity_serialize_as_null() -> None:
    content = {"n": {"$nan": True}, "i": [{"$inf": 1}, {"$inf": -1}]}
    lines = responses(NEW, BEGIN_AB, call(2, "succeed", H1, "a", content), call(3, "succeed", H1, "b", {"$nan": True}))
    assert lines[2:] == [
        '{"id":2,"ok":{"accepted":true,"generation":1,"callId":"a","settlement":'
        '{"status":"success","content":"{\\"n\\":null,\\"i\\":[null,null]}","provenance":"reported"}}}',
        '{"id":3,"ok":{"accepted":true,"generation":1,"callId":"b","settlement":'
        '{"status":"success","content":"null","provenance":"reported"}}}',
    ]


def test_CONV_2_error_to_fail_keeps_the_message_and_NORM_6_cancel_stringifies_it() -> None:
    lines = responses(
        NEW,
        BEGIN_AB,
        call(2, "fail", H1, "a", {"$error": "boom"}),
        call(3, "cancel", H1, "b", {"$error": "stop"}),
    )
    assert lines[2:] == [
        '{"id":2,"ok":{"accepted":true,"generation":1,"callId":"a","settlement":'
        '{"status":"error","code":"tool_error","message":"boom","provenance":"reported"}}}',
        '{"id":3,"ok":{"accepted":true,"generation":1,"callId":"b","settlement":'
        '{"status":"cancelled","code":"cancelled","message":"Error: stop","provenance":"reported"}}}',
    ]


def test_literal_and_dollar_keys_in_larger_objects_are_plain_data() -> None:
    content = {"$literal": {"$nan": True}}
    wide = {"$nan": True, "b": 1}  # two keys: not a tag
    lines = responses(NEW, BEGIN_AB, call(2, "succeed", H1, "a", content), call(3, "succeed", H1, "b", wide))
    assert lines[2:] == [
        '{"id":2,"ok":{"accepted":true,"generation":1,"callId":"a","settlement":'
        '{"status":"success","content":"{\\"$nan\\":true}","provenance":"reported"}}}',
        '{"id":3,"ok":{"accepted":true,"generation":1,"callId":"b","settlement":'
        '{"status":"success","content":"{\\"$nan\\":true,\\"b\\":1}","provenance":"reported"}}}',
    ]


def test_NORM_8_proto_key_stays_an_own_property() -> None:
    raw = '{"id":2,"cmd":"call","method":"succeed","args":[{"$handle":1},"a",{"__proto__":{"x":1},"y":2}]}'
    lines = responses(NEW, BEGIN_AB, raw)
    assert lines[2] == (
        '{"id":2,"ok":{"accepted":true,"generation":1,"callId":"a","settlement":'
        '{"status":"success","content":"{\\"__proto__\\":{\\"x\\":1},\\"y\\":2}","provenance":"reported"}}}'
    )


# --------------------------------------------------------------------------- hooks

SETTLED_B_INNER = '{"status":"success","content":"inner","provenance":"reported"}'


def test_RE_1_nested_settle_of_the_same_call_wins() -> None:
    content = hook([call("n1", "succeed", H1, "b", "inner")], then=7)
    lines = responses(NEW, BEGIN_AB, call(2, "succeed", H1, "b", content), call(3, "snapshot"))
    assert lines[2:] == [
        '{"id":"n1","nested":1,"ok":{"accepted":true,"generation":1,"callId":"b",'
        '"settlement":' + SETTLED_B_INNER + "}}",
        '{"id":2,"ok":{"accepted":false,"reason":"duplicate_settlement","callId":"b","generation":1,"observedStatus":"success"}}',
        '{"id":3,"ok":{"generation":1,"closed":false,"closeReason":null,"calls":['
        '{"id":"a","name":"n","state":"pending","settlement":null},'
        '{"id":"b","name":"m","state":"success","settlement":' + SETTLED_B_INNER + "}],"
        '"diagnostics":[{"reason":"duplicate_settlement","callId":"b","generation":1,"observedStatus":"success"}]}}',
    ]


def test_RE_2_nested_close_during_toJSON_makes_the_outer_run_closed() -> None:
    lines = responses(NEW, BEGIN_AB, call(2, "succeed", H1, "a", hook([call("n", "close", H1)], then=1)))
    synthetic = (
        '{"status":"cancelled","code":"cancelled","message":"Tool call was cancelled.","provenance":"synthetic",'
        '"sideEffectState":"unknown"}'
    )
    assert lines[2:] == [
        '{"id":"n","nested":1,"ok":{"generation":1,"closed":true,"closeReason":{"status":"cancelled","code":"cancelled",'
        '"message":"Tool call was cancelled.","sideEffectState":"unknown"},"calls":['
        '{"id":"a","name":"n","state":"cancelled","settlement":' + synthetic + "},"
        '{"id":"b","name":"m","state":"cancelled","settlement":' + synthetic + '}],"diagnostics":[]}}',
        '{"id":2,"ok":{"accepted":false,"reason":"run_closed","callId":"a","generation":1,"observedStatus":"success"}}',
    ]


def test_RE_3_nested_begin_during_toJSON_makes_the_outer_stale() -> None:
    content = hook([call("n", "begin", [{"id": "x", "name": "y"}])], then=1)
    begin = call(1, "begin", [{"id": "a", "name": "n"}])
    lines = responses(NEW, begin, call(2, "succeed", H1, "a", content), call(3, "snapshot"))
    superseded = '{"status":"cancelled","code":"superseded","message":"Tool call was superseded by a newer generation."'
    stale = '{"reason":"stale_generation","callId":"a","generation":1,"observedStatus":"success"}'
    assert lines[2:] == [
        '{"id":"n","nested":1,"ok":{"generation":2,"handle":{"generation":2},"superseded":{"generation":1,"closed":true,'
        '"closeReason":' + superseded + ',"sideEffectState":"unknown"},'
        '"calls":[{"id":"a","name":"n","state":"cancelled","settlement":'
        + superseded
        + ',"provenance":"synthetic","sideEffectState":"unknown"}}],"diagnostics":[]}}}',
        '{"id":2,"ok":{"accepted":false,' + stale[1:] + "}",
        # the diagnostic is recorded in the new generation (DIAG-3)
        '{"id":3,"ok":{"generation":2,"closed":false,"closeReason":null,"calls":[{"id":"x","name":"y","state":"pending",'
        '"settlement":null}],"diagnostics":[' + stale + "]}}",
    ]


def test_RE_4_hook_throw_after_its_calls_is_a_CallerError_and_the_nested_change_stays() -> None:
    content = hook([call("n", "cancel", H1, "a", "m", "nested")], throw="after-nested")
    lines = responses(NEW, BEGIN_AB, call(2, "succeed", H1, "a", content), call(3, "snapshot"))
    nested = '{"status":"cancelled","code":"nested","message":"m","provenance":"reported"}'
    assert lines[2:] == [
        '{"id":"n","nested":1,"ok":{"accepted":true,"generation":1,"callId":"a","settlement":' + nested + "}}",
        '{"id":2,"error":{"kind":"CallerError","message":"after-nested"}}',
        '{"id":3,"ok":{"generation":1,"closed":false,"closeReason":null,"calls":['
        '{"id":"a","name":"n","state":"cancelled","settlement":' + nested + "},"
        '{"id":"b","name":"m","state":"pending","settlement":null}],"diagnostics":[]}}',
    ]


def test_RE_9_hook_as_close_reason_triggers_on_its_first_property_read() -> None:
    reason = hook([call("n", "close", H1, {"code": "inner"})])  # no then: every read gives undefined
    lines = responses(NEW, call(1, "begin", [{"id": "a", "name": "n"}]), call(2, "close", H1, reason))
    snapshot = (
        '{"generation":1,"closed":true,"closeReason":{"status":"cancelled","code":"inner",'
        '"message":"Tool call was cancelled.","sideEffectState":"unknown"},'
        '"calls":[{"id":"a","name":"n","state":"cancelled","settlement":{"status":"cancelled",'
        '"code":"inner","message":"Tool call was cancelled.","provenance":"synthetic","sideEffectState":"unknown"}}],'
        '"diagnostics":[]}'
    )
    # CLO-5: the run was closed meanwhile, so the outer close returns the nested close's snapshot
    assert lines[2:] == ['{"id":"n","nested":1,"ok":' + snapshot + "}", '{"id":2,"ok":' + snapshot + "}"]


def test_CLO_3_hook_reason_behaves_as_then_for_each_property_read() -> None:
    reason = hook(then={"status": "error", "code": "lim", "message": "too many", "sideEffectState": "not_started"})
    lines = responses(NEW, call(1, "begin", [{"id": "a", "name": "n"}]), call(2, "close", H1, reason))
    assert lines[2] == (
        '{"id":2,"ok":{"generation":1,"closed":true,"closeReason":{"status":"error","code":"lim","message":"too many",'
        '"sideEffectState":"not_started"},"calls":[{"id":"a","name":"n","state":"error","settlement":{"status":"error",'
        '"code":"lim","message":"too many","provenance":"synthetic","sideEffectState":"not_started"}}],'
        '"diagnostics":[]}}'
    )


def test_BEG_5_RE_10_nested_begin_in_a_call_entry_is_refused_and_stays_current() -> None:
    entry = hook([call("nb", "begin", [{"id": "in", "name": "n"}])], then={"id": "o", "name": "n"})
    lines = responses(
        NEW,
        call(1, "begin", [{"id": "a", "name": "n"}]),
        call(2, "begin", [entry]),
        call(3, "activeGeneration"),
        call(4, "seal", {"$handle": 2}),  # the nested begin's handle is recorded
        call(5, "toOpenAIChatCompletions", {"$snapshot": "nb"}),  # and so is its superseded snapshot
    )
    assert lines[2].startswith('{"id":"nb","nested":1,"ok":{"generation":2,"handle":{"generation":2},"superseded":{')
    assert lines[3:] == [
        '{"id":2,"error":{"kind":"TypeError","message":"active generation changed while validating calls"}}',
        '{"id":3,"ok":2}',
        '{"id":4,"ok":{"accepted":false,"reason":"pending_calls","callId":null,"generation":2,"observedStatus":null}}',
        '{"id":5,"ok":[{"role":"tool","tool_call_id":"a","content":"{\\"error\\":{\\"code\\":\\"superseded\\",\\"message\\":'
        '\\"Tool call was superseded by a newer generation.\\",\\"side_effect_state\\":\\"unknown\\"}}"}]}',
    ]


def test_hook_type_tests_do_not_trigger_it() -> None:
    # BEG-1 (not an array), BEG-4.2 (id not a string), ADP-2 (not a snapshot), CONV-2 (instanceof Error is false)
    quiet = hook([call("never", "activeGeneration")], then="x")
    lines = responses(
        NEW,
        call(1, "begin", quiet),
        call(2, "begin", [{"id": quiet, "name": "n"}]),
        call(3, "toOpenAIResponses", quiet),
        call(4, "activeGeneration"),
    )
    assert lines[1:] == [
        '{"id":1,"error":{"kind":"TypeError","message":"calls must be an array"}}',
        '{"id":2,"error":{"kind":"TypeError","message":"calls[0].id must be a non-empty string"}}',
        '{"id":3,"error":{"kind":"TypeError","message":"snapshot must be a ToolCallClosure snapshot"}}',
        '{"id":4,"ok":null}',
    ]


def test_CONV_2_hook_as_fail_error_is_converted_with_String() -> None:
    error = hook([call("g", "activeGeneration")], then={"$error": "e"})
    lines = responses(NEW, BEGIN_AB, call(2, "fail", H1, "a", error))
    assert lines[2:] == [
        '{"id":"g","nested":1,"ok":1}',
        '{"id":2,"ok":{"accepted":true,"generation":1,"callId":"a","settlement":'
        '{"status":"error","code":"tool_error","message":"Error: e","provenance":"reported"}}}',
    ]


def test_hook_then_is_decoded_after_its_calls_and_may_refer_to_them() -> None:
    content = hook([call("g", "activeGeneration")], then={"gen": {"$snapshot": "g"}})
    lines = responses(NEW, BEGIN_AB, call(2, "succeed", H1, "a", content))
    assert lines[2:] == [
        '{"id":"g","nested":1,"ok":1}',
        '{"id":2,"ok":{"accepted":true,"generation":1,"callId":"a","settlement":'
        '{"status":"success","content":"{\\"gen\\":1}","provenance":"reported"}}}',
    ]


def test_hook_inside_a_nested_request_answers_at_depth_2() -> None:
    inner = hook([call("n2", "activeGeneration")], then="inner")
    outer = hook([call("n1", "succeed", H1, "b", inner)], then="outer")
    lines = responses(NEW, BEGIN_AB, call(2, "succeed", H1, "a", outer))
    # NORM-8: a non-string content is JSON-encoded, so the hooks' string `then`s are quoted
    assert lines[2:] == [
        '{"id":"n2","nested":2,"ok":1}',
        '{"id":"n1","nested":1,"ok":{"accepted":true,"generation":1,"callId":"b","settlement":'
        '{"status":"success","content":"\\"inner\\"","provenance":"reported"}}}',
        '{"id":2,"ok":{"accepted":true,"generation":1,"callId":"a","settlement":'
        '{"status":"success","content":"\\"outer\\"","provenance":"reported"}}}',
    ]


def test_NORM_2_hook_outcome_triggers_once_and_later_reads_behave_as_then() -> None:
    # outcome.status is read twice (SET-3 and NORM-2), then content: the calls run on the first read only
    outcome = hook([call("g", "activeGeneration")], then={"status": "success", "content": [1]})
    lines = responses(NEW, BEGIN_AB, call(2, "settle", H1, "a", outcome))
    assert lines[2:] == [
        '{"id":"g","nested":1,"ok":1}',
        '{"id":2,"ok":{"accepted":true,"generation":1,"callId":"a","settlement":'
        '{"status":"success","content":"[1]","provenance":"reported"}}}',
    ]


def test_hook_nested_requests_must_be_calls() -> None:
    content = hook([{"id": "h", "cmd": "hello", "protocol": 1}, 5, {"id": "b", "cmd": "bye"}], then=1)
    run = serve(NEW, BEGIN_AB, call(2, "succeed", H1, "a", content), AFTER)
    assert run.returncode == 0
    lines = run.lines
    assert len(lines) == 7
    assert_protocol_error(lines[2], "h", nested=1)
    assert_protocol_error(lines[3], None, nested=1)
    assert_protocol_error(lines[4], "b", nested=1)  # a nested bye does not end the session
    assert lines[5:] == [
        '{"id":2,"ok":{"accepted":true,"generation":1,"callId":"a","settlement":'
        '{"status":"success","content":"1","provenance":"reported"}}}',
        '{"id":"after","ok":1}',
    ]


# --------------------------------------------------------------------------- protocol errors

PROTOCOL_ERRORS = {
    "malformed JSON": ('{"id":1,"cmd":', None),
    "not an object": ("[1,2]", None),
    "id missing": ('{"cmd":"new"}', None),
    "id not a number or string": ('{"id":true,"cmd":"new"}', None),
    "unknown cmd": ('{"id":5,"cmd":"reset"}', 5),
    "cmd missing": ('{"id":5}', 5),
    "unknown method": (encode(call(5, "constructor")), 5),
    "private method name": (encode(call(5, "#settle")), 5),
    "args not an array": ('{"id":5,"cmd":"call","method":"snapshot","args":{}}', 5),
    "$undefined nested inside an object": (encode(call(5, "succeed", H1, "a", {"x": {"$undefined": True}})), 5),
    "$undefined nested inside an array": (encode(call(5, "begin", [{"$undefined": True}])), 5),
    "$error nested inside an object": (encode(call(5, "succeed", H1, "a", {"x": {"$error": "e"}})), 5),
    "unknown tag": (encode(call(5, "succeed", H1, "a", {"$date": 0})), 5),
    "$handle of a generation that does not exist": (encode(call(5, "seal", {"$handle": 2})), 5),
    "$handle that is not a number": (encode(call(5, "seal", {"$handle": "1"})), 5),
    "$nan malformed": (encode(call(5, "succeed", H1, "a", {"$nan": 1})), 5),
    "$inf malformed": (encode(call(5, "succeed", H1, "a", {"$inf": 2})), 5),
    "$error not a string": (encode(call(5, "fail", H1, "a", {"$error": 1})), 5),
    "$hook not an object": (encode(call(5, "succeed", H1, "a", {"$hook": []})), 5),
    "$hook with an unknown member": (encode(call(5, "succeed", H1, "a", {"$hook": {"cals": []}})), 5),
    "$hook calls not an array": (encode(call(5, "succeed", H1, "a", {"$hook": {"calls": {}}})), 5),
    "$snapshot of a later id": (encode(call(5, "toOpenAIResponses", {"$snapshot": 99})), 5),
    "$undefined as options": ('{"id":5,"cmd":"new","options":{"$undefined":true}}', 5),
}


@pytest.mark.parametrize(
    ("request_line", "request_id"), [pytest.param(*case, id=name) for name, case in PROTOCOL_ERRORS.items()]
)
def test_protocol_errors_are_answered_and_serving_continues(request_line: str, request_id: Any) -> None:
    new_again = request_line.startswith('{"id":5,"cmd":"new"')  # a failed new leaves no instance: make one again
    begin = call(1, "begin", [{"id": "a", "name": "n"}])
    lines = responses(NEW, begin, request_line, *([NEW] if new_again else []), AFTER)
    assert lines[:2] == [NEW_OK, BEGIN_1]
    assert_protocol_error(lines[2], request_id)
    assert lines[3:] == ([NEW_OK, '{"id":"after","ok":null}'] if new_again else ['{"id":"after","ok":1}'])


def test_call_before_new_is_a_protocol_error() -> None:
    lines = responses(call(1, "snapshot"), NEW, call(2, "snapshot"))
    assert len(lines) == 3
    assert_protocol_error(lines[0], 1)
    assert lines[1:] == [NEW_OK, '{"id":2,"ok":null}']


def test_hook_then_with_a_bad_tag_fails_the_request_that_triggered_it() -> None:
    content = hook([call("g", "activeGeneration")], then={"$bogus": 1})
    lines = responses(NEW, BEGIN_AB, call(2, "succeed", H1, "a", content), call(3, "succeed", H1, "a", "late"))
    assert lines[2] == '{"id":"g","nested":1,"ok":1}'
    assert_protocol_error(lines[3], 2)
    assert lines[4].startswith('{"id":3,"ok":{"accepted":true,')  # SET-8: the failed normalization changed nothing


def test_invalid_utf8_is_a_protocol_error() -> None:
    lines = responses(b'{"id":"\xff"}\n', NEW)
    assert len(lines) == 2
    assert_protocol_error(lines[0], None)
    assert lines[1] == NEW_OK


# --------------------------------------------------------------------------- transport and strings


def test_JS_15_U2028_round_trips_and_lines_split_on_newline_only() -> None:
    raw_id = "a\u2028b\u2029c"
    begin = encode(call(1, "begin", [{"id": raw_id, "name": "n"}]))
    assert "\u2028" in begin  # sent raw, inside a JSON string
    lines = responses(NEW, begin, call(2, "succeed", H1, raw_id, "x\u2028y"), call(3, "snapshot"))
    assert lines[2] == (
        '{"id":2,"ok":{"accepted":true,"generation":1,"callId":"a\u2028b\u2029c","settlement":'
        '{"status":"success","content":"x\u2028y","provenance":"reported"}}}'
    )
    assert len(lines) == 4


def test_ADP_5_BEG_4_lone_surrogates_are_escaped_in_responses() -> None:
    requests = [
        json.dumps(call(1, "begin", [{"id": "\ud800", "name": "n"}])),  # ensure_ascii: sent as \ud800
        json.dumps(call(2, "fail", H1, "\ud800", "x\udfff")),
        call(3, "seal", H1),
        call(4, "toAnthropicToolResults", {"$snapshot": 3}),
    ]
    run = serve(NEW, *requests)  # serve() decodes stdout strictly: a raw lone surrogate would fail there
    assert run.returncode == 0
    assert run.lines[2] == (
        '{"id":2,"ok":{"accepted":true,"generation":1,"callId":"\\ud800","settlement":'
        '{"status":"error","code":"tool_error","message":"x\\udfff","provenance":"reported"}}}'
    )
    assert run.lines[4] == (
        '{"id":4,"ok":[{"type":"tool_result","tool_use_id":"\\ud800",'
        '"content":"{\\"error\\":{\\"code\\":\\"tool_error\\",\\"message\\":\\"x\\\\udfff\\"}}","is_error":true}]}'
    )


def test_CallerError_message_with_a_lone_surrogate_is_escaped() -> None:
    lines = responses(NEW, BEGIN_AB, json.dumps(call(2, "succeed", H1, "a", hook(throw="t\ud800\u00e9"))))
    assert lines[2] == '{"id":2,"error":{"kind":"CallerError","message":"t\\ud800\u00e9"}}'


def test_crlf_blank_lines_ids_and_an_unterminated_last_line() -> None:
    lines = responses(
        b'{"id":1.0,"cmd":"new"}\r\n',  # \r is JSON whitespace; 1.0 is the number 1
        b"\n",
        b"   \r\n",
        b'{"id":"s","cmd":"call","method":"activeGeneration"}',  # no newline before end of input
    )
    assert lines == ['{"id":1,"ok":null}', '{"id":"s","ok":null}']


def test_each_response_is_flushed_before_the_next_request_is_read() -> None:
    # A runner may wait for each answer before sending the next request.
    with subprocess.Popen(
        [NODE, str(ADAPTER), str(ORIGINAL)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as process:
        assert process.stdin is not None
        assert process.stdout is not None
        watchdog = threading.Timer(30, process.kill)  # an unflushed answer fails the test instead of hanging it
        watchdog.start()
        try:
            for request, expected in [
                (NEW, NEW_OK),
                (call(1, "begin", []), BEGIN_1),
                (call(2, "seal", H1), '{"id":2,"ok":'),
                ({"id": 3, "cmd": "bye"}, '{"id":3,"ok":null}'),
            ]:
                process.stdin.write(encode(request).encode() + b"\n")
                process.stdin.flush()
                assert process.stdout.readline().decode().startswith(expected)
            assert process.wait(timeout=30) == 0
        finally:
            watchdog.cancel()
            if process.poll() is None:
                process.kill()


def test_a_request_longer_than_the_read_chunk() -> None:
    text = "é" * 100_000 + "\u2028" + "x" * 70_000  # 370 001 bytes: several 64 KiB reads
    lines = responses(NEW, BEGIN_AB, call(2, "succeed", H1, "a", text))
    assert lines[2] == (
        '{"id":2,"ok":{"accepted":true,"generation":1,"callId":"a","settlement":'
        '{"status":"success","content":"' + text + '","provenance":"reported"}}}'
    )


# --------------------------------------------------------------------------- limits and tamper (issue 12)


def test_request_lines_nest_at_most_128_levels() -> None:
    """spec/protocol.md, Limits: the adapter refuses deeper lines with a ProtocolError and keeps serving."""
    deep = "[" * 126 + '"x"' + "]" * 126
    deeper = "[" * 127 + '"x"' + "]" * 127
    succeed = '{"id":%d,"cmd":"call","method":"succeed","args":[{"$handle":1},"%s",CONTENT]}'
    lines = responses(
        NEW,
        BEGIN_AB,
        (succeed % (2, "a")).replace("CONTENT", deep),
        (succeed % (3, "b")).replace("CONTENT", deeper),
        (succeed % (4, "b")).replace("CONTENT", "[" * 50_000 + "]" * 50_000),
        AFTER,
    )
    assert json.loads(lines[2])["ok"]["accepted"] is True
    assert json.loads(lines[3]) == {
        "id": 3,
        "error": {"kind": "ProtocolError", "message": "the request nests deeper than 128 levels"},
    }
    assert_protocol_error(lines[4], 4)
    assert lines[5] == '{"id":"after","ok":1}'


def test_tamper_cannot_change_the_originals_frozen_values() -> None:
    """The original freezes snapshots, settlements and rejections (SNAP-3, IMM-1); its exports are plain data."""
    lines = responses(
        NEW,
        BEGIN_AB,
        call(2, "succeed", H1, "a", "ok"),
        call(3, "close", H1),
        {"id": 4, "cmd": "tamper", "target": 3},
        {"id": 5, "cmd": "tamper", "target": 2},
        call(6, "toAnthropicToolResults", {"$snapshot": 3}),
        {"id": 7, "cmd": "tamper", "target": 6},
        call(8, "succeed", H1, "a", {"$snapshot": 6}),
        {"id": 9, "cmd": "tamper", "target": "nothing"},
    )
    assert lines[4:6] == ['{"id":4,"ok":null}', '{"id":5,"ok":null}']
    assert json.loads(lines[6])["ok"][0] == {"type": "tool_result", "tool_use_id": "a", "content": "ok"}
    assert lines[7] == '{"id":7,"ok":null}'
    assert_protocol_error(lines[9], 9)
