"""The ``tool-call-closure`` command line.

``conform [--vectors DIR] [--tags T] [--skip-tags T] [--report PATH] [-- SUBJECT CMD …]``
    Run the conformance vectors against a subject (default: the embedded
    reference) and print a summary; write a JSONL report.
``report diff A.jsonl B.jsonl``
    Compare two conformance reports by vector id.
``fuzz [--max-examples N] [--seconds S] [--seed N] [--out DIR] [--also CMD | --no-also] [-- SUBJECT CMD …]``
    Differential fuzzing of a subject against the reference; a divergence is
    shrunk, replayed against a second subject (by default the JavaScript
    original, when found) to say whose it is, and written out as a vector.
``check TRACE.jsonl``
    Replay a recorded protocol trace through the reference; report the first
    step where the recording differs.
``fuzz --agents N`` and ``check --history FILE``
    Concurrent programs checked for linearizability; a recorded history
    checked against the table (:mod:`tool_call_closure.cli.agents`).
``vectors [--check] [--coverage] [--dir DIR]``
    Regenerate the vectors' expectations from the reference (or, with
    ``--check``, fail if the committed vectors drift); print the coverage table.
``serve [--capabilities LIST|none]``
    Serve protocol v1 on stdin/stdout: the reference as a conformance subject
    (with fewer capabilities, a frozen v1 subject).  Every command that cannot
    write its output (a full disk, a closed descriptor) says so in one line on
    stderr and exits with status 1; a reader that goes away (``| head``) ends
    it quietly with status 141.
``demo``
    Abort a batch midway and print the snapshot and the three provider payloads.
``table [PATH] [--diagram | --emit-python | --emit-outline]``
    Validate a transition table and summarize it, or print its state diagrams,
    or print the Python code the reference compiles it to.
``bench [--quick] [--out PATH] [--plot PATH]``
    Run the shared benchmark workload on the reference (and on the original
    on Node when it is found, in the same run); print ratios, write JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from tool_call_closure import __version__
from tool_call_closure.cli import agents
from tool_call_closure.cli.bench import bench_arguments, run_bench
from tool_call_closure.cli.outputs import output_problem

if TYPE_CHECKING:
    from tool_call_closure.conformance.conform import SubjectSpec
    from tool_call_closure.conformance.fuzz import FuzzResult, SecondSubject
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


def _fuzz_arguments(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``fuzz`` command's arguments."""
    fuzz = commands.add_parser(
        "fuzz",
        help="differential fuzzing of a subject against the reference",
        description="Build model-guided protocol v1 scenarios, run them in lockstep on the reference and the "
        "subject, shrink the first divergence to the same divergence, replay it against a second subject to say "
        "whose it is (the subject's own, shared, or explained by a documented deviation), print it and write it "
        "out as a vector; print the coverage reached. Exit status: 0 no divergence, 1 a divergence, 2 a usage error.",
    )
    fuzz.add_argument(
        "--max-examples", type=int, metavar="N", help="stop after N scenarios (default: 1000 without --seconds)"
    )
    fuzz.add_argument(
        "--seconds", type=float, metavar="S", help="time budget: run until S seconds are spent (finite, above 0)"
    )
    fuzz.add_argument("--seed", type=int, metavar="N", help="seed, for a reproducible run (default: random)")
    fuzz.add_argument("--steps", type=int, default=20, metavar="N", help="at most N requests per scenario")
    fuzz.add_argument("--jobs", type=int, default=1, metavar="N", help="shard the run across N processes")
    fuzz.add_argument(
        "--invalid", type=float, default=0.15, metavar="P", help="share of deliberately invalid arguments (0.15)"
    )
    fuzz.add_argument("--out", type=Path, default=Path("fuzz-vectors"), metavar="DIR", help="where to write vectors")
    second = fuzz.add_mutually_exclusive_group()
    second.add_argument(
        "--also",
        metavar="CMD",
        help="a second subject, as one quoted command line: a divergence's vector is replayed against it to say "
        "whether the divergence is the subject's own or shared (default: the JavaScript original through the "
        "Node adapter, when node and $TCC_JS or the shared seed copy are found)",
    )
    second.add_argument("--no-also", action="store_true", help="replay a divergence against no second subject")
    agents.add_fuzz_arguments(fuzz)
    _subject_arguments(fuzz)


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tool-call-closure",
        description="Exactly one terminal outcome for every announced AI tool call: the reference implementation "
        "and its conformance kit.",
    )
    from tool_call_closure.machine.interpreter import MACHINE  # which build runs: compiled, checked in, walk

    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__} (machine: {MACHINE.origin})")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    _add_conform_commands(commands)

    _fuzz_arguments(commands)

    check = commands.add_parser(
        "check",
        help="replay a recorded protocol trace through the reference, or check a concurrent history",
        description="A trace is JSONL: each request line (with cmd) followed by the response lines it got. "
        "Exit status: 0 agrees, 1 differs, 2 malformed trace or nothing to check (no request but hello). "
        "With --history FILE instead of a trace: a concurrent history checked for linearizability.",
    )
    check.add_argument("trace", type=Path, metavar="TRACE.jsonl", nargs="?")
    agents.add_check_arguments(check)

    vectors = commands.add_parser("vectors", help="regenerate or check the vectors; print their coverage")
    vectors.add_argument("--dir", type=Path, metavar="DIR", help="vector directory (default: spec/vectors)")
    vectors.add_argument("--check", action="store_true", help="do not write; exit 1 if the vectors drift")
    vectors.add_argument("--coverage", action="store_true", help="print the coverage table (exit 1 if incomplete)")
    vectors.add_argument(
        "--kills",
        action="store_true",
        help="kill-based coverage: break each table row every way the loader accepts and list, per row and per "
        "catalogue rule, the vectors that fail (exit 1 if a mutant survives that is not listed as equivalent)",
    )
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
    serve.add_argument(
        "--capabilities",
        metavar="LIST",
        help="serve only these optional protocol features, comma-separated, or 'none' for protocol v1 as first "
        "published (default: all; spec/protocol.md, Capabilities)",
    )

    commands.add_parser("demo", help="abort a batch midway and print the snapshot and the three provider payloads")

    _add_table_command(commands)
    bench = commands.add_parser(
        "bench",
        help="run the shared benchmark workload: the reference, a hand-written baseline, the original (when found)",
        description="The shared benchmark workload on the reference, a hand-written Python baseline and, when Node and "
        "the original are found ($TCC_JS), the original, alternating in one run: calls/s with their spread and ratios, "
        "where a lifecycle round's time goes by operation, settle cost, operation costs, memory and the conformance "
        "runner's steps/s.",
    )
    bench_arguments(bench)
    _add_torture_command(commands)
    return parser


