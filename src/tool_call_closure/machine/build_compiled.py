"""Build the compiled machine: the checked-in generated module and its hot helpers, compiled by mypyc.

Theory of operation
-------------------
::

    python -m tool_call_closure.machine.build_compiled                # build into src/tool_call_closure/_compiled/
    python -m tool_call_closure.machine.build_compiled --no-profile   # compile once, without the profile run
    python -m tool_call_closure.machine.build_compiled --check        # exit 1 unless a fresh build is present

Needs mypy (which includes mypyc: a development dependency), setuptools and
a C compiler.  The pure package is copied into a temporary folder; each
module of :data:`tool_call_closure._compiled.COMPILED_MODULES` is copied into
its ``_compiled`` package under its compiled name, its imports of the other
copies rewritten (:data:`~tool_call_closure._compiled.REWRITES`) and the
sha256 of its pure source appended as ``COMPILED_FROM_SHA256``; in the
machine's copy each ``with lock:`` is unrolled (:func:`unrolled_locks`), the
semantics' classes and constants are read once (:func:`hoisted_reads`),
``isascii`` on an exact ``str`` is called through the method
(:func:`exact_str_calls`) and each install is written out
(:func:`inlined_installs`): rewrites compiled code gains from and the pure
machine does not (each keeps the same steps in the same order); the
compiler's copy of the contexts imports the compiled ``Run``
(:func:`compiled_run_import`); mypyc
type-checks and compiles the copies as one group (calls between them are
native C calls), with GCC (and :data:`GCC_FLAGS`) twice: instrumented, then, after a profile run
(:data:`TRAINING`), with its counts (:func:`build`); the extensions are copied beside
``_compiled/__init__.py`` and ``build.json`` records the digests last, so an
interrupted build is never taken for a fresh one.

Guards, each for a known way a compiled build goes wrong:

* a module marked ``# mypy: ignore-errors`` compiles to functions that return
  ``None``: such a source is refused before compiling, and the build ends with
  a smoke run (:func:`smoke`) that must answer exactly as the pure machine;
* a module that defines a class is refused (its compiled copy's class would be
  another class than the pure one the rest of the package uses), except
  ``machine/run.py`` (:data:`~tool_call_closure._compiled.CLASS_HOMES`): a
  process that runs the compiled machine uses the compiled ``Run`` throughout;
* the smoke run happens in a fresh interpreter with ``TCC_MACHINE=compiled``,
  which refuses to start if the build is not the one that runs.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import types
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final, TypeVar

from tool_call_closure import _compiled
from tool_call_closure._compiled import (
    BUILD_RECORD,
    CLASS_HOMES,
    COMPILED_MODULES,
    MACHINE_MODULE,
    PACKAGE_ROOT,
    REWRITES,
    SWITCH,
    source_sha256,
)
from tool_call_closure.machine import semantics
from tool_call_closure.spec_files import spec_path

__all__ = [
    "GCC_FLAGS",
    "SMOKE",
    "TRAINING",
    "accepted_in_place",
    "build",
    "compiled_copy",
    "compiled_run_import",
    "exact_str_calls",
    "hoisted_reads",
    "inlined_installs",
    "main",
    "smoke",
    "unrolled_locks",
]

_Node = TypeVar("_Node", bound=ast.expr)

_GROUP: Final = "tool_call_closure._compiled.native"  # the shared library of the group: native__mypyc.*.so

_SETUP: Final = """
import sys
from setuptools import setup
from mypyc.build import mypycify
setup(
    name="tool-call-closure-compiled",
    ext_modules=mypycify(sys.argv[2:], group_name={group!r}, opt_level={opt!r}),
    script_args=["build_ext", "--inplace"],
)
"""

SMOKE: Final = """
import json, sys
from tool_call_closure import create_tool_call_closure, to_json
from tool_call_closure.machine.interpreter import MACHINE
c = create_tool_call_closure()
token = c.turn_token()
first = c.begin([{"id": "a", "name": "t"}, {"id": "b", "name": "t"}, {"id": "c", "name": "t"}])
answers = [first, c.active_generation, c.succeed(first.handle, "a", {"n": 1}), c.fail(first.handle, "b", "boom")]
answers += [c.settle(first.handle, "a", {"status": "success", "content": "again"}), c.snapshot()]
second = c.begin([{"id": "d", "name": "t"}], turn=c.turn_token())
answers += [second, second.superseded, c.begin([{"id": "e", "name": "t"}], turn=token), c.cancel(second.handle, "d")]
closed = c.close(second.handle, {"status": "error", "code": "timeout", "message": "late"})
answers += [closed, c.seal(second.handle), c.to_openai_chat_completions(closed), c.to_anthropic_tool_results(closed)]
answers += [c.to_openai_responses(closed), c.succeed(first.handle, "c", "stale"), c.snapshot()]
try:
    c.succeed(second.handle, 7, "ok")
