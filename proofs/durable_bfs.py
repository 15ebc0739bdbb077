"""Bounded model check of the durable layer: every path through operations, crashes and restores, with every token.

Theory of operation
-------------------
A *world* is what survives a crash: the stored closure (its canonical image,
which holds the epoch) and the set of tokens that outside workers hold — every
call and batch token ever issued, of every epoch.  From each world, breadth
first, every action of a finite alphabet is taken:

* ``begin`` of 0..``--calls`` new calls (while fewer than ``--generations`` begins happened);
* ``settle`` with every held call token — genuine, with its last character
  edited, and re-signed with another secret (forged) — each carrying a result
  that names its token's epoch and whether it was forged;
* ``close`` and ``seal`` with every held batch token (genuine and edited);
* ``claim``: the current epoch's tokens become held;
* ``restore``: the owning process crashed and its successor restores: a new epoch
  (while fewer than ``--epochs``);
* ``kill``: every committing action once more, its process killed after the
  table ran and before the commit.

Every action runs through a store (``durable.store.MemoryStore``: the same
transaction code as SQLite and PostgreSQL) *and* directly on the closure
restored from the world's image (the table alone), and the check requires:

1. the store's answer and image equal the table's (the layer adds nothing);
2. **no path applies a result from an earlier epoch or a forged token**: an
   accepted settlement always came with a genuine token of the current epoch,
   and no image ever holds a forged or earlier-epoch result;
3. a token of an earlier epoch, an edited or a forged token is refused with
   ``stale_epoch`` / ``token_forged`` and the image is byte-identical after;
4. a killed transaction leaves the stored image byte-identical;
5. a restore increments the epoch and changes nothing else: generation,
   calls, settlements and diagnostics are kept, pending calls stay pending.

On the first violation it prints the shortest path and exits 1.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from tool_call_closure import to_json
from tool_call_closure.durable import FencedClosure, MemoryStore, TokenRejection
from tool_call_closure.durable.tokens import TokenCodec

SECRET = b"durable-bfs-secret-0123456789abc"
OTHER = b"someone-elses-secret-0123456789x"
CLOSURE = "bfs"

World = tuple[bytes, frozenset[str]]  # (the stored image, the tokens workers hold)


class _Killed(BaseException):
    """The process dies between the table's step and the commit."""


@dataclass(frozen=True)
class Action:
    name: str
    run: Callable[[FencedClosure], Any]
    token: str | None = None
    forged: bool = False
    commits: bool = True


def _edit(token: str) -> str:
    return token[:-1] + ("A" if token[-1] != "A" else "B")


def _claims(token: str) -> tuple[int, int, str, str | None]:
    payload = json.loads(TokenCodec.__dict__["verify"].__globals__["_unb64"](token.split(".")[1]))
    return payload[1], payload[2], payload[3], payload[4]


def actions(world: World, bounds: argparse.Namespace) -> Iterator[Action]:
    image = json.loads(world[0])
    generation = image["generation"]
    if generation < bounds.generations:
        for count in range(bounds.calls + 1):
            ids = [{"id": f"g{generation + 1}c{j}", "name": "t"} for j in range(count)]
            yield Action(f"begin({count})", lambda f, ids=ids: f.begin(ids))
    yield Action("claim", FencedClosure.tokens, commits=False)
    for token in sorted(world[1]):
        token_epoch, token_generation, kind, call_id = _claims(token)
        label = f"e{token_epoch}g{token_generation}{'' if call_id is None else ':' + call_id}"
        if kind == "call":
            assert call_id is not None
            resigned = TokenCodec(CLOSURE, OTHER).issue(token_epoch, token_generation, "call", call_id)
            for variant, forged, text in (
                (token, False, "genuine"),
                (_edit(token), True, "edited"),
                (resigned, True, "re-signed"),
            ):
                outcome = {"status": "success", "content": f"epoch {token_epoch} {'forged' if forged else 'genuine'}"}
                yield Action(f"settle({text} {label})", lambda f, v=variant, o=outcome: f.settle(v, o), token, forged)
        else:
            for variant, forged, text in ((token, False, "genuine"), (_edit(token), True, "edited")):
                yield Action(f"close({text} {label})", lambda f, v=variant: f.close(v), token, forged)
                yield Action(f"seal({text} {label})", lambda f, v=variant: f.seal(v), token, forged)


def _store_with(image: bytes) -> MemoryStore:
    store = MemoryStore()
    fenced = FencedClosure.attach(json.loads(image), SECRET)
    store.create(fenced, SECRET)
    return store


def _stored(store: MemoryStore) -> bytes:
    return store.run(CLOSURE, FencedClosure.image)


def _answer(value: Any) -> str:
    if isinstance(value, TokenRejection):
        return json.dumps(value.__json__(), sort_keys=True)
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    if hasattr(value, "result"):  # DurableBegin
        return to_json({"result": value.result, "tokens": dict(value.tokens), "batch": value.batch_token})
    return to_json(value)


