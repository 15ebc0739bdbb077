"""The Z3 model of the tool-call-closure machine, read from the transition table.

Theory of operation
-------------------
``spec/machine.json`` says *when* things happen: which rows exist, in which
order, from which run states, under which guard, with which effects, moving to
which state and ending the operation with which result.  This module reads that
file with ``json.load`` (it deliberately does not use the reference's
validator, so that a broken table can be examined and refuted) and compiles it
into Z3 terms.  The only hand-written knowledge is what each *name* means —
the dictionaries ``GUARDS``, ``EFFECTS``, ``RESULTS`` and ``TARGETS`` below,
plus the operations' argument shapes (``OPERATIONS``).  A name the encoding
does not know raises :class:`EncodingError`.

The state (:class:`State`) is unbounded:

* ``rs`` the current run state (a table run state, or ``<unset>``, the value a
  freshly installed generation has until a row's ``to`` moves it);
* ``gen`` the generation counter; ``cur`` the identity of the current handle,
  written as the number of the generation that created it (every handle this
  instance makes is identified by its generation; a look-alike, ``None`` or
  another instance's handle is any identity that is not a generation number
  of this instance — any ``h <= 0`` in a context);
* ``n`` the number of calls; ``cs : Int -> CallState`` and
  ``stl : Int -> Settlement`` the calls of the current generation by index (a
  call id is its index; an unknown id is an index outside ``0..n-1``);
  a settlement is ``unsettled`` or ``settled(status, provenance, token)``,
  where the token stands for the settlement's text (content, code, message),
  which the model does not interpret;
* ``cr`` the close reason (``none``, ``complete`` or ``closed(status, token)``);
* ``nd`` the number of diagnostics;
* ``ns`` the number of snapshots this instance produced, and the registry of
  their immutable records ``snap_*[j]`` for ``j < ns`` (generation, closed
  flag, close reason, number of calls, call states, settlements, number of
  diagnostics).  A snapshot argument is an index: registered iff
  ``0 <= sa < ns``; anything else (a copy, another instance's, ``None``) is
  foreign.

Atomicity.  An operation runs through its phases; consecutive phases with the
same ``locked`` flag form a *segment* (exactly as the interpreter groups them).
A locked segment runs under the instance's lock and runs no caller code, so it
is atomic.  Caller code — and therefore other threads' operations and nested
operations — can only interleave between segments or inside unlocked ones.
The transition relation is therefore the set of *steps* (operation, segment),
each starting from any state with an arbitrary *context*: the operation's
arguments (the handle's identity ``h``, the call index ``c``, the generation
``g0`` at the start of ``begin``, the snapshot argument ``sa``) and the values
earlier segments computed (``nn`` validated calls, ``tdef``/``tg`` whether
``begin`` was given a turn token and its generation, the normalized
settlement, the normalized close reason ...).  Context values are constrained only by what
the effects that certainly ran in earlier segments guarantee (for example, a
normalized close status is ``error`` or ``cancelled``).  Unlocked segments are
steps too; the proof shows that they change nothing, so it does not matter
that they are not atomic.  If every step preserves the invariants, so does
every interleaving of steps of any number of operations and threads.

Caller-value processing (validation, serialization, string conversion,
truncation) is abstracted into *oracles*: each effect that reads caller values
either raises one of the errors the table declares for it (or a caller
exception) or produces a value satisfying its postcondition.  Byte limits,
message texts and serialization are therefore outside the model (the tests
and the bounded model check cover them).

Pointwise quantifier-free encoding.  Properties of arrays are stated at an
arbitrary call index ``k0`` and snapshot index ``j0`` (universally quantified
by being free), never with ``ForAll``.  The existential "some call is pending"
(``has_pending_calls``, and whether a close would hit a missing call
transition) is a fresh Boolean ``hp`` with a witness ``w``:
``hp -> 0 <= w < n and pending(w)``, and the pointwise instance
``0 <= k0 < n and pending(k0) -> hp``.  That over-approximates the truth only
at indices other than ``k0``, which the pointwise goal at ``k0`` does not
depend on, so the argument is sound.  (The conformance check instantiates the
pointwise constraint at every index, which makes ``hp`` exact.)

Each step also reports ``crash`` (the table asks a guard, effect or result a
question it cannot answer — the interpreter would hit an assertion or a
missing key) and ``foreign_read`` (an export step read the contents of a
snapshot argument that is not registered).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Final

import z3

ROOT: Final = Path(__file__).resolve().parents[1]
DEFAULT_TABLE: Final = ROOT / "spec" / "machine.json"

UNSET: Final = "<unset>"
STATUSES: Final = ("success", "error", "cancelled")  # what normalize_outcome can produce
CLOSE_STATUSES: Final = ("error", "cancelled")  # what normalize_close_reason can produce
PROVENANCES: Final = ("reported", "synthetic")
SUPERSEDED_TOKEN: Final = -1  # the token of the built-in superseded close reason
CONTINUE: Final = "continue"
CRASH: Final = "crash"
CALLER_RAISE: Final = "raise:<caller exception>"


class EncodingError(Exception):
    """The table cannot be encoded: a malformed entry, or a name the encoding does not know."""


# --------------------------------------------------------------------------- the table, read raw


@dataclass(frozen=True)
class Result:
    kind: str  # reject | raise | return
    name: str


@dataclass(frozen=True)
class Row:
    id: str
    op: str
    phase: str
    from_states: tuple[str, ...]
    guard: str | None
    effects: tuple[str, ...]
    to: tuple[str, ...]
    to_by: str | None
    result: Result | None


@dataclass(frozen=True)
class CallTransition:
    id: str
    from_state: str
    event: str
    to: str


@dataclass(frozen=True)
class EffectDecl:
    id: str
    caller_code: bool
    run_to: str | None
    call_event: str | None
    errors: tuple[str, ...]


@dataclass(frozen=True)
class Segment:
    """Consecutive phases of one operation with the same ``locked`` flag: one step of the transition relation."""

    op: str
    index: int
    phases: tuple[str, ...]
    locked: bool
    last: bool

    @property
    def label(self) -> str:
        return f"{self.op}/{'+'.join(self.phases)}"


@dataclass(frozen=True)
class Spec:
    """What the encoding reads from the table file."""

    run_states: tuple[str, ...]
    initial_run: str
    closed_runs: frozenset[str]
    call_states: tuple[str, ...]
    initial_call: str
    terminal_calls: frozenset[str]
    call_events: tuple[str, ...]
    call_transitions: tuple[CallTransition, ...]
    call_default_error: str
    locked: Mapping[str, bool]
    operations: Mapping[str, tuple[str, ...]]
    effects: Mapping[str, EffectDecl]
    rows: tuple[Row, ...]
    default_error: str

    def rows_for(self, op: str, phase: str) -> tuple[Row, ...]:
        return tuple(r for r in self.rows if r.op == op and r.phase == phase)

    def segments(self, op: str) -> tuple[Segment, ...]:
        groups: list[list[str]] = []
        for phase in self.operations[op]:
            if groups and self.locked[groups[-1][0]] == self.locked[phase]:
                groups[-1].append(phase)
            else:
                groups.append([phase])
        return tuple(Segment(op, i, tuple(g), self.locked[g[0]], i == len(groups) - 1) for i, g in enumerate(groups))

    def all_segments(self) -> tuple[Segment, ...]:
        return tuple(seg for op in self.operations for seg in self.segments(op))


def _get(obj: Any, key: str, where: str) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise EncodingError(f"{where}: missing field {key!r}")
    return obj[key]


def _ids(items: Any, where: str) -> list[str]:
    if not isinstance(items, list):
        raise EncodingError(f"{where}: must be a list")
    return [str(_get(item, "id", f"{where}[{i}]")) for i, item in enumerate(items)]


def read_table(path: Path) -> Spec:
    """Read the table at ``path`` (plain JSON; no validation beyond what the encoding needs)."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EncodingError(f"cannot read {path}: {exc}") from None
    run_list = _get(raw, "run_states", "table")
    run_states = tuple(_ids(run_list, "run_states"))
    initial_runs = [s["id"] for s in run_list if s.get("initial") is True]
    if len(initial_runs) != 1:
        raise EncodingError("run_states: exactly one state must be initial")
    call_list = _get(raw, "call_states", "table")
    call_states = tuple(_ids(call_list, "call_states"))
    initial_calls = [s["id"] for s in call_list if s.get("initial") is True]
    if len(initial_calls) != 1:
        raise EncodingError("call_states: exactly one state must be initial")
    call_events = tuple(_ids(_get(raw, "call_events", "table"), "call_events"))

    def known(name: Any, names: Iterable[str], where: str, what: str) -> str:
        if name not in set(names):
            raise EncodingError(f"{where}: unknown {what} {name!r}")
        return str(name)

    transitions = tuple(
        CallTransition(
            str(_get(t, "id", "call_transitions")),
            known(_get(t, "from", "call_transitions"), call_states, f"call_transitions.{t.get('id')}", "call state"),
            known(_get(t, "event", "call_transitions"), call_events, f"call_transitions.{t.get('id')}", "call event"),
            known(_get(t, "to", "call_transitions"), call_states, f"call_transitions.{t.get('id')}", "call state"),
        )
        for t in _get(raw, "call_transitions", "table")
    )
    phase_list = _get(raw, "phases", "table")
    locked = {str(p["id"]): bool(_get(p, "locked", f"phases.{p.get('id')}")) for p in phase_list}
    operations = {
        str(o["id"]): tuple(
            known(p, locked, f"operations.{o['id']}", "phase") for p in _get(o, "phases", f"operations.{o['id']}")
        )
        for o in _get(raw, "operations", "table")
    }
    effects = {
        str(e["id"]): EffectDecl(
            str(e["id"]),
            bool(e.get("caller_code", False)),
            e.get("run_to"),
            e.get("call_event"),
            tuple(str(x) for x in e.get("errors", [])),
        )
        for e in _get(raw, "effects", "table")
    }
    rows: list[Row] = []
    for r in _get(raw, "transitions", "table"):
        rid = str(_get(r, "id", "transitions[]"))
        where = f"transitions.{rid}"
        op = known(_get(r, "op", where), operations, where, "operation")
        phase = known(_get(r, "phase", where), operations[op], where, f"phase of operation {op!r}")
        raw_from = _get(r, "from", where)
        from_states = (
            run_states if raw_from == "*" else tuple(known(s, run_states, where, "run state") for s in raw_from)
        )
        guard = r.get("guard")
        raw_to = r.get("to")
        to: tuple[str, ...] = () if raw_to is None else (raw_to,) if isinstance(raw_to, str) else tuple(raw_to)
        for target in to:
            known(target, run_states, where, "target run state")
        if len(to) > 1 and r.get("to_by") is None:
            raise EncodingError(f"{where}: several targets need to_by")
        result: Result | None = None
        if r.get("result") is not None:
            res = r["result"]
            kinds = [k for k in ("reject", "raise", "return") if k in res]
            if len(kinds) != 1:
                raise EncodingError(f"{where}: result must have exactly one of reject, raise, return")
            result = Result(kinds[0], str(res[kinds[0]]))
            if "observed" in res and res["observed"] not in OBSERVED:
                raise EncodingError(f"{where}: the encoding does not know observed kind {res['observed']!r}")
        rows.append(
            Row(
                rid,
                op,
                phase,
                from_states,
                guard,
                tuple(known(e, effects, where, "effect") for e in r.get("effects", [])),
                to,
                r.get("to_by") if len(to) > 1 else None,
                result,
            )
        )
    return Spec(
        run_states=run_states,
        initial_run=initial_runs[0],
        closed_runs=frozenset(s["id"] for s in run_list if s.get("closed") is True),
        call_states=call_states,
        initial_call=initial_calls[0],
        terminal_calls=frozenset(s["id"] for s in call_list if s.get("terminal") is True),
        call_events=call_events,
        call_transitions=transitions,
        call_default_error=str(_get(_get(raw, "call_default", "table"), "raise", "call_default")),
        locked=locked,
        operations=operations,
        effects=effects,
        rows=tuple(rows),
        default_error=str(_get(_get(raw, "default", "table"), "raise", "default")),
    )


