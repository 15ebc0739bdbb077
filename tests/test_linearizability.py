"""Linearizability: 8 threads hammer one closure; every recorded history must be explainable by the sequential spec.

Each history: a setup ``begin`` of calls ``a``, ``b``, ``c``, then 8 threads run 4–6 mixed operations each
(``begin``, ``settle``/``succeed``/``fail``/``cancel`` with the current handle, a stale one or a look-alike,
``close``, ``seal``, ``snapshot``, ``active_generation`` and the three exports — of a fresh snapshot or of one the
thread took earlier), with ``sys.setswitchinterval(1e-6)`` so they really interleave, then a final ``close``.
Every operation's invocation and response times (``time.perf_counter_ns``, taken by the calling thread just before
the call and just after it returns) and its result are recorded.

The checker is Wing & Gong's: a depth-first search over the operations that may go next in real-time order (an
operation may go next when no pending operation responded before it was invoked), with memoization of visited
(set of linearized operations, model state) pairs.  The model is the reference itself, run sequentially: the
state after a prefix is obtained by replaying the chosen order on a fresh ``ToolCallClosure`` (handles mapped by
generation number, a thread's earlier snapshot mapped to the model's result of the operation that produced it),
and each operation's result in the model must equal the recorded one exactly (canonical JSON of the value, or the
error's class, code and message).

Two answers exist only when operations overlap.  The spec documents both (§5.2, §6.4, §8, README "Threading"),
and they are the answers re-entrant caller code produces in a sequential run (the last tests show it); the
sequential model allows them as the checker's only alternatives:

* ``dup`` — a ``settle`` (any form) whose admission happened before another settlement's commit and whose recheck
  after it reports ``duplicate_settlement`` with the *normalized* observedStatus instead of null.  Allowed at a
  point where the model answers ``duplicate_settlement`` (null) and the accepted settlement of that call is
  already in the order and responded after this operation was invoked (so its commit can lie between this one's
  admission and recheck).  The model then records the diagnostic with the normalized status, as the recheck does
  (the only place the checker writes to the model's state directly);
* ``gen`` — a ``begin`` whose validation overlapped another begin's commit raises ``generation_changed`` (exactly
  the reference's error) and changes nothing.  Allowed when a successful begin already in the order responded
  after this one was invoked.

Anything else — two accepted settlements of one call, a snapshot that misses a settlement that responded before
it was taken, a ``generation_changed`` or a normalized duplicate without an overlapping winner — makes the history
non-linearizable; the mutant tests at the end check that the checker says so.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import random
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from tool_call_closure import (
    Accepted,
    BatchHandle,
    BeginResult,
    LimitError,
    Rejection,
    Snapshot,
    ToolCallClosure,
    UsageError,
    to_json,
)

LONG = os.environ.get("HYPOTHESIS_PROFILE") == "long"
THREADS = 8
HISTORIES = 2000 if LONG else 40  # the fast tier; the slow tier checks 1,000 (test_…_many_histories)
OPS_PER_THREAD = (4, 6)
IDS = ("a", "b", "c", "d")
EXPORTS = ("to_openai_chat_completions", "to_openai_responses", "to_anthropic_tool_results")
SETTLE_FORMS = frozenset({"settle", "succeed", "fail", "cancel"})

Result = tuple[Any, ...]  # canonical: ("value", json) | ("none",) | ("int", n) | ("raise", class, code, message)
Desc = tuple[Any, ...]  # a replayable description of one operation


@dataclasses.dataclass(frozen=True)
class Op:
    """One operation of a history."""

    uid: int
    thread: int
    desc: Desc
    inv: int
    resp: int
    result: Result


def canonical(value: Any = None, error: BaseException | None = None) -> Result:
    if error is not None:
        return ("raise", type(error).__name__, getattr(error, "code", None), str(error))
    if value is None:
        return ("none",)
    if type(value) is int:
        return ("int", value)
    return ("value", to_json(value))


def is_accepted(result: Result) -> bool:
    return bool(result[0] == "value" and result[1].startswith('{"accepted":true'))


def is_duplicate_normalized(result: Result) -> bool:
    return bool(
        result[0] == "value"
        and result[1].startswith('{"accepted":false,"reason":"duplicate_settlement"')
        and not result[1].endswith('"observedStatus":null}')
    )


def is_generation_changed(result: Result) -> bool:
    return bool(result[0] == "raise" and result[2] == "generation_changed")


def is_successful_begin(op: Op) -> bool:
    return bool(op.desc[0] == "begin" and op.result[0] == "value")


# --------------------------------------------------------------------------- recording histories


class Recorder:
    """Runs the threads of one history against one closure and records every operation."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.closure = ToolCallClosure(max_diagnostics=100_000)
        self.lock = threading.Lock()
        self.published: dict[int, BatchHandle] = {}  # generation -> the handle begin returned
        self.ops: list[Op] = []
        self.uid = 0
        self.values: dict[int, Any] = {}  # uid -> the value the operation returned (a thread's own snapshots)
        self.unexpected: list[BaseException] = []

    def _next_uid(self) -> int:
        with self.lock:
            self.uid += 1
            return self.uid

    def record(self, thread: int, desc: Desc, action: Callable[[], Any]) -> tuple[Op, Any]:
        uid = self._next_uid()
        inv = time.perf_counter_ns()
        value: Any = None
        error: BaseException | None = None
        try:
            value = action()
        except (UsageError, LimitError) as exc:
            error = exc
        resp = time.perf_counter_ns()
        if error is None and type(value) is BeginResult:
            with self.lock:
                self.published[value.generation] = value.handle
        op = Op(uid, thread, desc, inv, resp, canonical(value, error))
        with self.lock:
            self.ops.append(op)
            self.values[uid] = value
        return op, value

    def plan(self, thread: int) -> list[Callable[[], None]]:
        """The thread's operations, chosen now (deterministic per seed); handles are picked when each runs."""
        rng = random.Random(self.rng.random())
        steps: list[Callable[[], None]] = []
        own_snapshots: list[int] = []  # uids of this thread's operations that returned a Snapshot
        for k in range(rng.randint(*OPS_PER_THREAD)):
            kind = rng.choices(
                ["settle", "succeed", "fail", "cancel", "close", "seal", "begin", "snapshot", "export", "active_generation"],
                weights=[10, 12, 8, 6, 5, 3, 6, 5, 6, 2],
            )[0]  # fmt: skip
            steps.append(self._step(thread, k, kind, rng, own_snapshots))
        return steps

    def _handle(self, rng: random.Random) -> tuple[Desc, Any]:
        with self.lock:
            generations = sorted(self.published)
        which = rng.choices(["current", "stale", "forged"], weights=[7, 2, 1])[0]
        if which == "forged":
            generation = generations[-1]
            return ("forged", generation), BatchHandle(generation)
        generation = generations[-1] if which == "current" else rng.choice(generations)
        return ("real", generation), self.published[generation]

    def _step(self, thread: int, k: int, kind: str, rng: random.Random, own: list[int]) -> Callable[[], None]:
        closure = self.closure
        tag = f"{thread}.{k}"
        call_id = rng.choice(IDS)

        def run() -> None:
            if kind in SETTLE_FORMS or kind in ("close", "seal"):
                handle_desc, handle = self._handle(rng)
            if kind == "settle":
                status = rng.choice(["success", "error", "cancelled"])
                outcome: dict[str, Any] = (
                    {"status": status, "content": {"by": tag}}
                    if status == "success"
                    else {"status": status, "code": f"E{tag}", "message": f"m{tag}"}
                )
                self.record(
                    thread, ("settle", handle_desc, call_id, outcome), lambda: closure.settle(handle, call_id, outcome)
                )
            elif kind == "succeed":
                content = {"by": tag}
                self.record(
                    thread,
                    ("succeed", handle_desc, call_id, content),
                    lambda: closure.succeed(handle, call_id, content),
                )
            elif kind == "fail":
                message = f"failed {tag}"
                self.record(thread, ("fail", handle_desc, call_id, message),
                            lambda: closure.fail(handle, call_id, RuntimeError(message)))  # fmt: skip
            elif kind == "cancel":
                message = f"cancelled {tag}"
                self.record(
                    thread, ("cancel", handle_desc, call_id, message), lambda: closure.cancel(handle, call_id, message)
                )
            elif kind == "close":
                reason = {"status": rng.choice(["error", "cancelled"]), "code": f"C{tag}"}
                op, value = self.record(thread, ("close", handle_desc, reason), lambda: closure.close(handle, reason))
                if type(value) is Snapshot:
                    own.append(op.uid)
            elif kind == "seal":
                op, value = self.record(thread, ("seal", handle_desc), lambda: closure.seal(handle))
                if type(value) is Snapshot:
                    own.append(op.uid)
            elif kind == "begin":
                ids = tuple(sorted(rng.sample(IDS, rng.randint(1, 3))))
                self.record(thread, ("begin", ids), lambda: closure.begin([{"id": i, "name": "t"} for i in ids]))
            elif kind == "snapshot":
                op, value = self.record(thread, ("snapshot",), closure.snapshot)
                if type(value) is Snapshot:
                    own.append(op.uid)
            elif kind == "export":
                method = rng.choice(EXPORTS)
                if own and rng.random() < 0.6:
                    uid = rng.choice(own)
                    snapshot = self.snapshot_of(uid)
                    self.record(thread, ("export", method, uid), lambda: getattr(closure, method)(snapshot))
                else:
                    self.record(thread, ("export", method, None), getattr(closure, method))
            else:
                self.record(thread, ("active_generation",), lambda: closure.active_generation)

        return run

    def snapshot_of(self, uid: int) -> Snapshot:
        snapshot = self.values[uid]
        assert type(snapshot) is Snapshot
        return snapshot

    def run(self) -> list[Op]:
        self.record(-1, ("begin", ("a", "b", "c")), lambda: self.closure.begin([{"id": i, "name": "t"} for i in "abc"]))
        plans = [self.plan(thread) for thread in range(THREADS)]
        barrier = threading.Barrier(THREADS)

        def body(thread: int) -> None:
            try:
                barrier.wait()
                for step in plans[thread]:
                    step()
            except BaseException as exc:  # noqa: BLE001 - surfaced by the test
                self.unexpected.append(exc)

        workers = [threading.Thread(target=body, args=(t,)) for t in range(THREADS)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=60)
            assert not worker.is_alive(), "a thread is stuck (deadlock?)"
        last = max(self.published)
        handle = self.published[last]
        self.record(-1, ("close", ("real", last), None), lambda: self.closure.close(handle))
        return sorted(self.ops, key=lambda op: op.uid)


