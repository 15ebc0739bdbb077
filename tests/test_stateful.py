"""Stateful differential test: the real closure and the spec model (``tests/model.py``) side by side.

Theory of operation
-------------------
:class:`ClosureMachine` is a Hypothesis ``RuleBasedStateMachine``.  Every rule
describes one operation as *plain, printable recipes* (:class:`Obj`,
:class:`Text`, :class:`Json`, :class:`Nested` …) and runs it twice: on the
implementation (``ToolCallClosure``, or a closure driven by an edited table in
the planted-bug test) and on the model.  Each run gets its own *side*
(:class:`Side`): the recipes are built into fresh caller values bound to that
side, so a hook that fires while the implementation reads a value calls the
implementation again, and the same hook fired by the model calls the model.
After the two runs the machine asserts that

* the outer results are equal (canonical JSON of the value, or the error's
  kind, code and message, or the same hook exception);
* the *caller-code traces* are equal: every property read of a hooked object
  (which key, which read), every ``__str__``/``__json__`` call, and every call
  of a trap (a ``str`` subclass's dunders, any attribute of a trap snapshot),
  in order — so a read made in the wrong phase, read twice, or not at all
  shows up even when it changes no result;
* the nested operations made by caller code had equal results, in order;
* a step that raised left the state exactly as the last nested operation left
  it (I4), a step answered by a rejection changed nothing but one diagnostic
  (I2, generalised), and a stale or look-alike handle was always rejected as
  ``stale_generation`` (I2).

After every step the ``@invariant`` methods check I1 (the first terminal
settlement of every (generation, call id) never changes, also across
superseded snapshots), I3 (every snapshot ever returned equals its deep copy),
I5, I7 (the counter equals the number of successful begins, nested ones
included), I8 (sizes and byte limits, exact ``str`` values) and model-vs-
implementation equality of ``to_json(snapshot())`` and ``active_generation``.
I6 is checked where exports happen: a successful export had a closed
snapshot this instance produced, read no part of a refused argument (trap
snapshots), and changed nothing; the payload is mutable and detached.

Rules.  ``begin`` (valid, invalid and junk call lists; with turn tokens taken
earlier — current or gone stale — with a token taken just before and calls
whose caller code begins, and with values that are not tokens: deviation
D20, where a begin is accepted exactly when its token is the counter's value
at the commit and a ``stale_turn`` rejection changes nothing but one
diagnostic), ``turn_token``, ``settle`` /
``succeed`` / ``fail`` / ``cancel`` (current, stale, forged, look-alike and
other-instance handles; announced, unknown and malformed ids; valid and
invalid outcomes, contents, messages and codes), ``close`` (every reason
shape) and ``seal`` in every run state, ``snapshot``, the three exports (of
returned, superseded, open, cloned, foreign and trap snapshots, and of the
default) and ``try_to_mutate``.  The general rules reach the rechecks rarely,
so ``*_with_caller_code`` rules aim at them: a current handle, a pending call
and a hook that is sure to fire.  Limits are small and random (``setup``),
so byte limits, truncation, ``maxCalls`` and ``maxDiagnostics`` bite often.

Hooks.  A hooked mapping or attribute object fires its hook on the n-th read
of a key (``outcome.status`` is read twice, so n=1 fires in *prepare* and n=2
in *normalize*); a hooked ``__str__`` / ``__json__`` fires on its first call.
A hook runs one nested operation on the same closure (settle / succeed / fail
/ cancel of the same or another call, close, seal, begin, snapshot; with the
current, the first or a forged handle) and then returns normally, raises
:class:`HookError` (caller code throwing after its nested change), makes the
read absent (``KeyError`` from a mapping, ``AttributeError`` from an object)
or raises the other one of those two, which is not "absent" and must
propagate (§3).

Planted bugs.  ``test_planted_bug_is_found`` runs the same machine against
closures driven by broken copies of the table (``tests/tables.py``) and
expects an AssertionError: the machine can fail.

Running it
----------
The settings come from ``tests/conftest.py``::

    python -m pytest tests/test_stateful.py                           # dev profile (local default)
    CI=true python -m pytest tests/test_stateful.py                   # ci profile: derandomized, bounded
    HYPOTHESIS_PROFILE=long python -m pytest tests/test_stateful.py   # the long run (5000 x 100 steps)

(with the package installed, ``pip install -e '.[dev]'``, or ``PYTHONPATH=src``).
Measured on the 2-core project machine (shared with other jobs, load 2-5): the
machine takes ~4-8 s under ci, ~9-20 s under dev and ~12-17 min under long;
the planted-bug tests take under 1 s each.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime
import enum
import json
import sys
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Final

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
    run_state_machine_as_test,
)

import model as spec_model
from tables import closure_for, modified, row

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "proofs"))
from faults import InjectedFault, run_with_fault

from tool_call_closure import (
    BatchHandle,
    BeginResult,
    LimitError,
    Rejection,
    Snapshot,
    ToolCallClosure,
    ToolCallClosureError,
    TurnToken,
    UsageError,
    to_json,
)
from tool_call_closure.ecma import utf8_length

SAME: Final = "="  # a nested operation on the outer operation's call id
SETTLED: Final = ("success", "error", "cancelled")
DEFAULT_CODES: Final = frozenset({"error", "cancelled", "tool_error", "superseded"})
EXPORTS: Final = ("to_openai_chat_completions", "to_openai_responses", "to_anthropic_tool_results")
POOL: Final = ("a", "b", "c", "é", "😀")  # small, so ids collide: duplicates, unknown ids, same-call nesting


class _NotPassed:
    """Marker of an argument the rule leaves out of the call (JavaScript's ``undefined`` argument)."""

    def __repr__(self) -> str:
        return "NOT_PASSED"


NOT_PASSED: Final = _NotPassed()


class HookError(Exception):
    """The distinctive exception caller code raises after its nested operation."""


class _Generation(int):
    """An int subclass as a turn token's generation: it counts with its plain value (D5)."""


# =========================================================================== sides


@dataclass
class NestedRecord:
    """One nested operation made by caller code: its name, canonical result text and result object."""

    op: str
    text: str
    value: Any


class Side:
    """One of the two systems under comparison, and what caller code bound to it sees and does.

    ``current`` is the handle of the latest successful ``begin`` (outer or
    nested); ``log`` and ``nested`` collect the caller-code trace and the
    nested operations of the current step; ``after_nested`` is the state right
    after the last nested operation (the baseline of I2/I4).
    """

    def __init__(
        self,
        name: str,
        target: Any,
        *,
        make_handle: Callable[[int], Any],
        rejection: Any,
        make_turn: Callable[[Any], Any],
    ) -> None:
        self.name = name
        self.target = target
        self.make_handle = make_handle  # a look-alike of this side's own handle type
        self.make_turn = make_turn  # a turn token of this side's own token type (any generation value)
        self.rejection = rejection  # a rejection object of this side (never a snapshot)
        self.current: Any = None
        self.handles: list[Any] = []
        self.begun = 0
        self.log: list[tuple[Any, ...]] = []
        self.nested: list[NestedRecord] = []
        self.after_nested: tuple[int | None, str | None] | None = None
        self.outer_call_id = "a"
        self.announced: list[str] = []  # the current run's ids when the step started
        self.pending: list[str] = []  # ... and those still pending
        self.other_handle: Any = None
        self.other_open: Any = None
        self.other_closed: Any = None

    def state(self) -> tuple[int | None, str | None]:
        """The observable state: the active generation and the canonical JSON of a fresh snapshot."""
        snapshot = self.target.snapshot()
        return self.target.active_generation, None if snapshot is None else to_json(snapshot)

    def start_step(self, announced: list[str], pending: list[str]) -> None:
        self.log = []
        self.nested = []
        self.after_nested = None
        self.announced, self.pending = announced, pending

    def note_begin(self, result: Any) -> None:
        self.current = result.handle
        self.handles.append(result.handle)
        self.begun += 1

    def fire(self, hook: Hook, tag: str) -> None:
        """Run ``hook``: its nested operation (if any), then raise HookError if asked to."""
        self.log.append(("hook", tag))
        if hook.nested is not None:
            self.run_nested(hook.nested)
        if hook.then == "boom":
            raise HookError(tag)

    def run_nested(self, nested: Nested) -> None:
        """Run one nested operation with plain arguments; record its result and the state after it."""
        target = self.target
        handle: Any
        if nested.handle == "current":
            handle = self.current
        elif nested.handle == "first":
            handle = self.handles[0] if self.handles else None
        else:
            handle = {"generation": self.current.generation if self.current is not None else 1}
        call_id = self.outer_call_id if nested.call_id == SAME else nested.call_id
        op = nested.op
        try:
            if op == "settle":
                outcome: dict[str, Any] = (
                    {"status": "success", "content": {"nested": True}}
                    if nested.status == "success"
                    else {"status": nested.status, "code": "N", "message": "nested"}
                )
                result = target.settle(handle, call_id, outcome)
            elif op == "succeed":
                result = target.succeed(handle, call_id, "nested")
            elif op == "fail":
                result = target.fail(handle, call_id, "nested failure")
            elif op == "cancel":
                result = target.cancel(handle, call_id)
            elif op == "close":
                result = target.close(handle, {"status": nested.status})
            elif op == "seal":
                result = target.seal(handle)
            elif op == "begin":
                result = target.begin([{"id": call, "name": "n"} for call in nested.ids])
            else:
                result = target.snapshot()
        except (ToolCallClosureError, spec_model.ModelError) as exc:
            self.nested.append(NestedRecord(op, describe_error(exc), exc))
        else:
            if op == "begin":
                self.note_begin(result)
            self.nested.append(NestedRecord(op, to_json(result), result))
        self.after_nested = self.state()


# =========================================================================== recipes for caller values


class Recipe:
    """A printable description of a caller value; :meth:`build` makes a fresh one bound to a side."""

    def build(self, side: Side, label: str) -> Any:
        raise NotImplementedError


def build(value: Any, side: Side, label: str) -> Any:
    """Build a recipe (recursively through lists and dicts); plain values are used as they are."""
    if isinstance(value, Recipe):
        return value.build(side, label)
    if isinstance(value, list):
        return [build(item, side, f"{label}[{index}]") for index, item in enumerate(value)]
    if isinstance(value, dict):
        return {key: build(item, side, f"{label}.{key}") for key, item in value.items()}
    if isinstance(value, BaseException):
        return type(value)(*value.args)  # a fresh exception per side
    return value


@dataclass(frozen=True)
class Nested:
    """A nested operation run by caller code (see :meth:`Side.run_nested`)."""

    op: str
    handle: str = "current"
    call_id: str = SAME
    status: str = "success"
    ids: tuple[str, ...] = ()

    def __repr__(self) -> str:
        if self.op == "begin":
            return f"begin{list(self.ids)!r}"
        if self.op in ("snapshot", "seal"):
            return f"{self.op}({self.handle})"
        if self.op == "close":
            return f"close({self.handle}, {self.status})"
        return f"{self.op}({self.handle}, {self.call_id!r}, {self.status})"


@dataclass(frozen=True)
class Hook:
    """What a hooked read or conversion does: a nested operation (or none), then what the caller code does.

    ``then``: ``value`` returns normally; ``boom`` raises :class:`HookError`; ``missing`` makes a read absent
    (KeyError from a mapping, AttributeError from an object) and makes ``__str__``/``__json__`` raise KeyError;
    ``other-missing`` raises the other kind from a read, which is not "absent" and must propagate.
    """

    nested: Nested | None
    then: str = "value"

    def __repr__(self) -> str:
        return f"Hook({self.nested!r}, {self.then})"


class TrapStr(str):
    """A str subclass whose overridable methods log a trap: the spec reads only its plain value (D5)."""

    _side: Side

    def _trap(self, method: str) -> None:
        self._side.log.append(("trap", str.__str__(self), method))

    def __str__(self) -> str:
        self._trap("__str__")
        return str.__str__(self)

    def __eq__(self, other: object) -> bool:
        self._trap("__eq__")
        return str.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        self._trap("__ne__")
        return str.__ne__(self, other)

    def __hash__(self) -> int:
        self._trap("__hash__")
        return str.__hash__(self)

    def __len__(self) -> int:
        self._trap("__len__")
        return str.__len__(self)

    def strip(self, chars: str | None = None) -> str:
        self._trap("strip")
        return str.strip(self, chars)

    def encode(self, encoding: str = "utf-8", errors: str = "strict") -> bytes:
        self._trap("encode")
        return str.encode(self, encoding, errors)


@dataclass(frozen=True)
class Pick(Recipe):
    """An announced call id of the current run, chosen when the step runs (a pending one if any)."""

    index: int

    def __repr__(self) -> str:
        return f"Pick({self.index})"

    def build(self, side: Side, label: str) -> Any:
        ids = side.pending or side.announced
        return ids[self.index % len(ids)] if ids else POOL[self.index % len(POOL)]


@dataclass(frozen=True)
class Sub(Recipe):
    """A :class:`TrapStr` with this plain value."""

    text: str

    def __repr__(self) -> str:
        return f"Sub({self.text!r})"

    def build(self, side: Side, label: str) -> Any:
        value = TrapStr(self.text)
        value._side = side
        return value


class HookedText:
    """An object whose ``__str__`` (caller code) fires a hook on its first call."""

    def __init__(self, side: Side, label: str, text: str, hook: Hook | None) -> None:
        self._side, self._label, self._text, self._hook, self._calls = side, label, text, hook, 0

    def __str__(self) -> str:
        self._calls += 1
        self._side.log.append(("str", self._label, self._calls))
        if self._calls == 1 and self._hook is not None:
            self._side.fire(self._hook, f"{self._label}.__str__")
            if self._hook.then in ("missing", "other-missing"):
                raise KeyError(self._label)  # caller code's own exception propagates unchanged
        return self._text


class HookedException(Exception):  # noqa: N818 - named as the message conversion shows it ("HookedException: …")
    """An exception whose ``__str__`` (caller code) fires a hook on its first call."""

    def __init__(self, side: Side, label: str, text: str, hook: Hook | None) -> None:
        super().__init__()
        self._side, self._label, self._text, self._hook, self._calls = side, label, text, hook, 0

    def __str__(self) -> str:
        self._calls += 1
        self._side.log.append(("str", self._label, self._calls))
        if self._calls == 1 and self._hook is not None:
            self._side.fire(self._hook, f"{self._label}.__str__")
            if self._hook.then in ("missing", "other-missing"):
                raise KeyError(self._label)  # caller code's own exception propagates unchanged
        return self._text


@dataclass(frozen=True)
class Text(Recipe):
    """A message with a ``__str__`` hook; ``exception`` makes it an Exception subclass."""

    text: str
    hook: Hook | None
    exception: bool = False

    def build(self, side: Side, label: str) -> Any:
        kind = HookedException if self.exception else HookedText
        return kind(side, label, self.text, self.hook)


class HookedJson:
    """Content whose ``__json__`` (the ``toJSON`` analog, caller code) fires a hook on its first call."""

    def __init__(self, side: Side, label: str, value: Any, hook: Hook | None) -> None:
        self._side, self._label, self._value, self._hook, self._calls = side, label, value, hook, 0

    def __json__(self) -> Any:
        self._calls += 1
        self._side.log.append(("json", self._label, self._calls))
        if self._calls == 1 and self._hook is not None:
            self._side.fire(self._hook, f"{self._label}.__json__")
            if self._hook.then in ("missing", "other-missing"):
                raise KeyError(self._label)  # caller code's own exception propagates unchanged
        return self._value


@dataclass(frozen=True)
class Json(Recipe):
    """Content with a ``__json__`` hook returning ``value`` (itself a recipe)."""

    value: Any
    hook: Hook | None

    def build(self, side: Side, label: str) -> Any:
        return HookedJson(side, label, build(self.value, side, f"{label}.json"), self.hook)


@dataclass(frozen=True)
class Circular(Recipe):
    """A list that contains itself (``Converting circular structure to JSON``)."""

    def build(self, side: Side, label: str) -> Any:
        value: list[Any] = [1]
        value.append(value)
        return value


@dataclass(frozen=True)
class Opaque(Recipe):
    """Content that is not JSON-serializable (projection clause (g))."""

    kind: str

    def build(self, side: Side, label: str) -> Any:
        return {"set": lambda: {1}, "bytes": lambda: b"x", "object": object}[self.kind]()


class Colour(enum.Enum):
    RED = "red"


@dataclass
class Point:
    x: int
    y: list[int]


@dataclass(frozen=True)
class Projected(Recipe):
    """Content that is not plain JSON but has a projection (D5 clauses (c)-(f)), or a refused mapping."""

    kind: str

    def build(self, side: Side, label: str) -> Any:
        makers: dict[str, Callable[[], Any]] = {
            "dataclass": lambda: Point(1, [2, 3]),
            "enum": lambda: [Colour.RED],
            "datetime": lambda: {"at": datetime.datetime(2024, 1, 2, 3, 4, 5)},
            "tuple": lambda: (1, ("a", None)),
            "int keys": lambda: {1: "one"},
        }
        return makers[self.kind]()


def _hooked_read(obj: Any, key: str, missing: type[Exception]) -> Any:
    """One property read of a hooked object: log it, fire the hook for this (key, n), return the field."""
    state = object.__getattribute__(obj, "_h")
    count = state.reads[key] = state.reads.get(key, 0) + 1
    side: Side = state.side
    side.log.append(("read", state.label, key, count))
    hook = state.hooks.get((key, count))
    if hook is not None:
        side.fire(hook, f"{state.label}.{key}#{count}")
        if hook.then == "missing":
            raise missing(key)
        if hook.then == "other-missing":  # the wrong kind for this object: not "absent", it propagates (§3)
            raise (AttributeError if missing is KeyError else KeyError)(key)
    if key in state.fields:
        return state.fields[key]
    raise missing(key)


@dataclass
class _HookState:
    side: Side
    label: str
    fields: dict[str, Any]
    hooks: dict[tuple[str, int], Hook]
    reads: dict[str, int] = field(default_factory=dict)


class HookedMapping(Mapping[str, Any]):
    """A custom Mapping: read by key (§3); a KeyError means absent."""

    def __init__(self, state: _HookState) -> None:
        self._h = state

    def __getitem__(self, key: str) -> Any:
        return _hooked_read(self, key, KeyError)

    def __iter__(self) -> Iterator[str]:
        return iter(self._h.fields)

    def __len__(self) -> int:
        return len(self._h.fields)


class HookedObject:
    """A plain object read by attribute (D7); an AttributeError means absent."""

    def __init__(self, state: _HookState) -> None:
        self._h = state

    def __getattr__(self, key: str) -> Any:
        if key.startswith("_"):
            raise AttributeError(key)
        return _hooked_read(self, key, AttributeError)


@dataclass(frozen=True)
class Obj(Recipe):
    """A caller object (outcome, reason, call entry, look-alike handle): a dict, a hooked Mapping or object."""

    form: str  # "dict" | "mapping" | "object"
    fields: tuple[tuple[str, Any], ...]
    hooks: tuple[tuple[str, int, Hook], ...] = ()

    def __repr__(self) -> str:
        fields = ", ".join(f"{key}={value!r}" for key, value in self.fields)
        hooks = "".join(f", @{key}#{n}={hook!r}" for key, n, hook in self.hooks)
        return f"{self.form}({fields}{hooks})"

    def build(self, side: Side, label: str) -> Any:
        fields = {key: build(value, side, f"{label}.{key}") for key, value in self.fields}
        if self.form == "dict":
            return fields
        state = _HookState(side, label, fields, {(key, n): hook for key, n, hook in self.hooks})
        return HookedMapping(state) if self.form == "mapping" else HookedObject(state)


@dataclass(frozen=True)
class Calls(Recipe):
    """The argument of ``begin``: a list or tuple of entries, or something that is not an array."""

    container: str  # "list" | "tuple" | "junk"
    entries: tuple[Any, ...]

    def __repr__(self) -> str:
        return f"{self.container}{list(self.entries)!r}"

    def build(self, side: Side, label: str) -> Any:
        if self.container == "junk":
            return build(self.entries[0], side, label)
        entries = [build(entry, side, f"calls[{index}]") for index, entry in enumerate(self.entries)]
        return entries if self.container == "list" else tuple(entries)


# --------------------------------------------------------------------------- handle and snapshot references


@dataclass(frozen=True, eq=False)
class HandlePair:
    """The implementation's and the model's handle for the same generation (a Bundle value)."""

    impl: Any
    model: Any
    label: str

    def __repr__(self) -> str:
        return f"<handle {self.label}>"


@dataclass(frozen=True, eq=False)
class TurnPair:
    """The implementation's and the model's turn token taken in the same step (a Bundle value)."""

    impl: Any
    model: Any

    def __repr__(self) -> str:
        return f"<turn token g{self.impl.generation}>"


@dataclass(frozen=True, eq=False)
class SnapPair:
    """The implementation's and the model's snapshot from the same step (a Bundle value)."""

    impl: Any
    model: Any
    label: str

    def __repr__(self) -> str:
        return f"<snapshot {self.label}>"


@dataclass(frozen=True)
class Ref:
    """A handle chosen when the step runs.

    ``current`` (the latest begin's handle), ``history`` (any handle this side's begins returned),
    ``forged`` (a new object of the side's handle type), ``other`` (another instance's handle),
    ``lookalike`` (a mapping or object with a ``generation``) and ``junk`` (not an object).
    """

    kind: str
    index: int = 0
    value: Any = None

    def __repr__(self) -> str:
        if self.kind == "current":
            return "CURRENT"
        if self.kind == "history":
            return f"HISTORY[{self.index}]"
        return f"{self.kind}({self.value!r})"


def resolve_handle(ref: Any, side: Side) -> Any:
    """This side's object for a handle reference."""
    if isinstance(ref, HandlePair):
        return ref.impl if side.name == "impl" else ref.model
    assert isinstance(ref, Ref)
    if ref.kind == "current":
        return side.current
    if ref.kind == "history":
        return side.handles[ref.index % len(side.handles)] if side.handles else None
    if ref.kind == "forged":  # a look-alike of this side's own handle type
        return side.make_handle(ref.value)
    if ref.kind == "other":  # another instance's handle
        return side.other_handle
    return build(ref.value, side, "handle")  # look-alike objects and junk


class TrapSnapshot:
    """A look-alike snapshot: any attribute read or protocol call is logged (exports must read nothing, I6)."""

    def __init__(self, side: Side) -> None:
        object.__setattr__(self, "_side", side)

    def __getattribute__(self, name: str) -> Any:
        object.__getattribute__(self, "_side").log.append(("trap", "snapshot", name))
        return object.__getattribute__(self, name)

    def __eq__(self, other: object) -> bool:
        object.__getattribute__(self, "_side").log.append(("trap", "snapshot", "__eq__"))
        return self is other

    def __hash__(self) -> int:
        object.__getattribute__(self, "_side").log.append(("trap", "snapshot", "__hash__"))
        return id(self)

    def __bool__(self) -> bool:
        object.__getattribute__(self, "_side").log.append(("trap", "snapshot", "__bool__"))
        return True


@dataclass(frozen=True)
class SnapRef:
    """A snapshot argument chosen when the step runs (history, clones, foreign values, the default)."""

    kind: str
    index: int = 0

    def __repr__(self) -> str:
        return f"{self.kind}[{self.index}]" if self.kind in ("history", "replace", "copy", "deepcopy") else self.kind


# =========================================================================== comparing outcomes


def describe_error(exc: BaseException) -> str:
    """The comparable text of an exception: the spec kind, code and message (prefix for content_circular)."""
    if isinstance(exc, HookError):
        return f"HookError({exc})"
    if isinstance(exc, spec_model.ModelError):
        kind, code, message = exc.kind, exc.code, exc.message
    elif isinstance(exc, ToolCallClosureError):
        kinds = {UsageError: "TypeError", LimitError: "RangeError"}
        kind = next((name for cls, name in kinds.items() if type(exc) is cls), f"unexpected class {type(exc)}")
        code, message = exc.code, str(exc)
    else:
        return f"other exception {type(exc).__name__}: {exc!r}"  # caller code's own, or a crash
    prefix = spec_model.ERRORS["content_circular"]["message"]
    if code == "content_circular" and message.startswith(prefix):
        message = prefix
    return f"{kind}[{code}]: {message}"


@dataclass
class Outcome:
    """What one side's operation did: returned ``value`` or raised it; ``text`` is comparable."""

    raised: bool
    value: Any
    text: str


def capture(call: Callable[[], Any]) -> Outcome:
    """Run ``call``; an exception (of any kind) becomes a raised Outcome, to be compared across sides."""
    try:
        value = call()
    except Exception as exc:  # noqa: BLE001 - every exception is an observable result, compared across sides
        return Outcome(True, exc, describe_error(exc))
    return Outcome(False, value, to_json(value))


def _diagnostics_and_rest(state: str | None) -> tuple[list[Any], Any]:
    if state is None:
        return [], None
    data = json.loads(state)
    diagnostics = data.pop("diagnostics")
    return diagnostics, data


# =========================================================================== strategies

valid_ids = st.sampled_from(POOL)
bad_ids = st.sampled_from(["", " ", "\u3000", "\ufeff\t", "\u200b", "\ud800", "abcdefghijklm", None, 5, b"a"])
picks = st.builds(Pick, st.integers(0, 3))
call_ids = st.one_of(picks, picks, picks, valid_ids, valid_ids.map(Sub), bad_ids)
names = st.one_of(
    st.just("t"), st.just("t"), st.sampled_from(["tool", "", " ", "ñame", "x" * 10, None]), st.just(Sub("t"))
)
codes = st.one_of(
    st.none(),
    st.sampled_from(["E1", "timeout", "tool_error", "", "  ", "é" * 7, "x" * 20, 7]),
    st.just(Sub("E2")),
    st.just(Text("E3", Hook(Nested("snapshot")))),  # not a string: refused without running its __str__
)
handle_kinds = st.sampled_from(["current", "current", "current", "first", "forged"])

nested_settlements = st.builds(
    Nested,
    op=st.sampled_from(["settle", "succeed", "fail", "cancel"]),
    handle=handle_kinds,
    call_id=st.one_of(st.just(SAME), st.just(SAME), valid_ids),
    status=st.sampled_from(SETTLED),
)
nested_closes = st.builds(
    Nested, op=st.just("close"), handle=handle_kinds, status=st.sampled_from(["error", "cancelled"])
)
nested_begins = st.builds(Nested, op=st.just("begin"), ids=st.lists(valid_ids, unique=True, max_size=3).map(tuple))
nested_ops = st.one_of(
    nested_settlements,
    nested_settlements,
    nested_closes,
    nested_closes,
    nested_begins,
    nested_begins,
    st.builds(Nested, op=st.just("seal"), handle=handle_kinds),
    st.builds(Nested, op=st.just("snapshot")),
)
hooks = st.builds(
    Hook,
    nested=st.one_of(nested_ops, nested_ops, st.none()),
    then=st.sampled_from(["value", "value", "value", "value", "boom", "missing", "other-missing"]),
)
maybe_hook = st.one_of(st.none(), hooks)

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(),
    st.text(max_size=4),
    st.sampled_from(["\ud800", "é", "😀", "\u2028", "0", 2**60]),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", "0", "10", "01"]), inner, max_size=3)
    ),
    max_leaves=5,
)
contents = st.one_of(
    st.text(max_size=10),
    json_values,
    st.text(max_size=6).map(Sub),
    st.builds(Json, value=json_values, hook=maybe_hook),
    st.builds(Json, value=json_values, hook=hooks),
    st.just(Circular()),
    st.sampled_from([Opaque("set"), Opaque("bytes"), Opaque("object")]),
    st.sampled_from([Projected(kind) for kind in ("dataclass", "enum", "datetime", "tuple", "int keys")]),
    st.sampled_from(["x" * 50, "é" * 20, "\ud83d\ude00" * 3]),
)
plain_messages = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["é" * 9, "😀" * 5, "\ud800" * 4, "ab\ud800cd", "x" * 30, ""]),
    st.none(),
    st.integers(-10, 10),
    st.floats(),
    st.booleans(),
    st.lists(st.one_of(st.none(), st.integers(0, 9), st.text(max_size=2)), max_size=3),
    st.just({"k": 1}),
    st.text(max_size=6).map(Sub),
    st.sampled_from([ValueError("bad"), KeyError("k"), RuntimeError(""), Exception("é" * 10)]),
)
messages = st.one_of(
    plain_messages,
    st.builds(Text, text=st.text(max_size=8), hook=maybe_hook, exception=st.booleans()),
    st.builds(Text, text=st.text(max_size=8), hook=hooks, exception=st.booleans()),
)


