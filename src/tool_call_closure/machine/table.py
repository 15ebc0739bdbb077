"""Load and validate the transition table (``spec/machine.json``).

Theory of operation
-------------------
The table is portable data: any language can load it with its standard JSON
parser.  This module turns it into frozen Python objects and refuses a table
that could not be executed faithfully.  It knows nothing about *what* guards
and effects do; :mod:`.semantics` gives the names their code, and
:mod:`.compiler` and :mod:`.interpreter` run the rows.

The validator refuses, each with a :class:`~tool_call_closure.errors.TableError` that names the
offending part:

* structure: a missing or mistyped field, a duplicate id;
* unknown names: a row naming a state, operation, phase, guard, effect,
  reason, error, result or observed-status kind the table does not declare;
* unreachable states: a run state or call state that no row can reach from
  the initial state;
* exits from terminal states: a call transition out of a terminal call
  state, or a row that rewrites a *closed* generation (closing is for good;
  only ``start_generation`` leaves a closed state, by installing a new
  generation);
* overlapping guards: two rows of one (operation, phase, state) with the same
  guard, or any row after an unguarded one (it could never fire);
* missing pairs: a (run state, operation) pair that no unguarded terminating
  row covers and that is not listed in ``defaulted``.

The table ships inside the wheel as ``tool_call_closure/_spec/machine.json``;
in a source checkout the loader falls back to ``spec/machine.json``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

from tool_call_closure.errors import TableError
from tool_call_closure.machine.table_reading import (
    bool_at,
    catalogue_at,
    fail,
    field,
    ids_at,
    known,
    list_at,
    obj_at,
    obj_list,
    one_of,
    positive_int,
    str_at,
)
from tool_call_closure.machine.table_types import (
    CallTransition,
    EffectSpec,
    ErrorSpec,
    FlagSpec,
    OperationSpec,
    OptionSpec,
    Row,
    RowResult,
    Table,
)
from tool_call_closure.spec_files import SpecFileMissingError, machine_text, spec_path

__all__ = [
    "TABLE",
    "TABLE_TEXT",
    "CallTransition",
    "EffectSpec",
    "ErrorSpec",
    "FlagSpec",
    "OperationSpec",
    "OptionSpec",
    "Row",
    "RowResult",
    "Table",
    "load_table",
    "parse_table",
    "table_path",
]

FORMAT: Final = "tool-call-closure.machine/1"


# --------------------------------------------------------------------------- parse + validate


def parse_table(raw: Any) -> Table:
    """Validate the decoded JSON of a table and return it as a :class:`Table`.

    Raises :class:`~tool_call_closure.errors.TableError` naming the first problem found.
    The sections are read in the order the file declares them, each by a
    function of its own; the checks across sections come last.
    """
    top = obj_at(raw, "table")
    if top.get("format") != FORMAT:
        raise fail("format", f"must be {FORMAT!r}")
    version = str_at(field(top, "version", "table"), "version")
    options, flags = _parse_options(top)
    texts_raw = obj_at(field(top, "texts", "table"), "texts")
    texts = MappingProxyType({k: str_at(v, f"texts.{k}") for k, v in texts_raw.items()})
    run_states, initial_run, closed = _parse_states(top, "run_states", "closed", "closed")
    call_states, initial_call, terminal = _parse_states(top, "call_states", "terminal", "terminal")
    call_events, call_event_status = _parse_call_events(top, call_states)
    call_transitions = _parse_call_transitions(top, call_states, call_events, call_event_status, terminal)
    phase_list = obj_list(top, "phases")
    ids_at(phase_list, "phases")
    phases = MappingProxyType(
        {p["id"]: bool_at(field(p, "locked", f"phases.{p['id']}"), f"phases.{p['id']}.locked") for p in phase_list}
    )
    operations = _parse_operations(top, phases, texts)
    guards = tuple(ids_at(obj_list(top, "guards"), "guards"))
    results = tuple(ids_at(obj_list(top, "results"), "results"))
    reasons = tuple(ids_at(obj_list(top, "reasons"), "reasons"))
    observed = tuple(ids_at(obj_list(top, "observed"), "observed"))
    errors = _parse_errors(top)
    effects = _parse_effects(top, run_states, call_events, errors)
    default_error = _default_raise(top, "default", errors)
    call_default_error = _default_raise(top, "call_default", errors)
    defaulted = _parse_defaulted(top, run_states, operations)
    rows = tuple(
        _parse_row(
            index, r, run_states, initial_run, closed, operations, guards, effects, results, reasons, observed, errors
        )
        for index, r in enumerate(obj_list(top, "transitions"))
    )
    ids_at([{"id": r.id} for r in rows], "transitions")
    invariants = _parse_invariants(top)
    table = Table(
        version=version,
        options=options,
        texts=texts,
        run_states=run_states,
        initial_run_state=initial_run,
        closed_run_states=closed,
        call_states=call_states,
        initial_call_state=initial_call,
        terminal_call_states=terminal,
        call_events=call_events,
        call_event_status=call_event_status,
        call_transitions=call_transitions,
        phases=phases,
        operations=MappingProxyType(operations),
        guards=guards,
        effects=MappingProxyType(effects),
        results=results,
        reasons=reasons,
        observed=observed,
        errors=errors,
        default_error=default_error,
        call_default_error=call_default_error,
        defaulted=defaulted,
        transitions=rows,
        invariants=invariants,
        flags=flags,
    )
    _check_overlaps(table)
    _check_phases(table)
    _check_reachability(table)
    _check_totality(table)
    return table


def _parse_invariants(top: Mapping[str, Any]) -> Mapping[str, str]:
    inv_list = obj_list(top, "invariants")
    ids_at(inv_list, "invariants")
    return MappingProxyType(
        {
            i["id"]: str_at(field(i, "description", f"invariants.{i['id']}"), f"invariants.{i['id']}.description")
            for i in inv_list
        }
    )


def _parse_options(top: Mapping[str, Any]) -> tuple[tuple[OptionSpec, ...], tuple[FlagSpec, ...]]:
    """The limits and the flags (``"kind": "flag"``, deviation D26), each in the table's order."""
    limits: list[OptionSpec] = []
    flags: list[FlagSpec] = []
    raw = obj_list(top, "options")
    for i, o in enumerate(raw):
        where = f"options[{i}]"
        identifier = str_at(field(o, "id", where), f"{where}.id")
        python = str_at(field(o, "python", where), f"{where}.python")
        kind = one_of(o.get("kind", "limit"), ("limit", "flag"), f"{where}.kind")
        default = field(o, "default", where)
        if kind == "flag":
            if type(default) is not bool:
                raise fail(f"{where}.default", "must be true or false")
            flags.append(FlagSpec(id=identifier, python=python, default=default))
        else:
            limits.append(OptionSpec(id=identifier, python=python, default=positive_int(default, f"{where}.default")))
    ids_at(raw, "options")
    if flags and raw[-len(flags) :] != [o for o in raw if o.get("kind") == "flag"]:
        raise fail("options", "every limit must come before the flags")
    return tuple(limits), tuple(flags)


