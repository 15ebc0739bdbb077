"""The ``tool-call-closure`` command line.

``conform [--vectors DIR] [--tags T] [--skip-tags T] [--report PATH] [-- SUBJECT CMD …]``
    Run the conformance vectors against a subject (default: the embedded
    reference) and print a summary; write a JSONL report.
``report diff A.jsonl B.jsonl``
    Compare two conformance reports by vector id.
``fuzz [--max-examples N] [--seconds S] [--seed N] [--out DIR] [-- SUBJECT CMD …]``
    Differential fuzzing of a subject against the reference; a divergence is
    shrunk and written out as a vector.
``check TRACE.jsonl``
    Replay a recorded protocol trace through the reference; report the first
    step where the recording differs.
``vectors [--check] [--coverage] [--dir DIR]``
    Regenerate the vectors' expectations from the reference (or, with
    ``--check``, fail if the committed vectors drift); print the coverage table.
``serve``
    Serve protocol v1 on stdin/stdout: the reference as a conformance subject.
``demo``
    Abort a batch midway and print the snapshot and the three provider payloads.
``table [PATH] [--diagram | --emit-python]``
    Validate a transition table and summarize it, or print its state diagrams,
    or print the Python code the reference compiles it to.
``bench [--quick] [--out PATH] [--plot PATH]``
    Run the shared benchmark workload on the reference (and on the original
    on Node when it is found, in the same run); print ratios, write JSON.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tool_call_closure import __version__
from tool_call_closure.cli.bench import bench_arguments, run_bench

if TYPE_CHECKING:
    from tool_call_closure.conformance.conform import SubjectSpec
    from tool_call_closure.machine.interpreter import Machine

__all__ = ["main"]


def _subject_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--timeout", type=float, default=10.0, metavar="S", help="per-request timeout (default 10)")
    parser.add_argument(
        "subject",
        nargs=argparse.REMAINDER,
        metavar="-- SUBJECT CMD",
        help="the command that serves protocol v1 (default: the embedded reference), after --",
    )


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tool-call-closure",
        description="Exactly one terminal outcome for every announced AI tool call: the reference implementation "
        "and its conformance kit.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    conform = commands.add_parser(
        "conform",
        help="run the conformance vectors against a subject (default: the reference)",
        description="Run the conformance vectors against a subject that serves protocol v1 (spec/protocol.md). "
        "Exit status: 0 when every selected vector passed or was skipped, 1 when one failed or errored.",
    )
    conform.add_argument("--vectors", type=Path, metavar="DIR", help="vector directory (default: the shipped vectors)")
    conform.add_argument("--tags", nargs="+", default=[], metavar="TAG", help="run only vectors with any of these tags")
    conform.add_argument("--skip-tags", nargs="+", default=[], metavar="TAG", help="skip vectors with any of these")
    conform.add_argument(
        "--report", type=Path, default=Path("conform-report.jsonl"), metavar="PATH", help="JSONL report path"
    )
    conform.add_argument("--no-report", action="store_true", help="do not write a report")
    _subject_arguments(conform)

    report = commands.add_parser("report", help="work with conformance reports")
    report_commands = report.add_subparsers(dest="report_command", metavar="SUBCOMMAND", required=True)
    diff = report_commands.add_parser("diff", help="compare two reports by vector id (exit 1 if they differ)")
    diff.add_argument("a", type=Path, metavar="A.jsonl")
    diff.add_argument("b", type=Path, metavar="B.jsonl")

    fuzz = commands.add_parser(
        "fuzz",
        help="differential fuzzing of a subject against the reference",
        description="Draw random protocol v1 scenarios with Hypothesis, run them in lockstep on the reference and "
        "the subject, shrink the first divergence and write it out as a vector. Exit status 1 on a divergence.",
    )
    fuzz.add_argument("--max-examples", type=int, default=1000, metavar="N", help="scenarios to try (default 1000)")
    fuzz.add_argument("--seconds", type=float, metavar="S", help="time budget for generating scenarios")
    fuzz.add_argument("--seed", type=int, metavar="N", help="seed, for a reproducible run")
    fuzz.add_argument("--steps", type=int, default=20, metavar="N", help="at most N requests per scenario")
    fuzz.add_argument(
        "--deviations", action="store_true", help="also draw the inputs whose answers differ by design (D1–D7)"
    )
    fuzz.add_argument("--out", type=Path, default=Path("fuzz-vectors"), metavar="DIR", help="where to write vectors")
    _subject_arguments(fuzz)

    check = commands.add_parser(
        "check",
        help="replay a recorded protocol trace through the reference",
        description="A trace is JSONL: each request line (with cmd) followed by the response lines it got. "
        "Exit status: 0 agrees, 1 differs, 2 malformed trace.",
    )
    check.add_argument("trace", type=Path, metavar="TRACE.jsonl")

    vectors = commands.add_parser("vectors", help="regenerate or check the vectors; print their coverage")
    vectors.add_argument("--dir", type=Path, metavar="DIR", help="vector directory (default: spec/vectors)")
    vectors.add_argument("--check", action="store_true", help="do not write; exit 1 if the vectors drift")
    vectors.add_argument("--coverage", action="store_true", help="print the coverage table (exit 1 if incomplete)")
    vectors.add_argument(
        "--from-model",
        action="store_true",
        help="(re)generate the model vectors: the shortest witness of every table row, in DIR/model",
    )

    serve = commands.add_parser("serve", help="serve protocol v1 on stdin/stdout (a conformance subject)")
    serve.add_argument(
        "--table",
        type=Path,
        metavar="PATH",
        help="run a different transition table (for experiments; default: the shipped spec/machine.json)",
    )

    commands.add_parser("demo", help="abort a batch midway and print the snapshot and the three provider payloads")

    table = commands.add_parser("table", help="validate a transition table and summarize it")
    table.add_argument("path", nargs="?", type=Path, help="table file (default: the shipped table)")
    shown = table.add_mutually_exclusive_group()
    shown.add_argument("--diagram", action="store_true", help="print the Mermaid state diagrams instead")
    shown.add_argument(
        "--emit-python",
        action="store_true",
        help="print the Python code the table compiles to (one function per operation) instead",
    )
    bench = commands.add_parser("bench", help="run the shared benchmark workload, against the original when found")
    bench_arguments(bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    command: str = args.command
    if command == "conform":
        return _conform(args)
    if command == "report":
        from tool_call_closure.conformance.conform import ReportError, diff_reports

        try:
            return diff_reports(args.a, args.b, sys.stdout)
        except (OSError, ReportError) as exc:
            print(f"tool-call-closure report diff: {exc}", file=sys.stderr)
            return 2
    if command == "fuzz":
        return _fuzz(args)
    if command == "check":
        from tool_call_closure.conformance.conform import check_trace

        try:
            with args.trace.open(encoding="utf-8") as lines:
                return check_trace(lines, sys.stdout)
        except OSError as exc:
            print(f"tool-call-closure check: {exc}", file=sys.stderr)
            return 2
    if command == "vectors":
        return _vectors(args)
    if command == "serve":
        return _serve(args.table)
    if command == "demo":
        from tool_call_closure.cli.demo import run_demo

        return run_demo(sys.stdout)
    if command == "bench":
        return run_bench(args)
    return _table(args.path, args.diagram, args.emit_python)


def _subject_spec(args: argparse.Namespace) -> SubjectSpec:
    from tool_call_closure.conformance.conform import SubjectSpec

    command = [part for part in args.subject if part != "--"] if args.subject else []
    if args.subject and args.subject[0] == "--":
        command = list(args.subject[1:])
    return SubjectSpec(tuple(command) if command else None, timeout=args.timeout)


def _conform(args: argparse.Namespace) -> int:
    from tool_call_closure.conformance.conform import (
        progress_printer,
        run_conformance,
        select_vectors,
        summarize,
        write_report,
    )
    from tool_call_closure.conformance.vectors import VectorError, load_vectors

    try:
        vectors = select_vectors(load_vectors(args.vectors), args.tags, args.skip_tags)
    except (OSError, VectorError) as exc:
        print(f"tool-call-closure conform: {exc}", file=sys.stderr)
        return 2
    run = run_conformance(vectors, _subject_spec(args), progress_printer())
    summarize(run, sys.stdout)
    if not args.no_report:
        with args.report.open("w", encoding="utf-8") as out:
            write_report(run, out)
        print(f"report: {args.report}")
    return 0 if run.ok() else 1


def _fuzz(args: argparse.Namespace) -> int:
    from tool_call_closure.conformance.fuzz import FuzzResult, fuzz

    def progress(result: FuzzResult) -> None:
        if sys.stderr.isatty():
            sys.stderr.write(
                f"\r{result.examples} scenarios, {result.requests} requests, {result.examples_per_second:.1f}/s"
            )
            sys.stderr.flush()

    try:
        result = fuzz(
            _subject_spec(args),
            max_examples=args.max_examples,
            seconds=args.seconds,
            seed=args.seed,
            steps=args.steps,
            deviations=args.deviations,
            out_dir=args.out,
            progress=progress,
        )
    except RuntimeError as exc:
        print(f"tool-call-closure fuzz: {exc}", file=sys.stderr)
        return 2
    if sys.stderr.isatty():
        sys.stderr.write("\n")
    print(
        f"fuzz: {result.examples} scenarios, {result.requests} requests in {result.seconds:.1f} s "
        f"({result.examples_per_second:.1f} scenarios/s)"
    )
    if result.divergence is None:
        print("no divergence")
        return 0
    print(f"DIVERGENCE after shrinking to {len(result.scenario)} requests: {result.divergence}")
    if result.vector_path is not None:
        print(f"vector written: {result.vector_path}")
    return 1


def _vectors(args: argparse.Namespace) -> int:
    from tool_call_closure.conformance.coverage import coverage_table
    from tool_call_closure.conformance.vectors import VectorError, default_vectors_dir, drift, load_vectors, regenerate

    directory = args.dir if args.dir is not None else default_vectors_dir()
    if args.from_model and not args.check:
        from tool_call_closure.conformance.modelgen import generate_model_vectors

        written = generate_model_vectors(directory / "model")
        print(f"{len(written)} model vectors written to {directory / 'model'}")
    try:
        changed = drift(directory) if args.check else regenerate(directory)
        vectors = load_vectors(directory)
    except (OSError, VectorError) as exc:
        print(f"tool-call-closure vectors: {exc}", file=sys.stderr)
        return 2
    status = 0
    if args.check:
        for path in changed:
            print(f"drift: {path} differs from what the reference produces (run: tool-call-closure vectors)")
        status = 1 if changed else 0
    else:
        print(f"{len(vectors)} vectors; {len(changed)} file(s) rewritten")
    if args.coverage:
        text, complete = coverage_table(vectors)
        print(text, end="")
        status = status or (0 if complete else 1)
    return status


def _load_machine(path: Path | None) -> Machine:
    from tool_call_closure.machine.interpreter import MACHINE, Machine
    from tool_call_closure.machine.table import load_table

    if path is None:
        return MACHINE
    return Machine(load_table(path.read_text(encoding="utf-8")))


def _serve(table: Path | None) -> int:
    from tool_call_closure.conformance.serve import serve
    from tool_call_closure.errors import TableError

    try:
        machine = _load_machine(table)
    except (OSError, TableError) as exc:
        print(f"tool-call-closure serve: {exc}", file=sys.stderr)
        return 2
    return serve(machine=machine)


def _table(path: Path | None, diagram: bool, emit_python: bool = False) -> int:
    from tool_call_closure.errors import TableError
    from tool_call_closure.machine.diagram import mermaid

    try:
        machine = _load_machine(path)
    except (OSError, TableError) as exc:
        print(f"tool-call-closure table: {exc}", file=sys.stderr)
        return 1
    table = machine.table
    if diagram:
        print(mermaid(table), end="")
        return 0
    if emit_python:
        print(machine.source, end="")  # exactly the source the machine compiled and runs
        return 0
    print(f"valid table, version {table.version}")
    print(f"  run states:  {', '.join(table.run_states)} (closed: {', '.join(sorted(table.closed_run_states))})")
    print(f"  call states: {', '.join(table.call_states)} (terminal: {', '.join(sorted(table.terminal_call_states))})")
    print(f"  operations:  {', '.join(table.operations)}")
    print(f"  rows:        {len(table.transitions)} transitions, {len(table.call_transitions)} call transitions")
    print(f"  invariants:  {', '.join(table.invariants)}")
    return 0