# --------------------------------------------------------------------------- state, context, frames


@dataclass(frozen=True)
class State:
    """One state of the model (see the module docstring); every field is a Z3 term."""

    rs: z3.ExprRef
    gen: z3.ArithRef
    cur: z3.ArithRef
    n: z3.ArithRef
    cs: z3.ArrayRef
    stl: z3.ArrayRef
    cr: z3.ExprRef
    nd: z3.ArithRef
    ns: z3.ArithRef
    snap_gen: z3.ArrayRef
    snap_closed: z3.ArrayRef
    snap_cr: z3.ArrayRef
    snap_n: z3.ArrayRef
    snap_cs: z3.ArrayRef
    snap_stl: z3.ArrayRef
    snap_nd: z3.ArrayRef


STATE_FIELDS: Final = tuple(f.name for f in fields(State))
SCALAR_FIELDS: Final = ("rs", "gen", "cur", "n", "cr", "nd", "ns")
SNAPSHOT_FIELDS: Final = ("snap_gen", "snap_closed", "snap_cr", "snap_n", "snap_cs", "snap_stl", "snap_nd")

# The context of a step: the operation's arguments, then the values earlier segments computed.
ARGUMENT_FIELDS: Final = ("h", "c", "g0", "sa_absent")
CARRIED_FIELDS: Final = ("nn", "tdef", "tg", "rgen_def", "stl_def", "st", "tok", "cr_def", "rst", "rtok", "sa", "media")


@dataclass(frozen=True)
class Frame:
    """The machine part-way through a step: state, context, outcome so far, and whether a foreign snapshot was read."""

    s: State
    ctx: Mapping[str, z3.ExprRef]
    out: z3.ExprRef
    foreign: z3.BoolRef


def _ite(cond: z3.BoolRef, a: z3.ExprRef, b: z3.ExprRef) -> z3.ExprRef:
    return a if a.eq(b) else z3.If(cond, a, b)


def ite_state(cond: z3.BoolRef, a: State, b: State) -> State:
    return State(**{f: _ite(cond, getattr(a, f), getattr(b, f)) for f in STATE_FIELDS})


