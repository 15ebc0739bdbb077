"""What an operation works on: the instance it runs against, and its own typed context.

Theory of operation
-------------------
The interpreter runs one operation at a time against one *instance* (a
:class:`~tool_call_closure.ToolCallClosure`).  It reads the instance only
through :class:`Instance`, a protocol that names exactly the members the
machine uses, so this layer never imports the public class above it.

Each operation gets a fresh, small context object that holds its arguments and
what its phases compute.  There is one context class per operation shape, and
each guard, effect, result, observed kind and target rule of
:mod:`.semantics` declares the context class it reads in its signature.  When
the table is compiled the interpreter checks that every name a row uses
accepts the context of that row's operation (:data:`OPERATION_CONTEXTS`), so a
table that asks ``close`` for a call id fails to compile instead of failing at
run time.

::

    Context                      closure, method
    ├── ReadContext              snapshot, active_generation
    ├── BeginContext             begin: calls, validated calls, start generation, superseded snapshot
    ├── ExportContext            export: snapshot argument, renderer, payload
    └── HandleContext            handle, the generation a rejection reports
        ├── SettleContext        settle/succeed/fail/cancel: call id, outcome parts, preview, settlement
        ├── CloseContext         close: reason argument, normalized close reason
        └── SealContext          seal

:class:`Run` is the mutable record of the current generation.  It never leaves
the instance; everything handed out is a frozen value of
:mod:`tool_call_closure.values`.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol

from tool_call_closure.absent import ABSENT
from tool_call_closure.values import (
    BatchHandle,
    CallSnapshot,
    CloseReason,
    Diagnostic,
    Limits,
    Settlement,
    Snapshot,
)

__all__ = [
    "OPERATION_CONTEXTS",
    "BeginContext",
    "CloseContext",
    "Context",
    "ExportContext",
    "HandleContext",
    "Instance",
    "MachineView",
    "ReadContext",
    "Renderer",
    "Run",
    "SealContext",
    "SettleContext",
]

Renderer = Callable[[Snapshot], list[dict[str, Any]]]
"""A provider format: a closed snapshot to its payload (bound above the machine, by the public class)."""


class Run:
    """The mutable record of the current generation (never handed out)."""

    __slots__ = ("calls", "close_reason", "generation", "handle", "index", "pending", "state")

    def __init__(self, generation: int, handle: BatchHandle, calls: list[CallSnapshot], index: dict[str, int]) -> None:
        self.generation = generation
        self.handle = handle
        self.state = ""  # set by the row that installs the run
        self.calls = calls  # CallSnapshot records, replaced (never mutated) when a call settles
        self.index = index  # call id -> position in calls
        self.pending = len(calls)  # number of calls in the initial call state
        self.close_reason: CloseReason | None = None


class MachineView(Protocol):
    """What the semantics read of the compiled machine (:class:`.interpreter.Machine` provides it)."""

    @property
    def closed(self) -> frozenset[str]: ...
    @property
    def initial_call_state(self) -> str: ...
    @property
    def effect_run_to(self) -> Mapping[str, str]: ...
    @property
    def texts(self) -> Mapping[str, str]: ...

    def call_event(self, effect: str, status: str) -> str: ...
    def apply_call_event(self, call: CallSnapshot, event: str, settlement: Settlement) -> CallSnapshot: ...


class Instance(Protocol):
    """The members of an instance that the interpreter and the semantics read and write."""

    _lock: threading.Lock
    _generation: int
    _run: Run | None
    _diagnostics: list[Diagnostic]
    _registry: weakref.WeakValueDictionary[int, Snapshot]
    _trace: list[str] | None
    _superseded_message: str

    @property
    def _limits(self) -> Limits: ...
    @property
    def _machine(self) -> MachineView: ...

    def snapshot(self) -> Snapshot | None: ...


class Context:
    """The part every operation has: the instance and the name of the method called."""

    __slots__ = ("closure", "method")

    def __init__(self, closure: Instance, method: str) -> None:
        self.closure = closure
        self.method = method


class ReadContext(Context):
    """``snapshot`` and ``active_generation``: nothing but the instance."""

    __slots__ = ()


class BeginContext(Context):
    """``begin``: the call list as given, the validated ``(id, name)`` pairs, the superseded snapshot."""

    __slots__ = ("calls_arg", "start_generation", "superseded", "validated")

    def __init__(self, closure: Instance, method: str, calls: object) -> None:
        self.closure = closure
        self.method = method
        self.calls_arg = calls
        self.start_generation = closure._generation  # BEG-5: a nested begin changes it
        self.validated: list[tuple[str, str]] = []
        self.superseded: Snapshot | None = None


class HandleContext(Context):
    """Operations on a handle (settle, close, seal): the handle and the generation a rejection reports."""

    __slots__ = ("handle", "reject_generation")

    def __init__(self, closure: Instance, method: str, handle: object) -> None:
        self.closure = closure
        self.method = method
        self.handle = handle
        self.reject_generation: int | None = None


class SettleContext(HandleContext):
    """``settle`` and its convenience forms.

    ``fixed_status`` is the status a convenience form implies (``None`` for
    ``settle``, whose status comes from ``outcome``); ``content``, ``message``
    and ``code`` are the convenience forms' arguments; ``default_code`` is the
    code ``fail``/``cancel`` use when none is given.
    """

    __slots__ = (
        "call_id",
        "code",
        "content",
        "default_code",
        "fixed_status",
        "message",
        "message_is_error",
        "outcome",
        "preview",
        "settlement",
    )

    def __init__(self, closure: Instance, method: str, handle: object, call_id: Any) -> None:
        self.closure = closure
        self.method = method
        self.handle = handle
        self.reject_generation = None
        self.call_id: str = call_id  # validated (a plain str) by validate_call_id before anything reads it
        self.outcome: Any = ABSENT
        self.fixed_status: str | None = None
        self.content: Any = ABSENT
        self.message: Any = ABSENT
        self.message_is_error = False
        self.code: Any = ABSENT
        self.default_code = ""
        self.preview: str | None = None
        self.settlement: Settlement | None = None


class CloseContext(HandleContext):
    """``close``: the reason as given and its normalized form."""

    __slots__ = ("close_reason", "reason")

    def __init__(self, closure: Instance, method: str, handle: object, reason: object) -> None:
        self.closure = closure
        self.method = method
        self.handle = handle
        self.reject_generation = None
        self.reason = reason
        self.close_reason: CloseReason | None = None


class SealContext(HandleContext):
    """``seal``: nothing beyond the handle."""

    __slots__ = ()


class ExportContext(Context):
    """An export: the snapshot argument, the renderer of the method's format, the rendered payload."""

    __slots__ = ("payload", "renderer", "snapshot_arg")

    def __init__(self, closure: Instance, method: str, snapshot: object, renderer: Renderer) -> None:
        self.closure = closure
        self.method = method
        self.snapshot_arg = snapshot
        self.renderer = renderer
        self.payload: list[dict[str, Any]] = []


OPERATION_CONTEXTS: Final[Mapping[str, type[Context]]] = {
    "begin": BeginContext,
    "settle": SettleContext,
    "close": CloseContext,
    "seal": SealContext,
    "snapshot": ReadContext,
    "active_generation": ReadContext,
    "export": ExportContext,
}
"""The context class each operation of the table runs with (checked against the semantics' signatures)."""
