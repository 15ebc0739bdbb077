"""The runners' options, checked once before anything is announced.

Theory of operation
-------------------
Both runners (and the MCP runner, which runs on the asyncio one) take the
same options.  Each public runner function checks them once, with
:meth:`RunOptions.checked`, before ``begin``, and hands the one checked
value down: a bad bound raises :class:`~tool_call_closure.UsageError`
(naming the option and the rule) and changes nothing: no generation is
announced, no tool runs.  Any finite number of seconds is valid, however
large: the runners wait in slices the platform accepts
(:data:`threading.TIMEOUT_MAX`), so a deadline of ``1e10`` is a deadline,
not an ``OverflowError``.  ``abort`` and ``on_late`` are carried as given.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, final

from tool_call_closure.errors import UsageError
from tool_call_closure.runners.outcomes import AbortSignal, Ending, LateResult, deadline_message

__all__ = ["DEFAULTS", "RunOptions", "no_checkpoint"]


def _seconds(name: str, value: object, *, allow_zero: bool) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UsageError(f"{name} must be a number of seconds or None, got {type(value).__name__}")
    try:
        number = float(value)
    except OverflowError:  # an int too large for a float (2**1100): not a finite number of seconds
        number = math.inf
    if not math.isfinite(number) or number < 0 or (number == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise UsageError(f"{name} must be a finite number of seconds {bound}, got {value!r}")
    return number


@final
@dataclass(frozen=True, slots=True)
class RunOptions:
    """The checked options of one run (seconds are floats; ``None`` means unbounded)."""

    call_timeout: float | None
    deadline: float | None
    max_concurrency: int | None
    cancel_grace: float
    abort: AbortSignal | None
    on_late: Callable[[LateResult], None] | None

    @classmethod
    def checked(
        cls,
        call_timeout: object = None,
        deadline: object = None,
        max_concurrency: object = None,
        cancel_grace: object = 1.0,
        abort: AbortSignal | None = None,
        on_late: Callable[[LateResult], None] | None = None,
    ) -> RunOptions:
        """The runner functions' options, checked (the defaults are theirs)."""
        if max_concurrency is not None and (
            isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int) or max_concurrency < 1
        ):
            raise UsageError(f"max_concurrency must be an int >= 1 or None, got {max_concurrency!r}")
        grace = _seconds("cancel_grace", cancel_grace, allow_zero=True)
        if grace is None:
            raise UsageError("cancel_grace must be a finite number of seconds >= 0, got None")
        return cls(
            _seconds("call_timeout", call_timeout, allow_zero=False),
            _seconds("deadline", deadline, allow_zero=False),
            max_concurrency,
            grace,
            abort,
            on_late,
        )

    def close_message(self, ending: Ending) -> str | None:
        """The message the batch is closed with when it ends ``ending`` (``None``: the ending's own)."""
        if ending == "deadline_exceeded" and self.deadline is not None:
            return deadline_message(self.deadline)
        if ending == "aborted" and self.abort is not None:
            return self.abort.message
        return None


DEFAULTS: Final = RunOptions.checked()
"""Every option as the runner functions default it."""


def no_checkpoint(label: str) -> None:
    """Between two steps of a run, nothing happens but what real concurrency brings."""