def caller_objects(
    required: dict[str, st.SearchStrategy[Any]],
    optional: dict[str, st.SearchStrategy[Any]],
    *,
    hooked: bool = False,
) -> st.SearchStrategy[Obj]:
    """Caller objects with these fields: a plain dict, or a hooked Mapping / attribute object.

    With ``hooked`` the object is never a plain dict and has at least one hook.
    """
    keys = sorted(set(required) | set(optional))
    forms = ["mapping", "object"] if hooked else ["dict", "dict", "mapping", "object"]

    @st.composite
    def objects(draw: st.DrawFn) -> Obj:
        fields = draw(st.fixed_dictionaries(required, optional=optional))
        form = draw(st.sampled_from(forms))
        attached: tuple[tuple[str, int, Hook], ...] = ()
        if form != "dict":
            drawn = draw(
                st.lists(
                    st.tuples(st.sampled_from(keys), st.integers(1, 2), hooks),
                    min_size=1 if hooked else 0,
                    max_size=2,
                    unique_by=lambda hook: (hook[0], hook[1]),
                )
            )
            attached = tuple(drawn)
        return Obj(form, tuple(fields.items()), attached)

    return objects()


# content that is itself a hooked Mapping: JSON.stringify reads its items (caller code) in normalize
contents = st.one_of(contents, caller_objects({"a": json_values}, {"b": json_values}, hooked=True))


