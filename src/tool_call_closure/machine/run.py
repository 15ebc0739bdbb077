"""The record of the current generation: :class:`Run`, the whole committed state of an instance.

Theory of operation
-------------------
A ``Run`` never leaves the instance; everything handed out is a frozen value
of :mod:`tool_call_closure.values`.  It is alone in its module so that the
compiled build can compile it (:mod:`tool_call_closure._compiled`): compiled,
its fields are read from the object's own memory, not through the attribute
protocol, on every operation.  A process uses one ``Run`` class: the compiled
one exactly when the compiled machine runs (:data:`tool_call_closure.machine.context.Run`
chooses), since the compiled machine's code accepts no other.
"""

from __future__ import annotations

from tool_call_closure.values import CALL_SETTLEMENT, BatchHandle, CallRecord, CloseReasonRecord, DiagnosticRecord

__all__ = ["Run"]


class Run:
    """The record of the current generation (never handed out).

    Everything in it is the instance's own: calls, diagnostics and the close
    reason are plain-tuple records (:mod:`tool_call_closure.values`), and what
    a caller sees is a view built from them.  A commit never writes the
    installed record field by field: it builds the new record aside
    (:meth:`draft`, or a new ``Run`` for a new generation) and installs it
    with one assignment (:func:`~tool_call_closure.machine.context.install`).  The one exception is a
    settlement, whose whole write is one list-item assignment.
    """

    __slots__ = ("calls", "close_reason", "diagnostics", "generation", "handle", "index", "state")

    def __init__(
        self,
        generation: int,
        handle: BatchHandle,
        calls: list[CallRecord],
        index: dict[str, int],
        diagnostics: list[DiagnosticRecord],
        state: str = "",
        close_reason: CloseReasonRecord | None = None,
    ) -> None:
        self.generation = generation
        self.handle = handle
        self.state = state  # set by the row that installs the run
        self.calls = calls  # one CallRecord per call, replaced (never mutated) when the call settles
        self.index = index  # call id -> position in calls; never changes after the run is built
        self.diagnostics = diagnostics  # this generation's rejections (one list, shared by its drafts: DIAG-4)
        self.close_reason = close_reason

    @property
    def pending(self) -> int:
        """The number of calls without a settlement (counted, not stored: nothing can leave it stale)."""
        return sum(1 for call in self.calls if call[CALL_SETTLEMENT] is None)

    def draft(self) -> Run:
        """A copy to build the next version of this generation in: its own call list, the rest shared."""
        return Run(
            self.generation,
            self.handle,
            list(self.calls),
            self.index,
            self.diagnostics,
            self.state,
            self.close_reason,
        )
