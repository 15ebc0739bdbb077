"""Exhaustive bounded model check of the real ToolCallClosure: every reachable state, every action.

Theory of operation
-------------------
:mod:`_explore` enumerates, breadth first, every state the real implementation
reaches from a new instance under a finite alphabet of API calls (see its
docstring for the alphabet, the state abstraction and the symmetry reduction).
This script checks every invariant that can be observed:

* in every state (:func:`check_state`): WF (the run record agrees with the
  counter and the handle; the pending counter matches the calls; close reason
  iff closed), I1 (a call is pending iff it has no settlement, and a settled
  call's state is its settlement's status), I5 (a closed generation has no
  pending call), I8 (calls and diagnostics within their limits, every stored
  string within its byte limit);
* on every transition (:func:`check_transition`): WD (no exception other
  than the spec's errors, and never the table's default ``illegal_transition``,
  which the spec calls unreachable), I1 (a terminal call never changes while its
  generation is current; an accepted settlement settles exactly that pending
  call with exactly that settlement), I2 (an action whose handle is not, by
  identity, the current one — stale, look-alike, ``None``, or made stale by a
  nested ``begin`` — is rejected as ``stale_generation`` and changes nothing
  but, at most, one appended diagnostic; and *fencing covers turns*, deviation
  D20: a ``begin`` given a turn token is rejected as ``stale_turn``, with the
  token's generation, exactly when the token is not the counter's value at the
  commit — after any nested ``begin`` — and then changes nothing but, at most,
  one appended diagnostic; a current token commits; a value that is not a
  token raises ``turn_invalid``, and invalid calls raise their own error
  first; ``turn_token`` returns the counter and changes nothing), I3 (the snapshots the caller holds
  never change), I4 (an action that raises changes nothing), I5 (a closed
  generation keeps its state, close reason and calls), I6 (an export changes
  nothing, succeeds only for a registered closed snapshot, refuses foreign and
  open ones with the right error, and renders one item per settled call), I7
  (a successful ``begin`` adds exactly one and returns the new number;
  nothing else changes the counter).

When caller code ran a nested action, the nested action is checked as a
transition from the state before, and the rest of the outer action as a
transition from the state right after the nested one (so I4's "changes made
by nested operations are kept" is checked exactly).

With ``--faults`` it also checks I9 (a commit takes effect as one step): for
every transition whose action commits (begin, settle and its forms, close,
seal, with a current handle and no caller code) in a new *commit class* —
the run state, the operation, the number of pending calls and whether the
diagnostics are full — it re-runs the action on a clone of the world once
per opcode the action executes under the lock, raising an exception there
(:mod:`faults`), and requires the state afterwards to be exactly the state
before (the install had not run) or exactly the state the unfaulted action
reaches (it had).  ``--faults all`` does so on every committing transition.

On the first violation it prints the shortest trace (actions from a new
instance), the states before and after, and exits 1.  A table the reference's
validator refuses (``--table``) is reported and exits 2.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from _explore import (
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
    observe,
    perform,
)
from faults import run_with_fault

from tool_call_closure import Accepted, BeginResult, Rejection, TurnToken
from tool_call_closure.ecma import utf8_length
from tool_call_closure.errors import TableError
from tool_call_closure.machine.interpreter import Machine
from tool_call_closure.machine.semantics import record_of
from tool_call_closure.values import Limits


class Checks:
    """The invariant checks for one machine and one set of limits."""

    def __init__(self, machine: Machine, limits: Limits, bounds: Bounds) -> None:
        table = machine.table
        self.limits = limits
        self.bounds = bounds
        self.pending = table.initial_call_state
        self.closed = table.closed_run_states
        self.builtin_codes = {"error", "cancelled", *table.texts.values()}  # default codes are exempt
        self.defaults = {table.default_error, table.call_default_error, "illegal_transition"}

    # ---- states

    def check_state(self, obs: Observation) -> str | None:
        limits = self.limits
        if obs.state == "none":
            if obs.generation != 0 or obs.calls:
                return "WF: no generation has begun, yet the counter or the calls are set"
        elif obs.handle is None or not obs.generation == obs.run_generation == obs.handle.generation:
            return "WF: the run's generation, its handle's and the counter disagree"
        pending = sum(call.state == self.pending for call in obs.calls)
        if obs.pending != pending:
            return f"WF: the run's pending counter is {obs.pending} but {pending} calls are pending"
        closed = obs.state in self.closed
        if closed != (obs.close_reason is not None):
            return "WF: a close reason is present exactly when the generation is closed"
        for call in obs.calls:
            if (call.state == self.pending) != (call.settlement is None):
                return f"I1: call {call.id} is {call.state} with settlement {call.settlement}"
            if call.settlement is not None and call.settlement.status != call.state:
                return f"I1: call {call.id} is {call.state} but its settlement says {call.settlement.status}"
        if closed and pending:
            return f"I5: generation {obs.generation} is {obs.state} with {pending} pending call(s)"
        if len(obs.calls) > limits.max_calls or len(obs.diagnostics) > limits.max_diagnostics:
            return f"I8: {len(obs.calls)} calls / {len(obs.diagnostics)} diagnostics exceed the limits"
        return self._check_strings(obs)

    def _check_strings(self, obs: Observation) -> str | None:
        limits = self.limits
        texts: list[tuple[str, str | None, int]] = []
        for call in obs.calls:
            texts += [("id", call.id, limits.max_id_bytes), ("name", call.name, limits.max_name_bytes)]
            if call.settlement is not None:
                s = call.settlement
                text = s.content if isinstance(s.content, str) else None  # parts: bounded when made (D22)
                texts += [("content", text, limits.max_result_bytes)]
                texts += [("message", s.message, limits.max_message_bytes)]
                if s.code not in self.builtin_codes:
                    texts.append(("code", s.code, limits.max_code_bytes))
        if obs.close_reason is not None:
            texts.append(("close message", obs.close_reason.message, limits.max_message_bytes))
        for what, text, limit in texts:
            if text is not None and utf8_length(text) > limit:
                return f"I8: a stored {what} has {utf8_length(text)} bytes, over its limit {limit}"
        return None

    # ---- transitions

    def check_transition(
        self, world: World, before: Observation, action: Action, after: Observation, outcome: Outcome
    ) -> str | None:
        result, error = outcome.result, outcome.error
        if error is not None and error_code(error).startswith("crash:"):
            return f"WD: {action.label} crashed: {error!r}"
        if error is not None and error_code(error) in self.defaults:
            return f"WD: {action.label} reached the table's default ({error}): a case no row covers"
        same_generation = after.generation == before.generation
        for check in (
            self._i1(before, after, result, action, same_generation),
            self._i2(before, after, outcome, action),
            self._i2_turns(before, after, outcome, action),
            self._i3(before),
            self._i4(before, after, error),
            self._i5(before, after, same_generation),
            self._i6(world, before, after, outcome, action),
            self._i7(before, after, result, action),
        ):
            if check is not None:
                return check
        return None

    def _i1(
        self, before: Observation, after: Observation, result: object, action: Action, same_generation: bool
    ) -> str | None:
        if same_generation:
            if [c.id for c in after.calls] != [c.id for c in before.calls]:
                return "I1: the calls of the current generation changed"
            for old, new in zip(before.calls, after.calls, strict=True):
                if old.state != self.pending and new != old:
                    return f"I1: terminal call {old.id} changed from {old.state} to {new.state}"
        if isinstance(result, Accepted):
            position = next((i for i, c in enumerate(before.calls) if c.id == action.call_id), None)
            if position is None or before.calls[position].state != self.pending or not same_generation:
                return f"I1: {action.label} was accepted for a call that was not pending"
            if after.calls[position].settlement != result.settlement:
                return f"I1: {action.label} was accepted but the call does not hold that settlement"
        return None

    def _i2(self, before: Observation, after: Observation, outcome: Outcome, action: Action) -> str | None:
        if action.op not in ("settle", "close", "seal"):
            return None
        if before.handle is not None and outcome.handle is before.handle:
            return None  # the current handle
        result = outcome.result
        if outcome.error is not None and action.call_id == "":
            return None  # an invalid call id raises whatever the handle (the spec's order); I4 checks it
        if not (isinstance(result, Rejection) and result.reason == "stale_generation"):
            return f"I2: {action.label} was not rejected as stale_generation (result: {result!r})"
        kept = before.diagnostics == after.diagnostics[: len(before.diagnostics)]
        if not kept or len(after.diagnostics) - len(before.diagnostics) > 1:
            return f"I2: {action.label} did more than append one diagnostic"
        unchanged = (before.generation, before.state, before.calls, before.close_reason, before.handle)
        if (after.generation, after.state, after.calls, after.close_reason, after.handle) != unchanged:
            return f"I2: {action.label} changed the instance's state"
        return None

    def _i2_turns(self, before: Observation, after: Observation, outcome: Outcome, action: Action) -> str | None:
        """Fencing covers turns (D20): a stale token's begin is rejected and changes nothing but one diagnostic."""
        result, error = outcome.result, outcome.error
        if action.op == "turn_token":
            if result != TurnToken(before.generation) or after != before:
                return f"I2: {action.label} returned {result!r} at generation {before.generation}, or changed the state"
            return None
        if action.op != "begin" or action.turn is None:
            return None
        token = outcome.turn
        list_error = call_lists(self.bounds)[action.arg or ""][1]
        if type(token) is not TurnToken or list_error is not None:
            expected = "turn_invalid" if type(token) is not TurnToken else list_error
            if error is None or error_code(error) != expected:
                return f"I2: {action.label} did not raise {expected} (result: {result!r}, error: {error!r})"
            return None  # I4 checks that nothing changed
        if token.generation == before.generation:  # current when the lock is taken: the compare-and-set commits
            if not isinstance(result, BeginResult):
                return f"I2: {action.label} had a current token but did not begin (result: {result!r})"
            return None
        stale = isinstance(result, Rejection) and result.reason == "stale_turn"
        if not stale or result.generation != (token.generation or None):
            return f"I2: {action.label} had a stale token but was not rejected as stale_turn (result: {result!r})"
        kept = before.diagnostics == after.diagnostics[: len(before.diagnostics)]
        if not kept or len(after.diagnostics) - len(before.diagnostics) > 1:
            return f"I2: {action.label} did more than append one diagnostic"
        unchanged = (before.generation, before.state, before.calls, before.close_reason, before.handle)
        if (after.generation, after.state, after.calls, after.close_reason, after.handle) != unchanged:
            return f"I2: {action.label} changed the instance's state: a stale turn superseded or began"
        return None

    def _i3(self, before: Observation) -> str | None:
        if before.held_copies and before.held != before.held_copies:  # copies are taken once per state
            return "I3: a snapshot the caller holds changed"
        return None

    def _i4(self, before: Observation, after: Observation, error: BaseException | None) -> str | None:
        if error is not None and after != before:
            return f"I4: the action raised {error_code(error)} but changed the state"
        return None

    def _i5(self, before: Observation, after: Observation, same_generation: bool) -> str | None:
        if before.state in self.closed and same_generation:
            now = (after.state, after.close_reason, after.calls)
            if now != (before.state, before.close_reason, before.calls):
                return f"I5: closed generation {before.generation} changed"
        return None

    def _i6(
        self, world: World, before: Observation, after: Observation, outcome: Outcome, action: Action
    ) -> str | None:
        if action.op != "export":
            return None
        if after != before:
            return f"I6: {action.label} changed the state"
        arg = world.snapshot_arg(action.arg or "")
        if arg is None:  # the default: a fresh snapshot of the current generation (none before the first begin)
            registered = before.state != "none"
            closed = before.state in self.closed
            settled = sum(c.settlement is not None for c in before.calls)
        else:
            registered = record_of(world.closure, arg) is not None
            closed = arg.closed
            settled = sum(c.settlement is not None for c in arg.calls)
        if outcome.error is None:
            if not (registered and closed):
                return f"I6: {action.label} exported a snapshot that is not a registered closed one"
            if len(outcome.result) != settled:
                return f"I6: {action.label} rendered {len(outcome.result)} items for {settled} settled calls"
            return None
        expected = "snapshot_foreign" if not registered else "snapshot_open" if not closed else "(no error)"
        if error_code(outcome.error) != expected:
            return f"I6: {action.label} raised {error_code(outcome.error)}, expected {expected}"
        return None

    def _i7(self, before: Observation, after: Observation, result: object, action: Action) -> str | None:
        if isinstance(result, BeginResult):
            if not after.generation == before.generation + 1 == result.generation:
                return f"I7: {action.label} succeeded but the generation went {before.generation} -> {after.generation}"
        elif after.generation != before.generation:
            return f"I7: {action.label} changed the generation {before.generation} -> {after.generation}"
        return None


