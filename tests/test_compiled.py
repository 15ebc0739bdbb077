"""The compiled build (python -m tool_call_closure.machine.build_compiled) against the pure generated machine.

The compiled build is mypyc's compilation of copies of ``machine/generated.py``
and the helpers it calls on every operation (:mod:`tool_call_closure._compiled`).
These tests hold it to the pure module it was compiled from: the same response
lines and the same rows fired on every vector (fast), the same outcome and
state on every step of the bounded model check (slow), the same answers and
errors (``UsageError``, never a compiled annotation's ``TypeError``) through the
public class.  They need the build (``build_compiled``, a C compiler and mypy)
and a process that runs it (``TCC_MACHINE=compiled``, as .ci/run's compiled
pass: the suite's default is the pure machine, whose process keeps the pure
``Run`` record, which compiled code refuses); without them they are skipped, except the tests of the guards themselves: a
stale build is never used, a source mypyc would miscompile is refused, the
generator reads the pure modules.  The fault injector (invariant I9) cannot
step into compiled code: I9 is checked on the pure machine, and this build is
proved equal to it.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tables import assert_bfs_agrees
from tables import transcript as _transcript
from test_ecma_bounded import plain_trees, trees
from tool_call_closure import _compiled, create_tool_call_closure, ecma_plain
from tool_call_closure.cli.main import main
from tool_call_closure.conformance.vectors import load_vectors
from tool_call_closure.errors import FrozenValueError, TableError
from tool_call_closure.machine import build_compiled, context, generated, interpreter
from tool_call_closure.machine.interpreter import MACHINE_SWITCH, Machine, checked_in_module, implementations
from tool_call_closure.machine.table import TABLE
from tool_call_closure.values import Accepted

PROOFS = Path(__file__).resolve().parents[1] / "proofs"
COMPILED, WHY = _compiled.load(context.Run)
needs_build = pytest.mark.skipif(COMPILED is None, reason=f"the compiled build is {WHY}")

PURE = Machine(TABLE, checked_in_module())
COMPILED_MACHINE = Machine(TABLE, checked_in_module(), compiled=COMPILED) if COMPILED is not None else None


@needs_build
def test_the_compiled_build_answers_every_vector_as_the_pure_machine() -> None:
    assert COMPILED_MACHINE is not None
    assert COMPILED_MACHINE.origin == "compiled"
    for vector in load_vectors():
        assert _transcript(COMPILED_MACHINE, vector.steps) == _transcript(PURE, vector.steps), vector.id


@needs_build
def test_every_compiled_module_is_compiled_and_answers() -> None:
    """A compiled function is a builtin, not Python code; and none answers ``None`` where the pure one does not
    (mypyc's failure mode on a ``# mypy: ignore-errors`` module): the smoke history, through the public class."""
    assert COMPILED is not None
    for name in _compiled.COMPILED_MODULES:
        module = sys.modules[f"tool_call_closure._compiled.{name}"]
        assert str(module.__file__).endswith(".so") or str(module.__file__).endswith(".pyd")
        assert _compiled.source_sha256(_compiled.COMPILED_MODULES[name]) == module.COMPILED_FROM_SHA256
    for entry in COMPILED.ENTRIES.values():
        assert not inspect.isfunction(entry), entry  # compiled: a builtin function, no Python frame
    compiled, pure = build_compiled.smoke("compiled"), build_compiled.smoke("pure")
    assert (compiled["origin"], pure["origin"]) == ("compiled", "checked in")
    assert compiled["answers"] == pure["answers"]
    assert "null" not in compiled["answers"][:5]  # begin, active_generation, succeed, fail, duplicate settle


_BAD_INPUTS = """
import json
from tool_call_closure import UsageError, create_tool_call_closure
from tool_call_closure.machine.interpreter import MACHINE
c = create_tool_call_closure()
handle = c.begin([{"id": "a", "name": "t"}]).handle
attempts = [
    lambda: c.begin("calls"), lambda: c.begin([{"id": 1, "name": "t"}]), lambda: c.begin([], turn=3),
    lambda: c.succeed(handle, 7, "ok"), lambda: c.succeed(handle, None, "ok"), lambda: c.settle(handle, "a", 5),
    lambda: c.settle(handle, "a", {"status": "won"}), lambda: c.fail(handle, b"a"), lambda: c.cancel(handle, "a", code=5),
    lambda: c.succeed({"generation": "1"}, "a", "ok"), lambda: c.close(handle, 5),
    lambda: c.close(handle, {"status": "odd"}), lambda: c.to_openai_chat_completions(5), lambda: c.seal(3),
]
errors = []
for attempt in attempts:
    try:
        errors.append(["answered", str(attempt())])
    except UsageError as error:
        errors.append([type(error).__name__, error.code, str(error)])
    except Exception as error:
        errors.append([type(error).__name__, str(error)])
print(json.dumps({"origin": MACHINE.origin, "errors": errors}))
"""


def _bad_inputs(machine: str) -> dict[str, Any]:
    environment = {**os.environ, MACHINE_SWITCH: machine}
    done = subprocess.run(
        [sys.executable, "-c", _BAD_INPUTS], env=environment, capture_output=True, text=True, check=True
    )
    answers: dict[str, Any] = json.loads(done.stdout)
    return answers


@needs_build
def test_the_public_class_raises_usage_error_on_bad_input_with_the_compiled_build() -> None:
    """The public class is pure Python, and the compiled entry points annotate caller inputs as ``Any``: a bad
    argument reaches the validation that raises ``UsageError``, as on the pure machine, never a ``TypeError``."""
    compiled, pure = _bad_inputs("compiled"), _bad_inputs("pure")
    assert (compiled["origin"], pure["origin"]) == ("compiled", "checked in")
    assert compiled["errors"] == pure["errors"]
    assert {error[0] for error in compiled["errors"]} <= {"UsageError", "LimitError", "answered"}


@pytest.mark.slow  # a BFS of several thousand transitions, every step twice
@needs_build
def test_the_compiled_build_agrees_with_the_pure_machine_on_every_bfs_reachable_step() -> None:
    """Every transition the bounded model check explores on the compiled build, replayed on the pure machine."""
    assert COMPILED_MACHINE is not None
    assert_bfs_agrees(COMPILED_MACHINE, PURE, "the compiled build and the pure machine")


def test_a_stale_or_missing_build_is_never_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    record = tmp_path / "build.json"
    monkeypatch.setattr(_compiled, "BUILD_RECORD", record)
    assert _compiled.load(context.Run)[0] is None
    assert str(_compiled.staleness()).startswith("not built")
    digests = {name: _compiled.source_sha256(relative) for name, relative in _compiled.COMPILED_MODULES.items()}
    record.write_text(json.dumps({"sources": {**digests, "machine_generated": "0" * 64}}), encoding="utf-8")
    assert _compiled.staleness() == "stale: machine/generated.py changed since the build (rebuild it)"
    assert _compiled.load(context.Run) == (None, _compiled.staleness())


def test_the_compiled_switch_refuses_to_run_without_a_fresh_build(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MACHINE_SWITCH, "compiled")
    monkeypatch.setattr(_compiled, "load", lambda _run: (None, "stale: machine/generated.py changed since the build"))
    with pytest.raises(TableError, match="TCC_MACHINE=compiled: the compiled build is stale"):
        interpreter._shipped_machine()
    monkeypatch.setenv(MACHINE_SWITCH, "generated")  # the default falls back to the pure module
    assert interpreter._shipped_machine().origin == "checked in"


def test_a_source_mypyc_would_miscompile_is_refused() -> None:
    with pytest.raises(SystemExit, match="ignore-errors"):
        build_compiled._refuse("x.py", "# mypy: ignore-errors\ndef f() -> int:\n    return 1\n")
    with pytest.raises(SystemExit, match="defines \\['Record'\\]"):
        build_compiled._refuse("x.py", "class Record:\n    pass\n")
    build_compiled._refuse("machine/run.py", "class Run:\n    pass\n")  # the one home of a compiled class
    assert frozenset({"machine/run.py"}) == _compiled.CLASS_HOMES
    for relative in _compiled.COMPILED_MODULES.values():
        build_compiled.compiled_copy(relative)  # the shipped sources pass both guards


def test_the_compiled_copies_call_one_another_and_record_their_source() -> None:
    copy = build_compiled.compiled_copy("machine/generated.py")
    assert "import tool_call_closure._compiled.machine_semantics as semantics_" in copy
    assert "tool_call_closure.machine.semantics" not in copy
    assert copy.endswith(f'COMPILED_FROM_SHA256: str = "{_compiled.source_sha256("machine/generated.py")}"\n')
    assert "from tool_call_closure._compiled.machine_reading import" in build_compiled.compiled_copy(
        "machine/semantics.py"
    )


def test_the_generator_reads_the_pure_semantics_whatever_runs() -> None:
    """Compiled functions have no source or annotations to read: the generator is given the pure ones."""
    for kind in implementations().values():
        for function in kind.values():
            assert function.__module__.startswith("tool_call_closure.machine."), function
            assert inspect.getsource(function)
    assert interpreter.GENERATED_FROM[0].__name__ == "tool_call_closure.machine.semantics"
    assert inspect.getsource(generated)  # the machine's source shown (--emit-python) is the pure module's


def test_version_names_the_build_that_runs(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--version"])
    out = capsys.readouterr().out
    assert "machine: " in out
    assert interpreter.MACHINE.origin in out
    create_tool_call_closure()  # (the class of the machine named is the one that runs)


@pytest.mark.slow  # a wheel built and installed, and the vectors run from it
@needs_build
def test_a_wheel_built_with_the_hook_carries_the_compiled_machine_and_runs_it(tmp_path: Path) -> None:
    """``HATCH_BUILD_HOOK_ENABLE_CUSTOM=true`` (hatch_build.py): the fresh build goes into a platform wheel, and
    the installed wheel runs it (``--version``) and answers every vector."""
    root = Path(__file__).resolve().parents[1]
    environment = {**os.environ, "HATCH_BUILD_HOOK_ENABLE_CUSTOM": "true"}
    wheel_command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path)]
    done = subprocess.run([*wheel_command, "."], cwd=root, env=environment, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = tmp_path.glob("tool_call_closure-*.whl")
    assert "py3-none-any" not in wheel.name
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "tool_call_closure/_compiled/build.json" in names
    assert {f"tool_call_closure/_compiled/{name}" for name in _compiled.COMPILED_MODULES} <= {
        n.split(".")[0] for n in names
    }
    target = tmp_path / "site"
    install = [sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(target), str(wheel)]
    assert subprocess.run(install, capture_output=True, check=False).returncode == 0
    clean = {"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin", MACHINE_SWITCH: "compiled"}
    for command, expected in ((["--version"], "(machine: compiled)"), (["conform", "--no-report"], "failed 0")):
        ran = subprocess.run(
            [sys.executable, "-m", "tool_call_closure", *command],
            cwd=tmp_path,
            env=clean,
            capture_output=True,
            text=True,
            check=False,
        )
        assert ran.returncode == 0, ran.stdout + ran.stderr
        assert expected in ran.stdout


def test_the_compiled_copy_unrolls_each_with_lock_into_acquire_try_finally_release() -> None:
    """In compiled code ``lock.acquire()`` then ``try``/``finally: lock.release()`` is ``with lock:`` (no bytecode
    between the acquisition and the ``try``); the pure machine keeps ``with`` (I9's fault sweep steps through it)."""
    source = Path(generated.__file__).read_text(encoding="utf-8")
    blocks = source.count("with lock:\n")
    copy = build_compiled.compiled_copy("machine/generated.py")
    assert blocks > 0
    assert "with lock:" not in copy
    assert copy.count("lock.acquire()\n") == len(re.findall(r"finally:\n +lock\.release\(\)\n", copy)) == blocks
    program = "def f(lock, x):\n    with lock:\n        if x:\n            return 1\n        y = 2\n    return y\n"
    unrolled = build_compiled.unrolled_locks(program)
    assert unrolled == (
        "def f(lock, x):\n    lock.acquire()\n    try:\n        if x:\n            return 1\n        y = 2\n"
        "    finally:\n        lock.release()\n    return y\n"
    )


def test_an_accepted_built_in_place_is_the_one_its_constructor_builds() -> None:
    """The ``accepted`` result builds its view in place (pure: an unfrozen twin given the class; compiled: an
    ``Accepted`` whose slots are written, see below): the same value, repr and settlement as the dataclass
    constructor makes, on either build."""
    from tool_call_closure.values import ACCEPTED_TWIN, Accepted, Settlement

    closure = create_tool_call_closure()
    handle = closure.begin([{"id": "a", "name": "t"}]).handle
    built = closure.succeed(handle, "a", "ok")
    expected = Accepted(generation=1, call_id="a", settlement=Settlement("success", "reported", "ok"))
    assert type(built) is Accepted
    assert repr(built) == repr(expected)
    assert built == expected
    assert built.settlement == expected.settlement
    assert ACCEPTED_TWIN.__slots__ == Accepted.__slots__
    assert ACCEPTED_TWIN.__bases__ == Accepted.__bases__


def test_the_machine_copy_reads_the_semantics_classes_and_foreign_functions_once_at_import() -> None:
    """``semantics_.Accepted`` in compiled code is a generic attribute read at every use; the machine's copy reads
    each class, constant and function compiled nowhere once, into a module-level Final (a C static).  A function
    of a compiled module keeps its native call, ``cast`` stays erased, annotations are untouched."""
    copy = build_compiled.compiled_copy("machine/generated.py")
    for name in ("Accepted", "BatchHandle", "spec_error"):
        assert f"\nsemantics__{name}: Final = semantics_.{name}\n" in copy
        reads = re.findall(rf"(?<!: )semantics_\.{name}\b", copy)  # an annotation is ": semantics_.Accepted"
        assert reads == [f"semantics_.{name}"], name  # the Final's one read
    assert "semantics_.bounded_string(" in copy  # a native call between compiled modules
    assert "semantics__bounded_string" not in copy
    assert "semantics_.Any" in copy  # an annotation
    program = (
        "import m as semantics_\nfrom typing import Final\n\n"
        "def f(x: semantics_.Thing) -> object:\n"
        "    return semantics_.cast(int, semantics_.helper(semantics_.Thing, x))\n"
    )
    module = type(sys)("m")
    module.Thing, module.cast, module.helper = dict, __import__("typing").cast, build_compiled.smoke
    hoisted = build_compiled.hoisted_reads(program, "semantics_", module)
    assert hoisted == (
        "import m as semantics_\nfrom typing import Final\n\n"
        "# Read once (build_compiled.hoisted_reads): a module-level Final is a C static.\n"
        "semantics__Thing: Final = semantics_.Thing\nsemantics__helper: Final = semantics_.helper\n\n"
        "def f(x: semantics_.Thing) -> object:\n"
        "    return semantics_.cast(int, semantics__helper(semantics__Thing, x))\n"
    )


def test_a_process_uses_one_run_class_the_compiled_one_exactly_when_the_compiled_machine_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The compiled machine's code accepts its own ``Run`` only: ``context.Run`` is that class when the compiled
    machine is to run, the pure one otherwise; ``load`` refuses a process that chose the pure one."""
    from tool_call_closure.machine import run

    for switch in ("pure", "walk"):
        monkeypatch.setenv(MACHINE_SWITCH, switch)
        assert _compiled.run_class(run.Run) is run.Run
    monkeypatch.setattr(_compiled, "staleness", lambda: "not built")
    monkeypatch.setenv(MACHINE_SWITCH, "generated")
    assert _compiled.run_class(run.Run) is run.Run
    monkeypatch.undo()
    if COMPILED is None:
        assert context.Run is run.Run
        return
    compiled_run = sys.modules["tool_call_closure._compiled.machine_run"].Run
    assert context.Run is compiled_run
    assert _compiled.run_class(run.Run) is compiled_run
    loaded, why = _compiled.load(run.Run)  # as in a process started with TCC_MACHINE=pure
    assert loaded is None
    assert why.startswith("not usable in this process: it chose the pure Run record (TCC_MACHINE="), why


def test_the_compiler_reads_every_run_annotation_as_the_compiled_run() -> None:
    """The build's copy of the contexts imports ``Run`` from its compiled copy (so ``closure._run`` is read as the
    native class); a contexts module that imports it otherwise stops the build instead of compiling slow code."""
    context_source = (Path(_compiled.PACKAGE_ROOT) / "machine" / "context.py").read_text(encoding="utf-8")
    rewritten = build_compiled.compiled_run_import(context_source)
    assert "from tool_call_closure._compiled.machine_run import Run\n" in rewritten
    assert "tool_call_closure.machine.run import" not in rewritten
    assert rewritten.replace("_compiled.machine_run", "machine.run") == context_source
    with pytest.raises(SystemExit, match="no longer imports Run"):
        build_compiled.compiled_run_import("from tool_call_closure.machine.context_run import Run\n")


def test_the_calls_a_close_settles_share_one_settlement_record_on_either_build() -> None:
    """ADP-5: exports render each distinct settlement once, so the calls one close settles share one record object.
    Compiled, a tuple-typed local is held unboxed and boxed anew at each use (the shared record is typed ``Any``)."""
    closure = create_tool_call_closure()
    handle = closure.begin([{"id": call_id, "name": "t"} for call_id in "abcd"]).handle
    closure.succeed(handle, "a", "ok")
    closure.close(handle, {"message": "late"})
    run = closure._run
    assert run is not None
    settlements = [call[3] for call in run.calls]
    assert settlements[1] is settlements[2] is settlements[3]
    assert settlements[0] is not settlements[1]


def test_the_machine_copy_calls_isascii_through_the_method_only_where_the_subject_is_exactly_a_str() -> None:
    """``x.isascii()`` looks the method up at every compiled call; after ``type(x) is str and`` the copy calls
    ``str.isascii`` read once.  Anywhere else (no exact-type check, another subject) the call is left alone: a
    subclass of ``str`` may override the method."""
    copy = build_compiled.compiled_copy("machine/generated.py")
    assert ".isascii()" not in copy
    assert copy.count("str_isascii(") == Path(generated.__file__).read_text(encoding="utf-8").count(".isascii()")
    assert "\nstr_isascii: Final = str.isascii\n" in copy
    program = (
        "from typing import Final\n\n"
        "def f(x: object, y: str) -> bool:\n"
        "    return (type(x) is str and x.isascii()) or y.isascii() or (type(y) is str and x.isascii())\n"
    )
    assert build_compiled.exact_str_calls(program) == (
        "from typing import Final\n\n"
        "# Read once (build_compiled.exact_str_calls): a module-level Final is a C static.\n"
        "str_isascii: Final = str.isascii\n\n"
        "def f(x: object, y: str) -> bool:\n"
        "    return (type(x) is str and str_isascii(x)) or y.isascii() or (type(y) is str and x.isascii())\n"
    )


def test_the_machine_copy_writes_each_install_out_in_place() -> None:
    """Compiled, a call of the pure ``install_fields`` is a Python frame on every commit: the copy writes its body
    in place, the same single assignment last (the pure machine keeps the call, which the fault sweep follows)."""
    copy = build_compiled.compiled_copy("machine/generated.py")
    assert "install_fields(" in Path(generated.__file__).read_text(encoding="utf-8")
    assert "install_fields(" not in copy.replace("import", "").split("install_fields,", 1)[-1]
    program = "def f():\n    install_fields(closure, draft, None)\n    if x:\n        install_fields(closure, d, s)\n"
    assert build_compiled.inlined_installs(program) == (
        "def f():\n    if draft is not None:\n        closure._run = draft\n    if x:\n        if d is not None:\n"
        "            closure._run = d\n        elif s is not None:\n            installed = closure._run\n"
        "            assert installed is not None\n            installed.calls[s[0]] = s[1]\n"
    )


def test_the_machine_copy_builds_each_accepted_on_an_accepted_not_on_its_twin() -> None:
    """Compiled, giving the twin its class (``view.__class__ = Accepted``) is the dearest step of a ``succeed`` after
    the lock: the copy makes an ``Accepted`` with ``object.__new__`` and writes the same slots, in the same order,
    with ``object.__setattr__`` (the pure machine keeps the twin).  A twin the copy cannot follow stops the build."""
    pure = Path(generated.__file__).read_text(encoding="utf-8")
    copy = build_compiled.compiled_copy("machine/generated.py")
    assert pure.count("semantics_.ACCEPTED_TWIN()") > 0
    assert "ACCEPTED_TWIN" not in copy
    assert ".__class__ =" not in copy
    assert copy.count("object_new(semantics__Accepted)") == pure.count("semantics_.ACCEPTED_TWIN()")
    assert "\nobject_new: Final = object.__new__\n" in copy
    program = (
        "import x\n\ndef f(g, c):\n    v: semantics_.Any = semantics_.ACCEPTED_TWIN()\n    v.generation = g\n"
        "    v.call_id = c\n    v.__class__ = semantics_.Accepted\n    return v\n"
    )
    assert build_compiled.accepted_in_place(program) == (
        "import x\n\n# Read once (build_compiled.accepted_in_place): a module-level Final is a C static.\n"
        "object_new: Final = object.__new__\n\ndef f(g, c):\n"
        "    v: semantics_.Any = object_new(semantics_.Accepted)\n"
        '    object.__setattr__(v, "generation", g)\n    object.__setattr__(v, "call_id", c)\n    return v\n'
    )
    with pytest.raises(SystemExit, match="never given its class"):
        build_compiled.accepted_in_place("import x\nv = semantics_.ACCEPTED_TWIN()\nv.a = 1\nreturn v\n")
    with pytest.raises(SystemExit, match=r"becomes semantics_\.Rejection"):
        build_compiled.accepted_in_place(
            "import x\nv = semantics_.ACCEPTED_TWIN()\nv.__class__ = semantics_.Rejection\n"
        )


def test_an_accepted_the_build_makes_is_an_ordinary_sealed_accepted() -> None:
    """The view the compiled machine returns from ``succeed`` is the class's own (no twin left behind), refuses
    writes as every value does, and reads its settlement as the pure machine's does."""
    closure = create_tool_call_closure()
    handle = closure.begin([{"id": "a", "name": "t"}]).handle
    accepted = closure.succeed(handle, "a", {"n": 1})
    assert type(accepted) is Accepted
    assert (accepted.generation, accepted.call_id, accepted.settlement.content) == (1, "a", '{"n":1}')
    with pytest.raises(FrozenValueError):
        accepted.call_id = "b"  # type: ignore[misc]


