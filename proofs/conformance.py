"""The proof model stays honest: the Z3 encoding and the real interpreter agree on every reachable step.

Theory of operation
-------------------
``prove_invariants.py`` proves properties of the Z3 encoding (:mod:`_model`)
of the table; this script shows that the encoding describes the real
implementation.  It runs the bounded search of :mod:`_explore` over the real
``ToolCallClosure`` (with a registry that keeps every snapshot alive, so that
the model's registry can be compared), and for every reached state and every
action of the alphabet it

1. abstracts the real state into the model's vocabulary (:class:`Conc`: run
   state, generation, current handle's identity, call states and settlements
   by index, close reason, diagnostics count, every registered snapshot's
   record; settlement and close-reason texts become tokens by interning);
2. derives the step context from the action's arguments (handle identity,
   call index, generation at the start, snapshot argument) and binds the
   *oracles* — the outputs of the effects that read caller values — to what
   those values normalize to (computed once on a scratch instance: the
   normalizers are outside the model, the machine is not);
3. runs the model's steps for the operation's segments one after the other,
   each by binding the concrete state, context and oracles into the step's
   Z3 transition (the very encoding the proofs use, with the witness
   constraints instantiated at every call index), asking Z3 for the successor
   and then asking again for a *different* one (there must be none: given its
   inputs, the model is deterministic); a nested action (caller code calling
   back, or ``default_snapshot``'s nested ``snapshot``) is composed in at the
   point where the real one runs;
4. compares the model's successor, outcome and fired rows with the real
   interpreter's successor, outcome and row trace.

It prints how many (state, action) pairs were compared and how many distinct
model steps were solved, and exits 1 on the first disagreement, which it
prints with the trace that reaches it.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import z3
from _explore import (
    HOOK_EFFECT,
    NAME,
    Action,
    Bounds,
    Observation,
    Outcome,
    World,
    call_lists,
    error_code,
    explore,
    fresh_world,
    iter_violation_lines,
    machine_for,
    perform,
    produced_snapshots,
    turn_argument,
)
from _model import (
    ARGUMENT_FIELDS,
    CARRIED_FIELDS,
    CONTINUE,
    CRASH,
    DEFAULT_TABLE,
    PROVENANCES,
    STATUSES,
    SUPERSEDED_TOKEN,
    UNSET,
    Model,
    Segment,
    read_table,
)

from tool_call_closure import Accepted, BatchHandle, BeginResult, Rejection, Snapshot, ToolContent, TurnToken
from tool_call_closure.errors import TableError
from tool_call_closure.machine.interpreter import MACHINE, Machine
from tool_call_closure.values import CloseReason, Settlement, call_views, close_reason_view

# A settlement in the model's vocabulary: (status, provenance, token); a close reason: None, "complete" or
# (status, token); a call: (state, settlement or None).
Stl = tuple[str, str, int] | None
Reason = str | tuple[str, int] | None
Call = tuple[str, Stl]


@dataclass(frozen=True)
class SnapRecord:
    gen: int
    closed: bool
    cr: Reason
    calls: tuple[Call, ...]
    nd: int


@dataclass(frozen=True)
class Conc:
    """A concrete state in the model's vocabulary; of the snapshot registry only its size and closed flags.

    The records themselves are compared when they are made (the model's new records against the real
    ones); afterwards the model cannot change them (obligation I3) and the real ones are compared with
    their first abstraction in plain Python.
    """

    rs: str
    gen: int
    cur: int
    calls: tuple[Call, ...]
    cr: Reason
    nd: int
    closed: tuple[bool, ...]  # closed flag of each registered snapshot, in registration order


class Tokens:
    """Interns settlement and close-reason texts as the model's tokens (the superseded reason is fixed)."""

    def __init__(self, superseded: CloseReason) -> None:
        self._reported: dict[Settlement, int] = {}
        self._reasons: dict[tuple[Any, ...], int] = {self._reason_key(superseded): SUPERSEDED_TOKEN}

    @staticmethod
    def _reason_key(reason: CloseReason | Settlement) -> tuple[Any, ...]:
        return (reason.status, reason.code, reason.message, reason.side_effect_state)

    def reported(self, settlement: Settlement) -> int:
        return self._reported.setdefault(settlement, len(self._reported))

    def reason(self, reason: CloseReason | Settlement) -> int:
        return self._reasons.setdefault(self._reason_key(reason), len(self._reasons))

    def settlement(self, settlement: Settlement | None) -> Stl:
        if settlement is None:
            return None
        if settlement.provenance == "reported":
            return (settlement.status, "reported", self.reported(settlement))
        return (settlement.status, "synthetic", self.reason(settlement))

    def close_reason(self, reason: CloseReason | None) -> Reason:
        if reason is None:
            return None
        if reason.status == "complete":
            return "complete"
        return (reason.status, self.reason(reason))


