"""A local provider stub: a real HTTP server on 127.0.0.1 that speaks just enough of five provider APIs.

Theory of operation
-------------------
The tests (and the examples) point the real SDK clients at this server with
``base_url`` / ``endpoint_url``.  It plays the model from a script: each
request is first checked against the provider's *pairing rules* — every tool
call answered exactly once, right after it, no orphan, no duplicate — and a
transcript that breaks one is refused the way the provider refuses it (status
400, the provider's error body, the provider's exact message, providers.md
§3).  A transcript that passes gets the next scripted model turn: tool calls,
or a final text when the script is exhausted.

==================  =====================================  ===============================
provider            path                                   client
==================  =====================================  ===============================
OpenAI Chat         ``POST /v1/chat/completions``          ``openai.OpenAI(base_url=…/v1)``
OpenAI Responses    ``POST /v1/responses``                 ``openai.OpenAI(base_url=…/v1)``
Anthropic Messages  ``POST /v1/messages``                  ``anthropic.Anthropic(base_url=…)``
Gemini              ``POST /v1/models/M:generateContent``  ``genai.Client(http_options=…)``
Bedrock Converse    ``POST /model/M/converse``             ``boto3.client(endpoint_url=…)``
==================  =====================================  ===============================

Every API also streams: Chat, Responses and Anthropic on ``"stream": true``
(server-sent events), Gemini on ``:streamGenerateContent?alt=sse``, Bedrock
on ``/converse-stream`` (AWS's binary event-stream framing, each message
with its CRCs, what boto3 decodes).  A scripted turn can end truncated (the
last call's arguments cut in half and the stop reason ``length`` /
``max_output_tokens`` / ``max_tokens``), or be *cut*: ``Turn.cut_after``
events are sent and the connection closes without the end of the chunked
body, the way a dropped connection looks to the client.  A turn's
``preamble`` is text the model says before its calls.

Messages not in providers.md (the stub's own wording, marked ``STUB:``):
a duplicate Responses output or Anthropic result for one id, a missing
Bedrock result, and a Gemini response part whose name does not match.

Bounded traffic: at most ``max_requests`` requests (then 429 for everything)
and ``max_body_bytes`` per body (then 413).  Every request is recorded with
the answer it got, so a test can say which one was refused and why.

Content parts (D22): every request is also checked against the provider's
native content rules for tool results (``stub_content.py``).
"""

from __future__ import annotations

import json
import struct
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from stub_content import ContentRefusalError, check_content

__all__ = ["Call", "ProviderStub", "Recorded", "Turn"]


@dataclass(frozen=True)
class Call:
    """One scripted tool call: the pairing id, the tool's name and its arguments as JSON text."""

    id: str | None
    name: str
    arguments: str = "{}"


@dataclass(frozen=True)
class Turn:
    """One scripted model turn: tool calls (optionally truncated or cut in a stream), or a final text."""

    calls: tuple[Call, ...] = ()
    text: str = "Done."
    truncate_last: bool = False
    preamble: str = ""  # text before the calls, in the same turn
    cut_after: int | None = None  # in a stream: the number of events sent before the connection drops


@dataclass(frozen=True)
class Recorded:
    provider: str
    path: str
    body: Any
    status: int
    error: str | None


@dataclass(frozen=True)
class _Streamed:
    """A streamed answer: its events (or, for Bedrock, its binary frames) and the turn they play."""

    turn: Turn
    events: Iterator[Any]


