"""A streamed Bedrock Converse tool loop with boto3: accumulate events → finish → run → export → next request.

    python examples/streaming_bedrock.py                 # offline, against the local provider stub
    python examples/streaming_bedrock.py --base-url URL  # an endpoint speaking ConverseStream (endpoint_url)

Every ``converse_stream`` event goes into a ``BedrockStream``.  A dropped
connection surfaces from boto3 as ``urllib3.exceptions.ProtocolError``
(botocore does not wrap it; an error event in the stream raises
``botocore.exceptions.EventStreamError``): the turn is then *unfinished* (no
``messageStop``), and ``finish()`` answers every call of it with an error,
running none.  The next request echoes the streamed turn (text, reasoning,
the calls) from the stream itself; boto3 is synchronous, so the tools run on
threads.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import boto3  # type: ignore[import-untyped]  # boto3 ships no types; mypy-boto3-bedrock-runtime types the client
import urllib3
from _offline import streaming_server
from bedrock_loop import TOOL_CONFIG  # the same tools as the non-streamed loop
from botocore.exceptions import EventStreamError  # type: ignore[import-untyped]
from tools import SYNC_TOOLS

from tool_call_closure import ToolCallClosure
from tool_call_closure.providers import bedrock
from tool_call_closure.runners import run_tool_calls_in_threads

if TYPE_CHECKING:
    from mypy_boto3_bedrock_runtime import BedrockRuntimeClient
    from mypy_boto3_bedrock_runtime.type_defs import MessageUnionTypeDef


def agent(client: BedrockRuntimeClient, prompt: str, *, max_turns: int = 5) -> str:
    closure = ToolCallClosure()
    messages: list[MessageUnionTypeDef] = [{"role": "user", "content": [{"text": prompt}]}]
    for _ in range(max_turns):
        stream = bedrock.BedrockStream()
        text = ""
        response = client.converse_stream(  # a refused request raises here, before any event
            modelId="anthropic.claude-sonnet-4-5", messages=messages, toolConfig=TOOL_CONFIG
        )
        try:
            for event in response["stream"]:
                stream.add(event)
                if "contentBlockDelta" in event:
                    text += event["contentBlockDelta"]["delta"].get("text", "")
        except (urllib3.exceptions.HTTPError, EventStreamError) as error:  # cut: the turn never finished
            print(f"  the stream was cut ({type(error).__name__})")
        ingested = stream.finish()  # an unfinished turn: every call answered with an error, none run
        if not ingested.calls and ingested.unfinished is None:
            return text
        run = run_tool_calls_in_threads(closure, ingested.calls, SYNC_TOOLS, call_timeout=0.5, deadline=10)
        results = closure.to_bedrock_tool_results(run.snapshot)
        for block in results:
            print(f"  {block['toolResult']}")
        messages += bedrock.next_messages(stream, results)  # the whole turn, from the stream
    raise RuntimeError(f"no final answer after {max_turns} turns")


def main(argv: list[str] | None = None) -> int:
    with streaming_server("bedrock", argv) as base_url:
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
