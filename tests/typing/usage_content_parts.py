"""Content parts (D22): a tool result of text, an image, a file and JSON, exported to every SDK — mypy --strict, no cast."""

from __future__ import annotations

from anthropic import Anthropic
from anthropic.types import MessageParam
from google import genai
from google.genai import types
from mypy_boto3_bedrock_runtime import BedrockRuntimeClient
from mypy_boto3_bedrock_runtime.type_defs import MessageUnionTypeDef
from openai import OpenAI
from openai.types.chat import ChatCompletionMessageParam
from openai.types.responses import ResponseInputParam

from tool_call_closure import FileInput, ImageInput, JsonInput, TextInput, ToolCallClosure, ToolContent, content
from tool_call_closure.providers import ToolCall, anthropic, bedrock, gemini, openai_chat, openai_responses


def chart(png: bytes) -> ToolContent:
    return content(
        [
            "Last week's sales:",
            TextInput("(in EUR)"),
            ImageInput(media_type="image/png", data=png),
            ImageInput(media_type="image/jpeg", url="https://example.com/chart.jpg"),
            FileInput(name="report.pdf", media_type="application/pdf", base64="JVBERi0xLjQK"),
            JsonInput({"total": 1234}, schema={"type": "object"}),
        ]
    )


def chat(client: OpenAI, history: list[ChatCompletionMessageParam], calls: list[ToolCall], png: bytes) -> None:
    closure = ToolCallClosure()
    batch = closure.begin(calls)
    closure.settle(batch.handle, calls[0].id, {"status": "success", "content": chart(png)})
    snapshot = closure.seal(batch.handle)
    results = closure.to_openai_chat_completions(snapshot)
    following = [*history, *openai_chat.next_messages(calls, results, media_from=snapshot)]
    client.chat.completions.create(model="gpt-5", messages=following)


def responses(client: OpenAI, history: ResponseInputParam, calls: list[ToolCall], png: bytes) -> None:
    closure = ToolCallClosure()
    batch = closure.begin(calls)
    closure.succeed(batch.handle, calls[0].id, chart(png))
    outputs = closure.to_openai_responses(closure.seal(batch.handle))
    client.responses.create(model="gpt-5", input=[*history, *openai_responses.next_input(calls, outputs)])


def claude(client: Anthropic, history: list[MessageParam], calls: list[ToolCall], png: bytes) -> None:
    closure = ToolCallClosure()
    batch = closure.begin(calls)
    closure.succeed(batch.handle, calls[0].id, chart(png))
    results = closure.to_anthropic_tool_results(closure.seal(batch.handle))
    client.messages.create(
        model="claude-sonnet-4-5", max_tokens=1024, messages=[*history, *anthropic.next_messages(calls, results)]
    )


def gemini_2(client: genai.Client, history: list[types.ContentDict], calls: list[ToolCall], png: bytes) -> None:
    closure = ToolCallClosure()
    batch = closure.begin(calls)
    closure.succeed(batch.handle, calls[0].id, chart(png))
    parts = closure.to_gemini_function_responses(closure.seal(batch.handle), family="gemini-2")
    turn: types.ContentDict = {"role": "model", "parts": []}
    contents = [*history, *gemini.next_contents(turn, parts, family="gemini-2")]
    client.models.generate_content(model="gemini-2.5-flash", contents=contents)


def converse(client: BedrockRuntimeClient, history: list[MessageUnionTypeDef], calls: list[ToolCall]) -> None:
    closure = ToolCallClosure()
    batch = closure.begin(calls)
    closure.succeed(batch.handle, calls[0].id, chart(b"\x89PNG"))
    results = closure.to_bedrock_tool_results(closure.seal(batch.handle), media=False)
    client.converse(modelId="m", messages=[*history, *bedrock.next_messages(calls, results, media=False)])