except Exception as error:
    answers.append(f"{type(error).__name__}: {error}")
print(json.dumps({"origin": MACHINE.origin, "answers": [a if isinstance(a, str) else to_json(a) for a in answers]}))
"""
"""A short history through every operation; each build must answer it exactly as the pure machine does."""


def _refuse(relative: str, source: str) -> None:
    if re.search(r"^#\s*mypy:\s*ignore-errors", source, flags=re.M):
        raise SystemExit(f"{relative} is marked '# mypy: ignore-errors': mypyc would compile its functions wrong")
    classes = [node.name for node in ast.parse(source).body if isinstance(node, ast.ClassDef)]
    if classes and relative not in CLASS_HOMES:
        raise SystemExit(f"{relative} defines {classes}: a compiled copy would be another class; compile none")


def unrolled_locks(source: str) -> str:
    """Each ``with lock:`` block of ``source`` written as ``lock.acquire()`` and ``try:`` … ``finally: lock.release()``.

    In compiled code the two are the same step: between the acquisition and
    the ``try`` there is no bytecode, so no interpreter check where an
    asynchronous exception could land (the reason the pure machine keeps
    ``with``: there, the call's own check follows ``acquire()``), and an
    acquisition that raises (a signal handler's exception while waiting)
    leaves nothing to release, as ``__enter__`` raising does.  What it saves
    is the ``with`` protocol's generic work: looking up ``__enter__`` and
    ``__exit__`` on the type and calling them with argument tuples.
    """
    lines = source.splitlines(keepends=True)
    blocks = [
        node
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.With)
        and len(node.items) == 1
        and isinstance(node.items[0].context_expr, ast.Name)
        and node.items[0].context_expr.id == "lock"
        and node.items[0].optional_vars is None
    ]
    for node in sorted(blocks, key=lambda block: block.lineno, reverse=True):  # bottom up: line numbers stay valid
        assert node.end_lineno is not None
        indent = " " * node.col_offset
        first = lines[node.lineno - 1]
        assert first.strip() == "with lock:", first
        lines[node.end_lineno : node.end_lineno] = [f"{indent}finally:\n", f"{indent}    lock.release()\n"]
        lines[node.lineno - 1 : node.lineno] = [f"{indent}lock.acquire()\n", f"{indent}try:\n"]
    return "".join(lines)


def _pure_name(relative: str) -> str:
    """The pure module a compiled copy is made from, by the path of its source (``machine/run.py`` -> its name)."""
    return "tool_call_closure." + relative.removesuffix(".py").replace("/", ".")


def _compiled_constants() -> list[object]:
    """The objects a compiled module binds at its top level: a compiled module reads them as C statics already."""
    constants: list[object] = []
    for relative in COMPILED_MODULES.values():
        module = importlib.import_module(_pure_name(relative))
        for statement in ast.parse((PACKAGE_ROOT / relative).read_text(encoding="utf-8")).body:
            targets = statement.targets if isinstance(statement, ast.Assign) else [getattr(statement, "target", None)]
            constants += [getattr(module, t.id) for t in targets if isinstance(t, ast.Name) and hasattr(module, t.id)]
    return constants


_COMPILED_SOURCES: Final = frozenset(_pure_name(relative) for relative in COMPILED_MODULES.values())
"""The pure modules that have a compiled copy, by name."""


def _hoistable(value: object, constants: list[object]) -> bool:
    """A read worth doing once, at import: not a function or constant of a compiled module, nor ``cast``."""
    if value is typing.cast or any(value is constant for constant in constants):
        return False  # mypyc erases cast; a compiled module's constant is read natively already
    return not (isinstance(value, types.FunctionType) and value.__module__ in _COMPILED_SOURCES)


def hoisted_reads(source: str, alias: str, module: types.ModuleType) -> str:
    """Each read of ``alias.NAME`` in ``source`` (outside annotations) done once, at import, into a ``Final`` global.

    ``module`` is what ``alias`` names.  Compiled code reads an attribute of
    a module through the generic attribute protocol at every use (some 250
    instructions); a module-level ``Final`` of a compiled module is a C
    static.  Only classes, constants and functions compiled nowhere are
    hoisted: a function of a compiled module is called natively by name, and
    ``typing.cast`` is erased.  Sound because the machine's modules never
    rebind these names after import (the pure machine keeps the reads, so the
    tests that patch a name of the semantics patch the pure machine).
    """
    tree = ast.parse(source)
    constants = _compiled_constants()
    annotations: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.AnnAssign, ast.arg)) and node.annotation is not None:
            annotations.update(id(part) for part in ast.walk(node.annotation))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
            annotations.update(id(part) for part in ast.walk(node.returns))
    reads = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == alias
        and isinstance(node.ctx, ast.Load)
        and id(node) not in annotations
        and _hoistable(getattr(module, node.attr), constants)
    ]
    if not reads:
        return source
    lines = [line.encode("utf-8") for line in source.splitlines(keepends=True)]
    _replaced(lines, reads, lambda read: f"{alias}_{read.attr}")
    names = sorted({node.attr for node in reads})
    hoisted = "".join(f"{alias}_{name}: Final = {alias}.{name}\n" for name in names)
    return _after_imports(tree, lines, "hoisted_reads", hoisted)


def _after_imports(tree: ast.Module, lines: list[bytes], rule: str, definitions: str) -> str:
    """``lines`` (of ``tree``'s source) with ``definitions`` after the module's last top-level import."""
    last_import = max(
        statement.end_lineno or statement.lineno
        for statement in tree.body
        if isinstance(statement, (ast.Import, ast.ImportFrom))
    )
    heading = f"\n# Read once (build_compiled.{rule}): a module-level Final is a C static.\n"
    lines.insert(last_import, (heading + definitions).encode())
    return b"".join(lines).decode("utf-8")


def _replaced(lines: list[bytes], nodes: Sequence[_Node], text: Callable[[_Node], str]) -> None:
    """Each of ``nodes`` (one line each) replaced in ``lines`` by ``text(node)``, bottom up (columns stay valid)."""
    for node in sorted(nodes, key=lambda each: (each.lineno, each.col_offset), reverse=True):
        assert node.lineno == node.end_lineno
        assert node.end_col_offset is not None
        line = lines[node.lineno - 1]
        lines[node.lineno - 1] = line[: node.col_offset] + text(node).encode() + line[node.end_col_offset :]


def _exact_str(test: ast.expr) -> str | None:
    """``x`` if ``test`` is ``type(x) is str`` (``x`` a name), else None."""
    match test:
        case ast.Compare(
            left=ast.Call(func=ast.Name(id="type"), args=[ast.Name(id=subject)], keywords=[]),
            ops=[ast.Is()],
            comparators=[ast.Name(id="str")],
        ):
            return subject
    return None


def exact_str_calls(source: str) -> str:
    """Each ``x.isascii()`` that follows ``type(x) is str and`` written ``str_isascii(x)``, the method read once.

    Compiled, ``x.isascii()`` looks the method up on ``x``'s type at every
    call (mypyc has no native form of it: some 180 instructions); the method
    read once at import (``str_isascii: Final = str.isascii``) is called
    directly.  The same method runs: the condition has just checked that
    ``x`` is exactly a ``str``, so no subclass can have overridden it.
    """
    tree = ast.parse(source)
    calls: list[ast.Call] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
            for test, following in itertools.pairwise(node.values):
                subject = _exact_str(test)
                match following:
                    case ast.Call(func=ast.Attribute(value=ast.Name(id=name), attr="isascii"), args=[], keywords=[]):
                        if name == subject:
                            calls.append(following)
    if not calls:
        return source
    lines = [line.encode("utf-8") for line in source.splitlines(keepends=True)]
    _replaced(lines, calls, lambda call: f"str_isascii({ast.unparse(call.func.value)})")  # type: ignore[attr-defined]
    return _after_imports(tree, lines, "exact_str_calls", "str_isascii: Final = str.isascii\n")


def inlined_installs(source: str) -> str:
    """Each ``install_fields(closure, draft, staged)`` statement written out: the function's body, in place.

    Compiled, the call of the pure ``context.install_fields`` is a Python
    frame on every commit.  Written out, the commit is the same single
    assignment (the new run, or the one staged call record) and nothing
    that can raise follows it.  The pure machine keeps the call: the fault
    sweep (invariant I9) recognises the install by it.
    """
    out: list[str] = []
    for line in source.splitlines(keepends=True):
        found = re.fullmatch(r"( *)install_fields\(closure, (\w+), (\w+)\)\n", line)
        if found is None:
            out.append(line)
            continue
        indent, draft, staged = found.groups()
        out += [f"{indent}if {draft} is not None:\n", f"{indent}    closure._run = {draft}\n"]
        if staged != "None":
            out += [
                f"{indent}elif {staged} is not None:\n",
                f"{indent}    installed = closure._run\n",
                f"{indent}    assert installed is not None\n",
                f"{indent}    installed.calls[{staged}[0]] = {staged}[1]\n",
            ]
    return "".join(out)


def accepted_in_place(source: str) -> str:
    """Each ``Accepted`` built on its unfrozen twin and then given its class, built on an ``Accepted`` itself.

    The pure machine builds the view as :func:`values._builder` builds the
    others: an instance of ``ACCEPTED_TWIN``, its slots written, then its
    class assigned.  Compiled, the class assignment is the dearest step of a
    ``succeed`` after the lock (an audit event, a layout comparison of the
    two classes).  The copy makes the instance with ``object.__new__`` and
    writes the same slots with ``object.__setattr__``, which mypyc compiles
    to the generic slot write (it passes over the class's refusing
    ``__setattr__``, as the twin's writes do).  The same fields get the same
    values, in the same order; neither way runs the dataclass's ``__init__``.
    """
    out: list[str] = []
    lines = source.splitlines(keepends=True)
    at = 0
    while at < len(lines):
        begun = re.fullmatch(r"( *)(\w+)(: [\w.]+)? = semantics_\.ACCEPTED_TWIN\(\)\n", lines[at])
        if begun is None:
            out.append(lines[at])
            at += 1
            continue
        indent, view, annotation = begun.group(1), begun.group(2), begun.group(3) or ""
        built = [f"{indent}{view}{annotation} = object_new(semantics_.Accepted)\n"]
        at += 1
        while (written := re.fullmatch(rf"{indent}{view}\.(\w+) = (.+)\n", lines[at])) is not None:
            field, value = written.groups()
            if field == "__class__":
                if value != "semantics_.Accepted":
                    raise SystemExit(f"an ACCEPTED_TWIN becomes {value}, not Accepted: update accepted_in_place")
                break
            built.append(f'{indent}object.__setattr__({view}, "{field}", {value})\n')
            at += 1
        else:
            raise SystemExit("an ACCEPTED_TWIN is never given its class: update accepted_in_place")
        out += built
        at += 1  # past the class assignment
    if len(out) == len(lines):
        return source
    return _after_imports(
        ast.parse(source), [line.encode() for line in out], "accepted_in_place", "object_new: Final = object.__new__\n"
    )


def compiled_run_import(context_source: str) -> str:
    """The contexts' source as the compiler reads it: ``Run`` imported from its compiled copy.

    Every annotation of a run (``Instance._run``, ``Context.draft``) then
    names the compiled class, so compiled code reads a run's fields natively.
    At run time :func:`tool_call_closure._compiled.run_class` makes the same
    choice for the process.  (Only the compiler's copy of the folder changes:
    the contexts are not compiled.)"""
    pure = "from tool_call_closure.machine.run import Run\n"
    if context_source.count(pure) != 1:
        raise SystemExit("machine/context.py no longer imports Run as the build expects: update compiled_run_import")
    return context_source.replace(pure, "from tool_call_closure._compiled.machine_run import Run\n")


def compiled_copy(relative: str) -> str:
    """The text of the copy of ``relative`` that is compiled: imports of compiled modules rewritten, digest added.

    Its ``with lock:`` blocks are unrolled (:func:`unrolled_locks`); the machine's copy also gets
    :func:`hoisted_reads`, :func:`exact_str_calls` and :func:`inlined_installs`."""
    source = (PACKAGE_ROOT / relative).read_text(encoding="utf-8")
    _refuse(relative, source)
    for pure, compiled in REWRITES.items():
        source = re.sub(rf"\b{re.escape(pure)}\b", compiled, source)
    source = unrolled_locks(source)
    if relative == COMPILED_MODULES[MACHINE_MODULE]:
        source = accepted_in_place(source)  # first: it matches the reads of semantics_ that hoisted_reads rewrites
        source = inlined_installs(exact_str_calls(hoisted_reads(source, "semantics_", semantics)))
    return f'{source}\n\nCOMPILED_FROM_SHA256: str = "{source_sha256(relative)}"\n'


TRAINING: Final = """
from tool_call_closure import create_tool_call_closure
c = create_tool_call_closure(max_calls=1000)
reason = {"status": "cancelled", "code": "timeout", "message": "deadline"}
for n, rounds in ((1, 3000), (10, 600), (100, 60), (1000, 6)):
    calls = [{"id": f"call_{i}", "name": f"tool_{i % 7}"} for i in range(n)]
    for r in range(rounds):
        handle = c.begin(calls).handle
        for i in range(n):
            if r % 2 == 0:
                c.succeed(handle, f"call_{i}", "ok")
            elif i % 10 == 9:
                c.fail(handle, f"call_{i}", RuntimeError("tool failed"))
            elif i % 10 == 8:
                c.settle(handle, f"call_{i}", {"status": "cancelled", "message": "user stopped"})
            elif i % 10:
                c.succeed(handle, f"call_{i}", {"i": i, "ok": True, "text": "x" * 64})
        c.succeed(handle, "call_0", "again")  # a duplicate: rejected
        snapshot = c.close(handle, reason) if r % 2 else c.snapshot()
        if r % 2:
            c.to_openai_chat_completions(snapshot)
            c.to_openai_responses(snapshot)
            c.to_anthropic_tool_results(snapshot)
            c.succeed(handle, "call_0", "late")  # closed: rejected
"""
"""The profile run of a profiled build: the shape of an agent's turns (a batch begun, each call settled, most of
them successfully, a duplicate and a late result rejected, the batch closed and exported), at batch sizes 1 to 1000.
The C compiler's choices follow the counts of the paths it takes."""


GCC_FLAGS: Final = "-fno-semantic-interposition -fno-plt"
"""What every build with GCC adds to the C compiler's flags.  The group's code is one C file whose functions call one
another and the interpreter's: ``-fno-semantic-interposition`` lets a call between two of its functions be a direct
call (or be inlined) instead of going through the procedure linkage table, and ``-fno-plt`` makes each call into the
interpreter's library one indirect call through its address table instead of a jump into a stub.  Neither changes what
the code computes.  On the settle loop (cachegrind, docs/performance.md, eighth measurement): 1.6 % fewer instructions,
2.7 % fewer instruction-cache misses and a quarter fewer mispredicted indirect branches."""


def _compiler_is_gcc() -> bool:
    """Whether the C compiler setuptools uses is GCC, whose ``-fprofile-generate``/``-fprofile-use`` and
    :data:`GCC_FLAGS` the build uses."""
    compiler = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()  # as setuptools picks it
    try:
        version = subprocess.run([*compiler, "--version"], capture_output=True, text=True, check=False).stdout
    except OSError:
        return False
    return "Free Software Foundation" in version


def _compile(root: Path, paths: list[str], cflags: str, verbose: bool) -> None:
    """mypyc and the C compiler on ``paths`` (relative to ``root``), the extensions left beside their sources."""
    shutil.rmtree(root / "build", ignore_errors=True)  # every object compiled again, with these flags
    environment = {**os.environ, "PYTHONPATH": str(root), "CFLAGS": cflags, "LDFLAGS": cflags}
    done = subprocess.run(
        [sys.executable, "setup.py", "build_ext", *paths],
        cwd=root,
        env=environment,
        capture_output=not verbose,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"mypyc failed:\n{done.stdout}\n{done.stderr}")


def _record(digests: dict[str, str]) -> str:
    import mypy.version  # present: it just compiled

    record = {"sources": digests, "mypy": mypy.version.__version__, "python": sys.version.split()[0]}
    return json.dumps(record, indent=2) + "\n"


def _train(trainee: Path, instrumented: Path, digests: dict[str, str]) -> None:
    """Run :data:`TRAINING` on the ``instrumented`` extensions, in a fresh interpreter, from a package as installed.

    The package is copied into ``trainee`` as it is (the pure contexts: the
    machine checks its sources), the instrumented extensions beside its
    ``_compiled/__init__.py`` with their record, the table beside it.  The
    counts go where ``-fprofile-generate`` named, by the objects' paths,
    wherever the extensions are loaded from; the compiler's tree is left as it was.
    """
    package = trainee / "tool_call_closure"
    shutil.copytree(PACKAGE_ROOT, package, ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd", "build.json"))
    for extension in [*instrumented.glob("*.so"), *instrumented.glob("*.pyd")]:
        shutil.copy2(extension, package / "_compiled" / extension.name)
    (package / "_compiled" / BUILD_RECORD.name).write_text(_record(digests), encoding="utf-8")
    if not (package / "_spec").exists():  # a source checkout: the table is in spec/, outside the package
        (package / "_spec").symlink_to(spec_path("machine.json").parent, target_is_directory=True)
    environment = {**os.environ, "PYTHONPATH": str(trainee), SWITCH: "compiled"}  # refuses any other build
    trained = subprocess.run(
        [sys.executable, "-c", TRAINING], cwd=trainee, env=environment, capture_output=True, text=True, check=False
    )
    if trained.returncode != 0:
        raise SystemExit(f"the profile run failed:\n{trained.stderr}")


def build(destination: Path, opt_level: str = "3", verbose: bool = False, profile: bool = True) -> dict[str, str]:
    """Compile the copies into ``destination`` (the ``_compiled`` folder); return the digests recorded.

    With ``profile`` (and GCC), the build is profile-guided: compiled once
    instrumented, run on :data:`TRAINING` in a fresh interpreter, then compiled
    again from the same C sources with the counts, from which the compiler
    chooses its layout, inlining and branch order.  Compiled, ``succeed`` is
    one 60 kB function of which a call runs some 3 kB, twice the size of
    the first-level instruction cache: on the settle loop the profiled build
    misses that cache about 11 % less often (docs/performance.md, seventh
    measurement).  The same C code either way."""
    digests = {name: source_sha256(relative) for name, relative in COMPILED_MODULES.items()}
    with tempfile.TemporaryDirectory(prefix="tcc-mypyc-") as folder:
        root = Path(folder)
        tree = root / "tool_call_closure"
        shutil.copytree(PACKAGE_ROOT, tree, ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd", "build.json"))
        paths = []
        for name, relative in COMPILED_MODULES.items():
            path = tree / "_compiled" / f"{name}.py"
            path.write_text(compiled_copy(relative), encoding="utf-8")
            paths.append(str(path.relative_to(root)))
        context = tree / "machine" / "context.py"
        context.write_text(compiled_run_import(context.read_text(encoding="utf-8")), encoding="utf-8")
        (root / "setup.py").write_text(_SETUP.format(group=_GROUP, opt=opt_level), encoding="utf-8")
        gcc = _compiler_is_gcc()
        flags = GCC_FLAGS if gcc else ""
        if profile and gcc:
            counts = root / "profile"
            _compile(root, paths, f"{flags} -fprofile-generate={counts}", verbose)
            _train(root / "trainee", tree / "_compiled", digests)
            if not any(counts.rglob("*.gcda")):  # the second compile would then be unprofiled, silently
                raise SystemExit(f"the profile run wrote no counts into {counts}: the build is not profile-guided")
            _compile(root, paths, f"{flags} -fprofile-use={counts} -fprofile-correction -Wno-missing-profile", verbose)
        else:
            if profile:
                print("the C compiler is not GCC: built without a profile", file=sys.stderr)
            _compile(root, paths, flags, verbose)
        built = sorted((tree / "_compiled").glob("*.so")) + sorted((tree / "_compiled").glob("*.pyd"))
        BUILD_RECORD.unlink(missing_ok=True)  # no record while the extensions are replaced
        for old in [*destination.glob("*.so"), *destination.glob("*.pyd")]:
            old.unlink()
        for extension in built:
            shutil.copy2(extension, destination / extension.name)
    (destination / BUILD_RECORD.name).write_text(_record(digests), encoding="utf-8")
    return digests


def smoke(machine: str) -> dict[str, object]:
    """The :data:`SMOKE` history's answers in a fresh interpreter running ``TCC_MACHINE=machine``."""
    environment = {**os.environ, "TCC_MACHINE": machine}
    done = subprocess.run([sys.executable, "-c", SMOKE], env=environment, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the smoke run with TCC_MACHINE={machine} failed:\n{done.stderr}")
    answers: dict[str, object] = json.loads(done.stdout)
    return answers


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="exit with status 1 unless a fresh build is present")
    parser.add_argument("--opt-level", default="3", help="the C compiler's optimization level (default 3)")
    parser.add_argument("--verbose", action="store_true", help="show mypyc's and the C compiler's output")
    parser.add_argument(
        "--no-profile",
        dest="profile",
        action="store_false",
        help="compile once, without the profile run (about 3 minutes instead of 10; the code is slower)",
    )
    args = parser.parse_args(argv)
    destination = Path(_compiled.__file__).parent
    if args.check:
        why = _compiled.staleness()
        print(why or "the compiled build is fresh", file=sys.stderr if why else sys.stdout)
        return 1 if why else 0
    build(destination, args.opt_level, args.verbose, args.profile)
    try:
        compiled, pure = smoke("compiled"), smoke("pure")
    except SystemExit:
        BUILD_RECORD.unlink(missing_ok=True)  # the build is then never used
        raise
    if compiled["origin"] != "compiled" or compiled["answers"] != pure["answers"]:
        BUILD_RECORD.unlink(missing_ok=True)
        print("the compiled build answers the smoke history unlike the pure machine: not used", file=sys.stderr)
        print(json.dumps(compiled, indent=1), json.dumps(pure, indent=1), sep="\n", file=sys.stderr)
        return 1
    print(f"built {', '.join(COMPILED_MODULES)} into {destination} (smoke history answered as the pure machine)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
