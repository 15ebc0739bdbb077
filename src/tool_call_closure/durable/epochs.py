"""Epochs: a closure restored from an image fences everything handed out before the restore.

Theory of operation
-------------------
A :class:`FencedClosure` is a :class:`~tool_call_closure.ToolCallClosure`
with an identity (closure id), an *epoch* and a token codec.  Callers outside
the process hold tokens, never handles: ``begin`` returns a batch token and
one settlement token per call; ``settle`` takes a call token, ``close`` and
``seal`` a batch token.  Each operation verifies the token, then runs the
*same* public operation of the closure (so the table decides every answer):

* a token that is malformed, forged, edited, of another closure or of the
  wrong kind, or of another epoch, is refused with a typed
  :class:`~.tokens.TokenRejection` before the table is asked: nothing
  changes, nothing is recorded;
* a genuine token of this epoch names a generation; the current one runs
  with the closure's own handle, an older one with a look-alike handle, so
  the table answers exactly as in memory (``stale_generation``,
  ``run_closed``, ``duplicate_settlement`` …) and records its diagnostic.

:meth:`FencedClosure.restore` starts a new epoch from an image: generation
numbering continues, pending calls stay pending, and :meth:`FencedClosure.tokens`
issues the new epoch's tokens for them.  A token of an earlier epoch is
``stale_epoch``; a handle or snapshot object of the imaged instance belongs
to another instance (``stale_generation``; exports refuse it as foreign).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, final

from tool_call_closure.closure import ToolCallClosure
from tool_call_closure.durable.image import closure_of, current_handle, decode, encode, image_of
from tool_call_closure.durable.tokens import TokenClaims, TokenCodec, TokenKind, TokenReason, TokenRejection
from tool_call_closure.errors import UsageError
from tool_call_closure.inputs import CallInput, CloseReasonInput, Outcome
from tool_call_closure.values import BatchHandle, BeginResult, Rejection, SettlementResult, Snapshot, TurnToken

__all__ = ["DurableBegin", "FencedClosure", "new_secret"]

EXPORTS: Final = (
    "to_openai_chat_completions",
    "to_openai_responses",
    "to_anthropic_tool_results",
    "to_gemini_function_responses",
    "to_bedrock_tool_results",
)


def new_secret() -> bytes:
    """A fresh per-closure token secret (32 random bytes)."""
    return secrets.token_bytes(32)


@final
@dataclass(frozen=True, slots=True)
class DurableBegin:
    """``begin``'s answer across processes: the table's result, the batch token and one token per call.

    ``batch_token`` is ``None`` and ``tokens`` empty when the begin was
    rejected (``stale_turn``); ``result`` is then the :class:`~.Rejection`.
    """

    result: BeginResult | Rejection
    epoch: int
    batch_token: str | None
    tokens: Mapping[str, str]


@final
class FencedClosure:
    """A closure with an id and an epoch, operated through tokens (see the module docstring)."""

    __slots__ = ("closure", "closure_id", "codec", "epoch")

    def __init__(self, closure: ToolCallClosure, closure_id: str, epoch: int, secret: bytes) -> None:
        self.closure = closure
        self.closure_id = closure_id
        self.epoch = epoch
        self.codec = TokenCodec(closure_id, secret)

    @classmethod
    def new(cls, closure_id: str, secret: bytes, **limits: Any) -> FencedClosure:
        """A new closure in epoch 1."""
        return cls(ToolCallClosure(**limits), closure_id, 1, secret)

    @classmethod
    def restore(cls, image: bytes | Mapping[str, Any], secret: bytes) -> FencedClosure:
        """The closure of ``image`` in a new epoch (the image's epoch + 1)."""
        parsed = decode(image) if isinstance(image, bytes | str) else image
        return cls(closure_of(parsed), parsed["closureId"], parsed["epoch"] + 1, secret)

    @classmethod
    def attach(cls, image: Mapping[str, Any], secret: bytes) -> FencedClosure:
        """The closure of ``image`` in the image's own epoch (a store loading its state: no restore)."""
        return cls(closure_of(image), image["closureId"], image["epoch"], secret)

    def image(self) -> bytes:
        """The canonical image of the committed state (``durable.image``)."""
        return encode(image_of(self.closure, self.closure_id, self.epoch))

    # ------------------------------------------------------------------ tokens

    def _generation(self) -> int:
        run, _calls, _diagnostics = self.closure._committed_state()
        return 0 if run is None else run.generation

    def tokens(self) -> dict[str, str]:
        """This epoch's token of every pending call of the current generation (after a restore: the new ones)."""
        run, calls, _diagnostics = self.closure._committed_state()
        if run is None:
            return {}
        return {
            call[0]: self.codec.issue(self.epoch, run.generation, "call", call[0]) for call in calls if call[3] is None
        }

    def batch_token(self) -> str | None:
        """This epoch's token of the current generation's batch (``None`` before the first begin)."""
        generation = self._generation()
        return None if generation == 0 else self.codec.issue(self.epoch, generation, "batch")

    def _admit(self, token: object, kind: TokenKind) -> tuple[TokenClaims, BatchHandle] | TokenRejection:
        claims = self.codec.verify(token, kind)
        if isinstance(claims, TokenRejection):
            return claims
        if claims.epoch != self.epoch:
            reason: TokenReason = "stale_epoch" if claims.epoch < self.epoch else "unknown_epoch"
            return TokenRejection(reason, claims.epoch, claims.generation, claims.call_id)
        handle = current_handle(self.closure)
        if handle is None or handle.generation != claims.generation:
            handle = BatchHandle(claims.generation)  # an older generation: the table answers as to any stale handle
        return claims, handle

    # ------------------------------------------------------------------ the table's operations

    def turn_token(self) -> TurnToken:
        return self.closure.turn_token()

    def begin(self, calls: Sequence[CallInput], *, turn: TurnToken | None = None) -> DurableBegin:
        """``begin`` of the closure; a committed begin comes with its batch token and call tokens."""
        result = self.closure.begin(calls) if turn is None else self.closure.begin(calls, turn=turn)
        if isinstance(result, Rejection):
            return DurableBegin(result, self.epoch, None, {})
        return DurableBegin(result, self.epoch, self.batch_token(), self.tokens())

    def settle(self, token: object, outcome: Outcome) -> SettlementResult | TokenRejection:
        """Settle the call ``token`` names (a call token of this epoch), as ``settle`` does in memory."""
        admitted = self._admit(token, "call")
        if isinstance(admitted, TokenRejection):
            return admitted
        claims, handle = admitted
        assert claims.call_id is not None  # a call token names its call
        return self.closure.settle(handle, claims.call_id, outcome)

    def close(
        self, batch_token: object, reason: CloseReasonInput | None = None
    ) -> Snapshot | Rejection | TokenRejection:
        """Close the batch ``batch_token`` names, as ``close`` does in memory."""
        admitted = self._admit(batch_token, "batch")
        if isinstance(admitted, TokenRejection):
            return admitted
        return self.closure.close(admitted[1], reason)

    def seal(self, batch_token: object) -> Snapshot | Rejection | TokenRejection:
        """Seal the batch ``batch_token`` names, as ``seal`` does in memory."""
        admitted = self._admit(batch_token, "batch")
        if isinstance(admitted, TokenRejection):
            return admitted
        return self.closure.seal(admitted[1])

    def snapshot(self) -> Snapshot | None:
        return self.closure.snapshot()

    def export(self, method: str) -> list[Any]:
        """One of the closure's exports (``to_anthropic_tool_results`` …) of a fresh snapshot of the current run."""
        if method not in EXPORTS:
            raise UsageError(f"export must be one of {', '.join(EXPORTS)}, got {method!r}", code="export_unknown")
        payload: list[Any] = getattr(self.closure, method)()
        return payload
