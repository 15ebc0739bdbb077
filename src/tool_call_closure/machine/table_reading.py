"""Reading the table's JSON: each reader checks one value's type and names its path when it is wrong.

Theory of operation
-------------------
:func:`~tool_call_closure.machine.table.parse_table` reads ``spec/machine.json``
with these readers only, so every refusal has the same form:
``invalid transition table: <path>: <problem>`` (a :class:`TableError` with
code ``table_invalid``), where the path names the member
(``transitions.settle.admit.stale.guard``).  A reader returns the value it
checked, so parsing reads as a sequence of checked fields.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tool_call_closure.errors import TableError

__all__ = [
    "bool_at",
    "catalogue_at",
    "fail",
    "field",
    "ids_at",
    "known",
    "list_at",
    "obj_at",
    "obj_list",
    "one_of",
    "positive_int",
    "str_at",
]


def fail(where: str, problem: str) -> TableError:
    return TableError(f"invalid transition table: {where}: {problem}", code="table_invalid")


def obj_at(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise fail(where, "must be an object")
    return value


def list_at(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise fail(where, "must be an array")
    return value


def str_at(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise fail(where, "must be a non-empty string")
    return value


def bool_at(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise fail(where, "must be true or false")
    return value


def field(obj: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in obj:
        raise fail(where, f"missing field {key!r}")
    return obj[key]


def ids_at(items: Sequence[Mapping[str, Any]], where: str, key: str = "id") -> list[str]:
    seen: list[str] = []
    for index, item in enumerate(items):
        ident = str_at(field(item, key, f"{where}[{index}]"), f"{where}[{index}].{key}")
        if ident in seen:
            raise fail(where, f"duplicate id {ident!r}")
        seen.append(ident)
    return seen


def known(name: str, known: Sequence[str] | frozenset[str] | Mapping[str, Any], where: str, what: str) -> str:
    if name not in known:
        raise fail(where, f"unknown {what} {name!r}")
    return name


def catalogue_at(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    return tuple(str_at(v, f"{where}[{i}]") for i, v in enumerate(list_at(value, where)))


def obj_list(top: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    return [obj_at(item, f"{key}[{i}]") for i, item in enumerate(list_at(field(top, key, "table"), key))]


def positive_int(value: Any, where: str) -> int:
    if type(value) is not int or value < 1:
        raise fail(where, "must be a positive integer")
    return value


def one_of(value: Any, allowed: tuple[str, ...], where: str) -> str:
    if value not in allowed:
        raise fail(where, f"must be one of {', '.join(allowed)}")
    return str(value)