def _parse_states(
    top: Mapping[str, Any], key: str, flag: str, what: str
) -> tuple[tuple[str, ...], str, frozenset[str]]:
    """``run_states`` or ``call_states``: the ids, the one initial state, and those marked ``flag`` (never it)."""
    listed = obj_list(top, key)
    states = tuple(ids_at(listed, key))
    initial = [s["id"] for s in listed if bool_at(s.get("initial", False), f"{key}.{s['id']}.initial")]
    if len(initial) != 1:
        raise fail(key, "exactly one state must be initial")
    flagged = frozenset(s["id"] for s in listed if bool_at(s.get(flag, False), f"{key}.{s['id']}.{flag}"))
    if initial[0] in flagged:
        raise fail(key, f"the initial state cannot be {what}")
    return states, initial[0], flagged


def _parse_call_events(
    top: Mapping[str, Any], call_states: tuple[str, ...]
) -> tuple[Mapping[str, str], Mapping[str, str]]:
    """Each call event's provenance, and the call state (status) it settles a call as."""
    event_list = obj_list(top, "call_events")
    ids_at(event_list, "call_events")
    call_events = MappingProxyType(
        {
            e["id"]: one_of(e.get("provenance"), ("reported", "synthetic"), f"call_events.{e['id']}.provenance")
            for e in event_list
        }
    )
    call_event_status = MappingProxyType(
        {
            e["id"]: known(
                str_at(e.get("status"), f"call_events.{e['id']}.status"),
                call_states,
                f"call_events.{e['id']}.status",
                "call state",
            )
            for e in event_list
        }
    )
    return call_events, call_event_status