def _add_torture_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``torture``: worker processes race on a stored closure while being killed; the history is checked."""
    from tool_call_closure.cli.torture import torture_arguments

    torture = commands.add_parser(
        "torture",
        help="race worker processes on a durable closure (SQLite or PostgreSQL), SIGKILL them, check the history",
        description="N worker processes race begin/settle/close/seal and token settlements on one stored closure "
        "while a coordinator SIGKILLs and restarts them; the history is checked for linearizability against the "
        "closure in memory. Exit 1 on any anomaly (docs/durable.md).",
    )
    torture_arguments(torture)


def _add_conform_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``conform`` and ``report diff`` commands."""
    conform = commands.add_parser(
        "conform",
        help="run the conformance vectors against a subject (default: the reference)",
        description="Run the conformance vectors against a subject that serves protocol v1 (spec/protocol.md). "
        "Exit status: 0 when every selected vector passed or was skipped, 1 when one failed or errored.",
    )
    conform.add_argument("--vectors", type=Path, metavar="DIR", help="vector directory (default: the shipped vectors)")
    conform.add_argument("--tags", nargs="+", default=[], metavar="TAG", help="run only vectors with any of these tags")
    conform.add_argument("--skip-tags", nargs="+", default=[], metavar="TAG", help="skip vectors with any of these")
    conform.add_argument("--vector", action="append", default=[], metavar="ID", help="run only the vector ID")
    conform.add_argument(
        "--report", type=Path, metavar="PATH", help="write the JSONL report to PATH (default: no report file)"
    )
    conform.add_argument("--no-report", action="store_true", help="write no report file (the default)")
    _subject_arguments(conform)

    report = commands.add_parser("report", help="work with conformance reports")
    report_commands = report.add_subparsers(dest="report_command", metavar="SUBCOMMAND", required=True)
    diff = report_commands.add_parser("diff", help="compare two reports by vector id (exit 1 if they differ)")
    diff.add_argument("a", type=Path, metavar="A.jsonl")
    diff.add_argument("b", type=Path, metavar="B.jsonl")


