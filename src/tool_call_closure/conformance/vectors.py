"""Conformance vectors: language-neutral JSON files whose expectations the reference produces.

Theory of operation
-------------------
A *vector* (``spec/vectors/<area>/<id>.json``, schema ``spec/vector.schema.json``)
is a protocol v1 conversation: a list of steps, each a request and the
response lines the reference gives for it, plus a permanent ``id``, a
description, tags, an origin and a content hash.  Authors write only the
requests and the hand tags; :func:`regenerate` runs the requests through the
reference and fills in

* ``responses`` — the reference's answers (the consensus-specs way: the
  executable spec emits the expectations);
* ``covers`` — what the vector exercises, observed rather than claimed: the
  table rows that fired, the rejection reasons returned, the error codes and
  kinds raised;
* ``requires`` — the capabilities (spec/protocol.md, Capabilities) the
  requests need, observed from them (:func:`required_capabilities`), so a
  subject without one skips the vector instead of failing it;
* ``sha256`` — a hash of the canonical form of the id and steps, so a report
  keyed by ``id`` + ``sha256`` is comparable across runs and a changed vector
  is never mistaken for the same one.

``spec/vectors/manifest.json`` lists every vector with its path, hash and
tags, and the hash of the table it was generated from.  CI regenerates the
vectors in memory and fails when the committed files drift from what the
reference produces.

Tags are namespaced strings: ``rule:SET-4`` (catalogue rule),
``invariant:I2``, ``deviation:D1`` (the vector pins a documented deviation:
the JavaScript original is expected to fail it), ``area:settle``.  The
derived ``covers`` entries are also usable as tags: ``row:<row id>``,
``event:<call event>``, ``reason:<reason>``, ``error:<code>``, ``kind:<kind>``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from tool_call_closure.conformance.agents import allowed_outcomes, request_agent
from tool_call_closure.conformance.compare import error_code
from tool_call_closure.conformance.export_options import uses_export_options
from tool_call_closure.conformance.serve import (
    ABSENT_MEMBERS,
    MAX_DEPTH,
    METHOD_CAPABILITIES,
    nesting_depth,
    parse_request_line,
)
from tool_call_closure.conformance.subject import InProcessSubject
from tool_call_closure.machine.table import TABLE, TABLE_TEXT
from tool_call_closure.spec_files import spec_path

__all__ = [
    "MANIFEST_FORMAT",
    "VECTOR_FORMAT",
    "Vector",
    "canonical_hash",
    "check_expectations",
    "default_vectors_dir",
    "drift",
    "load_vectors",
    "manifest",
    "regenerate",
    "required_capabilities",
    "spec_hash",
    "uses_turn_guard",
]

VECTOR_FORMAT: Final = "tool-call-closure.vector/1"
MANIFEST_FORMAT: Final = "tool-call-closure.manifest/1"
ORIGINS: Final = ("hand", "model", "fuzz")
# A vector file holds requests (at most MAX_DEPTH levels each, spec/protocol.md) three levels down, and their
# responses; a file nested deeper is refused before anything recursive touches it.
MAX_VECTOR_DEPTH: Final = MAX_DEPTH + 8


@dataclass(frozen=True, slots=True)
class Vector:
    """One vector file, parsed."""

    path: Path
    data: dict[str, Any]

    @property
    def id(self) -> str:
        return str(self.data["id"])

    @property
    def sha256(self) -> str:
        return str(self.data.get("sha256", ""))

    @property
    def tags(self) -> list[str]:
        return list(self.data.get("tags", []))

    @property
    def requires(self) -> list[str]:
        return list(self.data.get("requires", []))

    @property
    def steps(self) -> list[dict[str, Any]]:
        return list(self.data["steps"])

    def all_tags(self) -> set[str]:
        """The hand tags plus the derived coverage, as tags (``row:…``, ``reason:…``, ``error:…``, ``kind:…``)."""
        covers = self.data.get("covers", {})
        derived = {f"{key[:-1]}:{value}" for key, values in covers.items() for value in values}
        return set(self.tags) | derived


def default_vectors_dir() -> Path:
    """The shipped vectors: ``spec/vectors`` of the source checkout, else the copy inside the package."""
    return spec_path("vectors")


def spec_hash() -> str:
    """sha256 of the transition table the reference runs."""
    return hashlib.sha256(TABLE_TEXT.encode("utf-8")).hexdigest()


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=True, separators=(",", ":"), allow_nan=False)


def canonical_hash(vector_id: str, steps: list[dict[str, Any]], allowed: dict[str, Any] | None = None) -> str:
    """The content hash of a vector: sha256 of the canonical JSON of its id and steps (and allowed outcomes)."""
    content: dict[str, Any] = {"id": vector_id, "steps": steps}
    if allowed is not None:
        content["allowed"] = allowed
    return hashlib.sha256(_canonical(content).encode("utf-8")).hexdigest()


def _vector_files(directory: Path) -> Iterator[Path]:
    for path in sorted(directory.rglob("*.json")):
        if path.name != "manifest.json":
            yield path


class VectorError(ValueError):
    """A vector file is malformed (the message names the file and the problem)."""


def _check_source(path: Path, data: Any) -> dict[str, Any]:
    def problem(text: str) -> VectorError:
        return VectorError(f"{path}: {text}")

    if not isinstance(data, dict) or data.get("format") != VECTOR_FORMAT:
        raise problem(f"not a vector (format must be {VECTOR_FORMAT!r})")
    for key in ("id", "description"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise problem(f"{key} must be a non-empty string")
    if path.stem != data["id"]:
        raise problem(f"the file name must be the vector id ({data['id']}.json)")
    if data.get("origin") not in ORIGINS:
        raise problem(f"origin must be one of {', '.join(ORIGINS)}")
    for key in ("tags", "requires"):
        if key in data and not (isinstance(data[key], list) and all(isinstance(t, str) for t in data[key])):
            raise problem(f"{key} must be an array of strings")
    steps = data.get("steps")
    if not isinstance(steps, list) or not steps:
        raise problem("steps must be a non-empty array")
    for index, step in enumerate(steps):
        if not isinstance(step, dict) or not isinstance(step.get("request"), (dict, str)):
            raise problem(f"steps[{index}] needs a request")
        responses = step.get("responses", [{}])
        if not isinstance(responses, list) or not responses or not all(isinstance(r, dict) for r in responses):
            raise problem(f"steps[{index}].responses must be a non-empty array of response objects")
    first = steps[0]["request"]
    if not isinstance(first, dict) or first.get("cmd") != "new":
        raise problem("the first step must be a new request (every vector starts from a fresh instance)")
    return data


def check_expectations(vector: Vector) -> None:
    """Raise VectorError unless every step of ``vector`` carries the responses a runner compares with."""
    for index, step in enumerate(vector.steps):
        if "responses" not in step:
            raise VectorError(
                f"{vector.path}: steps[{index}] has no responses (run: tool-call-closure vectors, to fill them in)"
            )


def load_vectors(directory: Path | None = None) -> list[Vector]:
    """Every vector under ``directory`` (default: the shipped vectors), sorted by path."""
    directory = directory if directory is not None else default_vectors_dir()
    vectors = []
    seen: dict[str, Path] = {}
    for path in _vector_files(directory):
        try:
            data = json.loads(path.read_bytes().decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise VectorError(f"{path}: not UTF-8 text (byte {exc.start})") from None
        except RecursionError:
            raise VectorError(f"{path}: nested too deeply to parse") from None
        except ValueError as exc:
            raise VectorError(f"{path}: not JSON: {exc}") from None
        if nesting_depth(data, MAX_VECTOR_DEPTH + 1) > MAX_VECTOR_DEPTH:
            raise VectorError(f"{path}: nests deeper than {MAX_VECTOR_DEPTH} levels (requests may nest {MAX_DEPTH})")
        _check_source(path, data)
        if data["id"] in seen:
            raise VectorError(f"{path}: id {data['id']!r} is already used by {seen[data['id']]}")
        seen[data["id"]] = path
        vectors.append(Vector(path, data))
    return vectors


def _settlement_events(value: Any, events: set[str]) -> None:
    """The call events evidenced by the settlements inside a response value."""
    if isinstance(value, list):
        for item in value:
            _settlement_events(item, events)
    elif isinstance(value, dict):
        if value.get("provenance") == "synthetic" and isinstance(value.get("status"), str):
            events.add(f"synthesize_{value['status']}")
        if value.get("accepted") is True and isinstance(value.get("settlement"), dict):
            events.add(f"report_{value['settlement'].get('status')}")
        for item in value.values():
            _settlement_events(item, events)


# Diagnostic reasons that no row rejects with: recorded by an accepted settlement (media_moved, D26).
_RECORDED_ONLY: Final = frozenset(TABLE.reasons) - {
    r.result.name for r in TABLE.transitions if r.result is not None and r.result.kind == "reject"
}


def _covers(trace: list[str], steps: list[dict[str, Any]]) -> dict[str, list[str]]:
    reasons: set[str] = set()
    errors: set[str] = set()
    kinds: set[str] = set()
    events: set[str] = set()
    for step in steps:
        for response in step["responses"]:
            ok = response.get("ok")
            _settlement_events(ok, events)
            if isinstance(ok, dict) and ok.get("accepted") is False and isinstance(ok.get("reason"), str):
                reasons.add(ok["reason"])
            if isinstance(ok, dict) and isinstance(ok.get("diagnostics"), list):  # a reason no rejection gives (D26)
                reasons.update(d.get("reason") for d in ok["diagnostics"] if d.get("reason") in _RECORDED_ONLY)
            error = response.get("error")
            if isinstance(error, dict):
                kinds.add(str(error.get("kind")))
                code = error_code(str(error.get("kind")), str(error.get("message")))
                if code is not None:
                    errors.add(code)
    return {
        "rows": sorted(set(trace)),
        "events": sorted(events),
        "reasons": sorted(reasons),
        "errors": sorted(errors),
        "kinds": sorted(kinds),
    }


def generate(data: dict[str, Any]) -> dict[str, Any]:
    """The vector ``data`` with responses, coverage and hash filled in by running it on the reference."""
    trace: list[str] = []
    subject = InProcessSubject(trace=trace)
    steps = []
    for step in data["steps"]:
        steps.append({"request": step["request"], "responses": subject.send(_sequential(step["request"]))})
    allowed = _allowed(steps)
    result = {
        "format": VECTOR_FORMAT,
        "id": data["id"],
        "description": data["description"],
        "origin": data["origin"],
        "tags": sorted(set(data.get("tags", []))),
        "requires": sorted(set(data.get("requires", []))),
        "steps": steps,
        "covers": _covers(trace, steps),
        "sha256": canonical_hash(data["id"], steps, allowed),
    }
    if allowed is not None:
        result["allowed"] = allowed
    result["requires"] = sorted({*result["requires"], *required_capabilities(s["request"] for s in steps)})
    return result


def _sequential(request: Any) -> Any:
    """A scenario's request run in program order (the coverage run): without its ``agent``."""
    return {k: v for k, v in request.items() if k != "agent"} if isinstance(request, dict) else request


