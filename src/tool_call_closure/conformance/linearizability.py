"""Linearizability of a concurrent history against a sequential model: Wing & Gong's search, porcupine's cache.

Theory of operation
-------------------
A *history* is a list of :class:`Operation`: who ran it (``agent``), when it was invoked, when its response
arrived (``None`` when it never was observed: a crashed worker, a lost log line, an operation still running when
the history ended), what it was (``op``) and what it answered (``answer``, compared only when the response was
observed).  Times are numbers on one monotonic clock; only their order matters.

A *model* (:class:`Model`) is the sequential specification as a pure step function: from a state and an
operation, the states it may lead to and the answer given in each (one outcome for a deterministic model, several
when the specification allows several answers).  States must be hashable, and two states that are equal must
behave the same from then on: that is what makes the cache sound.

The history is *linearizable* when its operations can be put in one sequential order that (1) keeps real-time
order (an operation whose response came before another's invocation goes first), (2) holds every operation whose
response was observed, and any subset of the unobserved ones (an unobserved operation may or may not have taken
effect), and (3) gives, run through the model from its initial state, each observed operation its recorded answer.

The search (:func:`check`) is Wing & Gong's depth-first search over the operations that may go next — those
invoked before the earliest response among the operations not yet placed — with the memoization of Lowe and of
porcupine: a (set of placed operations, model state) pair already explored is never explored again.  It is
iterative (a history of thousands of operations never meets the recursion limit) and bounded: ``budget`` model
steps.  The answer is one of three, never a guess:

* ``linearizable`` with a witness order;
* ``violation`` with the longest order the search could build, the operations none of which could go next after
  it, and the shortest violating prefix of the history (cut at an invocation: operations still running at the cut
  count as unobserved; a violation's prefixes after it are all violations, so it is found by bisection);
* ``unknown`` when the budget ran out first: the history was neither shown linearizable nor refuted.

The checker knows nothing of tool-call-closure: :mod:`.agents_model` gives it the table's interpreter as a model,
and any other model (a durable store's, a register's) is a :class:`Model` of its own.
"""

from __future__ import annotations

import bisect
import math
import operator
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Generic, Literal, TypeVar

__all__ = [
    "DEFAULT_BUDGET",
    "CheckResult",
    "Model",
    "Operation",
    "Verdict",
    "check",
    "cut",
]

