"""Run CrossHair over ``proofs/contracts.py`` and report every contract: VERIFIED, BOUNDED or REFUTED.

Usage::

    python proofs/run_crosshair.py                 # the CI budget (4 s of CPU per contract)
    python proofs/run_crosshair.py --timeout 60    # a longer search
    python proofs/run_crosshair.py --json report.json
    python proofs/run_crosshair.py --only interpreter_step --timeout 30
    python proofs/run_crosshair.py --sweep         # no CrossHair: every reachable (state, operation), concretely

It runs (one process, the contracts checked one after another)::

    python -m crosshair check --report_all --per_condition_timeout=<N> \\
        --extra_plugin=proofs/crosshair_plugin.py proofs/contracts.py

(``--extra_plugin`` takes one *or more* files, so written as two words before the target it
would swallow the target too; the ``=`` form takes exactly one.)  ``PYTHONPATH`` gets the
contracts' directory and ``src/``, and ``PYTHONHASHSEED=0`` keeps set and dict orders fixed.

What ``--report_all`` prints (crosshair-tool 0.0.113, measured)
---------------------------------------------------------------
Lines ``<file>:<line>: <info|error>: <text>``, one per contract result:

* ``info: Confirmed over all paths.`` at the ``post:`` line — CrossHair exhausted every
  path: **VERIFIED** (within the ``pre:`` bounds, and modulo CrossHair's models of builtins);
* ``info: Not confirmed.`` at the ``post:`` line — the time bound was reached without a
  counterexample: **BOUNDED**;
* ``error: ...`` — a counterexample: **REFUTED**.  At the ``post:`` line for a false
  condition (``false when calling f(...) (which returns ...)``) or a condition that raised
  (``Error while evaluating post condition: ...``); at a line of the function (or its ``def``
  line) for an exception in the body;
* ``info: Unable to meet precondition.`` at a ``pre:`` line — no input got past the
  preconditions, so nothing was checked (CrossHair still exits 0): **VACUOUS**.  The functions
  with a vacuous contract are checked once more with four times the budget (a loaded machine
  can starve the search); only a contract vacuous again is reported VACUOUS;
* import errors and crashes: a traceback on stderr and exit code 2.

Every contract of a function is analysed separately, but CrossHair prints its lines only at
the end, sorted by line, and keeps one line per source position (the most severe message when
several contracts report at the same place).  So a line at a ``pre:`` line or in the body
stands for every contract of that function without a line of its own (an exception in the body
usually refutes them all at once; an unsatisfiable precondition makes them all vacuous).

The expected contracts come from the source: every ``post:`` line in the docstring of a
top-level function (a function with ``pre:`` lines and no ``post:`` line has one implicit
contract at its ``def`` line, as CrossHair gives it).  A trailing ``# comment`` on a
``post:`` line names the contract (``# I1``).

Counterexamples are replayed: the runner imports the contracts module, evaluates the
arguments CrossHair printed, checks the preconditions and runs the function and the
condition concretely, and says whether the failure reproduces outside CrossHair.

Exit status: 0 when every contract is VERIFIED or BOUNDED; 1 when one is REFUTED; 2 when
one is VACUOUS or has no result line, when CrossHair's output has a line the runner cannot
place, or when CrossHair fails (its exit status 2, a traceback, or the wall-clock guard).
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import math
import os
import re
import subprocess
import sys
import time
import types
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final

HERE: Final = Path(__file__).resolve().parent
ROOT: Final = HERE.parent
DEFAULT_CONTRACTS: Final = HERE / "contracts.py"
DEFAULT_PLUGIN: Final = HERE / "crosshair_plugin.py"
DEFAULT_TIMEOUT: Final = 4.0  # CPU seconds per contract: the CI budget

_LINE: Final = re.compile(r"^(?P<file>.+?):(?P<line>\d+): (?P<level>info|error): (?P<text>.*)$")
_CONDITION: Final = re.compile(r"^\s*(?P<kind>pre|post)\s*:\s*(?P<expr>.*?)\s*$")
CONFIRMED: Final = "Confirmed over all paths."
NOT_CONFIRMED: Final = "Not confirmed."
PRE_UNSAT: Final = "Unable to meet precondition"

VERIFIED: Final = "VERIFIED"
BOUNDED: Final = "BOUNDED"
REFUTED: Final = "REFUTED"
VACUOUS: Final = "VACUOUS"
NO_RESULT: Final = "NO RESULT"


@dataclass
class Contract:
    """One postcondition of one function: what CrossHair checks as a unit."""

    function: str
    line: int
    expr: str
    label: str
    status: str = NO_RESULT
    detail: str = ""  # CrossHair's message
    where: int = 0  # the line CrossHair reported it at
    replay: str = ""

    @property
    def name(self) -> str:
        return f"{self.function}:{self.label}"


@dataclass
class Function:
    """A top-level function with contracts: where it is, its preconditions and its contracts."""

    name: str
    first: int  # the def line (or its first decorator)
    last: int
    pre_lines: dict[int, str] = field(default_factory=dict)
    contracts: list[Contract] = field(default_factory=list)


def discover(path: Path) -> list[Function]:
    """The contracts CrossHair will check in ``path``, read from the docstrings' source lines."""
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    functions = []
    for node in ast.parse(source).body:
        if not isinstance(node, ast.FunctionDef):
            continue
        doc = node.body[0] if node.body else None
        if not (isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant) and isinstance(doc.value.value, str)):
            continue
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        fn = Function(node.name, first, node.end_lineno or node.lineno)
        posts = 0
        for number in range(doc.lineno, (doc.end_lineno or doc.lineno) + 1):
            match = _CONDITION.match(lines[number - 1].replace('"""', "").replace("'''", ""))
            if not match or not match.group("expr"):
                continue
            expr = match.group("expr")
            if match.group("kind") == "pre":
                fn.pre_lines[number] = expr
                continue
            posts += 1
            code, _, comment = _split_comment(expr)
            fn.contracts.append(Contract(node.name, number, code, comment or f"post{posts}"))
        if fn.pre_lines and not fn.contracts:
            fn.contracts.append(Contract(node.name, first, "True", "pre-only"))
        if fn.contracts:
            functions.append(fn)
    return functions