def ite_frame(cond: z3.BoolRef, a: Frame, b: Frame) -> Frame:
    if z3.is_true(cond):
        return a
    if z3.is_false(cond):
        return b
    return Frame(
        ite_state(cond, a.s, b.s),
        {k: _ite(cond, a.ctx[k], b.ctx[k]) for k in a.ctx},
        _ite(cond, a.out, b.out),
        _ite(cond, a.foreign, b.foreign),
    )


@dataclass
class GuardValue:
    """A guard's answer, whether asking it crashes, and whether it read a foreign snapshot."""

    value: z3.BoolRef
    crash: z3.BoolRef = z3.BoolVal(False)  # noqa: RUF009 - an immutable Z3 constant
    foreign: z3.BoolRef = z3.BoolVal(False)  # noqa: RUF009


@dataclass(frozen=True)
class ExistsPending:
    """The witness encoding of "some call of ``array`` (of ``n`` calls) is in the initial call state"."""

    hp: z3.BoolRef
    w: z3.ArithRef
    array: z3.ArrayRef
    n: z3.ArithRef


class Builder:
    """Collects what encoding one step creates: fresh variables, oracle postconditions, witnesses, fired rows."""

    def __init__(self, model: Model, label: str) -> None:
        self.m = model
        self.label = label
        self.count = 0
        self.assumptions: list[z3.BoolRef] = []
        self.oracles: list[tuple[str, str, z3.ExprRef]] = []  # (effect, field, variable)
        self.witnesses: list[ExistsPending] = []
        self.fired: list[tuple[str, z3.BoolRef]] = []

    def fresh(self, name: str, sort: z3.SortRef) -> z3.ExprRef:
        self.count += 1
        return z3.Const(f"{self.label}|{name}#{self.count}", sort)

    def oracle(self, effect: str, field: str, sort: z3.SortRef) -> z3.ExprRef:
        var = self.fresh(f"{effect}.{field}", sort)
        self.oracles.append((effect, field, var))
        return var

    def raise_oracle(self, effect: str, caller_code: bool) -> z3.ExprRef:
        """The outcome of an effect that reads caller values: continue, or one of the errors it may raise."""
        var = self.oracle(effect, "outcome", self.m.Outcome)
        errors = self.m.spec.effects[effect].errors  # the errors the table declares for the effect
        names = [CONTINUE, *[f"raise:{e}" for e in errors], *([CALLER_RAISE] if caller_code else [])]
        self.assumptions.append(z3.Or([var == self.m.outcome(x) for x in names]))
        return var

    def exists_pending(self, array: z3.ArrayRef, n: z3.ArithRef) -> z3.BoolRef:
        hp = self.fresh("hp", z3.BoolSort())
        w = self.fresh("w", z3.IntSort())
        self.assumptions.append(z3.Implies(hp, z3.And(w >= 0, w < n, array[w] == self.m.pending)))
        self.witnesses.append(ExistsPending(hp, w, array, n))
        return hp

    def pointwise(self, k: z3.ArithRef) -> list[z3.BoolRef]:
        """The witnesses' pointwise constraints instantiated at index ``k``."""
        return [z3.Implies(z3.And(k >= 0, k < x.n, x.array[k] == self.m.pending), x.hp) for x in self.witnesses]


@dataclass(frozen=True)
class StepEnc:
    """One encoded step: its input state and context, and the frame it ends in."""

    segment: Segment
    builder: Builder
    pre: State
    ctx_in: Mapping[str, z3.ExprRef]
    post: Frame

    @property
    def fired(self) -> list[tuple[str, z3.BoolRef]]:
        return self.builder.fired


@dataclass(frozen=True)
class InOperation:
    """A step encoded after its operation's earlier segments (see :meth:`Model.encode_in_operation`)."""

    step: StepEnc
    earlier: tuple[StepEnc, ...]
    hyps: list[z3.BoolRef]
    k0: z3.ArithRef
    j0: z3.ArithRef


# --------------------------------------------------------------------------- the meaning of the names

# Operations: which arguments each takes (the API's shape; the table says nothing about it).
OPERATIONS: Final[Mapping[str, tuple[str, ...]]] = {
    "begin": ("calls", "turn"),
    "settle": ("handle", "call_id", "outcome"),
    "close": ("handle", "reason"),
    "seal": ("handle",),
    "snapshot": (),
    "active_generation": (),
    "turn_token": (),
    "export": ("snapshot",),
}
BEGIN: Final = "begin"  # the operation whose success starts a generation (I7)
EXPORT: Final = "export"  # the operation whose success hands out a payload (I6)
OBSERVED: Final = frozenset({"preview", "normalized", "none"})  # observed kinds: rejection content only

# Effects that read caller values and may run caller code (they must sit in unlocked phases), and
# effects that take the instance's lock themselves (nested operations; also only in unlocked phases).
CALLER_CODE: Final = frozenset(
    {"validate_calls", "read_handle_generation", "read_status_preview", "normalize_outcome", "normalize_close_reason"}
)
TAKES_LOCK: Final = frozenset({"default_snapshot"})
# Effects whose result is a context value later segments read: effect -> the fields it produces.
PRODUCES: Final[Mapping[str, tuple[str, ...]]] = {
    "validate_turn": ("tdef", "tg"),
    "validate_calls": ("nn",),
    "read_handle_generation": ("rgen_def",),
    # media: the settlement is a success whose parts hold media and the flag textOnlyToolResults is set (D26; an
    # oracle, like the settlement's text: the model does not interpret content).
    "normalize_outcome": ("stl_def", "st", "tok", "media"),
    "normalize_close_reason": ("cr_def", "rst", "rtok"),
    "default_snapshot": ("sa",),
}


def _no_run(m: Model, fr: Frame) -> z3.BoolRef:
    return fr.s.rs == m.run(m.spec.initial_run)


def _known_call(fr: Frame) -> z3.BoolRef:
    c = fr.ctx["c"]
    return z3.And(c >= 0, c < fr.s.n)


def _registered(fr: Frame) -> z3.BoolRef:
    sa = fr.ctx["sa"]
    return z3.And(sa >= 0, sa < fr.s.ns)


def _guard_handle_not_current(b: Builder, fr: Frame) -> GuardValue:
    """The handle is not, by identity, the current generation's handle (no generation: never current)."""
    return GuardValue(z3.Or(_no_run(b.m, fr), fr.ctx["h"] != fr.s.cur))


def _guard_call_unknown(b: Builder, fr: Frame) -> GuardValue:
    """The call id is not one of the current generation's (asks for a run)."""
    return GuardValue(z3.Not(_known_call(fr)), crash=_no_run(b.m, fr))


def _guard_call_not_pending(b: Builder, fr: Frame) -> GuardValue:
    """The (known) call is not in the initial call state (asks for a run and a known id)."""
    return GuardValue(fr.s.cs[fr.ctx["c"]] != b.m.pending, crash=z3.Or(_no_run(b.m, fr), z3.Not(_known_call(fr))))


