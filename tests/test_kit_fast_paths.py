"""The conformance kit's fast paths give exactly what the general paths give.

``serve`` writes trees of value objects with json's C encoder, the runner
compares response text before it parses anything, ``serve`` bounds a line's
nesting by its bracket count, and a subprocess subject's output is read in
the sending thread.  Each is checked here against the path it short-cuts,
over generated values and over every vector.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tool_call_closure.closure import to_json
from tool_call_closure.conformance import serve, wire
from tool_call_closure.conformance.compare import diff_responses, same_text, same_value
from tool_call_closure.conformance.serve import (
    MAX_DEPTH,
    may_nest_deeper,
    nesting_depth,
    parse_request_line,
)
from tool_call_closure.conformance.subject import (
    InProcessSubject,
    ProcessSubject,
    _PolledLines,
    _ThreadedLines,
    encode_request,
    parse_response_line,
)
from tool_call_closure.conformance.vectors import load_vectors
from tool_call_closure.values import (
    Accepted,
    BatchHandle,
    BeginResult,
    CallSnapshot,
    CloseReason,
    Diagnostic,
    Rejection,
    Settlement,
    Snapshot,
)

# --------------------------------------------------------------------------- strategies

SPECIAL = ["\ud800", "\udc00", "\ud83d\ude00", "\x00", "\x1f", "\x7f", "\u2028", "\ufeff", '"', "\\", "é", "😀", "0"]
texts = st.lists(st.one_of(st.characters(exclude_categories=()), st.sampled_from(SPECIAL)), max_size=6).map("".join)
ascii_texts = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=6)


class Text(str):
    """A str subclass: JSON.stringify writes its plain value, the fast path must not be the one to decide."""


# What a field of a value object may hold: the types the library stores, and types it never does.
fields = st.one_of(
    texts,
    st.integers(-(2**53), 2**53),
    st.integers(-(2**70), 2**70),
    st.sampled_from([2**53 - 1, -(2**53) + 1, 2**53, -(2**53)]),
    st.floats(allow_nan=False),
    st.sampled_from([1e21, 1e-7, -0.0, 1.0, 0.5]),
    st.none(),
    st.booleans(),
    texts.map(Text),
)
plain_fields = st.one_of(ascii_texts, st.integers(-(2**52), 2**52), st.none(), st.booleans())


def value_trees(leaf: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    settlements = st.builds(Settlement, leaf, leaf, leaf, leaf, leaf, leaf)
    reasons = st.builds(CloseReason, leaf, leaf, leaf, leaf)
    calls = st.builds(CallSnapshot, leaf, leaf, leaf, st.one_of(st.none(), settlements))
    diagnostics = st.builds(Diagnostic, leaf, leaf, leaf, leaf)
    snapshots = st.builds(
        Snapshot,
        leaf,
        leaf,
        st.one_of(st.none(), reasons),
        st.lists(calls, max_size=3).map(tuple),
        st.lists(diagnostics, max_size=2).map(tuple),
    )
    return st.one_of(
        st.builds(BatchHandle, leaf),
        settlements,
        st.builds(Rejection, leaf, leaf, leaf, leaf),
        st.builds(Accepted, leaf, leaf, settlements),
        snapshots,
        st.builds(BeginResult, leaf, st.builds(BatchHandle, leaf), st.one_of(st.none(), snapshots)),
    )


class Counting:
    """to_json, counting its calls: the fast path is the one taken when the general writer is not called."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, value: object) -> str:
        self.calls += 1
        return to_json(value)


# --------------------------------------------------------------------------- serve: the text of a returned value


@given(value_trees(fields))
def test_value_objects_are_written_exactly_as_to_json_writes_them(value: Any) -> None:
    assert serve._ResponseText()(value) == to_json(value)


def _written(value: Any) -> tuple[str, int]:
    """serve's text of ``value``, and how many times it asked the general writer (``to_json``)."""
    general = Counting()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(serve, "to_json", general)
        text = serve._ResponseText()(value)
    return text, general.calls


@given(value_trees(plain_fields))
def test_plain_value_trees_take_the_c_encoder(value: Any) -> None:
    text, general = _written(value)
    assert general == 0
    assert text == to_json(value)


@pytest.mark.parametrize(
    "value",
    [
        Rejection("unknown_call", "\ud800", None, None),  # a lone surrogate: JSON.stringify escapes it
        Rejection("unknown_call", "\ud83d\ude00", None, None),  # a pair in two code points: one character
        BatchHandle(2**53),  # past the safe integers
        BatchHandle(1e-7),  # type: ignore[arg-type]  # a float: JavaScript writes 1e-7, repr 1e-07
        BatchHandle(Text("x")),  # type: ignore[arg-type]
        Snapshot(1, False, None, ((1,),), ()),  # type: ignore[arg-type]  # a list inside a list
        [BatchHandle(1)],  # not a value object at the top
        None,
    ],
)
def test_values_outside_the_fast_path_are_written_the_general_way(value: Any) -> None:
    text, general = _written(value)
    assert general == 1
    assert text == to_json(value)


