"""Hostile values for fuzzing the public API: printable *recipes* and the objects built from them.

A recipe is a small tuple (``("str_sub", "a", (("__eq__", "lie", ACT),))``) that Hypothesis draws, shrinks and
prints; :meth:`Env.build` turns it into the hostile object at run time.  Building at run time keeps Hypothesis
away from the objects themselves (a 10**5-deep list has no printable ``repr``) and lets hooks reach the closure
under test.

Every piece of caller code a built object carries is a *hook*: a property, a ``__getattr__``, a dunder
override, a custom ``Mapping.__getitem__``, ``__str__``, ``__json__``, ``model_dump``.  A hook runs its *act*
``(nested_ops, boom)``: it first runs ``nested_ops`` against the same closure (re-entrance, through
:meth:`Env.execute`, which checks each nested operation exactly like a top-level one), then raises the
exception class named ``boom`` (every such class derives from :class:`CallerBoom`, so a caller's exception is
told apart from an internal one even when it is also a ``KeyError`` or ``TypeError``).  Every hook also checks
that the instance's lock is free: caller code must never run while the lock is held.

:class:`Env` runs operations and checks, after every one (nested or not):

* the outcome is a value of the documented type, a ``UsageError``/``LimitError``, or a ``CallerBoom`` — never
  an internal error;
* an operation that raised changed nothing, apart from what its nested operations did (the state after it equals
  the state after its last nested operation, or the state before it when none ran);
* an operation that ran no caller code changed exactly what the spec says (a rejection appends one diagnostic, an
  accepted settlement sets one call, a read changes nothing …);
* I1 (a terminal call's settlement never changes), I3 (snapshots never change: each is kept with its JSON text as
  taken), I5 (closed ⇒ no pending, and closed stays closed), I6 (a forged snapshot is refused unread), I7
  (generations count up by one) and I8 (limits; stored strings are exact ``str`` within their byte limits).

Violations are collected in :attr:`Env.violations` (a hook cannot fail the test by raising: the closure would
see that as caller code); the test asserts the list is empty.

Shapes of known defects are not generated (each is pinned by a strict xfail test in ``test_hostile.py``): an
exception ``__str__`` returning a ``str`` subclass (BUG-1; exceptions here return plain text), objects whose
``__class__`` claims a built-in type (BUG-2; :func:`_build_spoof` exists but no strategy draws it) and a
non-callable ``__json__`` (BUG-3).  Hooks also never break Python's own protocols (``__str__`` returns a ``str``,
``__len__`` an int ≥ 0 …): the exceptions Python raises for such broken hooks are not the closure's.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import json
import math
import traceback
from collections.abc import Callable, Iterator, Mapping
from functools import cache
from typing import Any, Final

from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from tool_call_closure import (
    Accepted,
    BatchHandle,
    BeginResult,
    LimitError,
    Rejection,
    Snapshot,
    ToolCallClosure,
    UsageError,
    to_json,
)

# --------------------------------------------------------------------------- caller exceptions


class CallerBoom(Exception):  # noqa: N818 - the name the callers' exceptions share
    """Raised by hostile caller code (and only by it)."""


class CallerKeyError(CallerBoom, KeyError):
    """A caller's KeyError: from a mapping's ``__getitem__`` it means "absent"; elsewhere it propagates."""


class CallerAttributeError(CallerBoom, AttributeError):
    """A caller's AttributeError: from an attribute read it means "absent"; elsewhere it propagates."""


class CallerTypeError(CallerBoom, TypeError):
    """A caller's TypeError: must propagate unchanged (never be mistaken for a UsageError)."""


class CallerValueError(CallerBoom, ValueError):
    """A caller's ValueError: must propagate unchanged (never be mistaken for a LimitError)."""


class CallerRecursionError(CallerBoom, RecursionError):
    """A caller's RecursionError: must propagate unchanged."""


class CallerIndexError(CallerBoom, IndexError):
    """A caller's IndexError: must propagate unchanged."""


BOOMS: Final[dict[str, type[CallerBoom]]] = {
    cls.__name__: cls
    for cls in (
        CallerBoom,
        CallerKeyError,
        CallerAttributeError,
        CallerTypeError,
        CallerValueError,
        CallerRecursionError,
        CallerIndexError,
    )
}

# --------------------------------------------------------------------------- recipes

Recipe = tuple[Any, ...]
Act = tuple[tuple[Recipe, ...], str | None]  # (nested operations, name of the CallerBoom class to raise or None)
NO_ACT: Final[Act] = ((), None)
OMIT: Final[Recipe] = ("omit",)  # an argument that is not passed at all

# What a lying override returns instead of asking its base class (values of the right type, wrong answers).
LIES: Final[dict[str, Any]] = {
    "__eq__": True,
    "__ne__": True,
    "__hash__": 0,
    "__len__": 0,
    "__bool__": False,
    "__str__": "lie",
    "__repr__": "lie",
    "__format__": "lie",
    "isascii": True,
    "encode": b"",
    "strip": "",
    "__contains__": True,
    "__index__": 0,
    "__int__": 0,
    "__float__": 0.0,
    "__lt__": True,
    "__le__": True,
    "__gt__": True,
    "__ge__": True,
    "get": None,
    "copy": [],
    "keys": [],
    "values": [],
    "items": [],
}
ITER_LIES: Final = frozenset({"__iter__"})  # lying iterators yield nothing
ITEM_LIES: Final = frozenset({"__getitem__"})  # lying item reads return None

STR_METHODS: Final = (
    "__eq__", "__ne__", "__hash__", "__len__", "__iter__", "__getitem__", "__str__", "__repr__", "__format__",
    "isascii", "encode", "strip", "__contains__", "__bool__",
)  # fmt: skip
INT_METHODS: Final = (
    "__index__", "__int__", "__float__", "__eq__", "__ne__", "__hash__", "__repr__", "__str__", "__bool__",
    "__lt__", "__le__", "__gt__", "__ge__", "__format__",
)  # fmt: skip
FLOAT_METHODS: Final = ("__repr__", "__str__", "__float__", "__eq__", "__hash__", "__bool__", "__int__")
LIST_METHODS: Final = ("__len__", "__getitem__", "__iter__", "copy", "__eq__", "__bool__", "__contains__", "__repr__")
TUPLE_METHODS: Final = ("__len__", "__getitem__", "__iter__", "__eq__", "__hash__", "__bool__", "__repr__")
DICT_METHODS: Final = (
    "__getitem__", "get", "keys", "items", "values", "__iter__", "__len__", "__contains__", "__eq__", "__repr__",
    "copy",
)  # fmt: skip

