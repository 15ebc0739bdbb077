"""Typos the typed inputs catch: mypy --strict must report each marked line (and nothing else)."""

from __future__ import annotations

from openai.types.responses import Response

from tool_call_closure import ToolCallClosure


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
