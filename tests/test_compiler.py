"""The compiled table (machine/compiler.py) against the generic row walk, its oracle.

``Machine.run`` executes the Python code the table is compiled to;
``Machine.walk`` walks the rows.  These tests hold the two to the same
behaviour on every vector and on every step the bounded model check reaches,
pin that the emitted source is exactly what runs, and that a modified table
changes the generated code and what it does.
"""

from __future__ import annotations

import importlib
import io
import json
import re
import sys
import traceback
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tables import assert_bfs_agrees, closure_for, modified, row
from tables import transcript as _transcript
from tool_call_closure import LimitError, UsageError, create_tool_call_closure, to_json
from tool_call_closure.cli.main import main
from tool_call_closure.conformance.vectors import load_vectors
from tool_call_closure.machine.compiler import generate_source, python_name
from tool_call_closure.machine.context import OPERATION_CONTEXTS, Context, SettleContext
from tool_call_closure.machine.interpreter import MACHINE, Machine
from tool_call_closure.machine.regenerate import GENERATED_PATH
from tool_call_closure.machine.table import TABLE

PROOFS = Path(__file__).resolve().parents[1] / "proofs"


class WalkingMachine(Machine):
    """The same table, every operation answered by the generic row walk."""

    __slots__ = ()

    def run(self, op: str, ctx: Context) -> Any:
        return self.walk(op, ctx)


WALK = WalkingMachine(TABLE)
# The shipped machine's source as the generator writes it (the checked-in module is this, formatted and typed).
SOURCE = Machine(TABLE).source


@pytest.mark.parametrize("vector", load_vectors(), ids=lambda v: v.id)
def test_compiled_and_walked_tables_agree_on_every_vector(vector: Any) -> None:
    compiled = _transcript(Machine(TABLE), vector.steps)
    walked = _transcript(WALK, vector.steps)
    assert compiled == walked


@pytest.mark.slow  # the coverage gate (test_conformance) checks the same on the shipped machine, in the fast tier
def test_the_vectors_fire_every_row_through_the_compiled_path() -> None:
    fired = {
        row_id
        for vector in load_vectors()
        for _lines, rows in _transcript(Machine(TABLE), vector.steps)
        for row_id in rows
    }
    assert fired == {r.id for r in TABLE.transitions}


@pytest.mark.slow  # a long BFS, every step twice
def test_compiled_and_walked_tables_agree_on_every_bfs_reachable_step() -> None:
    """Every transition the bounded model check explores, replayed on the walk from the same state."""
    assert_bfs_agrees(MACHINE, WALK, "compiled and walked tables")


@pytest.mark.pure_machine  # patches the semantics or steps through Python frames (see conftest.py)
def test_emit_python_prints_the_source_that_runs() -> None:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["table", "--emit-python"]) == 0
    source = out.getvalue()
    # The shipped table's machine is the checked-in module (tests/test_generated.py holds it to the generator).
    assert source == MACHINE.source == GENERATED_PATH.read_text(encoding="utf-8")
    compile(source, "<emitted>", "exec")  # it is valid Python on its own
    for op, function in MACHINE.operations.items():
        assert function.__name__ == f"run_{op}"
        assert function.__code__.co_filename == str(GENERATED_PATH)
    for op, function in MACHINE.entries.items():
        assert function.__name__ == f"enter_{op}"
        assert function.__code__.co_filename == str(GENERATED_PATH)
    assert set(MACHINE.operations) == set(MACHINE.entries) == set(TABLE.operations)
    # Any other machine (another table, a test's, a mutant's) is generated at import, and runs what it prints.
    runtime = Machine(TABLE)
    assert runtime.origin == "generated at import"
    assert runtime.source == generate_source(TABLE, MACHINE.implementations, OPERATION_CONTEXTS)
    for function in runtime.entries.values():
        assert function.__code__.co_filename.startswith("<tool-call-closure machine ")
    for r in TABLE.transitions:  # every row is rendered (its id is what tracing records)
        assert repr(r.id) in runtime.source
        assert f'"{r.id}"' in source