# --------------------------------------------------------------------------- the sequential model


class Model:
    """The reference, run sequentially: replays moves and answers what each operation returns."""

    def __init__(self) -> None:
        self.closure = ToolCallClosure(max_diagnostics=100_000)
        self.handles: dict[int, BatchHandle] = {}
        self.values: dict[int, Any] = {}

    def fingerprint(self) -> tuple[int | None, str | None]:
        snapshot = self.closure.snapshot()
        return self.closure.active_generation, None if snapshot is None else to_json(snapshot)

    def _handle(self, desc: Desc) -> Any:
        kind, generation = desc
        if kind == "forged":
            return BatchHandle(generation)
        handle = self.handles.get(generation)
        if handle is None:
            raise LookupError(f"generation {generation} does not exist in this order")
        return handle

    def apply(self, op: Op, hook: Callable[[], None] | None = None) -> Result:
        """Run ``op`` on the model; with ``hook``, run it from the op's caller code (normalize or validation)."""
        try:
            value = self._call(op, hook)
        except (UsageError, LimitError) as exc:
            return canonical(error=exc)
        self.values[op.uid] = value
        if type(value) is BeginResult:
            self.handles[value.generation] = value.handle
        return canonical(value)

    def _call(self, op: Op, hook: Callable[[], None] | None) -> Any:
        closure = self.closure
        desc = op.desc
        kind = desc[0]
        if kind == "begin":
            calls: list[Any] = [{"id": i, "name": "t"} for i in desc[1]]
            if hook is not None:
                calls[0] = HookedEntry(calls[0], hook)
            return closure.begin(calls)
        if kind == "settle":
            outcome = dict(desc[3])
            if hook is not None:
                field = "content" if outcome["status"] == "success" else "message"
                outcome[field] = (
                    HookedJson(outcome[field], hook) if field == "content" else HookedText(outcome[field], hook)
                )
            return closure.settle(self._handle(desc[1]), desc[2], outcome)
        if kind == "succeed":
            content = desc[3] if hook is None else HookedJson(desc[3], hook)
            return closure.succeed(self._handle(desc[1]), desc[2], content)
        if kind == "fail":
            error = RuntimeError(desc[3]) if hook is None else HookedError(desc[3], hook)
            return closure.fail(self._handle(desc[1]), desc[2], error)
        if kind == "cancel":
            message = desc[3] if hook is None else HookedText(desc[3], hook)
            return closure.cancel(self._handle(desc[1]), desc[2], message)
        if kind == "close":
            return closure.close(self._handle(desc[1]), desc[2])
        if kind == "seal":
            return closure.seal(self._handle(desc[1]))
        if kind == "snapshot":
            return closure.snapshot()
        if kind == "export":
            method = getattr(closure, desc[1])
            if desc[2] is None:
                return method()
            return method(self.values[desc[2]])
        if kind == "active_generation":
            return closure.active_generation
        raise AssertionError(desc)