_COMMITTING: frozenset[str] = frozenset({"begin", "settle", "close", "seal"})


class FaultSweeps:
    """I9 on the transitions of the search: a fault at every point of every commit (see the module docstring)."""

    def __init__(self, bounds: Bounds, every: bool) -> None:
        self.bounds = bounds
        self.every = every
        self.seen: set[tuple[object, ...]] = set()
        self.sweeps = 0
        self.faults = 0

    def check(self, world: World, before: Observation, action: Action, after: Observation) -> str | None:
        if action.op not in _COMMITTING or action.nested is not None or action.handle not in (None, "current"):
            return None
        pending = sum(call.settlement is None for call in before.calls)
        # A stale turn token commits a rejection (its one diagnostic): a class of its own.  A current one commits
        # exactly as the same begin without a token (after one more guard, a read), so it shares that class; its
        # faults are swept by tests/test_reliability.py ("turn-guarded begin") and the stateful machine.
        turn = action.turn if action.turn == "stale" else None
        commit_class = (before.state, action.method, action.arg, turn, pending, len(before.diagnostics))
        if not self.every and commit_class in self.seen:
            return None
        self.seen.add(commit_class)
        self.sweeps += 1
        for point in itertools.count(1):
            twin = world.clone()
            run = run_with_fault(twin.closure, _performing(twin, action, self.bounds), point)
            if not run.fired:
                return None
            self.faults += 1
            now = observe(twin)
            swallowed = run.error is None  # raised inside a weakref callback: the action completed
            if not run.installed and not swallowed:
                if now != before:
                    return f"I9: {action.label} faulted at point {point} before its install but changed the state"
            elif _committed(now) != _committed(after):
                return f"I9: {action.label} faulted at point {point} after its install: not the unfaulted state"
            if twin.closure._lock._is_owned():
                return f"I9: {action.label} faulted at point {point} left the lock held"
        return None


