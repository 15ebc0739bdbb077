"""tool-call-closure: every announced AI tool call gets exactly one terminal outcome.

The reference implementation of the tool-call-closure state machine.  The
machine itself is data (``spec/machine.json``, shipped in this package); the
code here interprets it.  Start with :class:`ToolCallClosure`.
"""

from tool_call_closure.closure import ToolCallClosure, create_tool_call_closure, to_json
from tool_call_closure.errors import LimitError, TableError, ToolCallClosureError, UsageError
from tool_call_closure.values import (
    Accepted,
    BatchHandle,
    BeginResult,
    CallSnapshot,
    CloseReason,
    Diagnostic,
    Limits,
    Rejection,
    Settlement,
    SettlementResult,
    Snapshot,
    TurnToken,
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
    "TurnToken",
    "UsageError",
    "__version__",
    "create_tool_call_closure",
    "to_json",
]