PROJECTIONS: Final = (
    "set", "frozenset", "bytes", "bytearray", "decimal", "datetime", "date", "time", "enum", "complex", "range",
    "object", "type", "function", "ellipsis",
)  # fmt: skip


class Colour(enum.Enum):
    RED = "red"
    DEEP = ["nested", {"k": 1}]  # noqa: RUF012 - an Enum member value, not a class attribute default


# --------------------------------------------------------------------------- helpers used by checks


def node_utf8_length(text: str) -> int:
    """Node's Buffer.byteLength of a str read through its UTF-16 view (lone surrogates count 3, pairs 4)."""
    view = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return len(view.encode("utf-8", "surrogatepass"))


def describe(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-6:])


@dataclasses.dataclass
class Outcome:
    """What one operation did: returned ``value`` or raised ``error``."""

    op: str
    value: Any = None
    error: BaseException | None = None
    nested: int = 0  # how many nested operations completed while it ran


State = tuple[int | None, str | None]  # (active_generation, JSON text of snapshot())

SETTLE_OPS: Final = frozenset({"settle", "succeed", "fail", "cancel"})
EXPORTS: Final = ("to_openai_chat_completions", "to_openai_responses", "to_anthropic_tool_results")
EXPORT_KEYS: Final = {
    "to_openai_chat_completions": {"role", "tool_call_id", "content"},
    "to_openai_responses": {"type", "call_id", "output"},
    "to_anthropic_tool_results": {"type", "tool_use_id", "content"},
}
DEFAULT_CODES: Final = frozenset({"error", "cancelled", "tool_error", "superseded"})
REASONS: Final = frozenset({"stale_generation", "run_closed", "unknown_call", "duplicate_settlement", "pending_calls"})
OBSERVED: Final = frozenset({None, "success", "error", "cancelled", "invalid"})


