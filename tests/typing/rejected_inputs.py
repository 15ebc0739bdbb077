"""Typos the typed inputs catch: mypy --strict must report each marked line (and nothing else)."""

from __future__ import annotations

from typing import assert_type

from openai.types.responses import Response

from tool_call_closure import BeginResult, FileInput, ImageInput, Rejection, TextInput, ToolCallClosure, content


def typos(closure: ToolCallClosure, response: Response) -> None:
    batch = closure.begin([{"id": "a", "nmae": "t"}])  # error: list-item
    closure.close(batch.handle, {"status": "canceled"})  # error: arg-type
    closure.close(batch.handle, {"sideEffectState": "maybe"})  # error: arg-type
    closure.settle(batch.handle, "a", {"status": "succes", "content": 1})  # error: typeddict-item
    closure.begin(response.output)  # error: arg-type
    snapshot = closure.snapshot()
    assert snapshot is not None
    print(snapshot.cals)  # error: attr-defined
    accepted = closure.succeed(batch.handle, "a", "ok")
    if accepted.accepted:
        print(accepted.setlement)  # error: attr-defined


def stale_turns(closure: ToolCallClosure) -> None:
    """Deviation D20: begin without a token is a BeginResult; with one it may be a stale_turn Rejection."""
    assert_type(closure.begin([]), BeginResult)  # unchanged without a token: no narrowing needed
    token = closure.turn_token()
    guarded = closure.begin([], turn=token)
    assert_type(guarded, BeginResult | Rejection)
    print(guarded.handle)  # error: union-attr
    closure.begin([], turn={"generation": 1})  # error: call-overload
    if isinstance(guarded, BeginResult):
        print(guarded.handle)  # narrowed: a BeginResult


def content_parts(closure: ToolCallClosure, png: bytes) -> None:
    """Deviation D22: a wrong part is caught at the call site."""
    content([TextInput(png)])  # error: arg-type
    content([ImageInput(media_type="image/png", data="iVBORw0KGgo=")])  # error: arg-type
    content([png])  # error: list-item
    ImageInput("image/png", png)  # error: call-arg
    content([FileInput(media_type="application/pdf", data=png)])  # error: call-arg
    snapshot = closure.snapshot()
    closure.to_bedrock_tool_results(snapshot, media="no")  # error: arg-type
    closure.to_gemini_function_responses(snapshot, family="gemini-1.5")  # error: arg-type