class StubRefusalError(Exception):
    """A pairing-rule violation: the provider's status, error message (and Bedrock's error type)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


# -- the pairing rules --------------------------------------------------------------------------------------------


def check_chat(messages: list[dict[str, Any]]) -> None:
    """OpenAI Chat: tool messages right after the assistant message with ``tool_calls``, one per id."""
    orphan = (
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."
    )
    position = 0
    while position < len(messages):
        message = messages[position]
        if message.get("role") == "tool":
            raise StubRefusalError(orphan)
        position += 1
        if message.get("role") != "assistant" or not message.get("tool_calls"):
            continue
        expected = [c["id"] for c in message["tool_calls"]]
        answered: dict[str, int] = {}
        while position < len(messages) and messages[position].get("role") == "tool":
            call_id = str(messages[position].get("tool_call_id"))
            if call_id not in expected:
                raise StubRefusalError(orphan)
            if call_id in answered:
                raise StubRefusalError(
                    f"Invalid parameter: Duplicate value for 'tool_call_id' of '{call_id}', "
                    f"in messages[{answered[call_id]}] and messages[{position}]."
                )
            answered[call_id] = position
            position += 1
        missing = [i for i in expected if i not in answered]
        if missing:
            raise StubRefusalError(
                "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(missing)}"
            )


def check_responses(items: list[dict[str, Any]]) -> None:
    """OpenAI Responses: every ``function_call`` answered by one ``function_call_output`` with its ``call_id``."""
    calls: dict[str, dict[str, Any]] = {}
    seen_ids: set[str] = set()
    outputs: set[str] = set()
    for item in items:
        item_id = item.get("id")
        if item_id is not None:
            if item_id in seen_ids:
                raise StubRefusalError(
                    f"Duplicate item found with id {item_id}. Remove duplicate items from your input and try again."
                )
            seen_ids.add(item_id)
        if item.get("type") == "function_call":
            calls[item["call_id"]] = item
        elif item.get("type") == "function_call_output":
            call_id = item.get("call_id")
            if call_id not in calls:
                raise StubRefusalError(f"No tool call found for function call output with call_id {call_id}.")
            if call_id in outputs:  # STUB: not in providers.md
                raise StubRefusalError(f"Duplicate function call output found for call_id {call_id}.")
            outputs.add(call_id)
    for call_id in calls:
        if call_id not in outputs:
            raise StubRefusalError(f"No tool output found for function call {call_id}.")


def check_anthropic(messages: list[dict[str, Any]]) -> None:
    """Anthropic: ``tool_result`` blocks first in the next user message, one per ``tool_use`` id."""
    previous_uses: list[str] = []
    previous_index = -1
    for index, message in enumerate(messages):
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        if message.get("role") == "user":
            leading: list[str] = []
            for position, block in enumerate(blocks):
                if block.get("type") != "tool_result":
                    continue
                where = f"messages.{index}.content.{position}"
                if not previous_uses:
                    raise StubRefusalError(
                        f"{where}: `tool_result` block(s) provided when previous message does not contain any "
                        "`tool_use` blocks"
                    )
                if block.get("tool_use_id") not in previous_uses:
                    raise StubRefusalError(
                        f"{where}: unexpected `tool_use_id` found in `tool_result` blocks: {block.get('tool_use_id')}. "
                        "Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                    )
                if block.get("tool_use_id") in leading:  # STUB: not in providers.md
                    raise StubRefusalError(
                        f"{where}: duplicate `tool_use_id` found in `tool_result` blocks: {block.get('tool_use_id')}."
                    )
                if position == len(leading):  # only the results before any other block count ("FIRST")
                    leading.append(block["tool_use_id"])
            _missing_anthropic(previous_uses, leading, previous_index)
            previous_uses = []
        else:
            _missing_anthropic(previous_uses, [], previous_index)
            previous_uses = [b["id"] for b in blocks if b.get("type") == "tool_use"]
            previous_index = index
    _missing_anthropic(previous_uses, [], previous_index)


def _missing_anthropic(uses: list[str], answered: list[str], index: int) -> None:
    missing = [u for u in uses if u not in answered]
    if missing:
        raise StubRefusalError(
            f"messages.{index}: `tool_use` ids were found without `tool_result` blocks immediately after: "
            f"{', '.join(missing)}. Each `tool_use` block must have a corresponding `tool_result` block in the "
            "next message."
        )


_MEDIA_PARTS = ("inlineData", "inline_data", "fileData", "file_data")


def _siblings(parts: list[dict[str, Any]]) -> int:
    """How many media parts a turn has beside its function responses (Gemini 2.x counts them as responses)."""
    return sum(1 for part in parts if any(key in part for key in _MEDIA_PARTS))


def check_gemini(contents: list[dict[str, Any]], *, gemini_2: bool = False) -> None:
    """Gemini: a turn answering function calls has exactly as many function responses as the turn before had calls.

    On Gemini 2.x (``gemini_2``: a model whose name is not ``gemini-3…``) media sent beside the function responses,
    as sibling ``inlineData`` / ``fileData`` parts of the answering turn, count as response parts: the count check
    fails with the same text (gemini-cli#16135; field-notes A3).
    """
    count = (
        "Please ensure that the number of function response parts is equal to the number of function call "
        "parts of the function call turn."
    )
    for index, content in enumerate(contents):
        parts = content.get("parts") or []
        calls = [p["functionCall"] for p in parts if "functionCall" in p]
        responses = [p["functionResponse"] for p in parts if "functionResponse" in p]
        before = (contents[index - 1].get("parts") or []) if index > 0 else []
        called = [p["functionCall"] for p in before if "functionCall" in p]
        after = (contents[index + 1].get("parts") or []) if index + 1 < len(contents) else []
        answered = [p["functionResponse"] for p in after if "functionResponse" in p]
        counted = len(answered) + (_siblings(after) if gemini_2 and answered else 0)
        counting = len(responses) + (_siblings(parts) if gemini_2 and responses else 0)
        if (calls and counted != len(calls)) or (responses and counting != len(called)):
            raise StubRefusalError(count)
        for call, response in zip(calls, answered, strict=False):
            if call.get("name") != response.get("name"):  # STUB: not in providers.md
                raise StubRefusalError(
                    f"Function response name {response.get('name')!r} does not match the call {call.get('name')!r}."
                )


def check_bedrock(messages: list[dict[str, Any]]) -> None:
    """Bedrock Converse: roles alternate; the next user turn answers the previous turn's ``toolUse`` blocks, no more."""
    uses: list[str] = []
    for index, message in enumerate(messages):
        if index > 0 and message.get("role") == messages[index - 1].get("role"):  # STUB: not in providers.md
            raise StubRefusalError(
                "A conversation must alternate between user and assistant roles. Make sure the conversation "
                "alternates between user and assistant roles and try again."
            )
        blocks = message.get("content") or []
        if message.get("role") == "user":
            results = [b["toolResult"] for b in blocks if "toolResult" in b]
            if len(results) > len(uses):
                raise StubRefusalError(
                    "The number of toolResult blocks exceeds the number of toolUse blocks of previous turn"
                )
            for result in results:
                if result.get("status") == "error" and not result.get("content"):
                    raise StubRefusalError(
                        f"The content field in the toolResult block at messages.{index} is not valid: toolResult "
                        "cannot be empty when status value is error"
                    )
            missing = [u for u in uses if u not in {r.get("toolUseId") for r in results}]
            if missing:  # STUB: not in providers.md
                raise StubRefusalError(
                    f"Expected toolResult blocks at messages.{index}.content for the following Ids: {', '.join(missing)}"
                )
            uses = []
        else:
            uses = [b["toolUse"]["toolUseId"] for b in blocks if "toolUse" in b]


# -- the server ---------------------------------------------------------------------------------------------------


class ProviderStub:
    """The server: ``with ProviderStub() as stub: stub.script("openai_chat", [Turn(...)]) …``."""

    def __init__(self, *, max_requests: int = 60, max_body_bytes: int = 1_000_000) -> None:
        self.max_requests = max_requests
        self.max_body_bytes = max_body_bytes
        self.requests: list[Recorded] = []
        self._scripts: dict[str, list[Turn]] = {}
        self._responses: dict[str, list[dict[str, Any]]] = {}  # Responses API: id -> the whole conversation so far
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._counter = 0

    # lifecycle

    def __enter__(self) -> ProviderStub:
        stub = self

        class Handler(_Handler):
            owner = stub

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        server = self._server
        self._thread = threading.Thread(target=lambda: server.serve_forever(0.05), name="provider-stub", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        assert self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)

    @property
    def base_url(self) -> str:
        assert self._server is not None
        port = self._server.server_address[1]
        return f"http://127.0.0.1:{port}"

    # scripting and records

    def script(self, provider: str, turns: list[Turn]) -> None:
        with self._lock:
            self._scripts.setdefault(provider, []).extend(turns)

    def refusals(self) -> list[str]:
        return [r.error for r in self.requests if r.error is not None]

    def _next_turn(self, provider: str) -> Turn:
        with self._lock:
            queue = self._scripts.get(provider, [])
            return queue.pop(0) if queue else Turn()

    def _next_id(self, prefix: str) -> str:
        with self._lock:
            self._counter += 1
            return f"{prefix}{self._counter}"


class _Handler(BaseHTTPRequestHandler):
    owner: ProviderStub
    server_version = "provider-stub/1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the records say what happened
        pass

    def do_POST(self) -> None:
        stub = self.owner
        path = self.path.split("?")[0]
        provider = _provider_of(path)
        length = int(self.headers.get("content-length") or 0)
        with stub._lock:
            over = len(stub.requests) >= stub.max_requests
        if over:
            self._record_and_send(
                provider, path, None, 429, "too many requests for the stub", {"error": {"message": "too many requests"}}
            )
            return
        if length > stub.max_body_bytes:
            self._record_and_send(provider, path, None, 413, "body too large", {"error": {"message": "body too large"}})
            return
        body = json.loads(self.rfile.read(length) or b"{}")
        try:
            answer = self._answer(provider, path, body)
        except StubRefusalError as refusal:
            self._record_and_send(provider, path, body, refusal.status, refusal.message, _error_body(provider, refusal))
            return
        with stub._lock:
            stub.requests.append(Recorded(provider, path, body, 200, None))
        if isinstance(answer, dict):
            self._send_json(200, answer)
        elif provider == "bedrock":
            self._send_chunked("application/vnd.amazon.eventstream", answer.events, answer.turn.cut_after)
        else:
            self._send_events(answer.events, answer.turn.cut_after)

    def _record_and_send(
        self, provider: str, path: str, body: Any, status: int, error: str, payload: dict[str, Any]
    ) -> None:
        with self.owner._lock:
            self.owner.requests.append(Recorded(provider, path, body, status, error))
        extra = {"x-amzn-ErrorType": "ValidationException"} if provider == "bedrock" and status == 400 else {}
        self._send_json(status, payload, extra)

    def _send_json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_events(self, events: Iterator[tuple[str | None, dict[str, Any] | str]], cut_after: int | None) -> None:
        """Server-sent events in a chunked body; cut after ``cut_after`` events (no end of body), if given."""
        self._send_chunked("text/event-stream", (_sse(name, data) for name, data in events), cut_after)

    def _send_chunked(self, content_type: str, frames: Iterator[bytes], cut_after: int | None) -> None:
        self.protocol_version = "HTTP/1.1"  # chunked transfer needs 1.1 (the JSON answers stay 1.0)
        self.send_response(200)
        self.send_header("content-type", content_type)
        self.send_header("transfer-encoding", "chunked")
        self.send_header("connection", "close")
        self.end_headers()
        for sent, frame in enumerate(frames):
            if cut_after is not None and sent >= cut_after:
                break
            self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
            self.wfile.flush()
        else:
            self.wfile.write(b"0\r\n\r\n")  # the end of the body: only a stream that was not cut has it
        self.wfile.flush()
        self.close_connection = True

    def _answer(self, provider: str, path: str, body: dict[str, Any]) -> dict[str, Any] | _Streamed:
        stub = self.owner
        try:  # the native content rules (D22): tests/stub_content.py
            check_content(provider, path, body)
        except ContentRefusalError as refusal:
            raise StubRefusalError(refusal.message) from None
        if provider == "openai_chat":
            check_chat(body["messages"])
            turn = stub._next_turn(provider)
            return (
                _Streamed(turn, _chat_stream(stub, body, turn)) if body.get("stream") else _chat_body(stub, body, turn)
            )
        if provider == "openai_responses":
            conversation = _responses_input(stub, body)
            check_responses(conversation)
            turn = stub._next_turn(provider)
            response_id = stub._next_id("resp_")
            output = _responses_output(stub, turn)
            with stub._lock:
                stub._responses[response_id] = conversation + output
            if body.get("stream"):
                return _Streamed(turn, _responses_stream(body, turn, response_id, output))
            return _responses_body(body, turn, response_id, output)
        if provider == "anthropic":
            check_anthropic(body["messages"])
            turn = stub._next_turn(provider)
            if body.get("stream"):
                return _Streamed(turn, _anthropic_stream(stub, body, turn))
            return _anthropic_body(stub, body, turn)
        if provider == "gemini":
            check_gemini(body["contents"], gemini_2="gemini-3" not in path)
            turn = stub._next_turn(provider)
            response_id = stub._next_id("gresp")
            if ":stream" in path:
                return _Streamed(turn, _gemini_stream(turn, response_id))
            return _gemini_body(turn, response_id)
        if provider == "bedrock":
            check_bedrock(body["messages"])
            turn = stub._next_turn(provider)
            return _Streamed(turn, _bedrock_stream(turn)) if path.endswith("/converse-stream") else _bedrock_body(turn)
        raise StubRefusalError(f"the stub does not serve {path}", 404)


def _provider_of(path: str) -> str:
    if path.endswith("/chat/completions"):
        return "openai_chat"
    if path.endswith("/responses"):
        return "openai_responses"
    if path.endswith("/messages"):
        return "anthropic"
    if ":generateContent" in path or ":streamGenerateContent" in path:
        return "gemini"
    if path.endswith(("/converse", "/converse-stream")):
        return "bedrock"
    return "unknown"


def _error_body(provider: str, refusal: StubRefusalError) -> dict[str, Any]:
    if provider in ("openai_chat", "openai_responses"):
        return {
            "error": {"message": refusal.message, "type": "invalid_request_error", "param": "messages", "code": None}
        }
    if provider == "anthropic":
        return {"type": "error", "error": {"type": "invalid_request_error", "message": refusal.message}}
    if provider == "gemini":
        return {"error": {"code": refusal.status, "message": refusal.message, "status": "INVALID_ARGUMENT"}}
    return {"message": refusal.message}


def _sse(name: str | None, data: dict[str, Any] | str) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data)
    return ((f"event: {name}\n" if name else "") + f"data: {text}\n\n").encode()