outcome_statuses = st.one_of(
    st.sampled_from(SETTLED),
    st.sampled_from(SETTLED),
    st.sampled_from(SETTLED).map(Sub),
    st.sampled_from([None, "complete", "Success", 5, ""]),
)
outcome_fields: Final = {"content": contents, "code": codes, "message": messages}
hooked_outcomes = st.one_of(
    caller_objects({"status": st.sampled_from(SETTLED)}, outcome_fields, hooked=True),
    caller_objects({"status": st.sampled_from(SETTLED)}, outcome_fields, hooked=True),
    caller_objects({"status": outcome_statuses}, outcome_fields, hooked=True),
    st.builds(
        lambda content: Obj("dict", (("status", "success"), ("content", content))),
        st.builds(Json, value=json_values, hook=hooks),
    ),
    st.builds(
        lambda status, message: Obj("dict", (("status", status), ("message", message))),
        st.sampled_from(["error", "cancelled"]),
        st.builds(Text, text=st.text(max_size=8), hook=hooks, exception=st.booleans()),
    ),
)
outcomes = st.one_of(
    caller_objects({"status": outcome_statuses}, {"content": contents, "code": codes, "message": messages}),
    caller_objects({}, {"status": outcome_statuses, "content": contents, "code": codes, "message": messages}),
    st.sampled_from([None, 5, "success", ["success"]]),
)
side_effect_states = st.one_of(
    st.sampled_from(["unknown", "not_started"]),
    st.sampled_from(["unknown", "not_started"]).map(Sub),
    st.sampled_from([None, "bogus", 1]),
)
reason_fields: Final = {
    "status": st.one_of(
        st.sampled_from(["error", "cancelled"]),
        st.sampled_from(["error", "cancelled"]).map(Sub),
        st.sampled_from([None, "complete", "success", 3]),
    ),
    "code": codes,
    "sideEffectState": side_effect_states,
    "side_effect_state": side_effect_states,
    "message": messages,
}
hooked_reasons = st.one_of(
    caller_objects({}, reason_fields, hooked=True),
    st.builds(
        lambda message: Obj("dict", (("message", message),)),
        st.builds(Text, text=st.text(max_size=8), hook=hooks, exception=st.booleans()),
    ),
)
reasons = st.one_of(
    caller_objects({}, reason_fields),
    st.just(NOT_PASSED),
    st.just(None),
    st.sampled_from(["cancelled", 5, ["x"], True]),
)
call_entries = st.one_of(
    caller_objects({"id": st.one_of(valid_ids, valid_ids, valid_ids.map(Sub), bad_ids), "name": names}, {}),
    caller_objects({}, {"id": valid_ids, "name": names}),
    st.sampled_from([None, 5, "a", ["a", "t"]]),
)
plain_ids = st.sampled_from(["a", "b", "c", "a", "b", "é", "😀"])