def _performing(world: World, action: Action, bounds: Bounds) -> Callable[[], object]:
    return lambda: perform(world, action, bounds)


def _committed(obs: Observation) -> tuple[object, ...]:
    """The committed state, without the handle (compared by identity, and a clean begin makes a new one)."""
    return (obs.generation, obs.state, obs.calls, obs.close_reason, obs.diagnostics, obs.run_generation)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if "--durable" in arguments:  # the durable layer's check: crashes, restores, tokens (proofs/durable_bfs.py)
        import durable_bfs

        return durable_bfs.main([a for a in arguments if a != "--durable"])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog="--durable: proofs/durable_bfs.py")
    parser.add_argument("--calls", type=int, default=3, help="ids per generation, and max_calls (default 3)")
    parser.add_argument("--generations", type=int, default=3, help="successful begins to explore (default 3)")
    parser.add_argument("--max-diagnostics", type=int, default=2, help="the instance's max_diagnostics (default 2)")
    parser.add_argument("--no-symmetry", action="store_true", help="do not identify states that differ by id names")
    parser.add_argument("--replay", action="store_true", help="replay paths from new instances instead of cloning")
    parser.add_argument("--table", type=Path, help="model-check this table instead of the shipped one")
    parser.add_argument(
        "--faults",
        nargs="?",
        const="classes",
        choices=("classes", "all"),
        help="also check I9: inject a fault at every point of each commit class (or of every commit, 'all')",
    )
    args = parser.parse_args(arguments)
    bounds = Bounds(
        calls=args.calls,
        generations=args.generations,
        max_diagnostics=args.max_diagnostics,
        symmetry=not args.no_symmetry,
        replay=args.replay,
    )
    try:
        machine = machine_for(args.table)
    except TableError as exc:
        print(f"REFUSED: the reference's validator refuses this table: {exc}")
        return 2
    checks = Checks(machine, fresh_world(machine, bounds).closure.limits, bounds)
    sweeps = FaultSweeps(bounds, every=args.faults == "all") if args.faults else None

    def visit(
        world: World, before: Observation, action: Action, _after_world: World, after: Observation, outcome: Outcome
    ) -> str | None:
        if outcome.nested is None:
            problem = checks.check_transition(world, before, action, after, outcome)
            if problem is None and sweeps is not None:
                problem = sweeps.check(world, before, action, after)
            return problem
        # Caller code ran a nested action: check it from the state before, then the rest of the outer action.
        nested_action, nested_outcome, middle = outcome.nested
        return checks.check_transition(world, before, nested_action, middle, nested_outcome) or (
            checks.check_transition(world, middle, action, after, outcome)
        )

    stats, violation = explore(machine, bounds, visit, checks.check_state, trace=True)
    rows = [r.id for r in machine.table.transitions]
    missing = [r for r in rows if r not in stats.rows]
    print(
        f"explored {stats.states} states, checked {stats.transitions} transitions, depth {stats.depth}, "
        f"{stats.seconds:.1f}s (calls<={bounds.calls}, generations<={bounds.generations}, "
        f"max_diagnostics={bounds.max_diagnostics}, symmetry={'on' if bounds.symmetry else 'off'}, "
        f"{'replay' if bounds.replay else 'clone'})"
    )
    if violation is not None:
        for line in iter_violation_lines(violation):
            print(line)
        return 1
    print(
        f"rows fired: {len(rows) - len(missing)}/{len(rows)}" + (f" (never: {', '.join(missing)})" if missing else "")
    )
    if sweeps is not None:
        print(f"I9: {sweeps.faults} faults injected at every point of {sweeps.sweeps} commits")
    print(f"OK: I1-I8{' and I9' if sweeps is not None else ''} held in every state and on every transition")
    return 0


if __name__ == "__main__":
    sys.exit(main())