def _guard_has_pending_calls(b: Builder, fr: Frame) -> GuardValue:
    """Some call of the current generation is pending (asks for a run)."""
    return GuardValue(b.exists_pending(fr.s.cs, fr.s.n), crash=_no_run(b.m, fr))


def _guard_generation_changed(b: Builder, fr: Frame) -> GuardValue:
    """The generation counter differs from its value when the operation started."""
    return GuardValue(fr.s.gen != fr.ctx["g0"])


def _guard_turn_stale(b: Builder, fr: Frame) -> GuardValue:
    """begin was given a turn token whose generation is not the counter's value (deviation D20)."""
    return GuardValue(z3.And(fr.ctx["tdef"], fr.s.gen != fr.ctx["tg"]))


def _guard_moves_media(b: Builder, fr: Frame) -> GuardValue:
    """The normalized settlement is a success with media and the option is set (deviation D26; an oracle)."""
    return GuardValue(z3.And(fr.ctx["stl_def"], fr.ctx["media"]))


def _guard_snapshot_foreign(b: Builder, fr: Frame) -> GuardValue:
    """The snapshot argument is not a registered snapshot (decided by identity, reads nothing)."""
    return GuardValue(z3.Not(_registered(fr)))


def _guard_snapshot_open(b: Builder, fr: Frame) -> GuardValue:
    """The snapshot argument's closed flag is false (reads the argument: foreign if it is not registered)."""
    return GuardValue(z3.Not(fr.s.snap_closed[fr.ctx["sa"]]), foreign=z3.Not(_registered(fr)))


GUARDS: Final[Mapping[str, Callable[[Builder, Frame], GuardValue]]] = {
    "handle_not_current": _guard_handle_not_current,
    "call_unknown": _guard_call_unknown,
    "call_not_pending": _guard_call_not_pending,
    "has_pending_calls": _guard_has_pending_calls,
    "generation_changed": _guard_generation_changed,
    "turn_stale": _guard_turn_stale,
    "moves_media": _guard_moves_media,
    "snapshot_foreign": _guard_snapshot_foreign,
    "snapshot_open": _guard_snapshot_open,
}


def _with(fr: Frame, **changes: Any) -> Frame:
    """``fr`` with state fields and/or ``out``/``foreign``/``ctx`` replaced."""
    state_changes = {k: v for k, v in changes.items() if k in STATE_FIELDS}
    other = {k: v for k, v in changes.items() if k not in STATE_FIELDS}
    return replace(fr, s=replace(fr.s, **state_changes), **other)


def _crash_if(b: Builder, cond: z3.BoolRef, fr: Frame, then: Frame) -> Frame:
    """Crash (changing nothing) when ``cond``; otherwise ``then``."""
    return ite_frame(cond, _with(fr, out=b.m.outcome(CRASH)), then)


def _caller_effect(name: str) -> Callable[[Builder, Frame, Row], Frame]:
    """An effect that reads caller values: raises one of its errors, or continues with its products."""

    def effect(b: Builder, fr: Frame, row: Row) -> Frame:
        out = b.raise_oracle(name, name in CALLER_CODE)
        ctx = dict(fr.ctx)
        for field in PRODUCES.get(name, ()):
            ctx[field] = b.oracle(name, field, b.m.ctx_sort(field))
        b.assumptions.append(z3.Implies(out == b.m.outcome(CONTINUE), b.m.postcondition(name, ctx, fr.ctx)))
        return replace(fr, ctx=ctx, out=out)

    effect.__doc__ = f"{name}: may raise; see postcondition()"
    return effect


def _effect_default_snapshot(b: Builder, fr: Frame, row: Row) -> Frame:
    """No snapshot argument: the result of a nested ``snapshot`` operation (a step of its own) becomes it."""
    nested = b.oracle("default_snapshot", "sa", z3.IntSort())
    return replace(fr, ctx={**fr.ctx, "sa": z3.If(fr.ctx["sa_absent"], nested, fr.ctx["sa"])})


def _take_snapshot(b: Builder, fr: Frame) -> Frame:
    """Register a new immutable record of the current generation (asks for a run)."""
    s = fr.s
    m = b.m
    return _crash_if(
        b,
        _no_run(m, fr),
        fr,
        _with(
            fr,
            ns=s.ns + 1,
            snap_gen=z3.Store(s.snap_gen, s.ns, s.cur),
            snap_closed=z3.Store(s.snap_closed, s.ns, m.closed(s.rs)),
            snap_cr=z3.Store(s.snap_cr, s.ns, s.cr),
            snap_n=z3.Store(s.snap_n, s.ns, s.n),
            snap_cs=z3.Store(s.snap_cs, s.ns, s.cs),
            snap_stl=z3.Store(s.snap_stl, s.ns, s.stl),
            snap_nd=z3.Store(s.snap_nd, s.ns, s.nd),
        ),
    )


def _close_pending(b: Builder, fr: Frame, effect: str, status: z3.ExprRef, token: z3.ArithRef) -> Frame:
    """Every pending call takes the effect's synthetic event for ``status`` and a synthetic settlement.

    The event is resolved as the interpreter resolves it (crash if it cannot be); if a pending
    call has no transition for it, the call machine's default raises before anything changes.
    """
    m = b.m
    s = fr.s
    resolvable, defined, target = m.event_for_status(effect, status, m.pending)
    hp = b.exists_pending(s.cs, s.n)
    k = z3.Int(f"{b.label}|k")
    hit = z3.And(k >= 0, k < s.n, s.cs[k] == m.pending)
    closed = _with(
        fr,
        cs=z3.Lambda([k], z3.If(hit, target, s.cs[k])),
        stl=z3.Lambda([k], z3.If(hit, m.Stl.settled(status, m.prov("synthetic"), token), s.stl[k])),
    )
    raised = _with(fr, out=m.outcome(f"raise:{m.spec.call_default_error}"))
    return _crash_if(b, z3.Not(resolvable), fr, ite_frame(z3.And(hp, z3.Not(defined)), raised, closed))


def _effect_supersede(b: Builder, fr: Frame, row: Row) -> Frame:
    """Close the open generation as close would, with the built-in superseded reason, then snapshot it."""
    m = b.m
    run_to = m.spec.effects["supersede"].run_to
    if run_to not in CLOSE_STATUSES or run_to not in m.spec.run_states:
        raise EncodingError(f"effects.supersede.run_to must name a close status and a run state, not {run_to!r}")
    status = m.status(run_to)
    closed = _close_pending(b, fr, "supersede", status, z3.IntVal(SUPERSEDED_TOKEN))
    done = _with(closed, cr=m.Reason.closed(status, z3.IntVal(SUPERSEDED_TOKEN)), rs=m.run(run_to))
    after = ite_frame(closed.out == m.outcome(CONTINUE), _take_snapshot(b, done), closed)
    return _crash_if(b, _no_run(m, fr), fr, after)


def _effect_start_generation(b: Builder, fr: Frame, row: Row) -> Frame:
    """A new generation: counter + 1, a new handle, the validated calls all pending, no diagnostics."""
    m = b.m
    s = fr.s
    return _with(
        fr,
        gen=s.gen + 1,
        cur=s.gen + 1,
        n=fr.ctx["nn"],
        cs=z3.K(z3.IntSort(), m.pending),
        stl=z3.K(z3.IntSort(), m.Stl.unsettled),
        cr=m.Reason.none,
        nd=z3.IntVal(0),
        rs=m.run(UNSET),
    )