class Env:
    """One closure under test, the objects the recipes refer to, and the checks."""

    MAX_DEPTH: Final = 2  # nesting depth of operations run by hooks
    NEST_BUDGET: Final = 8  # nested operations per top-level step

    def __init__(self, closure: ToolCallClosure) -> None:
        self.closure = closure
        self.limits = closure.limits
        self.foreign = ToolCallClosure()
        self.foreign_handle = self.foreign.begin([{"id": "a", "name": "t"}]).handle
        foreign_snapshot = self.foreign.close(self.foreign_handle)
        assert isinstance(foreign_snapshot, Snapshot)
        self.foreign_snapshot = foreign_snapshot
        self.handles: list[BatchHandle] = []
        self.kept: list[tuple[Snapshot, str]] = []  # snapshots produced, with their JSON as taken (I3)
        self.results: list[Any] = []  # other values the closure returned (for forged-snapshot recipes)
        self.active = False  # hooks act only while an operation of the closure under test runs
        self.depth = 0
        self.budget = 0
        self.frames: list[list[State]] = []  # per running operation: the states after its nested operations
        self.violations: list[str] = []
        self.forged_reads = 0  # attribute reads of forged snapshots (I6: must stay 0)
        self.terminal: dict[tuple[int, str], str] = {}  # (generation, call id) -> settlement JSON (I1)
        self.closed_generations: set[int] = set()
        self.last_generation = 0
        self.steps = 0
        self.nested_ops = 0
        self.hook_calls = 0
        self.exporting = False  # an export of the closure under test is running

    # ----------------------------------------------------------------------- hooks

    def fire(self, act: Act, site: str) -> None:
        """Caller code runs here: check the lock is free, re-enter, then maybe raise."""
        self.hook_calls += 1
        if self.closure._lock._is_owned():  # single-threaded: only this thread could hold it
            self.violations.append(f"caller code ran while the lock was held ({site})")
            return  # re-entering now would deadlock
        if not self.active:
            return
        nested, boom = act
        for op in nested:
            if self.depth >= self.MAX_DEPTH or self.budget <= 0:
                break
            self.budget -= 1
            self.execute(op)
        if boom is not None:
            raise BOOMS[boom](f"{boom} from {site}")

    # ----------------------------------------------------------------------- building values

    def build(self, recipe: Recipe) -> Any:
        kind = recipe[0]
        builder = _BUILDERS.get(kind)
        if builder is None:
            raise AssertionError(f"unknown recipe {recipe!r}")
        return builder(self, recipe)

    def current_handle(self) -> Any:
        return self.handles[-1] if self.handles else BatchHandle(1)

    # ----------------------------------------------------------------------- state

    def state(self) -> State:
        generation = self.closure.active_generation
        snapshot = self.closure.snapshot()
        if snapshot is not None:
            self.observe_snapshot(snapshot, "state")
        return generation, None if snapshot is None else to_json(snapshot)

    # ----------------------------------------------------------------------- running operations

    def execute(self, op: Recipe) -> Outcome:
        """Run operation ``op`` (top level or nested) and check everything that can be checked about it."""
        if self.closure._lock._is_owned():
            self.violations.append(f"lock held before {op[0]}")
            return Outcome(op[0])
        was_active = self.active
        self.active = False  # building arguments and taking states run no hooks
        if not self.frames:
            self.budget = self.NEST_BUDGET
        try:
            before = self.state()
            try:
                call = self._prepare(op)
            except CallerBoom:  # building a hostile value can run its own overrides (a dict key's __hash__)
                return Outcome(op[0])
            self.frames.append([])
            self.depth += 1
            outcome = Outcome(op[0])
            self.active = True
            exporting = self.exporting
            self.exporting = op[0] == "export"
            try:
                outcome.value = call()
            except Exception as exc:  # noqa: BLE001 - classified below
                outcome.error = exc
            finally:
                self.exporting = exporting
                self.active = False
                self.depth -= 1
                nested_states = self.frames.pop()
            outcome.nested = len(nested_states)
            if outcome.error is None:  # observed before the state after it, which it precedes
                self._check_type(op, outcome.value)
                self._observe_result(op, outcome.value)
            after = self.state()
            self._check(op, outcome, before, after, nested_states)
            if self.frames:  # report this operation's effect to the operation whose caller code ran it
                self.frames[-1].append(after)
                self.nested_ops += 1
            else:
                self.steps += 1
                self._check_kept()
            return outcome
        finally:
            self.active = was_active

    def _prepare(self, op: Recipe) -> Callable[[], Any]:
        closure = self.closure
        kind = op[0]
        b = self.build
        if kind == "begin":
            calls = b(op[1])
            return lambda: closure.begin(calls)
        if kind == "settle":
            handle, call_id, outcome = b(op[1]), b(op[2]), b(op[3])
            return lambda: closure.settle(handle, call_id, outcome)
        if kind in ("succeed", "fail", "cancel"):
            handle, call_id = b(op[1]), b(op[2])
            names = {"succeed": ("content",), "fail": ("error", "code"), "cancel": ("message", "code")}[kind]
            kwargs = {name: b(r) for name, r in zip(names, op[3:], strict=True) if r != OMIT}
            method = getattr(closure, kind)
            return lambda: method(handle, call_id, **kwargs)
        if kind == "close":
            handle = b(op[1])
            if op[2] == OMIT:
                return lambda: closure.close(handle)
            reason = b(op[2])
            return lambda: closure.close(handle, reason)
        if kind == "seal":
            handle = b(op[1])
            return lambda: closure.seal(handle)
        if kind == "snapshot":
            return closure.snapshot
        if kind == "active_generation":
            return lambda: closure.active_generation
        if kind == "export":
            export: Callable[..., Any] = getattr(closure, op[1])
            if op[2] == OMIT:
                return lambda: export()
            snapshot = b(op[2])
            return lambda: export(snapshot)
        if kind == "to_json":
            value = b(op[1])
            return lambda: to_json(value)
        raise AssertionError(f"unknown operation {op!r}")

    # ----------------------------------------------------------------------- checks

    def _fail(self, op: Recipe, message: str) -> None:
        self.violations.append(f"{op[0]} (depth {self.depth}): {message}")

    def _check(self, op: Recipe, outcome: Outcome, before: State, after: State, nested: list[State]) -> None:
        error = outcome.error
        if error is not None:
            if not isinstance(error, CallerBoom) and type(error) not in (UsageError, LimitError):
                self._fail(op, f"internal error {type(error).__name__}: {error}\n{describe(error)}")
            expected = nested[-1] if nested else before
            if after != expected:
                self._fail(op, f"raised {type(error).__name__} and changed the state:\n  {expected}\n  {after}")
            return
        value = outcome.value
        if nested:
            return  # nested operations changed the state; the invariants are checked by the observations
        self._check_effect(op, value, before, after)

    def _check_type(self, op: Recipe, value: Any) -> None:
        kind = op[0]
        ok: bool
        if kind == "begin":
            ok = type(value) is BeginResult
        elif kind in SETTLE_OPS:
            ok = type(value) in (Accepted, Rejection)
        elif kind in ("close", "seal"):
            ok = type(value) in (Snapshot, Rejection)
        elif kind == "snapshot":
            ok = value is None or type(value) is Snapshot
        elif kind == "active_generation":
            ok = value is None or type(value) is int
        elif kind == "export":
            ok = type(value) is list and all(type(item) is dict for item in value)
            if ok:
                for item in value:
                    keys = set(item) - {"is_error"}
                    if keys != EXPORT_KEYS[op[1]] or any(
                        type(v) is not str for k, v in item.items() if k != "is_error"
                    ):
                        self._fail(op, f"export item {item!r}")
        elif kind == "to_json":
            ok = type(value) is str
        else:
            ok = False
        if not ok:
            self._fail(op, f"returned {type(value).__name__}: {value!r:.200}")
        if type(value) is Rejection:
            if value.reason not in REASONS or value.observed_status not in OBSERVED:
                self._fail(op, f"malformed rejection {value!r}")
            if value.call_id is not None and type(value.call_id) is not str:
                self._fail(op, f"rejection call_id of type {type(value.call_id).__name__}")
            if value.generation is not None and not (type(value.generation) is int and value.generation > 0):
                self._fail(op, f"rejection generation {value.generation!r}")
            if kind in ("close", "seal") and value.call_id is not None:
                self._fail(op, "close/seal rejection with a callId")

    def _observe_result(self, op: Recipe, value: Any) -> None:
        if type(value) is BeginResult:
            if value.generation != self.last_generation + 1:
                self._fail(op, f"begin returned generation {value.generation} after {self.last_generation} (I7)")
            self.last_generation = value.generation
            self.handles.append(value.handle)
            if value.superseded is not None:
                self.observe_snapshot(value.superseded, "superseded")
                if value.superseded.generation != value.generation - 1 or not value.superseded.closed:
                    self._fail(op, "superseded snapshot is not the previous generation, closed")
            self.results.append(value)
        elif type(value) is Snapshot:
            self.observe_snapshot(value, op[0])
        elif type(value) is Accepted:
            key = (value.generation, value.call_id)
            text = to_json(value.settlement)
            if key in self.terminal:
                self._fail(op, f"a second terminal outcome for {key}: {text} after {self.terminal[key]} (I1)")
            else:
                self.terminal[key] = text
            self._check_settlement(op, value.settlement)
            self.results.append(value)
        elif type(value) is Rejection:
            self.results.append(value)
        del self.results[:-16]

    def observe_snapshot(self, snapshot: Snapshot, where: str) -> None:
        """I1, I5, I8 on a snapshot, observed in the order snapshots are produced."""
        op: Recipe = (where,)
        generation = snapshot.generation
        limits = self.limits
        if len(snapshot.calls) > limits.max_calls:
            self._fail(op, f"{len(snapshot.calls)} calls > maxCalls (I8)")
        if len(snapshot.diagnostics) > limits.max_diagnostics:
            self._fail(op, f"{len(snapshot.diagnostics)} diagnostics > maxDiagnostics (I8)")
        if generation in self.closed_generations and not snapshot.closed:
            self._fail(op, f"generation {generation} reopened (I5)")
        if snapshot.closed:
            self.closed_generations.add(generation)
        for call in snapshot.calls:
            self._check_string(op, call.id, limits.max_id_bytes, "id")
            self._check_string(op, call.name, limits.max_name_bytes, "name")
            if call.state == "pending":
                if snapshot.closed:
                    self._fail(op, f"closed generation {generation} has pending call {call.id!r} (I5)")
                if call.settlement is not None:
                    self._fail(op, "a pending call has a settlement")
                continue
            settlement = call.settlement
            if settlement is None or settlement.status != call.state:
                self._fail(op, f"call {call.id!r} in state {call.state} has settlement {settlement!r}")
                continue
            self._check_settlement(op, settlement)
            key = (generation, call.id)
            text = to_json(settlement)
            if self.terminal.setdefault(key, text) != text:
                self._fail(op, f"terminal outcome of {key} changed: {self.terminal[key]} -> {text} (I1)")
        for diagnostic in snapshot.diagnostics:
            if diagnostic.reason not in REASONS or diagnostic.observed_status not in OBSERVED:
                self._fail(op, f"malformed diagnostic {diagnostic!r}")
            if diagnostic.call_id is not None:
                self._check_string(op, diagnostic.call_id, limits.max_id_bytes, "diagnostic callId")
        reason = snapshot.close_reason
        if (reason is None) == snapshot.closed:
            self._fail(op, f"closed={snapshot.closed} with closeReason {reason!r}")
        if reason is not None and reason.status != "complete":
            self._check_string(op, reason.message, limits.max_message_bytes, "closeReason.message", blank_ok=True)
            if reason.code not in DEFAULT_CODES:
                self._check_string(op, reason.code, limits.max_code_bytes, "closeReason.code")
        self.kept.append((snapshot, to_json(snapshot)))
        del self.kept[:-24]

    def _check_settlement(self, op: Recipe, settlement: Any) -> None:
        limits = self.limits
        if settlement.status == "success":
            self._check_string(op, settlement.content, limits.max_result_bytes, "content", blank_ok=True)
            return
        self._check_string(op, settlement.message, limits.max_message_bytes, "message", blank_ok=True)
        if settlement.code not in DEFAULT_CODES:
            self._check_string(op, settlement.code, limits.max_code_bytes, "code")

    def _check_string(self, op: Recipe, text: Any, limit: int, what: str, blank_ok: bool = False) -> None:
        if type(text) is not str:  # D5: stored strings are plain str values
            self._fail(op, f"stored {what} is a {type(text).__name__}, not str (D5)")
            if not isinstance(text, str):
                return
            text = str.__str__(text)
        if node_utf8_length(text) > limit:
            self._fail(op, f"stored {what} has {node_utf8_length(text)} bytes > {limit} (I8)")
        if not blank_ok and not text.strip(
            " \t\n\r\x0b\x0c\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
            "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
        ):
            self._fail(op, f"stored {what} is blank")

    def _check_effect(self, op: Recipe, value: Any, before: State, after: State) -> None:
        """The exact effect of an operation that ran no nested operation."""
        kind = op[0]
        gen_before, text_before = before
        gen_after, text_after = after
        old = json.loads(text_before) if text_before is not None else None
        new = json.loads(text_after) if text_after is not None else None
        if kind in ("snapshot", "active_generation", "export", "to_json"):
            if after != before:
                self._fail(op, f"a read changed the state:\n  {before}\n  {after}")
            if kind == "snapshot" and (value is None) != (text_after is None):
                self._fail(op, "snapshot() disagrees with the state")
            if kind == "snapshot" and value is not None and to_json(value) != text_after:
                self._fail(op, "snapshot() is not the current state")
            if kind == "active_generation" and value != gen_before:
                self._fail(op, f"active_generation {value!r} != {gen_before!r}")
            return
        if type(value) is Rejection:
            expected = old
            if old is not None and len(old["diagnostics"]) < self.limits.max_diagnostics:
                diagnostic = json.loads(to_json(value))
                del diagnostic["accepted"]
                expected = {**old, "diagnostics": [*old["diagnostics"], diagnostic]}
            if new != expected or gen_after != gen_before:
                self._fail(op, f"a rejection changed more than the diagnostics (I2):\n  {before}\n  {after}")
            if value.reason == "stale_generation" and old is not None and kind in SETTLE_OPS | {"close", "seal"}:
                pass  # fencing: covered by the equality above
            return
        if type(value) is Accepted:
            if old is None or old["closed"] or value.generation != old["generation"]:
                self._fail(op, f"accepted outside the open current generation: {value!r}")
                return
            calls = [dict(c) for c in old["calls"]]
            matching = [c for c in calls if c["id"] == value.call_id]
            if len(matching) != 1 or matching[0]["state"] != "pending":
                self._fail(op, f"accepted a call that was not pending: {value!r}")
                return
            matching[0]["state"] = value.settlement.status
            matching[0]["settlement"] = json.loads(to_json(value.settlement))
            if new != {**old, "calls": calls} or gen_after != gen_before:
                self._fail(op, f"accepted settlement changed the wrong things:\n  {before}\n  {after}")
            return
        if type(value) is Snapshot:  # close or seal
            if to_json(value) != text_after or gen_after != gen_before or not value.closed:
                self._fail(op, f"{kind} returned {to_json(value)} but the state is {after}")
            if old is not None and old["closed"] and old != new:
                self._fail(op, f"{kind} changed a closed generation")
            if old is not None and new is not None and not old["closed"]:
                if old["diagnostics"] != new["diagnostics"]:
                    self._fail(op, f"{kind} changed the diagnostics")
                for before_call, after_call in zip(old["calls"], new["calls"], strict=True):
                    if before_call["state"] != "pending" and before_call != after_call:
                        self._fail(op, f"{kind} changed a reported call")
            return
        if type(value) is BeginResult:
            if new is None or new["generation"] != (gen_before or 0) + 1 or gen_after != new["generation"]:
                self._fail(op, f"begin: generation {gen_before} -> {gen_after}")
                return
            if new["closed"] or new["diagnostics"] or any(c["state"] != "pending" for c in new["calls"]):
                self._fail(op, f"begin did not install a fresh generation: {text_after}")
            superseded = value.superseded
            was_open = old is not None and not old["closed"]
            if (superseded is not None) != was_open:
                self._fail(op, f"superseded {superseded!r} but the previous generation was open={was_open}")
            if superseded is not None and old is not None:
                sup = json.loads(to_json(superseded))
                if sup["diagnostics"] != old["diagnostics"] or sup["generation"] != old["generation"]:
                    self._fail(op, "superseded snapshot lost the old diagnostics")
                for before_call, after_call in zip(old["calls"], sup["calls"], strict=True):
                    if before_call["state"] != "pending" and before_call != after_call:
                        self._fail(op, "supersession changed a reported call")
                    if before_call["state"] == "pending" and after_call["settlement"]["code"] != "superseded":
                        self._fail(op, "supersession did not cancel a pending call as superseded")

    def _check_kept(self) -> None:
        """I3: every snapshot kept so far still reads exactly as it did when it was taken."""
        for snapshot, text in self.kept:
            if to_json(snapshot) != text:
                self.violations.append(f"snapshot changed after it was taken (I3): {text} -> {to_json(snapshot)}")


