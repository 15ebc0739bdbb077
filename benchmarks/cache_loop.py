"""The settle loop alone, for a cache and branch simulator: where a round's time goes beyond its instructions.

Theory of operation
-------------------
``benchmarks/instructions.py`` counts instructions, which repeat exactly
but weigh every instruction the same.  Two loops with the same count can
still differ in time by their cache misses and mispredicted branches; this
script runs the benchmark's settle loop (``begin`` the same N calls, then
``succeed`` each with ``"ok"``) for a fixed number of rounds, with nothing
else, so that valgrind's cachegrind can simulate the caches and the branch
predictor over it.  Run it twice and subtract, to leave out the start of
the interpreter and the imports::

    valgrind --tool=cachegrind --cache-sim=yes --branch-sim=yes python benchmarks/cache_loop.py reference 10 20000
    valgrind --tool=cachegrind --cache-sim=yes --branch-sim=yes python benchmarks/cache_loop.py reference 10 1

The difference of the two summaries (``I refs``, ``I1 misses``, ``D1
misses``, ``Mispredicts``), divided by the rounds, is one round's; the
subject ``baseline`` runs the hand-written baseline (``bench_baseline.py``).
``TCC_MACHINE`` chooses the reference's machine as usual.
"""

from __future__ import annotations

import sys
from pathlib import Path

USAGE = "usage: python benchmarks/cache_loop.py reference|baseline N ROUNDS"


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[0] not in ("reference", "baseline") or not (argv[1].isdigit() and argv[2].isdigit()):
        print(USAGE, file=sys.stderr)
        return 2
    subject, n, rounds = argv[0], int(argv[1]), int(argv[2])
    folder = str(Path(__file__).resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)  # bench.py, beside this script
    import bench  # the benchmark's subjects and batch, so that this loop runs exactly its settle loop

    closure = bench.SUBJECTS[subject](n)
    calls = bench._calls(n)
    for _ in range(rounds):
        bench.settle_round(closure, calls, n)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