class _Once:
    def __init__(self, hook: Callable[[], None]) -> None:
        self._hook: Callable[[], None] | None = hook

    def fire(self) -> None:
        hook, self._hook = self._hook, None
        if hook is not None:
            hook()


class HookedJson(_Once):
    """Content whose ``__json__`` runs the nested operation, then stands for the plain value."""

    def __init__(self, value: Any, hook: Callable[[], None]) -> None:
        super().__init__(hook)
        self.value = value

    def __json__(self) -> Any:
        self.fire()
        return self.value


class HookedText(_Once):
    """A message whose ``__str__`` runs the nested operation."""

    def __init__(self, text: str, hook: Callable[[], None]) -> None:
        super().__init__(hook)
        self.text = text

    def __str__(self) -> str:
        self.fire()
        return self.text


class HookedError(RuntimeError):
    """``fail``'s exception whose ``__str__`` runs the nested operation."""

    def __init__(self, text: str, hook: Callable[[], None]) -> None:
        super().__init__(text)
        self.once = _Once(hook)
        self.text = text

    def __str__(self) -> str:
        self.once.fire()
        return self.text


class HookedEntry(Mapping[str, Any], _Once):
    """A call entry whose first read runs the nested operation (a begin nested in a begin's validation)."""

    def __init__(self, entry: dict[str, Any], hook: Callable[[], None]) -> None:
        _Once.__init__(self, hook)
        self.entry = entry

    def __getitem__(self, key: str) -> Any:
        self.fire()
        return self.entry[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.entry)

    def __len__(self) -> int:
        return len(self.entry)


