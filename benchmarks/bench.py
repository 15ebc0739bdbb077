"""The shared benchmark workload, measured side by side with the original (``python benchmarks/bench.py``).

Theory of operation
-------------------
The workload is the one every implementation runs (``bench_workload.cjs`` is
its Node form, beside this script), for a batch size N:

* **lifecycle**: ``begin`` N calls, ``succeed`` every call whose index is not
  a multiple of 10 with ``{i, ok: true, text: "x" * 64}``, ``close``
  cancelled, export the closed snapshot to all three formats; after a warm-up,
  timed over a fixed number of rounds;
* **settle loop**: for a fixed time, ``begin`` the same N calls and
  ``succeed`` each once with ``"ok"``.

Figures are only comparable within one run on one machine, so the reference
and the original (when Node and the original are found: ``$TCC_JS``, else
``../shared/seed/…`` beside the checkout) are measured in the same run, and
their repetitions *alternate* (reference, original, reference, …) so a noisy
neighbour hits both alike.  Each figure is reported as the median of the
repetitions with their spread (min–max); a ratio is the ratio of medians,
given with its 90 % bootstrap interval (:func:`ratio_interval`).

Beyond the workload it measures: the cost of one ``settle`` at N = 10 and at
N = 1000 (the succeed calls alone, without the ``begin``); ``snapshot()``,
``close()`` and each export as N grows; memory per announced call and per
retained result (:mod:`tracemalloc`); and the conformance runner's steps per
second, in process and against ``serve`` in a subprocess.

The harness is deliberately small (``time.perf_counter``, alternating
repetitions, median and spread) so the command runs on a fresh clone with no
extra dependency; the plot needs matplotlib (an optional dev dependency) and
is skipped without it.  ``--quick`` shrinks every budget for a smoke run.

It lives in the repository, not in the wheel (with the hand-written baseline,
``bench_baseline.py``, and the Node workload): from a checkout, ::

    python benchmarks/bench.py [--quick] [--out bench.json] [--plot plot.png] [--repeats N] [--no-node]

(``tool-call-closure bench`` runs the same script when the checkout is found).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import gc
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_baseline, beside this script

from tool_call_closure.cli.outputs import output_problem

__all__ = ["Budget", "NodeWorkloadError", "bench_arguments", "ratio_interval", "run_bench", "run_suite"]

SIZES: Final = (10, 100, 1000)
NODE_WORKLOAD: Final = Path(__file__).resolve().parent / "bench_workload.cjs"
CLOSE_REASON: Final = {"status": "cancelled", "code": "timeout", "message": "deadline"}
EXPORTS: Final = ("to_openai_chat_completions", "to_openai_responses", "to_anthropic_tool_results")


@dataclass(frozen=True, slots=True)
class Budget:
    """How much work each measurement does."""

    repeats: int  # alternating repetitions per figure
    lifecycle_calls: int  # calls per timed lifecycle measurement (rounds = calls // N)
    warmup_rounds: int
    settle_seconds: float  # duration of one settle-loop measurement
    op_seconds: float  # time budget of one per-operation measurement
    scaling_sizes: tuple[int, ...]  # N for snapshot/close/export scaling


FULL: Final = Budget(5, 200_000, 200, 1.0, 0.3, (10, 100, 1000, 10_000))
QUICK: Final = Budget(1, 2_000, 5, 0.05, 0.02, (10, 100))


# --------------------------------------------------------------------------- the workload on the reference


def _calls(n: int) -> list[dict[str, str]]:
    return [{"id": f"call_{i}", "name": f"tool_{i % 7}"} for i in range(n)]


def _closure(n: int) -> Any:
    from tool_call_closure import create_tool_call_closure

    return create_tool_call_closure(max_calls=max(n, 1000))


def _baseline(_n: int) -> Any:
    from bench_baseline import LeanClosure  # beside this script (its folder is on sys.path, see above)

    return LeanClosure()


# The Python subjects of the workload: the reference, and the hand-written baseline (bench_baseline.py).
SUBJECTS: Final[dict[str, Callable[[int], Any]]] = {"reference": _closure, "baseline": _baseline}
PHASES: Final = ("begin", "succeed", "close", *EXPORTS)
WHO: Final = ("reference", "original", "baseline")  # the order of the tables' columns


def settle_round(c: Any, calls: list[dict[str, str]], n: int) -> None:
    """One settle-loop round on ``c``: begin the N calls, succeed each once with "ok"."""
    handle = c.begin(calls).handle
    for i in range(n):
        c.succeed(handle, f"call_{i}", "ok")


def lifecycle_round(c: Any, calls: list[dict[str, str]], n: int) -> None:
    """One lifecycle round on ``c`` (ids built in the loop, as the Node script does)."""
    handle = c.begin(calls).handle
    for i in range(n):
        if i % 10:
            c.succeed(handle, f"call_{i}", {"i": i, "ok": True, "text": "x" * 64})
    s = c.close(handle, CLOSE_REASON)
    c.to_openai_chat_completions(s)
    c.to_openai_responses(s)
    c.to_anthropic_tool_results(s)


ROUNDS: Final = {"settle": settle_round, "lifecycle": lifecycle_round}


def timed_rounds(kind: str, c: Any, calls: list[dict[str, str]], n: int, seconds: float) -> float:
    """Calls per second of whole ``kind`` rounds (a key of :data:`ROUNDS`) on ``c``, run for at least ``seconds``."""
    one_round = ROUNDS[kind]
    clock = time.perf_counter
    done = 0
    started = clock()
    while True:
        one_round(c, calls, n)
        done += n
        elapsed = clock() - started
        if elapsed >= seconds:
            return done / elapsed


def lifecycle_rate(n: int, rounds: int, warmup: int, subject: str = "reference") -> float:
    """Calls per second of the lifecycle workload: ``rounds`` timed rounds after ``warmup`` untimed ones."""
    calls = _calls(n)
    c = SUBJECTS[subject](n)
    for _ in range(warmup):
        lifecycle_round(c, calls, n)
    started = time.perf_counter()
    for _ in range(rounds):
        lifecycle_round(c, calls, n)
    return rounds * n / (time.perf_counter() - started)


def lifecycle_phases(n: int, rounds: int, warmup: int, subject: str = "reference") -> dict[str, float]:
    """Seconds per lifecycle round spent in each operation: the profile of the lifecycle, by phase.

    The same rounds as :func:`lifecycle_rate`, with the clock read between
    the operations (``succeed`` is all of a round's settlements together), so
    each figure includes one clock read; the Node workload's phases mode
    reads its clock at the same points.
    """
    calls = _calls(n)
    c = SUBJECTS[subject](n)
    clock = time.perf_counter_ns
    spent = dict.fromkeys(PHASES, 0)
    chat, responses, anthropic = (getattr(c, method) for method in EXPORTS)
    for round_number in range(warmup + rounds):
        t0 = clock()
        handle = c.begin(calls).handle
        t1 = clock()
        for i in range(n):
            if i % 10:
                c.succeed(handle, f"call_{i}", {"i": i, "ok": True, "text": "x" * 64})
        t2 = clock()
        s = c.close(handle, CLOSE_REASON)
        t3 = clock()
        chat(s)
        t4 = clock()
        responses(s)
        t5 = clock()
        anthropic(s)
        t6 = clock()
        if round_number >= warmup:
            for phase, started, ended in zip(PHASES, (t0, t1, t2, t3, t4, t5), (t1, t2, t3, t4, t5, t6), strict=True):
                spent[phase] += ended - started
    return {phase: total / rounds / 1e9 for phase, total in spent.items()}


def settle_loop_rate(n: int, seconds: float, subject: str = "reference") -> float:
    """Calls per second of the settle loop: begin the same N calls, succeed each once with "ok"."""
    return timed_rounds("settle", SUBJECTS[subject](n), _calls(n), n, seconds)


def settle_cost(n: int, seconds: float) -> float:
    """Seconds per ``succeed`` at batch size N, timing only the succeed calls (not the begin)."""
    calls = _calls(n)
    ids = [call["id"] for call in calls]
    c = _closure(n)
    spent = 0.0
    settles = 0
    clock = time.perf_counter
    while spent < seconds:
        handle = c.begin(calls).handle
        started = clock()
        for call_id in ids:
            c.succeed(handle, call_id, "ok")
        spent += clock() - started
        settles += n
    return spent / settles


def operation_costs(n: int, seconds: float) -> dict[str, float]:
    """Seconds per ``snapshot()`` (open, half settled), ``close()`` and each export, at batch size N."""
    calls = _calls(n)
    c = _closure(n)
    clock = time.perf_counter
    costs: dict[str, float] = {}

    def settled_half() -> Any:
        handle = c.begin(calls).handle
        for i in range(0, n, 2):
            c.succeed(handle, f"call_{i}", {"i": i, "ok": True, "text": "x" * 64})
        return handle

    settled_half()
    costs["snapshot"] = _per_call(c.snapshot, seconds)
    spent, closes = 0.0, 0
    while spent < seconds or closes == 0:
        handle = settled_half()
        started = clock()
        closed = c.close(handle, CLOSE_REASON)
        spent += clock() - started
        closes += 1
    costs["close"] = spent / closes
    for method in EXPORTS:
        export = getattr(c, method)
        costs[method] = _per_call(functools.partial(export, closed), seconds)
    return costs


def _per_call(operation: Callable[[], object], seconds: float) -> float:
    clock = time.perf_counter
    count = 0
    started = clock()
    while True:
        operation()
        count += 1
        elapsed = clock() - started
        if elapsed >= seconds:
            return elapsed / count


def memory_per_call(n: int = 1000) -> dict[str, float]:
    """Bytes per announced call (after ``begin``) and per retained result (after ``succeed``), by tracemalloc."""
    calls = _calls(n)
    contents = [{"i": i, "ok": True, "text": "x" * 64} for i in range(n)]
    c = _closure(n)
    # A fresh instance: every byte its first generation holds is allocated while tracing (a generation
    # released during the measurement would refill the interpreter's free lists and hide allocations).
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        handle = c.begin(calls).handle
        announced = tracemalloc.get_traced_memory()[0]
        for i in range(n):
            c.succeed(handle, f"call_{i}", contents[i])
        settled = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return {
        "bytes_per_announced_call": (announced - before) / n,
        "bytes_per_retained_result": (settled - announced) / n,
    }


def conformance_rate(subprocess_subject: bool, repeats: int) -> dict[str, Any]:
    """Steps per second of the conformance runner over every vector, in process or against ``serve``.

    One untimed run first (imports, caches); then ``repeats`` timed runs.  The
    runner's own clock excludes the subject's start-up.
    """
    from tool_call_closure.conformance.conform import SubjectSpec, run_conformance
    from tool_call_closure.conformance.subject import reference_command
    from tool_call_closure.conformance.vectors import load_vectors

    vectors = load_vectors()
    spec = SubjectSpec(tuple(reference_command())) if subprocess_subject else SubjectSpec()
    run_conformance(vectors, spec)
    rates: list[float] = []
    steps = failed = 0
    for _ in range(repeats):
        run = run_conformance(vectors, spec)
        steps = sum(result.steps for result in run.results)
        failed = max(failed, sum(1 for result in run.results if result.outcome != "passed"))
        rates.append(steps / run.seconds)
    return {"steps": steps, "not_passed": failed, "steps_per_s": statistics.median(rates), "rate": _summary(rates)}


# --------------------------------------------------------------------------- the workload on the original


def locate_node_original() -> tuple[str, Path] | None:
    """``(node, index.cjs)`` when Node and the original are both found, else ``None``."""
    from tool_call_closure.conformance.subject import locate_original

    node = shutil.which("node")
    original = locate_original()
    if node is None or original is None or not original.is_file():
        return None
    return node, original


class NodeWorkloadError(RuntimeError):
    """The original did not run the Node workload: its error, in one line."""


def node_rates(
    node: str, original: Path, n: int, rounds: int, warmup: int, seconds: float, phase_rounds: int = 0
) -> dict[str, Any]:
    """One run of the Node workload: ``{calls_per_s, settle_loop_calls_per_s, …}``, and ``phases`` when asked.

    Raises :class:`NodeWorkloadError` when Node exits with an error, runs past ten minutes or prints
    something that is not the workload's JSON line.
    """
    command = [node, str(NODE_WORKLOAD), str(original), str(n), str(rounds), str(warmup), str(seconds)]
    command.append(str(phase_rounds))
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NodeWorkloadError(f"the original ({original}) did not run the workload: {exc}") from exc
    if done.returncode != 0:
        raise NodeWorkloadError(
            f"the original ({original}) failed the workload (exit {done.returncode}): {_node_error(done.stderr)}"
        )
    try:
        result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError) as exc:
        raise NodeWorkloadError(f"the original ({original}) printed no result: {done.stdout[:200]!r}") from exc
    return result


def _node_error(stderr: str) -> str:
    """The line of a Node error report that names the error (``TypeError: …``), else its last line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    named = [line for line in lines if re.match(r"^[A-Za-z]*Error\b", line)]
    return named[0] if named else (lines[-1] if lines else "no message")


# --------------------------------------------------------------------------- the suite


def ratio_interval(
    numerator: Sequence[float], denominator: Sequence[float], *, resamples: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """The 90 % bootstrap interval of ``median(numerator) / median(denominator)``: (5th, 95th percentile).

    Each resample draws as many samples as each side has, with replacement,
    from that side (a seeded generator: the same samples give the same
    interval).  On a machine whose speed drifts by a quarter between two
    repetitions, one ratio of medians cannot say by itself whether a threshold
    a few per cent away is met; the interval says how far the repetitions
    of this run would let it move.
    """
    draw = random.Random(seed).choices
    ratios = sorted(
        statistics.median(draw(numerator, k=len(numerator))) / statistics.median(draw(denominator, k=len(denominator)))
        for _ in range(resamples)
    )
    return ratios[int(0.05 * (resamples - 1))], ratios[int(0.95 * (resamples - 1))]


def _summary(samples: Sequence[float]) -> dict[str, Any]:
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples), "samples": list(samples)}


