"""The differential fuzzer: model-guided scenarios in lockstep on the reference and a subject.

Theory of operation
-------------------
A *scenario* is a list of top-level protocol requests that starts with ``new``.
:class:`Explorer` builds one request at a time and sends it to the reference
(in process) and to the subject; the first pair of answers that differ
(:mod:`.compare`) is a divergence.  Before drawing each request the explorer
knows what the reference knows: the current generation, its pending and
settled call ids, which earlier results are open or closed snapshots, and the
limits the scenario's ``new`` set.  So most requests are valid and aimed at live
targets (the current handle, a pending call id, a closed snapshot), and a
tunable share (``invalid``) is deliberately wrong: stale, look-alike and
malformed handles, unknown ids, bad outcomes and reasons.

Caller code runs where the protocol's hooks put it (``spec/protocol.md``,
Hooks), and the explorer puts it on purpose in every position that runs it,
with the nested request that makes the interleaving interesting: a nested
settle of the same call inside content or an outcome, a nested close with a
*different* reason inside a close reason, a nested begin inside a call entry,
content, a reason, a snapshot used as content, a hook that throws.  Content
and texts mix multi-byte and astral characters, lone surrogates, numbers that
ECMAScript formats differently and integer-like keys; limits sit near the
values drawn for them (a text of exactly the limit's bytes, one more, one that
fits in UTF-16 units but not in UTF-8 bytes).

Coverage steers the draw.  After every request the explorer records what
happened as coverage keys — table rows fired × the run state before the
request, call events, rejection reasons, error codes and kinds, export
formats × (empty, synthetic, reported, error flags), hook positions — and
each *intent* (a kind of request the explorer can make) is weighted by how
much new coverage it found recently.  The coverage is printed at the end of a
run.

A divergence is shrunk by replaying: requests are dropped one at a time (a
later ``new`` resets everything, so one subject process serves every replay),
then the options of each ``new``, keeping every change after which the
subject still diverges.  The result is 1-minimal in requests and options; it
is printed and written out as a vector (origin ``fuzz``).

Exports.  Every subject has the original's three exports; the reference's
two more (``toGeminiFunctionResponses``, ``toBedrockToolResults``, deviation
D8) are drawn only when the subject has them.  Once per session, after
``hello``, :func:`probe_exports` makes an instance (``new``) and calls each
of the two with no arguments: an implementation without the method answers
``ProtocolError`` (``spec/protocol.md``), and the method is then never
drawn; any other answer — ``ok``, or an error of another kind — means the
subject has it, and it is drawn like the other three (and its answers
compared with the reference's).  The probe's answers are not compared: the
scenarios begin with their own ``new``, so it leaves nothing behind, and a
subject without the two gets, for a seed, the scenarios it would get if they
did not exist.

``seconds`` is a budget, not a cap: the run ends when it is spent (or after
``max_examples`` scenarios, or at the first divergence).  Every scenario has
its own seed, derived from the run's seed, the job and the scenario number,
so scenarios differ across batches and a run is reproducible with ``seed``.
``jobs`` > 1 shards the run across processes (one subject each).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import multiprocessing
import os
import random
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from tool_call_closure.conformance.compare import diff_responses, error_code
from tool_call_closure.conformance.conform import HELLO, SubjectSpec
from tool_call_closure.conformance.subject import InProcessSubject, Subject, SubjectError
from tool_call_closure.conformance.vectors import VECTOR_FORMAT, generate, render

__all__ = [
    "Explorer",
    "FuzzResult",
    "coverage_keys",
    "coverage_summary",
    "fuzz",
    "hook_positions",
    "probe_exports",
    "shrink",
    "write_vector",
]

CALL_IDS: Final = ("a", "b", "c", "d", "é", "😀")
NAMES: Final = ("t", "u", "lookup")
# Texts that differ between UTF-8 bytes, UTF-16 units and code points, or that JSON and ECMAScript treat specially.
TEXTS: Final = (
    "x",
    "ok",
    "é",
    "€uro",
    "😀",
    "a😀b",
    "\ud800",
    "x\udfff",
    "\u2028",
    "\u00a0",
    "\ufeff",
    " ",
    "\x00",
    '"q"',
    "\\",
    "0",
    "tampered",
)
NUMBERS: Final = (0, 1, -1, 0.1, 1.5, -0.5, 1e-7, 1.5e-7, 1e-6, 1e20, 1e21, 2**53, 123e-20, 5e-324, 3.14159)
KEYS: Final = ("a", "status", "0", "1", "10", "01", "-1", "4294967294", "4294967295", "é", "")
CODES: Final = ("E", "timeout", "tool_error", "éé", "😀")
EXPORTS: Final = ("toOpenAIChatCompletions", "toOpenAIResponses", "toAnthropicToolResults")
"""The exports every subject has (the original's): always drawn."""
PROBED_EXPORTS: Final = ("toGeminiFunctionResponses", "toBedrockToolResults")
"""The reference's two more exports (deviation D8): drawn only when the subject has them (:func:`probe_exports`)."""
ALL_EXPORTS: Final = EXPORTS + PROBED_EXPORTS


@dataclass(slots=True)
class FuzzResult:
    examples: int = 0  # scenarios run
    requests: int = 0
    seconds: float = 0.0
    divergence: str | None = None
    scenario: list[dict[str, Any]] = field(default_factory=list)
    vector_path: Path | None = None
    coverage: Counter[str] = field(default_factory=Counter)
    seed: int | None = None
    found_after: float | None = None  # seconds into the run when the divergence was first seen
    exports: tuple[str, ...] = ()  # the export methods drawn (what probe_exports found)
    vector_error: str | None = None  # why the divergence's vector could not be written (the divergence stands)

    @property
    def examples_per_second(self) -> float:
        return self.examples / self.seconds if self.seconds > 0 else 0.0


# --------------------------------------------------------------------------- coverage


def _events(value: Any, found: set[str]) -> None:
    if isinstance(value, list):
        for item in value:
            _events(item, found)
    elif isinstance(value, dict):
        if value.get("provenance") in ("synthetic", "reported") and isinstance(value.get("status"), str):
            found.add(f"event:{value['provenance']}_{value['status']}")
        for item in value.values():
            _events(item, found)


def coverage_keys(
    request: dict[str, Any], responses: Sequence[dict[str, Any]], rows: Sequence[str], run_state: str
) -> set[str]:
    """What one request exercised on the reference, as coverage keys."""
    keys = {f"row:{row}@{run_state}" for row in rows}
    for response in responses:
        ok, error = response.get("ok"), response.get("error")
        if isinstance(error, dict):
            kind, message = str(error.get("kind")), str(error.get("message"))
            keys.add(f"kind:{kind}")
            code = error_code(kind, message)
            if code is not None:
                keys.add(f"error:{code}")
        if isinstance(ok, dict) and ok.get("accepted") is False:
            keys.add(f"reason:{ok.get('reason')}")
        if isinstance(ok, dict) and ok.get("accepted") is True:
            keys.add(f"accepted:{ok.get('settlement', {}).get('status')}")
        _events(ok, keys)
        if "nested" in response:
            keys.add(f"nested:{response['nested']}")
    method = request.get("method")
    keys |= {f"hook:{position}" for position in hook_positions(request)}
    own = responses[-1] if responses else {}
    if method in ALL_EXPORTS and isinstance(own.get("ok"), list):
        entries = own["ok"]
        keys.add(f"export:{method}:{'empty' if not entries else 'entries'}")
        for entry in entries:
            text = json.dumps(entry)
            keys.add(f"export:{method}:{'synthetic' if 'side_effect_state' in text else 'reported'}")
            flag = _error_flag(method, entry)
            if flag is not None:
                keys.add(f"export:{method}:{flag}")
    return keys


def _error_flag(method: str, entry: Any) -> str | None:
    """How an export entry marks an error outcome, when its format has a mark and the entry carries it."""
    if not isinstance(entry, dict):
        return None
    if method == "toAnthropicToolResults":
        return "is_error" if entry.get("is_error") is True else None
    if method == "toBedrockToolResults":
        result = entry.get("toolResult")
        return "status_error" if isinstance(result, dict) and result.get("status") == "error" else None
    if method == "toGeminiFunctionResponses":
        function_response = entry.get("function_response")
        response = function_response.get("response") if isinstance(function_response, dict) else None
        return "response_error" if isinstance(response, dict) and "error" in response else None
    return None


def hook_positions(request: dict[str, Any]) -> set[str]:
    """Where a request puts caller code: ``method.argN`` plus the keys down to each ``$hook`` (``settle.arg2.message``),
    nested requests included (their positions are prefixed by the hook's)."""
    found: set[str] = set()
    pending: list[tuple[str, Any]] = [
        (f"{request.get('method')}.arg{index}", arg) for index, arg in enumerate(request.get("args") or [])
    ]
    while pending:
        where, value = pending.pop()
        if isinstance(value, dict) and set(value) == {"$hook"} and isinstance(value["$hook"], dict):
            found.add(where)
            for nested in value["$hook"].get("calls") or []:
                if isinstance(nested, dict):
                    inner = [
                        (f"{where}>{nested.get('method')}.arg{i}", a) for i, a in enumerate(nested.get("args") or [])
                    ]
                    pending.extend(inner)
            pending.append((where + ".then", value["$hook"].get("then")))
        elif isinstance(value, dict) and not (len(value) == 1 and next(iter(value)).startswith("$")):
            pending.extend((f"{where}.{key}", item) for key, item in value.items())
        elif isinstance(value, list):
            pending.extend((f"{where}[]", item) for item in value)
    return found


# --------------------------------------------------------------------------- the explorer


class _DivergenceError(Exception):
    """The subject diverged (or broke) on the request just sent."""


@dataclass(slots=True)
class _Known:
    """What the reference's answers so far say about the scenario's instance."""

    limits: dict[str, int] = field(default_factory=dict)
    generations: list[int] = field(default_factory=list)
    calls: dict[str, str] = field(default_factory=dict)  # call id -> state, in the current generation
    closed: bool = False
    results: dict[Any, Any] = field(default_factory=dict)  # request id -> value ($snapshot)
    closed_snapshots: list[Any] = field(default_factory=list)
    open_snapshots: list[Any] = field(default_factory=list)

    @property
    def run_state(self) -> str:
        return "none" if not self.generations else "closed" if self.closed else "open"


class Explorer:
    """Builds and runs one scenario at a time on the reference and a subject.

    ``invalid`` is the share of requests that are deliberately wrong; ``tamper`` draws ``tamper`` requests
    (both sides declared the capability); ``hooks`` draws caller code; ``exports`` are the export methods to
    draw (by default the three every subject has; :func:`fuzz` passes what :func:`probe_exports` found).
    """

    def __init__(
        self,
        subject: Subject | None,
        *,
        invalid: float = 0.15,
        hooks: bool = True,
        tamper: bool = False,
        steps: int = 20,
        coverage: Counter[str] | None = None,
        exports: Sequence[str] = EXPORTS,
    ) -> None:
        unknown = [method for method in exports if method not in ALL_EXPORTS]
        if unknown or not exports:
            raise ValueError(f"exports must be a non-empty selection of {ALL_EXPORTS}, got {tuple(exports)}")
        self.subject = subject
        self.exports: tuple[str, ...] = tuple(exports)
        self.invalid = invalid
        self.hooks = hooks
        self.tamper = tamper
        self.steps = steps
        self.coverage: Counter[str] = coverage if coverage is not None else Counter()
        self.requests = 0
        # How much new coverage each intent found lately (an exponential moving average): the steering.
        self._novelty: dict[str, float] = {}
        self.rng = random.Random(0)
        self.sent: list[dict[str, Any]] = []
        self.problem: str | None = None
        self._reset()

    def _reset(self) -> None:
        self._trace: list[str] = []
        self.reference = InProcessSubject(trace=self._trace)
        self.known = _Known()
        self.sent = []
        self._next_id = 1

    # ------------------------------------------------------------------ driving

    def run(self, seed: int) -> str | None:
        """Build and run one scenario; return the divergence, or None."""
        self.rng = random.Random(seed)
        self._reset()
        self.problem = None
        try:
            self._send(self._new(), "new")
            for _ in range(self.rng.randint(1, self.steps)):
                intent = self._choose_intent()
                self._send(INTENTS[intent](self), intent)
        except _DivergenceError:
            return self.problem
        return None

    def _choose_intent(self) -> str:
        names = [name for name in INTENTS if self._applicable(name)]
        weights = [BASE_WEIGHTS.get(name, 1.0) * (1.0 + 4.0 * self._novelty.get(name, 1.0)) for name in names]
        return self.rng.choices(names, weights)[0]

    def _applicable(self, intent: str) -> bool:
        known = self.known
        if intent.startswith("hook") and not self.hooks:
            return False
        if intent == "tamper":
            return self.tamper and bool(known.results)
        if intent in ("settle pending", "nested settle same call", "hook in outcome", "snapshot as content"):
            return known.run_state == "open" and any(s == "pending" for s in known.calls.values())
        if intent in ("close", "nested close other reason", "seal"):
            return bool(known.generations)
        if intent == "export closed":
            return bool(known.closed_snapshots)
        return True

    def _send(self, request: dict[str, Any], intent: str) -> None:
        run_state = self.known.run_state
        del self._trace[:]
        expected = self.reference.send(request)
        self.sent.append(request)
        self.requests += 1
        keys = coverage_keys(request, expected, self._trace, run_state) | {f"intent:{intent}"}
        new = sum(1 for key in keys if key not in self.coverage)
        self.coverage.update(keys)
        self._novelty[intent] = 0.8 * self._novelty.get(intent, 1.0) + 0.2 * min(new, 5) / 5
        self._learn(request, expected)
        if self.subject is None:
            return
        try:
            actual = self.subject.send(request)
        except SubjectError as exc:
            self.problem = f"step {len(self.sent)}: the subject broke: {exc}"
            raise _DivergenceError from None
        problem = diff_responses(expected, actual)
        if problem is not None:
            self.problem = f"step {len(self.sent)}: {problem}"
            raise _DivergenceError

    def _learn(self, request: dict[str, Any], responses: Sequence[dict[str, Any]]) -> None:
        known = self.known
        if request.get("cmd") == "new":
            self.known = _Known(limits=dict(request.get("options") or {}) if "error" not in responses[-1] else {})
            return
        for response in responses:
            if "ok" not in response:
                known.results.pop(response.get("id"), None)
                continue
            value = response["ok"]
            if request.get("cmd") != "call":
                continue
            rid = response.get("id")
            if isinstance(value, dict) and "handle" in value and "superseded" in value:
                known.generations.append(value["generation"])
                known.calls = {}
                known.closed = False
                known.results[rid] = value["superseded"]
                continue
            known.results[rid] = value
            if isinstance(value, dict) and "calls" in value and "closed" in value:
                (known.closed_snapshots if value["closed"] else known.open_snapshots).append(rid)
        # The current generation's calls, as the reference sees them now (a snapshot never changes anything).
        state = self.reference.send({"id": "__state", "cmd": "call", "method": "snapshot"})[-1].get("ok")
        self.reference.send({"id": "__state", "cmd": "call", "method": "activeGeneration"})  # drops the record
        if isinstance(state, dict):
            known.calls = {c["id"]: c["state"] for c in state["calls"]}
            known.closed = bool(state["closed"])

    def _id(self) -> int:
        self._next_id += 1
        return self._next_id - 1

    def _call(self, method: str, *args: Any) -> dict[str, Any]:
        return {"id": self._id(), "cmd": "call", "method": method, "args": list(args)}

    # ------------------------------------------------------------------ values

    def _bad(self) -> bool:
        return self.rng.random() < self.invalid

    def _new(self) -> dict[str, Any]:
        request: dict[str, Any] = {"id": self._id(), "cmd": "new"}
        rng = self.rng
        if self._bad() and rng.random() < 0.3:
            request["options"] = rng.choice(
                [None, 5, {"maxCalls": 0}, {"maxIdBytes": 1.5}, {"maxCodeBytes": "2"}, {"maxDiagnostics": True}]
            )
            return request
        options: dict[str, Any] = {}
        for key, values in (
            ("maxCalls", (1, 2, 3, 4)),
            ("maxDiagnostics", (1, 2, 3)),
            ("maxResultBytes", (2, 3, 4, 5, 6, 8, 12)),
            ("maxMessageBytes", (1, 2, 3, 4, 5, 8, 12, 47)),
            ("maxIdBytes", (1, 2, 3, 4)),
            ("maxNameBytes", (1, 2, 3, 6)),
            ("maxCodeBytes", (1, 2, 3, 4, 9)),
        ):
            if rng.random() < 0.3:
                options[key] = rng.choice(values)
        if rng.random() < 0.05:
            options[rng.choice(["maxCalls", "maxResultBytes"])] = None  # null takes the default
        request["options"] = options
        return request

    def _text(self, limit_key: str | None = None) -> str:
        """A text, often sized near a byte limit of the scenario (exactly, one over, fits in UTF-16 only)."""
        rng = self.rng
        limit = self.known.limits.get(limit_key) if limit_key else None
        if isinstance(limit, int) and not isinstance(limit, bool) and limit < 64 and rng.random() < 0.6:
            shape = rng.randrange(4)
            if shape == 0:
                return "x" * limit
            if shape == 1:
                return "x" * (limit + 1)
            if shape == 2:  # 2 bytes a character: at most limit UTF-16 units, more than limit bytes
                return "é" * max(1, (limit + 2) // 2)
            return "😀" * max(1, (limit + 3) // 4)  # astral: 4 bytes, 2 UTF-16 units
        pieces = rng.choices(TEXTS, k=rng.randint(1, 3))
        return "".join(pieces)

    def _json(self, size: int = 2) -> Any:
        rng = self.rng
        kind = rng.randrange(9 if size > 0 else 5)
        if kind == 0:
            return None if rng.random() < 0.5 else rng.random() < 0.5
        if kind == 1:
            return rng.choice(NUMBERS)
        if kind == 2:
            return rng.choice([{"$nan": True}, {"$inf": 1}, {"$inf": -1}, -0.0])
        if kind <= 4:
            return self._text("maxResultBytes")
        if kind <= 6:
            return [self._json(size - 1) for _ in range(rng.randint(0, 3))]
        keys = rng.sample(KEYS, rng.randint(0, 4))
        return {key: self._json(size - 1) for key in keys}

    def _content(self) -> Any:
        rng = self.rng
        if rng.random() < 0.15 and self.known.results:
            return {"$snapshot": rng.choice(list(self.known.results))}  # a snapshot (or any result) as content
        return self._json()

    def _handle(self) -> Any:
        rng = self.rng
        generations = self.known.generations
        if generations and not self._bad():
            return {"$handle": generations[-1]}
        choice = rng.randrange(4)
        if choice == 0 and generations:
            return {"$handle": rng.choice(generations)}
        if choice == 1:
            return {"$forgedHandle": rng.choice([*(generations or [1]), 0, -1, 1.5, "1", None])}
        if choice == 2:
            return rng.choice([None, 5, "x", {"generation": 1}])
        return {"$forgedHandle": generations[-1] if generations else 1}

    def _call_id(self) -> Any:
        rng = self.rng
        pending = [cid for cid, state in self.known.calls.items() if state == "pending"]
        settled = [cid for cid, state in self.known.calls.items() if state != "pending"]
        if pending and not self._bad():
            return rng.choice(pending)
        choice = rng.randrange(4)
        if choice == 0 and settled:
            return rng.choice(settled)
        if choice == 1:
            return rng.choice([None, 5, "", " ", "zz", self._text("maxIdBytes")])
        return rng.choice(list(self.known.calls) or list(CALL_IDS))

    def _code(self) -> Any:
        rng = self.rng
        choice = rng.randrange(6)
        if choice <= 2:
            return ABSENT
        if choice == 3:
            return rng.choice([None, "", " ", 5]) if self._bad() else None
        return rng.choice([*CODES, self._text("maxCodeBytes")])

    def _message(self) -> Any:
        rng = self.rng
        choice = rng.randrange(6)
        if choice == 0:
            return ABSENT
        if choice == 1:
            return None
        if choice == 2:
            return rng.choice(NUMBERS)
        return self._text("maxMessageBytes")

    def _outcome(self) -> Any:
        rng = self.rng
        if self._bad():
            return rng.choice([None, 5, [], {"status": "bogus"}, {"status": None}, {}, {"status": "SUCCESS"}])
        status = rng.choice(["success", "success", "error", "cancelled"])
        outcome: dict[str, Any] = {"status": status}
        if status == "success":
            outcome["content"] = self._content()
        else:
            for key, value in (("code", self._code()), ("message", self._message())):
                if value is not ABSENT:
                    outcome[key] = value
        return outcome

    def _reason(self) -> Any:
        rng = self.rng
        if self._bad():
            return rng.choice([{"status": "success"}, {"sideEffectState": "started"}, {"code": ""}, {"code": 5}])
        reason: dict[str, Any] = {}
        if rng.random() < 0.7:
            reason["status"] = rng.choice(["error", "cancelled"])
        code = self._code()
        if code is not ABSENT and rng.random() < 0.5:
            reason["code"] = code
        if rng.random() < 0.4:
            reason["sideEffectState"] = rng.choice(["unknown", "not_started", None])
        message = self._message()
        if message is not ABSENT and rng.random() < 0.6:
            reason["message"] = message
        return reason

    def _calls(self) -> Any:
        rng = self.rng
        if self._bad() and rng.random() < 0.3:
            return rng.choice([None, "ab", 5, {"0": {"id": "a", "name": "t"}}])
        limit = self.known.limits.get("maxCalls", 4)
        count = rng.randint(0, min(4, limit + 1) if isinstance(limit, int) else 3)
        entries: list[Any] = []
        for index in range(count):
            if self._bad() and rng.random() < 0.3:
                entries.append(rng.choice([None, 5, [], {"id": "a"}, {"name": "t"}]))
                continue
            call_id = CALL_IDS[index] if rng.random() < 0.8 else self._text("maxIdBytes")
            if self._bad() and rng.random() < 0.3 and entries:
                call_id = rng.choice(["a", " ", ""])  # a duplicate or blank id
            name = rng.choice(NAMES) if rng.random() < 0.8 else self._text("maxNameBytes")
            entries.append({"id": call_id, "name": name})
        return entries

    def _trim(self, *args: Any) -> list[Any]:
        items = list(args)
        while items and items[-1] is ABSENT:
            items.pop()
        return [{"$undefined": True} if a is ABSENT else a for a in items]

    def _hook(self, calls: list[dict[str, Any]], then: Any, *, throw: bool = False) -> dict[str, Any]:
        spec: dict[str, Any] = {"calls": calls}
        if then is not ABSENT:
            spec["then"] = then
        if throw:
            spec["throw"] = self._text()
        return {"$hook": spec}

    def _nested(self) -> dict[str, Any]:
        """A nested request that changes the state a caller-code position can observe."""
        rng = self.rng
        pending = [cid for cid, s in self.known.calls.items() if s == "pending"] or ["a"]
        handle = {"$handle": self.known.generations[-1]} if self.known.generations else {"$forgedHandle": 1}
        choice = rng.randrange(5)
        if choice == 0:
            content: Any = "first"
            if rng.random() < 0.25:  # caller code inside caller code: a hook in a nested request (depth 2)
                content = self._hook([self._call("snapshot")], "first")
            return self._call("succeed", handle, rng.choice(pending), content)
        if choice == 1:
            return self._call("close", handle, {"status": "error", "code": "nested", "message": "nested close"})
        if choice == 2:
            return self._call("begin", [{"id": "n", "name": "t"}])
        if choice == 3:
            return self._call("cancel", handle, rng.choice(pending), "nested cancel", "nested")
        return self._call("seal", handle)


ABSENT: Final = object()


def _settle_pending(x: Explorer) -> dict[str, Any]:
    method = x.rng.choice(["settle", "succeed", "succeed", "fail", "cancel"])
    handle, call_id = x._handle(), x._call_id()
    if method == "settle":
        return x._call("settle", handle, call_id, x._outcome())
    if method == "succeed":
        return x._call("succeed", *x._trim(handle, call_id, x._content() if x.rng.random() < 0.95 else ABSENT))
    if method == "fail":
        error = x.rng.choice([{"$error": x._text("maxMessageBytes")}, x._text("maxMessageBytes"), 5, ["a", "b"]])
        return x._call("fail", *x._trim(handle, call_id, error, x._code()))
    return x._call("cancel", *x._trim(handle, call_id, x._message(), x._code()))


def _nested_settle_same_call(x: Explorer) -> dict[str, Any]:
    """A settle whose content (or outcome) runs a nested settlement of the same call first."""
    handle = x._handle()
    pending = [cid for cid, s in x.known.calls.items() if s == "pending"]
    call_id = x.rng.choice(pending)
    nested_method = x.rng.choice(["succeed", "fail", "cancel"])
    nested = x._call(nested_method, {"$handle": x.known.generations[-1]}, call_id, "first")
    if x.rng.random() < 0.5:
        return x._call("succeed", handle, call_id, x._hook([nested], "late"))
    return x._call("settle", handle, call_id, x._hook([nested], {"status": "error", "message": "late"}))


def _hook_in_outcome(x: Explorer) -> dict[str, Any]:
    """Caller code at a position inside a settlement: content, outcome, message, code."""
    handle, call_id = x._handle(), x._call_id()
    hook = x._hook([x._nested() for _ in range(x.rng.randint(0, 2))], ABSENT, throw=x.rng.random() < 0.15)
    where = x.rng.randrange(5)
    if where == 0:
        hook["$hook"]["then"] = x._json()
        return x._call("succeed", handle, call_id, hook)
    if where == 1:
        hook["$hook"]["then"] = x._outcome()
        return x._call("settle", handle, call_id, hook)
    if where == 2:
        hook["$hook"]["then"] = x._text("maxMessageBytes")
        return x._call("settle", handle, call_id, {"status": "error", "message": hook})
    if where == 3:
        hook["$hook"]["then"] = x.rng.choice(CODES)
        return x._call("cancel", handle, call_id, "m", hook)
    # Not as fail's error itself: when the original converts that error differs by design (deviation D3).
    hook["$hook"]["then"] = x._text("maxMessageBytes")
    return x._call("settle", handle, call_id, {"status": "cancelled", "code": hook})


def _hook_elsewhere(x: Explorer) -> dict[str, Any]:
    """Caller code in the remaining positions that run it: a look-alike handle, a close reason's code and
    sideEffectState, an outcome's content, new's options."""
    rng = x.rng
    generation = x.known.generations[-1] if x.known.generations else 1
    hook = x._hook([x._nested() for _ in range(rng.randint(0, 2))], ABSENT, throw=rng.random() < 0.1)
    where = rng.randrange(5)
    if where == 0:
        hook["$hook"]["then"] = {"generation": generation}
        method = rng.choice(["settle", "succeed", "close", "seal", "cancel"])
        if method == "settle":
            return x._call(method, hook, x._call_id(), x._outcome())
        if method in ("succeed", "cancel"):
            return x._call(method, hook, x._call_id())
        return x._call(method, hook)
    if where == 1:
        hook["$hook"]["then"] = rng.choice([*CODES, None])
        return x._call("close", x._handle(), {"status": "error", "code": hook})
    if where == 2:
        hook["$hook"]["then"] = rng.choice(["unknown", "not_started", None])
        return x._call("close", x._handle(), {"status": "cancelled", "sideEffectState": hook})
    if where == 3:
        hook["$hook"]["then"] = x._json()
        return x._call("settle", x._handle(), x._call_id(), {"status": "success", "content": hook})
    hook["$hook"]["then"] = rng.choice([1, 2, 3, None])
    return {"id": x._id(), "cmd": "new", "options": {rng.choice(["maxCalls", "maxResultBytes", "maxIdBytes"]): hook}}


def _begin(x: Explorer) -> dict[str, Any]:
    return x._call("begin", x._calls())


def _hook_in_begin(x: Explorer) -> dict[str, Any]:
    """A call entry whose first read runs a nested begin (or close): begin must recheck its generation."""
    entries = x._calls()
    if not isinstance(entries, list):
        entries = []
    nested = x._call("begin", [{"id": "n", "name": "t"}]) if x.rng.random() < 0.7 else x._nested()
    entries.insert(x.rng.randint(0, len(entries)), x._hook([nested], {"id": "h", "name": "t"}))
    return x._call("begin", entries)


def _close(x: Explorer) -> dict[str, Any]:
    if x.rng.random() < 0.2:
        return x._call("close", x._handle())
    return x._call("close", x._handle(), x._reason())


def _nested_close_other_reason(x: Explorer) -> dict[str, Any]:
    """A close whose reason (or its message) runs a nested close with a different reason first."""
    handle = {"$handle": x.known.generations[-1]}
    nested_reason = {"status": "error", "code": "inner", "message": "inner", "sideEffectState": "not_started"}
    nested = x._call("close", handle, nested_reason)
    if x.rng.random() < 0.3:
        nested = x._nested()
    outer = {"status": "cancelled", "code": "outer", "message": "outer"}
    if x.rng.random() < 0.5:
        return x._call("close", x._handle(), x._hook([nested], outer))
    return x._call("close", x._handle(), {**outer, "message": x._hook([nested], "outer")})


def _seal(x: Explorer) -> dict[str, Any]:
    if x.hooks and x.rng.random() < 0.1:
        then = {"generation": x.known.generations[-1]}
        return x._call("seal", x._hook([x._nested()], then))
    return x._call("seal", x._handle())


def _snapshot_as_content(x: Explorer) -> dict[str, Any]:
    pending = [cid for cid, s in x.known.calls.items() if s == "pending"]
    source = x.rng.choice(list(x.known.results)) if x.known.results else None
    content: Any = {"$snapshot": source} if source is not None else x._call("snapshot")["args"]
    return x._call("succeed", x._handle(), x.rng.choice(pending), content)


def _export_closed(x: Explorer) -> dict[str, Any]:
    snapshot = x.rng.choice(x.known.closed_snapshots)
    tag = {"$snapshot": snapshot} if x.rng.random() < 0.85 else {"$clone": snapshot}
    return x._call(x.rng.choice(x.exports), tag)


def _export(x: Explorer) -> dict[str, Any]:
    rng = x.rng
    method = rng.choice(x.exports)
    if x.known.open_snapshots and rng.random() < 0.3:
        return x._call(method, {"$snapshot": rng.choice(x.known.open_snapshots)})
    if rng.random() < 0.2:
        return x._call(method, rng.choice([5, "x", {"calls": []}]))
    return x._call(method)


def _observe(x: Explorer) -> dict[str, Any]:
    return x._call(x.rng.choice(["snapshot", "snapshot", "activeGeneration"]))


def _tamper(x: Explorer) -> dict[str, Any]:
    return {"id": x._id(), "cmd": "tamper", "target": x.rng.choice(list(x.known.results))}


def _renew(x: Explorer) -> dict[str, Any]:
    return x._new()


INTENTS: Final[dict[str, Callable[[Explorer], dict[str, Any]]]] = {
    "begin": _begin,
    "settle pending": _settle_pending,
    "close": _close,
    "seal": _seal,
    "export closed": _export_closed,
    "export": _export,
    "observe": _observe,
    "nested settle same call": _nested_settle_same_call,
    "hook in outcome": _hook_in_outcome,
    "hook in begin": _hook_in_begin,
    "hook elsewhere": _hook_elsewhere,
    "nested close other reason": _nested_close_other_reason,
    "snapshot as content": _snapshot_as_content,
    "tamper": _tamper,
    "new": _renew,
}
BASE_WEIGHTS: Final = {
    "begin": 2.0,
    "settle pending": 5.0,
    "close": 2.0,
    "seal": 1.5,
    "export closed": 3.0,
    "export": 0.5,
    "observe": 1.0,
    "nested settle same call": 1.0,
    "hook in outcome": 1.0,
    "hook in begin": 0.7,
    "hook elsewhere": 0.7,
    "nested close other reason": 1.0,
    "snapshot as content": 0.7,
    "tamper": 1.0,
    "new": 0.3,
}


# --------------------------------------------------------------------------- shrinking


def _diverges(requests: list[dict[str, Any]], subject: Subject) -> str | None:
    reference = InProcessSubject()
    for number, request in enumerate(requests, 1):
        expected = reference.send(request)
        try:
            actual = subject.send(request)
        except SubjectError as exc:
            return f"step {number}: the subject broke: {exc}"
        problem = diff_responses(expected, actual)
        if problem is not None:
            return f"step {number}: {problem}"
    return None


def shrink(
    requests: list[dict[str, Any]], still_fails: Callable[[list[dict[str, Any]]], str | None]
) -> tuple[list[dict[str, Any]], str]:
    """A 1-minimal sub-scenario that still diverges: no single request, and no single ``new`` option, can go.

    ``still_fails`` replays a candidate and returns its divergence or None.  Requests after the step that
    diverges are dropped first; the first request (a ``new``) stays.
    """
    problem = still_fails(requests)
    assert problem is not None, "shrink needs a diverging scenario"
    changed = True
    while changed:
        changed = False
        index = len(requests) - 1
        while index >= 1:
            candidate = requests[:index] + requests[index + 1 :]
            found = still_fails(candidate)
            if found is None:
                renumbered = _without_begin(requests, index)
                if renumbered is not None:
                    candidate, found = renumbered, still_fails(renumbered)
            if found is not None:
                requests, problem, changed = candidate, found, True
            index -= 1
        for index in range(len(requests)):
            for simpler in _simplifications(requests[index]):
                candidate = [*requests[:index], simpler, *requests[index + 1 :]]
                found = still_fails(candidate)
                if found is not None:
                    requests, problem, changed = candidate, found, True
                    break
        for index, request in enumerate(requests):
            options = request.get("options") if request.get("cmd") == "new" else None
            if not isinstance(options, dict):
                continue
            for key in list(options):
                fewer = {k: v for k, v in options.items() if k != key}
                candidate = [*requests[:index], {**request, "options": fewer}, *requests[index + 1 :]]
                found = still_fails(candidate)
                if found is not None:
                    requests, problem, changed, options = candidate, found, True, fewer
                    request = requests[index]
    return requests, problem


def _is_tag(value: Any, tag: str) -> bool:
    return isinstance(value, dict) and set(value) == {tag}


def _replacing(value: Any, choose: Callable[[Any], list[Any]]) -> list[Any]:
    """Every variant of ``value`` in which one part (at any depth, nested requests included) is replaced by one
    of the values ``choose`` offers for it."""
    variants = list(choose(value))
    if isinstance(value, list):
        for index, item in enumerate(value):
            variants += [[*value[:index], new, *value[index + 1 :]] for new in _replacing(item, choose)]
    elif isinstance(value, dict):
        for key, item in value.items():
            variants += [{**value, key: new} for new in _replacing(item, choose)]
    return variants


def _simpler_part(value: Any) -> list[Any]:
    """Simpler stand-ins for one part: a hook's then (no caller code), an array with one element fewer."""
    if _is_tag(value, "$hook") and isinstance(value["$hook"], dict):
        return [value["$hook"].get("then", {})]
    if isinstance(value, list) and value:
        return [value[:i] + value[i + 1 :] for i in range(len(value))]
    return []


def _earlier_handles(value: Any) -> Any:
    """``value`` with every ``$handle`` g > 1 replaced by g - 1 (after the begin that made generation 1 is gone)."""
    if _is_tag(value, "$handle") and type(value["$handle"]) is int and value["$handle"] > 1:
        return {"$handle": value["$handle"] - 1}
    if isinstance(value, list):
        return [_earlier_handles(item) for item in value]
    if isinstance(value, dict):
        return {key: _earlier_handles(item) for key, item in value.items()}
    return value


def _simplifications(request: dict[str, Any]) -> list[dict[str, Any]]:
    """Simpler variants of one request: one hook replaced by its ``then``, one array element fewer (a call
    list, or an argument of a request)."""
    args = request.get("args")
    if request.get("cmd") != "call" or not isinstance(args, list):
        return []
    variants = [{**request, "args": new} for new in _replacing(args, _simpler_part) if isinstance(new, list)]
    # _replacing offers the args list itself fewer elements too: dropping an argument makes it absent.
    return [variant for variant in variants if variant != request]


def _without_begin(requests: list[dict[str, Any]], index: int) -> list[dict[str, Any]] | None:
    """The scenario without the ``begin`` at ``index``, later handles renumbered to the generations left."""
    if requests[index].get("method") != "begin":
        return None
    return [*requests[:index], *(_earlier_handles(r) for r in requests[index + 1 :])]


# --------------------------------------------------------------------------- a run


def _capabilities(subject: Subject) -> list[str]:
    response = subject.send(HELLO)[-1]
    capabilities = response.get("capabilities", [])
    return [c for c in capabilities if isinstance(c, str)] if isinstance(capabilities, list) else []


def probe_exports(subject: Subject) -> tuple[str, ...]:
    """The export methods to draw for ``subject``: :data:`EXPORTS`, then each of :data:`PROBED_EXPORTS` it has.

    Asked once per session, after the handshake: a ``new`` (a call needs a current instance), then each
    method with no arguments.  A method answered with a ``ProtocolError`` (how an implementation without it
    answers, spec/protocol.md) is left out; any other answer — ``ok``, or an error of any other kind — means
    the subject has it.  If the ``new`` fails there is nothing to ask, and only :data:`EXPORTS` are drawn (the
    first scenario's own ``new`` then shows the failure).  A subject that breaks instead of answering (it
    must answer an unknown method and keep serving) raises :class:`SubjectError` saying so.
    """
    try:
        created = subject.send({"id": "probe:new", "cmd": "new"})[-1]
        if "ok" not in created:
            return EXPORTS
        present = [
            method
            for method in PROBED_EXPORTS
            if not _is_protocol_error(subject.send({"id": f"probe:{method}", "cmd": "call", "method": method})[-1])
        ]
    except SubjectError as exc:
        raise SubjectError(f"while probing for the exports: {exc}") from exc
    return (*EXPORTS, *present)


def _is_protocol_error(response: dict[str, Any]) -> bool:
    error = response.get("error")
    return isinstance(error, dict) and error.get("kind") == "ProtocolError"


class _Restarting(Subject):
    """A job's subject: a request that breaks it restarts it (with a handshake), so shrinking can go on."""

    def __init__(self, spec: SubjectSpec) -> None:
        self.spec = spec
        self.inner = spec.start()

    def send(self, request: dict[str, Any] | str) -> list[dict[str, Any]]:
        try:
            return self.inner.send(request)
        except SubjectError:
            self.inner.close()
            self.inner = self.spec.start()
            self.inner.send(HELLO)
            raise

    def stderr_text(self) -> str:
        return self.inner.stderr_text()

    def close(self) -> None:
        self.inner.close()


def _job(
    spec: SubjectSpec,
    *,
    job: int,
    seed: int,
    seconds: float | None,
    max_examples: int | None,
    steps: int,
    invalid: float,
    stop: Any = None,
) -> FuzzResult:
    """One shard of a run: scenarios until the budget is spent, a divergence, or ``stop`` is set."""
    result = FuzzResult(seed=seed)
    started = time.perf_counter()
    subject = _Restarting(spec)
    explorer: Explorer | None = None
    try:
        capabilities = _capabilities(subject)
        result.exports = probe_exports(subject)
        explorer = Explorer(
            subject,
            invalid=invalid,
            hooks="hook" in capabilities,
            tamper="tamper" in capabilities,
            steps=steps,
            coverage=result.coverage,
            exports=result.exports,
        )
        number = 0
        while max_examples is None or number < max_examples:
            if seconds is not None and time.perf_counter() - started > seconds:
                break
            if stop is not None and stop.is_set():
                break
            scenario_seed = int.from_bytes(hashlib.sha256(f"{seed}/{job}/{number}".encode()).digest()[:8], "big")
            number += 1
            problem = explorer.run(scenario_seed)
            result.examples = number
            if problem is None:
                continue
            result.found_after = time.perf_counter() - started
            if stop is not None:
                stop.set()
            result.scenario, result.divergence = list(explorer.sent), problem
            # If the subject cannot even be restarted, the scenario is kept as found.
            with contextlib.suppress(SubjectError):
                result.scenario, result.divergence = shrink(result.scenario, lambda r: _diverges(r, subject))
            break
    except SubjectError as exc:
        result.divergence = f"the subject broke: {exc}"
    finally:
        result.requests = explorer.requests if explorer is not None else 0
        subject.close()
        result.seconds = time.perf_counter() - started
    return result


_SHARED_STOP: list[Any] = []


def _init_shard(stop: Any) -> None:
    _SHARED_STOP[:] = [stop]


def _shard(arguments: tuple[SubjectSpec, dict[str, Any]]) -> FuzzResult:
    spec, kwargs = arguments
    return _job(spec, stop=_SHARED_STOP[0] if _SHARED_STOP else None, **kwargs)


def fuzz(
    spec: SubjectSpec,
    *,
    max_examples: int | None = None,
    seconds: float | None = None,
    seed: int | None = None,
    steps: int = 20,
    invalid: float = 0.15,
    jobs: int = 1,
    out_dir: Path | None = None,
) -> FuzzResult:
    """Fuzz the subject; return what ran, the coverage and, on a divergence, the shrunk scenario.

    Without ``seconds`` and ``max_examples`` a run tries 1,000 scenarios.  The explorer never draws the
    inputs of the protocol-visible deviations (D1–D3, D7), whose answers differ from the original by design,
    and draws the Gemini and Bedrock exports (D8) only when the subject has them (:func:`probe_exports`;
    ``FuzzResult.exports`` says which were drawn).
    """
    if seconds is None and max_examples is None:
        max_examples = 1000
    if seed is None:
        seed = int.from_bytes(os.urandom(4), "big")
    kwargs: dict[str, Any] = {
        "seed": seed,
        "seconds": seconds,
        "max_examples": None if max_examples is None else -(-max_examples // max(jobs, 1)),
        "steps": steps,
        "invalid": invalid,
    }
    started = time.perf_counter()
    if jobs <= 1:
        results = [_job(spec, job=0, **kwargs)]
    else:
        context = multiprocessing.get_context("spawn")
        stop = context.Event()
        with context.Pool(jobs, initializer=_init_shard, initargs=(stop,)) as pool:
            results = pool.map(_shard, [(spec, {**kwargs, "job": job}) for job in range(jobs)])
    # Every shard probed the same program; a shard whose subject broke before answering has none.
    merged = FuzzResult(seed=seed, exports=next((shard.exports for shard in results if shard.exports), ()))
    for shard in results:
        merged.examples += shard.examples
        merged.requests += shard.requests
        merged.coverage.update(shard.coverage)
        if shard.divergence is not None and merged.divergence is None:
            merged.divergence, merged.scenario, merged.found_after = shard.divergence, shard.scenario, shard.found_after
    merged.seconds = time.perf_counter() - started
    if merged.divergence is not None and merged.scenario and out_dir is not None:
        try:
            merged.vector_path = write_vector(merged.scenario, merged.divergence, out_dir)
        except OSError as exc:  # the run's finding is still reported, with the scenario itself
            merged.vector_error = f"{exc.filename or out_dir}: {exc.strerror or exc}"
    return merged


def coverage_summary(coverage: Counter[str]) -> str:
    """The coverage of a run, by dimension: how many keys were reached and how often the rarest ones."""
    by_dimension: dict[str, list[tuple[str, int]]] = {}
    for key, count in coverage.items():
        by_dimension.setdefault(key.split(":", 1)[0], []).append((key.split(":", 1)[1], count))
    lines = ["coverage (key: times reached):"]
    for dimension in sorted(by_dimension):
        items = sorted(by_dimension[dimension], key=lambda item: (item[1], item[0]))
        shown = ", ".join(f"{name} {count}" for name, count in items)
        lines.append(f"  {dimension} ({len(items)}): {shown}")
    return "\n".join(lines) + "\n"


def write_vector(scenario: list[dict[str, Any]], divergence: str, out_dir: Path) -> Path:
    """Write a shrunk scenario as a vector with the reference's expectations; return its path."""
    text = json.dumps(scenario, sort_keys=True)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
    vector_id = f"fuzz-{digest}"
    # A scenario that calls the reference's own exports pins deviation D8, as the shipped vectors that do:
    # a runner told to skip the deviations (the original's run) skips it instead of failing it.
    tags = ["area:fuzz"]
    if any(json.dumps(method) in text for method in PROBED_EXPORTS):  # at any depth: a hook's requests too
        tags.append("deviation:D8")
    data = {
        "format": VECTOR_FORMAT,
        "id": vector_id,
        "description": f"Shrunk from a fuzz divergence: {divergence}",
        "origin": "fuzz",
        "tags": tags,
        "steps": [{"request": request} for request in scenario],
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{vector_id}.json"
    path.write_text(render(generate(data)), encoding="utf-8")
    return path
