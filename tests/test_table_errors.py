"""Every field of the table is checked, and a refusal names the field it refuses.

``test_table.py`` breaks the table one *kind* of defect at a time.  This file
breaks it one *field* at a time: every node of the shipped ``spec/machine.json``
is given a value of the wrong JSON type, and every object member is deleted, and
the loader (``parse_table`` and the compilation in ``Machine``) must either

* refuse it with a :class:`TableError` whose message names the place — the
  top-level key, each list item by index or id, and the member — or
* be corrupting a documentation member (``description``, ``catalogue`` …), which
  the interpreter never reads and the JSON Schema checks instead, or
* (deletions only) be removing a member listed below as optional.

A port author reading a refusal can therefore go straight to the field.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tables import RAW, raw_table
from tool_call_closure import TableError
from tool_call_closure.closure import _closure_with_machine
from tool_call_closure.machine.interpreter import Machine
from tool_call_closure.machine.semantics import EFFECTS, GUARDS, OBSERVED, RESULTS, TARGETS, TEXTS
from tool_call_closure.machine.table import parse_table

SPEC = Path(__file__).resolve().parents[1] / "spec"

Path_ = tuple[str | int, ...]

# Members the interpreter never reads; the JSON Schema checks them.  ("*" stands for any list index.)
DOCUMENTATION = {"$schema", "description", "catalogue", "name"}
# ... except these, which are loaded: rows' catalogue IDs (tags, coverage) and the invariants' sentences.
DOCUMENTED_EXCEPT = {("transitions", "*", "catalogue"), ("invariants", "*", "description")}

# Members that may be left out, each with a default (see spec/machine.schema.json).
OPTIONAL = {
    ("defaulted",),
    ("run_states", "*", "closed"),
    ("call_states", "*", "terminal"),
    ("effects", "*", "call_event"),
    ("effects", "*", "errors"),
    ("effects", "*", "run_to"),
    ("effects", "*", "runs_operation"),
    ("effects", "*", "writes"),
    ("errors", "*", "match"),
    ("operations", "*", "methods", "*", "default_code"),
    ("operations", "*", "methods", "*", "error_mark"),
    ("operations", "*", "methods", "*", "status"),
    ("transitions", "*", "catalogue"),
    ("transitions", "*", "effects"),
    ("transitions", "*", "guard"),
    ("transitions", "*", "result"),
    ("transitions", "*", "to"),
}


def _nodes(node: Any, path: Path_ = ()) -> Iterator[Path_]:
    if path:
        yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _nodes(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _nodes(value, (*path, index))


def _shape(path: Path_) -> tuple[str, ...]:
    return tuple("*" if isinstance(s, int) else s for s in path)


def _is_documentation(path: Path_) -> bool:
    shape = _shape(path)
    for i, segment in enumerate(shape):
        if segment in DOCUMENTATION and (i == 0 or shape[i - 1] != "texts"):
            return shape[: i + 1] not in DOCUMENTED_EXCEPT
    return False


def _wrong_type(value: Any) -> Any:
    if isinstance(value, bool):
        return "yes"
    if isinstance(value, str):
        return 7
    if isinstance(value, int):
        return "7"
    if isinstance(value, list):
        return "x"
    if isinstance(value, dict):
        return ["x"]
    return 7


def _names(message: str, path: Path_) -> list[str]:
    """The parts of ``path`` that ``message`` does not name ([] when it names them all)."""
    unnamed: list[str] = []
    node: Any = RAW
    for segment in path:
        if isinstance(segment, int):
            item = node[segment]
            spellings = [f"[{segment}]"]
            if isinstance(item, dict):
                spellings += [item[k] for k in ("id", "code") if isinstance(item.get(k), str)]
        else:
            spellings = [segment]
        if not any(
            (s in message) if s.startswith("[") else re.search(rf"(?<!\w){re.escape(s)}(?!\w)", message)
            for s in spellings
        ):
            unnamed.append(" or ".join(spellings))
        node = node[segment]
    return unnamed


# What a refusal of a mistyped or missing member says after the place.
PROBLEMS = re.compile(
    r"must be an object|must be an array|must be a non-empty string|must be true or false"
    r"|must be a positive integer|must be one of [A-Za-z_]+(?:, [A-Za-z_]+)+|must be 'tool-call-closure\.machine/1'"
    r"|missing field '[a-z_$]+'|unknown [a-z ]+ '(?:7|x)'|exactly one state must be initial"
)


def _load(raw: dict[str, Any]) -> str | None:
    """The TableError message for ``raw``, or None if it loads and compiles."""
    try:
        Machine(parse_table(raw))
    except TableError as error:
        assert error.code == "table_invalid"  # noqa: PT017 - the sweep reads many refusals in one loop
        return str(error)
    return None


def _problem(message: str) -> str:
    assert message.startswith("invalid transition table: "), message
    return message.rsplit(": ", 1)[-1]


def _edited(path: Path_, delete: bool) -> dict[str, Any]:
    raw = raw_table()
    parent: Any = raw
    for segment in path[:-1]:
        parent = parent[segment]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = _wrong_type(parent[path[-1]])
    return raw


ALL_NODES = list(_nodes(RAW))


def _representatives(paths: list[Path_]) -> list[Path_]:
    # One node per (shape, JSON type): items of one list are checked by the same code, so the first
    # of each kind stands for the rest (and keeps the sweep fast enough to run under mutmut).
    seen: dict[tuple[tuple[str, ...], str], Path_] = {}
    for path in paths:
        node: Any = RAW
        for segment in path:
            node = node[segment]
        seen.setdefault((_shape(path), type(node).__name__), path)
    return list(seen.values())


NODES = _representatives(ALL_NODES)


def test_the_sweep_covers_the_whole_table() -> None:
    # Guards against a sweep that silently walks nothing.
    assert len(ALL_NODES) > 1000
    assert {p[0] for p in ALL_NODES} == set(RAW)
    assert {_shape(p) for p in NODES} == {_shape(p) for p in ALL_NODES}


def test_every_mistyped_field_is_refused_and_named() -> None:
    problems = []
    for path in NODES:
        message = _load(_edited(path, delete=False))
        if _is_documentation(path):
            continue
        if message is None:
            problems.append(f"{path}: a value of the wrong type was accepted")
        elif unnamed := _names(message, path):
            problems.append(f"{path}: {message!r} does not name {unnamed}")
        elif not PROBLEMS.fullmatch(_problem(message)):
            problems.append(f"{path}: {message!r} does not say what is wrong")
    assert problems == []


def test_every_required_member_is_refused_when_missing_and_named() -> None:
    problems = []
    for path in NODES:
        if not isinstance(path[-1], str):
            continue
        message = _load(_edited(path, delete=True))
        optional = _is_documentation(path) or _shape(path) in OPTIONAL
        if message is None:
            if not optional:
                problems.append(f"{path}: deleting a required member was accepted")
        elif "missing field" in message:
            if optional:
                problems.append(f"{path}: an optional member is reported missing: {message!r}")
            elif unnamed := _names(message, path[:-1]):
                problems.append(f"{path}: {message!r} does not name {unnamed}")
            elif repr(path[-1]) not in message:
                problems.append(f"{path}: {message!r} does not name the member {path[-1]!r}")
        # Any other refusal of a deletion is a semantic check failing elsewhere (e.g. a row losing its
        # target leaves a state unreachable); test_table.py pins those one kind at a time.
    assert problems == []


def test_optional_members_are_really_optional() -> None:
    # Each entry of OPTIONAL is in the shipped table and can be deleted somewhere without a refusal.
    shapes_present = {_shape(p) for p in ALL_NODES}
    assert shapes_present >= OPTIONAL
    for shape in OPTIONAL:
        path = next(p for p in ALL_NODES if _shape(p) == shape and _load(_edited(p, delete=True)) is None)
        assert path


def test_documentation_members_are_checked_by_the_schema() -> None:
    schema = json.loads((SPEC / "machine.schema.json").read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    checked = set()
    for path in ALL_NODES:
        if not _is_documentation(path) or _shape(path) in checked:
            continue
        checked.add(_shape(path))
        edited = _edited(path, delete=False)
        assert _load(copy.deepcopy(edited)) is None, path  # the interpreter ignores it ...
        assert not validator.is_valid(edited), path  # ... and the schema refuses it
    assert len(checked) >= 20


@pytest.mark.parametrize(
    ("kind", "table_list"),
    [("guard", "guards"), ("result", "results"), ("observed kind", "observed")],
)
def test_a_named_list_entry_must_match_an_implementation(kind: str, table_list: str) -> None:
    raw = raw_table()
    raw[table_list].append({"id": "invented", "description": "no code implements this"})
    with pytest.raises(
        TableError, match=rf"^invalid transition table: {kind} 'invented' has no implementation$"
    ) as info:
        Machine(parse_table(raw))
    assert info.value.code == "table_invalid"


def test_an_effect_with_no_implementation_is_refused() -> None:
    raw = raw_table()
    raw["effects"].append({"id": "invented", "caller_code": False})
    with pytest.raises(TableError, match=r"^invalid transition table: effect 'invented' has no implementation$"):
        Machine(parse_table(raw))


def test_an_implemented_name_the_table_does_not_name_is_refused() -> None:
    # Compile against extra implementations: each kind reports the first unused one by name.
    table = parse_table(raw_table())
    from tool_call_closure.machine.interpreter import _check_bindings

    extras = {"guards": GUARDS, "effects": EFFECTS, "results": RESULTS, "observed": OBSERVED, "targets": TARGETS}
    kinds = {
        "guards": "guard",
        "effects": "effect",
        "results": "result",
        "observed": "observed kind",
        "targets": "target rule",
    }
    for slot, kind in kinds.items():
        bound = dict(extras)
        bound[slot] = {**extras[slot], "aaa_extra": None}
        with pytest.raises(TableError) as caught:
            _check_bindings(
                table, bound["guards"], bound["effects"], bound["results"], bound["observed"], bound["targets"], TEXTS
            )  # type: ignore[arg-type]
        assert (
            str(caught.value) == f"invalid transition table: implemented {kind} 'aaa_extra' is not named by the table"
        )
        assert caught.value.code == "table_invalid"
    _check_bindings(table, GUARDS, EFFECTS, RESULTS, OBSERVED, TARGETS, TEXTS)  # the shipped binding is complete


def test_texts_must_match_what_the_semantics_read() -> None:
    raw = raw_table()
    raw["texts"]["unread_text"] = "nothing reads this"
    with pytest.raises(
        TableError, match=r"^invalid transition table: texts\.unread_text: nothing reads this text$"
    ) as info:
        Machine(parse_table(raw))
    assert info.value.code == "table_invalid"
    raw = raw_table()
    del raw["texts"]["cancel_message"]
    with pytest.raises(
        TableError, match=r"^invalid transition table: texts\.cancel_message: missing \(the semantics read it\)$"
    ) as missing:
        Machine(parse_table(raw))
    assert missing.value.code == "table_invalid"


def test_an_export_method_without_a_format_is_refused() -> None:
    raw = raw_table()
    export = next(o for o in raw["operations"] if o["id"] == "export")
    del export["methods"][1]["format"]
    with pytest.raises(
        TableError, match=r"^invalid transition table: operations\.export\.methods\[1\]: missing field 'format'$"
    ):
        Machine(parse_table(raw))


# --------------------------------------------------------------------------- names that refer to nothing

# What a name can refer to; an unknown reference is refused as "unknown <kind> '<name>'".
NAME_KINDS = r"run state|call state|call event|operation|phase|guard|effect|error|reason|result|observed kind|text"


def test_every_unknown_reference_is_refused_and_named() -> None:
    problems = []
    checked = 0
    for path in NODES:
        node: Any = RAW
        for segment in path:
            node = node[segment]
        if not isinstance(node, str) or _is_documentation(path):
            continue
        raw = raw_table()
        parent: Any = raw
        for segment in path[:-1]:
            parent = parent[segment]
        parent[path[-1]] = "zz"
        message = _load(raw)
        if message is None or "'zz'" not in message:
            continue  # free text or an identifier (renaming it breaks its referrers instead), or a fixed vocabulary
        checked += 1
        if re.fullmatch(
            r"invalid transition table: (export format|target rule) 'zz' has no (renderer|implementation)", message
        ):
            continue  # found when compiling, where the name has no implementation
        if unnamed := _names(message, path):
            problems.append(f"{path}: {message!r} does not name {unnamed}")
        elif not re.fullmatch(rf"unknown ({NAME_KINDS}) 'zz'( for operation '\w+')?", _problem(message)):
            problems.append(f"{path}: {message!r} does not say what kind of name is unknown")
    assert problems == []
    assert checked >= 20


def test_a_missing_top_level_member_is_named_as_a_member_of_the_table() -> None:
    for key in ("version", "texts", "options", "transitions", "default", "call_default"):
        raw = raw_table()
        del raw[key]
        assert _load(raw) == f"invalid transition table: table: missing field {key!r}"


def test_a_table_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(TableError, match=r"^invalid transition table: table: must be an object$"):
        parse_table([])


# --------------------------------------------------------------------------- refusals of a consistent-looking table


def _row(raw: dict[str, Any], row_id: str) -> dict[str, Any]:
    return next(r for r in raw["transitions"] if r["id"] == row_id)


def _state(raw: dict[str, Any], kind: str, state_id: str) -> dict[str, Any]:
    return next(s for s in raw[kind] if s["id"] == state_id)


def _operation(raw: dict[str, Any], op_id: str) -> dict[str, Any]:
    return next(o for o in raw["operations"] if o["id"] == op_id)


REFUSALS: dict[str, tuple[Any, str]] = {
    "initial-run-state-closed": (
        lambda raw: _state(raw, "run_states", "none").update(closed=True),
        "run_states: the initial state cannot be closed",
    ),
    "no-initial-run-state": (
        lambda raw: _state(raw, "run_states", "none").pop("initial"),
        "run_states: exactly one state must be initial",
    ),
    "two-initial-call-states": (
        lambda raw: _state(raw, "call_states", "success").update(initial=True),
        "call_states: exactly one state must be initial",
    ),
    "initial-call-state-terminal": (
        lambda raw: _state(raw, "call_states", "pending").update(terminal=True),
        "call_states: the initial state cannot be terminal",
    ),
    "duplicate-call-transition": (
        lambda raw: raw["call_transitions"].append(dict(raw["call_transitions"][0], id="call.again")),
        "call_transitions.call.again: overlaps another row for (pending, report_success)",
    ),
    "phases-out-of-order": (
        lambda raw: _operation(raw, "seal").update(phases=["commit", "admit", "prepare"]),
        "operations.seal: phases must be distinct and in the order the phases list declares",
    ),
    "phases-repeated": (
        lambda raw: _operation(raw, "seal").update(phases=["prepare", "admit", "admit", "commit"]),
        "operations.seal: phases must be distinct and in the order the phases list declares",
    ),
    "from-empty": (
        lambda raw: _row(raw, "seal.commit.seal").update({"from": []}),
        "transitions.seal.commit.seal.from: must list one or more distinct states",
    ),
    "from-repeated": (
        lambda raw: _row(raw, "seal.commit.seal").update({"from": ["open", "open"]}),
        "transitions.seal.commit.seal.from: must list one or more distinct states",
    ),
    "to-list-of-one": (
        lambda raw: _row(raw, "close.commit.close").update(to=["error"]),
        "transitions.close.commit.close: a list of targets needs at least two states (use a string for one)",
    ),
    "to-by-without-list": (
        lambda raw: _row(raw, "seal.commit.seal").update(to_by="reason.status"),
        "transitions.seal.commit.seal: to_by is required exactly when to lists several states",
    ),
    "result-two-kinds": (
        lambda raw: _row(raw, "seal.commit.seal")["result"].update({"raise": "illegal_transition"}),
        "transitions.seal.commit.seal: result must have exactly one of reject, raise, return",
    ),
    "moving-row-without-result": (
        lambda raw: _row(raw, "seal.commit.seal").pop("result"),
        "transitions.seal.commit.seal: a row that moves the state must end the operation (give it a result)",
    ),
    "event-pattern-matching-nothing": (
        lambda raw: next(e for e in raw["effects"] if e["id"] == "record_settlement").update(call_event="zz_<status>"),
        "effects.record_settlement.call_event: call_event 'zz_<status>' matches no call event",
    ),
    "row-shadowed-by-an-unguarded-row": (
        lambda raw: _row(raw, "settle.admit.closed").update({"from": ["open", "complete", "error", "cancelled"]}),
        "transitions.settle.admit.unknown: can never fire in state 'open': row 'settle.admit.closed' before it has no guard",
    ),
    "unlocked-row-rejecting": (
        lambda raw: _row(raw, "begin.prepare.validate").update(
            result={"reject": "stale_generation", "call_id": "none", "observed": "none"}
        ),
        "transitions.begin.prepare.validate: unlocked phase 'prepare' cannot move the state or reject",
    ),
    "error-kind-outside-the-vocabulary": (
        lambda raw: raw["errors"][0].update(kind="Error"),
        "errors.options_not_object.kind: must be one of TypeError, RangeError",
    ),
    "option-default-zero": (
        lambda raw: raw["options"][0].update(default=0),
        "options[0].default: must be a positive integer",
    ),
    "option-default-true": (
        lambda raw: raw["options"][0].update(default=True),
        "options[0].default: must be a positive integer",
    ),
    "unknown-default-code": (
        lambda raw: _operation(raw, "settle")["methods"][2].update(default_code="zz"),
        "operations.settle.methods[2].default_code: unknown text 'zz'",
    ),
    "unknown-call-event": (
        lambda raw: next(e for e in raw["effects"] if e["id"] == "supersede").update(call_event="zz"),
        "effects.supersede.call_event: unknown call event 'zz'",
    ),
    "exit-from-a-closed-state": (
        lambda raw: _row(raw, "seal.admit.idempotent").update(to="open"),
        "transitions.seal.admit.idempotent: exit from closed state 'complete' without start_generation",
    ),
    "defaulted-entry-not-an-object": (
        lambda raw: raw["defaulted"].append("open"),
        "defaulted[0]: must be an object",
    ),
    "defaulted-entry-without-op": (
        lambda raw: raw["defaulted"].append({"state": "open"}),
        "defaulted[0]: missing field 'op'",
    ),
    "defaulted-entry-without-state": (
        lambda raw: raw["defaulted"].append({"op": "seal"}),
        "defaulted[0]: missing field 'state'",
    ),
    "defaulted-state-not-a-string": (
        lambda raw: raw["defaulted"].append({"state": 1, "op": "seal"}),
        "defaulted[0].state: must be a non-empty string",
    ),
    "defaulted-op-not-a-string": (
        lambda raw: raw["defaulted"].append({"state": "open", "op": 1}),
        "defaulted[0].op: must be a non-empty string",
    ),
    "defaulted-unknown-state": (
        lambda raw: raw["defaulted"].append({"state": "zz", "op": "seal"}),
        "defaulted[0].state: unknown run state 'zz'",
    ),
    "defaulted-unknown-op": (
        lambda raw: raw["defaulted"].append({"state": "open", "op": "zz"}),
        "defaulted[0].op: unknown operation 'zz'",
    ),
    "flag-default-not-a-bool": (  # deviation D26: a flag option's default is true or false
        lambda raw: raw["options"][-1].update(default=0),
        "options[7].default: must be true or false",
    ),
    "limit-after-a-flag": (
        lambda raw: raw["options"].append({**raw["options"][0], "id": "maxMore", "python": "max_more"}),
        "options: every limit must come before the flags",
    ),
    "unknown-option-kind": (
        lambda raw: raw["options"][-1].update(kind="switch"),
        "options[7].kind: must be one of limit, flag",
    ),
    "duplicate-option-id": (
        lambda raw: raw["options"].append(dict(raw["options"][0])),
        "options: duplicate id 'maxCalls'",
    ),
    "rewrite-closed": (
        lambda raw: _row(raw, "seal.admit.idempotent").update(effects=["record_complete"]),
        "transitions.seal.admit.idempotent: rewrites the current generation in state 'complete' "
        "(there is none, or it is closed for good)",
    ),
    "rewrite-none": (
        lambda raw: _row(raw, "snapshot.commit.none").update(effects=["record_complete"]),
        "transitions.snapshot.commit.none: rewrites the current generation in state 'none' "
        "(there is none, or it is closed for good)",
    ),
    "closing-then-moving": (
        lambda raw: _row(raw, "begin.commit.supersede").update(effects=["start_generation", "supersede"]),
        "transitions.begin.commit.supersede: moves the generation 'supersede' closed "
        "(exit from a closed state without start_generation)",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_refusal_texts(case: str) -> None:
    change, problem = REFUSALS[case]
    raw = raw_table()
    change(raw)
    assert _load(raw) == f"invalid transition table: {problem}"


def test_a_call_state_without_terminal_is_not_terminal() -> None:
    raw = raw_table()
    del _state(raw, "call_states", "pending")["terminal"]
    assert _load(copy.deepcopy(raw)) is None
    assert parse_table(raw).terminal_call_states == {"success", "error", "cancelled"}


def test_an_option_default_of_one_is_accepted() -> None:
    raw = raw_table()
    raw["options"][0]["default"] = 1
    assert parse_table(raw).options[0].default == 1


def test_an_export_format_without_a_renderer_is_refused() -> None:
    raw = raw_table()
    _operation(raw, "export")["methods"][2]["format"] = "markdown"
    machine = Machine(parse_table(raw))  # the machine knows formats only as names ...
    with pytest.raises(TableError) as info:
        _closure_with_machine(machine)  # ... the public class binds them to the providers' renderers
    assert str(info.value) == "invalid transition table: export format 'markdown' has no renderer"
    assert info.value.code == "table_invalid"


def test_call_states_reached_in_several_steps_are_reachable() -> None:
    # pending -> paused -> parked, with the second step listed first: reachability must iterate to a fixpoint.
    raw = raw_table()
    raw["call_states"] += [{"id": "paused", "terminal": False}, {"id": "parked", "terminal": True}]
    raw["call_events"] += [
        {"id": "pause", "status": "paused", "provenance": "reported"},
        {"id": "park", "status": "parked", "provenance": "reported"},
    ]
    raw["call_transitions"][:0] = [
        {"id": "call.park", "from": "paused", "event": "park", "to": "parked"},
        {"id": "call.pause", "from": "pending", "event": "pause", "to": "paused"},
    ]
    assert "parked" in parse_table(raw).terminal_call_states
    del raw["call_transitions"][1]  # now nothing enters paused
    with pytest.raises(
        TableError, match=r"^invalid transition table: call_states: state 'paused' is unreachable from 'pending'$"
    ):
        parse_table(raw)


def test_every_error_the_code_raises_is_declared_by_the_table() -> None:
    # The semantics raise errors by code (spec_error("...")); each code must have a row in the table's errors.
    source = Path(__file__).resolve().parents[1] / "src" / "tool_call_closure"
    raised = {
        code
        for module in source.rglob("*.py")
        for code in re.findall(r'spec_error\(\s*"([a-z_]+)"', module.read_text(encoding="utf-8"))
    }
    assert len(raised) >= 15
    assert raised <= {e["code"] for e in RAW["errors"]}
