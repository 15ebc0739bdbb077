"""A call's arguments, read with bounded work: the one JSON rule, and the one rule that builds a :class:`.ToolCall`.

Theory of operation
-------------------
Arguments are JSON *text* in some APIs (OpenAI Chat and Responses, streamed
Anthropic and Bedrock) and already-parsed *values* in others (Anthropic
``input``, Gemini ``args``, Bedrock ``input``).  Either way a call is
runnable only when its arguments are exactly what the model sent, as a JSON
value of bounded size and depth; anything else is that call's ``problem``
(the call is announced and answered with an error, never run), never an
exception that loses the whole turn:

* **Text** (:func:`parse_arguments`): strict JSON (no ``NaN``/``Infinity``,
  no number too large for a float), whitespace around it allowed, the empty
  text read as ``{}`` (a tool without parameters; Anthropic documents it for
  streamed input).  Before ``json.loads`` (which recurses, and raises
  ``RecursionError`` about 1,000 levels down), :func:`nests_deeper` measures
  the nesting with a regular expression and a counter, no recursion: text
  nested deeper than :data:`MAX_ARGUMENT_DEPTH` levels, or longer than
  :data:`MAX_ARGUMENT_BYTES` UTF-8 bytes, is a problem named with its limit.
* **Values** (:func:`parsed_arguments`): one walk with an explicit stack
  (:func:`_survey`) first stops at a level past the depth limit, at a list
  or object held in two places (JSON has no sharing: 30 levels of one list
  held twice are a few hundred bytes to hold and 2**30 leaves to write, so
  the walk visits each container once and its work is the value's own
  size), at a float that is not finite, and once the text would pass the
  size limit.  Then the library's iterative ``json_stringify`` writes the
  text, with :data:`MAX_ARGUMENT_BYTES` as its budget for what the walk
  could not see (an object's ``model_dump``, a mapping type).  Caller code
  that raises while the value is read makes a problem too, naming the
  exception's type.  Plain JSON data is kept as the SDK parsed it; any
  other value (a tuple, a ``str`` subclass, an SDK object) is replaced by
  the parse of its JSON text, so no caller object reaches a tool.
* **Anything else** where text belongs (an object sent as Chat's
  ``arguments``, a list fragment) is a problem naming what it is.

:func:`make_call` is the one place a :class:`.ToolCall` is built from what a
provider sent: the id and the name must be text (a call whose id is not
text has no id: :meth:`.Ingested.of` reports it as skipped, naming why), and
the first problem found — a field of the wrong type, then the caller's
reason (a cut stream, a truncated turn), then the arguments' own — is the
call's ``problem``; a call with a problem has ``arguments`` ``None``.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Final, cast

from tool_call_closure.ecma_json import json_stringify
from tool_call_closure.errors import LimitError, ToolCallClosureError
from tool_call_closure.providers.calls import ToolCall
from tool_call_closure.providers.reading import described, text

__all__ = [
    "MAX_ARGUMENT_BYTES",
    "MAX_ARGUMENT_DEPTH",
    "arguments_text",
    "make_call",
    "nests_deeper",
    "parse_arguments",
    "parsed_arguments",
]

MAX_ARGUMENT_DEPTH: Final = 128
"""The deepest nesting of arrays and objects a runnable call's arguments may have (serde_json's default limit).