def _parse_call_transitions(
    top: Mapping[str, Any],
    call_states: tuple[str, ...],
    call_events: Mapping[str, str],
    call_event_status: Mapping[str, str],
    terminal: frozenset[str],
) -> tuple[CallTransition, ...]:
    call_transitions: list[CallTransition] = []
    ct_list = obj_list(top, "call_transitions")
    ids_at(ct_list, "call_transitions")
    seen_pairs: set[tuple[str, str]] = set()
    for t in ct_list:
        where = f"call_transitions.{t['id']}"
        src = known(str_at(field(t, "from", where), f"{where}.from"), call_states, f"{where}.from", "call state")
        event = known(str_at(field(t, "event", where), f"{where}.event"), call_events, f"{where}.event", "call event")
        dst = known(str_at(field(t, "to", where), f"{where}.to"), call_states, f"{where}.to", "call state")
        if src in terminal:
            raise fail(where, f"exit from terminal call state {src!r}")
        if dst != call_event_status[event]:
            # A call's state is its settlement's status: exports decide is_error from the state.
            raise fail(where, f"event {event!r} settles a call as {call_event_status[event]!r} but moves it to {dst!r}")
        if (src, event) in seen_pairs:
            raise fail(where, f"overlaps another row for ({src}, {event})")
        seen_pairs.add((src, event))
        call_transitions.append(CallTransition(t["id"], src, event, dst))
    return tuple(call_transitions)


def _parse_operations(
    top: Mapping[str, Any], phases: Mapping[str, bool], texts: Mapping[str, str]
) -> dict[str, OperationSpec]:
    op_list = obj_list(top, "operations")
    ids_at(op_list, "operations")
    operations: dict[str, OperationSpec] = {}
    for o in op_list:
        where = f"operations.{o['id']}"
        op_phases = tuple(
            known(str_at(p, f"{where}.phases[{j}]"), phases, f"{where}.phases[{j}]", "phase")
            for j, p in enumerate(list_at(field(o, "phases", where), f"{where}.phases"))
        )
        if list(op_phases) != sorted(op_phases, key=list(phases).index) or len(set(op_phases)) != len(op_phases):
            raise fail(where, "phases must be distinct and in the order the phases list declares")
        methods = tuple(
            _method(m, f"{where}.methods[{j}]", texts)
            for j, m in enumerate(list_at(field(o, "methods", where), f"{where}.methods"))
        )
        operations[o["id"]] = OperationSpec(o["id"], op_phases, methods)
    return operations


def _parse_errors(top: Mapping[str, Any]) -> Mapping[str, ErrorSpec]:
    err_list = obj_list(top, "errors")
    ids_at(err_list, "errors", key="code")
    return MappingProxyType(
        {
            e["code"]: ErrorSpec(
                code=e["code"],
                kind=one_of(e.get("kind"), ("TypeError", "RangeError"), f"errors.{e['code']}.kind"),
                message=str_at(field(e, "message", f"errors.{e['code']}"), f"errors.{e['code']}.message"),
                match=one_of(e.get("match", "exact"), ("exact", "prefix"), f"errors.{e['code']}.match"),
            )
            for e in err_list
        }
    )


