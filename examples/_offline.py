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

__all__ = ["server"]


def _calls(provider: str) -> tuple[Call, ...]:
    prefix = {"openai_chat": "call_", "openai_responses": "call_", "anthropic": "toolu_", "bedrock": "tooluse_"}
    ids = ("weather", "forecast")
    return tuple(
        Call(
            None if provider == "gemini" else f"{prefix[provider]}{name}", f"get_{name}", json.dumps({"city": "Paris"})
        )
        for name in ids
    )


@contextlib.contextmanager
def server(provider: str, argv: list[str] | None) -> Iterator[str]:
    """The base URL to use: ``--base-url`` if given, else a stub started for the duration."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", help="a server speaking the provider's API (default: the local stub)")
    args = parser.parse_args(argv)
    if args.base_url:
        yield args.base_url
        return
    with ProviderStub(max_requests=10) as stub:
        stub.script(provider, [Turn(_calls(provider)), Turn(text="It is sunny in Paris; the forecast timed out.")])
        yield stub.base_url
        refusals = stub.refusals()
    if refusals:
        raise SystemExit(f"the stub refused a request: {refusals[0]}")
