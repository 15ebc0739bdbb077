"""Gemini (google-genai): every function response in one Content — under mypy --strict, no cast."""

from __future__ import annotations

from google import genai
from google.genai import types

from tool_call_closure import ToolCallClosure
from tool_call_closure.providers import gemini


def step(client: genai.Client, history: list[types.ContentDict]) -> None:
    response = client.models.generate_content(model="gemini-2.5-flash", contents=history)
    ingested = gemini.ingest(response)
    closure = ToolCallClosure()
    batch = closure.begin(ingested.calls)
    for call in ingested.runnable:
        closure.succeed(batch.handle, call.id, {"ok": True})
    parts = closure.to_gemini_function_responses(closure.close(batch.handle))
    user: types.ContentDict = {"role": "user", "parts": parts}  # exported parts are the SDK's PartDicts
    client.models.generate_content(model="gemini-2.5-flash", contents=[*history, user])
    client.models.generate_content(
        model="gemini-2.5-flash", contents=[*history, *gemini.next_contents(response, parts)]
    )


def streamed(client: genai.Client, history: list[types.ContentDict]) -> None:
    stream = gemini.GeminiStream()
    for chunk in client.models.generate_content_stream(model="gemini-2.5-flash", contents=history):
        stream.add(chunk)
    ToolCallClosure().begin(stream.finish().calls)
