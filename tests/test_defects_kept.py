"""The original's defects that the reference keeps (catalogue section 18; ``spec/catalogue.json`` "kept").

spec/README.md section 16: fixing any of these would change answers that ports and recorded traces rely on,
for little gain, so each is kept and pinned here with the original's behaviour (written by hand from the
behaviour catalogue, ``/work/shared/reference/seed-behavior.md``, and checked with ``node -e``).  The last
test replays the same scenarios over protocol v1 on the reference and on the original and requires identical
answers (skipped when ``node`` or the original is missing).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tool_call_closure import (
    Accepted,
    BatchHandle,
    LimitError,
    Snapshot,
    ToolCallClosure,
    ToolCallClosureError,
    UsageError,
    to_json,
)

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
ADAPTER = SRC / "tool_call_closure" / "conformance" / "node" / "adapter.cjs"
ORIGINAL = Path(os.environ.get("TCC_JS") or "/work/shared/seed/tool-call-closure-1.0.0/src/index.cjs")
KEPT = [d["id"] for d in json.loads((ROOT / "spec" / "catalogue.json").read_text())["defects"] if d["status"] == "kept"]


class Getters(Mapping[str, Any]):
    """A JavaScript object with getters: a member given as a zero-argument callable in ``getters`` runs on each read."""

    def __init__(self, values: dict[str, Any], getters: dict[str, Callable[[], Any]] | None = None) -> None:
        self._values = values
        self._getters = getters or {}
        self.log: list[str] = []

    def __getitem__(self, key: str) -> Any:
        self.log.append(key)
        if key in self._getters:
            return self._getters[key]()
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter({**self._values, **self._getters})

    def __len__(self) -> int:
        return len({**self._values, **self._getters})


def begun(*ids: str, **limits: int) -> tuple[ToolCallClosure, BatchHandle]:
    closure = ToolCallClosure(**limits)
    handle = closure.begin([{"id": i, "name": "t"} for i in (ids or ("a", "b"))]).handle
    return closure, handle


def raises(kind: type[ToolCallClosureError], code: str, message: str, action: Callable[[], object]) -> None:
    with pytest.raises(kind) as info:
        action()
    assert type(info.value) is kind
    assert info.value.code == code
    assert str(info.value) == message


def pending(call_id: str) -> str:
    return '{"id":"' + call_id + '","name":"t","state":"pending","settlement":null}'


def test_the_kept_defects_are_the_ones_pinned_here() -> None:
    assert KEPT == ["18.3", "18.4", "18.5", "18.6", "18.7", "18.8", "18.9", "18.10"]


# --------------------------------------------------------------------------- 18.3


@pytest.mark.parametrize(
    ("call_id", "kind", "code", "message"),
    [
        ("", UsageError, "string_empty", "callId must be a non-empty string"),
        ("  ", UsageError, "string_empty", "callId must be a non-empty string"),
        ("\ufeff", UsageError, "string_empty", "callId must be a non-empty string"),
        (5, UsageError, "string_empty", "callId must be a non-empty string"),
        (None, UsageError, "string_empty", "callId must be a non-empty string"),
        ("abcd", LimitError, "string_too_long", "callId exceeds its byte limit (3)"),
    ],
)
@pytest.mark.parametrize("handle_kind", ["stale", "forged", "none", "before-begin", "current"])
def test_defect_18_3_call_id_is_validated_before_the_stale_check(
    call_id: object, kind: type[ToolCallClosureError], code: str, message: str, handle_kind: str
) -> None:
    """A late result with a malformed or oversize callId raises instead of being fenced as stale.

    Kept: an invalid callId is a programming error whatever the handle, ports and traces rely on the raise,
    and fencing it instead would change answers for little gain (spec/README.md section 16).
    """
    c = ToolCallClosure(max_id_bytes=3)
    if handle_kind != "before-begin":
        old = c.begin([{"id": "a", "name": "t"}]).handle
        current = c.begin([{"id": "a", "name": "t"}]).handle
    handles: dict[str, Callable[[], object]] = {
        "stale": lambda: old,
        "forged": lambda: BatchHandle(2),
        "none": lambda: None,
        "before-begin": lambda: BatchHandle(1),
        "current": lambda: current,
    }
    handle = handles[handle_kind]()
    before = to_json(c.snapshot())
    for action in (
        lambda: c.settle(handle, call_id, {"status": "success", "content": 1}),
        lambda: c.succeed(handle, call_id, 1),
        lambda: c.fail(handle, call_id, "m"),
        lambda: c.cancel(handle, call_id),
    ):
        raises(kind, code, message, action)
    assert to_json(c.snapshot()) == before  # nothing recorded, not even a diagnostic


# --------------------------------------------------------------------------- 18.4


def test_defect_18_4_observed_status_differs_between_rejection_paths() -> None:
    """unknown_call and the pre-check duplicate report null; the recheck duplicate, stale and closed report a status.

    Kept: observedStatus is part of every recorded rejection; making it uniform would change answers that
    ports and recorded traces rely on (spec/README.md section 16).
    """
    c, h = begun("a", "b", "c")
    assert to_json(c.succeed(h, "zz", 1)) == (
        '{"accepted":false,"reason":"unknown_call","callId":"zz","generation":1,"observedStatus":null}'
    )
    c.succeed(h, "a", 1)
    assert to_json(c.fail(h, "a", "m")) == (
        '{"accepted":false,"reason":"duplicate_settlement","callId":"a","generation":1,"observedStatus":null}'
    )
    assert to_json(c.settle(h, "a", {"status": "bogus"})) == (  # the garbage outcome is not even validated
        '{"accepted":false,"reason":"duplicate_settlement","callId":"a","generation":1,"observedStatus":null}'
    )

    class Nested:
        def __json__(self) -> Any:
            c.succeed(h, "b", "inner")
            return 1

    assert to_json(c.succeed(h, "b", Nested())) == (
        '{"accepted":false,"reason":"duplicate_settlement","callId":"b","generation":1,"observedStatus":"success"}'
    )
    assert to_json(c.cancel(BatchHandle(1), "c")) == (
        '{"accepted":false,"reason":"stale_generation","callId":"c","generation":1,"observedStatus":"cancelled"}'
    )
    c.close(h)
    assert to_json(c.settle(h, "zz", {"status": "error"})) == (
        '{"accepted":false,"reason":"run_closed","callId":"zz","generation":1,"observedStatus":"error"}'
    )
    snapshot = c.snapshot()
    assert snapshot is not None
    assert to_json(list(snapshot.diagnostics)) == (
        '[{"reason":"unknown_call","callId":"zz","generation":1,"observedStatus":null},'
        '{"reason":"duplicate_settlement","callId":"a","generation":1,"observedStatus":null},'
        '{"reason":"duplicate_settlement","callId":"a","generation":1,"observedStatus":null},'
        '{"reason":"duplicate_settlement","callId":"b","generation":1,"observedStatus":"success"},'
        '{"reason":"stale_generation","callId":"c","generation":1,"observedStatus":"cancelled"},'
        '{"reason":"run_closed","callId":"zz","generation":1,"observedStatus":"error"}]'
    )


# --------------------------------------------------------------------------- 18.5


def test_defect_18_5_diagnostics_belong_to_whichever_generation_is_current() -> None:
    """Stale rejections land in the newer generation's list; pre-begin ones are dropped; a closed run's list grows.

    Kept: there is one diagnostics list for the current generation; per-generation lists would change every
    snapshot that ports and recorded traces compare (spec/README.md section 16).
    """
    c = ToolCallClosure()
    c.succeed(BatchHandle(1), "x", 1)  # before the first begin: recorded, then cleared by begin
    h1 = c.begin([{"id": "a", "name": "t"}, {"id": "b", "name": "t"}]).handle
    assert to_json(c.snapshot()) == (
        '{"generation":1,"closed":false,"closeReason":null,"calls":[' + pending("a") + "," + pending("b") + "],"
        '"diagnostics":[]}'
    )
    c.succeed(h1, "a", 1)
    closed = c.close(h1)
    assert isinstance(closed, Snapshot)
    c.succeed(h1, "b", 1)  # a closed run keeps collecting diagnostics ...
    later = c.close(h1)
    assert isinstance(later, Snapshot)
    assert closed.diagnostics == ()  # ... while the earlier snapshot does not change
    assert to_json(list(later.diagnostics)) == (
        '[{"reason":"run_closed","callId":"b","generation":1,"observedStatus":"success"}]'
    )
    h2 = c.begin([{"id": "c", "name": "t"}]).handle
    c.succeed(h1, "b", 1)  # the old handle's rejection lands in generation 2's list, keeping its number
    c.seal(h1)
    assert to_json(c.snapshot()) == (
        '{"generation":2,"closed":false,"closeReason":null,"calls":[' + pending("c") + '],"diagnostics":['
        '{"reason":"stale_generation","callId":"b","generation":1,"observedStatus":"success"},'
        '{"reason":"stale_generation","callId":null,"generation":1,"observedStatus":null}]}'
    )
    assert h2.generation == 2


# --------------------------------------------------------------------------- 18.6


def test_defect_18_6_close_and_seal_on_a_closed_generation_skip_reason_validation() -> None:
    """A closed generation answers close with a fresh snapshot without reading the reason; after seal, complete.

    Kept: this is the chosen idempotence of close (spec/README.md section 16); validating a reason that is
    then ignored would turn a harmless repeated close into an exception.
    """
    c, h = begun("a")
    c.succeed(h, "a", "ok")
    sealed = c.seal(h)
    reason = Getters({}, {"status": lambda: "success", "code": lambda: 5, "sideEffectState": lambda: "x"})
    again = c.close(h, reason)
    assert reason.log == []
    expected = (
        '{"generation":1,"closed":true,"closeReason":{"status":"complete"},"calls":[{"id":"a","name":"t",'
        '"state":"success","settlement":{"status":"success","content":"ok","provenance":"reported"}}],'
        '"diagnostics":[]}'
    )
    assert to_json(sealed) == expected
    assert to_json(again) == expected
    assert to_json(c.close(h, {"status": "error"})) == expected
    assert to_json(c.close(h, {"status": "success", "code": 5, "sideEffectState": "x"})) == expected
    assert again is not sealed
    c2, h2 = begun("a")
    closed = c2.close(h2, {"status": "error", "code": "first"})
    assert to_json(c2.close(h2, {"status": "cancelled", "code": "second"})) == to_json(closed)
    assert to_json(c2.seal(h2)) == to_json(closed)
    assert isinstance(closed, Snapshot)
    assert closed.close_reason is not None
    assert closed.close_reason.code == "first"


# --------------------------------------------------------------------------- 18.7


@pytest.mark.parametrize(
    ("message", "limit", "stored"),
    [
        ("a\ud800b", 5, "a\ud800b"),  # fits: the raw lone surrogate is kept
        ("a\ud800bcdefgh", 7, "a\ufffd..."),  # truncated: it becomes U+FFFD
        ("\udfff", 3, "\udfff"),
        ("\udfffxyzw", 6, "\ufffd..."),
    ],
)
def test_defect_18_7_truncation_replaces_lone_surrogates_only_when_it_truncates(
    message: str, limit: int, stored: str
) -> None:
    """A message that fits keeps its lone surrogates; a truncated one has them replaced by U+FFFD.

    Kept: it is the original's byte-level truncation (Buffer.from), and the stored text of every message is
    compared byte for byte by ports (spec/README.md section 16).
    """
    c, h = begun("a", "b", max_message_bytes=limit)
    for result in (c.fail(h, "a", message), c.settle(h, "b", {"status": "cancelled", "message": message})):
        assert isinstance(result, Accepted)
        assert result.settlement.message == stored


# --------------------------------------------------------------------------- 18.8


def test_defect_18_8_outcome_status_is_read_twice() -> None:
    """The status getter runs for the preview and again when normalizing; the two answers may differ.

    Kept: the preview gives stale and closed rejections their observedStatus before the outcome is validated;
    reading once would change those answers or the read counts callers can observe (spec/README.md section 16).
    """
    c, h = begun("a", "b", "c")
    answers = iter(["bogus", "success"])
    outcome = Getters({"content": 1}, {"status": lambda: next(answers)})
    assert to_json(c.settle(h, "a", outcome)) == (
        '{"accepted":true,"generation":1,"callId":"a","settlement":{"status":"success","content":"1",'
        '"provenance":"reported"}}'
    )
    assert outcome.log == ["status", "status", "content"]
    switched = iter(["success", "error"])
    outcome = Getters({"content": 1, "code": "E"}, {"status": lambda: next(switched)})
    assert to_json(c.settle(h, "b", outcome)) == (  # the second answer decides the settlement
        '{"accepted":true,"generation":1,"callId":"b","settlement":{"status":"error","code":"E",'
        '"message":"Tool call failed.","provenance":"reported"}}'
    )
    assert outcome.log == ["status", "status", "code", "message"]
    once = Getters({}, {"status": lambda: "success"})
    c.settle(BatchHandle(1), "c", once)  # the stale path reads it once
    assert once.log == ["status"]


# --------------------------------------------------------------------------- 18.9


def test_defect_18_9_close_can_raise_after_a_nested_close_changed_the_state() -> None:
    """A reason getter that closes the generation and then answers an invalid status makes close raise.

    Kept: consistent with invariant I4 (an operation that raises changes nothing itself; nested changes made by
    caller code are kept) and with the original (spec/README.md section 16).
    """
    c, h = begun("a")
    reason = Getters({}, {"status": lambda: c.close(h, {"status": "error", "code": "inner"}) and "success"})
    raises(UsageError, "close_status_invalid", "close status must be error or cancelled", lambda: c.close(h, reason))
    assert to_json(c.snapshot()) == (
        '{"generation":1,"closed":true,"closeReason":{"status":"error","code":"inner",'
        '"message":"Tool call did not complete.","sideEffectState":"unknown"},"calls":[{"id":"a","name":"t",'
        '"state":"error","settlement":{"status":"error","code":"inner","message":"Tool call did not complete.",'
        '"provenance":"synthetic","sideEffectState":"unknown"}}],"diagnostics":[]}'
    )


# --------------------------------------------------------------------------- 18.10


def test_defect_18_10_superseded_is_null_before_any_run_and_after_a_closed_run() -> None:
    """begin's superseded is null for the first begin and after a closed or sealed run: the cases look alike.

    Kept: begin's result shape is part of every recorded trace; a distinct marker would change it
    (spec/README.md section 16).
    """
    c = ToolCallClosure()
    first = c.begin([{"id": "a", "name": "t"}])
    assert to_json(first) == '{"generation":1,"handle":{"generation":1},"superseded":null}'
    c.close(first.handle)
    after_close = c.begin([{"id": "a", "name": "t"}])
    assert to_json(after_close) == '{"generation":2,"handle":{"generation":2},"superseded":null}'
    c.succeed(after_close.handle, "a", 1)
    c.seal(after_close.handle)
    after_seal = c.begin([])
    assert to_json(after_seal) == '{"generation":3,"handle":{"generation":3},"superseded":null}'
    open_run = c.begin([])  # only an open run is superseded
    assert to_json(open_run.superseded) == (
        '{"generation":3,"closed":true,"closeReason":{"status":"cancelled","code":"superseded",'
        '"message":"Tool call was superseded by a newer generation.","sideEffectState":"unknown"},"calls":[],'
        '"diagnostics":[]}'
    )


# --------------------------------------------------------------------------- the original agrees


def _serve(command: list[str], lines: list[str], env: dict[str, str]) -> list[str]:
    done = subprocess.run(
        command,
        input="".join(line + "\n" for line in lines).encode("utf-8"),
        capture_output=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    return done.stdout.decode("utf-8").split("\n")[:-1]


def _call(request_id: int, method: str, *args: Any) -> str:
    return json.dumps({"id": request_id, "cmd": "call", "method": method, "args": list(args)}, separators=(",", ":"))


def _comparable(line: str) -> Any:
    parsed = json.loads(line)
    if "error" in parsed:
        parsed["error"].pop("code", None)
    return parsed


def test_defects_kept_agree_with_the_original_over_the_protocol() -> None:
    h1, h2 = {"$handle": 1}, {"$handle": 2}
    lines = [
        '{"id":0,"cmd":"new","options":{"maxIdBytes":3}}',
        _call(1, "succeed", {"$forgedHandle": 1}, "x", 1),  # dropped: before the first begin (18.5)
        _call(2, "begin", [{"id": "a", "name": "t"}, {"id": "b", "name": "t"}, {"id": "c", "name": "t"}]),
        _call(3, "succeed", {"$forgedHandle": 1}, "", 1),  # 18.3
        _call(4, "fail", h1, "abcd", "m"),  # 18.3
        _call(5, "succeed", h1, "zz", 1),  # 18.4: null
        _call(6, "succeed", h1, "a", 1),
        _call(7, "cancel", h1, "a"),  # 18.4: null (pre-check)
        _call(
            8,
            "succeed",
            h1,
            "b",
            {"$hook": {"calls": [{"id": 80, "cmd": "call", "method": "succeed", "args": [h1, "b", "in"]}], "then": 2}},
        ),  # 18.4: "success" (recheck)
        _call(9, "settle", h1, "c", {"status": "error", "message": "a\ud800bcdefgh"}),  # 18.7 (fits in 4096)
        _call(10, "seal", h1),
        _call(11, "close", h1, {"status": "success", "code": 5}),  # 18.6
        _call(12, "cancel", h1, "c"),  # 18.5: recorded in the closed run
        _call(13, "snapshot"),
        _call(14, "begin", []),  # 18.10: null after a closed run
        _call(15, "succeed", h1, "a", 1),  # 18.5: lands in generation 2
        _call(16, "snapshot"),
        _call(
            17,
            "close",
            h2,
            {
                "$hook": {
                    "calls": [{"id": 170, "cmd": "call", "method": "close", "args": [h2]}],
                    "then": {"status": "x"},
                }
            },
        ),  # 18.9
        _call(18, "snapshot"),
    ]
    ours = _serve(
        [sys.executable, "-m", "tool_call_closure", "serve"],
        lines,
        {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH", "")) if p)},
    )
    assert json.loads(ours[-1])["ok"]["closed"] is True
    node = shutil.which("node")
    if node is None or not ORIGINAL.is_file():
        pytest.skip("node or the original is missing: the comparison with the original is not run")
    theirs = _serve([node, str(ADAPTER), str(ORIGINAL)], lines, {k: v for k, v in os.environ.items() if k != "TCC_JS"})
    assert [_comparable(line) for line in ours] == [_comparable(line) for line in theirs]
    assert len(ours) == len(lines) + 2  # two nested responses