# --------------------------------------------------------------------------- the real side


def abstract(world: World, tokens: Tokens, initial: str) -> tuple[Conc, tuple[SnapRecord, ...]]:
    """The real world in the model's vocabulary, and its registered snapshots' records (strong_registry)."""
    c = world.closure
    run = c._run
    records = tuple(
        SnapRecord(
            s.generation,
            s.closed,
            tokens.close_reason(s.close_reason),
            tuple((call.state, tokens.settlement(call.settlement)) for call in s.calls),
            len(s.diagnostics),
        )
        for s in produced_snapshots(c)
    )
    closed = tuple(r.closed for r in records)
    if run is None:
        return Conc(initial, c._generation, 0, (), None, len(c._diagnostics), closed), records
    conc = Conc(
        run.state,
        c._generation,
        run.handle.generation,
        tuple((call.state, tokens.settlement(call.settlement)) for call in call_views(run.calls)),
        tokens.close_reason(close_reason_view(run.close_reason)),
        len(c._diagnostics),
        closed,
    )
    return conc, records


def outcome_name(outcome: Outcome) -> str:
    """The real outcome in the model's vocabulary."""
    if outcome.error is not None:
        code = error_code(outcome.error)
        return CRASH if code.startswith("crash:") else f"raise:{code}"
    result = outcome.result
    if isinstance(result, Rejection):
        return f"reject:{result.reason}"
    kinds = (
        (BeginResult, "begin_result"),
        (Accepted, "accepted"),
        (Snapshot, "snapshot"),
        (list, "payload"),
        (TurnToken, "turn_token"),
    )
    for kind, name in kinds:
        if isinstance(result, kind):
            return f"return:{name}"
    return "return:null" if result is None else "return:generation"


