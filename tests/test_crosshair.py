"""CrossHair contracts (``proofs/contracts.py``): they hold on the shipped code, they catch planted bugs,
and the runner's guards fail on vacuous contracts and on output it cannot place.

* ``test_shipped_contracts_hold`` runs the whole check at the CI budget (about 110 s of CPU;
  the slowest test here).  Set ``TCC_SKIP_SLOW_CROSSHAIR=1`` to skip it.
* ``test_planted_bug_is_refuted`` copies the contracts next to a mutated reference (a
  mutation appended to the copy rebinds one helper, or patches the interpreter) and checks
  that CrossHair finds a counterexample that also fails when replayed concretely.
* ``test_sweep_checks_every_input_concretely`` runs the runner's exhaustive mode on a small domain.
* ``test_vacuous_contract_fails`` adds a contract whose precondition cannot be met.
* The parser tests feed the runner CrossHair output lines directly (no CrossHair run).

The whole file takes about 2 minutes (nearly all of it the full check).  It needs ``crosshair-tool`` (skipped without it).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest

# Only looked up, not imported: CrossHair runs in subprocesses and stays out of this test process.
if importlib.util.find_spec("crosshair") is None:
    pytest.skip("crosshair-tool is not installed (pip install crosshair-tool==0.0.113)", allow_module_level=True)

# Symbolic execution takes minutes: the second test command (python -m pytest -m slow) runs these.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
PROOFS = ROOT / "proofs"
RUNNER = PROOFS / "run_crosshair.py"
SUMMARY = re.compile(r"^(\d+) contracts: (\d+) verified, (\d+) bounded, (\d+) refuted$", re.MULTILINE)

sys.path.insert(0, str(PROOFS))
import run_crosshair  # noqa: E402  (proofs/ is not a package)


def run_runner(*args: str | Path, timeout: float = 1800) -> tuple[int, str, dict[str, Any]]:
    """Run the runner in a subprocess; return its exit status, its output and its JSON report.

    ``timeout`` only guards against a hang: the runner has its own wall-clock guard.
    """
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        done = subprocess.run(
            [sys.executable, str(RUNNER), *map(str, args), "--json", str(report)],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        data = json.loads(report.read_text(encoding="utf-8")) if report.exists() else {}
    return done.returncode, done.stdout + done.stderr, data


def statuses(data: dict[str, Any]) -> dict[str, str]:
    return {f"{c['function']}:{c['label']}": c["status"] for c in data["contracts"]}


def copy_with(tmp_path: Path, appended: str, function: str = "", keep: frozenset[str] = frozenset()) -> Path:
    """A copy of the contracts, their model and plugin in ``tmp_path``, with ``appended`` at the end of contracts.py.

    With ``keep``, only the contracts of ``function`` with those labels stay (the other ``post:``
    lines of that function are dropped from the copy), so a planted-bug run checks just them.
    """
    for name in ("contracts.py", "crosshair_model.py", "crosshair_plugin.py"):
        shutil.copy(PROOFS / name, tmp_path / name)
    contracts = tmp_path / "contracts.py"
    lines = contracts.read_text(encoding="utf-8").splitlines(keepends=True)
    if keep:
        (fn,) = [f for f in run_crosshair.discover(contracts) if f.name == function]
        assert keep <= {c.label for c in fn.contracts}
        for c in fn.contracts:
            if c.label not in keep:
                lines[c.line - 1] = ""
    contracts.write_text("".join(lines) + "\n\n" + textwrap.dedent(appended), encoding="utf-8")
    return contracts


# --------------------------------------------------------------------------- the shipped code


@pytest.mark.skipif(os.environ.get("TCC_SKIP_SLOW_CROSSHAIR") == "1", reason="TCC_SKIP_SLOW_CROSSHAIR=1")
def test_shipped_contracts_hold() -> None:
    rc, out, data = run_runner()
    assert rc == 0, out
    match = SUMMARY.search(out)
    assert match, out
    total, verified, bounded, refuted = map(int, match.groups())
    expected = sum(len(fn.contracts) for fn in run_crosshair.discover(PROOFS / "contracts.py"))
    assert (total, refuted) == (expected, 0), out
    assert verified + bounded == total, out
    assert "FAILED" not in out, out
    result = statuses(data)
    # The finite-domain contracts are exhausted within the CI budget; everything else is a bounded search.
    for name in (
        "call_event:I1-terminal-sticky",
        "call_event:pending-moves",
        "safe_int:spec",
        "safe_int:exact-int",
        "special_float_to_string:spec",
    ):
        assert result[name] == "VERIFIED", out
    for label in ("I1", "I2", "I2-turns", "I4", "I5", "I6", "I7", "I8", "exactly-once", "inductive"):
        assert result[f"interpreter_step:{label}"] == "BOUNDED", out


# --------------------------------------------------------------------------- planted bugs

TRUNCATE_CUTS_CHARACTERS = """
from tool_call_closure.ecma import _node_utf8


