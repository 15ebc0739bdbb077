"""The fuzzer's explorer: model-guided scenarios in lockstep on the reference and a subject.

Theory of operation
-------------------
A *scenario* is a list of top-level protocol requests that starts with ``new``.
:class:`Explorer` builds one request at a time and sends it to the reference
(in process) and to the subject; the first pair of answers that differ
(:func:`.compare.difference`) is a divergence (:class:`.fuzz_shrink.Divergence`).
Before drawing each request the explorer knows what the reference knows: the
current generation, its pending and settled call ids, which earlier results
are open or closed snapshots, and the limits the scenario's ``new`` set.  So
most requests are valid and aimed at live targets (the current handle, a
pending call id, a closed snapshot), and a tunable share (``invalid``) is
deliberately wrong: stale, look-alike and malformed handles, unknown ids, bad
outcomes and reasons.

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

Every field to which the original gives a default when it is ``null`` or
absent (``x ?? d``, ``x == null ? d : …``) — ``new``'s seven limits, a close
reason's status, code, side-effect state and message, an outcome's status,
code and message, ``fail``'s code, ``cancel``'s message and code — is now and
then drawn as one of the values JavaScript's ``||`` treats as absent and
``??`` does not (:data:`FALSY`: ``""``, ``false``, ``0``, ``-0``, ``NaN``),
valid there or not, so a port that writes ``x || d`` (or Python's
``x or d``) for ``x ?? d`` differs.  Success content is drawn falsy too.

The explorer never draws the inputs of the protocol-visible deviations (D1–D3,
D7, D9–D11, D20; :func:`.fuzz_shrink.deviation_inputs` recognises them), whose
answers differ from the original by design, and draws the Gemini and Bedrock
exports (D8) only when the subject has them.

Coverage steers the draw (:mod:`.fuzz_coverage`): each *intent* (a kind of
request the explorer can make) is weighted by how much new coverage it found
recently.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from tool_call_closure.conformance.compare import difference
from tool_call_closure.conformance.fuzz_coverage import ALL_EXPORTS, EXPORTS, coverage_keys
from tool_call_closure.conformance.fuzz_shrink import Divergence
from tool_call_closure.conformance.subject import InProcessSubject, Subject, SubjectError

__all__ = ["FALSY", "INTENTS", "Explorer"]

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
LIMITS: Final = (
    ("maxCalls", (1, 2, 3, 4)),
    ("maxDiagnostics", (1, 2, 3)),
    ("maxResultBytes", (2, 3, 4, 5, 6, 8, 12)),
    ("maxMessageBytes", (1, 2, 3, 4, 5, 8, 12, 47)),
    ("maxIdBytes", (1, 2, 3, 4)),
    ("maxNameBytes", (1, 2, 3, 6)),
    ("maxCodeBytes", (1, 2, 3, 4, 9)),
)
"""``new``'s options, with the values drawn for them (small: texts are sized near them)."""
FALSY: Final = ("", False, 0, -0.0, {"$nan": True})
"""Values JavaScript's ``||`` treats as absent and ``??`` does not: drawn where the original takes a default for
``null`` and ``undefined`` only."""


