"""The shared benchmark workload (``../shared/bench/js_seed_bench.cjs``), ported to Python.

Theory of operation
-------------------
One *round* is: begin N calls, succeed all but every 10th, close the rest as
cancelled, export the closed snapshot to all three formats.  After 200
warm-up rounds, W rounds are timed (``rounds_per_s``, ``calls_per_s``); then
the *settle loop* (a fresh begin of N calls, succeed each once, repeated for
one second) gives ``settle_loop_calls_per_s``.  The figures are printed as
one JSON object, with the same keys as the Node script; times are the
process's CPU time (the machine is shared).

``--compare A B`` runs this script alternately under two source trees
(``PYTHONPATH=A`` and ``PYTHONPATH=B``), ``--runs`` times each, and prints
the median of every figure per tree: the before/after measurement of a change.

Run: ``python proofs/seed_bench.py N [W]`` or
``python proofs/seed_bench.py --compare OLD_SRC NEW_SRC --sizes 10,100,1000 --runs 3``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

__all__ = ["main", "measure"]

# CPU time of this process, not wall time: the project machine is shared, and another job's load
# stretches wall time of both trees unevenly; CPU time is what a change to the code changes.
_clock = time.process_time


def measure(n: int, rounds: int) -> dict[str, float]:
    """The Node script's figures for N calls and W timed rounds."""
    from tool_call_closure import create_tool_call_closure

    calls = [{"id": f"call_{i}", "name": f"tool_{i % 7}"} for i in range(n)]
    ids = [f"call_{i}" for i in range(n)]
    content: dict[str, Any] = {"ok": True, "text": "x" * 64}
    reason = {"status": "cancelled", "code": "timeout", "message": "deadline"}
    closure = create_tool_call_closure()

    def one_round() -> None:
        handle = closure.begin(calls).handle
        for i in range(n):
            if i % 10:
                closure.succeed(handle, ids[i], {"i": i, **content})
        snapshot = closure.close(handle, reason)
        closure.to_openai_chat_completions(snapshot)  # type: ignore[arg-type]
        closure.to_openai_responses(snapshot)  # type: ignore[arg-type]
        closure.to_anthropic_tool_results(snapshot)  # type: ignore[arg-type]

    for _ in range(200):
        one_round()
    start = _clock()
    for _ in range(rounds):
        one_round()
    seconds = _clock() - start
    settles = 0
    start = _clock()
    while _clock() - start < 1.0:
        handle = closure.begin(calls).handle
        for call_id in ids:
            closure.succeed(handle, call_id, "ok")
        settles += n
    settle_seconds = _clock() - start
    return {
        "N": n,
        "rounds_per_s": rounds / seconds,
        "calls_per_s": rounds * n / seconds,
        "settle_loop_calls_per_s": settles / settle_seconds,
    }


def _run_under(source: str, n: int, rounds: int) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=source)
    out = subprocess.run(
        [sys.executable, __file__, str(n), str(rounds)], env=env, check=True, capture_output=True, text=True
    ).stdout
    result: dict[str, float] = json.loads(out)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("n", nargs="?", type=int, default=100)
    parser.add_argument("rounds", nargs="?", type=int, default=None)
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE_SRC", "AFTER_SRC"))
    parser.add_argument("--sizes", default="10,100,1000")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    if args.compare is None:
        rounds = args.rounds if args.rounds is not None else max(20, 20_000 // args.n)
        print(json.dumps(measure(args.n, rounds)))
        return 0
    report: dict[str, Any] = {}
    for n in (int(size) for size in args.sizes.split(",")):
        rounds = max(20, 20_000 // n)
        figures: dict[str, list[dict[str, float]]] = {label: [] for label in ("before", "after")}
        for _ in range(args.runs):  # alternate, so drift in machine load hits both alike
            for label, source in zip(("before", "after"), args.compare, strict=True):
                figures[label].append(_run_under(source, n, rounds))
        report[str(n)] = {
            label: {key: statistics.median(run[key] for run in runs) for key in runs[0] if key != "N"}
            for label, runs in figures.items()
        }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