@pytest.mark.pure_machine  # patches the semantics or steps through Python frames (see conftest.py)
def test_a_traceback_from_the_shipped_path_names_the_checked_in_module() -> None:
    c = create_tool_call_closure()
    with pytest.raises(UsageError) as info:
        c.begin("not a list")
    frames = traceback.extract_tb(info.value.__traceback__)
    generated = [f for f in frames if f.filename == str(GENERATED_PATH)]
    assert [f.name for f in generated] == ["method_begin"]  # begin's own entry point (machine.specialize)
    assert generated[0].line == 'raise semantics_.spec_error("calls_not_array")'  # a real file's real line
    assert GENERATED_PATH.read_text().splitlines()[generated[0].lineno - 1].strip() == generated[0].line


def test_an_operation_of_another_machine_runs_through_the_code_generated_at_import() -> None:
    c = closure_for(TABLE)
    with pytest.raises(UsageError) as info:
        c.begin("not a list")
    frames = traceback.extract_tb(info.value.__traceback__)
    generated = [f for f in frames if f.filename.startswith("<tool-call-closure machine ")]
    assert [f.name for f in generated] == ["enter_begin"]
    assert generated[0].line == "raise semantics_.spec_error('calls_not_array')"  # linecache shows the generated line


def test_a_modified_table_changes_the_generated_code_and_what_runs() -> None:
    # settle.admit.closed no longer applies to cancelled: a late result passes admission, is normalized,
    # and the recheck rejects it (as tests/test_table.py shows for the behaviour; here through the generated code).
    table = modified(lambda raw: row(raw, "settle.admit.closed").update({"from": ["complete", "error"]}))
    machine = Machine(table)
    assert machine.source != SOURCE
    assert "elif state in ('complete', 'error'):" in machine.source
    closure = closure_for(table)
    trace: list[str] = []
    closure._trace = trace
    handle = closure.begin([{"id": "a", "name": "t"}]).handle
    closure.close(handle)
    trace.clear()
    late = closure.succeed(handle, "a", "late")
    assert (late.reason, late.observed_status) == ("run_closed", "success")
    assert trace == ["settle.prepare.read", "settle.normalize.outcome", "settle.recheck.closed"]


def test_python_names_keep_kinds_apart() -> None:
    assert python_name("target", "reason.status") == "target_reason_status"
    assert python_name("guard", "x") != python_name("effect", "x")


def test_row_ids_are_never_code_in_the_generated_source() -> None:
    def change(raw: dict[str, Any]) -> None:
        row(raw, "seal.commit.seal")["id"] = "seal.commit.seal\nraise SystemExit('injected')"
        raw["version"] = '1.0.0"""\nraise SystemExit("injected")\n"""'

    table = modified(change)  # the validator accepts any string as a row id or a version
    machine = Machine(table)
    assert "\nraise SystemExit(" not in machine.source
    closure = closure_for(table)
    handle = closure.begin([]).handle
    assert closure.seal(handle).closed


def test_the_trace_of_a_lifecycle_is_the_same_compiled_and_walked() -> None:
    traces = []
    for machine in (MACHINE, WALK):
        from tool_call_closure.closure import _closure_with_machine

        c = _closure_with_machine(machine)
        c._trace = []
        h = c.begin([{"id": "a", "name": "t"}, {"id": "b", "name": "t"}]).handle
        c.succeed(h, "a", {"x": 1})
        c.succeed(h, "a", "again")
        snap = c.close(h, {"status": "error"})
        c.to_anthropic_tool_results(snap)
        traces.append((c._trace, json.loads(to_json(c.snapshot()))))
    assert traces[0] == traces[1]
    assert "settle.admit.duplicate" in traces[0][0]


# --------------------------------------------------------------------------- inlining