S = TypeVar("S", bound=Hashable)
Verdict = Literal["linearizable", "violation", "unknown"]
DEFAULT_BUDGET: Final = 1_000_000  # model steps


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation of a history; ``response`` is None when its response was not observed."""

    agent: Hashable
    invoke: float
    response: float | None
    op: Any
    answer: Any = None

    @property
    def observed(self) -> bool:
        return self.response is not None


@dataclass(frozen=True, slots=True)
class Model(Generic[S]):
    """A sequential specification: the initial state and a step function.

    ``steps(state, operation)`` returns the outcomes the specification allows, each a ``(next_state, answer)``
    pair; it must not change ``state``.  ``matches(answer, recorded)`` says whether the model's answer explains
    the recorded one (equality by default).  ``hopeless(state, placed)``, optional, may cut the search short: True
    when no order that continues from ``state`` (``placed``: the bit mask of the history's operations placed so
    far) can explain the rest of the history — for instance when an operation still to place shows an older
    state than ``state`` and the state only grows.  It must never be True when some continuation could succeed.
    """

    init: S
    steps: Callable[[S, Operation], Iterable[tuple[S, Any]]]
    matches: Callable[[Any, Any], bool] = operator.eq
    hopeless: Callable[[S, int], bool] | None = None

    @classmethod
    def deterministic(
        cls, init: S, step: Callable[[S, Operation], tuple[S, Any]], matches: Callable[[Any, Any], bool] = operator.eq
    ) -> Model[S]:
        """A model whose step gives exactly one outcome: ``step(state, operation) -> (next_state, answer)``."""
        return cls(init, lambda state, operation: (step(state, operation),), matches)  # no pruning


@dataclass(slots=True)
class CheckResult:
    """The checker's answer (see the module's docstring)."""

    verdict: Verdict
    steps: int  # model steps taken (the budget counts these)
    order: tuple[int, ...] = ()  # linearizable: a witness; otherwise the longest order built (history indices)
    stuck: tuple[int, ...] = ()  # violation: the operations that could be next after ``order`` and all failed
    minimal_prefix: int | None = None  # violation: the fewest operations (in invocation order) already violating
    message: str = ""
    states: int = 0  # distinct (placed set, state) pairs explored

    @property
    def ok(self) -> bool:
        return self.verdict == "linearizable"


@dataclass(slots=True)
class _Search(Generic[S]):
    history: Sequence[Operation]
    model: Model[S]
    budget: int
    steps: int = 0
    by_invoke: list[int] = field(default_factory=list)
    by_response: list[int] = field(default_factory=list)
    required: int = 0  # bit mask of the observed operations
    best: tuple[int, ...] = ()
    best_stuck: tuple[int, ...] = ()
    seen: set[tuple[int, Hashable]] = field(default_factory=set)

    def __post_init__(self) -> None:
        ops = self.history
        self.by_invoke = sorted(range(len(ops)), key=lambda i: (ops[i].invoke, i))
        self.by_response = sorted(
            (i for i in range(len(ops)) if ops[i].response is not None),
            key=lambda i: (ops[i].response, i),
        )
        for i in self.by_response:
            self.required |= 1 << i

    def _frontier(self, done: int, lo_inv: int, lo_resp: int) -> tuple[list[int], int, int]:
        """The operations that may go next, and the advanced scan positions (both only grow along a path)."""
        ops, by_invoke, by_response = self.history, self.by_invoke, self.by_response
        while lo_resp < len(by_response) and done >> by_response[lo_resp] & 1:
            lo_resp += 1
        horizon = ops[by_response[lo_resp]].response if lo_resp < len(by_response) else math.inf
        while lo_inv < len(by_invoke) and done >> by_invoke[lo_inv] & 1:
            lo_inv += 1
        ready = []
        for position in range(lo_inv, len(by_invoke)):
            i = by_invoke[position]
            if ops[i].invoke > horizon:  # type: ignore[operator]
                break
            if not done >> i & 1:
                ready.append(i)
        return ready, lo_inv, lo_resp

    def _moves(self, state: S, ready: list[int]) -> Iterator[tuple[int, S]]:
        model = self.model
        for i in ready:
            operation = self.history[i]
            self.steps += 1
            if self.steps > self.budget:
                raise _OutOfBudgetError
            for next_state, answer in model.steps(state, operation):
                if operation.response is None or model.matches(answer, operation.answer):
                    yield i, next_state

    def run(self) -> bool:
        """True if linearizable, False if not; raises _OutOfBudgetError when the budget runs out."""
        init = self.model.init
        hopeless = self.model.hopeless
        if self.required == 0:
            return True
        self.seen.add((0, init))
        ready, lo_inv, lo_resp = self._frontier(0, 0, 0)
        # each frame: (placed set, its moves, scan positions); the order is the path of operations taken
        stack: list[tuple[int, Iterator[tuple[int, S]], int, int]] = [(0, self._moves(init, ready), lo_inv, lo_resp)]
        order: list[int] = []
        self.best_stuck = tuple(ready)
        while stack:
            done, moves, lo_inv, lo_resp = stack[-1]
            for i, state in moves:
                placed = done | 1 << i
                if (placed, state) in self.seen:
                    continue
                self.seen.add((placed, state))
                if hopeless is not None and hopeless(state, placed):
                    continue
                order.append(i)
                if placed & self.required == self.required:
                    self.best = tuple(order)
                    return True
                ready, next_inv, next_resp = self._frontier(placed, lo_inv, lo_resp)
                if len(order) > len(self.best):
                    self.best, self.best_stuck = tuple(order), tuple(ready)
                stack.append((placed, self._moves(state, ready), next_inv, next_resp))
                break
            else:
                stack.pop()
                if order:
                    order.pop()
        return False


class _OutOfBudgetError(Exception):
    pass


def cut(history: Sequence[Operation], count: int) -> list[Operation]:
    """The prefix of ``history`` holding its first ``count`` operations in invocation order, cut at the last one's
    invocation: an operation whose response came later counts as unobserved (a prefix a log could have held)."""
    ordered = sorted(history, key=lambda o: o.invoke)[:count]
    if not ordered:
        return []
    at = ordered[-1].invoke
    return [
        o if o.response is not None and o.response <= at else Operation(o.agent, o.invoke, None, o.op, None)
        for o in ordered
    ]


def check(history: Sequence[Operation], model: Model[S], *, budget: int = DEFAULT_BUDGET) -> CheckResult:
    """Whether ``history`` is linearizable with respect to ``model``, within ``budget`` model steps."""
    for index, operation in enumerate(history):
        if operation.response is not None and operation.response < operation.invoke:
            raise ValueError(f"operation {index}: its response ({operation.response}) precedes its invocation")
    search = _Search(history, model, budget)
    try:
        found = search.run()
    except _OutOfBudgetError:
        return CheckResult(
            "unknown",
            search.steps - 1,
            search.best,
            message=f"the search exceeded its budget of {budget} model steps before reaching an answer",
            states=len(search.seen),
        )
    if found:
        return CheckResult("linearizable", search.steps, search.best, states=len(search.seen))
    spent = search.steps
    result = CheckResult(
        "violation",
        spent,
        search.best,
        search.best_stuck,
        message=f"no order explains the history: {len(search.best)} operations could be placed, "
        f"then none of {len(search.best_stuck)} candidates gave its recorded answer",
        states=len(search.seen),
    )
    result.minimal_prefix = _shortest_violating_prefix(history, model, budget - spent, result)
    return result


def _shortest_violating_prefix(
    history: Sequence[Operation], model: Model[S], budget: int, result: CheckResult
) -> int | None:
    """Bisection over the cut prefixes (a violation's longer prefixes are violations); None if the budget ends."""
    low, high = 1, len(history)  # the whole history violates
    model = Model(model.init, model.steps, model.matches)  # a prefix's indices are not the history's: no pruning
    while low < high:
        middle = (low + high) // 2
        search = _Search(cut(history, middle), model, budget)
        try:
            violates = not search.run()
        except _OutOfBudgetError:
            return None
        budget -= search.steps
        result.steps += search.steps
        if violates:
            high = middle
        else:
            low = middle + 1
    return high


def overlapping(history: Sequence[Operation]) -> int:
    """How many operations overlap at least one other in real time (a measure of a history's concurrency)."""
    spans = sorted((o.invoke, math.inf if o.response is None else o.response) for o in history)
    count = 0
    starts = [s for s, _ in spans]
    latest_end = -math.inf
    for index, (start, end) in enumerate(spans):
        later = bisect.bisect_left(starts, end, index + 1)
        if latest_end > start or later > index + 1:
            count += 1
        latest_end = max(latest_end, end)
    return count