class Oracles:
    """What the caller values of an action normalize to, computed once each on a scratch instance."""

    def __init__(self, bounds: Bounds) -> None:
        self.bounds = bounds
        scratch = fresh_world(MACHINE, bounds).closure
        scratch.begin([{"id": "a", "name": NAME}])
        superseded = scratch.begin([{"id": "a", "name": NAME}]).superseded
        if superseded is None or superseded.close_reason is None:
            raise RuntimeError("a superseded generation must have a snapshot with a close reason")
        self.tokens = Tokens(superseded.close_reason)
        self._cache: dict[tuple[str, str | None], Any] = {}

    def normalized(self, action: Action) -> Any:
        """The settlement (settle family) or close reason (close) the action's value normalizes to."""
        key = (action.method, action.arg)
        if key not in self._cache:
            scratch = fresh_world(MACHINE, self.bounds)
            perform(scratch, Action("begin", "begin", arg="[a]"), self.bounds)
            plain = Action(action.method, action.op, "current", "a", action.arg)
            done = perform(scratch, plain, self.bounds)
            if done is None or done.error is not None:
                raise RuntimeError(f"{plain.label} must be accepted on a scratch instance")
            self._cache[key] = done.result.settlement if action.op == "settle" else done.result.close_reason
        return self._cache[key]

    def context(self, action: Action, world: World) -> tuple[dict[str, Any], dict[tuple[str, str], Any]]:
        """The model context an action starts with, and the values its caller-value effects produce."""
        c = world.closure
        run = c._run
        handle = world.handle(action.handle) if action.handle is not None else None
        identity = -1  # None, or no handle: not a handle of this instance
        if isinstance(handle, BatchHandle):  # this instance's handles are known by the generation that made them
            identity = handle.generation if any(handle is h for h in world.handles) else 0
        ctx: dict[str, Any] = {
            "h": identity,
            "c": run.index.get(action.call_id, -1) if run is not None and action.call_id is not None else -1,
            "g0": c._generation if action.op == "begin" else 0,
            "sa_absent": action.op == "export" and action.arg == "default",
            "nn": 0,
            "tdef": False,
            "tg": 0,
            "rgen_def": False,
            "stl_def": False,
            "st": "success",
            "tok": 0,
            "cr_def": False,
            "rst": "error",
            "rtok": 0,
            "sa": -1,
            "media": False,
        }
        if action.op == "export" and action.arg != "default":
            arg = world.snapshot_arg(action.arg or "")
            ctx["sa"] = next((j for j, s in enumerate(produced_snapshots(c)) if s is arg), -1)
        error = action.invalid_error()
        raised = CONTINUE if error is None else f"raise:{error}"
        oracles: dict[tuple[str, str], Any] = {
            ("validate_call_id", "outcome"): "raise:string_empty" if action.call_id == "" else CONTINUE,
            ("read_handle_generation", "outcome"): CONTINUE,
            ("read_handle_generation", "rgen_def"): isinstance(handle, BatchHandle) and handle.generation >= 1,
            ("read_status_preview", "outcome"): CONTINUE,
        }
        if action.op == "begin":
            calls, list_error = call_lists(self.bounds)[action.arg or ""]
            oracles[("validate_calls", "outcome")] = CONTINUE if list_error is None else f"raise:{list_error}"
            oracles[("validate_calls", "nn")] = len(calls) if list_error is None else 0
            # validate_turn reads the token the action passes (taken from the counter when the action starts).
            token = turn_argument(c, action.turn) if action.turn is not None else None
            valid = token is None or type(token) is TurnToken
            oracles[("validate_turn", "outcome")] = CONTINUE if valid else "raise:turn_invalid"
            oracles[("validate_turn", "tdef")] = type(token) is TurnToken
            oracles[("validate_turn", "tg")] = token.generation if type(token) is TurnToken else 0
        elif action.op == "settle":
            settlement = self.normalized(action) if error is None else None
            oracles[("normalize_outcome", "outcome")] = raised
            oracles[("normalize_outcome", "stl_def")] = True
            oracles[("normalize_outcome", "st")] = settlement.status if settlement else "success"
            oracles[("normalize_outcome", "tok")] = self.tokens.reported(settlement) if settlement else 0
            media = (
                settlement is not None and isinstance(settlement.content, ToolContent) and settlement.content.has_media
            )
            oracles[("normalize_outcome", "media")] = media and c.limits.text_only_tool_results  # D26
        elif action.op == "close":
            reason = self.normalized(action) if error is None else None
            oracles[("normalize_close_reason", "outcome")] = raised
            oracles[("normalize_close_reason", "cr_def")] = True
            oracles[("normalize_close_reason", "rst")] = reason.status if reason else "error"
            oracles[("normalize_close_reason", "rtok")] = self.tokens.reason(reason) if reason else 0
        return ctx, oracles


# --------------------------------------------------------------------------- the model side


@dataclass(frozen=True)
class StepResult:
    post: Conc
    new: tuple[SnapRecord, ...]  # the records of the snapshots this step registered
    ctx: dict[str, Any]
    out: str
    fired: tuple[str, ...]