# --------------------------------------------------------------------------- builders


def _hooked_subclass(env: Env, base: type, overrides: tuple[tuple[str, str, Act], ...]) -> type:
    namespace: dict[str, Any] = {}
    for name, mode, act in overrides:

        def method(self: Any, *args: Any, _name: str = name, _mode: str = mode, _act: Act = act, **kwargs: Any) -> Any:
            env.fire(_act, f"{base.__name__}.{_name}")
            if _mode == "lie":
                if _name in ITER_LIES:
                    return iter(())
                if _name in ITEM_LIES:
                    return None
                return LIES[_name]
            return getattr(base, _name)(self, *args, **kwargs)

        namespace[name] = method
    if "__eq__" in namespace and "__hash__" not in namespace:
        namespace["__hash__"] = base.__hash__
    return type(f"Hostile_{base.__name__}", (base,), namespace)


def _build_lit(env: Env, recipe: Recipe) -> Any:
    return recipe[1]


def _build_sub(env: Env, recipe: Recipe) -> Any:
    _, base_name, inner, overrides = recipe
    base = {"str": str, "int": int, "float": float, "list": list, "tuple": tuple, "dict": dict}[base_name]
    cls = _hooked_subclass(env, base, overrides)
    if base is list or base is tuple:
        return cls([env.build(r) for r in inner])
    if base is dict:
        return cls({_key(env, k): env.build(v) for k, v in inner})
    return cls(inner)