def _effect_record_settlement(b: Builder, fr: Frame, row: Row) -> Frame:
    """The call takes the ``report_<status>`` event and stores the normalized settlement."""
    m = b.m
    s = fr.s
    c = fr.ctx["c"]
    resolvable, defined, target = m.event_for_status("record_settlement", fr.ctx["st"], s.cs[c])
    recorded = _with(
        fr,
        cs=z3.Store(s.cs, c, target),
        stl=z3.Store(s.stl, c, m.Stl.settled(fr.ctx["st"], m.prov("reported"), fr.ctx["tok"])),
    )
    raised = _with(fr, out=m.outcome(f"raise:{m.spec.call_default_error}"))
    crash = z3.Or(_no_run(m, fr), z3.Not(fr.ctx["stl_def"]), z3.Not(_known_call(fr)), z3.Not(resolvable))
    return _crash_if(b, crash, fr, ite_frame(defined, recorded, raised))


def _effect_record_media_moved(b: Builder, fr: Frame, row: Row) -> Frame:
    """One more diagnostic (media_moved, D26) while fewer than maxDiagnostics are recorded (DIAG-1)."""
    nd = fr.s.nd
    return _crash_if(b, _no_run(b.m, fr), fr, _with(fr, nd=z3.If(nd < b.m.max_diagnostics, nd + 1, nd)))


def _effect_synthesize_pending(b: Builder, fr: Frame, row: Row) -> Frame:
    """Every pending call takes ``synthesize_<status>`` of the normalized close reason."""
    m = b.m
    closed = _close_pending(b, fr, "synthesize_pending", fr.ctx["rst"], fr.ctx["rtok"])
    return _crash_if(b, z3.Or(_no_run(m, fr), z3.Not(fr.ctx["cr_def"])), fr, closed)


def _effect_record_close_reason(b: Builder, fr: Frame, row: Row) -> Frame:
    """The generation's close reason becomes the normalized one (none if there is none)."""
    m = b.m
    reason = z3.If(fr.ctx["cr_def"], m.Reason.closed(fr.ctx["rst"], fr.ctx["rtok"]), m.Reason.none)
    return _crash_if(b, _no_run(m, fr), fr, _with(fr, cr=reason))


def _effect_record_complete(b: Builder, fr: Frame, row: Row) -> Frame:
    """The generation's close reason becomes ``complete``."""
    return _crash_if(b, _no_run(b.m, fr), fr, _with(fr, cr=b.m.Reason.complete))


def _effect_render_payload(b: Builder, fr: Frame, row: Row) -> Frame:
    """Read the snapshot argument's calls (foreign if it is not registered); changes nothing."""
    return replace(fr, foreign=z3.Or(fr.foreign, z3.Not(_registered(fr))))


EFFECTS: Final[Mapping[str, Callable[[Builder, Frame, Row], Frame]]] = {
    "validate_turn": _caller_effect("validate_turn"),  # reads an argument; runs no caller code (not in CALLER_CODE)
    "validate_calls": _caller_effect("validate_calls"),
    "validate_call_id": _caller_effect("validate_call_id"),
    "read_handle_generation": _caller_effect("read_handle_generation"),
    "read_status_preview": _caller_effect("read_status_preview"),
    "normalize_outcome": _caller_effect("normalize_outcome"),
    "normalize_close_reason": _caller_effect("normalize_close_reason"),
    "default_snapshot": _effect_default_snapshot,
    "supersede": _effect_supersede,
    "start_generation": _effect_start_generation,
    "record_settlement": _effect_record_settlement,
    "record_media_moved": _effect_record_media_moved,
    "synthesize_pending": _effect_synthesize_pending,
    "record_close_reason": _effect_record_close_reason,
    "record_complete": _effect_record_complete,
    "render_payload": _effect_render_payload,
}


def _result_needs_run(b: Builder, fr: Frame) -> Frame:
    return _crash_if(b, _no_run(b.m, fr), fr, fr)


RESULTS: Final[Mapping[str, Callable[[Builder, Frame], Frame]]] = {
    # What producing each named return value does to the state (the value itself is not modelled).
    "begin_result": _result_needs_run,
    "accepted": lambda b, fr: _crash_if(b, z3.Not(z3.And(fr.ctx["stl_def"], fr.ctx["rgen_def"])), fr, fr),
    "snapshot": _take_snapshot,
    "null": lambda b, fr: fr,
    "generation": _result_needs_run,
    "turn_token": lambda b, fr: fr,  # reads the counter (0 before the first begin): never asks for a run
    "payload": lambda b, fr: fr,
}

# to_by rules: the crash condition and, per status, the run state it names.
TARGETS: Final[Mapping[str, Callable[[Builder, Frame], tuple[z3.BoolRef, z3.ExprRef]]]] = {
    "reason.status": lambda b, fr: (z3.Not(fr.ctx["cr_def"]), fr.ctx["rst"]),
}


# --------------------------------------------------------------------------- the model


