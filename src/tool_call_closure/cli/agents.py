"""The command line of the ``agents`` capability: ``fuzz --agents N`` and ``check --history FILE``.

``fuzz --agents N [--runs R] [--repeat K] [--ops MIN,MAX] [--seed S] [--out DIR] [-- SUBJECT CMD …]``
    Random concurrent programs of 2…N agents on a subject with the ``agents`` capability (default: the embedded
    reference), each run K times, every history checked for linearizability against the table; the first
    failure is shrunk (fewest agents, then operations) and written to DIR as a vector.  Exit status: 0 no
    failure, 1 a failure, 2 a usage error, 3 no failure but some histories were undecided (unknown).
``check --history FILE [--budget N]``
    Check a recorded history (spec/protocol.md, *Histories*) for linearizability against the table.  Exit
    status: 0 linearizable, 1 not (a violation, with the shortest violating prefix), 2 a usage error (an
    unreadable or malformed file), 3 unknown (the search exceeded its budget: never reported as a pass).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_check_arguments", "add_fuzz_arguments", "check_history_command", "fuzz_agents_command"]

EXIT_UNKNOWN = 3
MAX_AGENTS_FUZZED = 8


def add_fuzz_arguments(fuzz: argparse.ArgumentParser) -> None:
    """``fuzz``'s options for concurrent programs (``--agents`` switches the command to them)."""
    group = fuzz.add_argument_group(
        "concurrent programs (capability agents)",
        "With --agents, fuzz runs random concurrent programs and checks every history for linearizability "
        "(exit 0 none failed, 1 a failure, 2 usage error, 3 some histories undecided); --seed, --out, --timeout "
        "and the subject apply, the other options above do not.",
    )
    group.add_argument(
        "--agents", type=int, metavar="N", help=f"programs of 2…N agents (2 to {MAX_AGENTS_FUZZED}; 2–4 is typical)"
    )
    group.add_argument("--runs", type=int, default=200, metavar="R", help="programs to draw (default 200)")
    group.add_argument("--repeat", type=int, default=5, metavar="K", help="runs of each program (default 5)")
    group.add_argument("--ops", default="1,3", metavar="MIN,MAX", help="requests per agent (default 1,3)")
    group.add_argument(
        "--budget", type=int, default=1_000_000, metavar="N", help="checker budget per history, in model steps"
    )


def add_check_arguments(check: argparse.ArgumentParser) -> None:
    check.add_argument(
        "--history",
        type=Path,
        metavar="FILE",
        help="check a recorded history (JSON lines of invoke/ok/info events, spec/protocol.md, Histories) for "
        "linearizability instead of replaying a trace; exit 0 linearizable, 1 violation, 2 usage error, 3 unknown",
    )
    check.add_argument(
        "--budget", type=int, default=1_000_000, metavar="N", help="the search's budget in model steps (--history)"
    )


def _usage(command: str, message: str) -> int:
    print(f"tool-call-closure {command}: {message}", file=sys.stderr)
    return 2


def _ops(text: str) -> tuple[int, int] | None:
    parts = text.split(",")
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        return None
    low, high = int(parts[0]), int(parts[1])
    return (low, high) if 1 <= low <= high <= 10 else None


def _fuzz_problem(args: argparse.Namespace) -> str | None:
    if not 2 <= args.agents <= MAX_AGENTS_FUZZED:
        return f"--agents must be from 2 to {MAX_AGENTS_FUZZED}, not {args.agents}"
    for name, value in (("--runs", args.runs), ("--repeat", args.repeat), ("--budget", args.budget)):
        if value < 1:
            return f"{name} must be at least 1, not {value}"
    if _ops(args.ops) is None:
        return f"--ops must be MIN,MAX with 1 <= MIN <= MAX <= 10, not {args.ops!r}"
    return None