def test_the_shipped_semantics_are_written_into_the_generated_code() -> None:
    """Every guard, effect, result, observed kind and target rule of the shipped table qualifies for inlining."""
    from tool_call_closure.machine.compiler import inline

    called = sorted(
        f"{kind} {name}"
        for kind, names in MACHINE.implementations.items()
        for name, function in names.items()
        if inline(kind, name, function) is None
    )
    assert called == []
    for kind, names in MACHINE.implementations.items():
        for name in names:
            assert f"{python_name(kind, name)}(ctx)" not in SOURCE


@pytest.mark.pure_machine  # patches the semantics or steps through Python frames (see conftest.py)
def test_an_inlined_body_reads_its_module_globals_when_it_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rebinding a global of the semantics changes the inlined code exactly as it changes a call."""
    from tool_call_closure.machine import semantics

    assert "semantics_.serialize_content(" in SOURCE  # normalize_outcome's body, inlined, calls it
    seen: list[object] = []
    real = semantics.serialize_content

    def spying(content: object, limit: int) -> str:
        seen.append(content)
        return real(content, limit)

    monkeypatch.setattr(semantics, "serialize_content", spying)
    closure = create_tool_call_closure()  # the shipped, already compiled machine
    handle = closure.begin([{"id": "a", "name": "t"}]).handle
    closure.succeed(handle, "a", "tëxt")  # (a plain ASCII text is stored without the call: normalize_outcome)
    assert seen == ["tëxt"]


def test_an_implementation_that_does_not_qualify_is_called_and_behaves_the_same() -> None:
    """A closure over a local, an early return or a nested function: called, not inlined; same answers."""
    from tool_call_closure.machine.compiler import inline

    limit = 0

    def over_a_local(ctx: Context) -> bool:
        return limit > 0

    def early(ctx: Context) -> None:
        if ctx is None:
            return
        ctx.method = ctx.method

    def nested(ctx: Context) -> bool:
        return (lambda: True)()

    assert inline("guard", "x", over_a_local) is None
    assert inline("effect", "x", early) is None
    assert inline("guard", "x", nested) is None
    assert inline("guard", "x", len) is None  # no Python source


def test_an_inlined_body_is_rewritten_again_when_a_name_it_reads_is_rebound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rewrite is remembered per process, keyed on what the body's names are bound to.

    A body that reads a name its module does not define is called, not inlined; once the module defines
    it, the same function is inlined (a rewrite remembered on the function alone would still say no).
    """
    from tool_call_closure.machine.compiler import inline

    (tmp_path / "tcc_inline_probe.py").write_text("def guard(ctx):\n    return later_defined(ctx)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        probe = importlib.import_module("tcc_inline_probe")
        assert inline("guard", "probe", probe.guard) is None  # an unresolved name: called
        assert inline("guard", "probe", probe.guard) is None  # remembered
        probe.later_defined = bool
        found = inline("guard", "probe", probe.guard)
    finally:
        sys.modules.pop("tcc_inline_probe", None)
    assert found is not None
    assert found.value == "tcc_inline_probe_.later_defined(ctx)"


def test_inlined_locals_are_prefixed_and_globals_read_from_their_module() -> None:
    from tool_call_closure.machine import semantics
    from tool_call_closure.machine.compiler import inline

    found = inline("effect", "start_generation", semantics.start_generation)
    assert found is not None
    assert found.origin == "tool_call_closure.machine.semantics.start_generation"
    text = "\n".join(found.statements)
    assert "effect_start_generation__generation = " in text
    assert "semantics_.Run(" in text
    assert "ctx.closure" not in text  # the operation's own `closure` local
    guard = inline("guard", "handle_not_current", semantics.handle_not_current)
    assert guard is not None
    assert (
        guard.value == "guard_handle_not_current__run is None or ctx.handle is not guard_handle_not_current__run.handle"
    )


# --------------------------------------------------------------------------- fast paths of the semantics


_TEXTS = st.one_of(
    st.text(alphabet=st.characters(codec="utf-8"), max_size=6),
    st.sampled_from(["", " ", "\t", "\x1c", "\xa0", "a b", " a", "a\u2028", "abcdefgh", "\x00"]),
    st.builds(lambda s: type("Sub", (str,), {})(s), st.text(max_size=3)),
    st.none(),
    st.integers(),
)


def _begin_answer(entry: Any, limit: int) -> str:
    closure = create_tool_call_closure(max_id_bytes=limit, max_name_bytes=limit)
    try:
        return to_json(closure.begin([entry, {"id": "other", "name": "t"}]))
    except Exception as exc:  # noqa: BLE001 - the answer compared is the error itself
        return f"{type(exc).__name__}: {exc}"


@given(call_id=_TEXTS, name=_TEXTS, limit=st.integers(min_value=1, max_value=6))
@settings(max_examples=400, deadline=None)
def test_BEG_4_a_dict_entry_is_validated_exactly_as_the_general_rule_validates_it(
    call_id: Any, name: Any, limit: int
) -> None:
    """validate_calls reads a plain dict on a fast path; a read-only mapping of it takes the general path."""
    from types import MappingProxyType

    entry = {"id": call_id, "name": name}
    assert _begin_answer(entry, limit) == _begin_answer(MappingProxyType(entry), limit)


@given(call_id=_TEXTS, limit=st.integers(min_value=1, max_value=6))
@settings(max_examples=300, deadline=None)
def test_SET_1_a_call_id_known_to_the_run_is_answered_as_a_validated_one(call_id: Any, limit: int) -> None:
    """validate_call_id skips the check for an id of the installed run; any other id gets the full check."""
    answers = []
    for announced in (True, False):
        closure = create_tool_call_closure(max_id_bytes=limit)
        other = "y" if call_id == "z" else "z"
        calls = [{"id": call_id, "name": "t"}] if announced else [{"id": other, "name": "t"}]
        try:
            handle = closure.begin(calls).handle
        except Exception:  # noqa: BLE001 - an id begin refuses is not announced: nothing to compare
            return
        try:
            answers.append(to_json(closure.succeed(handle, call_id, "ok")))
        except Exception as exc:  # noqa: BLE001
            answers.append(f"{type(exc).__name__}: {exc}")
    # Announced: accepted. Not announced: the same id either fails validation exactly as begin would have
    # refused it (it was accepted by begin above, so it is valid) or is an unknown call.
    assert json.loads(answers[0])["accepted"] is True
    assert json.loads(answers[1])["reason"] == "unknown_call"


def test_a_comprehension_variable_named_like_a_global_is_not_inlined() -> None:
    """Renaming it with the body's locals would turn the global read elsewhere in the body into the local."""
    from tool_call_closure.machine.compiler import inline

    assert inline("guard", "x", _shadowing_guard) is None
    assert inline("guard", "x", _plain_comprehension_guard) is not None


def _shadowing_guard(ctx: Context) -> bool:
    return bool([len + 1 for len in (1, 2)]) and len("ab") == 2


def _plain_comprehension_guard(ctx: Context) -> bool:
    return bool([item + 1 for item in (1, 2)])


def test_only_the_draft_mechanism_becomes_the_local_draft() -> None:
    """The locals form writes ``draft_of(ctx)`` as the local ``draft`` only when it is the context module's mechanism.

    A function of another module that is merely called ``draft_of`` is read
    from its module and called, in both forms, like any other global.
    """
    from tool_call_closure.machine import semantics
    from tool_call_closure.machine.inliner import inline, local_form, module_alias

    mechanism = inline("effect", "record_close_reason", semantics.record_close_reason)
    assert mechanism is not None
    assert mechanism.statements == ("draft_of(ctx).close_reason = ctx.close_reason",)
    assert "draft_from(closure)" in local_form(mechanism.statements[0], "exec")[0]
    namesake = inline("effect", "x", _effect_calling_a_namesake)
    assert namesake is not None
    alias = module_alias(__name__)
    assert namesake.statements == (f"{alias}.draft_of(ctx).state = 'closed'",)
    local, hands_on = local_form(namesake.statements[0], "exec")
    assert local == namesake.statements[0]  # not the draft: the namesake gets the context object …
    assert hands_on  # … which the locals form builds from the locals for it (spill), as for any function


def draft_of(ctx: Any) -> Any:
    """Not the draft mechanism: a function of this module that happens to share its name."""
    return ctx


def _effect_calling_a_namesake(ctx: Context) -> None:
    draft_of(ctx).state = "closed"


# --------------------------------------------------------------------------- one acquisition when no caller code runs


def _lock_held_while_normalizing(monkeypatch: pytest.MonkeyPatch, effect: str, operation: Any) -> bool:
    """Run ``operation(closure, handle)`` and report whether the lock was held when ``effect``'s helper ran."""
    from tool_call_closure.machine import semantics

    closure = create_tool_call_closure()
    handle = closure.begin([{"id": "a", "name": "t"}]).handle
    held: list[bool] = []
    # A helper each normalization calls exactly once (close: the fast reader, which every reason reaches first).
    name = {"normalize_outcome": "serialize_content", "fail": "error_message_text", "close": "plain_close_reason"}[
        effect
    ]
    real = getattr(semantics, name)

    def spying(*args: Any) -> Any:
        held.append(closure._lock._is_owned())
        return real(*args)

    monkeypatch.setattr(semantics, name, spying)
    operation(closure, handle)
    monkeypatch.undo()
    assert len(held) == 1
    return held[0]


class _Text(str):
    pass


class _Mapping(dict[str, Any]):
    pass


@pytest.mark.pure_machine  # patches the semantics or steps through Python frames (see conftest.py)
@pytest.mark.parametrize(
    ("effect", "operation", "expected"),
    [
        # (Non-ASCII texts: a plain ASCII text within the limit is stored without calling serialize_content.)
        ("normalize_outcome", lambda c, h: c.succeed(h, "a", "plain tëxt"), True),
        ("normalize_outcome", lambda c, h: c.succeed(h, "a", {"a": [1, "bé", None]}), True),  # plain data
        ("normalize_outcome", lambda c, h: c.succeed(h, "a", _Mapping(a=1)), False),  # a subclass: caller code
        ("normalize_outcome", lambda c, h: c.succeed(h, "a", {"a": _Text("b")}), False),
        ("normalize_outcome", lambda c, h: c.succeed(h, "a", {"a": 1.5e300}), False),  # not the C encoder's text
        ("normalize_outcome", lambda c, h: c.succeed(h, "a", _Text("subclass")), False),
        ("normalize_outcome", lambda c, h: c.settle(h, "a", {"status": "success", "content": "x"}), False),
        ("fail", lambda c, h: c.fail(h, "a", "plain message"), True),
        ("fail", lambda c, h: c.fail(h, "a", ValueError("its __str__ is caller code")), False),
        ("close", lambda c, h: c.close(h, {"status": "error", "message": "plain"}), True),
        ("close", lambda c, h: c.close(h, {"status": "error", "message": 5}), False),
        ("close", lambda c, h: c.close(h, {"status": "error", "message": _Text("subclass")}), False),
    ],
)
def test_a_normalization_that_runs_no_caller_code_runs_in_one_acquisition(
    monkeypatch: pytest.MonkeyPatch, effect: str, operation: Any, expected: bool
) -> None:
    """spec §14 "One acquisition": only a call whose unlocked phase provably runs no caller code holds the lock."""
    assert _lock_held_while_normalizing(monkeypatch, effect, operation) is expected


def test_the_generated_operation_branches_on_the_no_caller_code_checks() -> None:
    assert SOURCE.count("with lock:") > len(TABLE.operations)
    for name in ("normalize_outcome", "normalize_close_reason"):
        unwrapped = re.sub(r"\n *# ", " ", SOURCE)  # a long comment is wrapped to the line length
        assert f"inlined from tool_call_closure.machine.semantics.{name}_runs_no_caller_code" in unwrapped


def test_a_no_caller_code_check_for_an_effect_that_runs_none_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from tool_call_closure import TableError
    from tool_call_closure.machine import semantics

    monkeypatch.setitem(semantics.NO_CALLER_CODE, "record_settlement", lambda ctx: True)  # type: ignore[index]
    with pytest.raises(TableError, match="no-caller-code check 'record_settlement'"):
        Machine(TABLE)


def test_emit_outline_prints_the_rows_as_code_with_every_name_called() -> None:
    """``table --emit-outline``: the generated code with nothing inlined (a rendering of the table for reading)."""
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["table", "--emit-outline"]) == 0
    outline = out.getvalue()
    assert outline == generate_source(TABLE, {})
    compile(outline, "<outline>", "exec")
    assert ": inlined from " not in outline
    for r in TABLE.transitions:
        assert repr(r.id) in outline
        for effect in r.effects:
            assert f"{python_name('effect', effect)}(ctx)" in outline
        if r.guard is not None:
            assert f"{python_name('guard', r.guard)}(ctx)" in outline
    assert len(outline) < len(SOURCE)