def _halves(text: str) -> tuple[str, str]:
    middle = max(1, len(text) // 2)
    return text[:middle], text[middle:]


# OpenAI Chat


def _chat_body(stub: ProviderStub, body: dict[str, Any], turn: Turn) -> dict[str, Any]:
    content = (turn.preamble or None) if turn.calls else turn.text
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    if turn.calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in turn.calls
        ]
    return {
        "id": stub._next_id("chatcmpl-"),
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "stub"),
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if turn.calls else "stop", "logprobs": None}
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def _chat_stream(stub: ProviderStub, body: dict[str, Any], turn: Turn) -> Iterator[tuple[None, dict[str, Any] | str]]:
    chunk_id = stub._next_id("chatcmpl-")

    def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[None, dict[str, Any]]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return None, {
            "id": chunk_id,
            "object": "chat.completion.chunk",
            "created": 0,
            "model": body.get("model", "stub"),
            "choices": [choice],
        }

    yield chunk({"role": "assistant", "content": (turn.preamble or None) if turn.calls else turn.text})
    for index, call in enumerate(turn.calls):
        first, second = _halves(call.arguments)
        truncated = turn.truncate_last and index == len(turn.calls) - 1
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": ""},
                    }
                ]
            }
        )
        yield chunk({"tool_calls": [{"index": index, "function": {"arguments": first}}]})
        if not truncated:
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": second}}]})
    yield chunk({}, "length" if turn.truncate_last else ("tool_calls" if turn.calls else "stop"))
    yield None, "[DONE]"


