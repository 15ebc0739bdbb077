"""``tool-call-closure torture``: workers race on one stored closure while being killed; the history is checked.

Theory of operation
-------------------
In the style of Jepsen.  The coordinator creates one closure in a fresh
store (a SQLite file in a temporary directory, or a throwaway PostgreSQL
server: ``durable.pg_server``), then starts N worker processes.  Each worker
runs random operations (:mod:`.torture_model`) — begin, claim tokens, settle
with a token (current, stale, of an earlier epoch, or forged), close, seal,
restore — each one transaction of the store, and appends an invocation line
and a response line per operation to its own history file (one ``write`` a
line, so a kill never leaves half a line that parses).  Meanwhile the
coordinator SIGKILLs a random worker at random points (exponential gaps of
mean ``--kill-every`` seconds), notes the time the worker was seen dead, and
starts a new incarnation of it, which restores (a new epoch) half the time,
as a recovering owner would.

At the end the coordinator reads the stored image, merges the histories into
one (an operation without a response gets its worker's death as its latest
possible effect, and may or may not have taken effect) and checks it with
the project's linearizability checker (:mod:`tool_call_closure.conformance.linearizability`)
against the model, the closure in memory; the final image must be the
model's state after the order found.  It also counts *double accepts* (two
accepted settlements of one call of one generation) and *lost outcomes* (an
accepted settlement the final image does not hold although its generation is
still current).  Any anomaly exits 1; an error (no server, a bad argument)
exits 2 with one line, never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import random
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from tool_call_closure.cli.torture_model import CRASHED, execute, model
from tool_call_closure.conformance.linearizability import Operation, check
from tool_call_closure.durable.api import DurableClosure
from tool_call_closure.durable.store import Store

__all__ = ["run_torture", "torture_arguments"]

CLOSURE_ID = "torture"
WORKER_FAILED = 3  # a worker's exit status when it could not go on (not a kill)
SECRET = b"torture-secret-0123456789abcdef!"


def torture_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite", help="the store (default sqlite)")
    parser.add_argument("--processes", type=int, default=4, help="worker processes (default 4)")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long the workers run (default 10)")
    parser.add_argument("--kill-every", type=float, default=0.5, help="mean seconds between kills (0: no kills)")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: random, printed)")
    parser.add_argument("--keep", type=Path, default=None, help="keep the histories in this directory")
    parser.add_argument("--budget", type=int, default=20_000_000, help="the checker's budget in model steps")


# --------------------------------------------------------------------------- stores


def _open_store(kind: str, where: str) -> Store:
    if kind == "sqlite":
        from tool_call_closure.durable.sqlite import SQLiteStore

        return SQLiteStore(where)
    from tool_call_closure.durable.postgres import PostgresStore

    return PostgresStore(where)


@contextlib.contextmanager
def _store_place(kind: str, directory: Path) -> Iterator[str]:
    if kind == "sqlite":
        yield str(directory / "torture.db")
        return
    from tool_call_closure.durable.pg_server import pg_server

    with pg_server() as server:
        yield server.conninfo


# --------------------------------------------------------------------------- a worker


class _History:
    """One worker incarnation's history file: a JSON line per invocation and per response, one write each."""

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def line(self, record: dict[str, Any]) -> None:
        os.write(self._fd, (json.dumps(record, separators=(",", ":")) + "\n").encode("utf-8"))


