"""Unbounded inductive proofs of the invariants I1-I8, from the table file, with Z3.

Theory of operation
-------------------
:mod:`_model` compiles every step — an (operation, segment) pair, a segment
being a maximal run of phases with the same ``locked`` flag — of the table in
``spec/machine.json`` (or ``--table PATH``) into a Z3 transition from an
arbitrary state and an arbitrary context.  This script states, for every
step, one obligation per invariant and discharges it:

1. the hypotheses (the inductive invariant at the pre-state, the step's
   transition, the oracle postconditions, the obligation's own antecedent)
   must be satisfiable — otherwise the obligation is ``VACUOUS``, a failure;
2. the hypotheses together with the negated goal must be unsatisfiable:
   ``PROVED``; satisfiable: ``FAILED`` with the counterexample (state before,
   step and context, rows fired and outcome, state after); undecided within
   20 s: ``UNKNOWN``, a failure.

Obligations (``<step>`` is e.g. ``settle/recheck+commit``):

* ``INIT``: a new instance satisfies the inductive invariant (WF, I5, I8).
* ``WF``, ``I5 closed-no-pending``, ``I8 bounded``: each part of the
  inductive invariant is preserved by every step (assuming all parts before).
* ``WD``: no step crashes (asks a guard, effect or result something it
  cannot answer, such as the settlement of an operation that never
  normalized one), and no step ends in the table's default or the call
  machine's default (``illegal_transition``, which the spec calls
  unreachable: a case no row covers).
* ``I1 terminal-no-exit`` (call machine): no call transition leaves a
  terminal call state, and the terminal states are exactly the non-initial
  ones (the states the guards treat as settled).
  ``I1 terminal-sticky``: a terminal call of the current generation never
  changes (state and settlement) while that generation is current.
* ``I2 fencing``: a step of an operation given a handle that is not the
  current generation's changes no call, no run state, no close reason, no
  generation counter and produces no snapshot (it may append a diagnostic).
  ``I2 fencing-turns`` (fencing covers turns, deviation D20): a locked step
  of ``begin`` given a turn token whose generation is not the counter's
  changes the same nothing and appends at most one diagnostic;
  ``I2 turn-current-commits`` checks that a ``begin`` whose token is current
  can still commit (so the guard does not simply refuse every token).
* ``I3 snapshot-immutable``: registered snapshot records never change and
  the registry only grows.
* ``I4 atomic-failure``: a step that raises changes nothing.
* ``I5 stays-closed``: a closed generation keeps its run state, close reason
  and calls until a new generation replaces it.
* ``I6 export-unchanged``, ``I6 export-provenance``, ``I6 no-foreign-read``:
  export steps change nothing; an export succeeds only for a registered
  snapshot whose closed flag is set; no step reads a foreign snapshot.
* ``I7 generation``: a step changes the counter only by a successful
  ``begin``, which adds exactly one; ``I7 begin-succeeds`` checks that a
  successful ``begin`` is possible at all (so I7 is not vacuous).
* ``ATOMIC premise``: effects that run caller code or take the lock sit only
  in unlocked phases (the premise of the atomicity argument);
  ``ATOMIC unlocked-step``: an unlocked segment changes nothing.
* ``FIRES``: every row can fire from some state satisfying the invariant
  (a row that cannot is reported ``VACUOUS``).

The script exits 0 only if every obligation is ``PROVED``.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import z3
from _model import (
    BEGIN,
    CALLER_CODE,
    CRASH,
    DEFAULT_TABLE,
    EXPORT,
    OPERATIONS,
    SCALAR_FIELDS,
    SNAPSHOT_FIELDS,
    TAKES_LOCK,
    EncodingError,
    InOperation,
    Model,
    State,
    describe_context,
    describe_state,
    read_table,
    value_name,
)

TIMEOUT_MS = 20_000


@dataclass
class Obligation:
    """Hypotheses and a goal: PROVED when the hypotheses are satisfiable and imply the goal."""

    invariant: str
    where: str
    hyps: list[z3.BoolRef]
    goal: z3.BoolRef
    explain: Callable[[z3.ModelRef], str] = field(default=lambda _m: "")
    reach: bool = False  # a reachability check: PROVED when the hypotheses are satisfiable
    small: list[z3.ArithRef] = field(default_factory=list)  # numbers a readable counterexample keeps small
    tidy: list[z3.BoolRef] = field(default_factory=list)  # facts of reachable states a readable one also satisfies


@dataclass
class Verdict:
    """The outcome of one obligation, with its counterexample or reason when it is not PROVED."""

    status: str  # PROVED | FAILED | UNKNOWN | VACUOUS
    seconds: float
    detail: str = ""


def discharge(ob: Obligation, timeout_ms: int) -> Verdict:
    """Check the hypotheses (VACUOUS if unsatisfiable), then that they imply the goal."""
    started = time.perf_counter()
    solver = z3.Solver()
    solver.set("timeout", timeout_ms)
    solver.add(*ob.hyps)
    first = solver.check()
    if ob.reach:
        status = "PROVED" if first == z3.sat else "VACUOUS" if first == z3.unsat else "UNKNOWN"
        detail = "the row can never fire from a state satisfying the invariant" if first == z3.unsat else ""
        return Verdict(status, time.perf_counter() - started, detail)
    if first == z3.unsat:
        return Verdict("VACUOUS", time.perf_counter() - started, "the hypotheses are unsatisfiable")
    if first == z3.unknown:
        return Verdict("UNKNOWN", time.perf_counter() - started, f"hypotheses: {solver.reason_unknown()}")
    solver.add(z3.Not(ob.goal))
    second = solver.check()
    seconds = time.perf_counter() - started
    if second == z3.unsat:
        return Verdict("PROVED", seconds)
    if second == z3.unknown:
        return Verdict("UNKNOWN", seconds, solver.reason_unknown())
    return Verdict("FAILED", seconds, ob.explain(readable_model(solver, ob.small, ob.tidy)))


def readable_model(solver: z3.Solver, small: list[z3.ArithRef], tidy: list[z3.BoolRef]) -> z3.ModelRef:
    """A counterexample re-solved, if possible, with small numbers and the ``tidy`` facts (for readable traces)."""
    for bound in (3, 10):
        solver.push()
        solver.add(*[z3.And(x >= -1, x <= bound) for x in small], *tidy)
        if solver.check() == z3.sat:
            found = solver.model()
            solver.pop()
            return found
        solver.pop()
    solver.check()
    return solver.model()


# --------------------------------------------------------------------------- obligations


def unchanged(pre: State, post: State, k: z3.ArithRef, j: z3.ArithRef) -> z3.BoolRef:
    """Every state component equal, the arrays at call index ``k`` and snapshot index ``j``."""
    same = [getattr(pre, f) == getattr(post, f) for f in SCALAR_FIELDS]
    same += [pre.cs[k] == post.cs[k], pre.stl[k] == post.stl[k]]
    same += [getattr(pre, f)[j] == getattr(post, f)[j] for f in SNAPSHOT_FIELDS]
    return z3.And(same)


def step_explainer(model: Model, where: InOperation) -> Callable[[z3.ModelRef], str]:
    """Render a counterexample of a step obligation: before, step + context, rows fired + outcome, after."""

    def explain(zm: z3.ModelRef) -> str:
        def num(term: z3.ExprRef) -> int:
            return int(zm.eval(term, model_completion=True).as_long())

        lines = ["  counterexample:"]
        for enc in (*where.earlier, where.step):
            witnesses = [num(w.w) for w in enc.builder.witnesses]
            indices = [num(where.k0), num(enc.ctx_in["c"]), *witnesses]
            snaps = [num(where.j0), num(enc.post.ctx["sa"])]
            fired = [rid for rid, cond in enc.fired if z3.is_true(zm.eval(cond, model_completion=True))]
            outcome = value_name(zm.eval(enc.post.out, model_completion=True))
            if enc is not where.step:
                lines.append(f"    earlier segment {enc.segment.label}: rows fired: {', '.join(fired) or '(none)'}")
                continue
            lines += [
                "    state before: " + describe_state(zm, enc.pre, indices, snaps).replace("\n", "\n      "),
                f"    step: {enc.segment.label}  context: {describe_context(zm, enc.segment.op, enc.ctx_in)}",
                f"    watching call #{num(where.k0)}, snapshot #{num(where.j0)}",
                f"    rows fired: {', '.join(fired) or '(none)'}  outcome: {outcome}",
                "    state after:  " + describe_state(zm, enc.post.s, indices, snaps).replace("\n", "\n      "),
            ]
        return "\n".join(lines)

    return explain


def step_obligations(model: Model, where: InOperation) -> Iterator[Obligation]:
    """The obligations of one step (see the module docstring), and a FIRES check per row it can fire."""
    enc = where.step
    seg = enc.segment
    label = seg.label
    pre, post, ctx = enc.pre, enc.post.s, enc.ctx_in
    k0, j0 = where.k0, where.j0
    inv_after = model.invariant(post, k0, j0)
    base = where.hyps
    explain = step_explainer(model, where)
    out = enc.post.out
    returned = z3.Or([out == model.outcome(n) for n in model.outcome_names if n.startswith("return:")] or [False])
    raised = z3.Or([out == model.outcome(n) for n in model.outcome_names if n.startswith("raise:")])
    in_range = z3.And(k0 >= 0, k0 < pre.n)
    same_calls = z3.Implies(in_range, z3.And(post.cs[k0] == pre.cs[k0], post.stl[k0] == pre.stl[k0]))

    small = [model.max_calls, model.max_diagnostics, k0, j0]
    small += [getattr(enc.pre, f) for f in ("gen", "cur", "n", "nd", "ns")]
    small += [v for v in ctx.values() if z3.is_int(v)]
    small += [model.Stl.tok(enc.pre.stl[k]) for k in range(3)]
    tidy = [fact for k in range(3) for fact in model.invariant(enc.pre, z3.IntVal(k), j0).values()]

    def ob(invariant: str, goal: z3.BoolRef, *extra: z3.BoolRef) -> Obligation:
        return Obligation(invariant, label, [*base, *extra], goal, explain, small=small, tidy=tidy)

    yield ob("WF", inv_after["WF"])
    defaults = {
        f"raise:{model.spec.default_error}",
        f"raise:{model.spec.call_default_error}",
        "raise:illegal_transition",
    }
    yield ob("WD", z3.And([out != model.outcome(CRASH), *[out != model.outcome(d) for d in defaults]]))
    yield ob("RG guarantee", z3.And(model.rely(pre, post, [k0], [j0])))
    yield ob(
        "I1 terminal-sticky",
        z3.Implies(post.gen == pre.gen, z3.And(post.cs[k0] == pre.cs[k0], post.stl[k0] == pre.stl[k0])),
        in_range,
        model.terminal(pre.cs[k0]),
    )
    if "handle" in OPERATIONS[seg.op]:
        stale = z3.Or(pre.rs == model.run(model.spec.initial_run), ctx["h"] != pre.cur)
        fenced = z3.And([getattr(post, f) == getattr(pre, f) for f in SCALAR_FIELDS if f != "nd"] + [same_calls])
        yield ob("I2 fencing", fenced, stale)
    if "turn" in OPERATIONS[seg.op] and seg.locked:  # the segment that compares the token and commits
        stale_turn = z3.And(ctx["tdef"], pre.gen != ctx["tg"])
        unmoved = [getattr(post, f) == getattr(pre, f) for f in SCALAR_FIELDS if f != "nd"]
        yield ob("I2 fencing-turns", z3.And([*unmoved, same_calls, post.nd <= pre.nd + 1]), stale_turn)
        if seg.last:
            current = [ctx["tdef"], pre.gen == ctx["tg"], returned]
            yield Obligation("I2 turn-current-commits", label, [*base, *current], z3.BoolVal(True), reach=True)
    snap_same = z3.And([getattr(post, f)[j0] == getattr(pre, f)[j0] for f in SNAPSHOT_FIELDS])
    yield ob("I3 snapshot-immutable", z3.And(post.ns >= pre.ns, z3.Implies(z3.And(j0 >= 0, j0 < pre.ns), snap_same)))
    yield ob("I4 atomic-failure", z3.Implies(raised, unchanged(pre, post, k0, j0)))
    yield ob("I5 closed-no-pending", inv_after["I5"])
    yield ob(
        "I5 stays-closed",
        z3.Implies(post.gen == pre.gen, z3.And(post.rs == pre.rs, post.cr == pre.cr, post.n == pre.n, same_calls)),
        model.closed(pre.rs),
    )
    if seg.op == EXPORT:
        yield ob("I6 export-unchanged", unchanged(pre, post, k0, j0))
        if seg.last:
            sa = enc.post.ctx["sa"]
            yield ob("I6 export-provenance", z3.And(sa >= 0, sa < pre.ns, pre.snap_closed[sa]), returned)
    yield ob("I6 no-foreign-read", z3.Not(enc.post.foreign))
    begin_ok = returned if seg.op == BEGIN else z3.BoolVal(False)
    yield ob("I7 generation", post.gen == z3.If(begin_ok, pre.gen + 1, pre.gen))
    if seg.op == BEGIN and seg.last:
        yield ob("I7 begin-succeeds", post.gen == pre.gen + 1, returned)
    yield ob("I8 bounded", inv_after["I8"])
    if not seg.locked:
        yield ob("ATOMIC unlocked-step", unchanged(pre, post, k0, j0))
    for row_id, fire in enc.fired:
        yield Obligation("FIRES", row_id, [*base, fire], z3.BoolVal(True), reach=True)


def call_machine_obligations(model: Model) -> Iterator[Obligation]:
    """I1 on the call machine itself: no exit from a terminal state; terminal = every non-initial state."""
    s = z3.Const("call-state", model.Call)
    e = z3.Const("call-event", model.Event)
    exits = z3.Or(
        [z3.And(s == model.call(t.from_state), e == model.event(t.event)) for t in model.spec.call_transitions]
        or [z3.BoolVal(False)]
    )

    def explain(zm: z3.ModelRef) -> str:
        state = value_name(zm.eval(s, model_completion=True))
        event = value_name(zm.eval(e, model_completion=True))
        targets = [t for t in model.spec.call_transitions if t.from_state == state and t.event == event]
        to = f" --> {targets[0].to} (row {targets[0].id})" if targets else ""
        return f"  counterexample: call state {state} --{event}{to}"

    yield Obligation("I1 terminal-no-exit", "call machine", [], z3.Implies(model.terminal(s), z3.Not(exits)), explain)
    yield Obligation(
        "I1 terminal-no-exit",
        "terminal = settled",
        [],
        model.terminal(s) == (s != model.pending),
        lambda zm: (
            f"  counterexample: call state {value_name(zm.eval(s, model_completion=True))} "
            "is declared terminal but is the initial state, or is settled but not declared terminal"
        ),
    )


def initial_obligation(model: Model) -> Obligation:
    s = model.fresh_state("init")
    k, j = z3.Int("init|k0"), z3.Int("init|j0")
    hyps = [model.max_calls >= 1, model.max_diagnostics >= 1, model.initial_constraints(s)]
    return Obligation(
        "INIT",
        "new instance",
        hyps,
        z3.And(list(model.invariant(s, k, j).values())),
        lambda zm: "  counterexample: " + describe_state(zm, s, [], []),
    )


def premise_verdicts(model: Model) -> Iterator[tuple[str, str, Verdict]]:
    """The structural premise of the atomicity argument (no solver needed)."""
    spec = model.spec
    problems: list[str] = []
    for row in spec.rows:
        for effect in row.effects:
            if (effect in CALLER_CODE or effect in TAKES_LOCK) and spec.locked[row.phase]:
                what = "runs caller code" if effect in CALLER_CODE else "takes the lock itself"
                problems.append(f"row {row.id}: effect {effect} {what} but phase {row.phase} is locked")
    for name, decl in spec.effects.items():
        if decl.caller_code != (name in CALLER_CODE):
            problems.append(f"effect {name}: the table says caller_code={decl.caller_code}, the encoding disagrees")
    status = "FAILED" if problems else "PROVED"
    detail = "\n".join(f"  counterexample: {p}" for p in problems)
    yield "ATOMIC premise", "structural", Verdict(status, 0.0, detail)


def all_obligations(model: Model) -> Iterator[Obligation]:
    yield initial_obligation(model)
    yield from call_machine_obligations(model)
    for seg in model.spec.all_segments():
        yield from step_obligations(model, model.encode_in_operation(seg))


# --------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--table", type=Path, default=DEFAULT_TABLE, help="the table to prove (default: %(default)s)")
    parser.add_argument("--timeout", type=float, default=TIMEOUT_MS / 1000, help="seconds per obligation (default 20)")
    parser.add_argument("--quiet", action="store_true", help="print only failures and the summary")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    try:
        model = Model(read_table(args.table))
        obligations = list(all_obligations(model))
    except EncodingError as exc:
        print(f"FAILED: the table cannot be encoded: {exc}")
        print("0 proved, 1 failed")
        return 1
    proved = failed = 0
    verdicts = ((ob.invariant, ob.where, discharge(ob, int(args.timeout * 1000))) for ob in obligations)
    for invariant, where, verdict in itertools.chain(premise_verdicts(model), verdicts):
        if verdict.status == "PROVED":
            proved += 1
            if not args.quiet:
                print(f"PROVED: {invariant} [{where}] ({verdict.seconds:.2f}s)")
            continue
        failed += 1
        print(f"{verdict.status}: {invariant} [{where}] ({verdict.seconds:.2f}s)")
        if verdict.detail:
            print(verdict.detail)
    print(f"{proved} proved, {failed} failed ({time.perf_counter() - started:.1f}s, table {args.table})")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
