"""The settle loop and the lifecycle in short slices, the three subjects in turn (``python benchmarks/interleaved.py``).

Theory of operation
-------------------
On a shared virtual machine the speed of a core drifts: a Python loop timed
in 50 ms slices runs for seconds at about 70 % of its median speed, then
switches between 90 and 130 % every few tenths of a second.  ``bench.py``
alternates one-second repetitions, one Node process each; at 7 or 15
repetitions the median of each subject still depends on how many of its
repetitions fell in a fast stretch, and the 90 % interval of a ratio of
medians spans 1.0–2.0×.

Here each subject runs in slices of ``--slice-seconds`` (0.1 s), and a round
of slices gives each subject one turn, in an order that rotates from round to
round: the three subjects see the same stretches of the machine.  The
original runs in one Node process for the whole measurement
(``bench_workload.cjs --serve``), which answers each slice it is sent; each
subject keeps one closure per workload and N, warmed by the first rounds
(``--warmup``), which are not counted.  A slice runs whole rounds of the
workload of ``bench.py`` (:data:`bench.ROUNDS`) for at least its time.

Per workload and N it reports each subject's median slice rate, the ratio of
medians with its 90 % bootstrap interval (:func:`bench.ratio_interval`), and
the median of the per-round ratios (reference slice / original slice of the
same round), which a drift slower than one round cancels out of.  ::

    python benchmarks/interleaved.py [--slices 100] [--slice-seconds 0.1] [--warmup 10] [--sizes 10,100,1000]
                                     [--out interleaved.json]

With the defaults it takes about 3 × 3 × 110 × 0.1 s per workload: some 3.5 minutes.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench.py, beside this script

import bench

__all__ = ["NodeSlices", "measure", "run"]

SUBJECTS: Final = ("reference", "original", "baseline")
KINDS: Final = ("settle", "lifecycle")


class NodeSlices:
    """The original in one Node process answering slices (``bench_workload.cjs --serve``)."""

    def __init__(self, node: str, original: Path) -> None:
        self._original = original
        self._process = subprocess.Popen(
            [node, str(bench.NODE_WORKLOAD), str(original), "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def rate(self, kind: str, n: int, seconds: float) -> float:
        """Calls per second of one slice; :class:`bench.NodeWorkloadError` when Node answers anything else."""
        assert self._process.stdin is not None
        assert self._process.stdout is not None
        try:
            self._process.stdin.write(json.dumps({"kind": kind, "n": n, "seconds": seconds}) + "\n")
            self._process.stdin.flush()
            answer = json.loads(self._process.stdout.readline())
            return float(answer["calls"]) / float(answer["seconds"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            self.close()
            error = self._process.stderr.read() if self._process.stderr is not None else ""
            raise bench.NodeWorkloadError(
                f"the original ({self._original}) did not answer a slice: {bench._node_error(error)}"
            ) from exc

    def close(self) -> None:
        """End the process (its input closed: it exits), at most a few seconds later."""
        if self._process.stdin is not None and not self._process.stdin.closed:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


def measure(
    kind: str, n: int, slices: int, seconds: float, warmup: int, node: NodeSlices | None
) -> dict[str, list[float]]:
    """Each subject's slice rates for ``kind`` at batch size ``n`` (the warm-up rounds left out)."""
    calls = bench._calls(n)
    closures = {name: bench.SUBJECTS[name](n) for name in SUBJECTS if name != "original"}
    turns: dict[str, Callable[[], float]] = {
        name: functools.partial(bench.timed_rounds, kind, closure, calls, n, seconds)
        for name, closure in closures.items()
    }
    if node is not None:
        turns["original"] = lambda: node.rate(kind, n, seconds)
    names = [name for name in SUBJECTS if name in turns]
    rates: dict[str, list[float]] = {name: [] for name in names}
    for turn in range(warmup + slices):
        shift = turn % len(names)
        for name in names[shift:] + names[:shift]:  # each subject first in turn
            rate = turns[name]()
            if turn >= warmup:
                rates[name].append(rate)
    return rates