def _key(env: Env, recipe: Recipe) -> Any:
    key = env.build(recipe)
    try:
        hash(key)
    except TypeError:
        return repr(recipe)
    return key


def _build_list(env: Env, recipe: Recipe) -> Any:
    items = [env.build(r) for r in recipe[1]]
    return items if recipe[0] == "list" else tuple(items)


def _build_dict(env: Env, recipe: Recipe) -> Any:
    return {_key(env, k): env.build(v) for k, v in recipe[1]}


class _HostileMapping(Mapping[Any, Any]):
    """A Mapping whose item reads (and optionally iteration, len, items) run caller code."""

    def __init__(self, env: Env, data: dict[Any, Any], acts: dict[Any, Act], meta: dict[str, Act]) -> None:
        self._env = env
        self._data = data
        self._acts = acts
        self._meta = meta

    def __getitem__(self, key: Any) -> Any:
        act = self._acts.get(key) if isinstance(key, str) else None
        if act is not None:
            self._env.fire(act, f"Mapping[{key!r}]")
        return self._data[key]  # KeyError: absent

    def __iter__(self) -> Iterator[Any]:
        if "__iter__" in self._meta:
            self._env.fire(self._meta["__iter__"], "Mapping.__iter__")
        return iter(list(self._data))

    def __len__(self) -> int:
        if "__len__" in self._meta:
            self._env.fire(self._meta["__len__"], "Mapping.__len__")
        return len(self._data)

    def items(self) -> Any:
        if "items" in self._meta:
            self._env.fire(self._meta["items"], "Mapping.items")
        return super().items()


def _build_mapping(env: Env, recipe: Recipe) -> Any:
    _, entries, meta = recipe
    data = {name: env.build(v) for name, v, _ in entries if v != OMIT}
    acts = {name: act for name, _, act in entries}
    return _HostileMapping(env, data, acts, dict(meta))


def _build_obj(env: Env, recipe: Recipe) -> Any:
    """An object read by attribute: properties with hooks, ``__getattr__``, ``__str__``, ``__json__``, ``model_dump``."""
    _, attrs, getattr_act, str_spec, json_spec, dump_spec = recipe
    namespace: dict[str, Any] = {}
    for name, value_recipe, act in attrs:
        value = env.build(value_recipe) if value_recipe != OMIT else None

        def getter(
            self: Any, _act: Act = act, _value: Any = value, _name: str = name, _omit: bool = value_recipe == OMIT
        ) -> Any:
            env.fire(_act, f"property {_name}")
            if _omit:
                raise CallerAttributeError(_name)  # absent
            return _value

        namespace[name] = property(getter)
    if getattr_act is not None:

        def __getattr__(self: Any, name: str, _act: Act = getattr_act) -> Any:  # noqa: N807
            if name.startswith("__"):
                raise AttributeError(name)
            env.fire(_act, f"__getattr__({name})")
            raise AttributeError(name)

        namespace["__getattr__"] = __getattr__
    if str_spec is not None:
        act, text = str_spec
        if isinstance(text, tuple):  # a recipe: the str subclass __str__ returns (String() takes its plain value)
            built = env.build(text)
            text = built if isinstance(built, str) else "text"

        def __str__(self: Any, _act: Act = act, _text: str = text) -> str:  # noqa: N807
            env.fire(_act, "__str__")
            return _text

        namespace["__str__"] = __str__
    if json_spec is not None:
        act, value_recipe = json_spec
        replacement = env.build(value_recipe)

        def __json__(self: Any, _act: Act = act, _value: Any = replacement) -> Any:  # noqa: N807
            env.fire(_act, "__json__")
            return _value

        namespace["__json__"] = __json__
    if dump_spec is not None:
        act, value_recipe = dump_spec
        dumped = env.build(value_recipe)

        def model_dump(self: Any, *, mode: str = "python", _act: Act = act, _value: Any = dumped) -> Any:
            env.fire(_act, "model_dump")
            return _value

        namespace["model_dump"] = model_dump
    return type("HostileObject", (), namespace)()


def _build_dataclass(env: Env, recipe: Recipe) -> Any:
    _, fields = recipe
    names = [name for name, _, _ in fields]
    acts = {name: act for name, _, act in fields}

    def __getattribute__(self: Any, name: str) -> Any:  # noqa: N807
        act = acts.get(name)
        if act is not None:
            env.fire(act, f"dataclass field {name}")
        return object.__getattribute__(self, name)

    cls = dataclasses.make_dataclass("HostileData", names, namespace={"__getattribute__": __getattribute__})
    return cls(*[env.build(v) for _, v, _ in fields])


def _build_exc(env: Env, recipe: Recipe) -> Any:
    _, base_name, text, act = recipe
    base = {"Exception": Exception, "RuntimeError": RuntimeError, "KeyError": KeyError, "BaseException": BaseException}[
        base_name
    ]
    if act is None:
        return base(text)

    def __str__(self: Any, _act: Act = act, _text: Any = text) -> str:  # noqa: N807
        env.fire(_act, "exception __str__")
        return _text  # type: ignore[no-any-return]

    return type("HostileError", (base,), {"__str__": __str__})(text)


def _build_deep(env: Env, recipe: Recipe) -> Any:
    _, shape, depth, leaf = recipe
    value = env.build(leaf)
    for level in range(depth):
        if shape == "list":
            value = [value]
        elif shape == "tuple":
            value = (value,)
        elif shape == "dict":
            value = {"k": value}
        else:  # mixed
            value = [value] if level % 2 else {"0": value, "x": 1}
    return value