def _choose(rng: random.Random, name: str, sequence: int, tokens: list[str], batch: str | None) -> list[Any]:
    roll = rng.random()
    if roll < 0.12 or (not tokens and batch is None and roll < 0.5):
        return ["begin", [f"{name}.{sequence}.{j}" for j in range(rng.randint(1, 3))]]
    if roll < 0.22 or not tokens:
        return ["claim"]
    if roll < 0.72:
        status = rng.choice(("success", "success", "error", "cancelled"))
        return ["settle", rng.choice(tokens), status, f"{name}.{sequence}"]
    if roll < 0.76:
        token = rng.choice(tokens)
        return ["settle", token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB"), "success", "forged"]
    if roll < 0.86 and batch is not None:
        return ["seal", batch]
    if roll < 0.93 and batch is not None:
        return ["close", batch]
    if roll < 0.95:
        return ["restore"]
    return ["claim"]


def _worker(kind: str, where: str, path: Path, name: str, deadline: float, seed: int, restore_first: bool) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the coordinator decides when workers end
    try:
        _work(kind, where, path, name, deadline, seed, restore_first)
    except Exception as error:  # noqa: BLE001 - one line, no traceback; the coordinator counts the failure
        print(f"torture: worker {name}: {type(error).__name__}: {error}", file=sys.stderr, flush=True)
        os._exit(WORKER_FAILED)


def _work(kind: str, where: str, path: Path, name: str, deadline: float, seed: int, restore_first: bool) -> None:
    rng = random.Random(seed)
    history = _History(path)
    durable = DurableClosure(_open_store(kind, where), CLOSURE_ID)
    tokens: list[str] = []
    batch: str | None = None
    sequence = 0
    while time.monotonic() < deadline:
        op = ["restore"] if restore_first and sequence == 0 else _choose(rng, name, sequence, tokens, batch)
        history.line({"n": sequence, "t": time.monotonic(), "op": op})
        try:
            answer = execute(durable, op)
        except Exception as error:  # noqa: BLE001  # recorded as the answer (the model never raises): an anomaly
            history.line({"n": sequence, "t": time.monotonic(), "a": ["error", type(error).__name__, str(error)]})
            os._exit(WORKER_FAILED)
        history.line({"n": sequence, "t": time.monotonic(), "a": answer})
        if op[0] == "claim":
            batch, tokens = answer[1], [token for _call, token in answer[2]]
        elif op[0] == "begin" and answer[0] == "begun":
            tokens = []  # the new batch's tokens come with the next claim
        sequence += 1


# --------------------------------------------------------------------------- the coordinator


@dataclass
class _Incarnation:
    name: str
    path: Path
    process: Any
    died: float | None = None  # when the coordinator saw it dead after a kill


@dataclass
class _Run:
    incarnations: list[_Incarnation] = field(default_factory=list)
    crashes: int = 0


def _start(
    context: Any, kind: str, where: str, directory: Path, worker: int, number: int, deadline: float, rng: random.Random
) -> _Incarnation:
    name = f"w{worker}.{number}"
    path = directory / f"history-{name}.jsonl"
    restore_first = number > 0 and rng.random() < 0.5
    process = context.Process(
        target=_worker, args=(kind, where, path, name, deadline, rng.randrange(2**32), restore_first), daemon=True
    )
    process.start()
    return _Incarnation(name, path, process)


def _drive(args: argparse.Namespace, where: str, directory: Path, rng: random.Random, out: IO[str]) -> _Run:
    context = multiprocessing.get_context("fork")
    start = time.monotonic()
    deadline = start + args.seconds
    run = _Run()
    current = {w: _start(context, args.store, where, directory, w, 0, deadline, rng) for w in range(args.processes)}
    run.incarnations.extend(current.values())
    numbers = dict.fromkeys(current, 0)
    next_report = start + 10
    while True:
        now = time.monotonic()
        if now >= deadline:
            break
        gap = rng.expovariate(1 / args.kill_every) if args.kill_every > 0 else deadline - now
        time.sleep(max(0.0, min(gap, deadline - now)))
        if args.kill_every > 0 and time.monotonic() < deadline - 0.05:
            worker = rng.randrange(args.processes)
            victim = current[worker]
            if victim.process.is_alive():
                os.kill(victim.process.pid, signal.SIGKILL)
            victim.process.join()
            victim.died = time.monotonic()
            run.crashes += 1
            numbers[worker] += 1
            current[worker] = _start(context, args.store, where, directory, worker, numbers[worker], deadline, rng)
            run.incarnations.append(current[worker])
        if time.monotonic() >= next_report:
            print(f"  ... {time.monotonic() - start:.0f} s, {run.crashes} crashes", file=out, flush=True)
            next_report += 10
    for incarnation in current.values():
        incarnation.process.join(timeout=30)
        if incarnation.process.is_alive():  # stuck past the deadline: killed, and counted as a crash
            os.kill(incarnation.process.pid, signal.SIGKILL)
            incarnation.process.join()
            incarnation.died = time.monotonic()
            run.crashes += 1
    return run


def _operations(run: _Run) -> list[Operation]:
    """Every incarnation's history as operations; an unanswered one ends at the death of its worker."""
    history: list[Operation] = []
    for incarnation in run.incarnations:
        invoked: dict[int, dict[str, Any]] = {}
        answered: dict[int, dict[str, Any]] = {}
        if incarnation.path.exists():
            for line in incarnation.path.read_text(encoding="utf-8").splitlines():
                with contextlib.suppress(ValueError):  # a line cut by a kill is not a record
                    record = json.loads(line)
                    (answered if "a" in record else invoked)[record["n"]] = record
        for number, record in invoked.items():
            response = answered.get(number)
            if response is not None:
                answer, ended = _frozen(response["a"]), response["t"]
                history.append(Operation(incarnation.name, record["t"], ended, json.dumps(record["op"]), answer))
            else:
                died = incarnation.died if incarnation.died is not None else time.monotonic()
                history.append(Operation(incarnation.name, record["t"], died, json.dumps(record["op"]), CRASHED))
    return history


def _frozen(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_frozen(item) for item in value)
    return value


@dataclass
class _Tally:
    kinds: Counter[str] = field(default_factory=Counter)
    answers: Counter[str] = field(default_factory=Counter)
    unanswered: int = 0
    double_accepts: int = 0
    lost: int = 0
    errors: int = 0


def _tally(history: list[Operation], final: dict[str, Any]) -> _Tally:
    tally = _Tally()
    accepted: dict[tuple[int, str], list[Any]] = {}
    for operation in history:
        op = json.loads(operation.op)
        tally.kinds[op[0]] += 1
        if operation.answer == CRASHED:
            tally.unanswered += 1
            continue
        answer = operation.answer
        tally.errors += isinstance(answer, tuple) and answer[0] == "error"
        if op[0] in ("settle", "close", "seal", "begin") and isinstance(answer, tuple):
            label = answer[0] if answer[0] in ("accepted", "begun", "snapshot") else f"{answer[0]} {answer[1]}"
            tally.answers[f"{op[0]}: {label}"] += 1
        if op[0] == "settle" and answer[0] == "accepted":
            accepted.setdefault((answer[1], answer[2]), []).append(op)
    tally.double_accepts = sum(len(ops) - 1 for ops in accepted.values())
    run = final.get("run")
    calls = {call["id"]: call for call in run["calls"]} if run else {}
    if "invalid" in final:
        return tally
    for (generation, call_id), ops in accepted.items():
        if generation != final["generation"]:
            continue
        settlement = calls.get(call_id, {}).get("settlement")
        _kind, _token, status, content = ops[0]
        held = settlement is not None and settlement["provenance"] == "reported" and settlement["status"] == status
        if not held or (settlement.get("content") or settlement.get("message")) != content:
            tally.lost += 1
    return tally


def run_torture(args: argparse.Namespace, out: IO[str]) -> int:
    if args.processes < 1 or args.seconds <= 0 or args.kill_every < 0:
        print("torture: --processes must be >= 1, --seconds > 0 and --kill-every >= 0", file=sys.stderr)
        return 2
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="tcc-torture-") as temporary:
        directory = args.keep or Path(temporary)
        directory.mkdir(parents=True, exist_ok=True)
        try:
            with _store_place(args.store, directory) as where:
                return _torture_in(args, where, directory, rng, seed, out)
        except KeyboardInterrupt:
            print("torture: interrupted", file=sys.stderr)
            return 130
        except Exception as error:  # noqa: BLE001 - no server, no file, a refused connection: one line, exit 2
            print(f"torture: {type(error).__name__}: {error}", file=sys.stderr)
            return 2