def _parse_effects(
    top: Mapping[str, Any],
    run_states: tuple[str, ...],
    call_events: Mapping[str, str],
    errors: Mapping[str, ErrorSpec],
) -> dict[str, EffectSpec]:
    eff_list = obj_list(top, "effects")
    ids_at(eff_list, "effects")
    effects: dict[str, EffectSpec] = {}
    for e in eff_list:
        where = f"effects.{e['id']}"
        run_to = e.get("run_to")
        if run_to is not None:
            known(str_at(run_to, f"{where}.run_to"), run_states, f"{where}.run_to", "run state")
        call_event = e.get("call_event")
        if call_event is not None:
            _check_event_pattern(str_at(call_event, f"{where}.call_event"), call_events, f"{where}.call_event")
        effects[e["id"]] = EffectSpec(
            id=e["id"],
            caller_code=bool_at(field(e, "caller_code", where), f"{where}.caller_code"),
            runs_operation=bool_at(e.get("runs_operation", False), f"{where}.runs_operation"),
            writes=one_of(e.get("writes", "none"), ("current_run", "new_run", "none"), f"{where}.writes"),
            run_to=run_to,
            call_event=call_event,
            errors=tuple(
                known(str_at(x, f"{where}.errors[{j}]"), errors, f"{where}.errors[{j}]", "error")
                for j, x in enumerate(list_at(e.get("errors", []), f"{where}.errors"))
            ),
        )
    return effects


def _default_raise(top: Mapping[str, Any], key: str, errors: Mapping[str, ErrorSpec]) -> str:
    """``default`` or ``call_default``: the error an operation (or a call event) with no row raises."""
    default = obj_at(field(top, key, "table"), key)
    return known(str_at(field(default, "raise", key), f"{key}.raise"), errors, f"{key}.raise", "error")


def _parse_defaulted(
    top: Mapping[str, Any], run_states: tuple[str, ...], operations: Mapping[str, OperationSpec]
) -> frozenset[tuple[str, str]]:
    defaulted: set[tuple[str, str]] = set()
    for i, pair in enumerate(list_at(top.get("defaulted", []), "defaulted")):
        p = obj_at(pair, f"defaulted[{i}]")
        state = str_at(field(p, "state", f"defaulted[{i}]"), f"defaulted[{i}].state")
        op = str_at(field(p, "op", f"defaulted[{i}]"), f"defaulted[{i}].op")
        known(state, run_states, f"defaulted[{i}].state", "run state")
        known(op, operations, f"defaulted[{i}].op", "operation")
        defaulted.add((state, op))
    return frozenset(defaulted)


def _method(value: Any, where: str, texts: Mapping[str, str]) -> Mapping[str, str]:
    # A method entry names the Python method and the protocol method of one operation form;
    # its other keys (status, default_code, format) are read by the semantics and the server.
    method = obj_at(value, where)
    for key in ("python", "protocol"):
        field(method, key, where)
    checked = MappingProxyType({k: str_at(v, f"{where}.{k}") for k, v in method.items()})
    if "default_code" in checked:
        known(checked["default_code"], texts, f"{where}.default_code", "text")
    return checked


def _check_event_pattern(pattern: str, events: Mapping[str, str], where: str) -> None:
    # "report_<status>" names the family report_success / report_error / report_cancelled.
    if "<status>" in pattern:
        if not any(e.startswith(pattern.replace("<status>", "")) for e in events):
            raise fail(where, f"call_event {pattern!r} matches no call event")
    elif pattern not in events:
        raise fail(where, f"unknown call event {pattern!r}")