def _build_cycle(env: Env, recipe: Recipe) -> Any:
    shape = recipe[1]
    if shape == "list":
        items: list[Any] = [1]
        items.append(items)
        return items
    if shape == "dict":
        d: dict[str, Any] = {"a": 1}
        d["self"] = d
        return d
    if shape == "mutual":
        outer: list[Any] = []
        inner = {"back": outer}
        outer.append(inner)
        return outer
    if shape == "json":

        class Loop:
            def __json__(self) -> Any:
                return [self]

        return Loop()
    if shape == "deep":
        root: list[Any] = []
        node = root
        for _ in range(1000):
            child: list[Any] = []
            node.append(child)
            node = child
        node.append(root)
        return root
    # repeated references that are not a cycle
    shared = {"x": [1, 2]}
    return [shared, shared, [shared]]


def _build_huge(env: Env, recipe: Recipe) -> Any:
    _, count, char = recipe
    return char * count


def _build_proj(env: Env, recipe: Recipe) -> Any:
    kind = recipe[1]
    makers: dict[str, Callable[[], Any]] = {
        "set": lambda: {1, 2},
        "frozenset": lambda: frozenset({"a"}),
        "bytes": lambda: b"bytes",
        "bytearray": lambda: bytearray(b"x"),
        "decimal": lambda: decimal.Decimal("1.5"),
        "datetime": lambda: datetime.datetime(2024, 1, 2, 3, 4, 5),
        "date": lambda: datetime.date(2024, 1, 2),
        "time": lambda: datetime.time(1, 2, 3),
        "enum": lambda: Colour.DEEP,
        "complex": lambda: 1 + 2j,
        "range": lambda: range(3),
        "object": object,
        "type": lambda: int,
        "function": lambda: lambda: 1,
        "ellipsis": lambda: ...,
    }
    return makers[kind]()


NUMBERS: Final = ("nan", "inf", "-inf", "-0", "tiny", "big", "huge_int", "negative_huge_int")


def _build_number(env: Env, recipe: Recipe) -> Any:
    makers: dict[str, Callable[[], Any]] = {
        "nan": lambda: math.nan,
        "inf": lambda: math.inf,
        "-inf": lambda: -math.inf,
        "-0": lambda: -0.0,
        "tiny": lambda: 5e-324,
        "big": lambda: 1e308,
        "huge_int": lambda: 10**5000,  # beyond int_max_str_digits: cannot be converted to text
        "negative_huge_int": lambda: -(10**400),
    }
    return makers[recipe[1]]()


def _build_handle(env: Env, recipe: Recipe) -> Any:
    which = recipe[1]
    if which == "current":
        return env.current_handle()
    if which == "old":
        return env.handles[recipe[2] % len(env.handles)] if env.handles else BatchHandle(1)
    if which == "forged":
        return BatchHandle(env.build(recipe[2]))
    if which == "forged_current":
        return BatchHandle(env.closure.active_generation or 1)
    if which == "dict":
        return {"generation": env.build(recipe[2])}
    if which == "foreign":
        return env.foreign_handle
    if which == "obj":
        return _build_obj(env, ("obj", (("generation", recipe[2], recipe[3]),), None, None, None, None))
    raise AssertionError(which)


class CountingSnapshot:
    """A forged snapshot that counts every attribute read (I6: exports must refuse it unread)."""

    def __init__(self, env: Env, closed: Any) -> None:
        object.__setattr__(self, "_env", env)
        object.__setattr__(self, "_closed", closed)

    def __getattribute__(self, name: str) -> Any:
        env = object.__getattribute__(self, "_env")
        if env.exporting:
            env.forged_reads += 1
            env.violations.append(f"an export read attribute {name!r} of a forged snapshot (I6)")
        if name == "closed":
            return object.__getattribute__(self, "_closed")
        return object.__getattribute__(self, name)


def _build_snap(env: Env, recipe: Recipe) -> Any:
    which = recipe[1]
    if which == "kept":
        return env.kept[recipe[2] % len(env.kept)][0] if env.kept else None
    if which == "latest":
        return env.kept[-1][0] if env.kept else None
    if which == "replace":
        return dataclasses.replace(env.kept[recipe[2] % len(env.kept)][0]) if env.kept else env.foreign_snapshot
    if which == "foreign":
        return env.foreign_snapshot
    if which == "counting":
        return CountingSnapshot(env, env.build(recipe[2]))
    if which == "result":
        return env.results[recipe[2] % len(env.results)] if env.results else None
    raise AssertionError(which)


def _build_spoof(env: Env, recipe: Recipe) -> Any:
    """An object whose ``__class__`` claims a built-in type (as ``unittest.mock`` specs do)."""
    target = {"str": str, "int": int, "list": list, "dict": dict, "tuple": tuple, "float": float}[recipe[1]]
    return type("Spoof", (), {"__class__": property(lambda self: target)})()


_BUILDERS: Final[dict[str, Callable[[Env, Recipe], Any]]] = {
    "lit": _build_lit,
    "sub": _build_sub,
    "list": _build_list,
    "tuple": _build_list,
    "dict": _build_dict,
    "mapping": _build_mapping,
    "obj": _build_obj,
    "dc": _build_dataclass,
    "exc": _build_exc,
    "deep": _build_deep,
    "cycle": _build_cycle,
    "huge": _build_huge,
    "proj": _build_proj,
    "num": _build_number,
    "h": _build_handle,
    "s": _build_snap,
    "spoof": _build_spoof,
}


# --------------------------------------------------------------------------- strategies

IDS: Final = ("a", "b", "c")
TEXTS: Final = (
    "a", "b", "c", "d", "", " ", "\t\n", "\u3000", "\ufeff", "\u200b", "\x1c", "\x85", "\ud800", "a\udfff",
    "\ud83d\ude00", "\ud83d", "😀", "é", "€uro", "success", "error", "cancelled", "complete", "invalid", "unknown",
    "not_started", "id", "name", "null", "__proto__", "0", "4294967295",
)  # fmt: skip
CYCLES: Final = ("list", "dict", "mutual", "json", "deep", "repeated")
HUGE_COUNTS: Final = (2, 4, 5, 129, 513, 4097, 100_000, 1_100_000)
HUGE_CHARS: Final = ("x", " ", "é", "€", "😀", "\ud800", "\udc00")
EXPORT_METHODS: Final = EXPORTS


def _identity(strategy: SearchStrategy[Any]) -> SearchStrategy[Any]:
    return strategy


