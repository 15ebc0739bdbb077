"""Five end-to-end scenarios through the real SDK clients against the provider stub (providers.md "(c)").

Each scenario runs twice per provider API: with the library (ingest → run →
export → next request), which the stub accepts, and with the naive loop a
user writes without it, which the stub refuses with the provider's own error
(providers.md §3).  The stub enforces the pairing rules, so "accepted" means
every call was answered exactly once, right after it, in the provider's shape.

1. a parallel batch aborted midway (claude-code#746, pydantic-ai#7977);
2. a real result arriving after a timeout (vercel/ai PR#8605, TanStack/ai#1214);
3. a sibling tool raising (langgraph#7412);
4. supersession by a new user message (azure-sdk-for-python#45875, deepagentsjs#150);
5. a streamed batch whose last call was truncated (anthropic-sdk-typescript#842).

Gemini and Bedrock run scenarios 1–4 through google-genai (``http_options``
``base_url``) and boto3 (``endpoint_url``); the stub streams only the three
APIs of scenario 5.  Every run is bounded: the stub answers at most 60
requests, and every wait in a tool is on an event the scenario sets.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from conversations import CONVERSATIONS, STREAMING, Conversation, RefusedError
from provider_stub import Call, ProviderStub, Turn
from tool_call_closure import ToolCallClosure
from tool_call_closure.providers import Ingested, ToolCall, openai_responses
from tool_call_closure.runners import AbortSignal, run_tool_calls

NEVER = 60.0

ID_PREFIX = {"openai_chat": "call_", "openai_responses": "call_", "anthropic": "toolu_", "bedrock": "tooluse_"}


def scripted_calls(provider: str, *names: str) -> tuple[Call, ...]:
    """Calls as the provider announces them; Gemini 2.x sends none of its ids (flink-agents#947)."""
    prefix = ID_PREFIX.get(provider)
    return tuple(
        Call(None if prefix is None else f"{prefix}{name}", name, json.dumps({"city": "Paris", "n": n}))
        for n, name in enumerate(names)
    )


@pytest.fixture
def stub() -> Iterator[ProviderStub]:
    with ProviderStub(max_requests=60) as server:
        yield server


def start(stub: ProviderStub, provider: str, turn: Turn, *, stream: bool = False) -> tuple[Conversation, Ingested]:
    stub.script(provider, [turn])
    conversation = CONVERSATIONS[provider](stub)
    ingested = conversation.ask(stream=stream)
    assert [c.name for c in ingested.calls] == [c.name for c in turn.calls]
    return conversation, ingested


def assert_accepted(stub: ProviderStub, reply: Ingested) -> None:
    assert stub.refusals() == []
    assert reply.calls == ()  # the model's final text turn: the stub accepted the transcript


def assert_refused(caught: pytest.ExceptionInfo[RefusedError], expected_start: str) -> None:
    assert caught.value.message.startswith(expected_start), caught.value.message
    assert caught.value.message in str(caught.value.sdk_error) or expected_start in str(caught.value.sdk_error)


MISSING = {
    "openai_chat": "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ",
    "openai_responses": "No tool output found for function call ",
    "anthropic": "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: ",
    "gemini": "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.",
    "bedrock": "Expected toolResult blocks at messages.2.content for the following Ids: ",  # STUB wording
}
ORPHAN = {
    "openai_chat": "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
    "openai_responses": "Duplicate function call output found for call_id ",  # STUB wording: the whole input is replayed
    "anthropic": "messages.4.content.0: `tool_result` block(s) provided when previous message does not contain any `tool_use` blocks",
    "gemini": "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.",
    "bedrock": "The number of toolResult blocks exceeds the number of toolUse blocks of previous turn",
}

PROVIDERS = list(CONVERSATIONS)


# -- 1. a parallel batch aborted midway ---------------------------------------------------------------------------


def _abort_midway_tools(abort_library: AbortSignal | None, aborted: asyncio.Event) -> tuple[dict[str, Any], list[str]]:
    """lookup finishes, book is running, notify never starts (two at a time); lookup's return triggers the abort."""
    entered: list[str] = []
    book_running = asyncio.Event()

    async def lookup(city: str, n: int) -> dict[str, str]:
        entered.append("lookup")
        await book_running.wait()
        if abort_library is not None:
            abort_library.abort("The user stopped the run.")
        aborted.set()
        return {"city": city, "weather": "sunny"}

    async def book(city: str, n: int) -> str:
        entered.append("book")
        book_running.set()
        await asyncio.sleep(NEVER)
        return "booked"

    async def notify(city: str, n: int) -> str:
        entered.append("notify")
        return "sent"

    return {"lookup": lookup, "book": book, "notify": notify}, entered


@pytest.mark.parametrize("provider", PROVIDERS)
def test_scenario_1_a_batch_aborted_midway_is_answered_in_full_and_accepted(stub: ProviderStub, provider: str) -> None:
    conversation, ingested = start(stub, provider, Turn(scripted_calls(provider, "lookup", "book", "notify")))
    closure = ToolCallClosure()
    abort = AbortSignal()
    tools, entered = _abort_midway_tools(abort, asyncio.Event())
    report = asyncio.run(
        asyncio.wait_for(run_tool_calls(closure, ingested.calls, tools, max_concurrency=2, abort=abort), NEVER)
    )
    assert entered == ["lookup", "book"]
    assert report.snapshot is not None
    assert [(c.state, c.settlement.code if c.settlement else None) for c in report.snapshot.calls] == [
        ("success", None),
        ("cancelled", "run_aborted"),
        ("cancelled", "run_aborted"),
    ]
    assert_accepted(stub, conversation.send(closure, report.snapshot))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_scenario_1_naive_an_aborted_gather_sends_only_what_finished_and_is_refused(
    stub: ProviderStub, provider: str
) -> None:
    conversation, ingested = start(stub, provider, Turn(scripted_calls(provider, "lookup", "book", "notify")))

    async def naive() -> list[tuple[ToolCall, str]]:
        aborted = asyncio.Event()
        tools, _ = _abort_midway_tools(None, aborted)
        tasks = {c.id: asyncio.create_task(tools[c.name](**c.arguments)) for c in ingested.calls[:2]}  # two at a time
        await aborted.wait()
        await asyncio.sleep(0)
        for task in tasks.values():
            task.cancel()
        done = []
        for c in ingested.calls[:2]:
            with contextlib.suppress(asyncio.CancelledError):  # aborted: no result to send
                done.append((c, json.dumps(await tasks[c.id])))
        return done

    results = asyncio.run(asyncio.wait_for(naive(), NEVER))
    assert [c.name for c, _ in results] == ["lookup"]
    with pytest.raises(RefusedError) as caught:
        conversation.send_naive(results)
    assert_refused(caught, MISSING[provider])


# -- 2. a real result after a timeout -----------------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_scenario_2_a_result_after_its_timeout_is_fenced_and_the_conversation_goes_on(
    stub: ProviderStub, provider: str
) -> None:
    conversation, ingested = start(stub, provider, Turn(scripted_calls(provider, "slow_search", "quick")))
    closure = ToolCallClosure()

    async def slow_search(city: str, n: int) -> str:
        try:
            await asyncio.sleep(NEVER)
        except asyncio.CancelledError:
            await asyncio.sleep(0.01)  # the backend answers anyway
        return "LATE: 12 hotels"

    async def quick(city: str, n: int) -> str:
        return "ok"

    tools = {"slow_search": slow_search, "quick": quick}
    report = asyncio.run(asyncio.wait_for(run_tool_calls(closure, ingested.calls, tools, call_timeout=0.05), NEVER))
    assert report.snapshot is not None
    assert [late.value for late in report.late] == ["LATE: 12 hotels"]
    payload = json.dumps(CONVERSATIONS_EXPORT[provider](closure, report.snapshot), default=str)
    assert "LATE" not in payload
    assert "tool_timeout" in payload
    assert_accepted(stub, conversation.send(closure, report.snapshot))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_scenario_2_naive_a_late_result_appended_after_the_timeout_is_refused(
    stub: ProviderStub, provider: str
) -> None:
    conversation, ingested = start(stub, provider, Turn(scripted_calls(provider, "slow_search", "quick")))
    stub.script(provider, [Turn(text="Searching took too long; shall I retry?")])
    slow, quick = ingested.calls
    # the naive loop: wait_for times out, it sends an error text, the model replies …
    reply = conversation.send_naive([(slow, "Error: timed out"), (quick, "ok")])
    assert reply.calls == ()
    # … then the real result arrives and is appended with the next user message
    with pytest.raises(RefusedError) as caught:
        conversation.send_naive([(slow, "LATE: 12 hotels")], user_text="Yes, retry.")
    assert_refused(caught, ORPHAN[provider])