def _add_table_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``table`` command."""
    table = commands.add_parser("table", help="validate a transition table and summarize it")
    table.add_argument("path", nargs="?", type=Path, help="table file (default: the shipped table)")
    shown = table.add_mutually_exclusive_group()
    shown.add_argument("--diagram", action="store_true", help="print the Mermaid state diagrams instead")
    shown.add_argument(
        "--emit-python",
        action="store_true",
        help="print the Python code the table compiles to (one function per operation) instead",
    )
    shown.add_argument(
        "--emit-outline",
        action="store_true",
        help="print the same code with every guard, effect and result called by name, not written in: "
        "the table's rows as code, for reading",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; when the reader of its output goes away (``… | head``), stop quietly with status 141."""
    # Reports quote protocol strings, which may hold lone surrogates: they are written escaped, never a crash.
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    try:
        args = _build_parser().parse_args(argv)  # --help and --version print too
    except BrokenPipeError:
        return _output_closed()
    if sys.stdout is None:  # started with descriptor 1 closed: nothing could be printed, not even the error
        return _cannot_write(args.command, "standard output", "it is closed")
    if args.command == "serve":  # the protocol server handles its own pipes
        return _serve(args.table, args.capabilities)
    stdout = sys.stdout
    sys.stdout = _GuardedOutput(stdout)  # a TextIO to its callers (__getattr__ gives the rest)
    try:
        status = _run(args)
        sys.stdout.flush()  # inside the try: buffered output may meet the closed pipe only now
    except BrokenPipeError:
        return _output_closed()
    except OutputWriteError as exc:
        _output_closed()  # nothing more can reach stdout: the interpreter's final flush must not fail again
        return _cannot_write(args.command, exc.where, exc.reason)
    finally:
        sys.stdout = stdout
    return status


class OutputWriteError(Exception):
    """Writing a command's output failed otherwise than by its reader going away (a full disk, an I/O error).

    Not an OSError, so the handlers of a command's own file errors (a missing input) do not mistake it for one.
    """

    def __init__(self, where: str, error: OSError) -> None:
        self.where = where
        self.reason = error.strerror or str(error)
        super().__init__(f"{where}: {self.reason}")


class _GuardedOutput:
    """``sys.stdout`` while a command runs: a write error becomes :class:`OutputWriteError`; BrokenPipeError (the
    reader went away, ``… | head``) is left as it is, for the quiet status 141."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputWriteError("standard output", exc) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputWriteError("standard output", exc) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _cannot_write(command: str, where: str, reason: str) -> int:
    """One line on stderr (if there is a stderr) and status 1: the command's output did not reach its place."""
    if sys.stderr is not None:
        with contextlib.suppress(OSError, ValueError):
            print(f"tool-call-closure {command}: cannot write {where}: {reason}", file=sys.stderr)
    return 1


SIGPIPE_STATUS = 128 + 13
"""The status a shell reports for a command killed by SIGPIPE: what ``… | head`` expects of a printing command."""