# --------------------------------------------------------------------------- the checker


Move = tuple[str, int]  # ("op", i): the model runs operation i; ("dup", i) / ("gen", i): an allowed alternative


class SearchBudgetExceededError(Exception):
    """The search gave up: the history is neither shown linearizable nor refuted (inconclusive)."""


@dataclasses.dataclass
class Verdict:
    linearizable: bool
    order: list[Move]
    nodes: int
    alternatives: Counter[str]


def normalized_status(desc: Desc) -> str:
    """The status a settle-family operation normalizes to (what its recheck rejections report)."""
    fixed = {"succeed": "success", "fail": "error", "cancel": "cancelled"}
    return fixed.get(desc[0]) or str(desc[3]["status"])


class Checker:
    """Wing & Gong's search with memoization; the model state of a prefix comes from replaying it."""

    def __init__(self, ops: list[Op], node_limit: int = 1_000_000) -> None:
        self.ops = ops
        self.n = len(ops)
        self.node_limit = node_limit
        self.nodes = 0
        self.seen: set[tuple[int, Any]] = set()
        self.model = Model()
        self.prefix: list[Move] = []
        self.done = 0  # bit mask of the operations in self.prefix
        self.synced = True  # self.model is the state after self.prefix
        # (generation, call id) -> index of the operation whose Accepted made it terminal
        self.accepted_by: dict[tuple[int, str], int] = {}
        # Operations whose answer shows a generation's state (snapshot, close, seal, begin's superseded): that
        # state only grows (diagnostics are appended, calls settle, a generation closes), so an order whose model
        # has gone past what a pending one shows can never explain it: pruned at once.
        self.observations: list[tuple[int, int, tuple[Any, ...], dict[str, Any], bool]] = []
        for i, op in enumerate(ops):
            if op.desc[0] in SETTLE_FORMS and is_accepted(op.result):
                data = json.loads(op.result[1])
                self.accepted_by.setdefault((data["generation"], data["callId"]), i)
            if op.result[0] == "value" and '"diagnostics":' in op.result[1]:
                data = json.loads(op.result[1])
                shown = data["superseded"] if "handle" in data else data
                if isinstance(shown, dict):
                    diagnostics = tuple(tuple(d.values()) for d in shown["diagnostics"])
                    calls = {c["id"]: c for c in shown["calls"]}
                    self.observations.append((i, shown["generation"], diagnostics, calls, shown["closed"]))

    def _replay(self) -> None:
        self.model = Model()
        for move in self.prefix:
            applied = self._apply(move, replaying=True)
            assert applied, "a replayed prefix must replay"
        self.synced = True

    def _apply(self, move: Move, replaying: bool = False) -> bool:
        """Apply ``move`` to the model; True if the model's answer equals the recorded one."""
        kind, i = move
        op = self.ops[i]
        try:
            if kind == "op":
                return self.model.apply(op) == op.result
            if kind == "gen":
                # begin raced another begin's commit: generation_changed, nothing changes (spec §5.2).  Allowed
                # when a successful begin already in the order responded after this one was invoked.
                return replaying or (
                    op.result == generation_changed_answer()
                    and any(
                        self.done >> j & 1 and is_successful_begin(other) and other.resp > op.inv
                        for j, other in enumerate(self.ops)
                    )
                )
            # "dup": a settlement admitted while its call was pending, rechecked after another settlement's commit
            # (spec §6.4, §8).  The sequential answer is duplicate_settlement with observedStatus null; the
            # concurrent one reports the normalized status, in the answer and in the diagnostic it records.
            rejection = json.loads(op.result[1])
            status = normalized_status(op.desc)
            if rejection["observedStatus"] != status:
                return False
            winner = self.accepted_by.get((rejection["generation"], op.desc[2]))
            if winner is None or not (self.done >> winner & 1) or self.ops[winner].resp <= op.inv:
                return False
            diagnostics = self.model.closure._diagnostics  # white box: the model state this alternative leaves
            count = len(diagnostics)
            sequential = self.model.apply(op)
            if sequential != canonical(Rejection("duplicate_settlement", op.desc[2], rejection["generation"], None)):
                return False
            if len(diagnostics) > count:
                diagnostics[-1] = ("duplicate_settlement", op.desc[2], rejection["generation"], status)  # a record
            return True
        except LookupError:  # a handle of a generation this order has not begun yet
            return False

    def _hopeless(self) -> bool:
        """True if a pending observation can no longer match whatever comes next."""
        snapshot = self.model.closure.snapshot()
        if snapshot is None:
            return False
        diagnostics = tuple((d.reason, d.call_id, d.generation, d.observed_status) for d in snapshot.diagnostics)
        for i, generation, shown, calls, closed in self.observations:
            if self.done >> i & 1:
                continue
            if generation < snapshot.generation:
                return True
            if generation > snapshot.generation:
                continue
            if shown[: len(diagnostics)] != diagnostics or (snapshot.closed and not closed):
                return True
            for call in snapshot.calls:
                if call.state != "pending" and calls[call.id]["state"] != call.state:
                    return True
        return False

    def _candidates(self) -> list[int]:
        pending = [i for i in range(self.n) if not self.done >> i & 1]
        horizon = min(self.ops[i].resp for i in pending)
        return sorted((i for i in pending if self.ops[i].inv <= horizon), key=lambda i: self.ops[i].inv)

    def _moves(self) -> list[Move]:
        moves: list[Move] = []
        for i in self._candidates():
            op = self.ops[i]
            if op.desc[0] in SETTLE_FORMS and is_duplicate_normalized(op.result):
                moves.append(("dup", i))
            elif op.desc[0] == "begin" and is_generation_changed(op.result):
                moves.append(("gen", i))
            else:
                moves.append(("op", i))
        return moves

    def check(self) -> Verdict:
        found = self._search()
        alternatives: Counter[str] = Counter()
        for kind, _ in self.prefix if found else []:
            if kind != "op":
                alternatives["settle_duplicate_normalized" if kind == "dup" else "begin_generation_changed"] += 1
        return Verdict(found, list(self.prefix) if found else [], self.nodes, alternatives)

    def _search(self) -> bool:
        if self.done == (1 << self.n) - 1:
            return True
        self.nodes += 1
        if self.nodes > self.node_limit:
            raise SearchBudgetExceededError(f"search exceeded {self.node_limit} nodes")
        if not self.synced:
            self._replay()
        key = (self.done, self.model.fingerprint())
        if key in self.seen:
            return False
        self.seen.add(key)
        if self._hopeless():
            return False
        for move in self._moves():
            if not self.synced:
                self._replay()
            self.synced = False
            if not self._apply(move):
                continue
            self.prefix.append(move)
            self.done |= 1 << move[1]
            self.synced = True
            if self._search():
                return True
            self.prefix.pop()
            self.done &= ~(1 << move[1])
            self.synced = False
        return False


