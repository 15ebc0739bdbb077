"""Deviation D26: with ``text_only_tool_results``, a media success records a ``media_moved`` diagnostic.

OpenAI Chat's tool message is text only: its export writes a note per media
part and ``next_messages(…, media_from=snapshot)`` carries the media in a user
message (D22).  With the option, the snapshot records it: one diagnostic per
accepted success whose content parts hold media (``parts.is_media``, the
predicate the Chat fallback uses), counted against ``max_diagnostics`` and
reset by ``begin`` like a rejection's (DIAG-1, DIAG-2).  Without the option
nothing changes (DIAG-5).  ``test_deviations.py`` has the protocol test.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tool_call_closure import (
    FileInput,
    ImageInput,
    JsonInput,
    Snapshot,
    ToolCallClosure,
    ToolContent,
    UsageError,
    content,
    to_json,
)
from tool_call_closure.durable.image import closure_of, image_of
from tool_call_closure.errors import ToolCallClosureError
from tool_call_closure.parts import is_media
from tool_call_closure.providers.parts_render import chat_media_message, content_fallbacks

PNG = b"\x89PNG\r\n\x1a\n0000"
IMAGE = content(["chart:", ImageInput(media_type="image/png", data=PNG)])
PDF_BY_URL = content([FileInput(name="r.pdf", media_type="application/pdf", url="https://example.com/r.pdf")])
TEXT_FILE = content(["notes:", FileInput(name="n.txt", media_type="text/plain", data=b"plain"), JsonInput({"a": 1})])
TEXT_BY_URL = content([FileInput(name="n.txt", media_type="text/plain", url="https://example.com/n.txt")])


def _moved(call_id: str, generation: int = 1) -> str:
    return json.dumps(
        {"reason": "media_moved", "callId": call_id, "generation": generation, "observedStatus": "success"},
        separators=(",", ":"),
    )


def _diagnostics(closure: ToolCallClosure) -> list[str]:
    snapshot = closure.snapshot()
    assert isinstance(snapshot, Snapshot)
    return [to_json(d) for d in snapshot.diagnostics]


def _begun(ids: str = "abcd", **options: Any) -> tuple[ToolCallClosure, Any]:
    closure = ToolCallClosure(text_only_tool_results=True, **options)
    return closure, closure.begin([{"id": i, "name": "t"} for i in ids]).handle


def test_D26_each_media_success_records_one_media_moved_in_order_with_rejections() -> None:
    closure, handle = _begun()
    assert closure.succeed(handle, "a", IMAGE).accepted
    assert not closure.succeed(handle, "zz", "x").accepted
    assert closure.settle(handle, "b", {"status": "success", "content": PDF_BY_URL}).accepted
    assert closure.succeed(handle, "c", TEXT_FILE).accepted  # text, JSON, an inline text file: nothing moves
    assert closure.succeed(handle, "d", TEXT_BY_URL).accepted  # a text file by URL is not inline: it moves
    unknown = '{"reason":"unknown_call","callId":"zz","generation":1,"observedStatus":null}'
    assert _diagnostics(closure) == [_moved("a"), unknown, _moved("b"), _moved("d")]


def test_D26_errors_cancellations_rejections_and_the_default_record_no_media_moved() -> None:
    closure, handle = _begun()
    closure.fail(handle, "a", "boom")
    closure.cancel(handle, "b")
    closure.settle(handle, "c", {"status": "error", "message": "m"})
    closure.succeed(handle, "d", "text")
    assert _diagnostics(closure) == []
    rejected = closure.succeed(handle, "a", IMAGE)  # a duplicate: the rejection's diagnostic only
    assert not rejected.accepted
    assert _diagnostics(closure) == [
        '{"reason":"duplicate_settlement","callId":"a","generation":1,"observedStatus":null}'
    ]
    for default in ({}, {"text_only_tool_results": None}, {"text_only_tool_results": False}):
        plain = ToolCallClosure(**default)
        assert plain.limits.text_only_tool_results is False
        plain_handle = plain.begin([{"id": "a", "name": "t"}]).handle
        assert plain.succeed(plain_handle, "a", IMAGE).accepted
        assert _diagnostics(plain) == []  # DIAG-5, as in the original


def test_D26_media_moved_counts_against_max_diagnostics_and_begin_resets_it() -> None:
    closure, handle = _begun(max_diagnostics=2)
    closure.succeed(handle, "zz", "x")
    closure.succeed(handle, "a", IMAGE)
    assert closure.succeed(handle, "b", IMAGE).accepted  # the cap is reached: dropped, still accepted (DIAG-1)
    assert len(_diagnostics(closure)) == 2
    assert _diagnostics(closure)[1] == _moved("a")
    second = closure.begin([{"id": "a", "name": "t"}])
    assert _diagnostics(closure) == []  # DIAG-2
    closure.succeed(second.handle, "a", IMAGE)
    assert _diagnostics(closure) == [_moved("a", 2)]


def test_D26_earlier_snapshots_do_not_change() -> None:
    closure, handle = _begun()
    before = closure.snapshot()
    assert isinstance(before, Snapshot)
    closure.succeed(handle, "a", IMAGE)
    after = closure.snapshot()
    assert isinstance(after, Snapshot)
    assert before.diagnostics == ()  # DIAG-4
    assert len(after.diagnostics) == 1
    assert after.calls[0].state == "success"


@pytest.mark.parametrize("value", [1, 0, "yes", "true", [], object()])
def test_D26_the_option_is_true_or_false_and_a_bad_value_names_it(value: object) -> None:
    with pytest.raises(UsageError) as info:
        ToolCallClosure(text_only_tool_results=value)  # type: ignore[arg-type]
    assert info.value.code == "option_not_flag"
    assert str(info.value) == "textOnlyToolResults must be a boolean"
    with pytest.raises(UsageError, match="maxCalls must be a positive safe integer"):  # the limits come first
        ToolCallClosure(max_calls=0, text_only_tool_results=value)  # type: ignore[arg-type]


def test_D26_the_diagnostics_name_exactly_the_calls_the_chat_fallback_moves() -> None:
    """One predicate (``parts.is_media``): the diagnostics, the Chat user message and ``content_fallbacks`` agree."""
    results: dict[str, ToolContent | str] = {"a": IMAGE, "b": PDF_BY_URL, "c": TEXT_FILE, "d": TEXT_BY_URL, "e": "x"}
    closure, handle = _begun("abcde")
    for call_id, result in results.items():
        closure.succeed(handle, call_id, result)
    snapshot = closure.close(handle)
    assert isinstance(snapshot, Snapshot)
    recorded = [d.call_id for d in snapshot.diagnostics if d.reason == "media_moved"]
    message = chat_media_message(snapshot)
    assert message is not None
    headers = [part["text"] for part in message["content"] if part["type"] == "text" and "returned by" in part["text"]]
    assert [h.split(" ")[5] for h in headers] == recorded == ["a", "b", "d"]
    assert sorted({f.call_id for f in content_fallbacks(snapshot, "openai_chat")}) == recorded
    for call_id, result in results.items():
        moved = isinstance(result, ToolContent) and any(is_media(part) for part in result.parts)
        assert moved == (isinstance(result, ToolContent) and result.has_media) == (call_id in recorded)


def test_D26_a_durable_image_carries_the_option_only_when_set() -> None:
    closure, handle = _begun("ab")
    closure.succeed(handle, "a", IMAGE)
    image = image_of(closure, "c1", 1)
    assert image["limits"]["textOnlyToolResults"] is True
    restored = closure_of(json.loads(json.dumps(image)))
    assert restored.limits.text_only_tool_results is True
    assert _diagnostics(restored) == [_moved("a")]
    plain = ToolCallClosure()
    assert "textOnlyToolResults" not in image_of(plain, "c2", 1)["limits"]  # the same image as before the option
    assert closure_of(image_of(plain, "c2", 1)).limits.text_only_tool_results is False
    edited = json.loads(json.dumps(image))
    edited["limits"]["textOnlyToolResults"] = False  # an unset flag is left out: false is not canonical
    with pytest.raises(ToolCallClosureError, match=r"limits\.textOnlyToolResults"):
        closure_of(edited)


def test_D26_a_stored_closure_keeps_the_option_and_its_diagnostics(tmp_path: Any) -> None:
    from tool_call_closure.durable import DurableClosure, SQLiteStore

    store = SQLiteStore(tmp_path / "closures.db")
    stored = DurableClosure.create(store, "d26", text_only_tool_results=True)
    begun = stored.begin([{"id": "a", "name": "t"}, {"id": "b", "name": "t"}])
    assert stored.succeed(begun.tokens["a"], IMAGE).accepted
    assert stored.succeed(begun.tokens["b"], "text").accepted
    reopened = DurableClosure(SQLiteStore(tmp_path / "closures.db"), "d26")
    reopened.restore()  # a new process: the closure comes back from its image, the flag with it
    snapshot = reopened.snapshot()
    assert snapshot is not None
    assert [to_json(d) for d in snapshot.diagnostics] == [_moved("a")]
    again = reopened.begin([{"id": "c", "name": "t"}])
    assert reopened.succeed(again.tokens["c"], IMAGE).accepted
    after = reopened.snapshot()
    assert after is not None
    assert [to_json(d) for d in after.diagnostics] == [_moved("c", 2)]


@pytest.mark.parametrize(
    ("options", "needed"),
    [
        ({"textOnlyToolResults": True}, True),
        ({"textOnlyToolResults": False}, True),  # a subject without the capability would not read it at all
        ({"textOnlyToolResults": None, "maxCalls": 3}, True),
        ({"maxCalls": 3}, False),
        (None, False),
    ],
)
def test_D26_a_new_that_names_the_flag_requires_the_capability(options: Any, needed: bool) -> None:
    from tool_call_closure.conformance.vectors import required_capabilities

    new: dict[str, Any] = {"id": 1, "cmd": "new"} if options is None else {"id": 1, "cmd": "new", "options": options}
    assert ("content-diagnostics" in required_capabilities([new])) is needed


def test_D26_a_subject_without_the_capability_ignores_the_option_as_an_unknown_key() -> None:
    import io

    from tool_call_closure.conformance.serve import Server

    image = {"$parts": [{"type": "image", "mediaType": "image/png", "url": "https://e.com/a.png"}]}
    lines = [
        {"id": 1, "cmd": "new", "options": {"textOnlyToolResults": True}},
        {"id": 2, "cmd": "call", "method": "begin", "args": [[{"id": "a", "name": "t"}]]},
        {"id": 3, "cmd": "call", "method": "succeed", "args": [{"$handle": 1}, "a", image]},
        {"id": 4, "cmd": "call", "method": "snapshot", "args": []},
    ]
    answers = {}
    for capabilities in (("content-parts",), ("content-parts", "content-diagnostics")):
        out = io.BytesIO()
        server = Server(out, capabilities=capabilities)
        for line in lines:
            server.handle_line(json.dumps(line))
        answers[capabilities] = json.loads(out.getvalue().decode().splitlines()[-1])["ok"]["diagnostics"]
    assert answers[("content-parts",)] == []  # OPT-3: an unknown key, as the original reads it
    assert answers[("content-parts", "content-diagnostics")] == [json.loads(_moved("a"))]