def fuzz_agents_command(args: argparse.Namespace, spec: Any) -> int:
    """``fuzz --agents``: ``spec`` is the subject's SubjectSpec (already checked by the caller)."""
    import random

    from tool_call_closure.cli.outputs import output_problem
    from tool_call_closure.conformance.fuzz_agents import failure_vector, fuzz_agents, protocol_executor
    from tool_call_closure.conformance.runner import HELLO
    from tool_call_closure.conformance.subject import SubjectError
    from tool_call_closure.conformance.vectors import generate, render

    problem = _fuzz_problem(args) or output_problem(args.out, directory=True)
    if problem is not None:
        return _usage("fuzz", problem if problem.startswith("--") else f"--out {args.out}: {problem}")
    ops = _ops(args.ops)
    assert ops is not None
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    try:
        subject = spec.start()
    except SubjectError as exc:
        print(f"tool-call-closure fuzz: the subject did not start: {exc}", file=sys.stderr)
        return 1
    try:
        (hello,) = subject.send(HELLO)[-1:]
        if "agents" not in hello.get("capabilities", []):
            return _usage("fuzz", "--agents: the subject does not list the capability agents in its hello")
        print(f"fuzz --agents {args.agents}: seed {seed}, {args.runs} programs × {args.repeat} runs")
        run = fuzz_agents(
            protocol_executor(subject, spec.timeout),
            agents=args.agents,
            runs=args.runs,
            repeat=args.repeat,
            seed=seed,
            operations=ops,
            budget=args.budget,
        )
    except SubjectError as exc:
        print(f"tool-call-closure fuzz: {exc}", file=sys.stderr)
        return 1
    finally:
        subject.close()
    print(
        f"{run.programs} programs, {run.histories} histories, {run.operations} operations checked in "
        f"{run.seconds:.2f} s; undecided (unknown): {run.unknown}"
    )
    if not run.failures:
        print("no history was refuted" + (" (some were undecided)" if run.unknown else ""))
        return EXIT_UNKNOWN if run.unknown else 0
    failure = run.failures[0]
    print(failure.describe())
    vector_id = f"agents-fuzz-{seed}"
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"{vector_id}.json"
    path.write_text(render(generate(failure_vector(failure, vector_id))), encoding="utf-8")
    print(f"vector: {path}")
    return 1


def check_history_command(args: argparse.Namespace) -> int:
    """``check --history FILE``."""
    from tool_call_closure.conformance.agents_model import table_model
    from tool_call_closure.conformance.history import HistoryError, read_history
    from tool_call_closure.conformance.linearizability import check

    if args.budget < 1:
        return _usage("check", f"--budget must be at least 1, not {args.budget}")
    try:
        text = args.history.read_bytes().decode("utf-8")
    except OSError as exc:
        return _usage("check", f"--history {args.history}: {exc.strerror or exc}")
    except UnicodeDecodeError as exc:
        return _usage("check", f"--history {args.history}: not UTF-8 text (byte {exc.start})")
    try:
        history = read_history(text.split("\n"))
        result = check(history, table_model(history), budget=args.budget)
    except (HistoryError, ValueError) as exc:
        return _usage("check", f"--history {args.history}: {exc}")
    observed = sum(1 for o in history if o.response is not None)
    print(f"{len(history)} operations ({len(history) - observed} unobserved), {result.steps} model steps")
    if result.verdict == "linearizable":
        print("linearizable")
        return 0
    if result.verdict == "unknown":
        print(f"unknown: {result.message}; raise --budget to decide it")
        return EXIT_UNKNOWN
    print(f"not linearizable: {result.message}")
    if result.minimal_prefix is not None:
        print(f"the shortest violating prefix: the first {result.minimal_prefix} operations (in invocation order)")
    print("placed in order:")
    for index in result.order:
        print(f"  {_describe(history[index])}")
    print("none of these could go next:")
    for index in result.stuck:
        print(f"  {_describe(history[index])}")
    return 1


def _describe(operation: Any) -> str:
    answer = "unobserved" if operation.answer is None else json.dumps(operation.answer, ensure_ascii=False)
    return f"process {operation.agent} [{operation.invoke}, {operation.response}]: {operation.op} -> {answer[:300]}"
