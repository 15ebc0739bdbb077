"""What the five stream accumulators share: the end of a turn, events out of order, and the unfinished-turn policy.

Theory of operation
-------------------
Each accumulator (``ChatStream``, ``ResponsesStream``, ``AnthropicStream``,
``GeminiStream``, ``BedrockStream``) keeps one :class:`TurnState`: whether
the provider's *end of turn* arrived (Chat: the choice's ``finish_reason``;
Responses: ``response.completed`` or ``response.incomplete``; Anthropic: the
``message_delta`` carrying ``stop_reason``, or ``message_stop``; Gemini: a
candidate's ``finish_reason``; Bedrock: ``messageStop``), the stop reason,
and the first sign that the events came *out of order* (a delta after its
block's stop or before its start, a block started twice, an event after the
end, a Responses ``sequence_number`` that does not increase, a Chat call
announced after a fragment of it, an Anthropic ``message_start`` or a
Responses response event naming another response).  Out-of-order events
are recorded, not raised: the accumulator cannot tell a reordered stream
from two streams interleaved or a duplicated event, and whatever it had
taken may be wrong.  Where *every* chunk names its response (a Chat chunk's
``id``, a Gemini chunk's ``response_id``), a chunk of another response is
refused with :class:`.UsageError` instead and changes nothing: it was given
to the wrong accumulator, and the stream's own chunks are still told apart.
Bedrock's events name nothing: two streams interleaved are seen only where
their structure collides (a second ``messageStart``, a block index reused).

:func:`finish_turn` applies the rules to the calls at ``finish()``:

* **out of order** — every call carries a ``problem``; no policy runs any;
* **unfinished** (the stream ended before the end of turn: a cut
  connection, an error event, a stopped iteration) — the incomplete calls
  carry a problem, and with the default policy ``unfinished="answer"`` so
  does every *complete* call: a turn that never finished was never fully
  announced (the calls after the cut are unknown, and the calls already
  delivered were announced as part of a turn the provider never confirmed),
  so the default answers every call with an error and runs none.
  ``unfinished="run_complete"`` is the explicit opt-in to run the calls that
  did complete (a caller who runs calls as ``add`` completes them has made
  that choice and says so at ``finish``);
* **finished** — the calls as they are (a turn the provider ended on its
  output limit has its last call marked by the provider module: that one
  was cut, the ones before it were confirmed).

In both first cases :attr:`.Ingested.unfinished` says why.

Every accumulator derives from :class:`TurnAccumulator`, which holds the
turn's state and the skipped items and implements ``finish`` once; a
provider module says only which calls it has so far (``_calls_so_far``) and how a
stream that never ended is described (``_cut``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import ClassVar, Final, Literal, TypeAlias

from tool_call_closure.errors import UsageError
from tool_call_closure.providers.calls import Ingested, SkippedItem, ToolCall
from tool_call_closure.providers.reading import described

__all__ = ["UNFINISHED_POLICIES", "TurnAccumulator", "TurnState", "UnfinishedPolicy", "finish_turn"]

UnfinishedPolicy: TypeAlias = Literal["answer", "run_complete"]
"""What ``finish()`` does with the complete calls of a turn that never finished: answer them (default) or run them."""
UNFINISHED_POLICIES: Final = ("answer", "run_complete")


class TurnState:
    """The end of one streamed turn and the first event out of order, as an accumulator saw them."""

    __slots__ = ("disorder", "ended", "stop_reason")

    def __init__(self) -> None:
        self.ended = False
        self.stop_reason: str | None = None
        self.disorder: str | None = None  # the first event out of order, described; later ones add nothing

    def out_of_order(self, what: str) -> None:
        """Record an event that breaks the provider's order (only the first is kept: bounded memory)."""
        if self.disorder is None:
            self.disorder = what

    def end(self, stop_reason: str | None) -> None:
        """The provider's end of turn arrived, with its stop reason (a later one does not replace it)."""
        self.ended = True
        if self.stop_reason is None:
            self.stop_reason = stop_reason


def check_policy(reader: str, unfinished: object) -> None:
    """Refuse a policy that is not one of :data:`UNFINISHED_POLICIES`, naming the argument and what it got."""
    if type(unfinished) is not str or unfinished not in UNFINISHED_POLICIES:
        shown = repr(unfinished) if type(unfinished) is str else described(unfinished)
        raise UsageError(
            f"{reader}: unfinished must be 'answer' or 'run_complete', got {shown[:80]}", code="provider_value_invalid"
        )


def finish_turn(
    reader: str,
    state: TurnState,
    calls: Iterable[ToolCall],
    skipped: Iterable[SkippedItem],
    unfinished: UnfinishedPolicy,
    cut: str,
) -> Ingested:
    """The :class:`.Ingested` of a stream: the rules of the module docstring; ``cut`` says how the stream ended."""
    check_policy(reader, unfinished)
    if state.disorder is not None:
        why = f"the stream's events came out of order ({state.disorder})"
        return Ingested.of(
            [call.with_problem(f"{why}: this call cannot be trusted") for call in calls],
            skipped,
            state.stop_reason,
            why,
        )
    if not state.ended:
        why = f"the stream ended before the turn was finished ({cut})"
        if unfinished == "answer":
            answered = f"{why}: this call is answered, not run (finish(unfinished='run_complete') runs it)"
            calls = [call.with_problem(answered) for call in calls]
        return Ingested.of(calls, skipped, state.stop_reason, why)
    return Ingested.of(calls, skipped, state.stop_reason)


class TurnAccumulator:
    """The base of every provider's stream accumulator: the turn's state, the skipped items, ``finish``.

    A subclass names itself (``READER``, for error messages), takes events in
    its own ``add`` and answers :meth:`_calls_so_far`: every call of the stream so
    far, in order, an incomplete one with its ``problem``.
    """

    __slots__ = ("_skipped", "_turn")
    READER: ClassVar[str]  # the accumulator's class name, as messages show it
    CUT: ClassVar[str]  # how a stream that never sent its end of turn is described

    def __init__(self) -> None:
        self._turn = TurnState()
        self._skipped: list[SkippedItem] = []

    def finish(self, *, unfinished: UnfinishedPolicy = "answer") -> Ingested:
        """Every call of the stream, in order; a call that did not complete carries a ``problem``.

        ``unfinished`` is the policy for a stream that ended before the
        provider's end of turn (the module docstring of
        :mod:`tool_call_closure.providers.streaming`): ``"answer"`` (every
        call is answered, none run) or ``"run_complete"`` (the calls that
        completed run).  ``finish`` changes nothing: it may be called again,
        with either policy.
        """
        return finish_turn(
            f"{self.READER}.finish", self._turn, self._calls_so_far(), self._skipped_items(), unfinished, self._cut()
        )

    def _calls_so_far(self) -> Sequence[ToolCall]:
        raise NotImplementedError

    def _skipped_items(self) -> Sequence[SkippedItem]:
        return self._skipped

    def _cut(self) -> str:
        return self.CUT
