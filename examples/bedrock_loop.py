"""A complete Bedrock Converse tool loop with boto3 and the thread-pool runner: ingest → run → export → next request.

    python examples/bedrock_loop.py                     # offline, against the local provider stub
    python examples/bedrock_loop.py --base-url URL      # an endpoint speaking Converse (endpoint_url)

boto3 is synchronous, so the tools are plain functions run on threads.  A
thread cannot be stopped: the slow tool is answered ``tool_timeout`` at its
timeout, and its result, when the thread finishes, is fenced and never sent.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import boto3  # type: ignore[import-untyped]  # boto3 ships no types; mypy-boto3-bedrock-runtime types the client
from _offline import server
from tools import SYNC_TOOLS

from tool_call_closure import ToolCallClosure
from tool_call_closure.providers import bedrock
from tool_call_closure.runners import StaleTurn, run_tool_calls_in_threads

if TYPE_CHECKING:
    from mypy_boto3_bedrock_runtime import BedrockRuntimeClient
    from mypy_boto3_bedrock_runtime.type_defs import MessageUnionTypeDef, ToolConfigurationTypeDef

TOOL_CONFIG: ToolConfigurationTypeDef = {
    "tools": [
        {
            "toolSpec": {
                "name": name,
                "inputSchema": {"json": {"type": "object", "properties": {"city": {"type": "string"}}}},
            }
        }
        for name in SYNC_TOOLS
    ]
}


def agent(client: BedrockRuntimeClient, prompt: str, *, max_turns: int = 5) -> str:
    closure = ToolCallClosure()
    messages: list[MessageUnionTypeDef] = [{"role": "user", "content": [{"text": prompt}]}]
    for _ in range(max_turns):
        token = closure.turn_token()  # before the request: a turn begun meanwhile makes this one stale
        response = client.converse(modelId="anthropic.claude-sonnet-4-5", messages=messages, toolConfig=TOOL_CONFIG)
        ingested = bedrock.ingest(response)
        if not ingested.calls:
            return "".join(block.get("text", "") for block in response["output"]["message"]["content"])
        run = run_tool_calls_in_threads(closure, ingested.calls, SYNC_TOOLS, turn=token, call_timeout=0.5, deadline=10)
        if isinstance(run, StaleTurn):  # another task began a newer turn on this closure: it owns the conversation
            raise RuntimeError("a newer model turn replaced this one")
        results = closure.to_bedrock_tool_results(run.snapshot)
        for block in results:
            print(f"  {block['toolResult']}")
        messages += bedrock.next_messages(response, results)
    raise RuntimeError(f"no final answer after {max_turns} turns")


def main(argv: list[str] | None = None) -> int:
    with server("bedrock", argv) as base_url:
        client: BedrockRuntimeClient = boto3.client(
            "bedrock-runtime",
            region_name="us-east-1",
            endpoint_url=base_url,
            aws_access_key_id="stub",
            aws_secret_access_key="stub",
        )
        print(agent(client, "What's the weather in Paris, and tomorrow's forecast?"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
