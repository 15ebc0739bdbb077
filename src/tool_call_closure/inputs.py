"""The typed shapes of what callers pass in: call entries, outcomes and close reasons.

Theory of operation
-------------------
At run time the closure reads its inputs by key (mappings) or by attribute
(any other object), as the original reads JavaScript objects.  For a type
checker these are the shapes it accepts, so a typo fails in ``mypy`` rather
than at run time: ``{"status": "canceled"}`` is not a ``Literal`` status,
``{"nmae": …}`` is not a key of :class:`CallEntry`.

* :class:`CallEntry` — a ``{"id", "name"}`` mapping for ``begin``; any object
  with ``id`` and ``name`` string attributes (:class:`CallLike`: an ingested
  :class:`~tool_call_closure.providers.calls.ToolCall`, an Anthropic
  ``ToolUseBlock``, a dataclass) is accepted too.  An OpenAI Responses
  ``function_call`` item is *not* a ``CallLike`` (its ``id`` is optional, and
  is not the id its result must carry): type checkers refuse it, and so does
  ``begin`` at run time (deviation D9).
* :data:`Outcome` — :class:`SuccessOutcome` or :class:`FailureOutcome` for ``settle``.
* :class:`CloseReasonInput` — the reason of ``close``; every key optional.

At run time an outcome or close reason given as a mapping with any other key
is refused (deviation D10).  This module imports nothing from the package: it
is a leaf that every layer may name.
"""

from __future__ import annotations

from typing import Literal, Protocol, Required, TypeAlias, TypedDict

__all__ = [
    "CallEntry",
    "CallInput",
    "CallLike",
    "CloseReasonInput",
    "CloseStatus",
    "FailureOutcome",
    "Outcome",
    "SideEffectStateInput",
    "SuccessOutcome",
]

CloseStatus: TypeAlias = Literal["error", "cancelled"]
"""The statuses a close reason (and a failure outcome) may have."""
SideEffectStateInput: TypeAlias = Literal["unknown", "not_started"]
"""Whether a tool that got a synthetic outcome may have run."""


class CallEntry(TypedDict):
    """One announced call for ``begin``: the provider's pairing id and the tool name."""

    id: str
    name: str


class CallLike(Protocol):
    """Any object with ``id`` and ``name`` strings (read by attribute)."""

    @property
    def id(self) -> str: ...

    @property
    def name(self) -> str: ...


CallInput: TypeAlias = CallEntry | CallLike
"""An entry of ``begin``'s list."""


class SuccessOutcome(TypedDict):
    """``{"status": "success", "content": …}``: a string is stored as is, anything else as its JSON text."""

    status: Literal["success"]
    content: object


class FailureOutcome(TypedDict, total=False):
    """``{"status": "error" | "cancelled", "code"?, "message"?}``."""

    status: Required[CloseStatus]
    code: str
    message: object


Outcome: TypeAlias = SuccessOutcome | FailureOutcome
"""The outcome of ``settle``."""


class CloseReasonInput(TypedDict, total=False):
    """The reason of ``close``: every key optional (status ``cancelled``, code = status, side effect ``unknown``)."""

    status: CloseStatus
    code: str
    message: object
    sideEffectState: SideEffectStateInput
    side_effect_state: SideEffectStateInput
