"""Vectors generated from the model: the shortest request sequence that fires each table row.

Theory of operation
-------------------
A breadth-first search over sequences of protocol requests drawn from a small
alphabet (begin, every settlement form with the current, a look-alike and an
unknown target, close and seal with and without hooks that nest operations,
snapshot, exports of fresh and cloned snapshots, a turn token and a begin
with a token that is not current).  Each candidate sequence is
run on the reference with row tracing on; the first (shortest, then earliest
in alphabet order) sequence that makes a row fire becomes that row's vector,
``spec/vectors/model/model-<row id>.json`` with origin ``model``.  The search
is deterministic, so regenerating gives the same files.

Hand-written vectors say *why* a behaviour matters; these say *that every row
of the table is reachable*, by construction, with the shortest witness.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from tool_call_closure.conformance.subject import InProcessSubject
from tool_call_closure.conformance.vectors import VECTOR_FORMAT, generate, render, uses_turn_guard
from tool_call_closure.machine.table import TABLE

__all__ = ["ALPHABET", "generate_model_vectors", "shortest_witnesses"]

# An action builds a request from the latest generation a begin created (0 before any).
Action = tuple[str, Callable[[int], dict[str, Any]]]


def _call(method: str, *args: Any) -> dict[str, Any]:
    return {"cmd": "call", "method": method, "args": list(args)}


def _hook(*calls: dict[str, Any], then: Any) -> dict[str, Any]:
    return {"$hook": {"calls": [{"id": 900 + i, **c} for i, c in enumerate(calls)], "then": then}}


def _current(generation: int) -> dict[str, Any]:
    return {"$handle": generation} if generation else {"$forgedHandle": 1}


ALPHABET: Final[tuple[Action, ...]] = (
    ("begin a", lambda g: _call("begin", [{"id": "a", "name": "t"}])),
    ("begin a b", lambda g: _call("begin", [{"id": "a", "name": "t"}, {"id": "b", "name": "t"}])),
    ("begin empty", lambda g: _call("begin", [])),
    ("begin invalid", lambda g: _call("begin", "not a list")),
    (
        "begin with a nested begin",
        lambda g: _call("begin", [_hook(_call("begin", []), then={"id": "x", "name": "t"})]),
    ),
    ("succeed a", lambda g: _call("succeed", _current(g), "a", "ok")),
    ("settle a error", lambda g: _call("settle", _current(g), "a", {"status": "error"})),
    ("fail a", lambda g: _call("fail", _current(g), "a", "boom")),
    ("cancel b", lambda g: _call("cancel", _current(g), "b")),
    ("succeed unknown", lambda g: _call("succeed", _current(g), "zz", "ok")),
    ("succeed look-alike", lambda g: _call("succeed", {"$forgedHandle": max(g, 1)}, "a", "ok")),
    ("settle a invalid outcome", lambda g: _call("settle", _current(g), "a", 5)),
    (
        "succeed a, content closes",
        lambda g: _call("succeed", _current(g), "a", _hook(_call("close", _current(g)), then="late")),
    ),
    (
        "succeed a, content begins",
        lambda g: _call("succeed", _current(g), "a", _hook(_call("begin", []), then="late")),
    ),
    (
        "succeed a, content settles a",
        lambda g: _call("succeed", _current(g), "a", _hook(_call("succeed", _current(g), "a", "first"), then="late")),
    ),
    ("close", lambda g: _call("close", _current(g))),
    ("close error", lambda g: _call("close", _current(g), {"status": "error", "sideEffectState": "not_started"})),
    ("close, reason closes", lambda g: _call("close", _current(g), _hook(_call("close", _current(g)), then={}))),
    ("close, reason begins", lambda g: _call("close", _current(g), _hook(_call("begin", []), then={}))),
    ("close look-alike", lambda g: _call("close", {"$forgedHandle": max(g, 1)})),
    ("seal", lambda g: _call("seal", _current(g))),
    ("seal look-alike", lambda g: _call("seal", {"$forgedHandle": max(g, 1)})),
    ("snapshot", lambda g: _call("snapshot")),
    ("active generation", lambda g: _call("activeGeneration")),
    ("export", lambda g: _call("toOpenAIChatCompletions")),
    ("export a clone", lambda g: _call("toAnthropicToolResults", {"$clone": 1})),
    # Deviation D20 (capability turn-guard), last so that the witnesses of the other rows stay what they were: a
    # turn token, and a begin whose token is not current (the previous generation's, or 1 before any begin).
    ("turn token", lambda g: _call("turnToken")),
    (
        "begin a with a stale turn",
        lambda g: _call("begin", [{"id": "a", "name": "t"}], {"turn": {"generation": g - 1 if g else 1}}),
    ),
)


def _run(actions: list[int]) -> tuple[list[dict[str, Any]], set[str]]:
    """Run a sequence of alphabet actions on a fresh reference: the requests made and the rows fired."""
    trace: list[str] = []
    subject = InProcessSubject(trace=trace)
    requests: list[dict[str, Any]] = [{"id": 1, "cmd": "new"}]
    subject.send(requests[0])
    generation = 0
    for number, index in enumerate(actions, 2):
        request = {"id": number, **ALPHABET[index][1](generation)}
        requests.append(request)
        for response in subject.send(request):
            ok = response.get("ok")
            if response.get("id") == number and isinstance(ok, dict) and isinstance(ok.get("handle"), dict):
                generation = ok["generation"]
    return requests, set(trace)


def shortest_witnesses(max_depth: int = 3) -> dict[str, list[dict[str, Any]]]:
    """For every row id: the shortest request sequence (found first) that fires it."""
    wanted = {row.id for row in TABLE.transitions}
    found: dict[str, list[dict[str, Any]]] = {}
    frontier: list[list[int]] = [[]]
    for _ in range(max_depth + 1):
        next_frontier: list[list[int]] = []
        for actions in frontier:
            requests, fired = _run(actions)
            for row_id in sorted(fired & wanted - set(found)):
                found[row_id] = requests
            if set(found) == wanted:
                return found
            next_frontier += [[*actions, i] for i in range(len(ALPHABET))]
        if set(found) == wanted:
            break
        frontier = next_frontier
    return found


def generate_model_vectors(directory: Path, max_depth: int = 3) -> list[Path]:
    """Write one vector per table row into ``directory`` (``model/`` of the vectors); return the paths."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for row_id, requests in sorted(shortest_witnesses(max_depth).items()):
        vector_id = "model-" + row_id.replace(".", "-").replace("_", "-")
        data = {
            "format": VECTOR_FORMAT,
            "id": vector_id,
            "description": f"The shortest request sequence found by the model search that fires row {row_id}.",
            "origin": "model",
            # A witness that needs the turn-guard capability pins deviation D20, as the hand-written ones do.
            "tags": ["area:model", *(["deviation:D20"] if uses_turn_guard(requests) else [])],
            "steps": [{"request": request} for request in requests],
        }
        path = directory / f"{vector_id}.json"
        path.write_text(render(generate(data)), encoding="utf-8")
        paths.append(path)
    return paths