class Keyed:
    """A value type whose form has an array-index key, which JavaScript writes first."""

    def __json__(self) -> dict[str, Any]:
        return {"b": 1, "1": 2}


class Nested:
    """A value type whose form holds a plain object (whose members the fast path would not see)."""

    def __json__(self) -> dict[str, Any]:
        return {"a": {"2": 1.0, "b": 1e-7}}


def test_a_form_with_an_index_key_or_a_nested_object_is_written_the_general_way(monkeypatch: Any) -> None:
    monkeypatch.setattr(serve, "_VALUE_TYPES", frozenset({*serve._VALUE_TYPES, Keyed, Nested}))
    assert serve._ResponseText()(Keyed()) == to_json(Keyed()) == '{"1":2,"b":1}'
    assert serve._ResponseText()(Nested()) == to_json(Nested()) == '{"a":{"2":1,"b":1e-7}}'


class Circular:
    def __json__(self) -> dict[str, Any]:
        return {"again": [self]}


def test_a_cycle_is_left_to_the_general_writer_and_the_next_value_is_unaffected(monkeypatch: Any) -> None:
    monkeypatch.setattr(serve, "_VALUE_TYPES", frozenset({*serve._VALUE_TYPES, Circular}))
    writer = serve._ResponseText()
    with pytest.raises(Exception, match="circular"):
        writer(Circular())
    assert writer(BatchHandle(3)) == '{"generation":3}'


def _transcripts(monkeypatch: Any, *, general: bool) -> list[list[str]]:
    if general:
        # the general way: to_json, an export's bytes (content parts, D22) as base64 as the fast writer writes them
        monkeypatch.setattr(serve._ResponseText, "__call__", lambda self, value: serve.response_json(value, to_json))
    out = []
    for vector in load_vectors():
        subject = InProcessSubject()
        out += [subject.send_lines(step["request"]) for step in vector.steps]
    monkeypatch.undo()
    return out


def test_every_vector_gets_the_same_bytes_from_both_writers(monkeypatch: Any) -> None:
    fast = _transcripts(monkeypatch, general=False)
    assert fast == _transcripts(monkeypatch, general=True)
    assert sum(len(lines) for lines in fast) > 1500


# --------------------------------------------------------------------------- serve: decoding and the depth bound

json_texts = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), texts),
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(texts, children, max_size=4)),
    max_leaves=30,
).map(lambda value: json.dumps(value, ensure_ascii=False))


@given(json_texts, st.integers(0, 12))
def test_a_line_with_few_brackets_is_never_too_deep(line: str, limit: int) -> None:
    value = json.loads(line)
    assert nesting_depth(value) <= line.count("[") + line.count("{")
    if not may_nest_deeper(line, limit):
        assert nesting_depth(value) <= limit


def test_brackets_inside_strings_do_not_refuse_a_shallow_request() -> None:
    subject = InProcessSubject()
    subject.send({"id": 0, "cmd": "new"})
    text = "[{" * MAX_DEPTH
    (begin,) = subject.send({"id": 1, "cmd": "call", "method": "begin", "args": [[{"id": text, "name": "t"}]]})
    assert begin["ok"]["generation"] == 1


@given(json_texts)
def test_one_shared_decoder_decodes_as_json_loads_with_the_number_rule(line: str) -> None:
    expected = json.loads(
        line, parse_int=wire._parse_int, parse_float=wire._parse_float, parse_constant=wire._reject_constant
    )
    assert same_value(parse_request_line(line), expected)


def test_a_byte_order_mark_is_refused_with_json_loads_own_message() -> None:
    with pytest.raises(json.JSONDecodeError) as ours:
        parse_request_line('\ufeff{"id":1}')
    with pytest.raises(json.JSONDecodeError) as theirs:
        json.loads('\ufeff{"id":1}')
    assert str(ours.value) == str(theirs.value)
    (line,) = InProcessSubject().send_lines('\ufeff{"id":1,"cmd":"new"}')
    assert "Unexpected UTF-8 BOM" in line


# --------------------------------------------------------------------------- the runner: text before parsing

members = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([1.0, 0.5, -0.0, 1e-7]), texts),
    lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(texts, children, max_size=3)),
    max_leaves=10,
)
errors = st.one_of(
    members,
    st.fixed_dictionaries(
        {"kind": st.sampled_from(["TypeError", "ProtocolError", "CallerError"])},
        optional={"message": st.one_of(texts, st.sampled_from(["Converting circular structure to JSON"]), members)},
    ),
)
responses = st.fixed_dictionaries(
    {}, optional={"id": members, "nested": members, "ok": members, "error": errors, "x": members}
)


def _spellings(value: Any) -> list[str]:
    """Texts of ``value`` and of values near it (equal numbers spelled otherwise, escapes, key order)."""
    texts = [
        json.dumps(value, ensure_ascii=False, separators=(",", ":")),
        json.dumps(value, ensure_ascii=True, separators=(",", ":")),
        json.dumps(value, ensure_ascii=False),
        json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True),
    ]
    return [*texts, texts[0].replace("1.0", "1").replace("true", "1").replace(":0", ":0.0")]


@given(responses, responses)
def test_equal_text_implies_agreement(expected: dict[str, Any], other: dict[str, Any]) -> None:
    for line in [*_spellings(expected), *_spellings(other)]:
        try:
            actual = parse_response_line(line)
        except Exception:  # noqa: BLE001 - a spelling that is no response at all
            continue
        if same_text([expected], [line]):
            assert diff_responses([expected], [actual]) is None
            assert same_value(expected, actual)


@given(responses)
def test_the_compact_spelling_takes_the_text_path(expected: dict[str, Any]) -> None:
    line = json.dumps(expected, ensure_ascii=False, separators=(",", ":"))
    # An expected error that is not an object with a kind is left to the parsed comparison (it reports it).
    well_formed = "error" not in expected or (isinstance(expected["error"], dict) and "kind" in expected["error"])
    assert same_text([expected], [line]) is well_formed
    if well_formed:
        assert diff_responses([expected], [parse_response_line(line)]) is None
    assert not same_text([expected], [line, line])
    assert not same_text([expected, expected], [line])


def test_text_that_differs_says_nothing_and_the_parsed_comparison_decides() -> None:
    expected = [{"id": 1, "ok": {"a": 1, "b": True}}]
    assert not same_text(expected, ['{"id":1,"ok":{"a":1.0,"b":true}}'])  # spelled otherwise, but it agrees
    assert diff_responses(expected, [parse_response_line('{"id":1,"ok":{"a":1.0,"b":true}}')]) is None
    assert not same_text(expected, ['{"id":1,"ok":{"b":true,"a":1}}'])  # key order: a difference
    assert diff_responses(expected, [parse_response_line('{"id":1,"ok":{"b":true,"a":1}}')]) is not None
    assert not same_text([{"id": 1, "ok": float("nan")}], ['{"id":1,"ok":NaN}'])  # NaN is not JSON


def test_a_vector_failing_on_text_is_reported_as_before() -> None:
    """The runner's diagnostics do not depend on the text path: a differing line is parsed and located."""
    from tool_call_closure.conformance.conform import SubjectSpec, run_conformance

    class Lying(InProcessSubject):
        def send_lines(self, request: dict[str, Any] | str, meanwhile: Callable[[], None] | None = None) -> list[str]:
            lines = super().send_lines(request, meanwhile)
            return [line.replace('"accepted":true', '"accepted":false') for line in lines]

    class Spec(SubjectSpec):
        def start(self) -> InProcessSubject:
            return Lying()

    vector = next(v for v in load_vectors() if v.id == "model-settle-commit-record")
    (result,) = run_conformance([vector], Spec()).results
    assert result.outcome == "failed"
    assert result.path is not None
    assert result.path.endswith(".accepted")
    assert (result.expected_value, result.actual_value) == (True, False)


def test_work_ahead_happens_while_the_subject_answers_and_a_failing_encoding_fails_at_its_own_step() -> None:
    from tool_call_closure.conformance.conform import SubjectSpec, run_conformance
    from tool_call_closure.conformance.vectors import Vector

    events: list[str] = []

    class Recording(InProcessSubject):
        def send_lines(self, request: dict[str, Any] | str, meanwhile: Callable[[], None] | None = None) -> list[str]:
            if meanwhile is None:  # the handshake
                return super().send_lines(request)
            events.append(f"send {request}")

            def recorded() -> None:
                events.append("meanwhile")
                meanwhile()

            lines = super().send_lines(request, recorded)
            events.append("answered")
            return lines

    class Spec(SubjectSpec):
        def start(self) -> InProcessSubject:
            return Recording()

    vector = next(v for v in load_vectors() if v.id == "model-settle-commit-record")
    (result,) = run_conformance([vector], Spec()).results
    assert result.outcome == "passed"
    lines = [encode_request(step["request"]) for step in vector.steps]
    assert events == [event for line in lines for event in (f"send {line}", "meanwhile", "answered")]
    unencodable = Vector(
        vector.path,
        {**vector.data, "steps": [vector.steps[0], {"request": {"id": 1, "x": object()}, "responses": [{}]}]},
    )
    events.clear()
    with pytest.raises(Exception, match="JSON-serializable"):
        run_conformance([unencodable], Spec())
    assert events == [f"send {lines[0]}", "meanwhile", "answered"]  # step 2 failed before it was sent