def check_history(ops: list[Op]) -> Verdict:
    return Checker(ops).check()


# --------------------------------------------------------------------------- exactly-once


def exactly_once_violations(ops: list[Op]) -> list[str]:
    """At most one Accepted per (generation, call); every closed snapshot shows exactly the accepted settlement."""
    problems: list[str] = []
    accepted: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for op in ops:
        if is_accepted(op.result):
            data = json.loads(op.result[1])
            accepted.setdefault((data["generation"], data["callId"]), []).append(data["settlement"])
    for key, settlements in accepted.items():
        if len(settlements) > 1:
            problems.append(f"{key} accepted {len(settlements)} times")
    for op in ops:
        if op.result[0] != "value" or '"closed":' not in op.result[1]:
            continue
        data = json.loads(op.result[1])
        snapshots = [data, data.get("superseded")] if "handle" in data else [data]
        for snapshot in snapshots:
            if not isinstance(snapshot, dict) or "calls" not in snapshot:
                continue
            for call in snapshot["calls"]:
                key = (snapshot["generation"], call["id"])
                settlement = call["settlement"]
                if settlement is not None and settlement["provenance"] == "reported":
                    if accepted.get(key, [None])[0] != settlement:
                        problems.append(f"{key} shows reported {settlement} but was accepted as {accepted.get(key)}")
                elif snapshot["closed"] and key in accepted:
                    problems.append(f"{key} was accepted but its closed generation shows {settlement}")
    return problems


# --------------------------------------------------------------------------- tests


