"""What the table and the records' layout fix, folded into the method copies (``machine.specialize``).

Theory of operation
-------------------
A method copy (``method_succeed`` …) runs only on the machine compiled from
the very table it was written from: the public class calls the copies only
when its machine is the checked-in module's, and that module names the
table's hash, which the drift test holds equal to ``spec/machine.json``.  So
what that machine holds is known when the copy is written, and reading it
at run time is work the copy can leave out:

* ``closure._machine`` is set when the instance is built and never written
  again, nor are the machine's own attributes: a local assigned one of them
  is read as it (:func:`is_machine_read`, used by the specializer's
  propagation), so the reads below meet the pattern;
* ``closure._machine.initial_call_state``, ``.texts[k]``,
  ``.effect_run_to[k]``, ``.call_events[e][s]`` and ``k in .closed`` are
  the table's constants;
* ``closure._machine.effect_call_next[e].get((state, s))`` for a fixed
  status ``s`` is the one move the table gives a call of that status under
  ``e``: ``(to if state == from else None)``;
* a record's field positions (``semantics_.STATUS`` …) and
  ``MAX_SAFE_INTEGER`` are integers; and a field read from a record the
  copy has just built, ``settlement[0]`` after ``settlement = ("success",
  …)``, is that element — as is ``settlement is not None`` true.

A key the table lacks is left as it is: the copy then fails at run time as
the generated ``enter_<op>`` would.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Mapping
from typing import Any, Final

from tool_call_closure.machine.inliner import module_alias
from tool_call_closure.machine.reading import MAX_SAFE_INTEGER
from tool_call_closure.machine.table import Table
from tool_call_closure.values import (
    CALL_SETTLEMENT,
    CALL_STATE,
    CODE,
    CONTENT,
    MESSAGE,
    PROVENANCE,
    SIDE_EFFECT_STATE,
    STATUS,
)

__all__ = ["is_closure_read", "is_machine_read", "record_fields", "table_facts"]

# The semantics' integer constants the copies read through the module alias (the semantics import them from
# values and reading: tests/test_lean.py holds them the same objects).
_SEMANTICS: Final = module_alias("tool_call_closure.machine.semantics")
_INTEGERS: Final[Mapping[str, int]] = {
    "CALL_STATE": CALL_STATE,
    "CALL_SETTLEMENT": CALL_SETTLEMENT,
    "STATUS": STATUS,
    "PROVENANCE": PROVENANCE,
    "CONTENT": CONTENT,
    "CODE": CODE,
    "MESSAGE": MESSAGE,
    "SIDE_EFFECT_STATE": SIDE_EFFECT_STATE,
    "MAX_SAFE_INTEGER": MAX_SAFE_INTEGER,
}


def is_closure_read(node: ast.AST, attribute: str) -> bool:
    """A read of ``closure.<attribute>`` (the instance's own field, as the generated operations name it)."""
    return (
        isinstance(node, ast.Attribute)
        and node.attr == attribute
        and isinstance(node.value, ast.Name)
        and node.value.id == "closure"
        and isinstance(node.ctx, ast.Load)
    )


def is_machine_read(node: ast.AST) -> bool:
    """``closure._machine`` or one of its attributes (``closure._machine.texts``): written once, when built."""
    if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and _is_machine(node.value):
        return True
    return _is_machine(node)


def _is_machine(node: ast.AST) -> bool:
    return is_closure_read(node, "_machine")


def _machine_attribute(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == name and _is_machine(node.value)


def _key(node: ast.expr) -> tuple[bool, Any]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return True, node.value
    return False, None


class _TableFacts(ast.NodeTransformer):
    def __init__(self, table: Table) -> None:
        self.table = table
        self.moves = table.effect_call_moves()
        self.events = table.effect_call_events()
        self.run_to = table.effect_run_targets()

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        node = self.generic_visit(node)  # type: ignore[assignment]
        if _machine_attribute(node, "initial_call_state"):
            return ast.copy_location(ast.Constant(self.table.initial_call_state), node)
        if isinstance(node.value, ast.Name) and node.value.id == _SEMANTICS and node.attr in _INTEGERS:
            return ast.copy_location(ast.Constant(_INTEGERS[node.attr]), node)
        return node

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        node = self.generic_visit(node)  # type: ignore[assignment]
        known, key = _key(node.slice)
        if not known or not isinstance(node.ctx, ast.Load):
            return node
        value: str | None = None
        if _machine_attribute(node.value, "texts"):
            value = self.table.texts.get(key)
        elif _machine_attribute(node.value, "effect_run_to"):
            value = self.run_to.get(key)
        elif isinstance(node.value, ast.Subscript) and _machine_attribute(node.value.value, "call_events"):
            known_effect, effect = _key(node.value.slice)
            value = self.events.get(effect, {}).get(key) if known_effect else None
        return node if value is None else ast.copy_location(ast.Constant(value), node)

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        node = self.generic_visit(node)  # type: ignore[assignment]
        if len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)):
            known, key = _key(node.left)
            if known and _machine_attribute(node.comparators[0], "closed"):
                inside = key in self.table.closed_run_states
                return ast.copy_location(ast.Constant(inside == isinstance(node.ops[0], ast.In)), node)
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        node = self.generic_visit(node)  # type: ignore[assignment]
        function = node.func
        if not (
            isinstance(function, ast.Attribute)
            and function.attr == "get"
            and isinstance(function.value, ast.Subscript)
            and _machine_attribute(function.value.value, "effect_call_next")
            and len(node.args) == 1
            and not node.keywords
        ):
            return node
        known_effect, effect = _key(function.value.slice)
        pair = node.args[0]
        if not (known_effect and effect in self.moves and isinstance(pair, ast.Tuple) and len(pair.elts) == 2):
            return node
        state, status = pair.elts
        known_status, fixed = _key(status)
        if not known_status or not isinstance(state, (ast.Name, ast.Constant)):
            return node  # (a state read with a side effect is left where it is)
        moves = {source: to for (source, given), to in self.moves[effect].items() if given == fixed}
        known_state, source = _key(state)
        if known_state:
            return ast.copy_location(ast.Constant(moves.get(source)), node)
        if not moves:
            return ast.copy_location(ast.Constant(None), node)
        if len(moves) > 1:
            return node
        ((source, to),) = moves.items()
        test = ast.Compare(copy.deepcopy(state), [ast.Eq()], [ast.Constant(source)])
        return ast.copy_location(ast.IfExp(test, ast.Constant(to), ast.Constant(None)), node)