# OpenAI Responses


def _responses_input(stub: ProviderStub, body: dict[str, Any]) -> list[dict[str, Any]]:
    given = body.get("input")
    items = [{"type": "message", "role": "user", "content": given}] if isinstance(given, str) else list(given or [])
    previous = body.get("previous_response_id")
    if previous is None:
        return items
    with stub._lock:
        earlier = stub._responses.get(previous)
    if earlier is None:
        raise StubRefusalError(f"Previous response with id '{previous}' not found.", 404)
    return earlier + items


def _responses_message(stub: ProviderStub, text: str) -> dict[str, Any]:
    content = {"type": "output_text", "text": text, "annotations": []}
    return {
        "type": "message",
        "id": stub._next_id("msg_"),
        "role": "assistant",
        "status": "completed",
        "content": [content],
    }


def _responses_output(stub: ProviderStub, turn: Turn) -> list[dict[str, Any]]:
    if not turn.calls:
        return [_responses_message(stub, turn.text)]
    preamble = [_responses_message(stub, turn.preamble)] if turn.preamble else []
    return preamble + [
        {
            "type": "function_call",
            "id": stub._next_id("fc_"),
            "call_id": c.id,
            "name": c.name,
            "arguments": c.arguments,
            "status": "completed",
        }
        for c in turn.calls
    ]