# -- 3. a sibling raises ------------------------------------------------------------------------------------------


async def _weather(city: str, n: int) -> dict[str, Any]:
    return {"city": city, "temperatureC": 24}


async def _calendar(city: str, n: int) -> dict[str, Any]:
    raise ConnectionError("calendar service unreachable")


async def _hotels(city: str, n: int) -> list[str]:
    await asyncio.sleep(0.01)
    return ["Hôtel du Nord"]


SIBLINGS = {"weather": _weather, "calendar": _calendar, "hotels": _hotels}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_scenario_3_a_raising_sibling_gets_an_error_and_the_others_their_results(
    stub: ProviderStub, provider: str
) -> None:
    conversation, ingested = start(stub, provider, Turn(scripted_calls(provider, "weather", "calendar", "hotels")))
    closure = ToolCallClosure()
    report = asyncio.run(asyncio.wait_for(run_tool_calls(closure, ingested.calls, SIBLINGS), NEVER))
    assert report.snapshot is not None
    assert [c.state for c in report.snapshot.calls] == ["success", "error", "success"]
    assert report.snapshot.calls[1].settlement is not None
    assert report.snapshot.calls[1].settlement.message == "calendar service unreachable"
    assert_accepted(stub, conversation.send(closure, report.snapshot))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_scenario_3_naive_gather_loses_every_result_and_the_request_is_refused(
    stub: ProviderStub, provider: str
) -> None:
    conversation, ingested = start(stub, provider, Turn(scripted_calls(provider, "weather", "calendar", "hotels")))

    async def naive() -> list[tuple[ToolCall, str]]:
        values = await asyncio.gather(*(SIBLINGS[c.name](**c.arguments) for c in ingested.calls))
        return [(c, json.dumps(v)) for c, v in zip(ingested.calls, values, strict=True)]

    with pytest.raises(ConnectionError):
        asyncio.run(naive())
    with pytest.raises(RefusedError) as caught:  # the loop carries on with the user's next message and no results
        conversation.send_naive([], user_text="Anything?")
    assert_refused(caught, MISSING[provider])