class _DivergenceError(Exception):
    """The subject diverged (or broke) on the request just sent."""

    def __init__(self, divergence: Divergence) -> None:
        super().__init__(divergence.text)
        self.divergence = divergence


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
    draw (by default the three every subject has; :func:`.fuzz.fuzz` passes what :func:`.fuzz.probe_exports`
    found).
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
        self.divergence: Divergence | None = None  # the last scenario's, if it diverged
        self._reset()

    def _reset(self) -> None:
        self._trace: list[str] = []
        self.reference = InProcessSubject(trace=self._trace)
        self.known = _Known()
        self.sent = []
        self._next_id = 1

    # ------------------------------------------------------------------ driving

    def run(self, seed: int) -> str | None:
        """Build and run one scenario; return how it diverged (``divergence`` has the details), or None."""
        self.rng = random.Random(seed)
        self._reset()
        self.divergence = None
        try:
            self._send(self._new(), "new")
            for _ in range(self.rng.randint(1, self.steps)):
                intent = self._choose_intent()
                self._send(INTENTS[intent](self), intent)
        except _DivergenceError as diverged:
            self.divergence = diverged.divergence
            return diverged.divergence.text
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
            raise _DivergenceError(Divergence.at(len(self.sent), request, None, str(exc))) from None
        found = difference(expected, actual)
        if found is not None:
            raise _DivergenceError(Divergence.at(len(self.sent), request, found))

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

    def _or_falsy(self, value: Any, share: float = 0.1) -> Any:
        """``value``, or (with probability ``share``) one of :data:`FALSY`: for a field the original defaults
        only when it is null or absent."""
        return self.rng.choice(FALSY) if self.rng.random() < share else value

    def _new(self) -> dict[str, Any]:
        request: dict[str, Any] = {"id": self._id(), "cmd": "new"}
        rng = self.rng
        if self._bad() and rng.random() < 0.3:
            if rng.random() < 0.4:
                request["options"] = rng.choice([None, 5, "", False, 0, []])
            else:  # one limit that is not a positive safe integer: falsy (its default only for null), or not
                request["options"] = {rng.choice(LIMITS)[0]: rng.choice([*FALSY, 1.5, "2", True, -1])}
            return request
        options: dict[str, Any] = {}
        for key, values in LIMITS:
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
        return self._or_falsy(self._json(), 0.05)

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
            return rng.choice([None, 5, "x", {"generation": 1}, *FALSY])
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
            return rng.choice([None, 5, " ", "zz", self._text("maxIdBytes"), *FALSY])
        return rng.choice(list(self.known.calls) or list(CALL_IDS))

    def _code(self) -> Any:
        rng = self.rng
        choice = rng.randrange(6)
        if choice <= 2:
            return ABSENT
        if choice == 3:
            return rng.choice([None, " ", 5, *FALSY]) if self._bad() else None
        return rng.choice([*CODES, self._text("maxCodeBytes")])

    def _message(self) -> Any:
        rng = self.rng
        choice = rng.randrange(7)
        if choice == 0:
            return ABSENT
        if choice == 1:
            return None
        if choice == 2:
            return rng.choice(NUMBERS)
        if choice == 3:
            return rng.choice(FALSY)  # stored as its text ("", "false", "0", "NaN"), never the default
        return self._text("maxMessageBytes")

    def _outcome(self) -> Any:
        rng = self.rng
        if self._bad():
            bad: list[Any] = [None, 5, [], {"status": "bogus"}, {"status": None}, {}, {"status": "SUCCESS"}]
            return rng.choice([*bad, {"status": rng.choice(FALSY)}])
        status = rng.choice(["success", "success", "error", "cancelled"])
        outcome: dict[str, Any] = {"status": status}
        if status == "success":
            outcome["content"] = self._content()
        else:
            for key, value in (("code", self._code()), ("message", self._message())):
                if value is not ABSENT:
                    outcome[key] = value
        return outcome

    def _observed_outcome(self) -> Any:
        """The outcome of a settle rejected as stale: only its status is read (the rejection's observedStatus:
        the status if valid, null if null or absent, else "invalid"), so it is often just a status, falsy too."""
        rng = self.rng
        if rng.random() < 0.5:
            return self._outcome()
        return {"status": rng.choice(["success", "error", "cancelled", "bogus", None, *FALSY])}

    def _reason(self) -> Any:
        rng = self.rng
        if self._bad():
            return rng.choice([{"status": "success"}, {"sideEffectState": "started"}, {"code": ""}, {"code": 5}])
        reason: dict[str, Any] = {}
        if rng.random() < 0.7:
            reason["status"] = self._or_falsy(rng.choice(["error", "cancelled"]))
        code = self._code()
        if code is not ABSENT and rng.random() < 0.5:
            reason["code"] = code
        if rng.random() < 0.4:
            reason["sideEffectState"] = self._or_falsy(rng.choice(["unknown", "not_started", None]), 0.2)
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
        stale = handle != {"$handle": x.known.generations[-1]}
        return x._call("settle", handle, call_id, x._observed_outcome() if stale else x._outcome())
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
