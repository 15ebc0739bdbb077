"""OpenAI Responses: pairing on call_id, with and without previous_response_id — under mypy --strict, no cast."""

from __future__ import annotations

from openai import OpenAI
from openai.types.responses import ResponseInputParam

from tool_call_closure import ToolCallClosure
from tool_call_closure.providers import openai_responses


def step(client: OpenAI, history: ResponseInputParam) -> None:
    response = client.responses.create(model="gpt-5", input=history)
    ingested = openai_responses.ingest(response)
    closure = ToolCallClosure()
    batch = closure.begin(ingested.calls)
    for call in ingested.runnable:
        closure.succeed(batch.handle, call.id, "done")
    outputs = closure.to_openai_responses(closure.close(batch.handle))
    # Chained on the server: the results alone.
    client.responses.create(model="gpt-5", previous_response_id=response.id, input=[*outputs])
    client.responses.create(
        model="gpt-5",
        previous_response_id=response.id,
        input=openai_responses.next_input(response, outputs, previous_response_id=True),
    )
    # Stateless: the output items, then the results.
    client.responses.create(model="gpt-5", input=[*history, *openai_responses.next_input(response, outputs)])


def streamed(client: OpenAI, history: ResponseInputParam) -> None:
    stream = openai_responses.ResponsesStream()
    for event in client.responses.create(model="gpt-5", input=history, stream=True):
        for call in stream.add(event):
            print(call.id, call.arguments)
    ingested = stream.finish()
    closure = ToolCallClosure()
    closure.begin(ingested.calls)
