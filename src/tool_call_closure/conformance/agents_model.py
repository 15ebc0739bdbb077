"""The table's interpreter as a sequential model for the linearizability checker (:mod:`.linearizability`).

Theory of operation
-------------------
An operation of a history is one protocol request (its line, ``Operation.op``) and the response lines it got
(``Operation.answer``, without their ``agent`` member).  The model runs requests on the reference itself: a
protocol :class:`~.serve.Server` over the shipped machine, driven one request at a time.  Its answer to a request
is the response lines the reference writes, and a recorded answer matches when the conformance runner's
comparison rules (:func:`.compare.diff_responses`: kinds exactly, messages by the table's templates,
``ProtocolError`` messages not at all) find no difference.  So the checker's verdict is the table's: a history is
linearizable when some order of its requests, run through the reference one by one, answers each as recorded.

A model state (:class:`TableState`) is what the reference's instance holds that a later request can observe —
the generation counter, the active generation, the snapshot (its calls, settlements, close reason and
diagnostics), the diagnostics recorded before the first ``begin``, which request ids returned a value (``$snapshot``
refers to them) and which generations have handles — plus the two facts the concurrency-only answers need (below).
Equal states answer every later request alike, which is what makes the checker's cache sound.  The requests that
led to a state are kept beside it (not compared): the model reaches a state by replaying them on one reused
server, and a depth-first search mostly extends the state the server is already in, so a replay is rare.

Two answers exist only when operations overlap (spec/README.md §5.2, §6.4, §8; ``tests/test_linearizability.py``
shows reentrant caller code producing exactly these): the model offers them as alternatives beside the sequential
answer.

* A settlement (any form) admitted while its call was pending and rechecked after another settlement's commit is
  rejected ``duplicate_settlement`` with the *normalized* status as ``observedStatus`` (not null), and records
  that diagnostic.  Offered where the sequential answer is ``duplicate_settlement`` with null and the settlement
  that was accepted is already in the order and responded after this request was invoked (or never responded).
* A ``begin`` whose validation overlapped another ``begin``'s commit raises ``generation_changed`` and changes
  nothing.  Offered where the sequential answer is a successful ``begin`` and a successful ``begin`` already in the
  order responded after this one was invoked (or never responded).
"""

from __future__ import annotations

import copy
import functools
import io
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from tool_call_closure.conformance.compare import diff_responses
from tool_call_closure.conformance.linearizability import Model, Operation
from tool_call_closure.conformance.serve import CAPABILITIES, Server
from tool_call_closure.conformance.subject import encode_request, parse_response_line
from tool_call_closure.errors import spec_error

__all__ = ["NORMALIZED_STATUS", "TableModel", "TableState", "operation", "strip_agent", "table_model"]

# The status each settle form normalizes to (settle's is its outcome's status).
NORMALIZED_STATUS: Final = {"succeed": "success", "fail": "error", "cancel": "cancelled"}
_GENERATION_CHANGED: Final = spec_error("generation_changed")
Move = tuple[str, str]  # (request line, alternative: "" | "gen" | "dup:<status>")


@dataclass(frozen=True, slots=True, eq=False)
class TableState:
    """A model state: compared and hashed by ``key``; ``moves`` are the requests that reach it (not compared)."""

    key: tuple[Any, ...]
    moves: tuple[Move, ...] = field(default=())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TableState) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)