def test_plain_content_converted_by_the_check_is_stored_as_the_walk_stores_it() -> None:
    """The one-acquisition check turns plain data into its text; the settlement is the walk's, limit included."""
    for content in ({"i": 1, "ok": True, "text": "é\ud800"}, [1, [2.5, None], {"k": "v"}], {"a": "x" * 64}):
        compiled, walked = create_tool_call_closure(), create_tool_call_closure()
        results = []
        for closure, run in ((compiled, MACHINE.run), (walked, MACHINE.walk)):
            handle = closure.begin([{"id": "a", "name": "t"}]).handle
            ctx = SettleContext(closure, "succeed", handle, "a")
            ctx.fixed_status, ctx.content = "success", content
            results.append(run("settle", ctx))
        assert results[0] == results[1]
        assert compiled.snapshot() == walked.snapshot()
    limited = create_tool_call_closure(max_result_bytes=8)
    handle = limited.begin([{"id": "a", "name": "t"}]).handle
    with pytest.raises(LimitError) as raised:
        limited.succeed(handle, "a", {"a": "long enough"})
    assert raised.value.code == "content_too_large"
    snapshot = limited.snapshot()
    assert snapshot is not None
    assert snapshot.calls[0].state == "pending"


# --------------------------------------------------------------------------- what one acquisition already knows