def _plain_calls(ids: list[str]) -> Calls:
    return Calls("list", tuple(Obj("dict", (("id", call), ("name", "t"))) for call in ids))


plain_calls = st.lists(plain_ids, unique=True, max_size=3).map(_plain_calls)
some_calls = st.lists(plain_ids, unique=True, min_size=1, max_size=3).map(_plain_calls)
hooked_calls = st.builds(
    lambda before, hooked, after: Calls("list", (*before.entries, hooked, *after.entries)),
    plain_calls.filter(lambda calls: len(calls.entries) <= 2),
    caller_objects({"id": st.sampled_from(["h", "i"]), "name": names}, {}, hooked=True),
    plain_calls.filter(lambda calls: len(calls.entries) <= 1),
)
calls_arguments = st.one_of(
    plain_calls,
    plain_calls,
    plain_calls,
    plain_calls,
    st.builds(
        Calls, container=st.sampled_from(["list", "tuple"]), entries=st.lists(call_entries, max_size=4).map(tuple)
    ),
    st.builds(Calls, container=st.just("junk"), entries=st.sampled_from([(None,), ("ab",), ({"id": "a"},), (5,)])),
)
generations = st.one_of(st.sampled_from([1, 2, 3, 0, -1, 2**53, True, "1", 1.0, None]), st.just(Sub("1")))
CURRENT: Final = Ref("current")
handle_refs = st.one_of(
    *[st.just(CURRENT)] * 6,
    st.builds(Ref, kind=st.just("history"), index=st.integers(0, 7)),
    st.builds(Ref, kind=st.just("forged"), value=generations),
    st.just(Ref("other")),
    st.builds(Ref, kind=st.just("lookalike"), value=caller_objects({"generation": generations}, {})),
    st.builds(Ref, kind=st.just("lookalike"), value=caller_objects({"generation": generations}, {}, hooked=True)),
    st.builds(Ref, kind=st.just("junk"), value=st.sampled_from([None, 5, "h", {}])),
)
snapshot_refs = st.one_of(
    st.builds(SnapRef, kind=st.just("history"), index=st.integers(0, 15)),
    st.builds(SnapRef, kind=st.just("history"), index=st.integers(0, 15)),
    st.builds(SnapRef, kind=st.sampled_from(["replace", "copy", "deepcopy"]), index=st.integers(0, 15)),
    st.sampled_from(
        [
            SnapRef(kind)
            for kind in ("default", "none", "other_closed", "other_open", "rejection", "dict", "trap", "string")
        ]
    ),
)
limit_options = st.fixed_dictionaries(
    {
        "max_calls": st.sampled_from([3, 4, 5, None, 1, 2]),
        "max_diagnostics": st.one_of(st.integers(1, 6), st.none()),
        "max_result_bytes": st.one_of(st.integers(1, 48), st.none()),
        "max_message_bytes": st.one_of(st.integers(1, 40), st.none()),
        "max_id_bytes": st.sampled_from([4, 4, 6, 512, 512, 1, 2, 3]),
        "max_name_bytes": st.one_of(st.integers(1, 8), st.none()),
        "max_code_bytes": st.one_of(st.integers(1, 12), st.none()),
        "text_only_tool_results": st.sampled_from([None, False, True]),  # D26: no effect on results without parts
    }
)
invalid_options = st.dictionaries(
    st.sampled_from(
        [
            "max_calls",
            "max_diagnostics",
            "max_result_bytes",
            "max_message_bytes",
            "max_id_bytes",
            "max_name_bytes",
            "max_code_bytes",
            "text_only_tool_results",
        ]
    ),
    st.sampled_from([0, -1, 2**53, 2**53 - 1, True, 1.0, "3", 3]),
    min_size=1,
    max_size=3,
)


