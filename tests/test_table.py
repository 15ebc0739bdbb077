"""The transition table: schema, validator (one test per kind of broken table), totality, and that it drives.

Every refusal test edits one thing in a copy of the shipped table and checks
the loader names that thing; a refusal test therefore fails if the validator
stops checking that kind of defect.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tables import RAW, closure_for, modified, raw_table, row
from tool_call_closure import Rejection, TableError, ToolCallClosure, TurnToken, UsageError
from tool_call_closure.machine.interpreter import Machine
from tool_call_closure.machine.table import TABLE, covering_row, load_table

SPEC = Path(__file__).resolve().parents[1] / "spec"


def test_shipped_table_matches_its_json_schema() -> None:
    schema = json.loads((SPEC / "machine.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    errors = [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(RAW)]
    assert errors == []


def test_schema_rejects_a_row_with_an_unknown_field() -> None:
    schema = json.loads((SPEC / "machine.schema.json").read_text(encoding="utf-8"))
    raw = raw_table()
    raw["transitions"][0]["when"] = "always"
    assert not jsonschema.Draft202012Validator(schema).is_valid(raw)


def test_shipped_table_loads_and_names_the_model() -> None:
    assert TABLE.run_states == ("none", "open", "complete", "error", "cancelled")
    assert TABLE.closed_run_states == {"complete", "error", "cancelled"}
    assert TABLE.call_states == ("pending", "success", "error", "cancelled")
    assert TABLE.terminal_call_states == {"success", "error", "cancelled"}
    assert set(TABLE.reasons) == {
        "stale_generation",
        "run_closed",
        "unknown_call",
        "duplicate_settlement",
        "pending_calls",
        "stale_turn",  # deviation D20
        "media_moved",  # deviation D26: an accepted success's diagnostic, not a rejection
    }
    assert set(TABLE.operations) == {
        "begin",
        "settle",
        "close",
        "seal",
        "snapshot",
        "active_generation",
        "turn_token",  # deviation D20
        "export",
    }
    forms = {m["python"] for m in TABLE.operations["settle"].methods}
    assert forms == {"settle", "succeed", "fail", "cancel"}
    assert len({r.id for r in TABLE.transitions}) == len(TABLE.transitions)


def test_python_defaults_equal_the_table_defaults() -> None:
    closure = ToolCallClosure()
    for option in TABLE.options:
        assert getattr(closure.limits, option.python) == option.default, option.id


# --------------------------------------------------------------------------- the validator refuses broken tables


REFUSAL = re.compile(r"^invalid transition table: (?P<top>[a-z_]+)(?:[.\[][^:]*)?: (?P<problem>.+)$")


def _refused(change: Any, *fragments: str) -> None:
    with pytest.raises(TableError) as info:
        modified(change)
    message = str(info.value)
    # Every refusal has one shape: the place (a path from a top-level key of the table), then the problem.
    shape = REFUSAL.match(message)
    assert shape is not None, message
    assert shape["top"] in RAW, message
    assert info.value.code == "table_invalid"
    for fragment in fragments:
        assert fragment in message, message


def test_refuses_unknown_guard() -> None:
    _refused(
        lambda raw: row(raw, "settle.admit.stale").update(guard="handle_is_stale"), "unknown guard 'handle_is_stale'"
    )


def test_refuses_unknown_effect() -> None:
    _refused(lambda raw: row(raw, "seal.commit.seal").update(effects=["record_done"]), "unknown effect 'record_done'")


def test_refuses_unknown_state() -> None:
    _refused(lambda raw: row(raw, "seal.commit.seal").update(to="sealed"), "unknown run state 'sealed'")


def test_refuses_unknown_operation() -> None:
    _refused(lambda raw: row(raw, "seal.commit.seal").update(op="finish"), "unknown operation 'finish'")


def test_refuses_unknown_phase() -> None:
    _refused(lambda raw: row(raw, "seal.commit.seal").update(phase="normalize"), "unknown phase 'normalize'")


def test_refuses_unknown_reason() -> None:
    _refused(
        lambda raw: row(raw, "settle.admit.unknown")["result"].update(reject="no_such_call"),
        "unknown reason 'no_such_call'",
    )


def test_refuses_unknown_error() -> None:
    _refused(
        lambda raw: row(raw, "export.admit.open")["result"].update({"raise": "snapshot_unsealed"}),
        "unknown error 'snapshot_unsealed'",
    )


def test_refuses_unknown_result() -> None:
    _refused(lambda raw: row(raw, "seal.commit.seal")["result"].update({"return": "report"}), "unknown result")


def test_refuses_unknown_call_event() -> None:
    _refused(lambda raw: raw["call_transitions"][0].update(event="report_ok"), "unknown call event 'report_ok'")


def test_refuses_unreachable_run_state() -> None:
    def change(raw: dict[str, Any]) -> None:
        raw["run_states"].append({"id": "archived", "closed": True, "description": "never entered"})

    _refused(change, "state 'archived' is unreachable")


def test_refuses_unreachable_call_state() -> None:
    def change(raw: dict[str, Any]) -> None:
        raw["call_transitions"] = [t for t in raw["call_transitions"] if t["to"] != "success"]

    _refused(change, "state 'success' is unreachable")


def test_refuses_exit_from_terminal_call_state() -> None:
    def change(raw: dict[str, Any]) -> None:
        raw["call_transitions"].append(
            {"id": "call.retry", "from": "error", "event": "report_success", "to": "success"}
        )

    _refused(change, "exit from terminal call state 'error'")


def test_refuses_a_call_transition_that_contradicts_its_events_status() -> None:
    """A call's state is its settlement's status (exports decide is_error from the state)."""

    def change(raw: dict[str, Any]) -> None:  # swap the targets of report_success and report_error
        raw["call_transitions"][0]["to"], raw["call_transitions"][1]["to"] = "error", "success"

    _refused(change, "settles a call as 'success' but moves it to 'error'")


def test_refuses_a_missing_pair_reachable_only_through_caller_code() -> None:
    """After close's normalize phase, a nested close can leave the generation closed: the recheck must end it."""
    _refused(
        lambda raw: raw.update(transitions=[r for r in raw["transitions"] if r["id"] != "close.recheck.closed"]),
        "missing pair (cancelled, close) after phase 'normalize'",
    )