def _split_comment(expr: str) -> tuple[str, str, str]:
    """``expr`` split at a trailing ``# comment`` that is outside string literals."""
    quote = ""
    for index, ch in enumerate(expr):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#":
            return expr[:index].rstrip(), "#", expr[index + 1 :].strip()
    return expr, "", ""


@dataclass
class Run:
    """What one CrossHair run produced, as the runner read it."""

    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    problems: list[str] = field(default_factory=list)


def run_crosshair(
    contracts: Path, plugin: Path, timeout: float, wall_limit: float, targets: Sequence[str] = ()
) -> tuple[list[str], Run]:
    """Run ``crosshair check`` on ``contracts`` (or on ``file:line`` targets in it); return the command and output."""
    command = [
        sys.executable,
        "-m",
        "crosshair",
        "check",
        "--report_all",
        f"--per_condition_timeout={timeout:g}",
        f"--extra_plugin={plugin}",
        *(targets or [str(contracts)]),
    ]
    env = dict(os.environ)
    paths = [str(contracts.parent), str(ROOT / "src")]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["PYTHONHASHSEED"] = "0"
    start = time.monotonic()
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=wall_limit, check=False)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        run = Run(None, out, err, time.monotonic() - start)
        run.problems.append(f"CrossHair did not finish within the wall-clock guard of {wall_limit:.0f} s")
        return command, run
    return command, Run(done.returncode, done.stdout, done.stderr, time.monotonic() - start)


def attribute(functions: list[Function], contracts_path: Path, run: Run) -> None:
    """Give each contract its status from CrossHair's output lines; record what cannot be placed.

    A line at a ``post:`` line is that contract's own result.  CrossHair prints one line per
    source position (it keeps the most severe message when several conditions report at the
    same line), so a message at a ``pre:`` line or in a function's body stands for every
    contract of that function that has no line of its own.
    """
    by_post = {c.line: c for fn in functions for c in fn.contracts}
    shared: dict[str, list[tuple[int, str, str]]] = {fn.name: [] for fn in functions}
    target = contracts_path.resolve()
    for raw in run.stdout.splitlines():
        if not raw.strip():
            continue
        match = _LINE.match(raw)
        if not match or Path(match.group("file")).resolve() != target:
            run.problems.append(f"unexpected CrossHair output: {raw}")
            continue
        line, level, text = int(match.group("line")), match.group("level"), match.group("text")
        contract = by_post.get(line)
        if contract is not None and contract.status == NO_RESULT:
            if level == "error":
                contract.status, contract.detail, contract.where = REFUTED, text, line
                continue
            if text == CONFIRMED:
                contract.status = VERIFIED
                continue
            if text == NOT_CONFIRMED:
                contract.status = BOUNDED
                continue
        owner = next((fn for fn in functions if fn.first <= line <= fn.last), None)
        if owner is None or (level == "info" and not text.startswith(PRE_UNSAT)):
            run.problems.append(f"CrossHair output the runner cannot place: {raw}")
            continue
        shared[owner.name].append((line, level, text))
    for fn in functions:
        messages = shared[fn.name]
        if not messages:
            continue
        errors = [(line, text) for line, level, text in messages if level == "error"]
        unmet = [line for line, level, _ in messages if level == "info"]
        unresolved = [c for c in fn.contracts if c.status == NO_RESULT]
        if not unresolved:
            run.problems.extend(
                f"CrossHair output the runner cannot place: {fn.name} line {m[0]}: {m[2]}" for m in messages
            )
        for c in unresolved:
            if errors:
                c.status, c.where = REFUTED, errors[0][0]
                c.detail = errors[0][1] + (f" (and {len(errors) - 1} more errors)" if len(errors) > 1 else "")
            else:
                c.status, c.where = VACUOUS, unmet[0]
                c.detail = f"{PRE_UNSAT} (pre: {fn.pre_lines.get(unmet[0], '?')})"
    if run.returncode not in (0, 1):
        run.problems.append(f"CrossHair exited with status {run.returncode}")
    if "Traceback (most recent call last)" in run.stderr:
        run.problems.append("CrossHair printed a traceback on stderr")