def _response(body: dict[str, Any], response_id: str, output: list[dict[str, Any]], status: str) -> dict[str, Any]:
    return {
        "id": response_id,
        "object": "response",
        "created_at": 0,
        "model": body.get("model", "stub"),
        "status": status,
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 1,
            "output_tokens": 1,
            "total_tokens": 2,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def _responses_body(body: dict[str, Any], turn: Turn, response_id: str, output: list[dict[str, Any]]) -> dict[str, Any]:
    return _response(body, response_id, output, "completed")


def _responses_stream(
    body: dict[str, Any], turn: Turn, response_id: str, output: list[dict[str, Any]]
) -> Iterator[tuple[str, dict[str, Any]]]:
    sequence = iter(range(1_000_000))

    def event(kind: str, **fields: Any) -> tuple[str, dict[str, Any]]:
        return kind, {"type": kind, "sequence_number": next(sequence), **fields}

    yield event("response.created", response=_response(body, response_id, [], "in_progress"))
    sent: list[dict[str, Any]] = []
    for index, item in enumerate(output):
        truncated = turn.truncate_last and index == len(output) - 1
        if item["type"] != "function_call":
            yield event("response.output_item.added", output_index=index, item=item)
            yield event("response.output_item.done", output_index=index, item=item)
            sent.append(item)
            continue
        yield event(
            "response.output_item.added", output_index=index, item={**item, "arguments": "", "status": "in_progress"}
        )
        first, second = _halves(item["arguments"])
        yield event("response.function_call_arguments.delta", item_id=item["id"], output_index=index, delta=first)
        if truncated:
            sent.append({**item, "arguments": first, "status": "incomplete"})
            break
        yield event("response.function_call_arguments.delta", item_id=item["id"], output_index=index, delta=second)
        yield event(
            "response.function_call_arguments.done", item_id=item["id"], output_index=index, arguments=item["arguments"]
        )
        yield event("response.output_item.done", output_index=index, item=item)
        sent.append(item)
    status = "incomplete" if turn.truncate_last else "completed"
    yield event(f"response.{status}", response=_response(body, response_id, sent, status))


# Anthropic Messages


def _anthropic_message(
    stub: ProviderStub, body: dict[str, Any], content: list[dict[str, Any]], stop: str | None
) -> dict[str, Any]:
    return {
        "id": stub._next_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "stub"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def _anthropic_body(stub: ProviderStub, body: dict[str, Any], turn: Turn) -> dict[str, Any]:
    if not turn.calls:
        return _anthropic_message(stub, body, [{"type": "text", "text": turn.text}], "end_turn")
    content: list[dict[str, Any]] = [{"type": "text", "text": turn.preamble}] if turn.preamble else []
    content += [{"type": "tool_use", "id": c.id, "name": c.name, "input": json.loads(c.arguments)} for c in turn.calls]
    return _anthropic_message(stub, body, content, "tool_use")


def _anthropic_text(index: int, text: str) -> Iterator[tuple[str, dict[str, Any]]]:
    block = {"type": "text", "text": ""}
    yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": block}
    delta = {"type": "text_delta", "text": text}
    yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
    yield "content_block_stop", {"type": "content_block_stop", "index": index}


def _anthropic_stream(stub: ProviderStub, body: dict[str, Any], turn: Turn) -> Iterator[tuple[str, dict[str, Any]]]:
    yield "message_start", {"type": "message_start", "message": _anthropic_message(stub, body, [], None)}
    if not turn.calls or turn.preamble:
        yield from _anthropic_text(0, turn.preamble if turn.calls else turn.text)
    first_index = 1 if turn.preamble else 0
    for position, call in enumerate(turn.calls):
        index = first_index + position
        truncated = turn.truncate_last and position == len(turn.calls) - 1
        block: dict[str, Any] = {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": block}
        first, second = _halves(call.arguments)
        for piece in (first,) if truncated else (first, second):
            delta = {"type": "input_json_delta", "partial_json": piece}
            yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        if not truncated:
            yield "content_block_stop", {"type": "content_block_stop", "index": index}
    stop = "max_tokens" if turn.truncate_last else ("tool_use" if turn.calls else "end_turn")
    yield (
        "message_delta",
        {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 1}},
    )
    yield "message_stop", {"type": "message_stop"}


# Gemini


def _gemini_parts(turn: Turn) -> list[dict[str, Any]]:
    """The model's parts: the preamble or the final text, and one functionCall part per call."""
    parts: list[dict[str, Any]] = [{"text": turn.preamble}] if turn.calls and turn.preamble else []
    for call in turn.calls:
        function_call: dict[str, Any] = {"name": call.name, "args": json.loads(call.arguments)}
        if call.id is not None:
            function_call["id"] = call.id
        parts.append({"functionCall": function_call})
    if not turn.calls:
        parts.append({"text": turn.text})
    return parts


def _gemini_response(parts: list[dict[str, Any]], response_id: str, finish: str | None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    return {
        "candidates": [candidate],
        "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
        "modelVersion": "stub",
        "responseId": response_id,
    }


def _gemini_body(turn: Turn, response_id: str) -> dict[str, Any]:
    return _gemini_response(_gemini_parts(turn), response_id, "STOP")


def _gemini_stream(turn: Turn, response_id: str) -> Iterator[tuple[None, dict[str, Any]]]:
    """One chunk per part (parallel calls arrive in separate chunks); the last one carries the finishReason."""
    parts = _gemini_parts(turn)
    for number, part in enumerate(parts):
        yield None, _gemini_response([part], response_id, "STOP" if number == len(parts) - 1 else None)


# Bedrock


def _bedrock_body(turn: Turn) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"text": turn.preamble}] if turn.calls and turn.preamble else []
    if turn.calls:
        content += [
            {"toolUse": {"toolUseId": c.id, "name": c.name, "input": json.loads(c.arguments)}} for c in turn.calls
        ]
    else:
        content = [{"text": turn.text}]
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": "tool_use" if turn.calls else "end_turn",
        "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
        "metrics": {"latencyMs": 1},
    }