def truncate_utf8(text, max_bytes):  # planted bug: no back-off over UTF-8 continuation bytes
    data = _node_utf8(text)
    if len(data) <= max_bytes:
        return text
    suffix = "..." if max_bytes >= 3 else ""
    return data[: max_bytes - len(suffix)].decode("utf-8", "replace") + suffix
"""

LONE_SURROGATE_COUNTS_ONE = """
from tool_call_closure.ecma import _utf16_view


def utf8_length(text):  # planted bug: a lone surrogate counts 1 byte ('?') instead of 3
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError:
        return len(_utf16_view(text).encode("utf-8", "replace"))
"""

CLOSE_LEAVES_A_CALL_PENDING = """
import tool_call_closure.machine.semantics as _semantics

_real_close_calls = _semantics._close_calls


def _leaky_close_calls(machine, run, reason, event):
    # planted bug: a close whose reason has the default code leaves the last pending call pending
    # (the contracts build closed states with an explicit code, so only the checked operation trips it)
    pending = [i for i, call in enumerate(run.calls) if call[2] == machine.initial_call_state]  # [2]: the state
    _real_close_calls(machine, run, reason, event)
    if pending and reason[1] == reason[0]:  # a close reason record: (status, code, message, side_effect_state)
        call_id, name, _state, _settlement = run.calls[pending[-1]]
        run.calls[pending[-1]] = (call_id, name, machine.initial_call_state, None)


_semantics._close_calls = _leaky_close_calls
"""

LOOKALIKE_HANDLE_ACCEPTED = """
import tool_call_closure.closure as _closure_module
from tool_call_closure.machine.interpreter import Machine
from tool_call_closure.machine.semantics import GUARDS
from tool_call_closure.machine.table import TABLE


from tool_call_closure.machine.context import HandleContext


def _generation_only(ctx: HandleContext) -> bool:  # planted bug: fencing compares generation numbers, not the handle
    run = ctx.closure._run
    return run is None or getattr(ctx.handle, "generation", None) != run.generation


GUARDS["handle_not_current"] = _generation_only
_closure_module.MACHINE = Machine(TABLE)
"""

STALE_TURN_ACCEPTED = """
import tool_call_closure.closure as _closure_module
from tool_call_closure.machine.context import BeginContext
from tool_call_closure.machine.interpreter import Machine
from tool_call_closure.machine.semantics import GUARDS
from tool_call_closure.machine.table import TABLE


def _never_stale(ctx: BeginContext) -> bool:  # planted bug: the turn token is never compared (D20)
    return False


GUARDS["turn_stale"] = _never_stale
_closure_module.MACHINE = Machine(TABLE)
"""

PLAIN_LAYOUT_TOO_FAR = """
from tool_call_closure.ecma import number_to_string as _real_number_to_string


def number_to_string(value):  # planted bug: plain layout one decade too far (JS switches to 1e+21 at 1e21)
    if isinstance(value, float) and 1e21 <= abs(value) < 1e22:
        return str(int(value))
    return _real_number_to_string(value)