def _operation(source: str, op: str) -> str:
    """The text of ``op``'s compiled function in ``source`` (``enter_<op>``; ``run_<op>`` in the outline)."""
    header = f"def enter_{op}(" if f"def enter_{op}(" in source else f"def run_{op}("
    body = source[source.index(header) :]
    return body[: body.index("\ndef ", 1)]


def _forms(source: str, op: str) -> tuple[str, str]:
    """The one-acquisition form of ``op``'s compiled function and its two-acquisition form, as source text."""
    body = _operation(source, op)
    one = body.index("recheck, commit: under the lock, in one acquisition")
    two = body.index("# --- phase admit: under the lock, in one acquisition")
    return body[one:two], body[two:]


def _fired(form: str) -> set[str]:
    return set(re.findall(r"trace\.append\('([a-z_.]+)'\)", form))


def test_a_recheck_under_the_same_acquisition_evaluates_no_guard_admission_found_false() -> None:
    """spec §14: normalized under the lock, nothing can change between admission and recheck, so the
    one-acquisition form has no recheck rows; the two-acquisition form, where caller code runs between, has all."""
    for op, rechecks in (
        ("settle", {"settle.recheck.stale", "settle.recheck.duplicate", "settle.recheck.closed"}),
        ("close", {"close.recheck.stale", "close.recheck.closed"}),
    ):
        one, two = _forms(SOURCE, op)
        assert _fired(two) >= rechecks
        assert not _fired(one) & rechecks
        assert f"{op}.admit.stale" in _fired(one)
        assert f"{op}.commit.{'record' if op == 'settle' else 'close'}" in _fired(one)
        assert "nothing to evaluate: every row's guard was found false earlier in this acquisition" in one