# -- 4. supersession by a new user message ------------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_scenario_4_a_new_user_message_supersedes_pending_calls_which_are_answered_first(
    stub: ProviderStub, provider: str
) -> None:
    conversation, ingested = start(stub, provider, Turn(scripted_calls(provider, "search", "book")))
    closure = ToolCallClosure()
    superseded = []

    async def main() -> None:
        release = asyncio.Event()

        async def search(city: str, n: int) -> str:
            return "3 flights"

        async def book(city: str, n: int) -> str:
            await release.wait()
            return "booked (too late)"

        async def user_types() -> None:
            await asyncio.sleep(0.02)
            superseded.append(closure.begin([]).superseded)  # the new turn: the pending call is closed first
            release.set()

        typing = asyncio.create_task(user_types())
        report = await run_tool_calls(closure, ingested.calls, {"search": search, "book": book})
        await typing
        assert report.ending == "superseded"
        assert [late.value for late in report.late] == ["booked (too late)"]

    asyncio.run(asyncio.wait_for(main(), NEVER))
    [old] = superseded
    assert old is not None
    assert [c.state for c in old.calls] == ["success", "cancelled"]
    assert_accepted(stub, conversation.send(closure, old, user_text="Actually, make it Lyon."))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_scenario_4_naive_the_new_user_message_right_after_the_calls_is_refused(
    stub: ProviderStub, provider: str
) -> None:
    conversation, ingested = start(stub, provider, Turn(scripted_calls(provider, "search", "book")))
    search, _ = ingested.calls
    with pytest.raises(RefusedError) as caught:  # search finished, book is pending, the user types
        conversation.send_naive([(search, "3 flights")], user_text="Actually, make it Lyon.")
    assert_refused(caught, MISSING[provider])


# -- 5. a streamed batch whose last call was truncated ------------------------------------------------------------