class Model:
    """The sorts, the step encoding and the invariants for one table."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self._check_names()
        self.Run, run_consts = z3.EnumSort("Run", [f"run:{s}" for s in (*spec.run_states, UNSET)])
        self._runs = dict(zip((*spec.run_states, UNSET), run_consts, strict=True))
        self.Call, call_consts = z3.EnumSort("Call", [f"call:{s}" for s in spec.call_states])
        self._calls = dict(zip(spec.call_states, call_consts, strict=True))
        self.Event, event_consts = z3.EnumSort("Event", [f"event:{e}" for e in spec.call_events])
        self._events = dict(zip(spec.call_events, event_consts, strict=True))
        self.Status, status_consts = z3.EnumSort("Status", [f"status:{s}" for s in STATUSES])
        self._statuses = dict(zip(STATUSES, status_consts, strict=True))
        self.Prov, prov_consts = z3.EnumSort("Prov", list(PROVENANCES))
        self._provs = dict(zip(PROVENANCES, prov_consts, strict=True))
        stl = z3.Datatype("Settlement")
        stl.declare("unsettled")
        stl.declare("settled", ("st", self.Status), ("pv", self.Prov), ("tok", z3.IntSort()))
        self.Stl = stl.create()
        reason = z3.Datatype("Reason")
        reason.declare("none")
        reason.declare("complete")
        reason.declare("closed", ("rst", self.Status), ("rtok", z3.IntSort()))
        self.Reason = reason.create()
        names = [CONTINUE, CRASH, CALLER_RAISE, f"raise:{spec.default_error}", f"raise:{spec.call_default_error}"]
        names += ["raise:illegal_transition"]
        for row in spec.rows:
            if row.result is not None:
                names.append(f"{row.result.kind}:{row.result.name}")
        for effect in spec.effects.values():
            names += [f"raise:{e}" for e in effect.errors]
        self.outcome_names = tuple(dict.fromkeys(names))
        self.Outcome, outcome_consts = z3.EnumSort("Outcome", list(self.outcome_names))
        self._outcomes = dict(zip(self.outcome_names, outcome_consts, strict=True))
        self.pending = self._calls[spec.initial_call]
        self.max_calls = z3.Int("maxCalls")
        self.max_diagnostics = z3.Int("maxDiagnostics")
        self.CallArray = z3.ArraySort(z3.IntSort(), self.Call)
        self.StlArray = z3.ArraySort(z3.IntSort(), self.Stl)

    # ---- names

    def _check_names(self) -> None:
        spec = self.spec
        for op in spec.operations:
            if op not in OPERATIONS:
                raise EncodingError(f"operations.{op}: the encoding does not know this operation")
        for row in spec.rows:
            where = f"transitions.{row.id}"
            if row.guard is not None and row.guard not in GUARDS:
                raise EncodingError(f"{where}: the encoding does not know guard {row.guard!r}")
            for effect in row.effects:
                if effect not in EFFECTS:
                    raise EncodingError(f"{where}: the encoding does not know effect {effect!r}")
            if row.result is not None and row.result.kind == "return" and row.result.name not in RESULTS:
                raise EncodingError(f"{where}: the encoding does not know result {row.result.name!r}")
            if row.to_by is not None and row.to_by not in TARGETS:
                raise EncodingError(f"{where}: the encoding does not know target rule {row.to_by!r}")

    def run(self, name: str) -> z3.ExprRef:
        return self._runs[name]

    def call(self, name: str) -> z3.ExprRef:
        return self._calls[name]

    def event(self, name: str) -> z3.ExprRef:
        return self._events[name]

    def status(self, name: str) -> z3.ExprRef:
        return self._statuses[name]

    def prov(self, name: str) -> z3.ExprRef:
        return self._provs[name]

    def outcome(self, name: str) -> z3.ExprRef:
        return self._outcomes[name]

    def closed(self, rs: z3.ExprRef) -> z3.BoolRef:
        return z3.Or([rs == self.run(s) for s in self.spec.closed_runs]) if self.spec.closed_runs else z3.BoolVal(False)

    def state_of(self, settlement: z3.ExprRef, call_state: z3.ExprRef) -> z3.BoolRef:
        """``call_state`` is the call state named like the settlement's status (a settled call shows its status)."""
        st = self.Stl.st(settlement)
        return z3.Or(
            [z3.And(st == self.status(x), call_state == self.call(x)) for x in STATUSES if x in self.spec.call_states]
            or [z3.BoolVal(False)]
        )

    def terminal(self, call_state: z3.ExprRef) -> z3.BoolRef:
        return z3.Or([call_state == self.call(s) for s in self.spec.terminal_calls] or [z3.BoolVal(False)])

    def ctx_sort(self, field: str) -> z3.SortRef:
        if field in ("tdef", "rgen_def", "stl_def", "cr_def", "sa_absent", "media"):
            return z3.BoolSort()
        if field in ("st", "rst"):
            return self.Status
        return z3.IntSort()

    def postcondition(self, effect: str, ctx: Mapping[str, z3.ExprRef], before: Mapping[str, z3.ExprRef]) -> z3.BoolRef:
        """What an effect that continued guarantees about the context fields it produced."""
        if effect == "validate_calls":
            return z3.And(ctx["nn"] >= 0, ctx["nn"] <= self.max_calls)
        if effect == "validate_turn":  # a token's generation is a safe integer >= 0; none given: no guard
            return z3.Implies(ctx["tdef"], ctx["tg"] >= 0)
        if effect == "read_handle_generation":  # a handle this instance made carries a positive generation
            return z3.Implies(before["h"] >= 1, ctx["rgen_def"])
        if effect == "normalize_outcome":  # media only for a success (D26)
            return z3.And(
                ctx["stl_def"] == z3.BoolVal(True), z3.Implies(ctx["media"], ctx["st"] == self.status("success"))
            )
        if effect == "normalize_close_reason":
            return z3.And(ctx["cr_def"], z3.Or([ctx["rst"] == self.status(s) for s in CLOSE_STATUSES]))
        return z3.BoolVal(True)

    def default_context(self, effect: str, ctx: Mapping[str, z3.ExprRef]) -> z3.BoolRef:
        """The context fields of ``effect`` before it ran (the interpreter's Context defaults)."""
        if effect == "validate_calls":
            return ctx["nn"] == 0
        if effect == "validate_turn":
            return z3.And(z3.Not(ctx["tdef"]), ctx["tg"] == 0)
        if effect == "normalize_outcome":
            return z3.And(z3.Not(ctx["stl_def"]), z3.Not(ctx["media"]))
        if effect in ("read_handle_generation", "normalize_close_reason"):
            return z3.Not(ctx[PRODUCES[effect][0]])
        return z3.BoolVal(True)  # default_snapshot: the argument itself, any value

    # ---- the call machine

    def call_next(self, state: z3.ExprRef, event: str) -> tuple[z3.BoolRef, z3.ExprRef]:
        """Whether ``event`` has a transition from ``state``, and its target."""
        rows = [t for t in self.spec.call_transitions if t.event == event]
        defined = z3.Or([state == self.call(t.from_state) for t in rows] or [z3.BoolVal(False)])
        target: z3.ExprRef = state
        for t in reversed(rows):
            target = z3.If(state == self.call(t.from_state), self.call(t.to), target)
        return defined, target

    def resolve_event(self, effect: str, status: str) -> str | None:
        """The event ``effect`` applies for a call reaching ``status``, as the interpreter resolves it (None: crash)."""
        pattern = self.spec.effects[effect].call_event if effect in self.spec.effects else None
        if pattern is None or status not in self.spec.call_states:
            return None
        event = pattern.replace("<status>", status)
        return event if event in self.spec.call_events else None

    def event_for_status(
        self, effect: str, status: z3.ExprRef, state: z3.ExprRef
    ) -> tuple[z3.BoolRef, z3.BoolRef, z3.ExprRef]:
        """(resolvable, defined, target) of ``effect``'s event for a symbolic ``status`` from call state ``state``."""
        resolvable: z3.BoolRef = z3.BoolVal(False)
        defined: z3.BoolRef = z3.BoolVal(False)
        target: z3.ExprRef = state
        for name in STATUSES:
            event = self.resolve_event(effect, name)
            if event is None:
                continue
            is_it = status == self.status(name)
            ok, to = self.call_next(state, event)
            resolvable = z3.Or(resolvable, is_it)
            defined = z3.If(is_it, ok, defined)
            target = z3.If(is_it, to, target)
        return resolvable, defined, target

    # ---- states

    def fresh_state(self, prefix: str) -> State:
        call_arr, stl_arr = self.CallArray, self.StlArray
        sorts: dict[str, z3.SortRef] = {
            "rs": self.Run,
            "gen": z3.IntSort(),
            "cur": z3.IntSort(),
            "n": z3.IntSort(),
            "cs": call_arr,
            "stl": stl_arr,
            "cr": self.Reason,
            "nd": z3.IntSort(),
            "ns": z3.IntSort(),
            "snap_gen": z3.ArraySort(z3.IntSort(), z3.IntSort()),
            "snap_closed": z3.ArraySort(z3.IntSort(), z3.BoolSort()),
            "snap_cr": z3.ArraySort(z3.IntSort(), self.Reason),
            "snap_n": z3.ArraySort(z3.IntSort(), z3.IntSort()),
            "snap_cs": z3.ArraySort(z3.IntSort(), call_arr),
            "snap_stl": z3.ArraySort(z3.IntSort(), stl_arr),
            "snap_nd": z3.ArraySort(z3.IntSort(), z3.IntSort()),
        }
        return State(**{f: z3.Const(f"{prefix}.{f}", sorts[f]) for f in STATE_FIELDS})

    def initial_constraints(self, s: State) -> z3.BoolRef:
        """``s`` is the state of a new instance."""
        return z3.And(
            s.rs == self.run(self.spec.initial_run),
            s.gen == 0,
            s.n == 0,
            s.cr == self.Reason.none,
            s.nd == 0,
            s.ns == 0,
        )

    def fresh_context(self, label: str) -> dict[str, z3.ExprRef]:
        return {f: z3.Const(f"{label}|ctx.{f}", self.ctx_sort(f)) for f in (*ARGUMENT_FIELDS, *CARRIED_FIELDS)}

    # ---- the invariant

    def invariant(self, s: State, k: z3.ArithRef, j: z3.ArithRef) -> dict[str, z3.BoolRef]:
        """The inductive invariant at call index ``k`` and snapshot index ``j``, by part."""
        m = self
        in_range = z3.And(k >= 0, k < s.n)
        snap = z3.And(j >= 0, j < s.ns)
        no_run = s.rs == m.run(m.spec.initial_run)
        return {
            "WF": z3.And(
                s.rs != m.run(UNSET),
                s.gen >= 0,
                s.n >= 0,
                s.nd >= 0,
                s.ns >= 0,
                z3.Implies(no_run, z3.And(s.gen == 0, s.n == 0, s.cr == m.Reason.none)),
                z3.Implies(z3.Not(no_run), z3.And(s.gen >= 1, s.cur == s.gen)),
                (s.cr == m.Reason.none) == z3.Not(m.closed(s.rs)),
                z3.Implies(in_range, (s.cs[k] == m.pending) == (s.stl[k] == m.Stl.unsettled)),
                z3.Implies(z3.And(in_range, m.Stl.is_settled(s.stl[k])), m.state_of(s.stl[k], s.cs[k])),
            ),
            "I5": z3.And(
                z3.Implies(z3.And(m.closed(s.rs), in_range), s.cs[k] != m.pending),
                z3.Implies(z3.And(snap, s.snap_closed[j], k >= 0, k < s.snap_n[j]), s.snap_cs[j][k] != m.pending),
            ),
            "I8": z3.And(
                s.n <= m.max_calls,
                s.nd <= m.max_diagnostics,
                z3.Implies(
                    snap, z3.And(s.snap_n[j] >= 0, s.snap_n[j] <= m.max_calls, s.snap_nd[j] <= m.max_diagnostics)
                ),
            ),
        }

    # ---- steps

    def encode_step(
        self, segment: Segment, label: str | None = None, ctx: Mapping[str, z3.ExprRef] | None = None
    ) -> StepEnc:
        """The step ``segment`` from a fresh symbolic state, with context ``ctx`` (default: fresh variables)."""
        label = label or segment.label
        b = Builder(self, label)
        pre = self.fresh_state(f"{label}|pre")
        ctx = dict(ctx) if ctx is not None else self.fresh_context(label)
        fr = Frame(pre, ctx, self.outcome(CONTINUE), z3.BoolVal(False))
        for phase in segment.phases:
            fr = self._phase(b, segment.op, phase, fr)
        if segment.last:
            fr = ite_frame(self.live(fr), _with(fr, out=self.outcome(f"raise:{self.spec.default_error}")), fr)
        return StepEnc(segment, b, pre, ctx, fr)

    def start_context(self, label: str) -> tuple[dict[str, z3.ExprRef], list[z3.BoolRef]]:
        """The context an operation starts with: free arguments, the interpreter's defaults for the rest."""
        ctx = self.fresh_context(label)
        return ctx, [self.default_context(effect, ctx) for effect in PRODUCES]

    def rely(self, a: State, b: State, ks: Iterable[z3.ArithRef], js: Iterable[z3.ArithRef]) -> list[z3.BoolRef]:
        """R(a, b): what any sequence of steps leads from ``a`` to ``b`` (instantiated at indices ``ks``, ``js``).

        R is reflexive and transitive; every step guarantees it (obligation ``RG``), so an operation
        may rely on it between its own segments, whatever other operations interleave.
        """
        no_run = self.run(self.spec.initial_run)
        same_gen = b.gen == a.gen
        facts = [
            b.gen >= a.gen,
            b.ns >= a.ns,
            z3.Implies(a.rs != no_run, b.rs != no_run),
            z3.Implies(same_gen, z3.And(b.cur == a.cur, b.n == a.n)),
            z3.Implies(z3.And(same_gen, self.closed(a.rs)), z3.And(b.rs == a.rs, b.cr == a.cr)),
        ]
        for k in ks:
            sticky = z3.And(k >= 0, k < a.n, self.terminal(a.cs[k]))
            facts.append(z3.Implies(z3.And(same_gen, sticky), z3.And(b.cs[k] == a.cs[k], b.stl[k] == a.stl[k])))
        for j in js:
            same = z3.And([getattr(a, f)[j] == getattr(b, f)[j] for f in SNAPSHOT_FIELDS])
            facts.append(z3.Implies(z3.And(j >= 0, j < a.ns), same))
        return facts

    def encode_in_operation(self, segment: Segment) -> InOperation:
        """``segment`` as the last of its operation's segments so far, each earlier one having continued.

        The earlier segments run from states satisfying the invariant (at ``k0``, the call argument,
        ``j0`` and the snapshot argument), each continued, the context flows from one to the next,
        and consecutive segments are linked by the rely relation R.
        """
        label = segment.label
        k0 = z3.Int(f"{label}|k0")
        j0 = z3.Int(f"{label}|j0")
        ctx, hyps = self.start_context(f"{label}@start")
        hyps += [self.max_calls >= 1, self.max_diagnostics >= 1]
        earlier: list[StepEnc] = []
        for seg in self.spec.segments(segment.op)[: segment.index + 1]:
            enc = self.encode_step(seg, f"{label}@{seg.label}", ctx)
            if not earlier and seg.op == BEGIN:  # the API reads the counter just before; steps only raise it
                hyps.append(ctx["g0"] <= enc.pre.gen)
            ks = (k0, enc.ctx_in["c"])
            js = (j0, enc.ctx_in["sa"], enc.post.ctx["sa"])
            for k in ks:
                for j in js:
                    hyps += self.invariant(enc.pre, k, j).values()
            hyps += enc.builder.assumptions
            hyps += enc.builder.pointwise(k0)
            if earlier:
                hyps += self.rely(earlier[-1].post.s, enc.pre, ks, js)
            if seg == segment:
                break
            hyps.append(self.live(enc.post))
            earlier.append(enc)
            ctx = dict(enc.post.ctx)
        return InOperation(enc, tuple(earlier), hyps, k0, j0)

    def live(self, fr: Frame) -> z3.BoolRef:
        return fr.out == self.outcome(CONTINUE)

    def _phase(self, b: Builder, op: str, phase: str, start: Frame) -> Frame:
        """Rows of (op, phase) from the phase-start state, in table order; the first whose guard holds fires."""
        live = self.live(start)
        unset = z3.And(live, start.s.rs == self.run(UNSET))  # the interpreter has no rows for "" (KeyError)
        taken: z3.BoolRef = z3.BoolVal(False)
        foreign: z3.BoolRef = start.foreign
        alternatives: list[tuple[z3.BoolRef, Frame]] = []
        crashed = _with(start, out=self.outcome(CRASH))
        for row in self.spec.rows_for(op, phase):
            applicable = z3.Or([start.s.rs == self.run(s) for s in row.from_states] or [z3.BoolVal(False)])
            tried = z3.And(live, z3.Not(unset), applicable, z3.Not(taken))
            g = GUARDS[row.guard](b, start) if row.guard is not None else GuardValue(z3.BoolVal(True))
            foreign = z3.Or(foreign, z3.And(tried, g.foreign))
            crash = z3.And(tried, g.crash)
            fire = z3.And(tried, z3.Not(g.crash), g.value)
            b.fired.append((row.id, fire))
            alternatives.append((crash, crashed))
            alternatives.append((fire, self._apply_row(b, start, row)))
            taken = z3.Or(taken, crash, fire)
        result = start
        for cond, frame in reversed(alternatives):
            result = ite_frame(cond, frame, result)
        result = ite_frame(unset, crashed, result)
        return replace(result, foreign=z3.Or(result.foreign, foreign))

    def _apply_row(self, b: Builder, fr: Frame, row: Row) -> Frame:
        """A firing row: its effects in order, then its move, then its result."""
        for effect in row.effects:
            fr = ite_frame(self.live(fr), EFFECTS[effect](b, fr, row), fr)
        if row.to:
            fr = ite_frame(self.live(fr), self._move(b, fr, row), fr)
        if row.result is not None:
            fr = ite_frame(self.live(fr), self._result(b, fr, row.result), fr)
        return fr

    def _move(self, b: Builder, fr: Frame, row: Row) -> Frame:
        no_run = _no_run(self, fr)
        if row.to_by is None:
            return _crash_if(b, no_run, fr, _with(fr, rs=self.run(row.to[0])))
        crash, status = TARGETS[row.to_by](b, fr)
        allowed = [s for s in STATUSES if s in row.to]
        ok = z3.Or([status == self.status(s) for s in allowed] or [z3.BoolVal(False)])
        target: z3.ExprRef = self.run(row.to[0])
        for s in allowed:
            target = z3.If(status == self.status(s), self.run(s), target)
        moved = ite_frame(ok, _with(fr, rs=target), _with(fr, out=self.outcome("raise:illegal_transition")))
        return _crash_if(b, z3.Or(no_run, crash), fr, moved)

    def _result(self, b: Builder, fr: Frame, result: Result) -> Frame:
        if result.kind == "reject":  # appended as a diagnostic while there is room
            nd = fr.s.nd
            return _with(fr, nd=z3.If(nd < self.max_diagnostics, nd + 1, nd), out=self.outcome(f"reject:{result.name}"))
        if result.kind == "raise":
            return _with(fr, out=self.outcome(f"raise:{result.name}"))
        done = RESULTS[result.name](b, fr)
        return ite_frame(self.live(done), _with(done, out=self.outcome(f"return:{result.name}")), done)


