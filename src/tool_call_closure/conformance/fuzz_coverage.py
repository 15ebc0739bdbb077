"""What a fuzz scenario exercised: coverage keys, and the run's coverage by dimension.

Theory of operation
-------------------
After every request the explorer (:mod:`.fuzz_explore`) records what happened
on the reference as coverage keys: the table rows that fired × the run state
before the request (``row:settle.commit.record@open``), the call events
(``event:synthetic_cancelled``), rejection reasons, error kinds and codes,
accepted settlements by status, nested responses, the positions where the
request put caller code (``hook:settle.arg2.message``), and for the exports,
each format × (empty, synthetic, reported, its error flag).  The explorer
steers by how many new keys each kind of request found lately;
:func:`coverage_summary` prints a run's keys by dimension, the rarest first.

The export methods live here because coverage names them: the three every
subject has (the original's), and the reference's two more (deviation D8),
drawn only from a subject that has them (:func:`.fuzz.probe_exports`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any, Final

from tool_call_closure.conformance.compare import error_code
from tool_call_closure.conformance.serve import METHOD_CAPABILITIES
from tool_call_closure.machine.table import TABLE

__all__ = [
    "ALL_EXPORTS",
    "ERROR_MARKS",
    "EXPORTS",
    "PROBED_EXPORTS",
    "coverage_keys",
    "coverage_summary",
    "has_error_mark",
    "hook_positions",
]

ALL_EXPORTS: Final = tuple(method["protocol"] for method in TABLE.operations["export"].methods)
"""Every export method of the table, in table order."""
EXPORTS: Final = tuple(method for method in ALL_EXPORTS if method not in METHOD_CAPABILITIES)
"""The exports every subject has (protocol v1's, the original's): always drawn."""
PROBED_EXPORTS: Final = tuple(method for method in ALL_EXPORTS if method in METHOD_CAPABILITIES)
"""The exports behind a capability (Gemini and Bedrock: deviation D8; any added since): drawn only when the
subject has them (:func:`.fuzz.probe_exports`)."""


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


# The error mark of each export method that has one, as the table declares it (spec/machine.json).
ERROR_MARKS: Final[dict[str, str]] = {
    method["protocol"]: method["error_mark"] for method in TABLE.operations["export"].methods if "error_mark" in method
}


def has_error_mark(entry: Any, mark: str) -> bool:
    """Does an export entry carry ``mark``: ``a.b.c`` (the key path is present) or ``a.b=JSON`` (with that value)?"""
    path, equals, expected = mark.partition("=")
    value = entry
    for key in path.split("."):
        if not isinstance(value, dict) or key not in value:
            return False
        value = value[key]
    return not equals or (type(value) is type(json.loads(expected)) and value == json.loads(expected))


def _error_flag(method: str, entry: Any) -> str | None:
    """``error_mark`` when the method's format marks errors and this entry carries the mark."""
    mark = ERROR_MARKS.get(method)
    return "error_mark" if mark is not None and has_error_mark(entry, mark) else None


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