def _output_closed() -> int:
    """Point stdout at the null device, so the interpreter's final flush cannot fail again, and report SIGPIPE."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, io.UnsupportedOperation):  # stdout is not a file (an embedding caller's stream)
        pass
    return SIGPIPE_STATUS


def _run(args: argparse.Namespace) -> int:
    command: str = args.command
    if command == "conform":
        return _conform(args)
    if command == "report":
        from tool_call_closure.conformance.conform import ReportError, diff_reports

        try:
            return diff_reports(args.a, args.b, sys.stdout)
        except OSError as exc:
            return _usage("report diff", f"{exc.filename}: {exc.strerror or exc}")
        except ReportError as exc:
            return _usage("report diff", _one_line(exc))
    if command == "fuzz":
        return _fuzz(args)
    if command == "check":
        from tool_call_closure.conformance.conform import check_trace

        if (args.history is None) == (args.trace is None):
            return _usage("check", "give a TRACE.jsonl or --history FILE (one of the two)")
        if args.history is not None:
            return agents.check_history_command(args)

        try:
            text = args.trace.read_bytes().decode("utf-8")
        except OSError as exc:
            return _usage("check", f"{args.trace}: {exc.strerror or exc}")
        except UnicodeDecodeError as exc:
            return _usage("check", f"{args.trace}: not UTF-8 text (byte {exc.start})")
        return check_trace(text.split("\n"), sys.stdout)
    if command == "vectors":
        return _vectors(args)
    if command == "demo":
        from tool_call_closure.cli.demo import run_demo

        return run_demo(sys.stdout)
    if command == "bench":
        return run_bench(args)
    if command == "torture":
        from tool_call_closure.cli.torture import run_torture

        return run_torture(args, sys.stdout)
    return _table(args.path, args.diagram, args.emit_python, args.emit_outline)


def _subject_spec(args: argparse.Namespace) -> SubjectSpec | int:
    """The subject the arguments name, or the exit status 2 of a usage error (already reported)."""
    from tool_call_closure.conformance.conform import SubjectSpec
    from tool_call_closure.conformance.subject import MAX_TIMEOUT

    if not 0 < args.timeout <= MAX_TIMEOUT:  # also refuses NaN and inf (select() cannot wait that long)
        return _usage(
            args.command,
            f"--timeout must be a positive number of seconds, at most {MAX_TIMEOUT:g}, not {args.timeout}",
        )

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
    from tool_call_closure.conformance.vectors import VectorError, check_expectations, load_vectors

    spec = _subject_spec(args)
    if isinstance(spec, int):
        return spec
    if args.vectors is not None and not args.vectors.is_dir():
        return _usage("conform", f"--vectors {args.vectors}: no such directory")
    try:
        every = load_vectors(args.vectors)
        for vector in every:
            check_expectations(vector)
    except (OSError, VectorError) as exc:
        return _usage("conform", _one_line(exc))
    unknown = sorted(set(args.vector) - {v.id for v in every})
    if unknown:
        return _usage("conform", f"--vector {unknown[0]}: no vector has that id")
    chosen = [v for v in every if v.id in args.vector] if args.vector else every
    vectors = select_vectors(chosen, args.tags, args.skip_tags)
    if not vectors:
        return _usage("conform", "the selection matches no vector (check --vectors, --vector, --tags, --skip-tags)")
    report = None
    if args.report is not None and not args.no_report:
        try:
            report = args.report.open("w", encoding="utf-8")
        except OSError as exc:
            return _usage("conform", f"--report {args.report}: {exc.strerror or exc}")
    run = run_conformance(vectors, spec, progress_printer())
    summarize(run, sys.stdout)
    if report is not None:
        try:
            with report:
                write_report(run, report)
        except OSError as exc:  # a full disk, an I/O error: the run happened, its report is lost
            return _cannot_write("conform", f"the report to {args.report}", exc.strerror or str(exc))
        print(f"report: {args.report}")
    return 0 if run.ok() else 1


def _fuzz(args: argparse.Namespace) -> int:
    from tool_call_closure.conformance.fuzz import fuzz
    from tool_call_closure.conformance.subject import SubjectError

    if args.agents is not None:  # concurrent programs (capability agents)
        spec = _subject_spec(args)
        return spec if isinstance(spec, int) else agents.fuzz_agents_command(args, spec)
    problem = _fuzz_argument_problem(args)
    if problem is not None:
        return _usage("fuzz", problem)
    problem = output_problem(args.out, directory=True)
    if problem is not None:  # before the run: a run of minutes must not end unable to write what it found
        return _usage("fuzz", f"--out {args.out}: {problem}")
    spec = _subject_spec(args)
    if isinstance(spec, int):
        return spec
    also = _second_subject(args)
    if isinstance(also, int):
        return also
    second, second_text = also
    print(f"second subject: {second_text}")
    try:
        result = fuzz(
            spec,
            max_examples=args.max_examples,
            seconds=args.seconds,
            seed=args.seed,
            steps=args.steps,
            invalid=args.invalid,
            jobs=args.jobs,
            out_dir=args.out,
            also=second,
        )
    except SubjectError as exc:  # it would not start, or broke before a scenario could run (the probe)
        print(f"tool-call-closure fuzz: {_one_line(exc)}", file=sys.stderr)
        return 1
    return _fuzz_report(result, args.jobs)


def _fuzz_argument_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the fuzz command's numbers, in one line naming the argument, or None."""
    import math

    # A budget must end: NaN compares false with everything (a run that never stops), infinity never runs out.
    if args.seconds is not None and not (math.isfinite(args.seconds) and args.seconds > 0):
        return f"--seconds must be a finite number of seconds above 0, not {args.seconds}"
    for name, value, low in (
        ("--max-examples", args.max_examples, 1),
        ("--steps", args.steps, 1),
        ("--jobs", args.jobs, 1),
    ):
        if value is not None and value < low:
            return f"{name} must be at least {low}, not {value}"
    if not 0 <= args.invalid <= 1:  # also refuses NaN
        return f"--invalid must be between 0 and 1, not {args.invalid}"
    return None