def _row_targets(r: Mapping[str, Any], where: str, run_states: tuple[str, ...]) -> tuple[tuple[str, ...], str | None]:
    """A row's target: none (unchanged), one state, or several with the rule that picks one (``to_by``)."""
    raw_to = r.get("to")
    if raw_to is None:
        to: tuple[str, ...] = ()
    elif isinstance(raw_to, str):
        to = (known(raw_to, run_states, f"{where}.to", "run state"),)
    else:
        to = tuple(
            known(str_at(s, f"{where}.to[{j}]"), run_states, f"{where}.to[{j}]", "run state")
            for j, s in enumerate(list_at(raw_to, f"{where}.to"))
        )
        if len(to) < 2:
            raise fail(where, "a list of targets needs at least two states (use a string for one)")
    to_by = r.get("to_by")
    if (len(to) > 1) != (to_by is not None):
        raise fail(where, "to_by is required exactly when to lists several states")
    if to_by is not None:
        str_at(to_by, f"{where}.to_by")
    return to, to_by


def _check_row_writes(
    where: str,
    row_effects: tuple[str, ...],
    effects: Mapping[str, EffectSpec],
    from_states: tuple[str, ...],
    moves: bool,
    initial: str,
    closed: frozenset[str],
) -> None:
    """Refuse a row that writes a generation that is not there, or leaves a closed state without a new one."""
    writes = {effects[e].writes for e in row_effects}
    if "current_run" in writes and any(s in closed or s == initial for s in from_states):
        bad = next(s for s in from_states if s in closed or s == initial)
        raise fail(where, f"rewrites the current generation in state {bad!r} (there is none, or it is closed for good)")
    if moves and "new_run" not in writes and any(s in closed for s in from_states):
        bad = next(s for s in from_states if s in closed)
        raise fail(where, f"exit from closed state {bad!r} without start_generation")
    closing = [i for i, e in enumerate(row_effects) if effects[e].run_to is not None]
    if moves and closing and not any(effects[e].writes == "new_run" for e in row_effects[closing[-1] + 1 :]):
        closer = row_effects[closing[-1]]
        raise fail(where, f"moves the generation {closer!r} closed (exit from a closed state without start_generation)")


def _row_result(
    raw_result: Any,
    where: str,
    reasons: tuple[str, ...],
    observed: tuple[str, ...],
    errors: Mapping[str, ErrorSpec],
    results: tuple[str, ...],
) -> RowResult | None:
    """What a firing row ends the operation with: a rejection, an error raised, a result returned, or nothing."""
    result: RowResult | None = None
    if raw_result is not None:
        res = obj_at(raw_result, f"{where}.result")
        kinds = [k for k in ("reject", "raise", "return") if k in res]
        if len(kinds) != 1:
            raise fail(where, "result must have exactly one of reject, raise, return")
        kind = kinds[0]
        name = str_at(res[kind], f"{where}.result.{kind}")
        if kind == "reject":
            known(name, reasons, f"{where}.result.reject", "reason")
            call_id = one_of(res.get("call_id"), ("argument", "none"), f"{where}.result.call_id")
            obs = known(
                str_at(res.get("observed"), f"{where}.result.observed"),
                observed,
                f"{where}.result.observed",
                "observed kind",
            )
            result = RowResult(kind, name, call_id, obs)
        elif kind == "raise":
            result = RowResult(kind, known(name, errors, f"{where}.result.raise", "error"))
        else:
            result = RowResult(kind, known(name, results, f"{where}.result.return", "result"))
    return result


