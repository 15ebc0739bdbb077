"""Mistral's id rule (exactly 9 of [A-Za-z0-9], providers.md §2): a deterministic mapping and its inverse."""

from __future__ import annotations

import hashlib
import re

import pytest

from tool_call_closure import ToolCallClosure, UsageError
from tool_call_closure.providers import mistral, openai_chat

VALID = re.compile(r"[A-Za-z0-9]{9}")


@pytest.mark.parametrize("call_id", ["call_0fypS1hVX", "toolu_01A09q90qw90lq917835lq9", "é", "a", "x" * 512])
def test_every_id_maps_to_a_valid_one_deterministically(call_id: str) -> None:
    mapped = mistral.mistral_id(call_id)
    assert VALID.fullmatch(mapped)
    assert mistral.mistral_id(call_id) == mapped
    assert mapped != call_id


def test_a_valid_id_is_kept_and_the_digest_is_pinned() -> None:
    assert mistral.mistral_id("abcDEF123") == "abcDEF123"
    # The documented rule, computed independently: SHA-256 mod 62**9 as nine base-62 digits.
    digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    number = int(hashlib.sha256(b"call_0fypS1hVX").hexdigest(), 16) % 62**9
    expected = "".join(digits[number // 62**power % 62] for power in range(8, -1, -1))
    assert mistral.mistral_id("call_0fypS1hVX") == expected == "eiM8SwRRC"  # pinned for ports


def test_the_table_pairs_back_and_refuses_unknown_and_colliding_ids() -> None:
    ids = mistral.MistralIds(["call_a", "call_b"])
    assert ids.original(ids.to_mistral("call_a")) == "call_a"
    with pytest.raises(UsageError, match="not a Mistral id"):
        ids.original("zzzzzzzzz")
    # A planted collision: another id claims the mapped value of call_a.
    ids._back[mistral.mistral_id("call_c")] = "call_a"
    with pytest.raises(UsageError, match="both map to the Mistral id"):
        ids.to_mistral("call_c")


def test_a_chat_history_is_rewritten_consistently() -> None:
    completion = {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "call_0fypS1hVX", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                    ],
                }
            }
        ]
    }
    ingested = openai_chat.ingest(completion)
    closure = ToolCallClosure()
    batch = closure.begin(ingested.calls)
    results = closure.to_openai_chat_completions(closure.close(batch.handle))
    history = openai_chat.next_messages(completion, results)
    ids = mistral.MistralIds()
    mapped = mistral.to_mistral_messages(history, ids)
    new_id = mapped[0]["tool_calls"][0]["id"]
    assert VALID.fullmatch(new_id)
    assert mapped[1]["tool_call_id"] == new_id
    assert ids.original(new_id) == "call_0fypS1hVX"
    openai_chat.check_messages(mapped)  # still paired
    assert history[1]["tool_call_id"] == "call_0fypS1hVX"  # the input is not changed