def _figures(rates: dict[str, list[float]]) -> dict[str, Any]:
    figures: dict[str, Any] = {name: bench._summary(samples) for name, samples in rates.items()}
    if "original" in rates:
        original = rates["original"]
        for name in ("reference", "baseline"):
            figures[f"{name}_ratio"] = statistics.median(rates[name]) / statistics.median(original)
            figures[f"{name}_ratio_interval"] = bench.ratio_interval(rates[name], original)
            figures[f"{name}_paired_ratio"] = statistics.median(
                mine / theirs for mine, theirs in zip(rates[name], original, strict=True)
            )
    return figures


def run(
    sizes: Sequence[int], slices: int, seconds: float, warmup: int, *, node: bool, log: Callable[[str], None]
) -> dict[str, Any]:
    """Every workload at every size: what ``--out`` writes."""
    found = bench.locate_node_original() if node else None
    results: dict[str, Any] = {
        "machine": {"reference_machine": bench._reference_machine(), "original": str(found[1]) if found else None},
        "slices": slices,
        "slice_seconds": seconds,
        "warmup": warmup,
        "workload": {kind: {} for kind in KINDS},
    }
    original = NodeSlices(*found) if found is not None else None
    try:
        for kind in KINDS:
            for n in sizes:
                started = time.perf_counter()
                rates = measure(kind, n, slices, seconds, warmup, original)
                results["workload"][kind][str(n)] = _figures(rates)
                log(f"  {kind} N={n}: {time.perf_counter() - started:.0f} s")
    finally:
        if original is not None:
            original.close()
    return results


def render_text(results: dict[str, Any]) -> str:
    """The figures as Markdown tables, one per workload."""
    lines: list[str] = []
    for kind, by_size in results["workload"].items():
        lines += [
            f"| N | {kind} calls/s (median slice): reference | original | baseline "
            "| reference / original (90 % interval) | paired | baseline / original |",
            "|---|---|---|---|---|---|---|",
        ]
        for n, figures in by_size.items():
            cells = [n] + [f"{figures[name]['median'] / 1000:.0f} k" if name in figures else "–" for name in SUBJECTS]
            if "reference_ratio" in figures:
                low, high = figures["reference_ratio_interval"]
                cells += [
                    f"{figures['reference_ratio']:.2f} ({low:.2f}–{high:.2f})",
                    f"{figures['reference_paired_ratio']:.2f}",
                    f"{figures['baseline_ratio']:.2f}",
                ]
            else:
                cells += ["–", "–", "–"]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--slices", type=int, default=100, help="counted slices per subject (default 100)")
    parser.add_argument("--slice-seconds", type=float, default=0.1, help="the length of one slice (default 0.1)")
    parser.add_argument("--warmup", type=int, default=10, help="rounds of slices run first, not counted (default 10)")
    parser.add_argument("--sizes", default="10,100,1000", help="batch sizes N, comma-separated (default 10,100,1000)")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON")
    parser.add_argument("--no-node", action="store_true", help="do not run the original even when it is found")
    args = parser.parse_args(argv)
    try:
        sizes = [int(size) for size in args.sizes.split(",")]
    except ValueError:
        parser.error(f"--sizes must be integers separated by commas, got {args.sizes!r}")
    if args.slices < 1 or args.warmup < 0 or not 0 < args.slice_seconds <= 10 or any(n < 1 for n in sizes):
        parser.error("--slices and every N must be at least 1, --warmup at least 0, --slice-seconds in (0, 10]")

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    log(f"interleaved slices: N = {', '.join(map(str, sizes))}, {args.slices} slices of {args.slice_seconds} s each")
    try:
        results = run(sizes, args.slices, args.slice_seconds, args.warmup, node=not args.no_node, log=log)
    except bench.NodeWorkloadError as exc:
        print(f"interleaved.py: {exc} (--no-node measures without it)", file=sys.stderr)
        return 1
    print(render_text(results), end="")
    if args.out is not None:
        args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        print(f"results: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