def _reference_machine() -> str:
    from tool_call_closure.machine.interpreter import MACHINE

    return MACHINE.origin


def run_suite(
    budget: Budget, *, node: bool = True, sizes: Sequence[int] = SIZES, log: Callable[[str], None]
) -> dict[str, Any]:
    """Every measurement; the result is what ``--out`` writes."""
    original = locate_node_original() if node else None
    if original is not None:  # a smoke run first: a broken original is found before minutes of measuring
        node_rates(*original, 1, 1, 0, 0.0, 1)
    results: dict[str, Any] = {
        "machine": {
            "python": sys.version.split()[0],
            "implementation": platform.python_implementation(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "node": _node_version(original[0]) if original else None,
            "original": str(original[1]) if original else None,
            "reference_machine": _reference_machine(),  # compiled (mypyc build), checked in (pure), walk
        },
        "budget": {
            "repeats": budget.repeats,
            "lifecycle_calls": budget.lifecycle_calls,
            "warmup_rounds": budget.warmup_rounds,
            "settle_seconds": budget.settle_seconds,
        },
        "workload": {},
    }
    who = ("reference", "baseline", "original") if original is not None else ("reference", "baseline")
    for n in sizes:
        rounds = max(3, budget.lifecycle_calls // n)
        rates: dict[str, dict[str, list[float]]] = {
            kind: {name: [] for name in who} for kind in ("lifecycle", "settle_loop")
        }
        phases: dict[str, list[dict[str, float]]] = {name: [] for name in who}
        for repeat in range(budget.repeats):  # alternate: reference, baseline, original, reference …
            for name in ("reference", "baseline"):
                rates["lifecycle"][name].append(lifecycle_rate(n, rounds, budget.warmup_rounds, name))
                rates["settle_loop"][name].append(settle_loop_rate(n, budget.settle_seconds, name))
                phases[name].append(lifecycle_phases(n, rounds, budget.warmup_rounds, name))
            if original is not None:
                figures = node_rates(*original, n, rounds, budget.warmup_rounds, budget.settle_seconds, rounds)
                rates["lifecycle"]["original"].append(figures["calls_per_s"])
                rates["settle_loop"]["original"].append(figures["settle_loop_calls_per_s"])
                phases["original"].append(figures["phases"])
            log(f"  N={n} repetition {repeat + 1}/{budget.repeats}")
        entry: dict[str, Any] = {"rounds": rounds}
        for kind, samples in rates.items():
            entry[kind] = {name: _summary(samples[name]) for name in who}
            medians = {name: statistics.median(samples[name]) for name in who}
            if original is not None:
                entry[kind]["ratio"] = medians["reference"] / medians["original"]
                entry[kind]["ratio_interval"] = ratio_interval(samples["reference"], samples["original"])
                entry[kind]["baseline_ratio"] = medians["baseline"] / medians["original"]
        # seconds per round in each operation, median over the repetitions
        entry["phases"] = {
            name: {phase: statistics.median(run[phase] for run in runs) for phase in PHASES}
            for name, runs in phases.items()
        }
        results["workload"][str(n)] = entry
    log("  settle cost, operation costs, memory, conformance …")
    small = [settle_cost(10, budget.op_seconds * 2) for _ in range(budget.repeats)]
    large = [settle_cost(1000, budget.op_seconds * 2) for _ in range(budget.repeats)]
    results["settle_cost"] = {
        "seconds_at_10": _summary(small),
        "seconds_at_1000": _summary(large),
        "ratio_1000_to_10": statistics.median(large) / statistics.median(small),
    }
    results["operations"] = {str(n): operation_costs(n, budget.op_seconds) for n in budget.scaling_sizes}
    results["memory"] = memory_per_call()
    results["conformance"] = {
        "in_process": conformance_rate(subprocess_subject=False, repeats=budget.repeats),
        "subprocess": conformance_rate(subprocess_subject=True, repeats=budget.repeats),
    }
    return results


def _node_version(node: str) -> str:
    done = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30, check=False)
    return done.stdout.strip()


# --------------------------------------------------------------------------- output


def _k(rate: float) -> str:
    return f"{rate / 1000:.0f} k"


def _spread(summary: dict[str, Any]) -> str:
    return f"{_k(summary['median'])} ({summary['min'] / 1000:.0f}–{summary['max'] / 1000:.0f})"


def render_text(results: dict[str, Any]) -> str:
    """The measured tables as Markdown (what the README's performance section shows)."""
    lines: list[str] = []
    for kind, title in (("lifecycle", "lifecycle"), ("settle_loop", "settle loop")):
        lines += [
            f"| N | {title} calls/s: reference | original | baseline "
            "| reference / original (90 % interval) | baseline / original |",
            "|---|---|---|---|---|---|",
        ]
        for n, entry in results["workload"].items():
            figures = entry[kind]
            cells = [n] + [_spread(figures[name]) if name in figures else "–" for name in WHO]
            if "ratio" in figures:
                low, high = figures["ratio_interval"]
                cells += [f"{figures['ratio']:.2f} ({low:.2f}–{high:.2f})", f"{figures['baseline_ratio']:.2f}"]
            else:
                cells += ["–", "–"]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    lines += [
        "Where a lifecycle round's time goes, by operation (µs per round, median; reference / original / baseline):",
        "",
        "| N | " + " | ".join(PHASES) + " | round |",
        "|---|" + "---|" * (len(PHASES) + 1),
    ]
    for n, entry in results["workload"].items():
        phases = entry["phases"]
        names = [name for name in WHO if name in phases]
        cells = [n] + [" / ".join(f"{phases[name][phase] * 1e6:.1f}" for name in names) for phase in PHASES]
        cells.append(" / ".join(f"{sum(phases[name].values()) * 1e6:.1f}" for name in names))
        lines.append("| " + " | ".join(cells) + " |")
    cost = results["settle_cost"]
    lines += [
        "",
        f"settle per call: {cost['seconds_at_10']['median'] * 1e6:.2f} µs at N = 10, "
        f"{cost['seconds_at_1000']['median'] * 1e6:.2f} µs at N = 1000 (ratio {cost['ratio_1000_to_10']:.2f})",
        "",
        "| N | snapshot() µs | close() µs | " + " | ".join(f"{m} µs" for m in EXPORTS) + " |",
        "|---|---|---|" + "---|" * len(EXPORTS),
    ]
    for n, costs in results["operations"].items():
        cells = [n] + [f"{costs[name] * 1e6:.1f}" for name in ("snapshot", "close", *EXPORTS)]
        lines.append("| " + " | ".join(cells) + " |")
    memory = results["memory"]
    conformance = results["conformance"]
    lines += [
        "",
        f"memory: {memory['bytes_per_announced_call']:.0f} B per announced call, "
        f"{memory['bytes_per_retained_result']:.0f} B per retained result",
        f"conformance runner: {conformance['in_process']['steps_per_s'] / 1000:.1f} k steps/s in process, "
        f"{conformance['subprocess']['steps_per_s'] / 1000:.1f} k steps/s against serve in a subprocess "
        f"({conformance['in_process']['steps']} steps)",
    ]
    return "\n".join(lines) + "\n"


def write_plot(results: dict[str, Any], path: Path) -> bool:
    """Calls/s against N, reference vs original vs baseline, both workloads; False when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    sizes = [int(n) for n in results["workload"]]
    figure, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=False)
    for axis, kind, title in ((axes[0], "lifecycle", "lifecycle"), (axes[1], "settle_loop", "settle loop")):
        for who, style in (("reference", "o-"), ("original", "s--"), ("baseline", "^:")):
            entries = [results["workload"][str(n)][kind].get(who) for n in sizes]
            if all(entry is not None for entry in entries):
                medians = [entry["median"] for entry in entries]
                low = [m - entry["min"] for m, entry in zip(medians, entries, strict=True)]
                high = [entry["max"] - m for m, entry in zip(medians, entries, strict=True)]
                label = {
                    "reference": "Python reference",
                    "original": "original on Node",
                    "baseline": "hand-written baseline",
                }[who]
                axis.errorbar(sizes, medians, yerr=[low, high], fmt=style, capsize=3, label=label)
        axis.set_xscale("log")
        axis.set_xlabel("N (calls per batch)")
        axis.set_ylabel("calls/s")
        axis.set_title(title)
        axis.set_ylim(bottom=0)
        axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return True


# --------------------------------------------------------------------------- command line


def bench_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help="a fast smoke run (tiny budgets; figures not meaningful)")
    parser.add_argument("--out", type=Path, default=Path("bench.json"), help="JSON results (default bench.json)")
    parser.add_argument("--plot", type=Path, default=None, help="write a PNG plot of calls/s against N (matplotlib)")
    parser.add_argument("--repeats", type=int, default=None, help="alternating repetitions per figure (default 5)")
    parser.add_argument("--no-node", action="store_true", help="do not run the original even when it is found")


def run_bench(args: argparse.Namespace) -> int:
    budget = QUICK if args.quick else FULL
    if args.repeats is not None:
        if args.repeats < 1:
            print("tool-call-closure bench: --repeats must be at least 1", file=sys.stderr)
            return 2
        budget = dataclasses.replace(budget, repeats=args.repeats)
    sizes = (10, 100) if args.quick else SIZES
    for option, path in (("--out", args.out), ("--plot", args.plot)):
        problem = None if path is None else output_problem(path)
        if problem is not None:  # before the run: minutes of measuring must not end unable to write them
            print(f"tool-call-closure bench: {option} {path}: {problem}", file=sys.stderr)
            return 2

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    log(f"tool-call-closure bench ({'quick' if args.quick else 'full'}): N = {', '.join(map(str, sizes))}")
    try:
        results = run_suite(budget, node=not args.no_node, sizes=sizes, log=log)
    except NodeWorkloadError as exc:
        print(f"tool-call-closure bench: {exc} (--no-node measures without it)", file=sys.stderr)
        return 1
    if results["machine"]["original"] is None:
        log("  the original was not run (node or the original not found; set TCC_JS)")
    print(render_text(results), end="")  # first: the figures are shown even if a file cannot be written
    status = 0
    try:
        args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        print(f"results: {args.out}")
    except OSError as exc:
        print(f"tool-call-closure bench: --out {args.out}: {exc.strerror or exc}", file=sys.stderr)
        status = 1
    if args.plot is not None:
        try:
            written = write_plot(results, args.plot)
        except OSError as exc:
            print(f"tool-call-closure bench: --plot {args.plot}: {exc.strerror or exc}", file=sys.stderr)
            return 1
        print(f"plot: {args.plot}" if written else "plot: skipped (matplotlib is not installed)")
    return status


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="benchmarks/bench.py", description=__doc__.split("\n")[0] if __doc__ else None
    )
    bench_arguments(parser)
    return run_bench(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