@contextlib.contextmanager
def switching_every_microsecond() -> Iterator[None]:
    """Switch threads every microsecond so operations really interleave (only while the threads run)."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(interval)


@pytest.fixture
def fast_switching() -> Iterator[None]:
    with switching_every_microsecond():
        yield


def test_histories_of_eight_threads_are_linearizable() -> None:
    _check_histories(HISTORIES)


@pytest.mark.slow
def test_histories_of_eight_threads_are_linearizable_many_histories() -> None:
    _check_histories(max(HISTORIES, 1000))


def _check_histories(count: int) -> None:
    totals: Counter[str] = Counter()
    overlaps = 0
    started = time.perf_counter()
    for seed in range(count):
        recorder = Recorder(seed)
        with switching_every_microsecond():
            ops = recorder.run()
        assert recorder.unexpected == [], recorder.unexpected
        assert exactly_once_violations(ops) == []
        try:
            verdict = check_history(ops)
        except SearchBudgetExceededError:
            # Rare histories with many overlapping operations exhaust the search budget; they are
            # counted as inconclusive (not as passes) and must stay rare.
            totals["inconclusive"] += 1
            continue
        assert verdict.linearizable, format_history(ops)
        totals["histories"] += 1
        totals["operations"] += len(ops)
        totals["nodes"] += verdict.nodes
        totals.update(verdict.alternatives)
        totals.update(f"result:{op.desc[0]}:{describe_result(op.result)}" for op in ops)
        overlaps += sum(1 for a in ops if any(b is not a and b.inv < a.resp and a.inv < b.resp for b in ops))
    print(
        f"\nlinearizability: {totals['histories']} histories, {totals['operations']} operations checked "
        f"({totals['inconclusive']} inconclusive), "
        f"{totals['nodes']} search nodes, {time.perf_counter() - started:.1f} s; concurrency-only answers allowed: "
        f"{totals['settle_duplicate_normalized']} duplicate_settlement with observedStatus, "
        f"{totals['begin_generation_changed']} generation_changed; {overlaps} operations overlapped another"
    )
    print("  results:", ", ".join(f"{k[7:]}={v}" for k, v in sorted(totals.items()) if k.startswith("result:")))
    assert totals["inconclusive"] <= max(1, count // 100), f"{totals['inconclusive']} histories were inconclusive"
    assert totals["operations"] >= totals["histories"] * (THREADS * OPS_PER_THREAD[0] + 2)
    # the histories really were concurrent: settlements raced and were fenced
    assert totals["result:succeed:duplicate_settlement"] + totals["result:settle:duplicate_settlement"] > 0
    assert totals["result:succeed:stale_generation"] + totals["result:settle:stale_generation"] > 0


def test_exactly_once_under_contention(fast_switching: None) -> None:
    """Eight threads settle the same 100 calls in every form, with current and stale handles, while one closes."""
    closure = ToolCallClosure(max_calls=100, max_diagnostics=100_000)
    stale = closure.begin([{"id": "old", "name": "t"}]).handle
    ids = [f"c{i}" for i in range(100)]
    handle = closure.begin([{"id": i, "name": "t"} for i in ids]).handle
    results: list[tuple[int, str, Any]] = []
    lock = threading.Lock()
    barrier = threading.Barrier(THREADS)
    errors: list[BaseException] = []

    def worker(thread: int) -> None:
        try:
            barrier.wait()
            rng = random.Random(thread)
            for call_id in rng.sample(ids, len(ids)):
                form = rng.choice(["settle", "succeed", "fail", "cancel"])
                h = stale if rng.random() < 0.1 else handle
                if form == "settle":
                    result = closure.settle(h, call_id, {"status": "success", "content": thread})
                elif form == "succeed":
                    result = closure.succeed(h, call_id, thread)
                elif form == "fail":
                    result = closure.fail(h, call_id, RuntimeError(str(thread)))
                else:
                    result = closure.cancel(h, call_id, str(thread))
                with lock:
                    results.append((thread, call_id, result))
                if thread == 0 and call_id == ids[50]:
                    closure.close(handle, {"status": "error", "code": "deadline"})
        except BaseException as exc:  # noqa: BLE001 - surfaced below
            errors.append(exc)

    workers = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=60)
        assert not w.is_alive()
    assert errors == []
    accepted = Counter(call_id for _, call_id, r in results if type(r) is Accepted)
    assert max(accepted.values(), default=0) <= 1
    final = closure.snapshot()
    assert final is not None
    assert final.closed
    winners = {call_id: r for _, call_id, r in results if type(r) is Accepted}
    for call in final.calls:
        assert call.settlement is not None
        if call.id in winners:
            assert call.settlement == winners[call.id].settlement
            assert call.settlement.provenance == "reported"
        else:
            assert call.settlement.provenance == "synthetic"
            assert call.settlement.code == "deadline"
    reasons = Counter(r.reason for _, _, r in results if type(r) is Rejection)
    assert set(reasons) <= {"duplicate_settlement", "run_closed", "stale_generation"}
    print(f"\nexactly-once: {len(results)} settlements, {len(winners)} accepted, rejections {dict(reasons)}")


# --------------------------------------------------------------------------- the checker rejects what it must


def _sequential(script: list[tuple[Desc, Callable[[ToolCallClosure, dict[int, BatchHandle]], Any]]]) -> list[Op]:
    """Run a script sequentially on a fresh closure; times 0, 10, 20 … (each op [10k, 10k+5])."""
    closure = ToolCallClosure(max_diagnostics=100_000)
    handles: dict[int, BatchHandle] = {}
    ops = []
    for uid, (desc, action) in enumerate(script):
        try:
            value = action(closure, handles)
            result = canonical(value)
        except (UsageError, LimitError) as exc:
            value, result = None, canonical(error=exc)
        if type(value) is BeginResult:
            handles[value.generation] = value.handle
        ops.append(Op(uid, uid, desc, 10 * uid, 10 * uid + 5, result))
    return ops


def _begin(ids: tuple[str, ...]) -> tuple[Desc, Callable[[ToolCallClosure, dict[int, BatchHandle]], Any]]:
    return ("begin", ids), lambda c, h: c.begin([{"id": i, "name": "t"} for i in ids])


def _succeed(call_id: str, content: Any) -> tuple[Desc, Callable[[ToolCallClosure, dict[int, BatchHandle]], Any]]:
    return ("succeed", ("real", 1), call_id, content), lambda c, h: c.succeed(h[1], call_id, content)


def _snapshot() -> tuple[Desc, Callable[[ToolCallClosure, dict[int, BatchHandle]], Any]]:
    return ("snapshot",), lambda c, h: c.snapshot()


def retime(op: Op, inv: int, resp: int, result: Result | None = None) -> Op:
    return dataclasses.replace(op, inv=inv, resp=resp, result=op.result if result is None else result)


def test_checker_accepts_a_sequential_history_and_a_concurrent_one() -> None:
    ops = _sequential([_begin(("a", "b")), _succeed("a", 1), _succeed("a", 2), _snapshot()])
    assert check_history(ops).linearizable
    # the two settlements overlap; the recorded winner (op 1) may be linearized first either way
    concurrent = [ops[0], retime(ops[1], 10, 30), retime(ops[2], 12, 28), retime(ops[3], 40, 45)]
    assert check_history(concurrent).linearizable


def test_checker_rejects_two_accepted_settlements_of_one_call() -> None:
    ops = _sequential([_begin(("a",)), _succeed("a", 1), _succeed("a", 1)])
    assert is_accepted(ops[1].result)
    assert not is_accepted(ops[2].result)
    forged = [ops[0], retime(ops[1], 10, 30), retime(ops[2], 12, 28, result=ops[1].result)]
    assert exactly_once_violations(forged) != []
    assert not check_history(forged).linearizable


def test_checker_rejects_a_snapshot_that_misses_an_earlier_settlement() -> None:
    ops = _sequential([_begin(("a",)), _snapshot(), _succeed("a", 1)])
    # the snapshot (showing "a" pending) is moved to after the settlement responded: no order explains it
    late_snapshot = [ops[0], retime(ops[2], 10, 15), retime(ops[1], 20, 25)]
    assert not check_history(late_snapshot).linearizable
    # while the snapshot overlaps the settlement, it may be linearized first
    overlapping = [ops[0], retime(ops[2], 10, 15), retime(ops[1], 12, 25)]
    assert check_history(overlapping).linearizable


def test_checker_allows_duplicate_with_observed_status_only_when_overlapping() -> None:
    winner = _sequential([_begin(("a",)), _succeed("a", 1)])
    loser = Rejection("duplicate_settlement", "a", 1, "success")
    dup = Op(2, 2, ("succeed", ("real", 1), "a", 2), 0, 0, canonical(loser))
    overlapping = [winner[0], retime(winner[1], 10, 30), retime(dup, 12, 40)]
    verdict = check_history(overlapping)
    assert verdict.linearizable
    assert verdict.alternatives["settle_duplicate_normalized"] == 1
    after = [winner[0], retime(winner[1], 10, 15), retime(dup, 20, 40)]
    assert not check_history(after).linearizable


def test_checker_allows_generation_changed_only_beside_an_overlapping_begin() -> None:
    ops = _sequential([_begin(("a",)), _begin(("b",))])
    failed = Op(2, 2, ("begin", ("c",)), 0, 0, canonical(error=_generation_changed_error()))
    overlapping = [ops[0], retime(ops[1], 10, 30), retime(failed, 12, 40)]
    verdict = check_history(overlapping)
    assert verdict.linearizable
    assert verdict.alternatives["begin_generation_changed"] == 1
    alone = [ops[0], retime(ops[1], 10, 15), retime(failed, 20, 40)]
    assert not check_history(alone).linearizable


def test_checker_rejects_an_impossible_result() -> None:
    ops = _sequential([_begin(("a",)), _succeed("a", 1)])
    impossible = Rejection("unknown_call", "a", 1, None)
    assert not check_history([ops[0], retime(ops[1], 10, 15, result=canonical(impossible))]).linearizable
    # and a history that only a real-time violation could explain: the begin's handle used before it existed
    early = [retime(ops[1], 0, 5), retime(ops[0], 10, 15)]
    assert not check_history(early).linearizable


@functools.cache
def generation_changed_answer() -> Result:
    """The reference's own answer for a begin whose caller code began a generation."""
    return canonical(error=_generation_changed_error())


