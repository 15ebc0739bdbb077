"""tool-call-closure: every announced AI tool call gets exactly one terminal outcome.

The reference implementation of the tool-call-closure state machine.  The
machine itself is data (``spec/machine.json``, shipped in this package); the
code here interprets it.  Start with :class:`ToolCallClosure`.

The layers, from the bottom (import-linter keeps each one from importing
those above it):

==================  ==========================================================
module / package    what lives there
==================  ==========================================================
``errors``          the one error root and its kinds; ``absent``: ``ABSENT``;
``absent``          JavaScript's ``undefined``; ``inputs``: what callers pass
``inputs``          (typed dicts of calls, outcomes, close reasons)
``parts``           content parts of a result (D22): ``content([...])``
``spec_files``      the shipped ``spec/`` files, found in the package
``ecma``            the original's JavaScript primitives on Python values
``ecma_json``       ``JSON.stringify`` for Python values (success content)
``ecma_plain``      its fast path for plain data (compiled with the machine)
``values``          the frozen values handed out: snapshots, results, handles
``machine/``        the transition table, its generated code and its meanings
``_compiled/``      the generated code compiled by mypyc, when built (optional)
``providers/``      one module per provider API: ingest, stream, render, check
``closure``         the public class :class:`ToolCallClosure`
``runners/``        run a batch's tools, each call ending exactly once
``durable/``        closures that outlive their process: images, epochs, tokens, SQLite/PostgreSQL stores
``conformance/``    the kit for ports: protocol subject, vectors, fuzzing
``cli/``            the ``tool-call-closure`` command
==================  ==========================================================
"""

from tool_call_closure.closure import ToolCallClosure, create_tool_call_closure, to_json
from tool_call_closure.errors import LimitError, TableError, ToolCallClosureError, UsageError
from tool_call_closure.parts import FileInput, ImageInput, JsonInput, TextInput, ToolContent, content
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
    "FileInput",
    "ImageInput",
    "JsonInput",
    "LimitError",
    "Limits",
    "Rejection",
    "Settlement",
    "SettlementResult",
    "Snapshot",
    "TableError",
    "TextInput",
    "ToolCallClosure",
    "ToolCallClosureError",
    "ToolContent",
    "TurnToken",
    "UsageError",
    "__version__",
    "content",
    "create_tool_call_closure",
    "to_json",
]