def test_refuses_reopening_a_generation_an_effect_closed() -> None:
    """begin.commit.supersede closes the current generation; without start_generation its `to` would reopen it."""
    _refused(lambda raw: row(raw, "begin.commit.supersede").update(effects=["supersede"]), "exit from a closed state")


def test_refuses_caller_code_in_a_locked_phase() -> None:
    def change(raw: dict[str, Any]) -> None:
        moved = row(raw, "export.prepare.default")
        moved["phase"] = "admit"
        raw["transitions"].remove(moved)
        raw["transitions"].insert(raw["transitions"].index(row(raw, "export.admit.foreign")), moved)
        moved["guard"] = "snapshot_open"
        del row(raw, "export.admit.open")["guard"]

    _refused(change, "runs an operation of its own but phase 'admit' holds the lock")
    _refused(
        lambda raw: row(raw, "settle.prepare.read").update(phase="admit", guard="has_pending_calls"),
        "runs caller code but phase 'admit' holds the lock",
    )


def test_refuses_an_unlocked_phase_that_changes_state() -> None:
    _refused(
        lambda raw: row(raw, "settle.normalize.outcome").update(
            {"from": ["open"], "effects": ["normalize_outcome", "record_settlement"]}
        ),
        "changes state in unlocked phase 'normalize'",
    )


def test_refuses_a_decision_in_an_unlocked_phase() -> None:
    """The state is read only under the lock, so unlocked rows apply in every state and have no guard."""
    _refused(
        lambda raw: row(raw, "settle.normalize.outcome").update(guard="call_unknown"),
        "must apply in every state, unguarded",
    )
    _refused(
        lambda raw: row(raw, "settle.normalize.outcome").update({"from": ["open"]}),
        "must apply in every state, unguarded",
    )


def test_refuses_rewriting_a_closed_generation() -> None:
    _refused(
        lambda raw: row(raw, "close.admit.idempotent").update(effects=["record_complete"]),
        "rewrites the current generation in state",
    )


def test_refuses_exit_from_closed_state_without_a_new_generation() -> None:
    _refused(lambda raw: row(raw, "close.admit.idempotent").update(to="open"), "exit from closed state")


def test_refuses_overlapping_guards() -> None:
    _refused(lambda raw: row(raw, "settle.admit.duplicate").update(guard="call_unknown"), "overlaps an earlier row")


def test_refuses_a_row_shadowed_by_an_unguarded_row() -> None:
    def change(raw: dict[str, Any]) -> None:
        rows = raw["transitions"]
        closed = next(i for i, r in enumerate(rows) if r["id"] == "settle.admit.closed")
        stale = next(i for i, r in enumerate(rows) if r["id"] == "settle.admit.stale")
        rows[closed], rows[stale] = rows[stale], rows[closed]

    _refused(
        change,
        "transitions.settle.admit.stale: can never fire in state 'complete': row 'settle.admit.closed' before it has no guard",
    )


