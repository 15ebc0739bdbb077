"""Instructions per operation, counted by callgrind: deterministic figures for decisions on a shared machine.

Theory of operation
-------------------
Wall-clock and CPU-time ratios move with whatever else the machine runs;
instruction counts do not.  This script runs the benchmark's workload
(``benchmarks/bench.py``: the settle loop and the lifecycle) under
``valgrind --tool=callgrind`` with collection switched off, and switches it on
around each measured call only, through callgrind's client requests (a tiny C
helper compiled on first use into a temporary folder: ``gcc`` and valgrind's
``callgrind.h`` are needed).  Each kind of call is counted into a dump of its
own; the cost of the switching itself (measured around an empty call) is
subtracted, and the result divided by the number of calls.

    python benchmarks/instructions.py                      # the reference, as installed (compiled if built)
    python benchmarks/instructions.py --subject baseline   # the hand-written baseline (bench_baseline.py)
    TCC_MACHINE=pure python benchmarks/instructions.py     # the pure-Python machine (default: compiled if built)
    python benchmarks/instructions.py --builds             # pure, compiled and baseline side by side
    python benchmarks/instructions.py --json out.json

It prints, per operation, thousands of instructions (``k Ir``).  The counts
are those of one process with ``PYTHONHASHSEED=0``: repeatable run to run.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

_HELPER = r"""
#include <valgrind/callgrind.h>
void tcc_toggle(void) { CALLGRIND_TOGGLE_COLLECT; }
void tcc_dump(const char *name) { CALLGRIND_DUMP_STATS_AT(name); }
void tcc_zero(void) { CALLGRIND_ZERO_STATS; }
"""
REPEATS = 200
CLOSE_REASON = {"status": "cancelled", "code": "timeout", "message": "deadline"}
EXPORTS = ("to_openai_chat_completions", "to_openai_responses", "to_anthropic_tool_results")


def _helper(folder: Path) -> Path:
    source = folder / "tcc_callgrind.c"
    library = folder / "tcc_callgrind.so"
    source.write_text(_HELPER)
    subprocess.run(["gcc", "-O1", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    return library


def _subject(name: str) -> Callable[[], Any]:
    if name == "baseline":
        sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_baseline, beside this script
        from bench_baseline import LeanClosure

        return LeanClosure
    from tool_call_closure import create_tool_call_closure

    return lambda: create_tool_call_closure(max_calls=1000)


def _measure(library: Path, subject: str) -> None:
    """Inside valgrind: run the workload, one dump per kind of call."""
    helper = ctypes.CDLL(str(library))
    toggle, dump, zero = helper.tcc_toggle, helper.tcc_dump, helper.tcc_zero
    dump.argtypes = [ctypes.c_char_p]
    make = _subject(subject)

    def counted(name: bytes, calls: Callable[[Callable[[Callable[[], Any]], None]], None]) -> None:
        zero()

        def once(operation: Callable[[], Any]) -> None:
            toggle()
            operation()
            toggle()

        calls(once)
        dump(name)

    # The switching itself, around an empty call.
    counted(b"empty", lambda once: [once(lambda: None) for _ in range(REPEATS)] and None)
    for n in (10, 100, 1000):
        calls = [{"id": f"call_{i}", "name": f"tool_{i % 7}"} for i in range(n)]
        ids = [f"call_{i}" for i in range(n)]
        c = make()
        for _ in range(3):  # warm: every generation after the first supersedes a settled one
            handle = c.begin(calls).handle
            for call_id in ids:
                c.succeed(handle, call_id, "ok")
        rounds = max(2, REPEATS // n)
        begins: list[Any] = []

        def settle_round(once: Callable[[Callable[[], Any]], None]) -> None:
            for _ in range(rounds):
                once(lambda: begins.append(c.begin(calls)))
                handle = begins.pop().handle
                for call_id in ids:
                    once(lambda call_id=call_id: c.succeed(handle, call_id, "ok"))

        if n == 10:
            for name, selected in ((b"settle_loop.begin", "begin"), (b"settle_loop.succeed", "succeed")):

                def only(once: Callable[[Callable[[], Any]], None], selected: str = selected) -> None:
                    for _ in range(rounds):
                        run = once if selected == "begin" else (lambda operation: operation())
                        run(lambda: begins.append(c.begin(calls)))
                        handle = begins.pop().handle
                        for call_id in ids:
                            step = once if selected == "succeed" else (lambda operation: operation())
                            step(lambda call_id=call_id: c.succeed(handle, call_id, "ok"))

                counted(name, only)
        counted(f"settle_loop.round.{n}.{rounds}".encode(), settle_round)
    # The lifecycle at N = 10, by operation.
    n = 10
    calls = [{"id": f"call_{i}", "name": f"tool_{i % 7}"} for i in range(n)]
    c = make()
    phases = ("begin", "succeed", "close", *EXPORTS)

    def lifecycle(selected: str) -> Callable[[Callable[[Callable[[], Any]], None]], None]:
        def run(once: Callable[[Callable[[], Any]], None]) -> None:
            def step(phase: str, operation: Callable[[], Any]) -> None:
                if phase == selected:
                    once(operation)
                else:
                    operation()

            for _ in range(REPEATS // n):
                box: list[Any] = []
                step("begin", lambda: box.append(c.begin(calls).handle))
                handle = box[0]
                for i in range(n):
                    if i % 10:
                        content = {"i": i, "ok": True, "text": "x" * 64}
                        step("succeed", lambda i=i, content=content: c.succeed(handle, f"call_{i}", content))
                step("close", lambda: box.append(c.close(handle, CLOSE_REASON)))
                snapshot = box[1]
                for method in EXPORTS:
                    step(method, lambda method=method: getattr(c, method)(snapshot))

        return run

    for _ in range(3):
        lifecycle("")(lambda operation: operation())
    for phase in phases:
        counted(f"lifecycle.{phase}".encode(), lifecycle(phase))


def _parse(folder: Path) -> dict[str, int]:
    """Dump name -> total instructions, from callgrind's output parts."""
    totals: dict[str, int] = {}
    for path in sorted(folder.glob("callgrind.out.*")):
        text = path.read_text(errors="replace")
        trigger = re.search(r"^desc: Trigger: Client Request: (.+)$", text, re.M)
        summary = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
        if trigger and summary:
            totals[trigger.group(1).strip()] = int(summary.group(1))
    return totals