@pytest.mark.parametrize("provider", STREAMING)
def test_scenario_5_a_truncated_last_call_is_announced_answered_with_an_error_and_never_run(
    stub: ProviderStub, provider: str
) -> None:
    turn = Turn(scripted_calls(provider, "weather", "hotels", "book"), truncate_last=True)
    conversation, ingested = start(stub, provider, turn, stream=True)
    assert [c.runnable for c in ingested.calls] == [True, True, False]
    ran: list[str] = []

    async def tool(call: ToolCall) -> str:
        ran.append(call.name)
        return f"{call.name}: ok"

    closure = ToolCallClosure()
    report = asyncio.run(asyncio.wait_for(run_tool_calls(closure, ingested.calls, tool), NEVER))
    assert ran == ["weather", "hotels"]
    assert report.snapshot is not None
    last = report.snapshot.calls[2].settlement
    assert last is not None
    assert (last.status, last.code) == ("error", "invalid_tool_call")
    assert_accepted(stub, conversation.send(closure, report.snapshot))


@pytest.mark.parametrize("provider", STREAMING)
def test_scenario_5_naive_dropping_the_unparseable_call_is_refused(stub: ProviderStub, provider: str) -> None:
    turn = Turn(scripted_calls(provider, "weather", "hotels", "book"), truncate_last=True)
    conversation, ingested = start(stub, provider, turn, stream=True)
    results = []
    for call in ingested.calls:
        try:
            json.loads(call.arguments_json)
        except json.JSONDecodeError:
            continue  # the naive loop skips what it cannot parse
        results.append((call, "ok"))
    assert len(results) == 2
    with pytest.raises(RefusedError) as caught:
        conversation.send_naive(results)
    assert_refused(caught, MISSING[provider])


CONVERSATIONS_EXPORT = {
    "openai_chat": ToolCallClosure.to_openai_chat_completions,
    "openai_responses": ToolCallClosure.to_openai_responses,
    "anthropic": ToolCallClosure.to_anthropic_tool_results,
    "gemini": ToolCallClosure.to_gemini_function_responses,
    "bedrock": ToolCallClosure.to_bedrock_tool_results,
}


# -- Responses: previous_response_id, and the fc_… / call_id trap ---------------------------------------------


def test_responses_with_previous_response_id_sends_the_results_alone_and_is_accepted(stub: ProviderStub) -> None:
    stub.script("openai_responses", [Turn(scripted_calls("openai_responses", "weather", "calendar", "hotels"))])
    client = openai.OpenAI(base_url=f"{stub.base_url}/v1", api_key="stub", max_retries=0, timeout=30)
    response = client.responses.create(model="gpt-stub", input="Plan my trip to Paris.")
    ingested = openai_responses.ingest(response)
    assert [c.id for c in ingested.calls] == ["call_weather", "call_calendar", "call_hotels"]
    assert all(item.id.startswith("fc_") for item in response.output)  # type: ignore[union-attr]
    closure = ToolCallClosure()
    report = asyncio.run(asyncio.wait_for(run_tool_calls(closure, ingested.calls, SIBLINGS), NEVER))
    outputs = closure.to_openai_responses(report.snapshot)
    following = client.responses.create(
        model="gpt-stub",
        previous_response_id=response.id,
        input=openai_responses.next_input(response, outputs, previous_response_id=True),
    )
    assert following.output_text == "Done."
    assert stub.refusals() == []


def test_responses_naive_pairing_on_the_fc_item_id_is_refused(stub: ProviderStub) -> None:
    """The trap of issue 9: ``item.id`` (``fc_…``) where ``call_id`` belongs."""
    stub.script("openai_responses", [Turn(scripted_calls("openai_responses", "weather"))])
    client = openai.OpenAI(base_url=f"{stub.base_url}/v1", api_key="stub", max_retries=0, timeout=30)
    response = client.responses.create(model="gpt-stub", input="Plan my trip to Paris.")
    [item] = response.output
    with pytest.raises(openai.BadRequestError):
        client.responses.create(
            model="gpt-stub",
            previous_response_id=response.id,
            input=[{"type": "function_call_output", "call_id": item.id, "output": "sunny"}],  # type: ignore[union-attr,typeddict-item]
        )
    assert stub.refusals() == [f"No tool call found for function call output with call_id {item.id}."]  # type: ignore[union-attr]