def _fuzz_report(result: FuzzResult, jobs: int) -> int:
    """Print a fuzz run's report: what ran, the coverage, and the divergence with whose it is; its exit status."""
    import json

    from tool_call_closure.conformance.fuzz import PROBED_EXPORTS, coverage_summary

    print(
        f"fuzz: {result.examples} scenarios, {result.requests} requests in {result.seconds:.1f} s "
        f"({result.examples_per_second:.1f} scenarios/s, seed {result.seed}, {jobs} job(s))"
    )
    if result.exports:  # empty only when the subject broke before the probe could answer
        missing = [method for method in PROBED_EXPORTS if method not in result.exports]
        absent = f" (the subject answers ProtocolError for {', '.join(missing)})" if missing else ""
        print(f"exports drawn: {', '.join(result.exports)}{absent}")
    print(coverage_summary(result.coverage), end="")
    if result.divergence is None:
        print("no divergence")
        return 0
    found = f" (found after {result.found_after:.1f} s)" if result.found_after is not None else ""
    attribution = result.attribution
    what = "DIVERGENCE"
    if attribution is not None and attribution.verdict == "explained":
        what = "DIVERGENCE EXPLAINED BY A DOCUMENTED DEVIATION (not a bug of the subject's)"
    elif attribution is not None and attribution.verdict == "shared":
        what = "DIVERGENCE SHARED WITH THE SECOND SUBJECT"
    print(f"{what}{found}, shrunk to {len(result.scenario)} requests: {result.divergence}")
    for number, request in enumerate(result.scenario, 1):
        print(f"  step {number}: {json.dumps(request, ensure_ascii=True)}")
    if attribution is not None:
        print(f"attribution: {attribution.verdict}: {attribution.detail}")
    if result.vector_path is not None:
        print(f"vector written: {result.vector_path}")
    if result.vector_error is not None:
        print(f"tool-call-closure fuzz: the vector was not written: {result.vector_error}", file=sys.stderr)
    return 1


def _second_subject(args: argparse.Namespace) -> tuple[SecondSubject | None, str] | int:
    """The second subject a divergence is replayed against, and how the report names it (or a usage error)."""
    import shlex
    import shutil

    from tool_call_closure.conformance.conform import SubjectSpec
    from tool_call_closure.conformance.fuzz import SecondSubject
    from tool_call_closure.conformance.subject import locate_original, original_command

    if args.no_also:
        return None, "none (--no-also): a divergence is not attributed"
    if args.also is not None:
        try:
            command = shlex.split(args.also)
        except ValueError as exc:
            return _usage("fuzz", f"--also {args.also!r}: {exc}")
        if not command:
            return _usage("fuzz", "--also needs a command")
        spec = SubjectSpec(tuple(command), timeout=args.timeout)
        return SecondSubject(spec), f"{shlex.join(command)} (--also): a divergence's vector is replayed against it"
    original = locate_original()
    if original is None or not original.is_file() or shutil.which("node") is None:
        where = f"{original} is not a file" if original is not None else "no $TCC_JS and no shared seed copy"
        missing = "node is not on PATH" if shutil.which("node") is None else where
        return None, f"none ({missing}): a divergence is not attributed; name one with --also CMD"
    spec = SubjectSpec(tuple(original_command(original)), timeout=args.timeout)
    text = f"the original, {shlex.join(spec.command or ())}: a divergence's vector is replayed against it"
    return SecondSubject(spec, name="the original", original=True), text


def _usage(command: str, message: str) -> int:
    """A usage error: one line on stderr, exit status 2."""
    print(f"tool-call-closure {command}: {message}", file=sys.stderr)
    return 2


