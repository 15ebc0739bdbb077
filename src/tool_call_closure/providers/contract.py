"""The provider contract: what every provider module offers, as a type every module is checked against.

Theory of operation
-------------------
A provider module is one provider API (:mod:`.openai_chat`, :mod:`.anthropic`
…).  Its own names follow its SDK (``next_messages`` for a message list,
``next_input`` for Responses' input items, ``check_contents`` for Gemini's
contents), and beside them every module exports the same few names, so code
that treats providers alike — the export binding of the public class, the
property tests, a sixth provider's checks — needs no table of its own:

==========================  ================================================================
name                        what it is
==========================  ================================================================
``PROVIDER``                the ``provider`` of the :class:`~.calls.ToolCall`\\ s it ingests
``FORMAT``                  the export format the table names (``spec/machine.json``)
``ingest(value)``           the calls of one model turn, as an :class:`~.calls.Ingested`
``Stream``                  the stream accumulator class: a :class:`~.streaming.TurnAccumulator`
                            with its own ``add(event)`` and ``_calls_so_far()``
``render_records``          the renderer of the format: call records → payload items
``render_tool_results``     the same for a snapshot built outside an instance
``next_request``            the module's next-request builder (``next_messages`` …)
``preflight``               the module's check of a whole transcript (``check_messages`` …)
==========================  ================================================================

:class:`ProviderModule` is that contract as a ``Protocol``: mypy checks each
module against it where the registry (:data:`tool_call_closure.providers.PROVIDERS`)
lists it, and :func:`check_provider_module` checks it at run time, naming
the first piece a module lacks (``tests/test_provider_contract.py``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, Protocol

from tool_call_closure.errors import UsageError
from tool_call_closure.providers.calls import Ingested, ToolCall
from tool_call_closure.providers.streaming import TurnAccumulator, UnfinishedPolicy
from tool_call_closure.values import CallRecord, Snapshot

__all__ = ["ProviderModule", "StreamAccumulator", "check_provider_module"]


class StreamAccumulator(Protocol):
    """A provider's stream accumulator: every chunk or event of one streamed turn in, the turn's calls out."""

    def add(self, event: object, /) -> tuple[ToolCall, ...]: ...

    def finish(self, *, unfinished: UnfinishedPolicy = "answer") -> Ingested: ...


class ProviderModule(Protocol):
    """What every provider module offers (read-only: a module's constants are ``Final``)."""

    @property
    def PROVIDER(self) -> str: ...  # the module constant's name

    @property
    def FORMAT(self) -> str: ...

    @property
    def Stream(self) -> Callable[[], StreamAccumulator]: ...  # a class

    @property
    def next_request(self) -> Callable[..., Sequence[Any]]: ...

    @property
    def preflight(self) -> Callable[..., None]: ...

    def ingest(self, value: object, /) -> Ingested: ...

    def render_records(
        self, calls: Sequence[CallRecord], memo: dict[str, Any] | None = None, /
    ) -> list[dict[str, Any]]: ...

    def render_tool_results(self, snapshot: Snapshot, /) -> list[dict[str, Any]]: ...


_FUNCTIONS = ("ingest", "render_records", "render_tool_results", "next_request", "preflight")


def check_provider_module(module: ModuleType) -> None:
    """Raise :class:`~tool_call_closure.UsageError` naming the first piece of the contract ``module`` lacks."""
    name = module.__name__
    for constant in ("PROVIDER", "FORMAT"):
        value = getattr(module, constant, None)
        if not isinstance(value, str) or not value:
            raise UsageError(f"provider module {name} must define {constant} as a non-empty str")
    for function in _FUNCTIONS:
        if not callable(getattr(module, function, None)):
            raise UsageError(f"provider module {name} must define {function}() (see providers.contract)")
    stream = getattr(module, "Stream", None)
    if not inspect.isclass(stream):
        raise UsageError(f"provider module {name} must define Stream, its stream accumulator class")
    if not issubclass(stream, TurnAccumulator):
        raise UsageError(
            f"provider module {name}: Stream ({stream.__name__}) must derive from providers.streaming.TurnAccumulator"
        )
    if not callable(getattr(stream, "add", None)):
        raise UsageError(f"provider module {name}: Stream ({stream.__name__}) must define add()")
    if stream._calls_so_far is TurnAccumulator._calls_so_far:
        raise UsageError(f"provider module {name}: Stream ({stream.__name__}) must define _calls_so_far()")
    for function in _FUNCTIONS[:1]:
        if len(inspect.signature(getattr(module, function)).parameters) < 1:
            raise UsageError(f"provider module {name}: {function}() must take the value to read")
    exported = set(getattr(module, "__all__", ()))
    missing = [piece for piece in ("PROVIDER", "FORMAT", "Stream", *_FUNCTIONS) if piece not in exported]
    if missing:
        raise UsageError(f"provider module {name} must list {missing[0]} in __all__")
