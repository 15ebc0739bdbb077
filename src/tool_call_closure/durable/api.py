"""``DurableClosure``: a closure that lives in a store, operated from any process that can reach the store."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, final

from tool_call_closure.durable.epochs import DurableBegin, FencedClosure, new_secret
from tool_call_closure.durable.store import Store
from tool_call_closure.durable.tokens import TokenRejection
from tool_call_closure.inputs import CallInput, CloseReasonInput, Outcome
from tool_call_closure.values import Rejection, SettlementResult, Snapshot, TurnToken

__all__ = ["DurableClosure"]


@final
class DurableClosure:
    """A stored closure: each method is one transaction of its store (``durable.store``).

    ``DurableClosure.create(store, **limits)`` stores a new closure (epoch 1)
    and ``DurableClosure(store, closure_id)`` reaches an existing one — from
    this process or any other.  The agent that owns the closure calls
    ``begin`` and hands each call's token to whoever runs it; a worker calls
    ``settle(token, outcome)``; ``close``/``seal`` take the batch token.  After
    the owner's process died, its successor calls :meth:`restore`: a new epoch,
    in which every earlier token is refused (``stale_epoch``) and
    :meth:`tokens` issues new tokens for the calls still pending.
    """

    __slots__ = ("closure_id", "store")

    def __init__(self, store: Store, closure_id: str) -> None:
        self.store = store
        self.closure_id = closure_id

    @classmethod
    def create(
        cls, store: Store, closure_id: str | None = None, *, secret: bytes | None = None, **limits: Any
    ) -> DurableClosure:
        """Store a new closure (a random id unless given) with these limits; ``secret`` defaults to a random one."""
        closure_id = uuid.uuid4().hex if closure_id is None else closure_id
        secret = new_secret() if secret is None else secret
        store.create(FencedClosure.new(closure_id, secret, **limits), secret)
        return cls(store, closure_id)

    def restore(self) -> int:
        """Start a new epoch (after the owner's process died); every earlier token is fenced.  The new epoch."""
        return self.store.run(self.closure_id, lambda fenced: fenced.epoch, restore=True)

    @property
    def epoch(self) -> int:
        return self.store.run(self.closure_id, lambda fenced: fenced.epoch)

    def turn_token(self) -> TurnToken:
        return self.store.run(self.closure_id, FencedClosure.turn_token)

    def begin(self, calls: Sequence[CallInput], *, turn: TurnToken | None = None) -> DurableBegin:
        return self.store.run(self.closure_id, lambda fenced: fenced.begin(calls, turn=turn))

    def settle(self, token: str, outcome: Outcome) -> SettlementResult | TokenRejection:
        return self.store.run(self.closure_id, lambda fenced: fenced.settle(token, outcome))

    def succeed(self, token: str, content: Any) -> SettlementResult | TokenRejection:
        return self.settle(token, {"status": "success", "content": content})

    def close(self, batch_token: str, reason: CloseReasonInput | None = None) -> Snapshot | Rejection | TokenRejection:
        return self.store.run(self.closure_id, lambda fenced: fenced.close(batch_token, reason))

    def seal(self, batch_token: str) -> Snapshot | Rejection | TokenRejection:
        return self.store.run(self.closure_id, lambda fenced: fenced.seal(batch_token))

    def snapshot(self) -> Snapshot | None:
        return self.store.run(self.closure_id, FencedClosure.snapshot)

    def tokens(self) -> dict[str, str]:
        """This epoch's tokens of the current generation's pending calls."""
        return self.store.run(self.closure_id, FencedClosure.tokens)

    def batch_token(self) -> str | None:
        return self.store.run(self.closure_id, FencedClosure.batch_token)

    def export(self, method: str) -> list[Any]:
        """``to_anthropic_tool_results`` … of the current (closed) generation."""
        return self.store.run(self.closure_id, lambda fenced: fenced.export(method))

    def image(self) -> bytes:
        """The canonical image of the stored state (``durable.image``)."""
        return self.store.run(self.closure_id, FencedClosure.image)