# --------------------------------------------------------------------------- replaying counterexamples

_CALL: Final = re.compile(r"when calling (?P<name>\w+)\(")


def _split_call(text: str) -> tuple[str, str] | None:
    """``(name, argument source)`` of the call in a CrossHair message, or None."""
    match = _CALL.search(text)
    if not match:
        return None
    start = match.end()
    for end in range(start, len(text)):
        if text[end] != ")":
            continue
        rest = text[end + 1 :]
        if rest and not rest.startswith(" (which returns") and not rest.startswith(" with "):
            continue
        arguments = text[start:end]
        try:
            ast.parse(f"f({arguments})", mode="eval")
        except SyntaxError:
            continue
        return match.group("name"), arguments
    return None


def load_module(path: Path) -> types.ModuleType:
    """Import the contracts module from ``path`` (its directory and ``src/`` first on ``sys.path``)."""
    for entry in (str(ROOT / "src"), str(path.parent)):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    spec = importlib.util.spec_from_file_location(f"_replayed_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def replay(module: types.ModuleType, functions: list[Function], contract: Contract) -> str:
    """Run a counterexample concretely; say whether the contract fails outside CrossHair too."""
    call = _split_call(contract.detail)
    if call is None:
        return "no call to replay in CrossHair's message"
    name, arguments = call
    fn_info = next((f for f in functions if f.name == name), None)
    fn = getattr(module, name, None)
    if fn_info is None or fn is None:
        return f"{name} is not a contract function of the module"
    namespace: dict[str, Any] = dict(vars(module))
    namespace.update({"nan": math.nan, "inf": math.inf})
    try:  # the text comes from our own CrossHair run over our own module
        args, kwargs = eval(f"(lambda *a, **k: (a, k))({arguments})", namespace)
    except Exception as exc:  # noqa: BLE001 (any failure to rebuild the arguments is reported, not raised)
        return f"cannot rebuild the arguments: {type(exc).__name__}: {exc}"
    params = list(fn.__code__.co_varnames[: fn.__code__.co_argcount])
    env = dict(namespace)
    env.update(dict(zip(params, args, strict=False)))
    env.update(kwargs)
    for expr in fn_info.pre_lines.values():
        try:
            if not eval(expr, env):
                return f"NOT reproduced: the precondition {expr!r} is false for these arguments"
        except Exception as exc:  # noqa: BLE001
            return f"NOT reproduced: the precondition {expr!r} raised {type(exc).__name__}: {exc}"
    try:
        result = fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 (the body raising is itself the reproduced failure)
        return f"reproduced: the function raises {type(exc).__name__}: {exc}"
    env["__return__"] = result
    try:
        holds = bool(eval(contract.expr, env))
    except Exception as exc:  # noqa: BLE001
        return f"reproduced: the condition raises {type(exc).__name__}: {exc}"
    if holds:
        return (
            f"NOT reproduced: run concretely, the condition holds (returns {result!r}); a CrossHair modeling artefact?"
        )
    return f"reproduced: the condition is false (returns {result!r})"


# --------------------------------------------------------------------------- the exhaustive sweep (no CrossHair)

_SWEPT: dict[str, Any] = {}


def _sweep_part(task: tuple[str, str, list[str], list[tuple[int, str]], int, int]) -> tuple[int, dict[int, str]]:
    """Check one function's contracts on every (state, operation) pair of states[start::step]."""
    path, name, pres, posts, start, step = task
    if _SWEPT.get("path") != path:  # once per worker process (an error here reaches the parent)
        module = load_module(Path(path))
        model = sys.modules["crosshair_model"]
        _SWEPT.update(path=path, module=module, states=list(model.reachable_states()), ops=list(model.operations()))
    module = _SWEPT["module"]
    fn = getattr(module, name)
    pre_code = [compile(p, "<pre>", "eval") for p in pres]
    post_code = [(line, compile(p, "<post>", "eval")) for line, p in posts]
    failures: dict[int, str] = {}
    checked = 0
    for state in _SWEPT["states"][start::step]:
        for op in _SWEPT["ops"]:
            env = dict(vars(module), state=state, op=op)
            if not all(eval(code, env) for code in pre_code):
                continue
            checked += 1
            try:
                env["__return__"] = fn(state, op)
            except Exception as exc:  # noqa: BLE001 (a raising contract function fails every contract)
                for line, _ in post_code:
                    failures.setdefault(line, f"{name}({state!r}, {op!r}) raises {type(exc).__name__}: {exc}")
                continue
            for line, code in post_code:
                if line not in failures and not eval(code, env):
                    failures[line] = f"false for {name}({state!r}, {op!r}) (returns {env['__return__']!r})"
    return checked, failures


def sweep(contracts_path: Path, functions: list[Function], jobs: int) -> int:
    """Evaluate the contracts of the (state, operation) functions on every reachable input, concretely."""
    import multiprocessing

    module = load_module(contracts_path)
    selected = [
        fn
        for fn in functions
        if list(getattr(module, fn.name).__annotations__.values())[:2] == ["AbstractState", "Operation"]
    ]
    if not selected:
        print("FAILED: no contract function takes (state: AbstractState, op: Operation)")
        return 2
    status = 0
    start = time.monotonic()
    if not hasattr(sys.modules.get("crosshair_model"), "reachable_states"):
        print("FAILED: the model next to the contracts has no reachable_states()")
        return 2
    with multiprocessing.Pool(jobs) as pool:
        for fn in selected:
            posts = [(c.line, c.expr) for c in fn.contracts]
            parts = jobs * 8
            tasks = [(str(contracts_path), fn.name, list(fn.pre_lines.values()), posts, i, parts) for i in range(parts)]
            checked = 0
            failures: dict[int, str] = {}
            for part_checked, part_failures in pool.imap_unordered(_sweep_part, tasks):
                checked += part_checked
                for line, text in part_failures.items():
                    failures.setdefault(line, text)
            for c in fn.contracts:
                if c.line in failures:
                    status = 1
                    print(f"{REFUTED:<9} {c.name}  line {c.line}: {c.expr}")
                    print(f"          counterexample: {failures[c.line]}")
                else:
                    print(f"{'SWEPT':<9} {c.name}  line {c.line}: all {checked} inputs")
    print(f"sweep: {time.monotonic() - start:.0f} s wall with {jobs} processes")
    return status


# --------------------------------------------------------------------------- report


def report(functions: list[Function], run: Run, command: list[str], timeout: float) -> tuple[int, dict[str, Any]]:
    """Print the per-contract results and the summary; return the exit status and a JSON-able summary."""
    contracts = [c for fn in functions for c in fn.contracts]
    width = max((len(c.name) for c in contracts), default=10)
    previous = ""
    for c in contracts:
        print(f"{c.status:<9} {c.name:<{width}}  line {c.line}: {c.expr}")
        if c.detail and c.detail == previous:
            print("          (the same message as above)")
            continue
        if c.detail:
            where = f" (reported at line {c.where})" if c.where not in (0, c.line) else ""
            print(f"          counterexample{where}: {c.detail}" if c.status == REFUTED else f"          {c.detail}")
        if c.replay:
            print(f"          replay: {c.replay}")
        previous = c.detail
    counts = {s: sum(1 for c in contracts if c.status == s) for s in (VERIFIED, BOUNDED, REFUTED, VACUOUS, NO_RESULT)}
    print(
        f"{len(contracts)} contracts: {counts[VERIFIED]} verified, {counts[BOUNDED]} bounded, {counts[REFUTED]} refuted"
    )
    failures = []
    if counts[VACUOUS]:
        failures.append(f"{counts[VACUOUS]} vacuous (CrossHair could not meet the precondition)")
    if counts[NO_RESULT]:
        failures.append(f"{counts[NO_RESULT]} without a result line")
    failures.extend(run.problems)
    for failure in failures:
        print(f"FAILED: {failure}")
    if run.problems and run.stderr.strip():
        print("CrossHair stderr (last lines):")
        for line in run.stderr.strip().splitlines()[-15:]:
            print(f"    {line}")
    print(f"CrossHair: {run.seconds:.1f} s wall, --per_condition_timeout={timeout:g}; command: {' '.join(command)}")
    status = 1 if counts[REFUTED] else 0
    if counts[VACUOUS] or counts[NO_RESULT] or run.problems:
        status = 2
    summary = {
        "command": command,
        "timeout": timeout,
        "seconds": round(run.seconds, 1),
        "returncode": run.returncode,
        "counts": counts,
        "problems": failures,
        "contracts": [asdict(c) for c in contracts],
        "status": status,
    }
    return status, summary


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        help="CPU seconds CrossHair spends on each contract (default %(default)s: the CI budget)",
    )
    parser.add_argument("--contracts", type=Path, default=DEFAULT_CONTRACTS, help="the contracts file")
    parser.add_argument("--plugin", type=Path, default=DEFAULT_PLUGIN, help="the CrossHair plugin file")
    parser.add_argument(
        "--only", nargs="+", metavar="FUNCTION", help="check only these contract functions (file:line targets)"
    )
    parser.add_argument("--no-replay", action="store_true", help="do not replay counterexamples concretely")
    parser.add_argument("--json", type=Path, help="also write the results to this JSON file")
    parser.add_argument(
        "--sweep",
        action="store_true",
        help="instead of CrossHair: check the (state, operation) contracts on every reachable input, concretely",
    )
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes for --sweep")
    args = parser.parse_args(argv)
    contracts_path: Path = args.contracts.resolve()
    try:
        functions = discover(contracts_path)
    except (OSError, SyntaxError) as exc:
        print(f"FAILED: cannot read the contracts in {contracts_path}: {type(exc).__name__}: {exc}")
        return 2
    targets: list[str] = []
    if args.only:
        unknown = sorted(set(args.only) - {fn.name for fn in functions})
        if unknown:
            print(f"FAILED: no contract function named {', '.join(unknown)} in {contracts_path}")
            return 2
        functions = [fn for fn in functions if fn.name in args.only]
        targets = [f"{contracts_path}:{fn.first}" for fn in functions]
    count = sum(len(fn.contracts) for fn in functions)
    if args.sweep:
        return sweep(contracts_path, functions, args.jobs)
    if not count:
        print(f"FAILED: no contracts found in {contracts_path}")
        return 2
    # A guard against a hung solver: each contract may overrun its CPU budget by a path or two.
    wall_limit = 120 + 4 * args.timeout * count
    command, run = run_crosshair(contracts_path, args.plugin.resolve(), args.timeout, wall_limit, targets)
    attribute(functions, contracts_path, run)
    # A precondition CrossHair could not meet within the budget may only need more time (a loaded machine):
    # the functions with a vacuous contract are checked once more with four times the budget, and only a
    # contract vacuous again counts as vacuous.
    vacuous = [fn for fn in functions if any(c.status == VACUOUS for c in fn.contracts)]
    if vacuous and not run.problems:
        for fn in vacuous:
            for c in fn.contracts:
                c.status, c.detail, c.where = NO_RESULT, "", 0
        retry_timeout = 4 * args.timeout
        _, retry = run_crosshair(
            contracts_path,
            args.plugin.resolve(),
            retry_timeout,
            120 + 4 * retry_timeout * sum(len(fn.contracts) for fn in vacuous),
            [f"{contracts_path}:{fn.first}" for fn in vacuous],
        )
        attribute(vacuous, contracts_path, retry)
        print(f"re-checked {', '.join(fn.name for fn in vacuous)} with --per_condition_timeout={retry_timeout:g}")
        run.problems.extend(retry.problems)
        run.seconds += retry.seconds
    refuted = [c for fn in functions for c in fn.contracts if c.status == REFUTED]
    if refuted and not args.no_replay:
        try:
            module = load_module(contracts_path)
        except Exception as exc:  # noqa: BLE001 (reported; the verdict stays REFUTED)
            for c in refuted:
                c.replay = f"cannot import the contracts module: {type(exc).__name__}: {exc}"
        else:
            for c in refuted:
                c.replay = replay(module, functions, c)
    status, summary = report(functions, run, command, args.timeout)
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return status


if __name__ == "__main__":
    sys.exit(main())