def _vectors(args: argparse.Namespace) -> int:
    from tool_call_closure.conformance.coverage import coverage_table
    from tool_call_closure.conformance.vectors import VectorError, default_vectors_dir, drift, load_vectors, regenerate

    directory = args.dir if args.dir is not None else default_vectors_dir()
    if not directory.is_dir():
        return _usage("vectors", f"--dir {directory}: no such directory")
    if args.from_model and not args.check:
        from tool_call_closure.conformance.modelgen import generate_model_vectors

        written = generate_model_vectors(directory / "model")
        print(f"{len(written)} model vectors written to {directory / 'model'}")
    try:
        changed = drift(directory) if args.check else regenerate(directory)
        vectors = load_vectors(directory)
    except (OSError, VectorError) as exc:
        return _usage("vectors", _one_line(exc))
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
    if args.kills:
        from tool_call_closure.conformance.coverage import kill_report

        text, complete = kill_report(vectors)
        print(text, end="")
        status = status or (0 if complete else 1)
    return status


def _load_machine(path: Path | None) -> Machine:
    from tool_call_closure.machine.interpreter import MACHINE, Machine
    from tool_call_closure.machine.table import load_table

    if path is None:
        return MACHINE
    return Machine(load_table(path.read_text(encoding="utf-8")))


def _serve(table: Path | None, capabilities: str | None = None) -> int:
    """Exit status: 0 after ``bye``, end of input, or when the reader closes the output early (quietly);
    1 with one line on stderr when reading or writing fails otherwise (a full disk); 2 for a bad ``--table``."""
    import errno
    import os

    from tool_call_closure.conformance.serve import CAPABILITIES, OutputError, serve
    from tool_call_closure.errors import TableError

    try:
        machine = _load_machine(table)
    except (OSError, TableError, ValueError, RecursionError) as exc:
        print(f"tool-call-closure serve: --table {table}: {_one_line(exc)}", file=sys.stderr)
        return 2
    served: tuple[str, ...] = CAPABILITIES
    if capabilities is not None:
        served = tuple(name.strip() for name in capabilities.split(",") if name.strip() and capabilities != "none")
        unknown = sorted(set(served) - set(CAPABILITIES))
        if unknown:
            return _usage("serve", f"--capabilities: unknown {', '.join(unknown)} (known: {', '.join(CAPABILITIES)})")
    try:
        return serve(machine=machine, capabilities=served)
    except OutputError as closed:
        # Nothing more can reach stdout; point it at /dev/null so the interpreter's final flush is silent.
        with open(os.devnull, "wb") as devnull:
            os.dup2(devnull.fileno(), sys.stdout.fileno())
        if closed.error.errno in (errno.EPIPE, errno.ECONNRESET):
            return 0
        print(f"tool-call-closure serve: cannot write the output: {closed}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"tool-call-closure serve: cannot read the input: {exc.strerror or exc}", file=sys.stderr)
        return 1


def _one_line(exc: BaseException) -> str:
    """An exception's text on one line (for the command line's one-line errors)."""
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8 text"
    text = " ".join(str(exc).split())
    return text[:500] if text else type(exc).__name__


def _table(path: Path | None, diagram: bool, emit_python: bool = False, emit_outline: bool = False) -> int:
    from tool_call_closure.errors import TableError
    from tool_call_closure.machine.diagram import mermaid

    try:
        machine = _load_machine(path)
    except OSError as exc:
        print(f"tool-call-closure table: {exc.filename or path}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except (TableError, ValueError, RecursionError) as exc:
        print(f"tool-call-closure table: {_one_line(exc)}", file=sys.stderr)
        return 1
    table = machine.table
    if diagram:
        print(mermaid(table), end="")
        return 0
    if emit_python:
        print(machine.source, end="")  # exactly the source the machine compiled and runs
        return 0
    if emit_outline:
        from tool_call_closure.machine.compiler import generate_source

        print(generate_source(table, {}), end="")  # nothing inlined: each name is a call, as in the walk
        return 0
    print(f"valid table, version {table.version}")
    print(f"  run states:  {', '.join(table.run_states)} (closed: {', '.join(sorted(table.closed_run_states))})")
    print(f"  call states: {', '.join(table.call_states)} (terminal: {', '.join(sorted(table.terminal_call_states))})")
    print(f"  operations:  {', '.join(table.operations)}")
    print(f"  rows:        {len(table.transitions)} transitions, {len(table.call_transitions)} call transitions")
    print(f"  invariants:  {', '.join(table.invariants)}")
    return 0