def _generation_changed_error() -> UsageError:
    closure = ToolCallClosure()

    class Nested(Mapping[str, Any]):
        def __getitem__(self, key: str) -> Any:
            closure.begin([])
            return "x"

        def __iter__(self) -> Iterator[str]:
            return iter(["id", "name"])

        def __len__(self) -> int:
            return 2

    with pytest.raises(UsageError) as info:
        closure.begin([Nested()])
    return info.value


def format_history(ops: list[Op]) -> str:
    start = min(op.inv for op in ops)
    return "\n".join(
        f"{op.uid:3} t{op.thread:<2} [{(op.inv - start) / 1000:9.1f} {(op.resp - start) / 1000:9.1f}] {op.desc} -> {op.result}"
        for op in sorted(ops, key=lambda o: o.inv)
    )


def describe_result(result: Result) -> str:
    if result[0] == "raise":
        return str(result[2])
    if result[0] != "value":
        return str(result[0])
    text = str(result[1])
    if text.startswith('{"accepted":false'):
        return text.split('"reason":"', 1)[1].split('"', 1)[0]
    if text.startswith('{"accepted":true'):
        return "accepted"
    return "value"


# --------------------------------------------------------------------------- the alternatives are what nesting produces


def test_the_allowed_alternatives_are_what_reentrant_caller_code_produces() -> None:
    """Sequentially, caller code that runs the winning operation from inside the losing one gets exactly the answers
    (and leaves exactly the state) the checker's ``dup`` and ``gen`` moves allow."""
    ops = _sequential([_begin(("a",)), _succeed("a", 1)])
    loser = Op(
        2, 2, ("succeed", ("real", 1), "a", 2), 12, 40, canonical(Rejection("duplicate_settlement", "a", 1, "success"))
    )
    nested = Model()
    nested.apply(ops[0])
    inner: list[Result] = []
    outer = nested.apply(loser, hook=lambda: inner.append(nested.apply(ops[1])))
    assert (outer, inner) == (loser.result, [ops[1].result])
    checker = Checker([ops[0], retime(ops[1], 10, 30), loser])
    verdict = checker.check()
    assert verdict.order == [("op", 0), ("op", 1), ("dup", 2)]
    assert checker.model.fingerprint() == nested.fingerprint()

    begins = _sequential([_begin(("a",)), _begin(("b",))])
    failed = Op(2, 2, ("begin", ("c",)), 12, 40, generation_changed_answer())
    nested = Model()
    nested.apply(begins[0])
    inner = []
    outer = nested.apply(failed, hook=lambda: inner.append(nested.apply(begins[1])))
    assert (outer, inner) == (failed.result, [begins[1].result])
    checker = Checker([begins[0], retime(begins[1], 10, 30), failed])
    assert checker.check().order == [("op", 0), ("op", 1), ("gen", 2)]
    assert checker.model.fingerprint() == nested.fingerprint()


