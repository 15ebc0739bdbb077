"""Serialization figures: the cost of ``succeed`` on the shared workload, and the hostile cases of issue 10.

Run from a checkout (``python benchmarks/ecma_serialization.py``); point ``PYTHONPATH`` at another
checkout's ``src`` to measure that one.  Prints one JSON object per line:

* ``succeed`` per call with the shared workload's content ``{i, ok: true, text: "x" * 64}`` and with the
  string ``"ok"`` (``../shared/bench/js_seed_bench.cjs``): ``begin`` of N = 100 calls plus N ``succeed``,
  minus the ``begin`` alone, median of 7 ``timeit`` runs of process CPU time (stable on a loaded machine);
  ``json_stringify`` of that content alone;
* the hostile cases, each in a fresh process: a list holding one shared list twice, 22 levels deep (4
  million leaves of ten bytes) as ``succeed`` content and as a ``fail`` message, with the default limits:
  seconds, peak RSS growth, and the ``tracemalloc`` peak (slower: tracing).
"""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
import time
import timeit
import tracemalloc
from collections.abc import Callable

N = 100


def median_seconds(action: Callable[[], object], number: int) -> float:
    runs = timeit.repeat(action, number=number, repeat=7, timer=time.process_time)
    return statistics.median(runs) / number


def succeed_costs() -> dict[str, float]:
    from tool_call_closure import ToolCallClosure
    from tool_call_closure.ecma_json import json_stringify

    calls = [{"id": f"call_{i}", "name": f"tool_{i % 7}"} for i in range(N)]
    ids = [f"call_{i}" for i in range(N)]
    closure = ToolCallClosure()

    def begin_only() -> None:
        closure.begin(calls)

    def round_with(content_of: Callable[[int], object]) -> Callable[[], None]:
        def run() -> None:
            handle = closure.begin(calls).handle
            for i, call_id in enumerate(ids):
                closure.succeed(handle, call_id, content_of(i))

        return run

    begin = median_seconds(begin_only, 200)
    content = median_seconds(round_with(lambda i: {"i": i, "ok": True, "text": "x" * 64}), 100)
    text = median_seconds(round_with(lambda i: "ok"), 100)
    value = {"i": 5, "ok": True, "text": "x" * 64}
    return {
        "succeed_content_us": round((content - begin) / N * 1e6, 3),
        "succeed_ok_us": round((text - begin) / N * 1e6, 3),
        "json_stringify_content_us": round(median_seconds(lambda: json_stringify(value), 20_000) * 1e6, 3),
    }


def hostile(case: str, traced: bool) -> dict[str, object]:
    from tool_call_closure import ToolCallClosure, ToolCallClosureError

    value: list[object] = ["a" * 10]
    for _ in range(22):
        value = [value, value]
    closure = ToolCallClosure()
    handle = closure.begin([{"id": "a", "name": "t"}]).handle
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if traced:
        tracemalloc.start()
    start = time.perf_counter()
    try:
        if case == "succeed":
            closure.succeed(handle, "a", value)
        else:
            closure.fail(handle, "a", value)
        result = "accepted"
    except ToolCallClosureError as exc:
        result = f"{type(exc).__name__}: {exc}"
    seconds = time.perf_counter() - start
    figures: dict[str, object] = {"case": f"{case} of 22 shared pairs", "traced": traced, "seconds": round(seconds, 4)}
    if traced:
        figures["tracemalloc_peak_MB"] = round(tracemalloc.get_traced_memory()[1] / 1e6, 3)
        tracemalloc.stop()
    else:
        figures["rss_growth_MB"] = round((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024, 1)
    figures["result"] = result
    return figures


def main() -> None:
    if len(sys.argv) == 3:  # one hostile case, in this (fresh) process
        print(json.dumps(hostile(sys.argv[1], sys.argv[2] == "traced")))
        return
    print(json.dumps(succeed_costs()))
    for case in ("succeed", "fail"):
        for mode in ("untraced", "traced"):
            subprocess.run([sys.executable, __file__, case, mode], check=True)


if __name__ == "__main__":
    main()