def test_the_profile_run_is_an_agents_turns_through_every_settling_operation() -> None:
    """The profiled build's training run (``build_compiled.TRAINING``) runs on the public API as it is, and takes the
    paths an agent's turns take: begin, each way of settling, a rejected duplicate and a late result, close, the
    exports.  (If the API moved under it, the build's profile run would fail and stop the build.)"""
    rows: list[str] = []
    real = create_tool_call_closure

    def traced(**options: Any) -> Any:
        closure = real(**options)
        closure._trace = rows
        return closure

    namespace: dict[str, Any] = {}
    source = build_compiled.TRAINING.replace(
        "from tool_call_closure import create_tool_call_closure\n", "create_tool_call_closure = traced\n"
    )
    assert source != build_compiled.TRAINING
    exec(source, {"traced": traced}, namespace)  # the build's own constant
    fired = set(rows)
    for row in (
        "begin.commit.start",
        "settle.commit.record",
        "settle.admit.duplicate",
        "settle.admit.closed",
        "close.commit.close",
        "export.commit.render",
    ):
        assert row in fired, (row, sorted(fired))


def test_a_build_whose_profile_run_fails_stops_and_leaves_the_installed_build_alone(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The profiled build compiles twice around the profile run; a profile run that fails (here: the instrumented
    compile is skipped, so the run's ``TCC_MACHINE=compiled`` finds no build) stops the build before anything is
    copied, and the extensions already installed stay as they were."""
    compiles: list[str] = []
    monkeypatch.setattr(build_compiled, "_compile", lambda _root, _paths, cflags, _verbose: compiles.append(cflags))
    monkeypatch.setattr(build_compiled, "_compiler_is_gcc", lambda: True)
    installed = tmp_path / "native.so"
    installed.write_bytes(b"the installed build")
    with pytest.raises(
        SystemExit, match=r"(?s)the profile run failed.*TCC_MACHINE=compiled: the compiled build is not"
    ):
        build_compiled.build(tmp_path, profile=True)
    assert len(compiles) == 1
    assert compiles[0].startswith(f"{build_compiled.GCC_FLAGS} -fprofile-generate=")
    assert installed.read_bytes() == b"the installed build"


def test_a_profile_run_that_writes_no_counts_stops_the_build(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The second compile passes ``-Wno-missing-profile`` (a function the profile run never entered has no counts), so
    a profile run that wrote no counts at all would give an unprofiled build without a word: the build stops."""
    compiles: list[str] = []
    monkeypatch.setattr(build_compiled, "_compile", lambda _root, _paths, cflags, _verbose: compiles.append(cflags))
    monkeypatch.setattr(build_compiled, "_compiler_is_gcc", lambda: True)
    monkeypatch.setattr(build_compiled, "_train", lambda _trainee, _instrumented, _digests: None)
    installed = tmp_path / "native.so"
    installed.write_bytes(b"the installed build")
    with pytest.raises(SystemExit, match="the profile run wrote no counts"):
        build_compiled.build(tmp_path, profile=True)
    assert len(compiles) == 1
    assert installed.read_bytes() == b"the installed build"


@pytest.mark.parametrize("wheel", [False, True], ids=["checkout", "wheel"])
def test_the_profile_run_trains_a_copy_of_the_package_as_installed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, wheel: bool
) -> None:
    """The profile run loads the instrumented extensions from a copy of the package as it is installed, with their
    record and the table: a checkout's ``spec/`` linked in, or the ``_spec/`` a wheel's package already has (which a
    link over it would break).  The profile run here checks that layout from inside the fresh interpreter."""
    package = tmp_path / "installed"
    (package / "_compiled").mkdir(parents=True)
    if wheel:
        (package / "_spec").mkdir()
    instrumented = tmp_path / "instrumented"
    instrumented.mkdir()
    (instrumented / "native.so").write_bytes(b"an instrumented extension")
    monkeypatch.setattr(build_compiled, "PACKAGE_ROOT", package)
    layout = (
        "from pathlib import Path\n"
        "package = Path('tool_call_closure')\n"
        "assert (package / '_compiled' / 'native.so').read_bytes() == b'an instrumented extension'\n"
        "assert json.loads((package / '_compiled' / 'build.json').read_text())['sources'] == {'m': 'digest'}\n"
        f"assert (package / '_spec').is_symlink() is {not wheel}\n"
    )
    monkeypatch.setattr(build_compiled, "TRAINING", "import json\n" + layout)
    build_compiled._train(tmp_path / "trainee", instrumented, {"m": "digest"})
    assert not (package / "_compiled" / "native.so").exists()  # the package itself is left alone
    monkeypatch.setattr(build_compiled, "TRAINING", "raise SystemExit('the layout is not the installed one')")
    with pytest.raises(SystemExit, match=r"(?s)the profile run failed:.*not the installed one"):
        build_compiled._train(tmp_path / "again", instrumented, {"m": "digest"})


def test_without_gcc_or_without_a_profile_the_build_compiles_once_with_no_profile_flags(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``--no-profile``, or a C compiler other than GCC (whose profile flags the build uses), compiles once: with
    GCC's own flags (``GCC_FLAGS``) when it is GCC, with none otherwise."""
    assert build_compiled.GCC_FLAGS == "-fno-semantic-interposition -fno-plt"
    for profile, gcc, flags in ((False, True, build_compiled.GCC_FLAGS), (True, False, "")):
        compiles: list[str] = []
        monkeypatch.setattr(build_compiled, "_compile", lambda _r, _p, cflags, _v, into=compiles: into.append(cflags))
        monkeypatch.setattr(build_compiled, "_compiler_is_gcc", lambda answer=gcc: answer)
        monkeypatch.setattr(build_compiled, "BUILD_RECORD", tmp_path / "build.json")
        build_compiled.build(tmp_path, profile=profile)
        assert compiles == [flags]
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setattr(build_compiled.sysconfig, "get_config_var", lambda _name: "/no/such/compiler")
    assert build_compiled._compiler_is_gcc() is False
    monkeypatch.setattr(build_compiled.sysconfig, "get_config_var", lambda _name: "gcc")
    monkeypatch.setenv("CC", "/no/such/compiler")  # setuptools compiles with $CC when it is set
    assert build_compiled._compiler_is_gcc() is False
    monkeypatch.delenv("CC")
    monkeypatch.setattr(build_compiled.sysconfig, "get_config_var", lambda _name: sys.executable)  # not GCC
    assert build_compiled._compiler_is_gcc() is False


@needs_build
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(plain_trees, trees), st.integers(0, 200) | st.just(sys.maxsize))
def test_the_compiled_plain_json_writer_answers_as_the_pure_one(value: Any, budget: int) -> None:
    """``ecma_plain`` is compiled with the machine (every success's content and every export's error text go through
    it): its compiled copy answers exactly as the pure module, text or ``None``, on plain data and on anything else,
    within any budget."""
    compiled = sys.modules["tool_call_closure._compiled.ecma_plain"]
    assert compiled.plain_json_text(value, budget) == ecma_plain.plain_json_text(value, budget)


@needs_build
@given(st.text(max_size=8) | st.none(), st.text(max_size=8) | st.integers(), st.text(max_size=4) | st.none())
def test_the_compiled_error_text_answers_as_the_pure_one(code: Any, message: Any, state: Any) -> None:
    compiled = sys.modules["tool_call_closure._compiled.ecma_plain"]
    assert compiled.error_text(code, message, state) == ecma_plain.error_text(code, message, state)
    assert compiled.error_text(code, message) == ecma_plain.error_text(code, message)
