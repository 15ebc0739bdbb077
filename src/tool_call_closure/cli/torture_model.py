"""The torture command's operations, their answers, and the model its histories are checked against.

Theory of operation
-------------------
A worker runs *operations* against the stored closure and records each as
an invocation line and a response line (:func:`execute` gives the answer in
its recorded, JSON form).  The operations are plain JSON lists:

===========================  ===========================================================
``["begin", [ids…]]``        begin a batch of calls with these ids
``["claim"]``                read the current batch token and the pending calls' tokens
``["settle", token, status, content]``  settle the call a token names
``["close", batch token]``   close the batch a token names
``["seal", batch token]``    seal it
``["restore"]``              start a new epoch (a recovering owner)
``["image"]``                read the stored image (the coordinator, at the end)
===========================  ===========================================================

The *model* (:func:`model`) is the closure in memory: its state is the
canonical image (bytes, hashable), and a step restores a
:class:`~tool_call_closure.durable.FencedClosure` from it, runs the same
operation and images it again — the table, run sequentially.  An operation
whose worker was killed before its response has the answer :data:`CRASHED`:
the model then allows it to have taken effect or not (a transaction commits
or does not), and it must have done so before the worker's death (its
response time is the death, observed by the coordinator).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from typing import Any, Final

from tool_call_closure.conformance.linearizability import Model, Operation
from tool_call_closure.durable.api import DurableClosure
from tool_call_closure.durable.epochs import DurableBegin, FencedClosure
from tool_call_closure.durable.tokens import TokenRejection
from tool_call_closure.errors import ToolCallClosureError
from tool_call_closure.inputs import Outcome
from tool_call_closure.values import Accepted, Rejection, Snapshot

__all__ = ["CRASHED", "answer_of", "execute", "model", "model_step"]

CRASHED: Final = "?"
"""The recorded answer of an operation whose response was never seen (its worker was killed)."""


def answer_of(kind: str, value: Any) -> Any:
    """An operation's result in its recorded form (JSON lists, compared by equality)."""
    if isinstance(value, TokenRejection):
        return ["token", value.reason]
    if isinstance(value, Rejection):
        return ["rejected", value.reason, value.observed_status]
    if isinstance(value, Accepted):
        return ["accepted", value.generation, value.call_id]
    if isinstance(value, Snapshot):
        status = None if value.close_reason is None else value.close_reason.status
        return ["snapshot", value.generation, status, [call.state for call in value.calls]]
    if isinstance(value, DurableBegin):
        if isinstance(value.result, Rejection):
            return answer_of(kind, value.result)
        return ["begun", value.result.generation, value.epoch]
    return value


def _claim(fenced: FencedClosure) -> list[Any]:
    return [fenced.epoch, fenced.batch_token(), sorted(fenced.tokens().items())]


def _outcome(status: str, content: str) -> Outcome:
    if status == "success":
        return {"status": "success", "content": content}
    return {"status": "error" if status == "error" else "cancelled", "message": content}


def apply(fenced: FencedClosure, op: list[Any]) -> Any:
    """Run one operation on a closure (in a store's transaction, or the model's); its recorded answer."""
    kind = op[0]
    if kind == "begin":
        return answer_of(kind, fenced.begin([{"id": call_id, "name": "tool"} for call_id in op[1]]))
    if kind == "claim":
        return _claim(fenced)
    if kind == "settle":
        return answer_of(kind, fenced.settle(op[1], _outcome(op[2], op[3])))
    if kind == "close":
        return answer_of(kind, fenced.close(op[1], {"status": "cancelled", "code": "torture"}))
    if kind == "seal":
        return answer_of(kind, fenced.seal(op[1]))
    if kind == "image":
        return fenced.image().decode("ascii")
    raise ValueError(f"unknown operation {kind!r}")


def execute(durable: DurableClosure, op: list[Any]) -> Any:
    """Run one operation through the store: one transaction, like every durable operation."""
    if op[0] == "restore":
        return durable.restore()
    return durable.store.run(durable.closure_id, lambda fenced: _normalized(apply(fenced, op)))


def _normalized(answer: Any) -> Any:
    """The answer as it reads back from a JSON history line (tuples become lists, claim pairs lists)."""
    return json.loads(json.dumps(answer))


def _frozen(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_frozen(item) for item in value)
    return value


@functools.lru_cache(maxsize=50_000)
def _step(state: bytes, op_key: str, secret: bytes) -> tuple[bytes, Any]:
    op = json.loads(op_key)
    if op[0] == "restore":
        fenced = FencedClosure.restore(state, secret)
        return fenced.image(), fenced.epoch
    fenced = FencedClosure.attach(json.loads(state), secret)
    try:
        answer = _normalized(apply(fenced, op))
    except ToolCallClosureError as error:  # what a worker records when its operation raises (never expected)
        return state, ("error", type(error).__name__, str(error))
    return fenced.image(), _frozen(answer)


def model_step(state: bytes, op: list[Any], secret: bytes) -> tuple[bytes, Any]:
    """The model's one step: the next state (an image) and the answer (lists frozen to tuples)."""
    return _step(state, json.dumps(op), secret)


def model(initial: bytes, secret: bytes) -> Model[bytes]:
    """The closure in memory as a :class:`~tool_call_closure.conformance.linearizability.Model`."""

    def steps(state: bytes, operation: Operation) -> Iterable[tuple[bytes, Any]]:
        outcome = _step(state, operation.op, secret)
        if operation.answer == CRASHED:
            return (outcome, (state, CRASHED))
        return (outcome,)

    def matches(answer: Any, recorded: Any) -> bool:
        return bool(recorded == CRASHED or answer == recorded)

    return Model(initial, steps, matches)