def _parse_row(
    index: int,
    r: Mapping[str, Any],
    run_states: tuple[str, ...],
    initial: str,
    closed: frozenset[str],
    operations: Mapping[str, OperationSpec],
    guards: tuple[str, ...],
    effects: Mapping[str, EffectSpec],
    results: tuple[str, ...],
    reasons: tuple[str, ...],
    observed: tuple[str, ...],
    errors: Mapping[str, ErrorSpec],
) -> Row:
    rid = str_at(field(r, "id", f"transitions[{index}]"), f"transitions[{index}].id")
    where = f"transitions.{rid}"
    op = known(str_at(field(r, "op", where), f"{where}.op"), operations, f"{where}.op", "operation")
    phase = str_at(field(r, "phase", where), f"{where}.phase")
    if phase not in operations[op].phases:
        raise fail(f"{where}.phase", f"unknown phase {phase!r} for operation {op!r}")
    raw_from = field(r, "from", where)
    if raw_from == "*":
        from_states = run_states
    else:
        from_states = tuple(
            known(str_at(s, f"{where}.from[{j}]"), run_states, f"{where}.from[{j}]", "run state")
            for j, s in enumerate(list_at(raw_from, f"{where}.from"))
        )
        if not from_states or len(set(from_states)) != len(from_states):
            raise fail(f"{where}.from", "must list one or more distinct states")
    guard = r.get("guard")
    if guard is not None:
        known(str_at(guard, f"{where}.guard"), guards, f"{where}.guard", "guard")
    row_effects = tuple(
        known(str_at(e, f"{where}.effects[{j}]"), effects, f"{where}.effects[{j}]", "effect")
        for j, e in enumerate(list_at(r.get("effects", []), f"{where}.effects"))
    )
    to, to_by = _row_targets(r, where, run_states)

    _check_row_writes(where, row_effects, effects, from_states, bool(to), initial, closed)

    result = _row_result(r.get("result"), where, reasons, observed, errors, results)
    if result is None and to:
        raise fail(where, "a row that moves the state must end the operation (give it a result)")
    return Row(
        id=rid,
        op=op,
        phase=phase,
        from_states=from_states,
        guard=guard,
        effects=row_effects,
        to=to,
        to_by=to_by,
        result=result,
        catalogue=catalogue_at(r.get("catalogue"), f"{where}.catalogue"),
    )


def _check_overlaps(table: Table) -> None:
    for op_id, op in table.operations.items():
        for phase in op.phases:
            for state in table.run_states:
                rows = table.rows_for(op_id, phase, state)
                guards_seen: set[str] = set()
                for index, row in enumerate(rows):
                    if row.guard is None:
                        if index != len(rows) - 1:
                            shadowed = rows[index + 1].id
                            raise fail(
                                f"transitions.{shadowed}",
                                f"can never fire in state {state!r}: row {row.id!r} before it has no guard",
                            )
                    elif row.guard in guards_seen:
                        raise fail(
                            f"transitions.{row.id}",
                            f"guard {row.guard!r} overlaps an earlier row of ({op_id}, {phase}, {state})",
                        )
                    else:
                        guards_seen.add(row.guard)


def covering_row(table: Table, state: str, op: str) -> Row | None:
    """The unguarded row that ends ``op`` when started in ``state`` and nothing else changes it."""
    for phase in table.operations[op].phases:
        for row in table.rows_for(op, phase, state):
            if row.guard is None and row.result is not None:
                return row
    return None


def _check_phases(table: Table) -> None:
    """Caller code and nested operations run only in unlocked phases; unlocked phases change no state."""
    for row in table.transitions:
        locked = table.phases[row.phase]
        for name in row.effects:
            effect = table.effects[name]
            if locked and (effect.caller_code or effect.runs_operation):
                what = "runs caller code" if effect.caller_code else "runs an operation of its own"
                raise fail(f"transitions.{row.id}", f"effect {name!r} {what} but phase {row.phase!r} holds the lock")
            if not locked and effect.writes != "none":
                raise fail(f"transitions.{row.id}", f"effect {name!r} changes state in unlocked phase {row.phase!r}")
        if not locked and (row.to or (row.result is not None and row.result.kind == "reject")):
            raise fail(f"transitions.{row.id}", f"unlocked phase {row.phase!r} cannot move the state or reject")
        if not locked and (row.guard is not None or set(row.from_states) != set(table.run_states)):
            # Decisions read the state, and the state is only read under the lock.
            raise fail(
                f"transitions.{row.id}", f"a row of unlocked phase {row.phase!r} must apply in every state, unguarded"
            )