# --------------------------------------------------------------------------- a race found by this checker, now fixed


def test_an_unlocked_phase_never_sees_a_half_installed_generation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Deterministic form of the race: while begin's commit is between installing the new generation and giving it
    its state, another thread starts an operation (its prepare phase takes no lock)."""
    from tool_call_closure.machine.interpreter import Machine
    from tool_call_closure.machine.table import TABLE

    closure = ToolCallClosure()
    handle = closure.begin([{"id": "a", "name": "t"}]).handle
    original = Machine._move
    answers: list[Any] = []
    probes: list[threading.Thread] = []

    def probe() -> None:
        try:
            answers.append(closure.cancel(handle, "a"))
        except Exception as exc:  # noqa: BLE001 - the answer is checked below
            answers.append(exc)

    def move(ctx: Any, compiled: Any) -> None:
        if ctx.method == "begin" and not probes:
            probes.append(threading.Thread(target=probe))
            probes[0].start()
            probes[0].join(timeout=0.5)  # it either fails at once or waits for the lock (held here)
        original(ctx, compiled)

    monkeypatch.setattr(Machine, "_move", staticmethod(move))
    closure._use_machine(Machine(TABLE, walk=True))  # the probe is in the walk
    closure.begin([{"id": "b", "name": "t"}])
    probes[0].join(timeout=10)
    assert not probes[0].is_alive()
    assert len(answers) == 1
    assert type(answers[0]) is Rejection, answers[0]
    assert answers[0].reason == "stale_generation"
