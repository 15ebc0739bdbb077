"""Stateful differential test: a closure in the SQLite store and the same closure in memory, step by step.

:class:`StoreVersusMemory` is a Hypothesis ``RuleBasedStateMachine``.  Every rule runs one operation on both
sides — a :class:`~tool_call_closure.durable.DurableClosure` in a SQLite file (each operation one transaction)
and a :class:`~tool_call_closure.durable.FencedClosure` in memory (the table, run directly) — and requires equal
answers (canonical JSON) and, after every step, byte-equal images.  Tokens are drawn from every token either
side ever handed out (current, superseded, of earlier epochs) and from forged ones; ``restore`` starts a new
epoch on both; ``crash`` throws the store's connection and this process's copy away and reopens the file (a
process restart without a restore): the next operation must find the same state in the file.  The invariants
check that the store's file holds what the memory closure holds (read through a second, fresh connection) and
that no settlement a side accepted was ever lost while its generation is current.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from tool_call_closure import to_json
from tool_call_closure.durable import (
    DurableBegin,
    DurableClosure,
    FencedClosure,
    SQLiteStore,
    TokenRejection,
    closure_of,
    decode,
    encode,
    image_of,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_stateful import ClosureMachine, machine_settings

SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "spec" / "image.schema.json").read_text(encoding="utf-8"))

SECRET = b"stateful-secret-0123456789abcdef"
STATUSES = st.sampled_from(["success", "error", "cancelled"])


def outcome(status: str, text: str) -> dict[str, Any]:
    return {"status": status, "content": text} if status == "success" else {"status": status, "message": text}


def comparable(value: Any) -> str:
    if isinstance(value, DurableBegin):
        return to_json(
            {"result": value.result, "epoch": value.epoch, "batch": value.batch_token, "tokens": value.tokens}
        )
    if isinstance(value, TokenRejection):
        return json.dumps(value.__json__(), sort_keys=True)
    return to_json(value)


class StoreVersusMemory(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.directory = tempfile.TemporaryDirectory(prefix="tcc-stateful-")
        self.path = Path(self.directory.name) / "closures.db"
        self.store = SQLiteStore(self.path, synchronous="NORMAL")
        self.durable = DurableClosure.create(self.store, "s", secret=SECRET, max_calls=3, max_diagnostics=4)
        self.memory = FencedClosure.new("s", SECRET, max_calls=3, max_diagnostics=4)
        self.tokens: list[str] = []
        self.batches: list[str] = []
        self.turns: list[Any] = []
        self.accepted: dict[tuple[int, str], str] = {}
        self.counter = 0

    def teardown(self) -> None:
        self.store.close()
        self.directory.cleanup()

    def both(self, operation: Any) -> Any:
        stored = self.store.run("s", operation)
        expected = operation(self.memory)
        assert comparable(stored) == comparable(expected)
        return stored

    def learn(self, answer: Any) -> None:
        if isinstance(answer, DurableBegin) and answer.batch_token is not None:
            self.batches.append(answer.batch_token)
            self.tokens.extend(answer.tokens.values())

    @rule(count=st.integers(0, 4), turn=st.sampled_from(["none", "current", "old"]))
    def begin(self, count: int, turn: str) -> None:
        self.counter += 1
        calls = [{"id": f"c{self.counter}.{j}", "name": "t"} for j in range(count)]
        if turn == "current":
            self.turns.append(self.memory.turn_token())
        token = None if turn == "none" or not self.turns else self.turns[-1 if turn == "current" else 0]
        try:
            answer = self.both(lambda fenced: fenced.begin(calls, turn=token))
        except Exception as error:  # noqa: BLE001 - both sides must raise alike (checked below)
            with pytest.raises(type(error)):
                self.memory.begin(calls, turn=token)
            return
        self.learn(answer)

    @rule()
    def claim(self) -> None:
        self.tokens.extend(self.both(FencedClosure.tokens).values())
        batch = self.both(FencedClosure.batch_token)
        if batch is not None:
            self.batches.append(batch)

    @precondition(lambda self: self.tokens)
    @rule(data=st.data(), status=STATUSES, forged=st.booleans())
    def settle(self, data: st.DataObject, status: str, forged: bool) -> None:
        token = data.draw(st.sampled_from(self.tokens))
        if forged:
            token = token[:-2] + ("AA" if not token.endswith("AA") else "BB")
        self.counter += 1
        text = f"r{self.counter}"
        answer = self.both(lambda fenced: fenced.settle(token, outcome(status, text)))
        if answer.accepted:
            key = (answer.generation, answer.call_id)
            assert key not in self.accepted  # exactly once
            self.accepted[key] = text

    @precondition(lambda self: self.batches)
    @rule(data=st.data(), seal=st.booleans())
    def close_or_seal(self, data: st.DataObject, seal: bool) -> None:
        batch = data.draw(st.sampled_from(self.batches))
        if seal:
            self.both(lambda fenced: fenced.seal(batch))
        else:
            self.both(lambda fenced: fenced.close(batch, {"status": "error", "code": "stop"}))

    @rule()
    def restore(self) -> None:
        epoch = self.durable.restore()
        self.memory = FencedClosure.restore(self.memory.image(), SECRET)
        assert epoch == self.memory.epoch

    @rule()
    def crash(self) -> None:
        self.store.close()
        self.store = SQLiteStore(self.path, synchronous="NORMAL")
        self.durable = DurableClosure(self.store, "s")

    @rule(
        method=st.sampled_from(["to_openai_chat_completions", "to_anthropic_tool_results", "to_bedrock_tool_results"])
    )
    def export(self, method: str) -> None:
        snapshot = self.memory.snapshot()
        if snapshot is not None and snapshot.closed:
            self.both(lambda fenced: fenced.export(method))

    @invariant()
    def the_file_holds_the_memory_state(self) -> None:
        reader = SQLiteStore(self.path, synchronous="NORMAL")
        try:
            assert DurableClosure(reader, "s").image() == self.memory.image()
        finally:
            reader.close()

    @invariant()
    def no_accepted_settlement_is_lost(self) -> None:
        image = json.loads(self.memory.image())
        if image["run"] is None:
            return
        for call in image["run"]["calls"]:
            text = self.accepted.get((image["generation"], call["id"]))
            if text is not None:
                settlement = call["settlement"]
                assert settlement["provenance"] == "reported"
                assert text in (settlement["content"], settlement["message"])


TestStoreVersusMemory = StoreVersusMemory.TestCase
TestStoreVersusMemory.settings = settings(max_examples=10, stateful_step_count=20, deadline=None)


@pytest.mark.slow
def test_store_versus_memory_long() -> None:
    run_state_machine_as_test(
        StoreVersusMemory, settings=settings(max_examples=80, stateful_step_count=40, deadline=None)
    )


# --------------------------------------------------------------------------- the closure machine, through images


class RestoredEveryStep(ClosureMachine):
    """``tests/test_stateful.py``'s machine (the implementation against the spec model, every rule, hooks and
    hostile values), with the implementation's state replaced, after every step, by the restoration of its
    image: a state that lost anything in the image — a settlement, a diagnostic, a close reason, the counter —
    answers differently from the model at a later step.  (The run keeps its handle object, so the machine's
    handles stay current; epochs and tokens are the other tests' subject.)"""

    @invariant()
    def the_state_survives_its_image(self) -> None:
        closure = self.impl.target
        image = image_of(closure, "machine", 1)
        if self.checked_schema < 40:  # the schema on the first steps of each example (jsonschema is slow)
            jsonschema.validate(image, SCHEMA)
            self.checked_schema += 1
        data = encode(image)
        restored = closure_of(decode(data))
        assert encode(image_of(restored, "machine", 1)) == data
        run, _calls, _diagnostics = closure._committed_state()
        new_run, _new_calls, new_diagnostics = restored._committed_state()
        if run is not None and new_run is not None:
            new_run.handle = run.handle
        closure._with_committed_state(new_run, list(new_diagnostics) if new_run is None else [])

    checked_schema = 0


@pytest.mark.slow  # the closure machine's steps are expensive (hooks, hostile values): ~2.5 s an example
def test_the_closure_machine_holds_when_every_state_is_restored_from_its_image() -> None:
    run_state_machine_as_test(RestoredEveryStep, settings=settings(machine_settings(), max_examples=30))