def table_facts(table: Table) -> ast.NodeTransformer:
    """A rewriter folding, in place, what ``table`` fixes of the machine's reads in a method copy."""
    return _TableFacts(table)


class _Fields(ast.NodeTransformer):
    def __init__(self, name: str, record: ast.Tuple) -> None:
        self.name, self.record = name, record

    def _is_record(self, node: ast.AST) -> bool:
        return isinstance(node, ast.Name) and node.id == self.name and isinstance(node.ctx, ast.Load)

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        node = self.generic_visit(node)  # type: ignore[assignment]
        if self._is_record(node.value) and isinstance(node.slice, ast.Constant) and isinstance(node.ctx, ast.Load):
            position = node.slice.value
            if type(position) is int and 0 <= position < len(self.record.elts):
                element = self.record.elts[position]
                if isinstance(element, ast.Constant):
                    return ast.copy_location(ast.Constant(element.value), node)
        return node

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        node = self.generic_visit(node)  # type: ignore[assignment]
        if len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot)) and self._is_record(node.left):
            other = node.comparators[0]
            if isinstance(other, ast.Constant) and other.value is None:  # a tuple display is never None
                return ast.copy_location(ast.Constant(isinstance(node.ops[0], ast.IsNot)), node)
        return node


def record_fields(name: str, record: ast.Tuple) -> ast.NodeTransformer:
    """A rewriter reading ``name[k]`` as ``record``'s element k where that is a constant, and ``name`` as not None."""
    return _Fields(name, record)
