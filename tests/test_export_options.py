"""Capability export-options (deviation D22): an export's options over the protocol (spec/protocol.md).

``toBedrockToolResults(snapshot, {"media": false})`` and
``toGeminiFunctionResponses(snapshot, {"family": "gemini-2"})`` answer what the
Python API's ``media=False`` / ``family="gemini-2"`` return; a bad options
object is the library's TypeError and changes nothing; a subject without the
capability ignores the argument, as protocol v1 ignores every extra argument;
and the capability is derived from the requests, never claimed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tool_call_closure import FileInput, ImageInput, JsonInput, Snapshot, ToolCallClosure, content, to_json
from tool_call_closure.absent import ABSENT
from tool_call_closure.conformance.export_options import EXPORT_OPTIONS, export_keywords, uses_export_options
from tool_call_closure.conformance.parts_wire import response_json
from tool_call_closure.conformance.serve import CAPABILITIES
from tool_call_closure.conformance.subject import InProcessSubject
from tool_call_closure.conformance.vectors import required_capabilities
from tool_call_closure.errors import UsageError
from tool_call_closure.providers.parts_render import GEMINI_FAMILIES

PARTS = {
    "$parts": [
        {"type": "text", "text": "Chart:"},
        {"type": "image", "mediaType": "image/png", "base64": "iVBORw0KGgo="},
        {"type": "image", "mediaType": "image/jpeg", "url": "https://example.com/c.jpg"},
        {"type": "file", "name": "r.pdf", "mediaType": "application/pdf", "base64": "JVBERi0xLjQK"},
        {"type": "file", "name": "notes.txt", "mediaType": "text/plain", "base64": "cGxhaW4gbm90ZXM="},
        {"type": "json", "value": {"total": 1}},
    ]
}
EXPORTS = ("toBedrockToolResults", "toGeminiFunctionResponses")
WITHOUT = tuple(c for c in CAPABILITIES if c != "export-options")


def call(request_id: int, method: str, *args: Any) -> dict[str, Any]:
    return {"id": request_id, "cmd": "call", "method": method, "args": list(args)}


def sealed(capabilities: tuple[str, ...] = CAPABILITIES) -> InProcessSubject:
    """A subject whose request 4 sealed a generation with a result made of every kind of part (call a)."""
    subject = InProcessSubject(capabilities=capabilities)
    subject.send({"id": 1, "cmd": "new"})
    subject.send(call(2, "begin", [{"id": "a", "name": "chart"}]))
    subject.send(call(3, "succeed", {"$handle": 1}, "a", PARTS))
    subject.send(call(4, "seal", {"$handle": 1}))
    return subject


def answer(subject: InProcessSubject, method: str, *args: Any) -> Any:
    (line,) = subject.send(call(9, method, *args))
    return line.get("ok", line.get("error"))


def python_export(method: str, **options: Any) -> Any:
    closure = ToolCallClosure()
    batch = closure.begin([{"id": "a", "name": "chart"}])
    parts = content(
        [
            "Chart:",
            ImageInput(media_type="image/png", base64="iVBORw0KGgo="),
            ImageInput(media_type="image/jpeg", url="https://example.com/c.jpg"),
            FileInput(name="r.pdf", media_type="application/pdf", base64="JVBERi0xLjQK"),
            FileInput(name="notes.txt", media_type="text/plain", base64="cGxhaW4gbm90ZXM="),
            JsonInput({"total": 1}),
        ]
    )
    closure.succeed(batch.handle, "a", parts)
    snapshot = closure.seal(batch.handle)
    assert isinstance(snapshot, Snapshot)
    export = (
        closure.to_bedrock_tool_results if method == "toBedrockToolResults" else closure.to_gemini_function_responses
    )
    return json.loads(response_json(export(snapshot, **options), to_json))  # bytes as base64, as serve writes them


@pytest.mark.parametrize(
    ("method", "options", "python"),
    [
        ("toBedrockToolResults", {"media": False}, {"media": False}),
        ("toBedrockToolResults", {"media": True}, {}),
        ("toGeminiFunctionResponses", {"family": "gemini-2"}, {"family": "gemini-2"}),
        ("toGeminiFunctionResponses", {"family": "gemini-3"}, {}),
        ("toGeminiFunctionResponses", {"family": None}, {}),  # a null member takes its default, as new's limits do
        ("toGeminiFunctionResponses", {}, {}),
    ],
)
def test_D22_export_options_answer_what_the_python_options_return(
    method: str, options: dict[str, Any], python: dict[str, Any]
) -> None:
    subject = sealed()
    assert answer(subject, method, {"$snapshot": 4}, options) == python_export(method, **python)


def test_D22_bedrock_media_false_and_gemini_2_write_notes_for_the_media() -> None:
    subject = sealed()
    bedrock = answer(subject, "toBedrockToolResults", {"$snapshot": 4}, {"media": False})
    blocks = bedrock[0]["toolResult"]["content"]
    assert [next(iter(block)) for block in blocks] == ["text"] * 5 + ["json"]
    assert blocks[1]["text"].startswith("[image image/png, 8 bytes: ")
    assert blocks[4] == {"text": "plain notes"}  # a text file is its text
    gemini = answer(subject, "toGeminiFunctionResponses", {"$snapshot": 4}, {"family": "gemini-2"})
    response = gemini[0]["function_response"]
    assert "parts" not in response
    assert response["response"]["output"].count("Gemini 2.x takes no media in a function response") == 3


def test_D22_the_snapshot_may_be_absent_before_the_options() -> None:
    subject = sealed()
    fresh = answer(subject, "toBedrockToolResults", {"$undefined": True}, {"media": False})
    assert fresh == answer(subject, "toBedrockToolResults", {"$snapshot": 4}, {"media": False})
    # {"$undefined":true} as the options is no options: the defaults, as v1
    assert answer(subject, "toBedrockToolResults", {"$snapshot": 4}, {"$undefined": True}) == answer(
        subject, "toBedrockToolResults", {"$snapshot": 4}
    )


@pytest.mark.parametrize(
    ("method", "options", "message"),
    [
        ("toBedrockToolResults", None, "options must be an object"),
        ("toBedrockToolResults", [], "options must be an object"),
        ("toBedrockToolResults", "media", "options must be an object"),
        ("toBedrockToolResults", {"media": "no"}, "options.media must be true or false"),
        ("toBedrockToolResults", {"media": 0}, "options.media must be true or false"),
        ("toBedrockToolResults", {"family": "gemini-2"}, "options has an unknown key: family"),
        ("toBedrockToolResults", {"media": 1, "medai": False}, "options has an unknown key: medai"),
        ("toGeminiFunctionResponses", {"family": "gemini-1.5"}, "options.family must be gemini-2 or gemini-3"),
        ("toGeminiFunctionResponses", {"media": False}, "options has an unknown key: media"),
        ("toGeminiFunctionResponses", {"$nan": True}, "options has an unknown key: $nan"),  # plain JSON: no tags
        ("toGeminiFunctionResponses", {"k" * 200: 1}, "options has an unknown key: " + "k" * 125 + "..."),
    ],
)
def test_D22_bad_export_options_are_a_type_error_and_change_nothing(method: str, options: Any, message: str) -> None:
    subject = sealed()
    before = subject.send(call(5, "snapshot"))
    assert answer(subject, method, {"$snapshot": 4}, options) == {"kind": "TypeError", "message": message}
    # checked before the snapshot: an open one would be refused otherwise, and no record is left for the id
    subject.send(call(6, "begin", [{"id": "b", "name": "t"}]))
    assert answer(subject, method, {"$snapshot": 6}, options) == {"kind": "TypeError", "message": message}
    (missing,) = subject.send(call(7, "toOpenAIResponses", {"$snapshot": 9}))
    assert missing["error"]["kind"] == "ProtocolError"
    subject.send({"id": 8, "cmd": "new"})
    assert before[0]["ok"]["calls"][0]["state"] == "success"


@pytest.mark.parametrize("options", [{"media": False}, {"family": "gemini-2"}, "bad", None])
@pytest.mark.parametrize("method", EXPORTS)
def test_D22_a_subject_without_the_capability_ignores_the_options_as_v1_did(method: str, options: Any) -> None:
    subject = sealed(WITHOUT)
    assert answer(subject, method, {"$snapshot": 4}, options) == answer(subject, method, {"$snapshot": 4})
    # v1 decodes an extra argument like any other: a bad tag in it stays a ProtocolError
    (line,) = subject.send(call(9, method, {"$snapshot": 4}, {"media": {"$nan": 2}}))
    assert line["error"]["kind"] == "ProtocolError"


def test_D22_other_exports_take_no_options() -> None:
    subject = sealed()
    for method in ("toOpenAIChatCompletions", "toOpenAIResponses", "toAnthropicToolResults"):
        assert answer(subject, method, {"$snapshot": 4}, {"media": False}) == answer(subject, method, {"$snapshot": 4})


def test_D22_export_options_are_derived_from_the_requests() -> None:
    options = call(1, "toBedrockToolResults", {"$snapshot": 4}, {"media": False})
    assert required_capabilities([options]) == {"bedrock-export", "export-options"}
    gemini = call(1, "toGeminiFunctionResponses", {"$undefined": True}, "anything")
    assert required_capabilities([gemini]) == {"gemini-export", "export-options"}
    nested = call(2, "cancel", {"$handle": 1}, "a", {"$hook": {"calls": [options]}})
    assert "export-options" in required_capabilities([nested])
    for request in (
        call(1, "toBedrockToolResults", {"$snapshot": 4}),
        call(1, "toBedrockToolResults", {"$snapshot": 4}, {"$undefined": True}),
        call(1, "toAnthropicToolResults", {"$snapshot": 4}, {"media": False}),
    ):
        assert not uses_export_options(request)
        assert "export-options" not in required_capabilities([request])


def test_D22_export_keywords_are_the_python_options() -> None:
    assert export_keywords("toBedrockToolResults", {"media": False}) == {"media": False}
    assert export_keywords("toGeminiFunctionResponses", {"family": "gemini-2"}) == {"family": "gemini-2"}
    assert export_keywords("toGeminiFunctionResponses", ABSENT) == {}
    with pytest.raises(UsageError) as info:
        export_keywords("toBedrockToolResults", {"media": None, "x": 1})
    assert info.value.code == "export_option"
    assert EXPORT_OPTIONS["toGeminiFunctionResponses"]["family"][1] == GEMINI_FAMILIES


def test_D22_the_notes_in_a_payload_read_the_same_in_every_language() -> None:
    """A port copies the notes an export writes byte for byte: none may be spelled in Python.

    ``media=False`` or ``family='gemini-2'`` in a note would make a JavaScript port print Python; the notes
    say ``no media`` and ``family gemini-2``, and the vectors that pin them are scanned for any such spelling.
    """
    python_spelling = re.compile(r"\w=(False|True|None|'[^']*')")
    subject = sealed()
    bedrock = json.dumps(answer(subject, "toBedrockToolResults", {"$snapshot": 4}, {"media": False}))
    gemini = json.dumps(answer(subject, "toGeminiFunctionResponses", {"$snapshot": 4}, {"family": "gemini-2"}))
    assert "asked for no media" in bedrock
    assert "(family gemini-2)" in gemini
    for payload in (bedrock, gemini):
        assert python_spelling.search(payload) is None, payload
    folder = Path(__file__).resolve().parents[1] / "spec" / "vectors"
    spelled = [path.name for path in sorted(folder.rglob("*.json")) if python_spelling.search(path.read_text())]
    assert spelled == []


# --------------------------------------------------------------------------- the Python options, checked in one place


def _sealed_closure() -> tuple[ToolCallClosure, Snapshot]:
    closure = ToolCallClosure()
    handle = closure.begin([{"id": "a", "name": "chart"}]).handle
    closure.succeed(handle, "a", "done")
    snapshot = closure.seal(handle)
    assert isinstance(snapshot, Snapshot)
    return closure, snapshot


@pytest.mark.parametrize(
    ("method", "option", "value", "message"),
    [
        (
            "to_gemini_function_responses",
            "family",
            "gemini-1.5",
            "family must be one of gemini-2, gemini-3, got 'gemini-1.5'",
        ),
        ("to_gemini_function_responses", "family", "g" * 41, "family must be one of gemini-2, gemini-3, got str"),
        ("to_bedrock_tool_results", "media", "no", "media must be True or False, got 'no'"),
        ("to_bedrock_tool_results", "media", 0, "media must be True or False, got int"),
    ],
)
def test_D22_a_bad_python_export_option_names_its_value_and_changes_nothing(
    method: str, option: str, value: object, message: str
) -> None:
    closure, snapshot = _sealed_closure()
    before = to_json(closure.snapshot())
    with pytest.raises(UsageError) as info:
        getattr(closure, method)(snapshot, **{option: value})
    assert (info.value.code, str(info.value)) == ("export_option", message)
    assert to_json(closure.snapshot()) == before


def test_D22_the_providers_preflights_and_renderers_refuse_a_bad_option_too() -> None:
    """``media="no"`` is not ``True``, and a misspelt family is not Gemini 3: each is refused where it is passed.

    Before, the preflights read ``media`` by truthiness and treated any family
    but ``"gemini-2"`` as Gemini 3, and the renderers checked neither when no
    result was made of parts: the wrong family's rules were applied without a word.
    """
    from tool_call_closure.providers import bedrock, gemini

    closure, snapshot = _sealed_closure()
    rows: list[Any] = []  # no row is needed: the option is checked first
    contents = [
        {"role": "model", "parts": [{"function_call": {"name": "chart", "args": {}}}]},
        {"role": "user", "parts": closure.to_gemini_function_responses(snapshot)},
    ]
    gemini.check_contents(contents, family="gemini-2")  # the good families still pass
    messages = [
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "a", "name": "chart", "input": {}}}]},
        {"role": "user", "content": closure.to_bedrock_tool_results(snapshot)},
    ]
    bedrock.check_messages(messages, media=False)
    refusals: list[tuple[Callable[[], object], str]] = [
        (lambda: gemini.check_contents(contents, family="gemini-1.5"), "family"),  # type: ignore[arg-type]
        (lambda: gemini.render_records(rows, family="Gemini-3"), "family"),  # type: ignore[arg-type]
        (lambda: bedrock.check_messages(messages, media="no"), "media"),  # type: ignore[arg-type]
        (lambda: bedrock.render_records(rows, media=1), "media"),  # type: ignore[arg-type]
    ]
    for refused, option in refusals:
        with pytest.raises(UsageError, match=f"^{option} must be") as info:
            refused()
        assert info.value.code == "export_option"