def _normalize_writing_the_call_id(ctx: SettleContext) -> None:
    ctx.settlement = ("success", "reported", "x", None, None, None)
    ctx.call_id = "b"  # a field the call_unknown and call_not_pending guards read


def _opaque_call_not_pending(ctx: SettleContext) -> bool:
    return semantics_module().call_not_pending(ctx)  # hands ctx on: what it reads is not known


def semantics_module() -> Any:
    from tool_call_closure.machine import semantics

    return semantics


def test_a_guard_whose_fields_an_effect_touches_is_evaluated_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from tool_call_closure.machine import semantics

    monkeypatch.setitem(semantics.EFFECTS, "normalize_outcome", _normalize_writing_the_call_id)  # type: ignore[index]
    one, _ = _forms(Machine(TABLE).source, "settle")
    assert "settle.recheck.duplicate" in _fired(one)  # call_not_pending reads call_id
    assert "settle.recheck.stale" not in _fired(one)  # handle_not_current does not


def test_a_guard_not_inlined_is_evaluated_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from tool_call_closure.machine import semantics

    monkeypatch.setitem(semantics.GUARDS, "call_not_pending", _opaque_call_not_pending)  # type: ignore[index]
    one, _ = _forms(Machine(TABLE).source, "settle")
    assert "settle.recheck.duplicate" in _fired(one)
    assert "settle.recheck.stale" not in _fired(one)


