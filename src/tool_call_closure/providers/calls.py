"""The provider-neutral form of one announced tool call, as ingestion produces it and runners consume it.

Theory of operation
-------------------
Every provider announces calls in its own shape (a Chat ``tool_calls`` entry,
a Responses ``function_call`` item, an Anthropic ``tool_use`` block, a Gemini
``function_call`` part, a Bedrock ``toolUse`` block).  Ingestion turns each
into a :class:`ToolCall`: the provider's *pairing id* (the id the tool result
must carry back), the tool name, and the arguments both as parsed JSON and as
the raw text the model produced.

A :class:`ToolCall` is itself a valid entry for
:meth:`~tool_call_closure.ToolCallClosure.begin` (it has ``id`` and ``name``),
so ``closure.begin(ingested.calls)`` announces exactly the calls that need a
result.  A call that must not run — its arguments are not valid JSON, or the
stream ended before it was complete — carries a ``problem``; runners answer it
with an explicit error outcome and never execute it.

What ingestion returns is an :class:`Ingested`: the calls, in the order the
model announced them, and every item it *skipped* (text, reasoning, thinking,
server-side tools, a call without an id, a second call with an id already
used) with the reason, so nothing the model sent is dropped silently.  Its
``unfinished`` says why a streamed turn cannot be taken as whole (the stream
ended before the provider's end of turn, or its events came out of order);
``None`` for a whole turn.  Every call of such a turn carries a ``problem``
(the accumulators' ``finish(unfinished="run_complete")`` keeps the complete
calls of a cut turn runnable).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, final

from tool_call_closure.errors import UsageError

__all__ = ["Ingested", "ProviderRuleError", "SkippedItem", "ToolCall"]


@final
@dataclass(frozen=True, slots=True)
class ToolCall:
    """One announced tool call, ready for ``begin`` and for a runner."""

    id: str
    """The provider's pairing id: what the tool result must carry (for OpenAI Responses, ``call_id``)."""
    name: str
    """The tool's name."""
    arguments: Any
    """The arguments parsed as JSON (usually a dict); ``None`` when ``problem`` is set."""
    arguments_json: str
    """The arguments exactly as the model produced them (JSON text; ``""`` when the provider sent none)."""
    problem: str | None = None
    """Why this call must not run (invalid JSON arguments, a truncated stream …); ``None`` for a runnable call."""
    provider: str = ""
    """The provider API it came from: ``openai_chat``, ``openai_responses``, ``anthropic``, ``gemini``, ``bedrock``."""

    @property
    def runnable(self) -> bool:
        """True when the call may be executed (it has no ``problem``)."""
        return self.problem is None

    def with_problem(self, problem: str) -> ToolCall:
        """This call, not to be run: ``problem`` and no ``arguments`` (a call that has a problem keeps its own)."""
        if self.problem is not None:
            return self
        return ToolCall(self.id, self.name, None, self.arguments_json, problem, self.provider)


@final
@dataclass(frozen=True, slots=True)
class SkippedItem:
    """An item of the model's turn that is not a tool call needing a result, and why it was skipped."""

    index: int
    """Its position in the list ingestion read (output items, content blocks, parts)."""
    type: str
    """The item's own type name (``"text"``, ``"reasoning"``, ``"thinking"``, ``"web_search_call"`` …)."""
    reason: str
    """Why no result is owed for it."""


@final
@dataclass(frozen=True, slots=True)
class Ingested:
    """The calls of one model turn, ready for ``closure.begin(ingested.calls)``, and what was skipped."""

    calls: tuple[ToolCall, ...]
    """Every call that needs a result, in announcement order (runnable or not)."""
    skipped: tuple[SkippedItem, ...] = ()
    """Every item that needs no result."""
    stop_reason: str | None = None
    """The provider's stop reason, as it sent it (``None`` when it sent none, e.g. a cut stream)."""
    unfinished: str | None = None
    """Why the turn is not known to be whole (a stream cut before its end, events out of order); ``None`` if it is."""

    @classmethod
    def of(
        cls,
        calls: Iterable[ToolCall],
        skipped: Iterable[SkippedItem],
        stop_reason: str | None,
        unfinished: str | None = None,
    ) -> Ingested:
        """The ingested turn; a call without an id, or with the id of an earlier call, is moved to ``skipped``.

        Without an id there is nothing a result could be paired with (the
        provider issued no call to answer), and ``begin`` would refuse it.
        Two calls with one id cannot both be answered (one result answers
        an id): the first stays, with a ``problem`` (which of them the
        provider meant is unknown, so neither runs), the later ones are
        skipped.  A skipped call's ``index`` is its position among the calls.
        """
        listed = list(calls)
        counts: dict[str, int] = {}
        for call in listed:
            counts[call.id] = counts.get(call.id, 0) + 1
        paired: list[ToolCall] = []
        unpaired: list[SkippedItem] = []
        seen: set[str] = set()
        for position, call in enumerate(listed):
            if not call.id:
                why = f" ({call.problem})" if call.problem else ""
                unpaired.append(
                    SkippedItem(
                        position, "call_without_id", f"the provider sent a call to {call.name!r} without an id{why}"
                    )
                )
            elif call.id in seen:
                unpaired.append(SkippedItem(position, "duplicate_call_id", f"an earlier call has the id {call.id!r}"))
            else:
                seen.add(call.id)
                if counts[call.id] > 1:
                    call = call.with_problem(f"the provider sent {counts[call.id]} calls with this id")
                paired.append(call)
        return cls(tuple(paired), (*skipped, *unpaired), stop_reason, unfinished)

    @property
    def runnable(self) -> tuple[ToolCall, ...]:
        """The calls that may be executed."""
        return tuple(call for call in self.calls if call.problem is None)

    @property
    def problems(self) -> tuple[ToolCall, ...]:
        """The calls that must be answered with an error and never executed."""
        return tuple(call for call in self.calls if call.problem is not None)


class ProviderRuleError(UsageError):
    """A message list breaks a provider's pairing rules; the message is the provider's own error text.

    Raised by each provider module's preflight check (``check_messages`` /
    ``check_input`` / ``check_contents``) before a request is sent, so the
    mistake is found here rather than as an HTTP 400 one round trip later.
    ``provider`` names the provider API; ``index`` is the position in the
    list of the message the rule is about.
    """

    def __init__(self, message: str, *, provider: str, index: int) -> None:
        super().__init__(message, code="provider_rule")
        self.provider = provider
        self.index = index