"""

# bug -> (mutation, contract function, the contracts that must refute it); a run checks only those contracts.
PLANTED = {
    "truncate-cuts-inside-a-character": (TRUNCATE_CUTS_CHARACTERS, "truncate", {"fits-limit", "spec"}),
    "lone-surrogate-counts-one-byte": (LONE_SURROGATE_COUNTS_ONE, "byte_length_with_surrogates", {"spec"}),
    "close-leaves-a-call-pending": (CLOSE_LEAVES_A_CALL_PENDING, "interpreter_step", {"I5", "inductive"}),
    "look-alike-handle-accepted": (LOOKALIKE_HANDLE_ACCEPTED, "interpreter_step", {"I2"}),
    "stale-turn-accepted": (STALE_TURN_ACCEPTED, "interpreter_step", {"I2-turns"}),
    "plain-layout-one-decade-too-far": (PLAIN_LAYOUT_TOO_FAR, "decimal_to_string", {"layout"}),
}


@pytest.mark.parametrize("bug", sorted(PLANTED))
def test_planted_bug_is_refuted(tmp_path: Path, bug: str) -> None:
    mutation, function, labels = PLANTED[bug]
    contracts = copy_with(tmp_path, mutation, function, frozenset(labels))
    rc, out, data = run_runner(
        "--contracts", contracts, "--plugin", tmp_path / "crosshair_plugin.py", "--only", function, "--timeout", "8"
    )
    assert rc == 1, out
    assert {c["label"]: c["status"] for c in data["contracts"]} == dict.fromkeys(labels, "REFUTED"), out
    for c in data["contracts"]:
        assert "when calling" in c["detail"], out  # CrossHair's counterexample ...
        assert c["replay"].startswith("reproduced"), out  # ... fails when run concretely too
    assert "counterexample:" in out, out


def test_sweep_checks_every_input_concretely(tmp_path: Path) -> None:
    # --sweep (no CrossHair) on a smaller domain: the look-alike bug breaks I2, and I7 holds on every input.
    contracts = copy_with(tmp_path, LOOKALIKE_HANDLE_ACCEPTED, "interpreter_step", frozenset({"I2", "I7"}))
    model = tmp_path / "crosshair_model.py"
    text = model.read_text(encoding="utf-8")
    text = text.replace("MAX_GENERATION: Final = 3", "MAX_GENERATION: Final = 2").replace(
        "MAX_CALLS: Final = 3", "MAX_CALLS: Final = 1"
    )
    model.write_text(text, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(RUNNER), "--contracts", str(contracts), "--only", "interpreter_step", "--sweep"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert re.search(r"^REFUTED +interpreter_step:I2 .*\n +counterexample: false for interpreter_step\(", out, re.M), (
        out
    )
    assert re.search(r"^SWEPT +interpreter_step:I7 .*: all \d+ inputs$", out, re.M), out


# --------------------------------------------------------------------------- the vacuity guard

UNSATISFIABLE = {
    "symbolic-int": '''
        def impossible(n: int) -> int:
            """A contract nothing can reach.

            pre: n > 0 and n < 0
            post: __return__ == n
            """
            return n
        ''',
    "factory-drift": '''
        def impossible(state: AbstractState, op: Operation) -> Step:
            """A precondition the plugin's factory never satisfies (a generation beyond its bound).

            pre: state.generation > MAX_GENERATION
            post: __return__.after.generation >= 0
            """
            return step(state, op)
        ''',
}


@pytest.mark.parametrize("case", sorted(UNSATISFIABLE))
def test_vacuous_contract_fails(tmp_path: Path, case: str) -> None:
    contracts = copy_with(
        tmp_path, "from crosshair_model import MAX_GENERATION\n" + textwrap.dedent(UNSATISFIABLE[case])
    )
    rc, out, data = run_runner(
        "--contracts", contracts, "--plugin", tmp_path / "crosshair_plugin.py", "--only", "impossible", "--timeout", "3"
    )
    assert rc == 2, out
    assert statuses(data) == {"impossible:post1": "VACUOUS"}, out
    assert "FAILED: 1 vacuous" in out, out
    assert "Unable to meet precondition" in out, out


# --------------------------------------------------------------------------- the parser, on recorded output


CONTRACTS_SOURCE = '''
def f(x: int) -> int:
    """
    pre: x > 0
    post: __return__ > 0  # positive
    post: __return__ < 100
    """
    return x


def g(x: int) -> int:
    """
    post: __return__ == x
    """
    return x
'''


def parse(tmp_path: Path, stdout: str, returncode: int = 0, stderr: str = "") -> tuple[dict[str, str], list[str]]:
    path = tmp_path / "c.py"
    path.write_text(CONTRACTS_SOURCE, encoding="utf-8")
    functions = run_crosshair.discover(path)
    run = run_crosshair.Run(returncode, stdout.replace("FILE", str(path)), stderr, 0.0)
    run_crosshair.attribute(functions, path, run)
    return {c.name: c.status for fn in functions for c in fn.contracts}, run.problems


def test_parser_reads_confirmed_bounded_and_refuted(tmp_path: Path) -> None:
    result, problems = parse(
        tmp_path,
        "FILE:5: info: Confirmed over all paths.\n"
        "FILE:6: error: false when calling f(100) (which returns 100)\n"
        "FILE:13: info: Not confirmed.\n",
        returncode=1,
    )
    assert result == {"f:positive": "VERIFIED", "f:post2": "REFUTED", "g:post1": "BOUNDED"}
    assert problems == []


def test_parser_spreads_a_precondition_line_over_the_function(tmp_path: Path) -> None:
    # CrossHair prints one line per position: both contracts of f were vacuous.
    result, problems = parse(tmp_path, "FILE:4: info: Unable to meet precondition.\nFILE:13: info: Not confirmed.\n")
    assert result == {"f:positive": "VACUOUS", "f:post2": "VACUOUS", "g:post1": "BOUNDED"}
    assert problems == []


def test_parser_gives_a_body_error_to_the_contracts_without_a_line(tmp_path: Path) -> None:
    result, problems = parse(
        tmp_path, "FILE:5: info: Not confirmed.\nFILE:8: error: ValueError:  when calling f(1)\n", returncode=1
    )
    assert result == {"f:positive": "BOUNDED", "f:post2": "REFUTED", "g:post1": "NO RESULT"}
    assert problems == []


def test_parser_flags_unplaceable_output_and_crashes(tmp_path: Path) -> None:
    _, problems = parse(
        tmp_path, "something else\nFILE:1: info: Not confirmed.\n", 2, "Traceback (most recent call last):"
    )
    assert any("unexpected CrossHair output" in p for p in problems)
    assert any("cannot place" in p for p in problems)
    assert any("exited with status 2" in p for p in problems)
    assert any("traceback" in p for p in problems)


def test_counterexample_call_is_split_from_the_message() -> None:
    message = "\"x\" yields false when calling h('a)b', [1, (2, 3)]) (which returns 'c)')"
    assert run_crosshair._split_call(message) == ("h", "'a)b', [1, (2, 3)]")