def test_the_outline_keeps_every_recheck_row() -> None:
    """Nothing inlined, nothing known of what a guard reads: the outline re-evaluates every recheck row."""
    outline = generate_source(TABLE, {"no_caller_code": MACHINE.implementations["no_caller_code"]})
    one, two = _forms(outline, "settle")
    assert _fired(one) & _fired(two) >= {"settle.recheck.stale", "settle.recheck.duplicate"}


# --------------------------------------------------------------------------- the fields as locals


def test_every_shipped_operation_keeps_its_context_fields_as_locals() -> None:
    """Every name of the shipped semantics is inlined, so no compiled operation builds a context up front."""
    assert "a name it uses is called" not in SOURCE
    for op in TABLE.operations:
        body = _operation(SOURCE, op)
        assert "ctx = " not in body.replace("ctx = spill_", ""), op  # only a step that needs the object builds one


def test_a_settlement_builds_no_context_object(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[str] = []
    real = SettleContext.__init__

    def counting(self: SettleContext, *args: Any, **kwargs: Any) -> None:
        built.append(args[1])
        real(self, *args, **kwargs)

    monkeypatch.setattr(SettleContext, "__init__", counting)
    closure = create_tool_call_closure()
    handle = closure.begin([{"id": "a", "name": "t"}, {"id": "b", "name": "t"}]).handle
    closure.succeed(handle, "a", {"k": [1, 2]})
    closure.fail(handle, "b", ValueError("x"))
    closure.succeed(handle, "a", "again")  # a rejection
    assert built == []
    MACHINE.walk("settle", SettleContext(closure, "succeed", handle, "b", fixed_status="success", content="x"))
    assert built == ["succeed"]  # (the walk runs on the object)


def test_an_operation_using_a_called_name_runs_on_a_context_built_from_its_inputs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tool_call_closure.machine import semantics

    monkeypatch.setitem(semantics.GUARDS, "call_not_pending", _opaque_call_not_pending)  # type: ignore[index]
    machine = Machine(TABLE)
    body = _operation(machine.source, "settle")
    assert "ctx = SettleContext(closure, method, handle, call_id, outcome, fixed_status" in body
    assert "a name it uses is called" in body
    begin = _operation(machine.source, "begin")
    assert "ctx = BeginContext(" not in begin  # the other operations still keep their fields as locals


@pytest.mark.parametrize("op", sorted(TABLE.operations))
def test_a_context_sets_its_working_fields_as_its_declaration_says(op: str) -> None:
    """``Context.WORKING`` is what the compiled operations start each working field at; ``__init__`` agrees."""
    import inspect

    from tool_call_closure.machine.inliner import context_fields

    context = OPERATION_CONTEXTS[op]
    fields = context_fields(context)
    closure = create_tool_call_closure()
    closure.begin([])
    inputs = [object() for name, default in fields.inputs if default is None]
    ctx = context(closure, "m", *inputs)
    for name, source in fields.working:
        assert getattr(ctx, name) == eval(source, {"closure": closure}), (op, name)
    assert [p.name for p in list(inspect.signature(context).parameters.values())[2:]] == [n for n, _ in fields.inputs]


def _store_settlement(ctx: SettleContext) -> None:
    ctx.settlement = ("success", "reported", f"stored by a helper for {ctx.call_id}", None, None, None)


def _normalize_through_a_helper(ctx: SettleContext) -> None:
    _store_settlement(ctx)  # hands ctx on: the compiled operation builds the object, then reads it back


def test_a_statement_handing_ctx_on_gets_the_object_and_its_writes_are_read_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tool_call_closure.machine import semantics

    monkeypatch.setitem(semantics.EFFECTS, "normalize_outcome", _normalize_through_a_helper)  # type: ignore[index]
    machine = Machine(TABLE)
    body = _operation(machine.source, "settle")
    assert "ctx = spill_SettleContext(closure, method, handle, call_id" in body
    assert "a name it uses is called" not in body  # still the locals form
    closure = create_tool_call_closure()
    closure._use_machine(machine)
    handle = closure.begin([{"id": "a", "name": "t"}]).handle
    accepted = closure.succeed(handle, "a", "ignored")
    assert accepted.accepted
    assert accepted.settlement.content == "stored by a helper for a"


class _Shouting:
    def __str__(self) -> str:
        raise AssertionError("caller code ran under the lock")


class _LockThatLetsAnotherThreadIn:
    """The instance's lock, with another thread's write to the caller's reason landing just before it is taken."""

    def __init__(self, lock: Any, reason: dict[str, Any]) -> None:
        self.lock, self.reason = lock, reason

    def _is_owned(self) -> bool:
        return bool(self.lock._is_owned())

    def __enter__(self) -> bool:
        self.reason["message"] = _Shouting()  # an object: converting it runs its __str__
        return bool(self.lock.__enter__())

    def __exit__(self, *exc_info: object) -> None:
        self.lock.__exit__(*exc_info)

    # The compiled build takes the lock as acquire / try / finally release (build_compiled.unrolled_locks).
    def acquire(self) -> bool:
        return self.__enter__()

    def release(self) -> None:
        self.__exit__(None, None, None)


def test_a_close_reason_checked_for_one_acquisition_is_the_operations_own_copy() -> None:
    """spec §14: the one-acquisition check of a plain reason dict checks and keeps a copy, so a write by
    another thread between the check and the normalization under the lock reaches neither (no caller code
    runs under the lock; the close takes the reason as it was when close was called)."""
    closure = create_tool_call_closure()
    handle = closure.begin([{"id": "a", "name": "t"}]).handle
    reason: dict[str, Any] = {"status": "error", "message": "as given"}
    closure._lock = _LockThatLetsAnotherThreadIn(closure._lock, reason)  # type: ignore[assignment]
    snapshot = closure.close(handle, reason)
    assert isinstance(reason["message"], _Shouting)  # the other thread's write did land
    assert snapshot.close_reason is not None  # type: ignore[union-attr]
    assert snapshot.close_reason.message == "as given"  # type: ignore[union-attr]