# What the model says an action does: the state after, the records it registered, its outcome, its rows.
ActionResult = tuple[Conc, tuple[SnapRecord, ...], str, tuple[str, ...]]


class DisagreementError(Exception):
    """The model and the implementation (or the model and itself) disagree."""


MAX_NEW_SNAPSHOTS = 2  # snapshots one step may register that the comparison reads (the table's steps register <= 1)


class StepRunner:
    """One step of the model, encoded once, evaluated for concrete inputs by substitution.

    Every observable of the step's result (the post-state's scalars, call cells, new snapshot records,
    the outcome, which rows fired, the context it hands on) is packed into one datatype value.  For an
    instance, the concrete state, context, oracle values and limits are substituted and the result
    simplified: every observable must come out as a literal.  A non-literal means the model leaves it
    undetermined for these inputs (it depends on something the real implementation fixes, such as a
    cell outside the calls) and is reported.  Array inputs are stores over free arrays, so reading an
    unbound cell stays visible.

    The witnesses of "some call is pending" get their exact values (true iff a cell is pending); the
    proof's constraints force exactly these values once instantiated at every call index, and every
    assumption the proofs make about the step (oracle postconditions, witness constraints, the
    pointwise instances at every index) must simplify to true for the bound values.
    """

    def __init__(self, model: Model, segment: Segment, bounds: Bounds) -> None:
        self.model = model
        self.bounds = bounds
        label = f"conformance:{segment.label}"
        self.enc = enc = model.encode_step(segment, label)
        pre, post, fr = enc.pre, enc.post.s, enc.post
        self.free = {f: z3.Const(f"{label}|free.{f}", getattr(pre, f).sort()) for f in ("cs", "stl", "snap_closed")}
        calls = range(bounds.calls)
        fields: list[tuple[str, z3.ExprRef]] = [
            (f, getattr(post, f)) for f in ("rs", "gen", "cur", "n", "cr", "nd", "ns")
        ]
        fields.append(("out", fr.out))
        fields += [(f"cs{k}", post.cs[k]) for k in calls] + [(f"stl{k}", post.stl[k]) for k in calls]
        for i in range(MAX_NEW_SNAPSHOTS):
            j = pre.ns + i
            fields += [(f"new{i}.{f}", getattr(post, f)[j]) for f in ("snap_gen", "snap_closed", "snap_cr", "snap_n")]
            fields.append((f"new{i}.snap_nd", post.snap_nd[j]))
            fields += [(f"new{i}.cs{k}", post.snap_cs[j][k]) for k in calls]
            fields += [(f"new{i}.stl{k}", post.snap_stl[j][k]) for k in calls]
        fields += [(f"fired:{rid}", cond) for rid, cond in enc.fired]
        fields += [(f"ctx:{f}", fr.ctx[f]) for f in (*ARGUMENT_FIELDS, *CARRIED_FIELDS)]
        self.names = [name for name, _ in fields]
        self.constants = {  # the literal constructors a determined value may contain
            *[f"run:{x}" for x in (*model.spec.run_states, UNSET)],
            *[f"call:{x}" for x in model.spec.call_states],
            *[f"status:{x}" for x in STATUSES],
            *PROVENANCES,
            *model.outcome_names,
            "unsettled",
            "none",
            "complete",
        }
        self.packed = self._pack(f"{label}|obs", [term for _, term in fields])
        self.checks = self._pack(
            f"{label}|assumptions",
            [*enc.builder.assumptions, *[z3.And(enc.builder.pointwise(z3.IntVal(k))) for k in calls]] or [True],
        )
        self.witness_cells = [
            self._pack(f"{label}|witness{i}", [w.n, *[w.array[k] for k in calls]])
            for i, w in enumerate(enc.builder.witnesses)
        ]
        # The substitution's sources, fixed for the step: its input state, context, oracles, limits, witnesses.
        sources: list[z3.ExprRef] = [getattr(pre, f) for f in self.SUBSTITUTED]
        sources += [enc.ctx_in[f] for f in (*ARGUMENT_FIELDS, *CARRIED_FIELDS)]
        sources += [var for _, _, var in enc.builder.oracles]
        sources += [model.max_calls, model.max_diagnostics]
        sources += [v for w in enc.builder.witnesses for v in (w.hp, w.w)]
        self.sources = sources
        self._arrays: dict[tuple[Call, ...], tuple[z3.ExprRef, z3.ExprRef]] = {}
        self._ints: dict[int, z3.ExprRef] = {}
        self.slot = {src.get_id(): i for i, src in enumerate(sources)}
        self._from = (z3.Ast * len(sources))(*[src.as_ast() for src in sources])

    SUBSTITUTED = ("rs", "gen", "cur", "n", "cr", "nd", "ns", "cs", "stl", "snap_closed")

    def _substitute(self, term: z3.ExprRef, targets: Sequence[z3.ExprRef]) -> z3.ExprRef:
        """``term`` with the step's sources replaced by ``targets`` and simplified (the C API, no per-pair checks)."""
        to = (z3.Ast * len(targets))(*[t.as_ast() for t in targets])
        ctx = term.ctx
        done = z3.Z3_substitute(ctx.ref(), term.as_ast(), len(targets), self._from, to)
        return z3.simplify(z3.z3._to_expr_ref(done, ctx))

    @staticmethod
    def _pack(name: str, terms: Sequence[z3.ExprRef | bool]) -> z3.ExprRef:
        values = [z3.BoolVal(t) if isinstance(t, bool) else t for t in terms]
        record = z3.Datatype(name)
        record.declare("pack", *[(f"f{i}", t.sort()) for i, t in enumerate(values)])
        return record.create().pack(*values)

    # ---- values

    def _stl(self, value: Stl) -> z3.ExprRef:
        m = self.model
        if value is None:
            return m.Stl.unsettled
        return m.Stl.settled(m.status(value[0]), m.prov(value[1]), z3.IntVal(value[2]))

    def _reason(self, value: Reason) -> z3.ExprRef:
        m = self.model
        if value is None:
            return m.Reason.none
        if value == "complete":
            return m.Reason.complete
        return m.Reason.closed(m.status(value[0]), z3.IntVal(value[1]))

    def _ctx_value(self, field: str, value: Any) -> z3.ExprRef:
        if field in ("st", "rst"):
            return self.model.status(value)
        if field == "outcome":
            return self.model.outcome(value)
        return z3.BoolVal(value) if isinstance(value, bool) else self._int(value)

    def _state_values(self, conc: Conc, sa: int) -> list[z3.ExprRef]:
        """The pre-state's values (in ``SUBSTITUTED`` order); of the registry its size and the flag at ``sa``."""
        m = self.model
        if conc.calls not in self._arrays:
            cs, stl = self.free["cs"], self.free["stl"]
            for k, (state, settlement) in enumerate(conc.calls):
                cs = z3.Store(cs, k, m.call(state))
                stl = z3.Store(stl, k, self._stl(settlement))
            self._arrays[conc.calls] = (cs, stl)
        cs, stl = self._arrays[conc.calls]
        closed = self.free["snap_closed"]
        if 0 <= sa < len(conc.closed):
            closed = z3.Store(closed, sa, z3.BoolVal(conc.closed[sa]))
        return [
            m.run(conc.rs),
            self._int(conc.gen),
            self._int(conc.cur),
            self._int(len(conc.calls)),
            self._reason(conc.cr),
            self._int(conc.nd),
            self._int(len(conc.closed)),
            cs,
            stl,
            closed,
        ]

    def _int(self, value: int) -> z3.ExprRef:
        if value not in self._ints:
            self._ints[value] = z3.IntVal(value)
        return self._ints[value]

    # ---- decoding literals

    def _fields(self, term: z3.ExprRef, what: str) -> tuple[list[Any], dict[str, Any]]:
        """The fields of a simplified packed value as parsed S-expressions (one C call), and their let-bindings."""
        node = _parse_sexpr(term.sexpr())
        env: dict[str, Any] = {}
        while isinstance(node, list) and node[0] == "let":
            env.update(dict(node[1]))
            node = node[2]
        if not isinstance(node, list) or node[0] != "pack":
            raise DisagreementError(f"the model leaves {what} undetermined: {term}")
        return node[1:], env

    def _decode(self, node: Any, what: str, env: Mapping[str, Any]) -> Any:
        """A parsed literal as a Python value (enum names without their sort prefix); else a DisagreementError."""
        if isinstance(node, str):
            if node in env:
                return self._decode(env[node], what, env)
            if node.lstrip("-").isdigit():
                return int(node)
            if node in ("true", "false"):
                return node == "true"
            name = node.strip("|")
            if name in self.constants:
                return name.split(":", 1)[1] if name.split(":", 1)[0] in ("run", "call", "status") else name
            raise DisagreementError(f"the model leaves {what} undetermined: {node}")
        head = node[0]
        if head == "-" and len(node) == 2:
            return -self._decode(node[1], what, env)
        if head == "let":
            return self._decode(node[2], what, {**env, **dict(node[1])})
        if head in ("settled", "closed"):
            return tuple(self._decode(arg, what, env) for arg in node[1:])
        raise DisagreementError(f"the model leaves {what} undetermined: {node}")

    def run(self, pre: Conc, ctx: Mapping[str, Any], oracles: Mapping[tuple[str, str], Any]) -> StepResult:
        m, enc = self.model, self.enc
        if len(pre.calls) > self.bounds.calls:
            raise DisagreementError(f"{len(pre.calls)} calls exceed the bound the comparison reads")
        targets = list(self.sources)  # unbound sources (an oracle of an effect that cannot run) stay themselves
        targets[: len(self.SUBSTITUTED)] = self._state_values(pre, ctx["sa"])
        for f, v in ctx.items():
            targets[self.slot[enc.ctx_in[f].get_id()]] = self._ctx_value(f, v)
        for effect, field, var in enc.builder.oracles:
            if (effect, field) in oracles:
                targets[self.slot[var.get_id()]] = self._ctx_value(field, oracles[(effect, field)])
        targets[self.slot[m.max_calls.get_id()]] = z3.IntVal(self.bounds.calls)
        targets[self.slot[m.max_diagnostics.get_id()]] = z3.IntVal(self.bounds.max_diagnostics)
        for witness, cells in zip(enc.builder.witnesses, self.witness_cells, strict=True):
            fields, env = self._fields(self._substitute(cells, targets), "a witness's cells")
            n = self._decode(fields[0], "a witness's call count", env)
            states = [self._decode(fields[1 + k], "a witness's cell", env) for k in range(n)]
            pending = [k for k in range(n) if states[k] == m.spec.initial_call]
            targets[self.slot[witness.hp.get_id()]] = z3.BoolVal(bool(pending))
            targets[self.slot[witness.w.get_id()]] = z3.IntVal(pending[0] if pending else 0)
        checks = self._substitute(self.checks, targets)
        if not all(z3.is_true(c) for c in checks.children()):
            broken = [
                str(a) for a, c in zip(enc.builder.assumptions, checks.children(), strict=False) if not z3.is_true(c)
            ]
            raise DisagreementError(
                f"the bound values violate the proof's assumptions for {enc.segment.label}: {broken}"
            )
        fields, env = self._fields(self._substitute(self.packed, targets), "the successor")
        return self._result(pre, dict(zip(self.names, fields, strict=True)), env)

    def _result(self, pre: Conc, values: Mapping[str, Any], env: Mapping[str, Any]) -> StepResult:
        def get(name: str) -> Any:
            return self._decode(values[name], name, env)

        n, ns = get("n"), get("ns")
        new_count = ns - len(pre.closed)
        if n > self.bounds.calls or not 0 <= new_count <= MAX_NEW_SNAPSHOTS:
            raise DisagreementError(f"the model's successor is outside what the comparison reads (n={n}, ns={ns})")

        def call(prefix: str, k: int) -> Call:
            settlement = get(f"{prefix}stl{k}")
            return (get(f"{prefix}cs{k}"), None if settlement == "unsettled" else settlement)

        new = tuple(
            SnapRecord(
                get(f"new{i}.snap_gen"),
                get(f"new{i}.snap_closed"),
                _reason_value(get(f"new{i}.snap_cr")),
                tuple(call(f"new{i}.", k) for k in range(get(f"new{i}.snap_n"))),
                get(f"new{i}.snap_nd"),
            )
            for i in range(new_count)
        )
        conc = Conc(
            get("rs"),
            get("gen"),
            get("cur"),
            tuple(call("", k) for k in range(n)),
            _reason_value(get("cr")),
            get("nd"),
            pre.closed + tuple(r.closed for r in new),
        )
        ctx = {f: get(f"ctx:{f}") for f in (*ARGUMENT_FIELDS, *CARRIED_FIELDS)}
        fired = tuple(name.removeprefix("fired:") for name in self.names if name.startswith("fired:") and get(name))
        return StepResult(conc, new, ctx, get("out"), fired)