def choice(*strategies: SearchStrategy[Any]) -> SearchStrategy[Any]:
    """Pick one of ``strategies`` uniformly (repeat one to weight it).

    ``st.one_of`` does not pick its branches uniformly (its index draw favours the ends), so weights made by
    repeating a branch would not hold."""
    return st.sampled_from(strategies).flatmap(_identity)


def deep_depths(long: bool) -> tuple[int, ...]:
    return (2, 100, 1000, 10_000, 100_000) if long else (2, 100, 1000, 10_000)


SPECIALS: Final[tuple[Recipe, ...]] = (
    *(("num", k) for k in NUMBERS),
    *(("proj", k) for k in PROJECTIONS),
    *(("cycle", k) for k in CYCLES),
    *(
        ("huge", n, c)
        for n in HUGE_COUNTS
        for c in HUGE_CHARS
        if n * len(c.encode("utf-8", "surrogatepass")) <= 4_400_000
    ),
    ("h", "current"),
    ("h", "forged_current"),
    ("h", "foreign"),
    ("s", "latest"),
    ("s", "foreign"),
    ("lit", 2**53 - 1),
    ("lit", 2**53),
    ("lit", 2**64),
    ("lit", -(2**63)),
)
IDENTIFIERS: Final = ("id", "name", "status", "content", "code", "message", "generation", "closed", "calls", "x")


def lit(value: Any) -> Recipe:
    return ("lit", value)


def literals() -> SearchStrategy[Recipe]:
    return choice(
        st.sampled_from(TEXTS),
        st.sampled_from(TEXTS),
        st.text(max_size=4),
        st.integers(-3, 3),
        st.booleans(),
        st.none(),
        st.floats(),
        st.binary(max_size=2),
    ).map(lit)


@cache
def acts(depth: int) -> SearchStrategy[Act]:
    """What a hook does: mostly nothing; sometimes raise a caller exception; sometimes re-enter (then maybe raise)."""
    booms = st.sampled_from(sorted(BOOMS))
    choices: list[SearchStrategy[Act]] = [
        st.just(NO_ACT),
        st.just(NO_ACT),
        st.just(NO_ACT),
        st.tuples(st.just(()), booms),
    ]
    if depth > 0:
        nested = st.deferred(lambda: operations(depth - 1)).map(lambda op: (op,))
        choices += [st.tuples(nested, st.none()), st.tuples(nested, st.none()), st.tuples(nested, booms)]
    return choice(*choices)


def _first_per_name(entries: list[tuple[Any, ...]]) -> tuple[tuple[Any, ...], ...]:
    """Keep the first entry per name (instead of ``unique_by``, whose failures format the strategy's huge repr)."""
    seen: dict[Any, tuple[Any, ...]] = {}
    for entry in entries:
        seen.setdefault(entry[0], entry)
    return tuple(seen.values())


def overrides(methods: tuple[str, ...], depth: int) -> SearchStrategy[tuple[tuple[str, str, Act], ...]]:
    return st.lists(st.tuples(st.sampled_from(methods), st.sampled_from(("base", "lie")), acts(depth)), max_size=2).map(
        _first_per_name
    )


@cache
def hooked(depth: int) -> SearchStrategy[Recipe]:
    """Leaves that carry caller code: subclasses with malicious overrides, exceptions, objects with __str__."""
    act = acts(depth)
    text = st.sampled_from(TEXTS)
    str_sub = st.tuples(st.just("sub"), st.just("str"), text, overrides(STR_METHODS, depth))
    return choice(
        str_sub,
        st.tuples(st.just("sub"), st.just("int"), st.integers(-2, 2**53), overrides(INT_METHODS, depth)),
        st.tuples(st.just("sub"), st.just("float"), st.floats(), overrides(FLOAT_METHODS, depth)),
        st.tuples(
            st.just("exc"),
            st.sampled_from(("Exception", "RuntimeError", "KeyError", "BaseException")),
            text,
            choice(st.none(), act),
        ),
        st.tuples(
            st.just("obj"),
            st.just(()),
            choice(st.none(), act),
            choice(st.none(), st.tuples(act, text), st.tuples(act, str_sub)),
            st.none(),
            st.none(),
        ),
    )


@cache
def values(depth: int, long: bool = False, levels: int = 2) -> SearchStrategy[Recipe]:
    """Any hostile value (hooks re-enter with up to ``depth`` levels of nested operations; containers nest
    ``levels`` deep, apart from the deep recipes).  Explicit levels rather than ``st.recursive``: the latter
    formats its (here enormous) repr every time a draw hits ``max_leaves``."""
    act = acts(depth)
    text = st.sampled_from(TEXTS)
    leaf = choice(literals(), literals(), st.sampled_from(SPECIALS), hooked(depth))
    if levels == 0:
        return leaf
    children = values(depth, long, levels - 1)
    items = st.lists(children, max_size=3).map(tuple)
    keys = choice(
        text.map(lit),
        text.map(lit),
        st.sampled_from((1, None, 1.5)).map(lit),
        st.tuples(st.just("sub"), st.just("str"), text, overrides(STR_METHODS, depth)),
    )
    pairs = st.lists(st.tuples(keys, children), max_size=3).map(tuple)
    return choice(
        leaf,
        leaf,
        leaf,
        st.tuples(st.just("list"), items),
        st.tuples(st.just("tuple"), items),
        st.tuples(st.just("dict"), pairs),
        st.tuples(st.just("sub"), st.sampled_from(("list", "tuple")), items, overrides(LIST_METHODS, depth)),
        st.tuples(st.just("sub"), st.just("dict"), pairs, overrides(DICT_METHODS, depth)),
        st.tuples(
            st.just("mapping"),
            st.lists(st.tuples(text, children, act), max_size=3).map(tuple),
            st.lists(st.tuples(st.sampled_from(("__iter__", "__len__", "items")), act), max_size=1).map(tuple),
        ),
        st.tuples(
            st.just("obj"),
            st.lists(st.tuples(st.sampled_from(IDENTIFIERS), children, act), max_size=2).map(_first_per_name),
            choice(st.none(), act),
            st.none(),
            choice(st.none(), st.tuples(act, children)),
            choice(st.none(), st.none(), st.tuples(act, children)),
        ),
        st.tuples(
            st.just("dc"),
            st.lists(st.tuples(st.sampled_from(("f", "g")), children, act), max_size=2).map(_first_per_name),
        ),
        st.tuples(
            st.just("deep"),
            st.sampled_from(("list", "tuple", "dict", "mixed")),
            st.sampled_from(deep_depths(long)),
            children,
        ),
    )


