"""Settlement tokens: what a worker in another process carries with a job and hands back with its result.

Theory of operation
-------------------
A token names one announced call (or, for ``close``/``seal``, one batch) of
one closure in one epoch::

    tcc1.<base64url payload>.<base64url HMAC-SHA256(secret, payload)>

where the payload is the canonical JSON of ``[closure id, epoch, generation,
kind, call id]`` (kind ``"call"`` or ``"batch"``, call id ``null`` for a
batch).  The secret is the closure's own (32 random bytes kept by the
store, never in an image).  A token is plain text: it can be written to a
job queue, a database row or a log line, and compared by value.

:meth:`TokenCodec.verify` answers a :class:`TokenClaims` or a
:class:`TokenRejection` with a typed reason; the MAC is compared with
``hmac.compare_digest``.  Anything that is not a well-formed token is
``token_malformed``; a token whose MAC does not match (forged, or any byte
edited) is ``token_forged``; a genuine token of another closure is
``token_foreign``.  Epoch and generation are judged by the caller
(:mod:`.epochs`), which knows the current ones.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Literal, TypeAlias, final

from tool_call_closure.errors import UsageError

__all__ = ["TOKEN_PREFIX", "TokenClaims", "TokenCodec", "TokenKind", "TokenReason", "TokenRejection"]

TOKEN_PREFIX: Final = "tcc1"
MAX_TOKEN_CHARS: Final = 1 << 24  # far above any genuine token (ids are bounded by maxIdBytes); junk is refused early
TokenKind: TypeAlias = Literal["call", "batch"]
TokenReason: TypeAlias = Literal[
    "token_malformed", "token_forged", "token_foreign", "token_kind", "stale_epoch", "unknown_epoch"
]


@final
@dataclass(frozen=True, slots=True)
class TokenClaims:
    """What a genuine token says: which closure, epoch, generation and call (``None`` for a batch token)."""

    closure_id: str
    epoch: int
    generation: int
    kind: TokenKind
    call_id: str | None


@final
@dataclass(frozen=True, slots=True)
class TokenRejection:
    """A token refused before the table is asked: nothing changed, nothing was recorded.

    ``reason`` is ``token_malformed`` (not a token), ``token_forged`` (its MAC
    does not match: forged or edited), ``token_foreign`` (another closure's),
    ``token_kind`` (a batch token where a call token is needed, or the
    reverse), ``stale_epoch`` (issued before the closure's last restore) or
    ``unknown_epoch`` (an epoch the closure has not reached: the store was
    rolled back).  ``epoch``, ``generation`` and ``call_id`` are the token's
    when it is genuine, else ``None``.
    """

    accepted: ClassVar[Literal[False]] = False
    reason: TokenReason
    epoch: int | None = None
    generation: int | None = None
    call_id: str | None = None

    def __json__(self) -> dict[str, Any]:
        return {
            "accepted": False,
            "reason": self.reason,
            "epoch": self.epoch,
            "generation": self.generation,
            "callId": self.call_id,
        }


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


_MALFORMED: Final = TokenRejection("token_malformed")
_FORGED: Final = TokenRejection("token_forged")


@final
class TokenCodec:
    """Issues and verifies the tokens of one closure (its id and secret)."""

    __slots__ = ("_closure_id", "_secret")

    def __init__(self, closure_id: str, secret: bytes) -> None:
        if type(secret) is not bytes or len(secret) < 16:
            raise UsageError("secret must be bytes, at least 16 of them", code="secret_invalid")
        self._closure_id = closure_id
        self._secret = secret

    def _mac(self, payload: bytes) -> bytes:
        return hmac.new(self._secret, payload, hashlib.sha256).digest()

    def issue(self, epoch: int, generation: int, kind: TokenKind, call_id: str | None = None) -> str:
        """The token of ``call_id`` (kind ``call``) or of the batch (kind ``batch``) of ``generation`` in ``epoch``."""
        fields = [self._closure_id, epoch, generation, kind, call_id]
        payload = json.dumps(fields, separators=(",", ":"), ensure_ascii=True).encode("ascii")
        return f"{TOKEN_PREFIX}.{_b64(payload)}.{_b64(self._mac(payload))}"

    def verify(self, token: object, kind: TokenKind) -> TokenClaims | TokenRejection:
        """The claims of a genuine token of this closure and ``kind``, else a typed :class:`TokenRejection`."""
        if type(token) is not str or len(token) > MAX_TOKEN_CHARS or not token.isascii():
            return _MALFORMED
        parts = token.split(".")
        if len(parts) != 3 or parts[0] != TOKEN_PREFIX:
            return _MALFORMED
        try:
            payload, mac = _unb64(parts[1]), _unb64(parts[2])
        except (binascii.Error, ValueError):
            return _MALFORMED
        if _b64(payload) != parts[1] or _b64(mac) != parts[2]:
            return _FORGED  # a non-canonical encoding of the same bytes: an edited token
        if not hmac.compare_digest(self._mac(payload), mac):
            return _FORGED
        claims = _claims(payload)
        if claims is None:
            return _MALFORMED  # genuine MAC over a payload this codec never writes: not reachable without the secret
        if claims.closure_id != self._closure_id:
            return TokenRejection("token_foreign", claims.epoch, claims.generation, claims.call_id)
        if claims.kind != kind:
            return TokenRejection("token_kind", claims.epoch, claims.generation, claims.call_id)
        return claims


def _claims(payload: bytes) -> TokenClaims | None:
    try:
        fields = json.loads(payload)
    except ValueError:
        return None
    if type(fields) is not list or len(fields) != 5:
        return None
    closure_id, epoch, generation, kind, call_id = fields
    plain = type(closure_id) is str and type(epoch) is int and type(generation) is int
    if not plain or kind not in ("call", "batch") or (call_id is None) != (kind == "batch"):
        return None
    if call_id is not None and type(call_id) is not str:
        return None
    return TokenClaims(closure_id, epoch, generation, kind, call_id)