# =========================================================================== the machine


FAULTED_OPERATIONS: Final = (
    "begin",
    "turn_begin",
    "stale_turn_begin",
    "succeed",
    "fail",
    "stale_settle",
    "close",
    "seal",
    "snapshot",
    "export",
)
FAULT_KINDS: Final[dict[str, Callable[[], BaseException]]] = {
    "injected": lambda: InjectedFault("injected"),
    "RecursionError": lambda: RecursionError("maximum recursion depth exceeded"),
    "MemoryError": MemoryError,
    "KeyboardInterrupt": KeyboardInterrupt,
}


def _faulted_invoke(op: str, side: Side) -> Any:
    """One operation with plain arguments (no caller code), the same on both sides."""
    target = side.target
    pending = [call.id for call in target.snapshot().calls if call.state == "pending"] if side.current else []
    call_id = pending[0] if pending else "a"
    if op == "begin":
        return target.begin([{"id": "f", "name": "t"}, {"id": "g", "name": "t"}])
    if op in ("turn_begin", "stale_turn_begin"):  # D20: a current token commits, a stale one only rejects
        generation = target.turn_token().generation
        token = side.make_turn(generation if op == "turn_begin" else generation + 1)
        return target.begin([{"id": "f", "name": "t"}], turn=token)
    if op == "succeed":
        return target.succeed(side.current, call_id, {"faulted": True})
    if op == "fail":
        return target.fail(side.current, call_id, "faulted", "F")
    if op == "stale_settle":
        return target.succeed(side.handles[0] if side.handles else None, call_id, "late")
    if op == "close":
        return target.close(side.current, {"status": "error", "code": "F"})
    if op == "seal":
        return target.seal(side.current)
    if op == "snapshot":
        return target.snapshot()
    return target.to_openai_chat_completions()


def _result_of(run: Any) -> Any:
    if run.error is not None:
        raise run.error
    return run.result