Real tool arguments nest a few levels; ``json.loads`` and every recursive
reader after it (a tool's own code, ``repr``) fail about 1,000 levels down.
"""
MAX_ARGUMENT_BYTES: Final = 4 * 1024 * 1024
"""The longest JSON text, in UTF-8 bytes, a runnable call's arguments may have.

Far above any model's output limit (a few hundred KB); it bounds the work
spent on a value that expands when written (shared sublists).
"""

# A JSON string literal (an unterminated one runs to the end of the text) or one bracket: what nests_deeper counts.
_TOKEN: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', re.DOTALL)


def nests_deeper(text: str, limit: int = MAX_ARGUMENT_DEPTH) -> bool:
    """Whether the arrays and objects of JSON ``text`` nest more than ``limit`` levels deep.

    Brackets inside string literals do not count.  No recursion and no
    parse: one pass of a regular expression that stops at the first level
    past the limit, so any depth takes time linear in the text.  Text with
    at most ``limit`` brackets in all cannot be deeper and is not scanned.
    For text that is not JSON the answer is still bounded, and the parse
    that follows reports the error.
    """
    if text.count("[") + text.count("{") <= limit:
        return False
    depth = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            if depth > limit:
                return True
        elif token in ("]", "}"):
            depth -= 1
    return False


def _utf8_length(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite_float(literal: str) -> float:
    number = float(literal)
    if math.isinf(number):
        raise ValueError(f"the number {literal[:40]} is too large for a float")
    return number


def _bounds_problem(text: str) -> str | None:
    size = _utf8_length(text)
    if size > MAX_ARGUMENT_BYTES:
        return f"the arguments are {size} bytes of JSON text, more than the limit of {MAX_ARGUMENT_BYTES}"
    if nests_deeper(text):
        return f"the arguments nest deeper than the limit of {MAX_ARGUMENT_DEPTH} levels"
    return None


def parse_arguments(arguments: str) -> tuple[Any, str | None]:
    """``(parsed, None)`` for valid JSON text within the limits (``""`` gives ``{}``), ``(None, problem)`` otherwise."""
    if arguments.strip() == "":
        return {}, None
    problem = _bounds_problem(arguments)
    if problem is not None:
        return None, problem
    try:
        return json.loads(arguments, parse_constant=_refuse_constant, parse_float=_finite_float), None
    except ValueError as error:  # json.JSONDecodeError is a ValueError; so is an int past Python's digit limit
        return None, f"the arguments are not valid JSON ({str(error)[:200]})"


_SCALARS: Final = (str, int, bool, type(None))
_TOO_DEEP: Final = f"the arguments nest deeper than the limit of {MAX_ARGUMENT_DEPTH} levels"
_TOO_LARGE: Final = f"the arguments' JSON text is more than the limit of {MAX_ARGUMENT_BYTES} bytes"


def _survey(value: object) -> tuple[str | None, bool]:
    """``(problem, plain)``: one walk of a parsed value, with an explicit stack, before any text is written.

    It stops at the first level past :data:`MAX_ARGUMENT_DEPTH`, at the first
    container met twice (JSON has no sharing: one list held in two places is
    written twice, and 30 levels of that are 2**30 leaves — the walk visits
    each container once, so its work is the value's own size), at a float
    that is not finite, and once the text it would write passes
    :data:`MAX_ARGUMENT_BYTES`.  ``plain`` says whether the value is plain
    JSON data (exact dicts with text keys, lists, texts, ints, bools,
    ``None``, floats); any other object is left to ``json_stringify``'s
    projection, within its budget.
    """
    stack: list[tuple[Any, int]] = [(value, 1)]
    seen: set[int] = set()
    size = 0
    plain = True
    while stack:
        item, depth = stack.pop()
        cls = type(item)
        if cls in (dict, list, tuple):
            if depth > MAX_ARGUMENT_DEPTH:
                return _TOO_DEEP, False
            if id(item) in seen:
                return "the arguments hold one list or object in two places (JSON text has no sharing)", False
            seen.add(id(item))
            members = list(cast(dict[Any, Any], item).items()) if cls is dict else [(None, m) for m in item]
            plain = plain and cls is not tuple and all(type(key) is str for key, _ in members if cls is dict)
            size += 2 + sum(len(key) + 3 for key, _ in members if type(key) is str) + len(members)
            stack += [(member, depth + 1) for _, member in members]
        elif cls is float and not math.isfinite(cast(float, item)):
            return "the arguments hold a number that is not finite (NaN or infinity): JSON has none", False
        else:
            size += len(item) + 2 if cls is str else 1
            plain = plain and (cls in _SCALARS or cls is float)
        if size > MAX_ARGUMENT_BYTES:
            return _TOO_LARGE, False
    return None, plain


def _written(arguments: object) -> tuple[str, str | None, bool]:
    """``(text, problem, plain)``: the JSON text of a parsed value, or ``""`` and why it has none within the limits."""
    problem, plain = _survey(arguments)
    if problem is not None:
        return "", problem, False
    try:
        written = json_stringify(arguments, MAX_ARGUMENT_BYTES)
    except LimitError:
        return "", _TOO_LARGE, False
    except ToolCallClosureError as error:
        return "", f"the arguments have no JSON form ({error})", False
    except Exception as error:  # noqa: BLE001 - caller code (a model_dump, a mapping) raised: that call's problem
        return "", f"reading the arguments raised {type(error).__qualname__}", False
    if not plain and nests_deeper(written):  # a projection (a model_dump …) may nest what the survey did not see
        return "", _TOO_DEEP, False
    return written, None, plain


def arguments_text(arguments: object) -> tuple[str, str | None]:
    """The JSON text of arguments sent already parsed (Anthropic ``input``, Gemini ``args``, Bedrock ``input``).

    ``(text, None)``, or ``("", problem)`` when the value has no JSON form
    within the limits (a cycle or a shared part, a set, too large, too deep,
    a float that is not finite) or writing it ran caller code that raised.
    """
    written, problem, _ = _written({} if arguments is None else arguments)
    return written, problem


def parsed_arguments(arguments: object) -> tuple[Any, str, str | None]:
    """``(arguments, text, problem)`` of arguments sent already parsed; a missing value is ``{}``.

    Plain JSON data is kept as it came (the very object the SDK parsed);
    anything else — a tuple, a subclass, a mapping type, an SDK object — is
    replaced by the parse of its JSON text, so a runnable call never carries
    caller objects, and its ``arguments`` are exactly its ``arguments_json``.
    """
    if arguments is None:
        return {}, "{}", None
    written, problem, plain = _written(arguments)
    if problem is not None:
        return None, written, problem
    return (arguments if plain else json.loads(written)), written, None


def text_arguments(arguments: object) -> tuple[Any, str, str | None]:
    """``(arguments, text, problem)`` of arguments sent as JSON text; a missing text is ``""`` (``{}``)."""
    if arguments is None:
        return {}, "", None
    as_text = text(arguments)
    if as_text is None:
        written, _ = arguments_text(arguments)
        return None, written, f"the arguments are {described(arguments)}, not JSON text"
    parsed, problem = parse_arguments(as_text)
    return parsed, as_text, problem


def make_call(
    provider: str,
    raw_id: object,
    raw_name: object,
    arguments: tuple[Any, str, str | None],
    problem: str | None = None,
) -> ToolCall:
    """The :class:`.ToolCall` of what a provider sent: ids and names must be text; the first problem wins.

    ``arguments`` is :func:`text_arguments` or :func:`parsed_arguments` of the
    sent value; ``problem`` is the caller's reason the call cannot run (a cut
    stream, a truncated turn), if any.
    """
    call_id, name = text(raw_id), text(raw_name)
    found = None
    if raw_id is not None and call_id is None:
        found = f"the id is {described(raw_id)}, not text"
    elif raw_name is not None and name is None:
        found = f"the name is {described(raw_name)}, not text"
    parsed, written, invalid = arguments
    found = found or problem or invalid
    return ToolCall(call_id or "", name or "", None if found else parsed, written, found, provider)