def _bedrock_events(turn: Turn) -> Iterator[tuple[str, dict[str, Any]]]:
    """The ``converse_stream`` events of a turn: (event type, payload)."""
    yield "messageStart", {"role": "assistant"}
    text = turn.preamble if turn.calls else turn.text
    first_index = 0
    if text:
        yield "contentBlockDelta", {"delta": {"text": text}, "contentBlockIndex": 0}
        yield "contentBlockStop", {"contentBlockIndex": 0}
        first_index = 1
    for position, call in enumerate(turn.calls):
        index = first_index + position
        truncated = turn.truncate_last and position == len(turn.calls) - 1
        start = {"toolUse": {"toolUseId": call.id, "name": call.name}}
        yield "contentBlockStart", {"start": start, "contentBlockIndex": index}
        first, second = _halves(call.arguments)
        for piece in (first,) if truncated else (first, second):
            yield "contentBlockDelta", {"delta": {"toolUse": {"input": piece}}, "contentBlockIndex": index}
        if not truncated:
            yield "contentBlockStop", {"contentBlockIndex": index}
    stop = "max_tokens" if turn.truncate_last else ("tool_use" if turn.calls else "end_turn")
    yield "messageStop", {"stopReason": stop}
    yield "metadata", {"usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}, "metrics": {"latencyMs": 1}}


def _bedrock_stream(turn: Turn) -> Iterator[bytes]:
    for kind, payload in _bedrock_events(turn):
        yield _event_message(kind, payload)


def _event_message(event_type: str, payload: dict[str, Any]) -> bytes:
    """One message of AWS's binary event stream (``application/vnd.amazon.eventstream``), as boto3 decodes it.

    prelude (total length, headers length, CRC32 of those 8 bytes), headers
    (name length, name, type 7 = string, value length, value), payload, and
    the CRC32 of everything before it; integers big-endian.
    """
    headers = b""
    for name, value in ((":event-type", event_type), (":content-type", "application/json"), (":message-type", "event")):
        encoded = value.encode()
        headers += bytes([len(name)]) + name.encode() + b"\x07" + struct.pack("!H", len(encoded)) + encoded
    body = json.dumps(payload).encode()
    total = 12 + len(headers) + len(body) + 4
    prelude = struct.pack("!II", total, len(headers))
    prelude += struct.pack("!I", zlib.crc32(prelude))
    message = prelude + headers + body
    return message + struct.pack("!I", zlib.crc32(message))