def _torture_in(
    args: argparse.Namespace, where: str, directory: Path, rng: random.Random, seed: int, out: IO[str]
) -> int:
    store = _open_store(args.store, where)
    durable = DurableClosure.create(store, CLOSURE_ID, secret=SECRET, max_calls=8, max_diagnostics=8)
    initial = durable.image()
    print(
        f"torture: {args.store}, {args.processes} processes, {args.seconds:g} s, "
        f"kill every ~{args.kill_every:g} s, seed {seed}",
        file=out,
        flush=True,
    )
    run = _drive(args, where, directory, rng, out)
    try:
        final_text = execute(DurableClosure(_open_store(args.store, where), CLOSURE_ID), ["image"])
    except Exception as error:  # noqa: BLE001  # the stored state does not even restore: an anomaly
        final_text = json.dumps({"invalid": f"{type(error).__name__}: {error}"})
    history = _operations(run)
    end = time.monotonic()
    history.append(Operation("final", end, end + 1, json.dumps(["image"]), final_text))
    print(f"  checking {len(history)} operations for linearizability ...", file=out, flush=True)
    checked = check(history, model(initial, SECRET), budget=args.budget)
    tally = _tally(history[:-1], json.loads(final_text))
    return _report(out, run, history, checked, tally)


def _report(out: IO[str], run: _Run, history: list[Operation], checked: Any, tally: _Tally) -> int:
    observed = len(history) - 1 - tally.unanswered
    final = json.loads(history[-1].answer)
    violation = 0 if checked.verdict == "linearizable" else 1
    failed = sum(1 for i in run.incarnations if i.died is None and i.process.exitcode == WORKER_FAILED)
    anomalies = violation + tally.double_accepts + tally.lost + tally.errors + ("invalid" in final) + failed
    if failed:
        print(f"workers that failed (not killed): {failed}", file=out)
    if "invalid" in final:
        print(f"stored image: invalid ({final['invalid']})", file=out)
        final = {"epoch": "?", "generation": "?"}
    print(f"operations: {len(history) - 1} ({observed} answered, {tally.unanswered} cut by a kill)", file=out)
    print("  " + ", ".join(f"{kind} {count}" for kind, count in sorted(tally.kinds.items())), file=out)
    print("  " + ", ".join(f"{label} {count}" for label, count in sorted(tally.answers.items())), file=out)
    print(f"crashes: {run.crashes} (SIGKILL), epochs: {final['epoch']}, generations: {final['generation']}", file=out)
    print(f"linearizability: {checked.verdict} ({checked.steps} model steps, {checked.states} states)", file=out)
    if checked.verdict != "linearizable":
        print(f"  {checked.message}", file=out)
        if checked.minimal_prefix is not None:
            print(f"  shortest violating prefix: {checked.minimal_prefix} operations", file=out)
    if tally.errors:
        print(f"operations that raised: {tally.errors}", file=out)
    print(f"lost outcomes: {tally.lost}", file=out)
    print(f"double accepts: {tally.double_accepts}", file=out)
    print(f"anomalies: {anomalies}", file=out)
    return 0 if anomalies == 0 else 1
