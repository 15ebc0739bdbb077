"""Exceptions: one root, two concrete kinds, messages from the spec.

Theory of operation
-------------------
The original raises two kinds of exception: ``TypeError`` (a value of the
wrong shape, or an operation used wrongly) and ``RangeError`` (a configured
limit exceeded).  Python callers expect ``TypeError`` and ``ValueError`` for
those, and a library expects one root to catch everything it raises, so:

* :class:`ToolCallClosureError` is the root of every exception this package
  raises on its own account;
* :class:`UsageError` is a ``TypeError`` (the original's TypeError);
* :class:`LimitError` is a ``ValueError`` (the original's RangeError);
* :class:`TableError` means a transition table failed validation;
* :class:`FrozenValueError` is a write to a frozen value (a
  ``dataclasses.FrozenInstanceError``, as for any frozen dataclass).

Every error the state machine can raise has an entry in the ``errors`` list of
``spec/machine.json``: a permanent ``code``, its ``kind`` and its message
template.  :func:`spec_error` builds the exception from that entry, so message
text lives in the spec, not in the code.  Exceptions raised by *caller code*
(a ``__str__``, a property, a ``__json__`` hook) are never wrapped: they
propagate unchanged, as in the original.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import FrozenInstanceError
from typing import Any, ClassVar, Final

from tool_call_closure.spec_files import machine_document

__all__ = [
    "FrozenValueError",
    "LimitError",
    "TableError",
    "ToolCallClosureError",
    "UsageError",
    "spec_error",
]


class ToolCallClosureError(Exception):
    """Root of every exception raised by this package.

    ``code`` is the permanent error code from ``spec/machine.json`` (for
    example ``"calls_not_array"``); ``kind`` is the original's error class name
    (``"TypeError"`` or ``"RangeError"``).
    """

    kind: ClassVar[str] = "Error"

    def __init__(self, message: str, *, code: str = "unspecified") -> None:
        super().__init__(message)
        self.code = code

    @property
    def message(self) -> str:
        """The message text, exactly as the spec words it."""
        return str(self.args[0]) if self.args else ""


class UsageError(ToolCallClosureError, TypeError):
    """A value of the wrong shape, or an operation used wrongly (the original's TypeError)."""

    kind: ClassVar[str] = "TypeError"


class LimitError(ToolCallClosureError, ValueError):
    """A configured limit was exceeded (the original's RangeError)."""

    kind: ClassVar[str] = "RangeError"


class TableError(ToolCallClosureError, ValueError):
    """A transition table failed validation; the message names the offending part."""

    kind: ClassVar[str] = "TableError"


class FrozenValueError(ToolCallClosureError, FrozenInstanceError):
    """A write to a value the closure returned (they are all frozen); code ``value_frozen``."""

    kind: ClassVar[str] = "TypeError"

    def __init__(self, message: str) -> None:
        super().__init__(message, code="value_frozen")


_KIND_CLASSES: dict[str, type[ToolCallClosureError]] = {
    "TypeError": UsageError,
    "RangeError": LimitError,
}


def spec_error(code: str, /, **params: Any) -> ToolCallClosureError:
    """Build the exception for spec error ``code``, its message filled from ``params``.

    The caller raises it: ``raise spec_error("calls_not_array")``.
    """
    kind, template = _TEMPLATES[code]
    return _KIND_CLASSES[kind](template.format(**params), code=code)


def _templates() -> Mapping[str, tuple[str, str]]:
    """code -> (kind, message template), from the ``errors`` of the shipped table.

    Read from the table's document rather than from the loaded table so that
    this module sits below the machine: the table loader imports it, not the
    other way round.  The loader validates the same entries.
    """
    return {entry["code"]: (entry["kind"], entry["message"]) for entry in machine_document()["errors"]}


_TEMPLATES: Final = _templates()
