"""Durable closures (issue 23, deviation D23): images, epochs, tokens, and the SQLite and memory stores.

The PostgreSQL store has its own file (``test_durable_postgres.py``, a throwaway server); the
store-vs-memory stateful machine is ``test_durable_stateful.py``; the torture command, the durable
loop example and the bounded model check of restores are in the slow tier.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tool_call_closure import BatchHandle, LimitError, ToolCallClosure, UsageError, to_json
from tool_call_closure.durable import (
    DurableClosure,
    FencedClosure,
    MemoryStore,
    SQLiteStore,
    TokenRejection,
    closure_of,
    decode,
    encode,
    image_of,
    new_secret,
)
from tool_call_closure.durable.image import image_bound
from tool_call_closure.durable.tokens import TokenCodec

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((ROOT / "spec" / "image.schema.json").read_text(encoding="utf-8"))
SECRET = b"s" * 32
OK = {"status": "success", "content": "done"}


def calls(*ids: str) -> list[dict[str, str]]:
    return [{"id": i, "name": "tool"} for i in ids]


def busy_closure() -> tuple[ToolCallClosure, BatchHandle]:
    """A closure with every kind of record: reported and synthetic settlements, diagnostics, a superseded run."""
    closure = ToolCallClosure(max_calls=5, max_diagnostics=3)
    first = closure.begin(calls("x")).handle
    handle = closure.begin(calls("a", "b", "c", "d")).handle
    closure.succeed(handle, "a", {"rows": ["\ud800", "é"]})
    closure.fail(handle, "b", ValueError("boom"), code="E1")
    closure.settle(first, "x", OK)  # stale_generation, recorded
    closure.settle(handle, "zz", OK)  # unknown_call, recorded
    return closure, handle


# --------------------------------------------------------------------------- the image


def test_an_image_restores_the_same_state_byte_for_byte_and_matches_its_schema() -> None:
    closure, handle = busy_closure()
    for step in (lambda: None, lambda: closure.close(handle, {"status": "error", "sideEffectState": "not_started"})):
        step()
        image = image_of(closure, "c", 1)
        jsonschema.validate(image, SCHEMA)
        data = encode(image)
        restored = closure_of(decode(data))
        assert encode(image_of(restored, "c", 1)) == data
        assert to_json(restored.snapshot()) == to_json(closure.snapshot())
        assert restored.limits == closure.limits


def test_an_image_before_the_first_begin_keeps_its_diagnostics_and_a_sealed_one_its_reason() -> None:
    closure = ToolCallClosure()
    closure.settle(BatchHandle(1), "a", OK)
    image = image_of(closure, "c", 3)
    assert image["generation"] == 0
    assert image["run"] is None
    assert len(image["diagnostics"]) == 1
    jsonschema.validate(image, SCHEMA)
    assert encode(image_of(closure_of(image), "c", 3)) == encode(image)
    handle = closure.begin(calls("a")).handle
    closure.succeed(handle, "a", "x")
    closure.seal(handle)
    sealed = image_of(closure, "c", 3)
    jsonschema.validate(sealed, SCHEMA)
    assert sealed["run"]["closeReason"]["status"] == "complete"
    assert to_json(closure_of(sealed).snapshot()) == to_json(closure.snapshot())


def test_the_image_is_canonical_ascii_and_within_its_bound() -> None:
    closure, _handle = busy_closure()
    data = encode(image_of(closure, "c", 1))
    assert data.isascii()
    assert b" " not in data.replace(b'"Tool call was cancelled."', b"")
    assert len(data) <= image_bound(closure.limits)
    big = ToolCallClosure(max_calls=3, max_result_bytes=64, max_id_bytes=8, max_name_bytes=8)
    handle = big.begin([{"id": "\x01" * 8, "name": "\x02" * 8}, {"id": "b", "name": "t"}]).handle
    big.succeed(handle, "\x01" * 8, "\x03" * 64)
    assert len(encode(image_of(big, "c", 1))) <= image_bound(big.limits)


def test_D22_an_image_holding_the_largest_result_of_parts_is_within_its_bound() -> None:
    """Names and media types are not counted by max_result_bytes; MAX_PARTS and the name limit bound them."""
    from tool_call_closure.parts import MAX_PARTS, FileInput, content

    closure = ToolCallClosure(max_calls=1, max_result_bytes=MAX_PARTS, max_diagnostics=1)
    handle = closure.begin([{"id": "a", "name": "t"}]).handle
    widest = FileInput(name="\x01" * 256, media_type="application/pdf", data=b"\x01")
    closure.succeed(handle, "a", content([widest] * MAX_PARTS))
    size = len(encode(image_of(closure, "c", 1)))
    assert size > 6 * 256 * MAX_PARTS  # the names dominate: the bound must count them
    assert size <= image_bound(closure.limits)


@pytest.mark.parametrize(
    ("edit", "where"),
    [
        (lambda i: i.update(format="other"), "format"),
        (lambda i: i.update(epoch=0), "epoch"),
        (lambda i: i.update(generation=0), "run"),
        (lambda i: i["limits"].update(maxCalls=1), "run.calls"),
        (lambda i: i["run"]["calls"][0].update(state="pending"), "run.calls[0].state"),
        (lambda i: i["run"]["calls"][1].update(id="a"), "run.calls[1].id"),
        (lambda i: i["run"]["calls"][0]["settlement"].update(provenance="synthetic"), "run.calls[0].settlement"),
        (lambda i: i["run"].update(state="complete"), "run.closeReason"),
        (lambda i: i["run"]["diagnostics"][0].update(reason="nope"), "run.diagnostics[0].reason"),
        (lambda i: i["limits"].update(maxIdBytes=1), "run.calls[2].id"),
        (lambda i: i.update(extra=1), "image"),
    ],
)
def test_an_invalid_image_is_refused_naming_what_is_wrong(edit: Any, where: str) -> None:
    closure, _handle = busy_closure()
    image = json.loads(encode(image_of(closure, "c", 1)))
    image["run"]["calls"][2]["id"] = "cc"
    edit(image)
    with pytest.raises(UsageError) as info:
        closure_of(image)
    assert info.value.code == "image_invalid"
    assert str(info.value).startswith(f"image invalid: {where} ")


def test_text_that_is_not_json_is_an_invalid_image() -> None:
    with pytest.raises(UsageError, match="image invalid: text is not JSON"):
        decode(b"{")


# --------------------------------------------------------------------------- tokens and epochs


def test_tokens_settle_their_call_and_the_table_answers_as_in_memory() -> None:
    fenced = FencedClosure.new("c", SECRET)
    begun = fenced.begin(calls("a", "b"))
    assert begun.batch_token is not None
    assert fenced.settle(begun.tokens["a"], OK).accepted
    again = fenced.settle(begun.tokens["a"], OK)
    assert (again.reason, again.call_id) == ("duplicate_settlement", "a")
    later = fenced.begin(calls("c"))
    stale = fenced.settle(begun.tokens["b"], OK)
    assert (stale.reason, stale.generation) == ("stale_generation", 1)
    assert fenced.seal(begun.batch_token).reason == "stale_generation"  # type: ignore[union-attr]
    assert later.batch_token is not None
    assert fenced.close(later.batch_token).closed  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("tamper", "reason"),
    [
        (lambda t: t[:-3] + ("AAA" if not t.endswith("AAA") else "BBB"), "token_forged"),
        (lambda t: t.replace("tcc1.", "tcc1.e"), "token_forged"),
        (lambda t: "not a token", "token_malformed"),
        (lambda t: t + ".x", "token_malformed"),
        (lambda t: 42, "token_malformed"),
        (lambda t: TokenCodec("other", b"o" * 32).issue(1, 1, "call", "a"), "token_forged"),
        (lambda t: TokenCodec("other", SECRET).issue(1, 1, "call", "a"), "token_foreign"),
        (lambda t: TokenCodec("c", SECRET).issue(1, 1, "batch"), "token_kind"),
        (lambda t: TokenCodec("c", SECRET).issue(9, 1, "call", "a"), "unknown_epoch"),
    ],
)
def test_a_bad_token_is_refused_with_its_reason_and_changes_nothing(tamper: Any, reason: str) -> None:
    fenced = FencedClosure.new("c", SECRET)
    token = fenced.begin(calls("a")).tokens["a"]
    before = fenced.image()
    refused = fenced.settle(tamper(token), OK)
    assert isinstance(refused, TokenRejection)
    assert refused.reason == reason
    assert not refused.accepted
    assert fenced.image() == before  # nothing changed, not even a diagnostic


def test_a_payload_edited_with_its_mac_kept_is_forged() -> None:
    codec = TokenCodec("c", SECRET)
    _prefix, _payload, mac = codec.issue(1, 1, "call", "a").split(".")
    edited = codec.issue(1, 1, "call", "b").split(".")[1]
    assert codec.verify(f"tcc1.{edited}.{mac}", "call") == TokenRejection("token_forged")


def test_restore_starts_a_new_epoch_fences_old_tokens_and_keeps_pending_calls_pending() -> None:
    fenced = FencedClosure.new("c", SECRET)
    begun = fenced.begin(calls("a", "b", "c"))
    fenced.settle(begun.tokens["a"], OK)
    restored = FencedClosure.restore(fenced.image(), SECRET)
    assert restored.epoch == 2
    assert restored.closure.active_generation == 1
    stale = restored.settle(begun.tokens["b"], OK)
    assert stale == TokenRejection("stale_epoch", 1, 1, "b")
    assert restored.close(begun.batch_token) == TokenRejection("stale_epoch", 1, 1, None)
    fresh = restored.tokens()
    assert sorted(fresh) == ["b", "c"]
    assert restored.settle(fresh["b"], OK).accepted
    old_handle = fenced.closure._committed_state()[0].handle  # type: ignore[union-attr]
    assert restored.closure.settle(old_handle, "c", OK).reason == "stale_generation"  # type: ignore[union-attr]
    after = restored.begin(calls("d"))
    assert after.result.generation == 2  # numbering continues
    with pytest.raises(UsageError):
        restored.closure.to_openai_chat_completions(fenced.closure.close(fenced.batch_token()))  # type: ignore[arg-type]


def test_a_rejected_turn_gives_no_tokens() -> None:
    fenced = FencedClosure.new("c", SECRET)
    turn = fenced.turn_token()
    fenced.begin(calls("a"))
    late = fenced.begin(calls("b"), turn=turn)
    assert late.result.reason == "stale_turn"  # type: ignore[union-attr]
    assert late.batch_token is None
    assert late.tokens == {}


# --------------------------------------------------------------------------- stores


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    made = MemoryStore() if request.param == "memory" else SQLiteStore(tmp_path / "closures.db")
    yield made
    made.close()


def test_a_stored_closure_answers_as_the_fenced_closure_in_memory(store: Any) -> None:
    durable = DurableClosure.create(store, "run-1", secret=SECRET, max_calls=4)
    memory = FencedClosure.new("run-1", SECRET, max_calls=4)
    steps = [
        lambda c: c.begin(calls("a", "b")),
        lambda c: c.settle(c.tokens()["a"], OK),
        lambda c: c.settle(TokenCodec("run-1", SECRET).issue(1, 1, "call", "a"), OK),
        lambda c: c.seal(c.batch_token()),
        lambda c: c.snapshot(),
        lambda c: c.close(c.batch_token(), {"status": "error"}),
        lambda c: c.export("to_anthropic_tool_results"),
        lambda c: c.begin(calls("c")),
    ]
    for step in steps:
        answer = step(durable)
        expected = step(memory)
        if hasattr(answer, "result"):
            answer, expected = answer.result, expected.result
        assert to_json(answer) == to_json(expected)
        assert durable.image() == memory.image()
    with pytest.raises(UsageError) as info:
        DurableClosure.create(store, "run-1")
    assert info.value.code == "closure_exists"
    with pytest.raises(UsageError) as unknown:
        DurableClosure(store, "nope").snapshot()
    assert unknown.value.code == "closure_unknown"


def test_an_operation_that_raises_writes_nothing(store: Any) -> None:
    durable = DurableClosure.create(store, "r", max_calls=1)
    durable.begin(calls("a"))
    before = durable.image()
    with pytest.raises(LimitError):
        durable.begin(calls("a", "b"))  # over max_calls
    with pytest.raises(UsageError):
        durable.settle(durable.tokens()["a"], {"status": "maybe"})
    assert durable.image() == before


def test_restore_through_the_store_fences_every_earlier_token(store: Any) -> None:
    durable = DurableClosure.create(store, "r")
    begun = durable.begin(calls("a", "b"))
    assert durable.restore() == 2
    assert durable.settle(begun.tokens["a"], OK) == TokenRejection("stale_epoch", 1, 1, "a")
    assert durable.settle(durable.tokens()["a"], OK).accepted
    assert durable.epoch == 2


def test_a_second_process_sees_the_first_ones_commits(tmp_path: Path) -> None:
    first, second = SQLiteStore(tmp_path / "db"), SQLiteStore(tmp_path / "db")
    durable = DurableClosure.create(first, "r")
    begun = durable.begin(calls("a"))
    assert DurableClosure(second, "r").settle(begun.tokens["a"], OK).accepted
    again = durable.settle(begun.tokens["a"], OK)  # first's cached copy is stale: reloaded by version
    assert again.reason == "duplicate_settlement"  # type: ignore[union-attr]
    assert DurableClosure(second, "r").image() == durable.image()


def test_concurrent_settles_of_one_call_from_many_connections_accept_exactly_one(tmp_path: Path) -> None:
    durable = DurableClosure.create(SQLiteStore(tmp_path / "db"), "r")
    token = durable.begin(calls("a")).tokens["a"]
    answers: list[Any] = []
    barrier = threading.Barrier(6)

    def worker(n: int) -> None:
        store = SQLiteStore(tmp_path / "db")
        barrier.wait()
        answers.append(DurableClosure(store, "r").settle(token, {"status": "success", "content": str(n)}))
        store.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(answer.accepted for answer in answers) == 1
    assert sorted(answer.reason for answer in answers if not answer.accepted) == ["duplicate_settlement"] * 5
    assert len(json.loads(durable.image())["run"]["diagnostics"]) == 5


def test_a_settle_writes_one_call_row(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "db")
    durable = DurableClosure.create(store, "r")
    begun = durable.begin(calls(*[f"c{i}" for i in range(50)]))
    statements: list[str] = []
    store._db.set_trace_callback(statements.append)
    durable.settle(begun.tokens["c7"], OK)
    writes = [s for s in statements if s.startswith(("UPDATE", "INSERT", "DELETE"))]
    assert len(writes) == 2  # the call row and the header's compare-and-set
    assert writes[0].startswith("UPDATE tcc_calls")
    assert "version = version + 1" in writes[1]


def test_new_secret_is_random() -> None:
    assert new_secret() != new_secret()
    assert len(new_secret()) == 32


def test_a_closure_id_and_a_secret_are_checked_when_the_closure_is_created() -> None:
    with pytest.raises(UsageError) as too_long:
        DurableClosure.create(MemoryStore(), "é" * 129)  # 258 UTF-8 bytes
    assert too_long.value.code == "closure_id"
    with pytest.raises(UsageError) as short:
        DurableClosure.create(MemoryStore(), "x", secret=b"short")
    assert short.value.code == "secret_invalid"


def test_a_token_for_a_long_id_is_verified_like_any_other() -> None:
    durable = DurableClosure.create(MemoryStore(), "x", max_id_bytes=10_000)
    call_id = "i" * 9_000
    token = durable.begin([{"id": call_id, "name": "t"}]).tokens[call_id]
    assert len(token) > 12_000
    assert durable.settle(token, OK).accepted


def test_content_parts_survive_an_image_with_their_json_text_in_its_own_order() -> None:
    from tool_call_closure.parts import FileInput, ImageInput, JsonInput, content

    closure = ToolCallClosure()
    handle = closure.begin(calls("a", "b")).handle
    parts = content(
        [
            "chart:",
            ImageInput(media_type="image/png", data=b"\x89PNG"),
            FileInput(name="r.pdf", media_type="application/pdf", url="https://example.com/r.pdf"),
            JsonInput({"z": 1, "a": [1.5, None]}, schema={"type": "object"}),
        ]
    )
    closure.succeed(handle, "a", parts)
    image = image_of(closure, "c", 1)
    jsonschema.validate(image, SCHEMA)
    data = encode(image)
    restored = closure_of(decode(data))
    assert encode(image_of(restored, "c", 1)) == data
    assert to_json(restored.snapshot()) == to_json(closure.snapshot())  # {"z": 1, "a": …}: the order kept
    restored_handle = restored._committed_state()[0].handle  # type: ignore[union-attr]
    assert restored.to_anthropic_tool_results(restored.close(restored_handle)) == closure.to_anthropic_tool_results(
        closure.close(handle)
    )
    broken = json.loads(data)
    broken["run"]["calls"][0]["settlement"]["content"]["$parts"][1]["mediaType"] = "image/tiff"
    with pytest.raises(UsageError, match=r"image invalid: run.calls\[0\].settlement.content holds an invalid part"):
        closure_of(broken)