_TOKEN = re.compile(r"\(|\)|\|(?:[^|\\]|\\.)*\||[^\s()|]+")  # parentheses, |quoted symbols|, atoms


def _parse_sexpr(text: str) -> Any:
    """An S-expression as nested lists of atoms (strings)."""
    stack: list[list[Any]] = [[]]
    for token in _TOKEN.findall(text):
        if token == "(":
            stack.append([])
        elif token == ")":
            done = stack.pop()
            stack[-1].append(done)
        else:
            stack[-1].append(token)
    return stack[0][0]


def _reason_value(decoded: Any) -> Reason:
    """A decoded close reason in the comparison's vocabulary."""
    if decoded == "none":
        return None
    reason: Reason = decoded  # "complete" or (status, token)
    return reason


class ModelRunner:
    """Whole operations on the model: its steps in order, nested actions composed in."""

    def __init__(self, model: Model, oracles: Oracles) -> None:
        self.model = model
        self.oracles = oracles
        self.steps = {seg: StepRunner(model, seg, oracles.bounds) for seg in model.spec.all_segments()}
        self.solved = 0  # distinct model steps solved (a step with the same inputs is solved once)
        self._cache: dict[tuple[Any, ...], StepResult] = {}

    def _step(self, seg: Segment, pre: Conc, ctx: dict[str, Any], oracles: dict[tuple[str, str], Any]) -> StepResult:
        sa = ctx["sa"]
        flag = pre.closed[sa] if 0 <= sa < len(pre.closed) else None
        # The step sees the registry only through its size and the flag at sa: steps that differ only
        # in other flags are the same step (the post-state's flags are the pre-state's plus the new ones).
        key = (
            seg,
            replace(pre, closed=()),
            len(pre.closed),
            flag,
            tuple(sorted(ctx.items())),
            tuple(sorted(oracles.items())),
        )
        if key not in self._cache:
            self.solved += 1
            self._cache[key] = self.steps[seg].run(pre, ctx, oracles)
        cached = self._cache[key]
        closed = pre.closed + tuple(r.closed for r in cached.new)
        return replace(cached, post=replace(cached.post, closed=closed))

    def action(self, action: Action, pre: Conc, world: World) -> ActionResult:
        """The model's successor, new records, outcome and fired rows for ``action`` from ``pre``.

        ``world`` is the real world the action starts in (for the action's context).
        """
        ctx, oracles = self.oracles.context(action, world)
        return self._compose(action, pre, ctx, oracles, world)

    def _compose(
        self, action: Action, pre: Conc, ctx: dict[str, Any], oracles: dict[tuple[str, str], Any], world: World
    ) -> ActionResult:
        spec = self.model.spec
        fired: list[str] = []
        new: tuple[SnapRecord, ...] = ()
        nested_snapshot: ActionResult | None = None
        if ctx["sa_absent"]:  # default_snapshot's nested snapshot operation, composed in if its row fires
            nested_snapshot = self.action(Action("snapshot", "snapshot"), pre, world)
            oracles[("default_snapshot", "sa")] = len(pre.closed) if nested_snapshot[2] == "return:snapshot" else -1
        out = CONTINUE
        state = pre
        for seg in spec.segments(action.op):
            result = self._step(seg, state, ctx, oracles)
            fired += result.fired
            new += result.new
            state, ctx, out = result.post, result.ctx, result.out
            ran = {e for rid in result.fired for row in spec.rows if row.id == rid for e in row.effects}
            nested: ActionResult | None = None
            if nested_snapshot is not None and "default_snapshot" in ran:
                nested = nested_snapshot
            if action.nested is not None and HOOK_EFFECT[action.op] in ran:
                nested = self.action(action.nested, state, world)
            if nested is not None:
                if state != pre:
                    raise DisagreementError(f"the model changed the state before {action.label}'s nested operation")
                state, nested_new, _, nested_fired = nested
                new += nested_new
                fired += nested_fired
            if out != CONTINUE:
                break
        return state, new, out, tuple(fired)


