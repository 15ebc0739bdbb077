"""Protocol v1 stays stable (issue 19 item 4): what a port passed yesterday it passes tomorrow.

Two fixtures hold the promise of spec/protocol.md ("a subject that lists no new capability keeps passing
everything else"):

* a frozen v1 subject: the reference serving with fewer capabilities (none at all; each one alone), which
  refuses every later addition as v1 did.  It must pass every vector that requires nothing it lacks, so a new
  vector that uses an addition without declaring its capability fails here;
* ``tests/data/vectors-v1.json``: the id, hash and ``requires`` of every vector published so far.  A vector
  never changes what it asserts: a published vector keeps its hash and its requirements (a new assertion is a
  new vector with a new id).  Adding vectors is free; the pin list grows with
  ``python tests/test_vectors_v1.py --pin`` when they are committed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tool_call_closure.conformance.conform import SubjectSpec, run_conformance
from tool_call_closure.conformance.serve import CAPABILITIES, Server
from tool_call_closure.conformance.subject import InProcessSubject
from tool_call_closure.conformance.vectors import load_vectors

ROOT = Path(__file__).resolve().parents[1]
VECTORS = load_vectors(ROOT / "spec" / "vectors")
PINS = ROOT / "tests" / "data" / "vectors-v1.json"
V1_FIRST = ("hook",)  # the one capability of protocol v1 as first published (tamper and turn-guard came later)


@pytest.mark.parametrize("capabilities", [(), V1_FIRST, *((c,) for c in CAPABILITIES)], ids=repr)
def test_a_frozen_v1_subject_passes_every_vector_that_needs_nothing_it_lacks(capabilities: tuple[str, ...]) -> None:
    run = run_conformance(VECTORS, SubjectSpec(capabilities=capabilities))
    assert run.header["subject"]["capabilities"] == list(capabilities)
    outcomes = {r.id: r.outcome for r in run.results}
    problems = [f"{r.id}: {r.outcome}: {r.message}" for r in run.results if r.outcome in ("failed", "errored")]
    assert problems == []
    assert {i for i, o in outcomes.items() if o == "skipped"} == {
        v.id for v in VECTORS if set(v.requires) - set(capabilities)
    }
    assert sum(o == "passed" for o in outcomes.values()) >= 160


def test_the_frozen_v1_subject_refuses_the_later_additions_as_v1_did() -> None:
    subject = InProcessSubject(capabilities=())
    (hello,) = subject.send({"id": 0, "cmd": "hello", "protocol": 1})
    assert hello["capabilities"] == []
    assert (
        subject.send({"id": 1, "cmd": "new", "options": {"maxCalls": {"$undefined": True}}})[0]["error"]["kind"]
        == "ProtocolError"
    )
    subject.send({"id": 1, "cmd": "new"})
    subject.send({"id": 2, "cmd": "call", "method": "begin", "args": [[{"id": "a", "name": "t"}], {"turn": 5}]})
    for method in ("toGeminiFunctionResponses", "toBedrockToolResults", "turnToken"):
        (answer,) = subject.send({"id": 3, "cmd": "call", "method": method})
        assert answer["error"] == {"kind": "ProtocolError", "message": f"unknown method {method!r}"}
    # export-options: v1 ignores an argument beyond a method's parameters, an export's options included
    subject.send({"id": 6, "cmd": "call", "method": "close", "args": [{"$handle": 1}]})
    plain, given = (
        subject.send({"id": 7, "cmd": "call", "method": "toAnthropicToolResults", "args": [{"$snapshot": 6}, *extra]})
        for extra in ([], [{"media": "not an option"}])
    )
    assert given == plain
    assert "ok" in plain[0]
    (tampered,) = subject.send({"id": 4, "cmd": "tamper", "target": 2})
    assert tampered["error"]["kind"] == "ProtocolError"
    (hooked,) = subject.send({"id": 5, "cmd": "call", "method": "cancel", "args": [{"$handle": 1}, {"$hook": {}}]})
    assert hooked["error"]["kind"] == "ProtocolError"
    with pytest.raises(ValueError, match="capabilities: unknown"):
        Server(sys.stdout.buffer, capabilities=("telepathy",))


def _pins() -> dict[str, dict[str, object]]:
    return {v.id: {"sha256": v.sha256, "requires": sorted(v.requires)} for v in sorted(VECTORS, key=lambda v: v.id)}


def test_no_published_vector_changes_what_it_asserts() -> None:
    pinned = json.loads(PINS.read_text(encoding="utf-8"))["vectors"]
    current = _pins()
    changed = [f"{i}: {pin} -> {current.get(i, 'removed')}" for i, pin in pinned.items() if current.get(i) != pin]
    assert changed == [], "a published vector changed; add a new vector instead:\n" + "\n".join(changed)
    assert len(pinned) >= 262


if __name__ == "__main__" and sys.argv[1:] == ["--pin"]:  # pin the vectors committed now (new ones only grow it)
    old = json.loads(PINS.read_text(encoding="utf-8"))["vectors"] if PINS.is_file() else {}
    pins = {**_pins(), **old}
    text = json.dumps({"format": "tool-call-closure.vector-pins/1", "vectors": dict(sorted(pins.items()))}, indent=1)
    PINS.write_text(text + "\n", encoding="utf-8")