# --------------------------------------------------------------------------- a subprocess subject's output


@pytest.mark.parametrize("reader", [_PolledLines, _ThreadedLines])
def test_both_line_readers_split_on_newline_only_and_keep_an_unterminated_last_line(reader: Any) -> None:
    read_end, write_end = os.pipe()
    with os.fdopen(read_end, "rb") as stream:
        lines = reader(stream)
        with pytest.raises(TimeoutError):
            lines.read_line(0.05)
        os.write(write_end, b'{"a":1}\n{"b":"\xe2\x80\xa8"}\r\n{"c"')
        assert lines.read_line(5) == b'{"a":1}'
        assert lines.read_line(5) == b'{"b":"\xe2\x80\xa8"}\r'

        def finish() -> None:  # the rest of the last line arrives later, then the output ends
            os.write(write_end, b":3}")
            os.close(write_end)

        threading.Timer(0.05, finish).start()
        assert lines.read_line(5) == b'{"c":3}'
        assert lines.read_line(5) is None
        assert lines.read_line(5) is None
        lines.close()


@pytest.mark.parametrize("reader", [_PolledLines, _ThreadedLines])
def test_both_line_readers_read_a_line_longer_than_the_pipe_holds(reader: Any) -> None:
    long_line = b'{"ok":"' + b"x" * 300_000 + b'"}'
    read_end, write_end = os.pipe()

    def write() -> None:
        with os.fdopen(write_end, "wb") as out:
            out.write(long_line + b"\n" + long_line)

    with os.fdopen(read_end, "rb") as stream:
        lines = reader(stream)
        writer = threading.Thread(target=write)
        writer.start()
        assert lines.read_line(30) == long_line
        assert lines.read_line(30) == long_line
        assert lines.read_line(30) is None
        writer.join()
        lines.close()


SCRIPT = r"""
import sys, time
out = sys.stdout.buffer
for line in sys.stdin.buffer:
    if b'"bye"' in line:
        break
    out.write(b'{"id":1,"nested":1,"ok":null}\n{"id":2,')
    out.flush()
    time.sleep(0.01)
    out.write(b'"ok":"\xe2\x80\xa8"}\n')  # U+2028 raw: not a line end
    out.flush()
out.write(b'{"id":"bye","ok":null}')  # the last line without its newline
"""


def test_a_process_subject_reads_lines_written_in_any_chunks(tmp_path: Path) -> None:
    script = tmp_path / "chunks.py"
    script.write_text(SCRIPT)
    with ProcessSubject([sys.executable, str(script)], timeout=10) as subject:
        started = time.monotonic()
        assert subject.send_lines({"id": 2, "cmd": "x"}) == ['{"id":1,"nested":1,"ok":null}', '{"id":2,"ok":"\u2028"}']
        assert subject.send({"id": 2, "cmd": "x"}) == [{"id": 1, "nested": 1, "ok": None}, {"id": 2, "ok": "\u2028"}]
        assert subject.send({"id": "bye", "cmd": "bye"}) == [{"id": "bye", "ok": None}]  # no final newline
        assert time.monotonic() - started < 10


ECHO = r"""
import pathlib, sys
for line in sys.stdin.buffer:
    if b'"bye"' in line:
        break
    pathlib.Path(sys.argv[1]).write_bytes(line)  # the request has arrived
    sys.stdout.buffer.write(b'{"id":1,"ok":null}\n')
    sys.stdout.buffer.flush()
"""


def test_a_process_subject_runs_meanwhile_once_the_request_has_reached_the_subject(tmp_path: Path) -> None:
    script, marker = tmp_path / "echo.py", tmp_path / "arrived"
    script.write_text(ECHO)
    seen: list[bytes] = []

    def meanwhile() -> None:
        for _ in range(1000):  # the subject writes the marker as soon as it has read the line
            if marker.exists() and marker.read_bytes():
                seen.append(marker.read_bytes())
                return
            time.sleep(0.01)

    with ProcessSubject([sys.executable, str(script), str(marker)], timeout=30) as subject:
        assert subject.send_lines({"id": 1, "cmd": "x"}, meanwhile) == ['{"id":1,"ok":null}']
    assert seen == [b'{"id":1,"cmd":"x"}\n']
