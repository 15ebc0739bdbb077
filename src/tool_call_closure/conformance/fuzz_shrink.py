"""Shrinking a fuzz divergence without trading it for another one.

Theory of operation
-------------------
A :class:`Divergence` is where a subject first answered a scenario
differently from the reference: the step, the request (by its ``id``, which
no reduction renumbers, and its method) and the :class:`~.compare.Difference`
on that request's response lines — which line, what each side answered there
(``accepted``, ``rejected:<reason>``, ``error:<kind>:<code>``) and the first
differing JSON path — or that the subject broke on it.  Its *signature* is all
of that but the step number, which moves as earlier requests are dropped.

:func:`shrink` replays smaller candidates (:func:`replay`: a fresh reference
in process, and the subject, on which every scenario starts with its own
``new``) and keeps a candidate only when it is a reduction of *the same bug*:

* the candidate diverges with the same signature — the same request, the
  same answers, the same field.  Dropping ``fail``'s error argument still
  makes the message differ, on the same request and the same field, but if
  the signature were all, that would be kept; hence the second rule:
* the candidate holds no input of a documented deviation
  (``spec/deviations.json``) that the scenario did not hold already
  (:func:`deviation_inputs`).  There the reference differs from the
  original by design, so a divergence the candidate shows may be the
  deviation, not the bug: ``fail(h, id)`` is deviation D3's input, and a
  subject that follows the original answers it as the original does.

The inputs recognised are those of the protocol-visible deviations a
request can hold: D1 (a null close reason or export snapshot), D2 (a close
reason that is not an object), D3 (``fail`` with an absent or null error, or
caller code in its error), D7 (a ``side_effect_state`` key), D9 (a call
entry with ``call_id``), D10 (an outcome or close reason with a key it does
not have), D11 (``fail`` with an exception whose text is empty) and D20
(``turnToken``, or a second ``begin`` argument).  D8's two exports are the
subject's own methods, not a difference from the original on a shared input,
and D18 (the byte limits as budgets) shows only with caller code placed past
a limit, which the explorer never draws.  A hook stands for its ``then`` (what
the implementation reads), and the requests nested in hooks are searched too.

The result is 1-minimal for its signature: no single request (with a
``begin``, its later handles renumbered), no single hook or array element,
and no single ``new`` option can go without changing the divergence or
bringing in a deviation's input.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from tool_call_closure.conformance.compare import Difference, difference
from tool_call_closure.conformance.subject import InProcessSubject, Subject, SubjectError

__all__ = [
    "OUTCOME_KEYS",
    "REASON_KEYS",
    "Divergence",
    "deviation_inputs",
    "replay",
    "shrink",
]

OUTCOME_KEYS: Final = frozenset(
    {"status", "content", "code", "message", "provenance", "sideEffectState", "side_effect_state"}
)
"""The keys an outcome given as an object may have (deviation D10): those of a settlement."""
REASON_KEYS: Final = frozenset({"status", "code", "message", "sideEffectState", "side_effect_state"})
"""The keys a close reason given as an object may have (deviation D10)."""
_EXPORTS: Final = frozenset(
    {
        "toOpenAIChatCompletions",
        "toOpenAIResponses",
        "toAnthropicToolResults",
        "toGeminiFunctionResponses",
        "toBedrockToolResults",
    }
)


@dataclass(frozen=True, slots=True)
class Divergence:
    """Where a subject first answered a scenario differently from the reference (or broke)."""

    step: int  # 1-based: the scenario's first request is step 1
    request_id: str  # the request's id, as JSON text
    method: str  # the call's method, or the request's cmd
    difference: Difference | None  # None when the subject broke
    broke: str | None = None  # why the subject broke (it crashed, hung, or wrote a non-response)

    @property
    def text(self) -> str:
        if self.difference is None:
            return f"step {self.step}: the subject broke: {self.broke}"
        return f"step {self.step}: {self.difference.text}"

    @property
    def signature(self) -> tuple[str, ...]:
        """What makes two divergences the same bug: all but the step number, which a reduction moves."""
        what = ("broke",) if self.difference is None else self.difference.signature
        return (self.request_id, self.method, *what)

    @staticmethod
    def at(step: int, request: dict[str, Any], diff: Difference | None, broke: str | None = None) -> Divergence:
        method = request.get("method") if request.get("cmd") == "call" else request.get("cmd")
        return Divergence(step, json.dumps(request.get("id")), str(method), diff, broke)


def replay(requests: list[dict[str, Any]], subject: Subject) -> Divergence | None:
    """Send ``requests`` to a fresh reference and to ``subject``; the first divergence, or None."""
    reference = InProcessSubject()
    for number, request in enumerate(requests, 1):
        expected = reference.send(request)
        try:
            actual = subject.send(request)
        except SubjectError as exc:
            return Divergence.at(number, request, None, str(exc))
        found = difference(expected, actual)
        if found is not None:
            return Divergence.at(number, request, found)
    return None


# --------------------------------------------------------------------------- the deviations' inputs


def _then(value: Any) -> Any:
    """What a hook's property reads see: its ``then`` (a hook is read by property, never by key)."""
    return value["$hook"].get("then") if _is_tag(value, "$hook") and isinstance(value["$hook"], dict) else None


def _is_object(value: Any) -> bool:
    """A protocol value the implementation sees as an object: a plain JSON object, or a tag for one."""
    if not isinstance(value, dict):
        return False
    tag = next(iter(value)) if len(value) == 1 else ""
    if tag == "$literal":
        return isinstance(value[tag], dict)
    if tag.startswith("$"):  # a handle, a snapshot, an exception, a hook: objects; $nan, $inf: numbers
        return tag in ("$handle", "$forgedHandle", "$snapshot", "$clone", "$error", "$hook")
    return True