def test_refuses_a_missing_state_operation_pair() -> None:
    def change(raw: dict[str, Any]) -> None:
        raw["transitions"] = [r for r in raw["transitions"] if r["id"] != "snapshot.commit.none"]

    _refused(change, "missing pair (none, snapshot)")


def test_refuses_defaulted_pair_that_rows_cover() -> None:
    _refused(lambda raw: raw["defaulted"].append({"state": "open", "op": "seal"}), "listed as defaulted but rows cover")


def test_refuses_duplicate_row_id() -> None:
    _refused(lambda raw: row(raw, "seal.commit.seal").update(id="seal.admit.pending"), "duplicate id")


def test_refuses_missing_field() -> None:
    _refused(lambda raw: row(raw, "seal.commit.seal").pop("phase"), "missing field 'phase'")


def test_refuses_wrong_format() -> None:
    _refused(lambda raw: raw.update(format="tool-call-closure.machine/2"), "format")


def test_refuses_two_initial_states() -> None:
    _refused(lambda raw: raw["run_states"][1].update(initial=True), "exactly one state must be initial")


def test_refuses_a_moving_row_without_a_result() -> None:
    _refused(lambda raw: row(raw, "seal.commit.seal").pop("result"), "must end the operation")


def test_refuses_text_that_is_not_json() -> None:
    with pytest.raises(TableError, match="not JSON"):
        load_table("{ not json")


def test_compilation_refuses_a_guard_with_no_implementation() -> None:
    def change(raw: dict[str, Any]) -> None:
        raw["guards"].append({"id": "call_is_slow", "description": "made up"})
        row(raw, "settle.admit.duplicate").update(guard="call_is_slow")

    table = modified(change)  # structurally valid ...
    with pytest.raises(TableError, match="guard 'call_is_slow' has no implementation"):
        Machine(table)  # ... but nothing implements the guard


def test_compilation_refuses_an_implementation_the_table_does_not_name() -> None:
    def change(raw: dict[str, Any]) -> None:
        raw["guards"] = [g for g in raw["guards"] if g["id"] != "has_pending_calls"]
        raw["transitions"] = [r for r in raw["transitions"] if r["id"] != "seal.admit.pending"]

    with pytest.raises(TableError, match="implemented guard 'has_pending_calls' is not named"):
        Machine(modified(change))


# --------------------------------------------------------------------------- totality


def _closure_in(state: str) -> tuple[ToolCallClosure, Any]:
    """A closure whose current generation is in run state ``state`` (two calls, one pending), and its handle."""
    closure = ToolCallClosure()
    if state == "none":
        return closure, None
    handle = closure.begin([{"id": "a", "name": "t"}, {"id": "b", "name": "t"}]).handle
    closure.succeed(handle, "a", "done")
    if state == "complete":
        closure.succeed(handle, "b", "done")
        closure.seal(handle)
    elif state in ("error", "cancelled"):
        closure.close(handle, {"status": state})
    return closure, handle


OPERATIONS = {
    "begin": lambda c, h: c.begin([{"id": "n", "name": "t"}]),
    "settle": lambda c, h: c.settle(h, "b", {"status": "success", "content": 1}),
    "close": lambda c, h: c.close(h),
    "seal": lambda c, h: c.seal(h),
    "snapshot": lambda c, h: c.snapshot(),
    "active_generation": lambda c, h: c.active_generation,
    "turn_token": lambda c, h: c.turn_token(),
    "export": lambda c, h: c.to_openai_chat_completions(),
}


def _observable(closure: ToolCallClosure) -> Any:
    snapshot = closure.snapshot()
    return None if snapshot is None else (snapshot.generation, snapshot.closed, snapshot.calls, snapshot.close_reason)


@pytest.mark.parametrize("state", TABLE.run_states)
@pytest.mark.parametrize("op", list(TABLE.operations))
def test_every_state_operation_pair_follows_its_row(state: str, op: str) -> None:
    """h2-style totality: from every run state, every operation ends by a row of that (state, operation)
    (none takes the default), and an operation that rejects or raises leaves the state unchanged."""
    assert set(OPERATIONS) == set(TABLE.operations)
    assert covering_row(TABLE, state, op) is not None
    assert (state, op) not in TABLE.defaulted
    closure, handle = _closure_in(state)
    before = _observable(closure)
    closure._trace = []
    try:
        result = OPERATIONS[op](closure, handle)
        raised = None
    except UsageError as exc:
        raised = exc
    fired = [r for r in TABLE.transitions if r.id in closure._trace and r.op == op]
    final = fired[-1]
    assert final.result is not None, final.id
    assert state in final.from_states, final.id
    if raised is not None:
        assert final.result.kind == "raise"
        assert raised.code == final.result.name
        assert _observable(closure) == before  # I4: a refused operation changes nothing
    elif final.result.kind == "reject":
        assert result.reason == final.result.name
        assert _observable(closure) == before  # I2: a rejection changes no call and no state
    else:
        assert final.result.kind == "return"


