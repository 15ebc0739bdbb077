"""Offline runs of the examples: start the local provider stub (``tests/provider_stub.py``) with a scripted model.

Every example takes ``--base-url URL`` to talk to a real (or other) server;
without it, it starts the stub on 127.0.0.1 and scripts one model turn that
announces two tool calls, then a final answer.  The stub enforces the
provider's pairing rules, so a transcript the library got wrong is refused
with the provider's own error.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from provider_stub import Call, ProviderStub, Turn

__all__ = ["MCP_SERVER", "mcp_turns_server", "server", "streaming_server"]

MCP_SERVER = Path(__file__).resolve().parents[1] / "tests" / "mcp_server.py"
"""The MCP server the MCP examples start (a real one, written with the ``mcp`` package's server API)."""

# How many events of the second streamed turn arrive before the connection drops: the first call has
# arrived whole (or, for Chat, its last fragment), the second has started but not finished.
_CUT_AFTER = {"openai_chat": 5, "openai_responses": 7, "anthropic": 6, "gemini": 1, "bedrock": 6}


def _calls(provider: str) -> tuple[Call, ...]:
    return tuple(
        Call(_id(provider, name), f"get_{name}", json.dumps({"city": "Paris"})) for name in ("weather", "forecast")
    )


@contextlib.contextmanager
def server(provider: str, argv: list[str] | None) -> Iterator[str]:
    """The base URL to use: ``--base-url`` if given, else a stub started for the duration."""
    final = Turn(text="It is sunny in Paris; the forecast timed out.")
    with _serve(provider, argv, [Turn(_calls(provider)), final]) as base_url:
        yield base_url


@contextlib.contextmanager
def streaming_server(provider: str, argv: list[str] | None) -> Iterator[str]:
    """Like :func:`server`, for the streaming examples: three streamed turns, the second one cut.

    1. text, then two calls (one answers, one times out);
    2. two more calls, and the connection drops while the second is streaming;
    3. the final text.
    """
    lyon, nice = (
        Call(_id(provider, f"weather_{city}"), "get_weather", json.dumps({"city": city})) for city in ("Lyon", "Nice")
    )
    turns = [
        Turn(_calls(provider), preamble="Let me check the weather and the forecast."),
        Turn((lyon, nice), cut_after=_CUT_AFTER[provider]),
        Turn(text="It is sunny in Paris; the forecast timed out."),
    ]
    with _serve(provider, argv, turns) as base_url:
        yield base_url


@contextlib.contextmanager
def mcp_turns_server(
    provider: str, argv: list[str] | None, calls: list[tuple[str, dict[str, object]]]
) -> Iterator[str]:
    """For the MCP examples: one model turn calling the MCP tools ``calls`` (name, arguments), then the final text."""
    turn = Turn(
        tuple(Call(_id(provider, f"{name}_{i}"), name, json.dumps(args)) for i, (name, args) in enumerate(calls))
    )
    with _serve(provider, argv, [turn, Turn(text="Here is the chart; the slow report timed out.")]) as base_url:
        yield base_url


def _id(provider: str, name: str) -> str | None:
    prefix = {"openai_chat": "call_", "openai_responses": "call_", "anthropic": "toolu_", "bedrock": "tooluse_"}
    return None if provider == "gemini" else f"{prefix[provider]}{name}"


@contextlib.contextmanager
def _serve(provider: str, argv: list[str] | None, turns: list[Turn]) -> Iterator[str]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", help="a server speaking the provider's API (default: the local stub)")
    args = parser.parse_args(argv)
    if args.base_url:
        yield args.base_url
        return
    with ProviderStub(max_requests=10) as stub:
        stub.script(provider, turns)
        yield stub.base_url
        refusals = stub.refusals()
    if refusals:
        raise SystemExit(f"the stub refused a request: {refusals[0]}")