def step(world: World, action: Action) -> tuple[World, str | None]:
    """The world after ``action``, or a violation."""
    image, held = world
    epoch = json.loads(image)["epoch"]
    store = _store_with(image)
    answer = store.run(CLOSURE, action.run)
    after = _stored(store)
    direct = FencedClosure.attach(json.loads(image), SECRET)
    expected = action.run(direct)
    if _answer(answer) != _answer(expected) or after != direct.image():
        return world, f"{action.name}: the store answered {_answer(answer)}, the table {_answer(expected)}"
    problem = _fencing(action, answer, epoch, image, after)
    if problem is not None:
        return world, problem
    if action.commits:  # the same action killed before its commit
        killed = _store_with(image)

        def die(fenced: FencedClosure) -> None:
            action.run(fenced)
            raise _Killed

        with contextlib.suppress(_Killed):
            killed.run(CLOSURE, die)
        if _stored(killed) != image:
            return world, f"kill({action.name}): the killed transaction changed the stored image"
    learned = set(held)
    if hasattr(answer, "tokens"):
        learned.update(answer.tokens.values())
        if answer.batch_token is not None:
            learned.add(answer.batch_token)
    elif isinstance(answer, dict):
        learned.update(answer.values())
    return (after, frozenset(learned)), None


def _fencing(action: Action, answer: Any, epoch: int, image: bytes, after: bytes) -> str | None:
    if action.token is None:
        return None
    token_epoch = _claims(action.token)[0]
    refused = isinstance(answer, TokenRejection)
    if action.forged and not (refused and answer.reason == "token_forged"):
        return f"{action.name}: a forged token was not refused as token_forged ({_answer(answer)})"
    if not action.forged and token_epoch < epoch and not (refused and answer.reason == "stale_epoch"):
        return f"{action.name}: a token of epoch {token_epoch} in epoch {epoch} was not refused as stale_epoch"
    if refused and after != image:
        return f"{action.name}: a refused token changed the stored image"
    if getattr(answer, "accepted", False) and (action.forged or token_epoch != epoch):
        return (
            f"{action.name}: a result from epoch {token_epoch} (forged: {action.forged}) was applied in epoch {epoch}"
        )
    return None


def restore(world: World) -> tuple[World, str | None]:
    image, held = world
    store = _store_with(image)
    store.run(CLOSURE, lambda f: f.epoch, restore=True)
    after = _stored(store)
    before_doc, after_doc = json.loads(image), json.loads(after)
    if after_doc["epoch"] != before_doc["epoch"] + 1 or {**after_doc, "epoch": 0} != {**before_doc, "epoch": 0}:
        return world, "restore changed more than the epoch"
    if after != FencedClosure.restore(image, SECRET).image():
        return world, "restore through the store differs from restoring the image"
    return (after, held), None


def check_state(world: World) -> str | None:
    image = json.loads(world[0])
    for call in (image["run"] or {}).get("calls", []):
        settlement = call["settlement"]
        if settlement is None or settlement["provenance"] != "reported":
            continue
        if "forged" in settlement["content"]:
            return f"call {call['id']} holds a forged result"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1, help="calls per begin, at most (default 1)")
    parser.add_argument("--generations", type=int, default=1, help="begins to explore (default 1)")
    parser.add_argument("--epochs", type=int, default=2, help="epochs to explore (default 2: one restore)")
    bounds = parser.parse_args(argv)
    started = time.monotonic()
    initial: World = (
        FencedClosure.new(CLOSURE, SECRET, max_calls=bounds.calls, max_diagnostics=2).image(),
        frozenset(),
    )
    parents: dict[World, tuple[World, str] | None] = {initial: None}
    queue = deque([initial])
    transitions = accepted_old = 0
    while queue:
        world = queue.popleft()
        moves: list[tuple[str, Callable[[], tuple[World, str | None]]]] = [
            (action.name, lambda a=action, w=world: step(w, a)) for action in actions(world, bounds)
        ]
        if json.loads(world[0])["epoch"] < bounds.epochs:
            moves.append(("crash+restore", lambda w=world: restore(w)))
        for name, move in moves:
            transitions += 1
            successor, problem = move()
            problem = problem or check_state(successor)
            if problem is not None:
                print(f"VIOLATION: {problem}")
                for line in [*_path(parents, world), name]:
                    print(f"  {line}")
                return 1
            if successor not in parents:
                parents[successor] = (world, name)
                queue.append(successor)
        accepted_old += sum(1 for token in world[1] if _claims(token)[0] < json.loads(world[0])["epoch"])
    print(
        f"explored {len(parents)} worlds, checked {transitions} transitions (each also killed before its commit), "
        f"{time.monotonic() - started:.1f}s (calls<={bounds.calls}, generations<={bounds.generations}, "
        f"epochs<={bounds.epochs}); tokens of an earlier epoch offered in {accepted_old} world-token pairs"
    )
    print("OK: no path applied a result from an earlier epoch or a forged token; store = table on every transition")
    return 0


def _path(parents: dict[World, tuple[World, str] | None], world: World) -> list[str]:
    names: list[str] = []
    link = parents[world]
    while link is not None:
        names.append(link[1])
        link = parents[link[0]]
    return list(reversed(names))


if __name__ == "__main__":
    sys.exit(main())
