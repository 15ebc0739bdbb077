"""The ``tool-call-closure`` command line.

``serve``
    Serve protocol v1 on stdin/stdout (``spec/protocol.md``): the reference as
    a conformance subject.
``demo``
    Abort a batch midway and print the closed snapshot and the three provider
    payloads.
``table``
    Validate a transition table file (default: the shipped one) and print a
    summary, or the Mermaid state diagram with ``--diagram``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from . import __version__

__all__ = ["main"]


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tool-call-closure",
        description="Exactly one terminal outcome for every announced AI tool call: the reference implementation.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

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
    table.add_argument("--diagram", action="store_true", help="print the Mermaid state diagrams instead")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    if args.command == "serve":
        return _serve(args.table)
    if args.command == "demo":
        from ._demo import run_demo

        return run_demo(sys.stdout)
    return _table(args.path, args.diagram)


def _load_machine(path: Path | None):  # type: ignore[no-untyped-def]
    from ._machine import MACHINE, Machine
    from ._table import load_table

    if path is None:
        return MACHINE
    return Machine(load_table(path.read_text(encoding="utf-8")))


def _serve(table: Path | None) -> int:
    from ._errors import TableError
    from ._serve import serve

    try:
        machine = _load_machine(table)
    except (OSError, TableError) as exc:
        print(f"tool-call-closure serve: {exc}", file=sys.stderr)
        return 2
    return serve(machine=machine)


def _table(path: Path | None, diagram: bool) -> int:
    from ._diagram import mermaid
    from ._errors import TableError

    try:
        machine = _load_machine(path)
    except (OSError, TableError) as exc:
        print(f"tool-call-closure table: {exc}", file=sys.stderr)
        return 1
    table = machine.table
    if diagram:
        print(mermaid(table), end="")
        return 0
    print(f"valid table, version {table.version}")
    print(f"  run states:  {', '.join(table.run_states)} (closed: {', '.join(sorted(table.closed_run_states))})")
    print(f"  call states: {', '.join(table.call_states)} (terminal: {', '.join(sorted(table.terminal_call_states))})")
    print(f"  operations:  {', '.join(table.operations)}")
    print(f"  rows:        {len(table.transitions)} transitions, {len(table.call_transitions)} call transitions")
    print(f"  invariants:  {', '.join(table.invariants)}")
    return 0