class ClosureMachine(RuleBasedStateMachine):
    """The implementation and the model, driven side by side (see the module docstring)."""

    #: builds the implementation under test; the planted-bug test substitutes a broken table
    impl_factory: ClassVar[Callable[..., Any]] = staticmethod(ToolCallClosure)

    handles = Bundle("handles")
    snapshots = Bundle("snapshots")
    turns = Bundle("turns")

    def __init__(self) -> None:
        super().__init__()
        self.handle_history: list[HandlePair] = []
        self.snapshot_history: list[SnapPair] = []
        self.impl_produced: dict[int, Any] = {}  # every implementation snapshot returned to us, by identity
        # I3: (snapshot, deep copy, canonical JSON) of every snapshot the implementation returned
        self.returned: list[tuple[Snapshot, Snapshot, str]] = []
        self.first_terminal: dict[tuple[int, str], str] = {}  # I1: (generation, call id) -> settlement JSON

    # ------------------------------------------------------------------ set-up

    @initialize(
        target=handles,
        limits=limit_options,
        invalid=st.one_of(st.none(), invalid_options),
        first=st.one_of(st.none(), some_calls),
    )
    def setup(self, limits: dict[str, Any], invalid: dict[str, Any] | None, first: Calls | None) -> Any:
        """Construct both sides with small random limits (first comparing a refused construction).

        The ``handles`` bundle starts with another instance's handle (never current here); ``first``
        optionally begins a generation at once, so that examples spend their steps on a live run.
        """
        factory = type(self).impl_factory
        if invalid is not None:
            impl_try = capture(lambda: factory(**invalid).limits.__class__.__name__)
            model_try = capture(lambda: spec_model.Model(**invalid).limits.__class__.__name__)
            assert impl_try.raised == model_try.raised, f"options {invalid}: {impl_try.text} / {model_try.text}"
            if impl_try.raised:
                assert impl_try.text == model_try.text, f"options {invalid}: {impl_try.text} != {model_try.text}"
        self.impl = Side(
            "impl",
            factory(**limits),
            make_handle=lambda generation: BatchHandle(generation=generation),
            rejection=Rejection("stale_generation", None, None, None),
            make_turn=TurnToken,
        )
        self.model = Side(
            "model",
            spec_model.Model(**limits),
            make_handle=spec_model.Handle,
            rejection=spec_model.Rejection("stale_generation", None, None, None),
            make_turn=spec_model.TurnToken,
        )
        self.max_diagnostics: int = self.model.target.limits["max_diagnostics"]
        for side, other in ((self.impl, factory(**limits)), (self.model, spec_model.Model(**limits))):
            begun = other.begin([{"id": "a", "name": "t"}])
            side.other_handle = begun.handle
            side.other_open = other.snapshot()
            side.other_closed = other.close(begun.handle)
        other = HandlePair(self.impl.other_handle, self.model.other_handle, "of another instance")
        if first is None:
            return multiple(other)
        return multiple(other, *self._begin(first).values)

    @property
    def sides(self) -> tuple[Side, Side]:
        return self.impl, self.model

    # ------------------------------------------------------------------ the core of every step

    def _step(self, op: str, invoke: Callable[[Side], Any], *, handle_ref: Any = None, call_id: Any = "a") -> Outcome:
        """Run one operation on both sides and compare everything observable (see the module docstring)."""
        impl, model = self.impl, self.model
        before = impl.state()
        stale = False
        if handle_ref is not None:
            stale = resolve_handle(handle_ref, impl) is not impl.current or impl.current is None
        announced = [call["id"] for call in json.loads(before[1])["calls"]] if before[1] is not None else []
        pending = (
            [call["id"] for call in json.loads(before[1])["calls"] if call["state"] == "pending"] if before[1] else []
        )
        for side in self.sides:
            side.start_step(announced, pending)
        built_id = build(call_id, impl, "callId")
        plain_id = str.__str__(built_id) if isinstance(built_id, str) else "a"
        for side in self.sides:
            side.outer_call_id = plain_id
        out_impl = capture(lambda: invoke(impl))
        out_model = capture(lambda: invoke(model))
        assert out_impl.text == out_model.text, f"{op}: implementation {out_impl.text} != model {out_model.text}"
        assert impl.log == model.log, f"{op}: caller-code trace differs:\n  impl:  {impl.log}\n  model: {model.log}"
        impl_nested = [(record.op, record.text) for record in impl.nested]
        model_nested = [(record.op, record.text) for record in model.nested]
        assert impl_nested == model_nested, (
            f"{op}: nested results differ:\n  impl:  {impl_nested}\n  model: {model_nested}"
        )
        for record_impl, record_model in zip(impl.nested, model.nested, strict=True):
            self._collect(record_impl.value, record_model.value, f"nested {record_impl.op} in {op}")
        if not out_impl.raised:
            if isinstance(out_impl.value, BeginResult):
                impl.note_begin(out_impl.value)
                model.note_begin(out_model.value)
            self._collect(out_impl.value, out_model.value, op)
        # I4 / I2 on this step: the baseline is the state the last nested operation left
        baseline = impl.after_nested if impl.nested else before
        assert baseline is not None
        after = impl.state()
        if out_impl.raised:
            assert after == baseline, f"I4: {op} raised {out_impl.text} but changed the state"
        elif isinstance(out_impl.value, Rejection):
            self._check_rejection_changes_only_diagnostics(op, out_impl.value, baseline, after)
        if stale and not out_impl.raised:
            assert isinstance(out_impl.value, Rejection), f"I2: {op} with a stale handle returned {out_impl.text}"
            assert out_impl.value.reason == "stale_generation", f"I2: {op} with a stale handle: {out_impl.text}"
        return out_impl

    def _check_rejection_changes_only_diagnostics(
        self,
        op: str,
        rejection: Rejection,
        baseline: tuple[int | None, str | None],
        after: tuple[int | None, str | None],
    ) -> None:
        """I2 (generalised): a rejection changes nothing but, while there is room, one appended diagnostic."""
        assert after[0] == baseline[0], f"I2: {op} rejected but moved the generation"
        diagnostics_before, rest_before = _diagnostics_and_rest(baseline[1])
        diagnostics_after, rest_after = _diagnostics_and_rest(after[1])
        assert rest_after == rest_before, f"I2: {op} rejected but changed the calls or the run"
        if rest_before is None:  # before the first begin the diagnostic is discarded
            return
        expected = list(diagnostics_before)
        if len(expected) < self.max_diagnostics:
            diagnostic = json.loads(to_json(rejection))
            del diagnostic["accepted"]
            expected.append(diagnostic)
        assert diagnostics_after == expected, f"I2/§9: {op} rejected: diagnostics {diagnostics_after} != {expected}"

    def _collect(self, impl_value: Any, model_value: Any, label: str) -> None:
        """Pair up the handles and snapshots a step returned; record them for later steps and invariants."""
        if isinstance(impl_value, BeginResult):
            self.handle_history.append(HandlePair(impl_value.handle, model_value.handle, f"g{impl_value.generation}"))
            if impl_value.superseded is not None:
                label = f"superseded g{impl_value.generation - 1}"
                self._snapshot_pair(impl_value.superseded, model_value.superseded, label)
        elif isinstance(impl_value, Snapshot):
            self._snapshot_pair(impl_value, model_value, f"{label} g{impl_value.generation}")

    def _snapshot_pair(self, impl_snapshot: Snapshot, model_snapshot: Any, label: str) -> SnapPair:
        pair = SnapPair(impl_snapshot, model_snapshot, label)
        self.snapshot_history.append(pair)
        self.impl_produced[id(impl_snapshot)] = impl_snapshot
        self.returned.append((impl_snapshot, copy.deepcopy(impl_snapshot), to_json(impl_snapshot)))
        self._check_snapshot(json.loads(to_json(impl_snapshot)), label)
        return pair

    # ------------------------------------------------------------------ rules: begin

    def _begin(self, calls: Calls) -> Any:
        """``begin`` on both sides; the new handle pairs (nested begins' too) go to the ``handles`` bundle."""
        start = len(self.handle_history)
        self._step("begin", lambda side: side.target.begin(build(calls, side, "calls")))
        return multiple(*self.handle_history[start:])

    @rule(target=handles, calls=calls_arguments)
    def begin(self, calls: Calls) -> Any:
        return self._begin(calls)

    @precondition(lambda self: self.model.target.run_state != "open")
    @rule(target=handles, calls=some_calls)
    def begin_next(self, calls: Calls) -> Any:
        """A valid begin when no generation is open (the general rule fails often, by design)."""
        return self._begin(calls)

    # ------------------------------------------------------------------ rules: the settle family

    def _settle_family(self, method: str, handle: Any, call_id: Any, arguments: dict[str, Any]) -> None:
        """``method(handle, call_id, **arguments)`` on both sides; NOT_PASSED arguments are left out."""

        def invoke(side: Side) -> Any:
            built = {name: build(value, side, name) for name, value in arguments.items() if value is not NOT_PASSED}
            target = getattr(side.target, method)
            return target(resolve_handle(handle, side), build(call_id, side, "callId"), **built)

        self._step(method, invoke, handle_ref=handle, call_id=call_id)

    @rule(handle=st.one_of(handles, handle_refs), call_id=call_ids, outcome=outcomes)
    def settle(self, handle: Any, call_id: Any, outcome: Any) -> None:
        self._settle_family("settle", handle, call_id, {"outcome": outcome})

    @rule(handle=st.one_of(handles, handle_refs), call_id=call_ids, content=st.one_of(contents, st.just(NOT_PASSED)))
    def succeed(self, handle: Any, call_id: Any, content: Any) -> None:
        self._settle_family("succeed", handle, call_id, {"content": content})

    @rule(
        handle=st.one_of(handles, handle_refs),
        call_id=call_ids,
        error=st.one_of(messages, st.just(NOT_PASSED)),
        code=st.one_of(codes, st.just(NOT_PASSED)),
    )
    def fail(self, handle: Any, call_id: Any, error: Any, code: Any) -> None:
        self._settle_family("fail", handle, call_id, {"error": error, "code": code})

    @rule(
        handle=st.one_of(handles, handle_refs),
        call_id=call_ids,
        message=st.one_of(messages, st.just(NOT_PASSED)),
        code=st.one_of(codes, st.just(NOT_PASSED)),
    )
    def cancel(self, handle: Any, call_id: Any, message: Any, code: Any) -> None:
        self._settle_family("cancel", handle, call_id, {"message": message, "code": code})

    # ------------------------------------------------------------------ rules: focused on caller code
    #
    # The general rules reach the rechecks only rarely (a current handle, a pending call and a hook
    # that fires in the normalize phase must coincide), so these rules aim there directly.

    def _is_open(self) -> bool:
        return bool(self.model.target.run_state == "open") if hasattr(self, "model") else False

    def _has_pending(self) -> bool:
        return self._is_open() and bool(self.model.target.call_ids(pending_only=True))

    @precondition(lambda self: self._has_pending())
    @rule(call_id=picks, outcome=hooked_outcomes)
    def settle_with_caller_code(self, call_id: Pick, outcome: Obj) -> None:
        self._settle_family("settle", CURRENT, call_id, {"outcome": outcome})

    @precondition(lambda self: self._has_pending())
    @rule(
        call_id=picks,
        form=st.sampled_from(["succeed", "fail", "cancel"]),
        text=st.text(max_size=6),
        hook=hooks,
        exception=st.booleans(),
        code=st.one_of(st.just(NOT_PASSED), codes),
    )
    def form_with_caller_code(
        self, call_id: Pick, form: str, text: str, hook: Hook, exception: bool, code: Any
    ) -> None:
        if form == "succeed":
            self._settle_family(form, CURRENT, call_id, {"content": Json(text, hook)})
        else:
            name = "error" if form == "fail" else "message"
            self._settle_family(form, CURRENT, call_id, {name: Text(text, hook, exception), "code": code})

    @precondition(lambda self: self._is_open())
    @rule(target=snapshots, reason=hooked_reasons)
    def close_with_caller_code(self, reason: Obj) -> Any:
        return self._close(CURRENT, reason)

    @rule(
        target=snapshots,
        method=st.sampled_from(["settle", "succeed", "fail", "cancel", "close", "seal"]),
        call_id=picks,
        handle=caller_objects({"generation": generations}, {}, hooked=True).map(lambda obj: Ref("lookalike", 0, obj)),
    )
    def lookalike_with_caller_code(self, method: str, call_id: Pick, handle: Ref) -> Any:
        """A look-alike handle whose ``generation`` read (prepare phase) runs a nested operation."""
        if method == "close":
            return self._close(handle, NOT_PASSED)
        if method == "seal":
            return self._seal(handle)
        outcome = {"status": "success", "content": "late"}
        self._settle_family(method, handle, call_id, {"outcome": outcome} if method == "settle" else {})
        return multiple()

    @precondition(lambda self: self._has_pending())
    @rule(
        target=snapshots,
        method=st.sampled_from(["settle", "succeed", "fail", "cancel", "close", "begin"]),
        call_id=picks,
        status=st.sampled_from(SETTLED),
        nested=st.one_of(
            nested_closes.map(lambda op: dataclasses.replace(op, handle="current")),
            nested_begins,
            st.builds(
                Nested, op=st.sampled_from(["settle", "succeed", "fail", "cancel"]), status=st.sampled_from(SETTLED)
            ),
            st.just(Nested("seal")),
        ),
    )
    def raced_by_caller_code(self, method: str, call_id: Pick, status: str, nested: Nested) -> Any:
        """Caller code races the operation: a nested close, begin, seal or settlement of the same call
        (current handle), run in the *normalize* phase (in *prepare* for begin), must win at the recheck
        (SET-9, RE-1..3, RE-9, RE-10)."""
        hook = Hook(nested)
        if method == "begin":
            entry = Obj("mapping", (("id", "h"), ("name", "t")), (("name", 1, hook),))
            self._begin(Calls("list", (entry,)))  # its handles stay reachable as CURRENT / HISTORY
            return multiple()
        if method == "close":
            return self._close(CURRENT, Obj("mapping", (("status", "error"),), (("status", 1, hook),)))
        if method == "settle":
            fields = (("status", status), ("content", "late"))
            self._settle_family(method, CURRENT, call_id, {"outcome": Obj("object", fields, (("status", 2, hook),))})
        elif method == "succeed":
            self._settle_family(method, CURRENT, call_id, {"content": Json("late", hook)})
        else:
            name = "error" if method == "fail" else "message"
            self._settle_family(method, CURRENT, call_id, {name: Text("late", hook)})
        return multiple()

    @rule(target=handles, calls=hooked_calls)
    def begin_with_caller_code(self, calls: Calls) -> Any:
        return self._begin(calls)

    # ------------------------------------------------------------------ rules: turn tokens (deviation D20)

    @rule(target=turns)
    def take_turn_token(self) -> Any:
        """``turn_token`` on both sides: the counter (0 before the first begin); it changes nothing."""
        taken: dict[str, Any] = {}

        def invoke(side: Side) -> Any:
            taken[side.name] = side.target.turn_token()
            return taken[side.name]

        before = self.impl.state()
        self._step("turn_token", invoke)
        assert self.impl.state() == before, "turn_token changed the state"
        assert taken["impl"].generation == (before[0] or 0), "the token is not the generation counter"
        return TurnPair(taken["impl"], taken["model"])

    def _begin_with_turn(self, calls: Calls, tokens: Callable[[Side], Any]) -> Any:
        """``begin(calls, turn=…)`` on both sides, and fencing of turns: it began iff its token was the counter's
        value at the commit (after any nested begin); a stale_turn rejection changed nothing but one diagnostic
        (the generalised I2 check of every rejection, in ``_step``)."""
        start = len(self.handle_history)
        given: dict[str, Any] = {}

        def invoke(side: Side) -> Any:
            given[side.name] = tokens(side)
            return side.target.begin(build(calls, side, "calls"), turn=given[side.name])

        before = self.impl.state()
        out = self._step("begin with a turn", invoke)
        at_commit = (self.impl.after_nested if self.impl.nested else before)[0] or 0
        token = given["impl"]
        if isinstance(out.value, BeginResult):
            assert token.generation == at_commit, f"I2: a begin with a stale token {token} began"
            assert out.value.generation == token.generation + 1
        elif isinstance(out.value, Rejection):
            assert out.value.reason == "stale_turn", f"begin with a turn rejected as {out.value.reason}"
            assert token.generation != at_commit, f"a begin with a current token {token} was rejected"
        return multiple(*self.handle_history[start:])

    @rule(target=handles, calls=calls_arguments, turn=turns)
    def begin_with_turn(self, calls: Calls, turn: TurnPair) -> Any:
        return self._begin_with_turn(calls, lambda side: turn.impl if side is self.impl else turn.model)

    @rule(target=handles, calls=st.one_of(some_calls, hooked_calls))
    def begin_with_a_fresh_turn(self, calls: Calls) -> Any:
        """A token taken just before: it commits, unless the calls' caller code begins first (stale_turn)."""
        return self._begin_with_turn(calls, lambda side: side.target.turn_token())

    @rule(target=handles, calls=st.one_of(some_calls, hooked_calls), behind=st.integers(1, 3))
    def begin_with_a_stale_turn(self, calls: Calls, behind: int) -> Any:
        """A token of another generation than the counter's (taken before a later begin, or a number this
        instance has not reached): stale_turn, and nothing but one diagnostic changes."""

        def stale(side: Side) -> Any:
            generation = side.target.turn_token().generation
            return side.make_turn(generation - behind if generation >= behind else generation + behind)

        return self._begin_with_turn(calls, stale)

    @rule(
        calls=some_calls,
        turn=st.sampled_from(["dict", "string", "negative", "bool", "float", "huge", "subclass"]),
    )
    def begin_with_a_value_that_is_not_a_token(self, calls: Calls, turn: str) -> None:
        """Anything but a token whose generation is a safe integer >= 0 raises turn_invalid and changes nothing
        (an int subclass counts with its plain value, D5)."""
        values: dict[str, Callable[[Side], Any]] = {
            "dict": lambda side: {"generation": 0},
            "string": lambda side: "0",
            "negative": lambda side: side.make_turn(-1),
            "bool": lambda side: side.make_turn(True),
            "float": lambda side: side.make_turn(1.0),
            "huge": lambda side: side.make_turn(2**53),
            "subclass": lambda side: side.make_turn(_Generation(side.target.turn_token().generation)),
        }
        self._step(
            "begin with a bad turn", lambda side: side.target.begin(build(calls, side, "c"), turn=values[turn](side))
        )

    # ------------------------------------------------------------------ rules: close, seal, snapshot

    def _close(self, handle: Any, reason: Any) -> Any:
        """``close`` on both sides; the snapshots it returned (nested ones too) go to the ``snapshots`` bundle."""
        start = len(self.snapshot_history)

        def invoke(side: Side) -> Any:
            if reason is NOT_PASSED:
                return side.target.close(resolve_handle(handle, side))
            return side.target.close(resolve_handle(handle, side), build(reason, side, "reason"))

        self._step("close", invoke, handle_ref=handle)
        return multiple(*self.snapshot_history[start:])

    def _seal(self, handle: Any) -> Any:
        start = len(self.snapshot_history)
        self._step("seal", lambda side: side.target.seal(resolve_handle(handle, side)), handle_ref=handle)
        return multiple(*self.snapshot_history[start:])

    @rule(target=snapshots, handle=st.one_of(handles, handle_refs), reason=reasons)
    def close(self, handle: Any, reason: Any) -> Any:
        return self._close(handle, reason)

    @rule(target=snapshots, handle=st.one_of(handles, handle_refs))
    def seal(self, handle: Any) -> Any:
        return self._seal(handle)

    @rule(target=snapshots)
    def snapshot(self) -> Any:
        start = len(self.snapshot_history)
        before = self.impl.state()
        self._step("snapshot", lambda side: side.target.snapshot())
        assert self.impl.state() == before, "snapshot() changed the state"
        return multiple(*self.snapshot_history[start:])

    # ------------------------------------------------------------------ rules: exports

    def _resolve_snapshot(self, ref: Any, side: Side) -> Any:
        """This side's snapshot argument (NOT_PASSED: call without one)."""
        if isinstance(ref, SnapPair):
            return ref.impl if side.name == "impl" else ref.model
        kind = ref.kind
        if kind in ("history", "replace", "copy", "deepcopy"):
            if not self.snapshot_history:
                return "no snapshot yet"
            pair = self.snapshot_history[ref.index % len(self.snapshot_history)]
            original = pair.impl if side.name == "impl" else pair.model
            clone: dict[str, Callable[[Any], Any]] = {
                "history": lambda value: value,
                "replace": dataclasses.replace,
                "copy": copy.copy,
                "deepcopy": copy.deepcopy,
            }
            return clone[kind](original)
        return {
            "default": NOT_PASSED,
            "none": None,
            "other_closed": side.other_closed,
            "other_open": side.other_open,
            "rejection": side.rejection,
            "dict": {"generation": 1, "closed": True, "closeReason": None, "calls": [], "diagnostics": []},
            "trap": TrapSnapshot(side),
            "string": "snapshot",
        }[kind]

    def _export(self, method: str, ref: Any) -> None:
        arguments = {side.name: self._resolve_snapshot(ref, side) for side in self.sides}

        def invoke(side: Side) -> Any:
            argument = arguments[side.name]
            export = getattr(side.target, method)
            return export() if argument is NOT_PASSED else export(argument)

        before = self.impl.state()
        outcome = self._step(method, invoke)
        assert self.impl.state() == before, f"I6: {method} changed the state"
        assert not self.impl.log, f"I6: {method} read its argument: {self.impl.log}"
        argument = arguments["impl"]
        if outcome.raised:
            return
        # I6: only closed snapshots this instance produced are exported
        if argument is NOT_PASSED or argument is None:
            assert before[1] is not None, f"I6: {method}() before the first begin"
            assert json.loads(before[1])["closed"], f"I6: {method}() of an open run"
        else:
            produced = self.impl_produced.get(id(argument))
            assert produced is argument, f"I6: {method} accepted a foreign snapshot"
            assert produced is not None
            assert produced.closed, f"I6: {method} accepted an open snapshot"
        # ADP-4/ADP-6: a new mutable payload, detached from the snapshot and from later exports
        payload = outcome.value
        assert isinstance(payload, list)
        assert all(type(item) is dict for item in payload)
        first = to_json(payload)
        for item in payload:
            item.clear()
        payload.append({"mutated": True})
        if argument is not NOT_PASSED and argument is not None:
            assert to_json(getattr(self.impl.target, method)(argument)) == first, f"ADP-6: {method} is not detached"

    @rule(method=st.sampled_from(EXPORTS), snapshot=snapshot_refs)
    def export(self, method: str, snapshot: SnapRef) -> None:
        self._export(method, snapshot)

    @rule(method=st.sampled_from(EXPORTS), snapshot=snapshots)
    def export_returned(self, method: str, snapshot: SnapPair) -> None:
        self._export(method, snapshot)

    @rule(snapshot=snapshots, attribute=st.sampled_from(["generation", "closed", "calls", "diagnostics", "anything"]))
    def try_to_mutate(self, snapshot: SnapPair, attribute: str) -> None:
        """SNAP-3: every write to a returned snapshot (or to anything inside it) raises FrozenInstanceError."""
        target = snapshot.impl
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(target, attribute, None)
        for call in target.calls:
            with pytest.raises(dataclasses.FrozenInstanceError):
                call.state = "pending"
            if call.settlement is not None:
                with pytest.raises(dataclasses.FrozenInstanceError):
                    call.settlement.status = "success"
        for diagnostic in target.diagnostics:
            with pytest.raises(dataclasses.FrozenInstanceError):
                diagnostic.reason = "run_closed"

    # ------------------------------------------------------------------ rules: faults (I9)

    # The fault injector steps through Python frames: on the compiled build (TCC_MACHINE=compiled) it has none to
    # enter, so I9 is checked on the pure machine, which tests/test_compiled.py proves the build equal to.
    @precondition(lambda self: self.impl.target._machine.origin != "compiled")
    @rule(
        op=st.sampled_from(FAULTED_OPERATIONS),
        point=st.integers(1, 2500),
        fault=st.sampled_from(sorted(FAULT_KINDS)),
    )
    def faulted_operation(self, op: str, point: int, fault: str) -> None:
        """I9: an exception at the ``point``-th opcode the operation runs under the lock (RecursionError,
        MemoryError, KeyboardInterrupt, an injected asynchronous exception) leaves the implementation exactly
        as before (the install had not run: the model does not take the step) or exactly where the model
        takes it (it had).  A point past the operation's last one runs it unfaulted, compared as any step."""
        impl, model = self.impl, self.model
        before = impl.state()
        run = run_with_fault(impl.target, lambda: _faulted_invoke(op, impl), point, FAULT_KINDS[fault])
        if run.fired and run.error is not None and not run.installed:
            assert impl.state() == before, f"I9: {op} faulted at point {point} ({fault}) changed the state"
            assert not impl.target._lock._is_owned(), "I9: the lock stayed held"
            return
        out_model = capture(lambda: _faulted_invoke(op, model))
        if run.fired and run.error is not None:  # faulted after the install: the step was taken whole
            assert impl.state() == model.state(), f"I9: {op} faulted after its install ({fault}): state differs"
            if op in ("begin", "turn_begin") and not out_model.raised:
                impl.note_begin(types.SimpleNamespace(handle=impl.target._run.handle))
                model.note_begin(out_model.value)
            return
        out_impl = capture(lambda: _result_of(run))
        assert out_impl.text == out_model.text, f"{op}: implementation {out_impl.text} != model {out_model.text}"
        if isinstance(out_impl.value, BeginResult):
            impl.note_begin(out_impl.value)
            model.note_begin(out_model.value)

    # ------------------------------------------------------------------ invariants

    def _check_snapshot(self, data: dict[str, Any], label: str) -> None:
        """I1, I5 and I8 on one snapshot (as parsed JSON)."""
        limits = self.model.target.limits
        generation = data["generation"]
        assert data["closed"] == (data["closeReason"] is not None), f"{label}: closed disagrees with closeReason"
        assert len(data["calls"]) <= limits["max_calls"], f"I8: {label} has too many calls"
        assert len(data["diagnostics"]) <= limits["max_diagnostics"], f"I8: {label} has too many diagnostics"
        for call in data["calls"]:
            key = (generation, call["id"])
            assert utf8_length(call["id"]) <= limits["max_id_bytes"], f"I8: {label} id {call['id']!r}"
            assert utf8_length(call["name"]) <= limits["max_name_bytes"], f"I8: {label} name {call['name']!r}"
            if call["state"] == "pending":
                assert call["settlement"] is None
                assert not data["closed"], f"I5: {label} is closed with a pending call {call['id']!r}"
                assert key not in self.first_terminal, f"I1: call {key} was terminal and is pending again"
                continue
            settlement = call["settlement"]
            assert settlement["status"] == call["state"]
            text = json.dumps(settlement, sort_keys=False)
            recorded = self.first_terminal.setdefault(key, text)
            assert recorded == text, f"I1: call {key} changed its terminal settlement: {recorded} -> {text}"
            if settlement["status"] == "success":
                assert utf8_length(settlement["content"]) <= limits["max_result_bytes"], f"I8: {label} content"
            else:
                assert utf8_length(settlement["message"]) <= limits["max_message_bytes"], f"I8: {label} message"
                code = settlement["code"]
                assert code in DEFAULT_CODES or utf8_length(code) <= limits["max_code_bytes"], f"I8: {label} code"
        reason = data["closeReason"]
        if reason is not None and reason["status"] != "complete":
            assert utf8_length(reason["message"]) <= limits["max_message_bytes"], f"I8: {label} close message"

    @invariant()
    def implementation_equals_model(self) -> None:
        if not hasattr(self, "impl"):
            return
        impl_state, model_state = self.impl.state(), self.model.state()
        assert impl_state == model_state, f"state differs:\n  impl:  {impl_state}\n  model: {model_state}"

    @invariant()
    def current_snapshot_invariants(self) -> None:
        """I1, I5, I8 on the current generation, and exact ``str`` values (strings are stored verbatim, D5)."""
        if not hasattr(self, "impl"):
            return
        snapshot = self.impl.target.snapshot()
        if snapshot is None:
            return
        self._check_snapshot(json.loads(to_json(snapshot)), "current snapshot")
        for call in snapshot.calls:
            assert type(call.id) is str
            assert type(call.name) is str
            settlement = call.settlement
            if settlement is not None:
                for text in (settlement.content, settlement.code, settlement.message):
                    assert text is None or type(text) is str
        for diagnostic in snapshot.diagnostics:
            assert diagnostic.call_id is None or type(diagnostic.call_id) is str

    @invariant()
    def generation_counts_successful_begins(self) -> None:
        """I7: the active generation is the number of successful begins (None before the first)."""
        if not hasattr(self, "impl"):
            return
        begun = self.impl.begun
        assert self.impl.target.active_generation == (begun or None), "I7"
        assert self.impl.current is None or self.impl.current.generation == begun

    @invariant()
    def returned_snapshots_never_change(self) -> None:
        """I3: every snapshot ever returned still equals its deep copy (the JSON text is checked at teardown)."""
        for snapshot, deep_copy, _ in self.returned:
            assert snapshot == deep_copy, f"I3: snapshot of generation {snapshot.generation} changed"

    def teardown(self) -> None:
        for snapshot, _, text in self.returned:
            assert to_json(snapshot) == text, f"I3: snapshot of generation {snapshot.generation} changed"


