"""Durable closures measured: settles/s per store, image size, restore time (``python benchmarks/durable.py``).

Theory of operation
-------------------
**Settles/s.** Each process owns one closure in the store (many agents, one
store: the typical deployment) and, for ``--seconds``, begins batches of 100
calls and settles each call once with its token — every settle one
transaction (lock, load or reuse, the table's settle, one call row and the
header written, compare-and-set, commit).  The figure is the settles of all
processes divided by the wall time, for 1 and 4 processes, beside the same
loop on a plain :class:`~tool_call_closure.ToolCallClosure` in memory and on
the memory store (the transaction code without a database).  SQLite runs with
its default (WAL, ``synchronous=FULL``: every commit is synced) and, as
``sqlite-normal``, with ``synchronous=NORMAL`` (a commit survives a killed
process, not a power cut: the torture's threat model);
PostgreSQL is a throwaway local server (``durable.pg_server``, fsync on).

**Images.** For 10 and 1,000 settled calls (content ``{"i": n, "ok": true,
"text": "x" * 64}``): the canonical image's size, the time to restore it
(decode, validate, build the closure: the median of repeats), and the time
for a new process's first operation on it through SQLite (a cold load: read
the header and every call row, restore, run ``snapshot``).

Figures are for one machine and one run; ``--json`` writes them.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from tool_call_closure import ToolCallClosure
from tool_call_closure.durable import (
    DurableClosure,
    FencedClosure,
    MemoryStore,
    SQLiteStore,
    closure_of,
    decode,
)
from tool_call_closure.durable.store import Store

BATCH = 100


def _store(kind: str, where: str) -> Store:
    if kind == "memory":
        return MemoryStore()
    if kind == "sqlite":
        return SQLiteStore(where)
    if kind == "sqlite-normal":
        return SQLiteStore(where, synchronous="NORMAL")
    from tool_call_closure.durable.postgres import PostgresStore

    return PostgresStore(where)


def _settle_loop(kind: str, where: str, name: str, seconds: float, start: float, results: Any) -> None:
    while time.time() < start:
        time.sleep(0.001)
    deadline = time.perf_counter() + seconds
    settled = 0
    began = time.perf_counter()
    if kind == "plain":
        closure = ToolCallClosure()
        while time.perf_counter() < deadline:
            handle = closure.begin([{"id": f"c{i}", "name": "t"} for i in range(BATCH)]).handle
            for i in range(BATCH):
                closure.succeed(handle, f"c{i}", "ok")
            settled += BATCH
    else:
        durable = DurableClosure.create(_store(kind, where), name)
        while time.perf_counter() < deadline:
            tokens = durable.begin([{"id": f"c{i}", "name": "t"} for i in range(BATCH)]).tokens
            for token in tokens.values():
                durable.settle(token, {"status": "success", "content": "ok"})
                settled += 1
                if time.perf_counter() >= deadline:
                    break
    results.put((settled, time.perf_counter() - began))


def settles_per_second(kind: str, where: str, processes: int, seconds: float) -> float:
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    start = time.time() + 0.5
    workers = [
        context.Process(target=_settle_loop, args=(kind, where, f"bench-{time.time_ns()}-{n}", seconds, start, results))
        for n in range(processes)
    ]
    for worker in workers:
        worker.start()
    done = [results.get(timeout=seconds + 120) for _ in workers]
    for worker in workers:
        worker.join()
    return sum(count for count, _ in done) / max(elapsed for _, elapsed in done)


def _settled_image(calls: int) -> bytes:
    fenced = FencedClosure.new("image", b"i" * 32, max_calls=max(calls, 1))
    begun = fenced.begin([{"id": f"call_{i:04d}", "name": "lookup"} for i in range(calls)])
    for i, token in enumerate(begun.tokens.values()):
        fenced.settle(token, {"status": "success", "content": {"i": i, "ok": True, "text": "x" * 64}})
    return fenced.image()


def _median_seconds(action: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        action()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def images(directory: Path, repeats: int) -> dict[str, dict[str, float]]:
    figures: dict[str, dict[str, float]] = {}
    for calls in (10, 1000):
        data = _settled_image(calls)
        restore = _median_seconds(lambda data=data: closure_of(decode(data)), repeats)
        path = directory / f"image-{calls}.db"
        store = SQLiteStore(path)
        fenced = FencedClosure.attach(decode(data), b"i" * 32)
        store.create(fenced, b"i" * 32)
        store.close()

        def cold(path: Path = path) -> None:
            fresh = SQLiteStore(path)
            DurableClosure(fresh, "image").snapshot()
            fresh.close()

        figures[str(calls)] = {
            "image_bytes": len(data),
            "restore_ms": restore * 1000,
            "sqlite_cold_first_operation_ms": _median_seconds(cold, repeats) * 1000,
        }
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="seconds per settles/s figure (default 5)")
    parser.add_argument("--no-postgres", action="store_true", help="skip PostgreSQL")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = parser.parse_args(argv)
    figures: dict[str, Any] = {"settles_per_second": {}, "images": {}}
    with tempfile.TemporaryDirectory(prefix="tcc-bench-") as temporary:
        directory = Path(temporary)
        places = [("plain", ""), ("memory", ""), ("sqlite", str(directory / "bench.db"))]
        places.append(("sqlite-normal", str(directory / "bench-normal.db")))
        with _postgres(args.no_postgres) as conninfo:
            if conninfo is not None:
                places.append(("postgres", conninfo))
            for kind, where in places:
                for processes in (1, 4):
                    rate = settles_per_second(kind, where, processes, args.seconds)
                    figures["settles_per_second"][f"{kind} x{processes}"] = round(rate)
                    print(f"settles/s  {kind:<13} {processes} process{'es' if processes > 1 else '  '}  {rate:>10,.0f}")
        figures["images"] = images(directory, 7)
    for calls, image in figures["images"].items():
        print(
            f"image {calls:>4} calls: {image['image_bytes']:>9,} bytes, restore {image['restore_ms']:.2f} ms, "
            f"SQLite cold first operation {image['sqlite_cold_first_operation_ms']:.2f} ms"
        )
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


class _postgres:  # noqa: N801 - a context manager used like a function
    def __init__(self, skip: bool) -> None:
        self.skip = skip
        self.server: Any = None

    def __enter__(self) -> str | None:
        if self.skip:
            return None
        from tool_call_closure.durable.pg_server import find_bin, pg_server

        if find_bin() is None:
            print("PostgreSQL: server binaries not found, skipped")
            return None
        self.server = pg_server()
        return str(self.server.__enter__().conninfo)

    def __exit__(self, *exc: object) -> None:
        if self.server is not None:
            self.server.__exit__(*exc)


if __name__ == "__main__":
    sys.exit(main())