def strip_agent(responses: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Response lines as the model writes them: without the ``agent`` member a concurrent subject adds."""
    return [{k: v for k, v in line.items() if k != "agent"} for line in responses]


def operation(
    agent: Any, invoke: float, response: float | None, request: dict[str, Any] | str, answer: Sequence[dict[str, Any]]
) -> Operation:
    """An :class:`Operation` of the table's model: ``request`` without its ``agent``, as a line."""
    if isinstance(request, dict):
        request = encode_request({k: v for k, v in request.items() if k != "agent"})
    return Operation(agent, invoke, response, request, strip_agent(answer) if response is not None else None)


class TableModel:
    """The reference run sequentially, one reused :class:`Server` (see the module's docstring)."""

    def __init__(self) -> None:
        self._out = io.BytesIO()
        self._server = copy.copy(_prototype())  # a fresh session, without working out the methods' signatures again
        self._server._out = self._out
        self._server._closure, self._server._handles, self._server._results, self._server._clones = None, {}, {}, {}
        self._at: tuple[Move, ...] = ()
        self.replays = 0
        self._texts: dict[int, tuple[Any, list[str]]] = {}  # a recorded answer's lines as compact JSON text
        self.init = TableState(self._key({}, -math.inf))

    # ------------------------------------------------------------------ the server's state

    def _key(self, winners: dict[tuple[Any, Any], float], begun: float, results: Any = None) -> tuple[Any, ...]:
        server = self._server
        closure = server._closure
        core: tuple[Any, ...] = ()
        if closure is not None:
            snapshot = closure.snapshot()
            core = (
                closure._generation,
                closure.active_generation,
                None if snapshot is None else server._value_text(snapshot),
                tuple(closure._no_run_diagnostics),
            )
        keys = frozenset(server._results) if results is None else results
        return (core, keys, frozenset(server._handles), tuple(sorted(winners.items(), key=repr)), begun)

    def _run(self, move: Move) -> list[dict[str, Any]]:
        line, alternative = move
        server = self._server
        if alternative == "gen":  # changes nothing; the request id no longer refers to a value
            request = json.loads(line)
            server._results.pop(request.get("id"), None)
            return []
        self._out.seek(0)
        self._out.truncate()
        closure = server._closure
        count = len(closure._diagnostics) if closure is not None else 0
        server.handle_line(line)
        if alternative.startswith("dup:") and closure is not None and len(closure._diagnostics) > count:
            reason, call_id, generation, _ = closure._diagnostics[-1]
            closure._diagnostics[-1] = (reason, call_id, generation, alternative[4:])
        return [_Line(text) for text in self._out.getvalue().decode("utf-8").splitlines()]

    def _sync(self, moves: tuple[Move, ...]) -> None:
        if self._at != moves[: len(self._at)]:
            self._server._closure = None
            self._server._handles = {}
            self._server._results = {}
            self._at = ()
            self.replays += 1
        for move in moves[len(self._at) :]:
            self._run(move)
        self._at = moves

    # ------------------------------------------------------------------ the step function

    def steps(self, state: TableState, op: Operation) -> list[tuple[TableState, Any]]:
        """The outcomes of ``op`` from ``state``: the sequential one, and an overlap-only one where allowed."""
        self._sync(state.moves)
        core, results, handles, winners_items, begun = state.key
        winners = dict(winners_items)
        line = str(op.op)
        finish = math.inf if op.response is None else op.response
        answer = self._run((line, ""))
        self._at = (*state.moves, (line, ""))
        ok = answer[-1].get("ok") if answer else None
        request = json.loads(line)
        method = request.get("method") if request.get("cmd") == "call" else None
        began = method == "begin" and isinstance(ok, dict) and "handle" in ok
        next_begun = max(begun, finish) if began else begun
        if isinstance(ok, dict) and ok.get("accepted") is True:
            winners[(ok.get("generation"), ok.get("callId"))] = finish
        outcomes = [(TableState(self._key(winners, next_begun), self._at), answer)]
        if began and begun > op.invoke:
            error = {"kind": _GENERATION_CHANGED.kind, "message": str(_GENERATION_CHANGED)}
            gone = results - {request.get("id")}
            state_after = TableState((core, gone, handles, winners_items, begun), (*state.moves, (line, "gen")))
            outcomes.append((state_after, [{"id": request.get("id"), "error": error}]))
        if isinstance(ok, dict) and ok.get("reason") == "duplicate_settlement" and ok.get("observedStatus") is None:
            status = _normalized(request)
            finished = winners.get((ok.get("generation"), ok.get("callId")))
            if status is not None and finished is not None and finished > op.invoke:
                outcomes.append(self._duplicate(state, line, status, answer, winners, next_begun))
        return outcomes

    def _duplicate(
        self,
        state: TableState,
        line: str,
        status: str,
        answer: list[dict[str, Any]],
        winners: dict[tuple[Any, Any], float],
        begun: float,
    ) -> tuple[TableState, Any]:
        moves = (*state.moves, (line, f"dup:{status}"))
        self._sync(moves)  # from the sequential outcome's server: a replay
        reported = [dict(response) for response in answer]
        reported[-1]["ok"] = {**reported[-1]["ok"], "observedStatus": status}
        return TableState(self._key(winners, begun), moves), reported

    def matches(self, answer: Any, recorded: Any) -> bool:
        """Whether the model's response lines explain the recorded ones (the runner's comparison rules)."""
        if not isinstance(recorded, list) or len(recorded) != len(answer):
            return False
        texts = self._texts.get(id(recorded))
        if texts is None or texts[0] is not recorded:
            texts = self._texts[id(recorded)] = (recorded, [_TEXT.encode(line) for line in recorded])
        if all(isinstance(a, _Line) and a.text == t for a, t in zip(answer, texts[1], strict=True)):
            return True  # the same text: the same values (the common case, without a walk)
        return diff_responses(answer, recorded) is None


_TEXT: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


class _Line(dict[str, Any]):
    """A response line the model wrote: the parsed object, and its text (compared first, :meth:`TableModel.matches`)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        super().__init__(parse_response_line(text))
        self.text = text


@functools.cache
def _prototype() -> Server:
    return Server(io.BytesIO(), capabilities=tuple(c for c in CAPABILITIES if c != "agents"))


def _normalized(request: dict[str, Any]) -> str | None:
    """The status a settle-family request normalizes to, when its arguments show it plainly."""
    method = request.get("method")
    if method in NORMALIZED_STATUS:
        return NORMALIZED_STATUS[method]
    args = request.get("args")
    if method == "settle" and isinstance(args, list) and len(args) > 2 and isinstance(args[2], dict):
        status = args[2].get("status")
        return status if isinstance(status, str) else None
    return None


def table_model(history: Sequence[Operation] | None = None) -> Model[TableState]:
    """A fresh model of the table (each check needs its own: the model keeps one server).  With the ``history`` it
    will check, the model also prunes (:func:`_observations`)."""
    model = TableModel()
    observations = _observations(history) if history is not None else None
    if not observations:
        return Model(model.init, model.steps, model.matches)
    return Model(model.init, model.steps, model.matches, functools.partial(_hopeless, observations))


Observation = tuple[int, int, tuple[Any, ...], dict[str, str], bool]  # (index, generation, diagnostics, calls, closed)


def _observations(history: Sequence[Operation]) -> list[Observation]:
    """What each operation's recorded answer shows of a generation: a snapshot (``snapshot``, ``close``, ``seal``)
    or a ``begin``'s superseded one.  None of it is used when the history makes more than one instance (a ``new``
    starts the generations again) or sets ``maxDiagnostics`` (dropped diagnostics break the prefix rule)."""
    found: list[Observation] = []
    news = 0
    for index, op in enumerate(history):
        request = json.loads(str(op.op))
        if request.get("cmd") == "new":
            news += 1
            if news > 1 or "options" in request:
                return []
        if not isinstance(op.answer, list) or not op.answer or not isinstance(op.answer[-1], dict):
            continue
        ok = op.answer[-1].get("ok")
        shown = ok.get("superseded") if isinstance(ok, dict) and "handle" in ok else ok
        if isinstance(shown, dict) and isinstance(shown.get("diagnostics"), list) and "calls" in shown:
            try:
                diagnostics = tuple(tuple(d.values()) for d in shown["diagnostics"])
                calls = {c["id"]: c["state"] for c in shown["calls"]}
                found.append((index, shown["generation"], diagnostics, calls, shown["closed"] is True))
            except (AttributeError, KeyError, TypeError):
                continue  # not a snapshot the table could show: the search refutes it without help
    return found


@functools.lru_cache(maxsize=4096)
def _shown(text: str) -> tuple[int, bool, tuple[Any, ...], dict[str, str]]:
    snapshot = json.loads(text)
    diagnostics = tuple(tuple(d.values()) for d in snapshot["diagnostics"])
    return snapshot["generation"], snapshot["closed"], diagnostics, {c["id"]: c["state"] for c in snapshot["calls"]}


def _hopeless(observations: list[Observation], state: TableState, placed: int) -> bool:
    """True when an observation still to place shows a generation ``state`` has gone past: generations only grow,
    a generation's diagnostics only grow at the end (below maxDiagnostics), a call settles once, a closed
    generation stays closed."""
    core = state.key[0]
    if not core or core[2] is None:
        return False
    generation, closed, diagnostics, calls = _shown(core[2])
    limit = 100  # the default maxDiagnostics (a history that sets it has no observations)
    for index, shown_generation, shown_diagnostics, shown_calls, shown_closed in observations:
        if placed >> index & 1 or shown_generation > generation:
            continue
        if shown_generation < generation or (closed and not shown_closed):
            return True
        if len(shown_diagnostics) < limit and shown_diagnostics[: len(diagnostics)] != diagnostics:
            return True
        if any(call_state != "pending" and shown_calls.get(i) != call_state for i, call_state in calls.items()):
            return True
    return False