# --------------------------------------------------------------------------- reading models back


def value_name(value: z3.ExprRef) -> str:
    """A readable name for an enum value or a datatype value of the model."""
    text = str(value)
    for prefix in ("run:", "call:", "status:", "event:"):
        text = text.replace(prefix, "")
    return text


def describe_state(z3model: z3.ModelRef, s: State, indices: Iterable[int], snapshots: Iterable[int]) -> str:
    """The state ``s`` in ``z3model``: run state, generation, handle, calls by index, close reason, counts."""

    def ev(term: z3.ExprRef) -> z3.ExprRef:
        return z3model.eval(term, model_completion=True)

    n = ev(s.n).as_long()
    lines = [
        f"run={value_name(ev(s.rs))} generation={ev(s.gen)} current-handle=gen{ev(s.cur)} "
        f"close-reason={value_name(ev(s.cr))} diagnostics={ev(s.nd)} snapshots={ev(s.ns)}",
    ]
    shown = sorted({k for k in indices if 0 <= k < n} | set(range(min(n, 3))))
    calls = ", ".join(f"#{k} {value_name(ev(s.cs[k]))} [{value_name(ev(s.stl[k]))}]" for k in shown)
    lines.append(f"calls (n={n}): {calls or '-'}" + (" ..." if len(shown) < n else ""))
    ns = ev(s.ns).as_long()
    for j in sorted({j for j in snapshots if 0 <= j < ns}):
        lines.append(
            f"snapshot #{j}: generation={ev(s.snap_gen[j])} closed={ev(s.snap_closed[j])} "
            f"close-reason={value_name(ev(s.snap_cr[j]))} calls={ev(s.snap_n[j])} diagnostics={ev(s.snap_nd[j])}"
        )
    return "\n".join(lines)


