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
* **Values** (:func:`parsed_arguments`): the JSON text is written by the
  library's iterative ``json_stringify`` with :data:`MAX_ARGUMENT_BYTES` as
  its budget (so a cycle, a value with no JSON form, or a small value that
  expands past the budget — one list shared twice at each of 30 levels —
  stops early), then its depth is measured the same way.  Caller code the
  value runs while it is written (a ``model_dump``, a mapping's
  ``__getitem__``) that raises makes a problem too, naming the exception's
  type.  Plain JSON data is kept as the SDK parsed it; any other value (a
  tuple, a ``str`` subclass, an SDK object) is replaced by the parse of its
  JSON text, so no caller object reaches a tool.
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

from tool_call_closure.ecma import json_stringify
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


def arguments_text(arguments: object) -> tuple[str, str | None]:
    """The JSON text of arguments sent already parsed (Anthropic ``input``, Gemini ``args``, Bedrock ``input``).

    ``(text, None)``, or ``("", problem)`` when the value has no JSON form
    within the limits (a cycle, a set, too large, too deep) or writing it
    ran caller code that raised.
    """
    try:
        written = json_stringify({} if arguments is None else arguments, MAX_ARGUMENT_BYTES)
    except LimitError:
        return "", f"the arguments' JSON text is more than the limit of {MAX_ARGUMENT_BYTES} bytes"
    except ToolCallClosureError as error:
        return "", f"the arguments have no JSON form ({error})"
    except Exception as error:  # noqa: BLE001 - caller code (a model_dump, a mapping) raised: that call's problem
        return "", f"reading the arguments raised {type(error).__qualname__}"
    if nests_deeper(written):
        return "", f"the arguments nest deeper than the limit of {MAX_ARGUMENT_DEPTH} levels"
    return written, None


def _plain(value: object) -> bool | None:
    """Whether ``value`` is plain JSON data (exact dicts with text keys, lists, texts, ints, bools, ``None`` and
    finite floats); ``None`` when it holds a float that is not finite.  An explicit stack: no recursion."""
    stack = [value]
    while stack:
        item = stack.pop()
        cls = type(item)
        if cls is dict:
            for key, inner in cast(dict[Any, Any], item).items():
                if type(key) is not str:
                    return False
                stack.append(inner)
        elif cls is list:
            stack.extend(cast(list[Any], item))
        elif cls is float:
            if not math.isfinite(cast(float, item)):
                return None
        elif cls not in (str, int, bool, type(None)):
            return False
    return True


def parsed_arguments(arguments: object) -> tuple[Any, str, str | None]:
    """``(arguments, text, problem)`` of arguments sent already parsed; a missing value is ``{}``.

    Plain JSON data is kept as it came (the very object the SDK parsed);
    anything else — a tuple, a subclass, a mapping type, an SDK object — is
    replaced by the parse of its JSON text, so a runnable call never carries
    caller objects, and its ``arguments`` are exactly its ``arguments_json``.
    A float that is not finite has no JSON form: that is a problem.
    """
    if arguments is None:
        return {}, "{}", None
    written, problem = arguments_text(arguments)
    if problem is not None:
        return None, written, problem
    plain = _plain(arguments)  # bounded: the value's JSON text, just written, is within MAX_ARGUMENT_BYTES
    if plain is None:
        return None, written, "the arguments hold a number that is not finite (NaN or infinity): JSON has none"
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