def _successors(table: Table) -> dict[str, set[str]]:
    """Run state -> the states any row (or closing effect) can move the current generation to."""
    moves: dict[str, set[str]] = {state: set() for state in table.run_states}
    for row in table.transitions:
        targets = set(row.to) | {table.effects[e].run_to for e in row.effects if table.effects[e].run_to}
        for source in row.from_states:
            moves[source] |= {t for t in targets if t is not None}
    return moves


def _reach(moves: dict[str, set[str]], states: set[str]) -> set[str]:
    reached, frontier = set(states), list(states)
    while frontier:
        for target in moves[frontier.pop()] - reached:
            reached.add(target)
            frontier.append(target)
    return reached


def _check_totality(table: Table) -> None:
    for state in table.run_states:
        for op in table.operations:
            covered = covering_row(table, state, op) is not None
            if covered and (state, op) in table.defaulted:
                raise fail("defaulted", f"({state}, {op}) is listed as defaulted but rows cover it")
            if not covered and (state, op) not in table.defaulted:
                raise fail(
                    "transitions",
                    f"missing pair ({state}, {op}): no unguarded row ends it and it is not listed in defaulted",
                )
    # Caller code in an unlocked phase may run other operations, so after it the current generation can be in
    # any state reachable from where the operation was: the phases that follow must still end the operation.
    moves = _successors(table)
    for op_id, operation in table.operations.items():
        for index, phase in enumerate(operation.phases):
            if table.phases[phase]:
                continue
            alive = {s for s in table.run_states if not _ended_before(table, op_id, operation.phases[:index], s)}
            defaulted = {s for s, o in table.defaulted if o == op_id}
            for state in sorted(_reach(moves, alive) - defaulted):
                if not any(
                    r.guard is None and r.result is not None
                    for later in operation.phases[index + 1 :]
                    for r in table.rows_for(op_id, later, state)
                ):
                    raise fail(
                        "transitions",
                        f"missing pair ({state}, {op_id}) after phase {phase!r}: caller code there can leave the "
                        f"generation {state!r}, and no later unguarded row ends the operation",
                    )


def _ended_before(table: Table, op: str, phases: Sequence[str], state: str) -> bool:
    return any(r.guard is None and r.result is not None for p in phases for r in table.rows_for(op, p, state))


def _check_reachability(table: Table) -> None:
    reached = {table.initial_run_state}
    frontier = [table.initial_run_state]
    while frontier:
        state = frontier.pop()
        for row in table.transitions:
            if state not in row.from_states:
                continue
            targets = list(row.to)
            targets += [table.effects[e].run_to for e in row.effects if table.effects[e].run_to]  # type: ignore[misc]
            for target in targets:
                if target not in reached:
                    reached.add(target)
                    frontier.append(target)
    for state in table.run_states:
        if state not in reached:
            raise fail("run_states", f"state {state!r} is unreachable from {table.initial_run_state!r}")

    calls_reached = {table.initial_call_state}
    changed = True
    while changed:
        changed = False
        for t in table.call_transitions:
            if t.from_state in calls_reached and t.to not in calls_reached:
                calls_reached.add(t.to)
                changed = True
    for state in table.call_states:
        if state not in calls_reached:
            raise fail("call_states", f"state {state!r} is unreachable from {table.initial_call_state!r}")


# --------------------------------------------------------------------------- loading


def table_path() -> Path:
    """Where the table is read from: inside the installed package, else the source tree's ``spec/``."""
    try:
        return spec_path("machine.json")
    except SpecFileMissingError:
        raise TableError(
            "transition table not found: neither the package's _spec/ nor spec/ holds machine.json"
        ) from None


def load_table(text: str | None = None) -> Table:
    """Parse and validate a table from JSON ``text`` (default: the shipped table)."""
    if text is None:
        text = table_path().read_text(encoding="utf-8")
    try:
        raw = json.loads(text)
    except ValueError as exc:
        raise TableError(f"invalid transition table: not JSON: {exc}", code="table_invalid") from None
    return parse_table(raw)


TABLE_TEXT: Final = machine_text()
TABLE: Final = load_table(TABLE_TEXT)
