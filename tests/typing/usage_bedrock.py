"""Bedrock Converse (boto3 with mypy-boto3-bedrock-runtime): the user turn of toolResults — under mypy --strict, no cast."""

from __future__ import annotations

from mypy_boto3_bedrock_runtime import BedrockRuntimeClient
from mypy_boto3_bedrock_runtime.type_defs import MessageUnionTypeDef

from tool_call_closure import ToolCallClosure
from tool_call_closure.providers import bedrock


def step(client: BedrockRuntimeClient, history: list[MessageUnionTypeDef]) -> None:
    response = client.converse(modelId="anthropic.claude", messages=history)
    ingested = bedrock.ingest(response)
    closure = ToolCallClosure()
    batch = closure.begin(ingested.calls)
    for call in ingested.runnable:
        closure.succeed(batch.handle, call.id, "ok")
    results = closure.to_bedrock_tool_results(closure.close(batch.handle))
    assistant = response["output"].get("message")
    if assistant is not None:
        client.converse(
            modelId="anthropic.claude", messages=[*history, assistant, {"role": "user", "content": results}]
        )
    client.converse(modelId="anthropic.claude", messages=[*history, *bedrock.next_messages(response, results)])


def streamed(client: BedrockRuntimeClient, history: list[MessageUnionTypeDef]) -> None:
    stream = bedrock.BedrockStream()
    for event in client.converse_stream(modelId="anthropic.claude", messages=history)["stream"]:
        stream.add(event)
    ToolCallClosure().begin(stream.finish().calls)
