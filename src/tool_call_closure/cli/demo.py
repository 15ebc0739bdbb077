"""``tool-call-closure demo``: a parallel batch aborted midway, exported three ways."""

from __future__ import annotations

import json
from typing import TextIO

from tool_call_closure.closure import ToolCallClosure, to_json
from tool_call_closure.values import Snapshot

__all__ = ["run_demo"]


def run_demo(out: TextIO) -> int:
    closure = ToolCallClosure()
    batch = closure.begin(
        [
            {"id": "call_weather", "name": "get_weather"},
            {"id": "call_calendar", "name": "get_calendar"},
            {"id": "call_email", "name": "send_email"},
        ]
    )
    out.write("1. begin: three calls announced in generation 1\n")
    closure.succeed(batch.handle, "call_weather", {"temperatureC": 24, "sky": "clear"})
    out.write("2. call_weather succeeded; call_calendar is running; call_email has not started\n")
    snapshot = closure.close(
        batch.handle,
        {"status": "cancelled", "code": "request_aborted", "message": "The user stopped the run."},
    )
    assert isinstance(snapshot, Snapshot)  # the handle is current, so close returns the snapshot
    out.write("3. the run is aborted: close() gives every pending call a synthetic cancellation\n")
    late = closure.succeed(batch.handle, "call_calendar", {"events": []})
    out.write(f"4. a late result arrives and is fenced, not applied: {to_json(late)}\n\n")

    out.write("Closed snapshot:\n")
    out.write(json.dumps(json.loads(to_json(snapshot)), indent=2, ensure_ascii=False) + "\n\n")
    for title, payload in (
        ("OpenAI Chat Completions (tool messages)", closure.to_openai_chat_completions(snapshot)),
        ("OpenAI Responses (function_call_output items)", closure.to_openai_responses(snapshot)),
        ("Anthropic Messages (tool_result blocks)", closure.to_anthropic_tool_results(snapshot)),
    ):
        out.write(f"{title}:\n{json.dumps(payload, indent=2, ensure_ascii=False)}\n\n")
    out.write("Every announced call has exactly one result in each payload, in announcement order.\n")
    return 0
