"""tool-call-closure: every announced AI tool call gets exactly one terminal outcome.

The reference implementation of the tool-call-closure state machine.  The
machine itself is data (``spec/machine.json``, shipped in this package); the
code here interprets it.  Start with :class:`ToolCallClosure`.
"""

from ._closure import Limits, ToolCallClosure, create_tool_call_closure, to_json
from ._errors import LimitError, TableError, ToolCallClosureError, UsageError
from ._values import (
    Accepted,
    BatchHandle,
    BeginResult,
    CallSnapshot,
    CloseReason,
    Diagnostic,
    Rejection,
    Settlement,
    SettlementResult,
    Snapshot,
)

__version__ = "1.0.0"

__all__ = [
    "Accepted",
    "BatchHandle",
    "BeginResult",
    "CallSnapshot",
    "CloseReason",
    "Diagnostic",
    "LimitError",
    "Limits",
    "Rejection",
    "Settlement",
    "SettlementResult",
    "Snapshot",
    "TableError",
    "ToolCallClosure",
    "ToolCallClosureError",
    "UsageError",
    "__version__",
    "create_tool_call_closure",
    "to_json",
]