def shaped(fields: tuple[tuple[str, SearchStrategy[Recipe]], ...], depth: int) -> SearchStrategy[Recipe]:
    """An object with (some of) ``fields``: a dict, a hooked Mapping, an object read by attribute, a dataclass."""
    names = tuple(name for name, _ in fields)
    present = st.tuples(*[choice(field, field, st.just(OMIT)) for _, field in fields])
    entry_acts = st.tuples(*[acts(depth) for _ in fields])

    def as_dict(values: tuple[Recipe, ...]) -> Recipe:
        return ("dict", tuple((lit(n), v) for n, v in zip(names, values, strict=True) if v != OMIT))

    def as_mapping(values: tuple[Recipe, ...], hooks: tuple[Act, ...], meta: tuple[tuple[str, Act], ...]) -> Recipe:
        return ("mapping", tuple(zip(names, values, hooks, strict=True)), meta)

    def as_obj(values: tuple[Recipe, ...], hooks: tuple[Act, ...], getattr_act: Act | None) -> Recipe:
        return ("obj", tuple(zip(names, values, hooks, strict=True)), getattr_act, None, None, None)

    def as_dataclass(values: tuple[Recipe, ...], hooks: tuple[Act, ...]) -> Recipe:
        return ("dc", tuple((n, v, a) for n, v, a in zip(names, values, hooks, strict=True) if v != OMIT))

    meta = st.lists(st.tuples(st.sampled_from(("__iter__", "__len__", "items")), acts(depth)), max_size=1).map(tuple)
    return choice(
        present.map(as_dict),
        present.map(as_dict),
        st.builds(as_mapping, present, entry_acts, meta),
        st.builds(as_obj, present, entry_acts, choice(st.none(), acts(depth))),
        st.builds(as_dataclass, present, entry_acts),
    )


def mostly(good: SearchStrategy[Any], bad: SearchStrategy[Any], weight: int = 3) -> SearchStrategy[Any]:
    """``good`` ``weight`` times as often as ``bad``."""
    return choice(*([good] * weight), bad)


def json_content() -> SearchStrategy[Recipe]:
    scalar = choice(st.sampled_from(TEXTS), st.integers(-(2**60), 2**60), st.floats(), st.booleans(), st.none())
    plain = st.recursive(
        scalar, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(TEXTS), c, max_size=3), max_leaves=6
    )
    return plain.map(lit)


@cache
def operations(depth: int, long: bool = False) -> SearchStrategy[Recipe]:
    """One operation on the closure, its arguments mostly well-formed, often hostile."""
    act = acts(depth)
    value = values(depth, long)
    simple = choice(literals(), st.sampled_from(SPECIALS), hooked(depth))
    ids = mostly(st.sampled_from(IDS).map(lit), simple, 4)
    handle = mostly(
        st.just(("h", "current")),
        choice(
            st.tuples(st.just("h"), st.just("old"), st.integers(0, 5)),
            st.tuples(st.just("h"), st.just("forged"), simple),
            st.just(("h", "forged_current")),
            st.tuples(st.just("h"), st.just("dict"), simple),
            st.just(("h", "foreign")),
            st.tuples(st.just("h"), st.just("obj"), simple, act),
            simple,
        ),
        3,
    )
    texts = st.sampled_from(TEXTS).map(lit)
    message = mostly(
        choice(
            texts,
            st.tuples(
                st.just("exc"),
                st.sampled_from(("Exception", "RuntimeError", "BaseException")),
                st.sampled_from(TEXTS),
                choice(st.none(), act),
            ),
            st.tuples(
                st.just("obj"), st.just(()), st.none(), st.tuples(act, st.sampled_from(TEXTS)), st.none(), st.none()
            ),
        ),
        value,
    )
    codes = mostly(st.sampled_from(("E1", "timeout", "E1", "", " ", "x" * 129, "é" * 65)).map(lit), simple)
    statuses = mostly(
        st.sampled_from(("success", "error", "cancelled", "success", "complete", "bogus")).map(lit), simple, 4
    )
    content = choice(json_content(), value)
    entry = shaped((("id", ids), ("name", mostly(st.sampled_from(("t", "tool")).map(lit), simple))), depth)
    entries = st.lists(entry, max_size=3).map(tuple)
    calls = mostly(
        choice(entries.map(lambda e: ("list", e)), entries.map(lambda e: ("tuple", e))),
        choice(
            st.tuples(st.just("sub"), st.sampled_from(("list", "tuple")), entries, overrides(LIST_METHODS, depth)),
            value,
        ),
    )
    outcome = mostly(
        shaped((("status", statuses), ("content", content), ("code", codes), ("message", message)), depth), value, 5
    )
    reason = choice(
        shaped(
            (
                ("status", mostly(st.sampled_from(("error", "cancelled", "complete")).map(lit), simple)),
                ("code", codes),
                ("sideEffectState", mostly(st.sampled_from(("unknown", "not_started", "x")).map(lit), simple)),
                ("side_effect_state", choice(st.just(OMIT), st.sampled_from(("unknown", "not_started")).map(lit))),
                ("message", message),
            ),
            depth,
        ),
        st.just(OMIT),
        value,
    )
    snapshot_given = choice(
        st.tuples(st.just("s"), st.just("kept"), st.integers(0, 30)),
        st.just(("s", "latest")),
        st.just(("s", "latest")),
        st.tuples(st.just("s"), st.just("replace"), st.integers(0, 30)),
        st.just(("s", "foreign")),
        st.tuples(st.just("s"), st.just("counting"), simple),
        st.tuples(st.just("s"), st.just("result"), st.integers(0, 15)),
        simple,
    )
    snapshot = choice(st.just(OMIT), snapshot_given)
    optional_message = choice(st.just(OMIT), message, message)
    optional_code = choice(st.just(OMIT), st.just(OMIT), codes)
    begin = st.tuples(st.just("begin"), calls)
    settle = st.tuples(st.just("settle"), handle, ids, outcome)
    succeed = st.tuples(st.just("succeed"), handle, ids, mostly(content, st.just(OMIT), 6))
    fail = st.tuples(st.just("fail"), handle, ids, optional_message, optional_code)
    cancel = st.tuples(st.just("cancel"), handle, ids, optional_message, optional_code)
    close = st.tuples(st.just("close"), handle, reason)
    export = st.tuples(st.just("export"), st.sampled_from(EXPORT_METHODS), snapshot)
    return choice(
        begin, begin, settle, settle, settle, succeed, succeed, fail, fail, cancel, close, close,
        st.tuples(st.just("seal"), handle),
        st.just(("snapshot",)),
        st.just(("active_generation",)),
        export,
        export,
        st.tuples(st.just("to_json"), choice(value, snapshot_given)),
    )  # fmt: skip