def machine_settings() -> settings:
    """The loaded profile (conftest: ci / dev / long), with the health checks this machine trips by design."""
    return settings(
        settings.default,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
    )


def test_closure_machine() -> None:
    """The implementation behaves as the spec model says, and every invariant holds, after every step."""
    run_state_machine_as_test(ClosureMachine, settings=machine_settings())


# =========================================================================== planted bugs: the machine can fail


def _delete_stale_settle_rows(raw: dict[str, Any]) -> None:
    raw["transitions"] = [
        r for r in raw["transitions"] if r["id"] not in {"settle.admit.stale", "settle.recheck.stale"}
    ]


def _close_without_synthesis(raw: dict[str, Any]) -> None:
    row(raw, "close.commit.close")["effects"].remove("synthesize_pending")


def _stale_turns_fenced_only_while_open(raw: dict[str, Any]) -> None:
    row(raw, "begin.recheck.stale_turn")["from"] = ["open"]  # D20: after a close, a stale turn would begin


PLANTED: Final[dict[str, Callable[[dict[str, Any]], None]]] = {
    "settle fencing rows deleted": _delete_stale_settle_rows,
    "close does not synthesize pending calls": _close_without_synthesis,
    "stale turns fenced only while a generation is open": _stale_turns_fenced_only_while_open,
}


# The slowest planted bug (about 9 s) is found in the slow tier; the fast tier finds the other two.
SLOW_PLANTED: Final = {"stale turns fenced only while a generation is open"}


@pytest.mark.parametrize(
    "name", [pytest.param(name, marks=pytest.mark.slow) if name in SLOW_PLANTED else name for name in sorted(PLANTED)]
)
def test_planted_bug_is_found(name: str) -> None:
    """The same machine, against a closure driven by a broken copy of the table, must report a failure."""
    table = modified(PLANTED[name])

    class BrokenTableMachine(ClosureMachine):
        impl_factory = staticmethod(lambda **options: closure_for(table, **options))

    bounded = settings(
        max_examples=200,
        stateful_step_count=20,
        derandomize=True,
        database=None,
        deadline=None,
        report_multiple_bugs=False,
        print_blob=False,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.generate],  # finding the failure is the point; shrinking it would dominate the run time
    )
    with pytest.raises(AssertionError):
        run_state_machine_as_test(BrokenTableMachine, settings=bounded)