def _allowed(steps: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A concurrent scenario's allowed outcomes (:func:`.agents.allowed_outcomes`); its steps get the first."""
    if not any(request_agent(step["request"]) is not None for step in steps):
        return None
    outcomes = allowed_outcomes([step["request"] for step in steps])
    varying = [i for i in range(len(steps)) if any(o[i] != outcomes[0][i] for o in outcomes)]
    for step, lines in zip(steps, outcomes[0], strict=True):
        step["responses"] = lines
    return {"steps": varying, "outcomes": [[outcome[i] for i in varying] for outcome in outcomes]}


def required_capabilities(requests: Iterable[Any]) -> set[str]:
    """The capabilities a subject needs to run ``requests`` (spec/protocol.md, Capabilities).

    Observed, never claimed: ``hook`` for a ``$hook`` tag, ``tamper`` for a ``tamper`` request, ``turn-guard``
    (:func:`uses_turn_guard`), ``gemini-export`` and ``bedrock-export`` for a call of those methods (a hook's
    nested requests included), ``export-options`` for such a call given options (:mod:`.export_options`),
    ``content-parts`` for a ``$parts`` tag, ``content-diagnostics`` for a ``new`` whose options name a flag
    option (``textOnlyToolResults``, D26), ``undefined-properties`` for a member
    that is ``{"$undefined":true}`` (where protocol v1 as first published refused it), and ``nesting-limit``
    for a request line nested deeper than :data:`~.serve.MAX_DEPTH`.  A request given as text is read as the
    subject reads it.
    """
    found: set[str] = set()
    given = list(requests)
    text = _canonical(given)
    if '"$hook"' in text:  # a request given as text is not searched: it names no hook by accident
        found.add("hook")
    if '"$parts"' in text:
        found.add("content-parts")
    parsed: list[Any] = []
    for request in given:
        if isinstance(request, str):
            try:
                request = parse_request_line(request)
            except (ValueError, RecursionError):
                continue
        if nesting_depth(request, MAX_DEPTH + 1) > MAX_DEPTH:
            found.add("nesting-limit")
        if isinstance(request, dict) and request.get("cmd") == "tamper":
            found.add("tamper")
        if _names_a_flag(request):
            found.add("content-diagnostics")
        if request_agent(request) is not None:
            found.add("agents")
        parsed.append(request)
    if uses_turn_guard(parsed):
        found.add("turn-guard")
    pending: list[Any] = list(parsed)
    while pending:  # iterative: a request may nest as deep as the protocol allows
        value = pending.pop()
        if isinstance(value, dict):
            if value.get("cmd") == "call" and value.get("method") in METHOD_CAPABILITIES:
                found.add(METHOD_CAPABILITIES[value["method"]])
            if uses_export_options(value):
                found.add("export-options")
            if _has_undefined_member(value):
                found.add("undefined-properties")
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
    return found


def _names_a_flag(request: Any) -> bool:
    """Whether ``request`` is a ``new`` whose options have a member named after a flag option (D26)."""
    options = request.get("options") if isinstance(request, dict) and request.get("cmd") == "new" else None
    return isinstance(options, dict) and any(flag.id in options for flag in TABLE.flags)


def _is_undefined_tag(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and "$undefined" in value


def _has_undefined_member(request: dict[str, Any]) -> bool:
    """Whether ``request`` (a ``new`` or a ``call``) gives ``{"$undefined":true}`` as a member where the
    capability ``undefined-properties`` allows it (:data:`~.serve.ABSENT_MEMBERS`, ``new``'s options)."""

    def members(value: Any) -> bool:
        return isinstance(value, dict) and not _is_tag(value) and any(map(_is_undefined_tag, value.values()))

    if request.get("cmd") == "new":
        return members(request.get("options"))
    args = request.get("args")
    if request.get("cmd") != "call" or not isinstance(args, list):
        return False
    for index, arg in enumerate(args):
        place = ABSENT_MEMBERS.get((request.get("method"), index))  # type: ignore[arg-type]
        if place == "object" and members(arg):
            return True
        if place == "entries" and isinstance(arg, list) and any(map(members, arg)):
            return True
    return False


def _is_tag(value: dict[str, Any]) -> bool:
    return len(value) == 1 and next(iter(value)).startswith("$")


def uses_turn_guard(requests: Iterable[Any]) -> bool:
    """Whether any of ``requests`` (a hook's nested requests included) needs the ``turn-guard`` capability: a
    ``turnToken`` call, or a ``begin`` whose second argument is an object with a ``turn`` member."""
    pending: list[Any] = list(requests)
    while pending:  # iterative: a vector's requests may nest as deep as the protocol allows
        value = pending.pop()
        if isinstance(value, dict):
            if value.get("cmd") == "call" and value.get("method") == "turnToken":
                return True
            args = value.get("args") if value.get("cmd") == "call" and value.get("method") == "begin" else None
            if isinstance(args, list) and len(args) > 1 and isinstance(args[1], dict) and "turn" in args[1]:
                return True
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
    return False


def render(data: dict[str, Any]) -> str:
    """The committed text of a vector: one line per request and per response line, ASCII-only JSON
    (lone surrogates and control characters survive any editor), so diffs read step by step."""

    def compact(value: Any) -> str:
        return json.dumps(value, ensure_ascii=True, separators=(", ", ": "))

    lines = ["{"]
    for key, value in data.items():
        if key == "allowed":  # one line per outcome
            lines.append(f' "allowed": {{"steps": {compact(value["steps"])}, "outcomes": [')
            lines += [f"   {compact(outcome)}," for outcome in value["outcomes"]]
            lines[-1] = lines[-1].rstrip(",")
            lines.append(" ]},")
            continue
        if key != "steps":
            lines.append(f" {compact(key)}: {compact(value)},")
            continue
        lines.append(' "steps": [')
        for index, step in enumerate(value):
            lines.append(f'  {{"request": {compact(step["request"])},')
            if "responses" in step:
                lines[-1] += ' "responses": ['
                lines += [f"    {compact(response)}," for response in step["responses"]]
                lines[-1] = lines[-1].rstrip(",")
                lines.append("  ]}" + ("," if index < len(value) - 1 else ""))
            else:
                lines[-1] = lines[-1].rstrip(",") + "}" + ("," if index < len(value) - 1 else "")
        lines.append(" ],")
    lines[-1] = lines[-1].rstrip(",")
    lines.append("}")
    return "\n".join(lines) + "\n"


def manifest(vectors: Iterable[Vector], directory: Path) -> dict[str, Any]:
    entries = [
        {"id": v.id, "path": v.path.relative_to(directory).as_posix(), "sha256": v.sha256, "tags": v.tags}
        for v in sorted(vectors, key=lambda v: v.id)
    ]
    return {"format": MANIFEST_FORMAT, "spec_sha256": spec_hash(), "count": len(entries), "vectors": entries}


def regenerate(directory: Path | None = None, *, write: bool = True) -> list[Path]:
    """Regenerate every vector (and the manifest) under ``directory``; return the files whose text changed.

    With ``write=False`` nothing is written: the result is the list of drifted files.
    """
    directory = directory if directory is not None else default_vectors_dir()
    changed: list[Path] = []
    fresh: list[Vector] = []
    for vector in load_vectors(directory):
        data = generate(vector.data)
        text = render(data)
        if vector.path.read_text(encoding="utf-8") != text:
            changed.append(vector.path)
            if write:
                vector.path.write_text(text, encoding="utf-8")
        fresh.append(Vector(vector.path, data))
    manifest_path = directory / "manifest.json"
    text = json.dumps(manifest(fresh, directory), indent=1, ensure_ascii=True) + "\n"
    if not manifest_path.is_file() or manifest_path.read_text(encoding="utf-8") != text:
        changed.append(manifest_path)
        if write:
            manifest_path.write_text(text, encoding="utf-8")
    return changed


def drift(directory: Path | None = None) -> list[Path]:
    """The committed vector files that differ from what the reference produces now."""
    return regenerate(directory, write=False)