# --------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1, help="ids per generation, and max_calls (default 1)")
    parser.add_argument("--generations", type=int, default=2, help="successful begins to explore (default 2)")
    parser.add_argument("--max-diagnostics", type=int, default=2, help="the instance's max_diagnostics (default 2)")
    parser.add_argument("--table", type=Path, help="compare this table's model and interpreter instead")
    args = parser.parse_args(argv)
    bounds = Bounds(calls=args.calls, generations=args.generations, max_diagnostics=args.max_diagnostics)
    started = time.perf_counter()
    try:
        machine: Machine = machine_for(args.table)
    except TableError as exc:
        print(f"REFUSED: the reference's validator refuses this table: {exc}")
        return 2
    model = Model(read_table(args.table or DEFAULT_TABLE))
    oracles = Oracles(bounds)
    runner = ModelRunner(model, oracles)
    initial = model.spec.initial_run
    compared = 0

    def visit(
        world: World, _before: Observation, action: Action, after_world: World, _after: Observation, outcome: Outcome
    ) -> str | None:
        nonlocal compared
        compared += 1
        tokens = oracles.tokens
        pre, records = abstract(world, tokens, initial)
        try:
            post, new, out, fired = runner.action(action, pre, world)
        except DisagreementError as exc:
            return f"model: {exc}"
        real, real_records = abstract(after_world, tokens, initial)
        if real_records[: len(records)] != records:
            return "the interpreter changed a registered snapshot (I3)"
        real_new = real_records[len(records) :]
        real_out = outcome_name(outcome)
        if (post, new, out, fired) != (real, real_new, real_out, tuple(outcome.trace or ())):
            return (
                "the model and the interpreter disagree\n"
                f"    model:       outcome {out}, rows {list(fired)}\n                 {post}\n"
                f"                 new snapshots {new}\n"
                f"    interpreter: outcome {real_out}, rows {outcome.trace}\n                 {real}\n"
                f"                 new snapshots {real_new}"
            )
        return None

    stats, violation = explore(machine, bounds, visit, lambda _obs: None, strong_registry=True, trace=True)
    print(
        f"compared {compared} (state, action) pairs over {stats.states} states: "
        f"{runner.solved} model steps solved, {time.perf_counter() - started:.1f}s "
        f"(calls<={bounds.calls}, generations<={bounds.generations}, max_diagnostics={bounds.max_diagnostics})"
    )
    if violation is not None:
        for line in iter_violation_lines(violation):
            print(line)
        return 1
    print("OK: the Z3 model and the interpreter agree on every compared step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
