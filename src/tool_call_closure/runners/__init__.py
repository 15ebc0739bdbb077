"""Runners: execute an announced batch's tools under timeouts and cancellation, each call ending exactly once.

Theory of operation
-------------------
A runner sits above the closure: it announces the calls
(``closure.begin``), runs their tools, and settles every call through the
closure's own API, so the closure's guarantees — one terminal outcome per
call, fencing, immutable snapshots — hold whatever the tools do.  Two
runners share one set of batch rules (:mod:`.batch`) and one vocabulary of
outcome codes (:mod:`.outcomes`):

* :func:`run_tool_calls` — ``async`` tools on the running asyncio loop
  (``asyncio_runner``);
* :func:`run_tool_calls_in_threads` — synchronous tools on a thread pool
  (``thread_runner``).

Their shared arguments are checked once, in ``options``.

Tools served by MCP servers run through the asyncio runner
(:mod:`.mcp_tools`: connect, list, run), with the MCP wire under it
(:mod:`.mcp_wire`: ``notifications/cancelled``, late answers, progress) and
each answer mapped to the call's outcome (:mod:`.mcp_results`).  They need
the ``mcp`` extra and import it only when used; this package does not
import them.

Both take the calls as :class:`~tool_call_closure.providers.calls.ToolCall`
values (what ingestion produces), a per-call timeout, a batch deadline, an
optional concurrency limit and an :class:`AbortSignal`, and return a
:class:`BatchRun` whose ``snapshot`` is closed and ready to export — or,
given the ``turn`` token of the model turn and a newer turn has begun since,
a :class:`StaleTurn` (nothing announced, nothing run).

Both are checked like the machine: ``proofs/runner_sim.py`` runs them on a
virtual clock under a scheduler it controls, through every interleaving of
tools, timers and disturbances (see ``tests/test_runner_sim.py``).
"""

from tool_call_closure.runners.asyncio_runner import AsyncTools, RunningCall, run_tool_calls, running_call
from tool_call_closure.runners.outcomes import (
    AbortSignal,
    BatchRun,
    Ending,
    LateResult,
    RunnerCode,
    StaleTurn,
    ToolCallError,
)
from tool_call_closure.runners.thread_runner import SyncTools, run_tool_calls_in_threads

__all__ = [
    "AbortSignal",
    "AsyncTools",
    "BatchRun",
    "Ending",
    "LateResult",
    "RunnerCode",
    "RunningCall",
    "StaleTurn",
    "SyncTools",
    "ToolCallError",
    "run_tool_calls",
    "run_tool_calls_in_threads",
    "running_call",
]