# Which context fields matter to an operation argument, and how to show them.
_ARGUMENT_CONTEXT: Final[Mapping[str, tuple[str, ...]]] = {
    "calls": ("g0", "nn"),
    "turn": ("tdef", "tg"),
    "handle": ("h",),
    "call_id": ("c",),
    "outcome": ("stl_def", "st", "tok", "media"),
    "reason": ("cr_def", "rst", "rtok"),
    "snapshot": ("sa", "sa_absent"),
}


def describe_context(z3model: z3.ModelRef, op: str, ctx: Mapping[str, z3.ExprRef]) -> str:
    """The context fields that matter to ``op`` in ``z3model``."""

    def ev(name: str) -> str:
        return value_name(z3model.eval(ctx[name], model_completion=True))

    shown = {f for arg in OPERATIONS[op] for f in _ARGUMENT_CONTEXT[arg]}
    parts = []
    if "h" in shown:
        h = int(ev("h"))
        parts.append(f"handle=gen{h}'s handle" if h >= 1 else f"handle=a look-alike/None/foreign handle (h={h})")
    if "c" in shown:
        parts.append(f"call=#{ev('c')}")
    if "g0" in shown:
        parts.append(f"generation-at-start={ev('g0')} validated-calls={ev('nn')}")
    if "tdef" in shown:
        parts.append(f"turn-token=generation {ev('tg')}" if ev("tdef") == "True" else "turn-token=none")
    if "st" in shown:
        parts.append(f"settlement={ev('st')}/tok {ev('tok')}" if ev("stl_def") == "True" else "settlement=none")
    if "rst" in shown:
        parts.append(f"close-reason={ev('rst')}/tok {ev('rtok')}" if ev("cr_def") == "True" else "close-reason=none")
    if "sa" in shown:
        parts.append(f"snapshot-arg=#{ev('sa')}" + (" (absent)" if ev("sa_absent") == "True" else ""))
    return " ".join(parts) or "-"