@pytest.mark.parametrize("state", TABLE.run_states)
def test_a_begin_with_a_stale_turn_is_rejected_by_its_row_in_every_state_and_changes_nothing(state: str) -> None:
    """Deviation D20: begin.recheck.stale_turn fires from every run state (the token names generation 7, which is
    never current here); the rejection is recorded and nothing else changes, no generation number included."""
    closure, _ = _closure_in(state)
    before = _observable(closure)
    generation = closure.active_generation
    closure._trace = []
    rejected = closure.begin([{"id": "n", "name": "t"}], turn=TurnToken(7))
    assert isinstance(rejected, Rejection)
    assert (rejected.reason, rejected.call_id, rejected.generation, rejected.observed_status) == (
        "stale_turn",
        None,
        7,
        None,
    )
    assert closure._trace == ["begin.prepare.validate", "begin.recheck.stale_turn"]
    assert _observable(closure) == before
    assert closure.active_generation == generation
    token = closure.turn_token()
    assert token == TurnToken(generation or 0)
    assert not isinstance(closure.begin([], turn=token), Rejection)  # the current token commits
    assert closure.active_generation == (generation or 0) + 1  # no number was used by the rejection


def test_a_defaulted_pair_raises_illegal_transition_and_changes_nothing() -> None:
    def change(raw: dict[str, Any]) -> None:
        raw["transitions"] = [r for r in raw["transitions"] if r["id"] != "active_generation.commit.none"]
        raw["defaulted"].append({"state": "none", "op": "active_generation"})

    closure = closure_for(modified(change))
    with pytest.raises(UsageError) as info:
        closure.active_generation  # noqa: B018 - the property read is the operation
    assert info.value.code == "illegal_transition"
    assert str(info.value) == "no transition for active_generation in state none"
    assert closure.snapshot() is None
    closure.begin([])
    assert closure.active_generation == 1


# --------------------------------------------------------------------------- the table drives the interpreter


def test_changing_a_rows_states_changes_which_row_fires() -> None:
    """settle.admit.closed no longer applies to cancelled generations: a late result for a cancelled
    generation now passes admission, is normalized (so a bad outcome raises), and is rejected by the
    recheck with the normalized status instead of the previewed one."""
    table = modified(lambda raw: row(raw, "settle.admit.closed").update({"from": ["complete", "error"]}))
    closure = closure_for(table)
    handle = closure.begin([{"id": "a", "name": "t"}]).handle
    closure.close(handle)
    late = closure.settle(handle, "a", {"status": "error", "code": "late", "message": 5})
    assert (late.reason, late.observed_status) == ("run_closed", "error")
    with pytest.raises(UsageError, match=r"^outcome\.status must be"):
        closure.settle(handle, "a", {"status": "bogus"})
    shipped = ToolCallClosure()
    h2 = shipped.begin([{"id": "a", "name": "t"}]).handle
    shipped.close(h2)
    assert shipped.settle(h2, "a", {"status": "bogus"}).observed_status == "invalid"


def test_removing_the_precheck_row_moves_the_duplicate_rejection_to_the_recheck() -> None:
    def change(raw: dict[str, Any]) -> None:
        raw["transitions"] = [r for r in raw["transitions"] if r["id"] != "settle.admit.duplicate"]

    closure = closure_for(modified(change))
    handle = closure.begin([{"id": "a", "name": "t"}]).handle
    closure.succeed(handle, "a", "first")
    second = closure.succeed(handle, "a", "second")
    # The shipped table rejects in admit with observedStatus None (SET-7); without that row the
    # recheck rejects after normalization, reporting the normalized status (SET-9).
    assert (second.reason, second.observed_status) == ("duplicate_settlement", "success")
    shipped = ToolCallClosure()
    h2 = shipped.begin([{"id": "a", "name": "t"}]).handle
    shipped.succeed(h2, "a", "first")
    assert shipped.succeed(h2, "a", "second").observed_status is None


def test_changing_a_guard_changes_precedence() -> None:
    """Reordering the open-state guards of settle (duplicate before unknown) changes nothing observable for
    known ids, but making the unknown-call row reject as run_closed does."""
    closure = closure_for(modified(lambda raw: row(raw, "settle.admit.unknown")["result"].update(reject="run_closed")))
    handle = closure.begin([{"id": "a", "name": "t"}]).handle
    assert closure.succeed(handle, "zz", 1).reason == "run_closed"