def count(subject: str, machine: str | None = None) -> dict[str, float]:
    """Thousands of instructions per call, by operation (see the module docstring); ``machine``: ``TCC_MACHINE``."""
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        library = _helper(folder)
        environment = {**os.environ, "PYTHONHASHSEED": "0"}
        if machine is not None:
            environment["TCC_MACHINE"] = machine
        command = [
            "valgrind",
            "--tool=callgrind",
            "--collect-atstart=no",
            f"--callgrind-out-file={folder}/callgrind.out.%p",
            sys.executable,
            __file__,
            "--inside",
            str(library),
            "--subject",
            subject,
        ]
        subprocess.run(command, check=True, env=environment, capture_output=True)
        totals = _parse(folder)
    empty = totals.pop("empty") / REPEATS
    figures: dict[str, float] = {}
    for name, total in totals.items():
        if name.startswith("settle_loop.round."):
            _, _, n, rounds = name.split(".")
            calls = int(rounds) * (1 + int(n))
            figures[f"settle_loop.round.{n}"] = (total - empty * calls) / int(rounds) / 1000
        elif name == "settle_loop.begin":
            figures[name] = (total - empty * REPEATS // 10) / (REPEATS // 10) / 1000
        elif name == "settle_loop.succeed" or name == "lifecycle.succeed":
            calls = REPEATS if name == "settle_loop.succeed" else REPEATS // 10 * 9
            figures[name] = (total - empty * calls) / calls / 1000
        else:
            figures[name] = (total - empty * (REPEATS // 10)) / (REPEATS // 10) / 1000
    lifecycle = [value for name, value in figures.items() if name.startswith("lifecycle.")]
    figures["lifecycle.round.10"] = figures["lifecycle.begin"] + 9 * figures["lifecycle.succeed"]
    figures["lifecycle.round.10"] += sum(lifecycle) - figures["lifecycle.begin"] - figures["lifecycle.succeed"]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--subject", choices=("reference", "baseline"), default="reference")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument(
        "--builds",
        action="store_true",
        help="the reference's pure and compiled builds and the baseline side by side (TCC_MACHINE=pure, compiled)",
    )
    parser.add_argument("--inside", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inside is not None:
        _measure(args.inside, args.subject)
        return
    if args.builds:
        columns = {"pure": count("reference", "pure"), "compiled": count("reference", "compiled")}
        columns["baseline"] = count("baseline")
        print(f"{'k Ir per call':40} {'pure':>9} {'compiled':>9} {'baseline':>9} {'compiled/pure':>14}")
        for name, pure in columns["pure"].items():
            compiled, baseline = columns["compiled"][name], columns["baseline"].get(name, float("nan"))
            print(f"{name:40} {pure:9.1f} {compiled:9.1f} {baseline:9.1f} {compiled / pure:14.2f}")
        if args.json is not None:
            args.json.write_text(json.dumps(columns, indent=2) + "\n")
        return
    figures = count(args.subject)
    for name, value in figures.items():
        print(f"{name:40} {value:9.1f} k Ir")
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
