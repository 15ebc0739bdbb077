"""Random protocol v1 scenarios, built against the reference as they are drawn.

Theory of operation
-------------------
A scenario is a list of top-level protocol requests.  :class:`ScenarioBuilder`
draws them one at a time with Hypothesis and sends each to the reference as
soon as it is drawn, so later draws can use what the reference answered: the
generations that exist (for ``$handle``), the requests that returned a value
(for ``$snapshot`` and ``$clone``).  Replaying the finished scenario on another
subject and comparing its responses with the reference's is differential
testing; Hypothesis shrinks a divergence to a minimal scenario because the
reference is deterministic.

The draws cover the whole API: every method, current, stale and look-alike
handles, known, unknown and malformed call ids, valid and invalid outcomes
and reasons, tricky strings (JavaScript-only whitespace, lone surrogates,
astral characters, U+2028), numbers that need ECMAScript formatting,
integer-like keys, small limits, and hooks at every point where the
implementation reads caller values.

With ``deviations=False`` (the default) the builder never draws the inputs
whose answers differ by design from the JavaScript original (``spec/deviations.json``):
a null or non-object close reason (D1, D2), a null export snapshot (D1), a
``fail`` error that is absent, null or a hook (D3), a close reason with a
``side_effect_state`` key (D7), and a ``fail`` exception without text (D11).
It never draws the other deviations' inputs at all (a call entry with a
``call_id``, D9; an unknown outcome or reason key, D10; the Gemini and Bedrock
exports, D8).  With ``deviations=True``
it draws them too.

JavaScript callers write ``{status: undefined}``: now and then a member the
library reads (an option, a call entry's id or name, an outcome's or a close
reason's field) is drawn as ``{"$undefined":true}`` instead of left out
(capability ``undefined-properties``, spec/protocol.md), never inside a hook's
``then`` (where the protocol refuses it).

This module needs Hypothesis (a development dependency); the library itself
never imports it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar

from hypothesis import strategies as st

from tool_call_closure.conformance.subject import Subject

__all__ = ["ScenarioBuilder"]

T = TypeVar("T")
Draw = Callable[[st.SearchStrategy[Any]], Any]

CALL_IDS: Final = ("a", "b", "c", "d")
NAMES: Final = ("t", "u")
# Characters where JavaScript and Python disagree, or that need care in JSON and UTF-8.
TRICKY_CHARS: Final = (
    " ",
    "\t",
    "\n",
    "\u00a0",
    "\ufeff",
    "\u2028",
    "\u2029",
    "\u3000",
    "\u200b",
    "\x1c",
    "\x1f",
    "\x85",
    "\u180e",
    "\x00",
    "\x7f",
    '"',
    "\\",
    "/",
    "é",
    "€",
    "😀",
    "\ud800",
    "\udc00",
    "\udfff",
    "0",
    "1",
)
SIMPLE_CHARS: Final = ("a", "b", "x", "y", "z", "A", "-", "_", ".")
NUMBERS: Final = (
    0,
    1,
    -1,
    2,
    7,
    42,
    2**31,
    2**53,
    -(2**53),
    1.5,
    -0.5,
    0.1,
    1e-7,
    1.5e-7,
    1e-6,
    1e16,
    1e20,
    1e21,
    1.7976931348623157e308,
    5e-324,
    123e-20,
    18446744073709551616,
    3.14159,
)
KEYS: Final = ("a", "b", "status", "0", "1", "10", "01", "-1", "4294967294", "4294967295", "é", "\ud800", "")
STATUSES: Final = ("success", "error", "cancelled", "bogus", "", "SUCCESS", None, 5)
CLOSE_STATUSES: Final = ("error", "cancelled", "success", "ERROR", None, 5)
SIDE_EFFECTS: Final = ("unknown", "not_started", "started", "", None)


class ScenarioBuilder:
    """Draws a scenario request by request, running each on ``reference`` as it goes."""

    def __init__(self, draw: Draw, reference: Subject, *, deviations: bool = False, hooks: bool = True) -> None:
        self.draw = draw
        self.reference = reference
        self.deviations = deviations
        self.hooks = hooks
        self.requests: list[dict[str, Any]] = []
        self.responses: list[list[dict[str, Any]]] = []
        self._next_id = 1
        self._generations: list[int] = []
        self._values: list[int] = []
        self._null_values: set[int] = set()  # requests whose recorded value is null
        self._by_id: dict[int, dict[str, Any]] = {}

    # ------------------------------------------------------------------ driving

    def build(self, steps: int) -> None:
        """Draw a ``new`` and then ``steps`` more requests."""
        self._run(self._new(force_valid=True))
        for _ in range(steps):
            self._run(self._request(depth=0))

    def _run(self, request: dict[str, Any]) -> None:
        responses = self.reference.send(request)
        self.requests.append(request)
        self.responses.append(responses)
        for response in responses:
            self._learn(response)

    def _learn(self, response: dict[str, Any]) -> None:
        request = self._by_id.get(response.get("id"))  # type: ignore[arg-type]
        if request is None:
            return
        if request.get("cmd") == "new":
            self._generations = []
            self._values = []
        if "ok" not in response or request.get("cmd") != "call":
            return
        self._values.append(request["id"])
        value = response["ok"]
        if request.get("method") == "begin":
            self._generations.append(value["generation"])
            value = value["superseded"]
        if value is None:
            self._null_values.add(request["id"])
        else:
            self._null_values.discard(request["id"])

    def _id(self) -> int:
        self._next_id += 1
        return self._next_id - 1

    # ------------------------------------------------------------------ requests

    def _new(self, force_valid: bool = False) -> dict[str, Any]:
        request: dict[str, Any] = {"id": self._id(), "cmd": "new"}
        choice = 0 if force_valid else self.draw(st.integers(0, 9))
        if choice <= 6:
            options = {}
            for key, values in (
                ("maxCalls", (1, 2, 3, 4, 1000)),
                ("maxDiagnostics", (1, 2, 3)),
                ("maxResultBytes", (4, 8, 16, 64)),
                ("maxMessageBytes", (1, 2, 3, 5, 10, 47)),
                ("maxIdBytes", (1, 2, 3, 4)),
                ("maxNameBytes", (1, 2, 3)),
                ("maxCodeBytes", (1, 2, 9)),
            ):
                if self.draw(st.integers(0, 3)) == 0:
                    options[key] = self.draw(st.sampled_from(values))
            request["options"] = self._undefined_members(options, ("maxCalls", "maxResultBytes", "maxMessageBytes"))
        elif choice <= 8:
            bad = st.sampled_from([0, -1, 1.5, "2", True, 2**53, None, {"$nan": True}])
            request["options"] = {
                self.draw(st.sampled_from(["maxCalls", "maxCodeBytes", "maxIdBytes"])): self.draw(bad)
            }
        else:
            request["options"] = self.draw(st.sampled_from([None, 5, "x", [1]]))
        self._by_id[request["id"]] = request
        return request

    def _request(self, depth: int) -> dict[str, Any]:
        method = self.draw(
            st.sampled_from(
                ["begin"] * 3
                + ["settle"] * 3
                + ["succeed"] * 3
                + ["fail"] * 2
                + ["cancel"] * 2
                + ["close"] * 2
                + [
                    "seal",
                    "snapshot",
                    "activeGeneration",
                    "toOpenAIChatCompletions",
                    "toOpenAIResponses",
                    "toAnthropicToolResults",
                    "new" if depth == 0 else "snapshot",
                ]
            )
        )
        if method == "new":
            return self._new()
        request_id = self._id()
        args = self._args(method, depth)
        request = {"id": request_id, "cmd": "call", "method": method, "args": args}
        self._by_id[request_id] = request
        return request

    def _args(self, method: str, depth: int) -> list[Any]:
        if method == "begin":
            return [self._calls(depth)]
        if method in ("settle", "succeed", "fail", "cancel"):
            args = [self._handle(depth), self._call_id()]
            if method == "settle":
                args.append(self._outcome(depth))
            elif method == "succeed":
                args.append(self._content(depth))
            elif method == "fail":
                args += [self._fail_error(depth), self._code()]
            else:
                args += [self._message(depth), self._code()]
            return self._trim(args)
        if method == "close":
            return self._trim([self._handle(depth), self._reason(depth)])
        if method == "seal":
            return [self._handle(depth)]
        if method.startswith("to"):
            return self._trim([self._snapshot_arg()])
        return []

    def _trim(self, args: list[Any]) -> list[Any]:
        """Drop trailing absent arguments and write inner ones as $undefined."""
        while args and args[-1] is _ABSENT:
            args.pop()
        return [{"$undefined": True} if a is _ABSENT else a for a in args]

    # ------------------------------------------------------------------ values

    def _maybe_hook(self, depth: int, then: Any, members: tuple[str, ...] = ()) -> Any:
        """Sometimes wrap ``then`` in a hook that runs nested calls first; else give the absent ``members``
        of the object ``then`` as ``{"$undefined":true}`` now and then."""
        if not self.hooks or depth >= 2 or self.draw(st.integers(0, 7)) != 0:
            return self._undefined_members(then, members)
        calls = [self._request(depth + 1) for _ in range(self.draw(st.integers(0, 2)))]
        spec: dict[str, Any] = {"calls": calls}
        if then is not _ABSENT and self.draw(st.integers(0, 9)) != 0:  # sometimes no then: undefined
            spec["then"] = then
        if self.draw(st.integers(0, 5)) == 0:
            spec["throw"] = self._text()
        return {"$hook": spec}

    def _undefined_members(self, value: Any, members: tuple[str, ...]) -> Any:
        """``value`` with some of its absent ``members`` set to ``{"$undefined":true}`` (JavaScript's undefined)."""
        if isinstance(value, dict) and members and self.draw(st.integers(0, 5)) == 0:
            for key in members:
                if key not in value and self.draw(st.booleans()):
                    value[key] = {"$undefined": True}
        return value

    def _text(self) -> str:
        chars = st.sampled_from(SIMPLE_CHARS) | st.sampled_from(TRICKY_CHARS)
        return "".join(self.draw(st.lists(chars, max_size=6)))

    def _string(self) -> str:
        return (
            self.draw(st.sampled_from(["x", "ok", "hello world", "ab" * 12]))
            if self.draw(st.booleans())
            else self._text()
        )

    def _json(self, depth: int, size: int = 3, references: bool = True) -> Any:
        kind = self.draw(st.integers(0, (9 if references else 8) if size > 0 else 5))
        if kind == 0:
            return None
        if kind == 1:
            return self.draw(st.booleans())
        if kind == 2:
            return self.draw(st.sampled_from(NUMBERS))
        if kind == 3:
            return self.draw(st.sampled_from([{"$nan": True}, {"$inf": 1}, {"$inf": -1}]))
        if kind <= 5:
            return self._string()
        if kind <= 7:
            return [self._json(depth, size - 1) for _ in range(self.draw(st.integers(0, 3)))]
        if kind == 8:
            keys = self.draw(st.lists(st.sampled_from(KEYS), max_size=4, unique=True))
            return {key: self._json(depth, size - 1) for key in keys}
        return self._reference_value() or self._string()

    def _reference_value(self, allow_null: bool = True) -> Any:
        """A tag for a handle or an earlier result; with ``allow_null`` False never one that stands for null
        (a null export snapshot or fail error is deviation D1/D3)."""
        choices: list[Any] = []
        if self._generations:
            choices.append({"$handle": self.draw(st.sampled_from(self._generations))})
        values = [v for v in self._values if allow_null or self.deviations or v not in self._null_values]
        if values:
            value_id = self.draw(st.sampled_from(values))
            choices += [{"$snapshot": value_id}, {"$clone": value_id}]
        return self.draw(st.sampled_from(choices)) if choices else None

    def _calls(self, depth: int) -> Any:
        kind = self.draw(st.integers(0, 12))
        if kind == 0:
            return self.draw(st.sampled_from([None, "ab", 5, {"0": {"id": "a", "name": "t"}}]))
        entries = []
        for _ in range(self.draw(st.integers(0, 4))):
            entry_kind = self.draw(st.integers(0, 9))
            if entry_kind == 0:
                entries.append(self.draw(st.sampled_from([None, "a", 5, [], True])))
                continue
            entry: dict[str, Any] = {}
            if entry_kind != 1:
                entry["id"] = self._call_id()
            if entry_kind != 2:
                entry["name"] = self.draw(st.sampled_from(NAMES)) if self.draw(st.booleans()) else self._id_like()
            entries.append(self._maybe_hook(depth, entry, ("id", "name")))
        return entries

    def _id_like(self) -> Any:
        kind = self.draw(st.integers(0, 5))
        if kind == 0:
            return self.draw(st.sampled_from([None, 5, True, [], {}]))
        return self._text()

    def _call_id(self) -> Any:
        if self.draw(st.integers(0, 5)) == 0:
            return self._id_like()
        return self.draw(st.sampled_from((*CALL_IDS, "zz")))

    def _handle(self, depth: int) -> Any:
        kind = self.draw(st.integers(0, 9))
        if kind <= 5 and self._generations:
            generation = self._generations[-1] if kind <= 3 else self.draw(st.sampled_from(self._generations))
            return {"$handle": generation}
        if kind <= 7:
            return {"$forgedHandle": self.draw(st.sampled_from([1, 2, 3, 0, -1, 1.5, "1", None, 2**53]))}
        if kind == 8:
            return self._maybe_hook(depth, {"generation": self.draw(st.sampled_from([1, 2, 0]))})
        return self.draw(st.sampled_from([None, 5, "x", {"generation": 1}]))

    def _content(self, depth: int) -> Any:
        if self.draw(st.integers(0, 12)) == 0:
            return _ABSENT
        return self._maybe_hook(depth, self._json(depth))

    def _message(self, depth: int) -> Any:
        kind = self.draw(st.integers(0, 9))
        if kind == 0:
            return _ABSENT
        if kind == 1:
            return {"$error": self._text()}
        if kind == 2:
            return None
        value = self._json(depth, size=2)
        return self._maybe_hook(depth, value)

    def _fail_error(self, depth: int) -> Any:
        if self.deviations:
            return self._message(depth)
        kind = self.draw(st.integers(0, 5))
        if kind == 0:
            return {"$error": self._text() or "failed"}  # an exception without text is deviation D11
        if kind == 1:
            return self._reference_value(allow_null=False) or "failed"
        value = self._json(depth, size=2, references=False)
        return value if value is not None else "failed"

    def _code(self) -> Any:
        kind = self.draw(st.integers(0, 6))
        if kind <= 2:
            return _ABSENT
        if kind == 3:
            return None
        return self.draw(st.sampled_from(["E", "timeout", "", " ", "\ufeff", "\x1c", "abcdefghij", 5, True]))

    def _outcome(self, depth: int) -> Any:
        kind = self.draw(st.integers(0, 11))
        if kind == 0:
            return self.draw(st.sampled_from([_ABSENT, None, "success", [], 5]))
        status = self.draw(st.sampled_from(STATUSES))
        outcome: dict[str, Any] = {"status": status}
        if status == "success" or self.draw(st.integers(0, 3)) == 0:
            content = self._content(depth)
            if content is not _ABSENT:
                outcome["content"] = content
        if status != "success" or self.draw(st.integers(0, 3)) == 0:
            code = self._code()
            if code is not _ABSENT:
                outcome["code"] = code
            message = self._message(depth)
            if message is not _ABSENT:
                outcome["message"] = message
        return self._maybe_hook(depth, outcome, ("content", "code", "message"))

    def _reason(self, depth: int) -> Any:
        kind = self.draw(st.integers(0, 9))
        if kind == 0:
            return _ABSENT
        if kind == 1 and self.deviations:
            return self.draw(st.sampled_from([None, "timeout", 5, [], True]))
        reason: dict[str, Any] = {}
        if self.draw(st.booleans()):
            reason["status"] = self.draw(st.sampled_from(CLOSE_STATUSES))
        if self.draw(st.integers(0, 2)) == 0:
            code = self._code()
            if code is not _ABSENT:
                reason["code"] = code
        if self.draw(st.integers(0, 2)) == 0:
            reason["sideEffectState"] = self.draw(st.sampled_from(SIDE_EFFECTS))
        if self.deviations and self.draw(st.integers(0, 3)) == 0:  # deviation D7: the snake_case spelling
            reason["side_effect_state"] = self.draw(st.sampled_from(SIDE_EFFECTS))
        if self.draw(st.booleans()):
            message = self._message(depth)
            if message is not _ABSENT:
                reason["message"] = message
        return self._maybe_hook(depth, reason, ("status", "code", "sideEffectState", "message"))

    def _snapshot_arg(self) -> Any:
        kind = self.draw(st.integers(0, 6))
        if kind <= 1:
            return _ABSENT
        if kind <= 4:
            return self._reference_value(allow_null=False) or _ABSENT
        if kind == 5 and self.deviations:
            return None
        return self.draw(st.sampled_from([5, {"calls": []}, "x"]))


class _Absent:
    def __repr__(self) -> str:
        return "<absent>"


_ABSENT: Final = _Absent()