def _plain(value: Any) -> bool:
    """A plain JSON object (not a tag): read by key, so its keys are checked (D10)."""
    return isinstance(value, dict) and not (len(value) == 1 and next(iter(value)).startswith("$"))


def _has_hook(value: Any) -> bool:
    if _is_tag(value, "$hook"):
        return True
    if isinstance(value, list):
        return any(_has_hook(item) for item in value)
    if isinstance(value, dict):
        return any(_has_hook(item) for item in value.values())
    return False


def _calls(value: Any) -> Iterator[dict[str, Any]]:
    """Every ``call`` request in ``value``: the value itself, and those nested in hooks at any depth."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            if item.get("cmd") == "call":
                yield item
            pending.extend(item.values())
            if _is_tag(item, "$hook") and isinstance(item["$hook"], dict):
                pending.extend(item["$hook"].get("calls") or [])
        elif isinstance(item, list):
            pending.extend(item)


def _absent(args: list[Any], index: int) -> bool:
    return index >= len(args) or _is_tag(args[index], "$undefined")


def _in_call(method: str, args: list[Any]) -> set[str]:
    """The deviations whose input one call holds.  A hook is an object whose property reads give its ``then``'s
    members: it passes the object checks, and its members are never checked as keys (D10)."""
    found: set[str] = set()
    if method == "fail":
        error = None if _absent(args, 2) else args[2]
        if error is None or _has_hook(error):
            found.add("D3")  # the default message for no error; caller code converted only when admitted
        elif _is_tag(error, "$error") and error["$error"] == "":
            found.add("D11")
    if method == "close" and not _absent(args, 1):
        reason = args[1]
        if reason is None:
            found.add("D1")
        elif not _is_object(reason):
            found.add("D2")
        elif _plain(reason):
            found |= _object_keys(reason, REASON_KEYS)
        if isinstance(_then(reason), dict) and "side_effect_state" in _then(reason):
            found.add("D7")
    if method == "settle" and not _absent(args, 2) and _plain(args[2]):
        found |= _object_keys(args[2], OUTCOME_KEYS) - {"D7"}  # an outcome's side_effect_state is not read
    if method in _EXPORTS and not _absent(args, 0) and args[0] is None:
        found.add("D1")
    if method == "begin" and args and isinstance(args[0], list):
        entries = [_then(entry) if _is_tag(entry, "$hook") else entry for entry in args[0]]
        if any(isinstance(entry, dict) and "call_id" in entry for entry in entries):
            found.add("D9")
    if (method == "begin" and not _absent(args, 1)) or method == "turnToken":
        found.add("D20")
    return found


def _object_keys(value: dict[str, Any], allowed: frozenset[str]) -> set[str]:
    found = {"D7"} if "side_effect_state" in value else set()
    return found | ({"D10"} if set(value) - allowed else set())


def deviation_inputs(requests: list[dict[str, Any]]) -> set[str]:
    """The documented deviations (their ids) whose inputs ``requests`` hold, nested requests included."""
    found: set[str] = set()
    for call in _calls(requests):
        args = call.get("args")
        found |= _in_call(str(call.get("method")), args if isinstance(args, list) else [])
    return found


# --------------------------------------------------------------------------- shrinking


def shrink(
    requests: list[dict[str, Any]], still_fails: Callable[[list[dict[str, Any]]], Divergence | None]
) -> tuple[list[dict[str, Any]], Divergence]:
    """A 1-minimal sub-scenario with the same divergence: no single request, hook, array element or ``new``
    option can go without changing it or bringing in the input of a documented deviation.

    ``still_fails`` replays a candidate and returns its divergence or None.  The first request (a ``new``)
    stays.  Requests after the diverging one are dropped first (the explorer stops there, so there are none).
    """
    found = still_fails(requests)
    assert found is not None, "shrink needs a diverging scenario"
    target, allowed = found, deviation_inputs(requests)

    def reduces(candidate: list[dict[str, Any]]) -> Divergence | None:
        """The candidate's divergence, if it is the same as the target's and no deviation explains it."""
        if deviation_inputs(candidate) - allowed:
            return None
        again = still_fails(candidate)
        return again if again is not None and again.signature == target.signature else None

    changed = True
    while changed:
        changed = False
        index = len(requests) - 1
        while index >= 1:
            for candidate in _without(requests, index):
                again = reduces(candidate)
                if again is not None:
                    requests, found, changed = candidate, again, True
                    break
            index -= 1
        for index in range(len(requests)):
            for simpler in [*_simplifications(requests[index]), *_fewer_options(requests[index])]:
                candidate = [*requests[:index], simpler, *requests[index + 1 :]]
                again = reduces(candidate)
                if again is not None:
                    requests, found, changed = candidate, again, True
                    break
    return requests, found


def _without(requests: list[dict[str, Any]], index: int) -> Iterator[list[dict[str, Any]]]:
    """The scenario without the request at ``index``; for a ``begin``, also with later handles renumbered."""
    yield requests[:index] + requests[index + 1 :]
    if requests[index].get("method") == "begin":
        yield [*requests[:index], *(_earlier_handles(r) for r in requests[index + 1 :])]


def _fewer_options(request: dict[str, Any]) -> list[dict[str, Any]]:
    """A ``new`` with one option fewer, for each of its options."""
    options = request.get("options") if request.get("cmd") == "new" else None
    if not isinstance(options, dict):
        return []
    return [{**request, "options": {k: v for k, v in options.items() if k != key}} for key in options]


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
