"""Reading provider objects without importing a provider SDK: one duck-typing rule and one JSON rule.

Theory of operation
-------------------
Ingestion accepts both the official SDK objects (pydantic models for openai,
anthropic and google-genai) and the equivalent plain dicts (what the HTTP API
returns, what boto3 returns for Bedrock, what a test writes by hand).  Both are
read with :func:`field`: a ``Mapping`` by key, anything else by attribute; a
missing field or an explicit ``None`` reads as ``None``.  No SDK is imported
at run time, so the library keeps zero runtime dependencies.

Arguments are JSON text in some APIs (OpenAI Chat and Responses, streamed
Anthropic and Bedrock) and already-parsed objects in others.  :func:`parse_arguments`
is the one rule for text: strict JSON (no ``NaN``/``Infinity``), whitespace
around it allowed, the empty text read as ``{}`` (a tool without parameters;
Anthropic documents it for streamed input); anything else is a *problem*
reported on the call, never an exception.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

from tool_call_closure.ecma import json_stringify
from tool_call_closure.errors import ToolCallClosureError, UsageError

__all__ = ["arguments_text", "field", "incomplete_problem", "items", "parse_arguments"]

_NOT_A_SEQUENCE: Final = (str, bytes, bytearray)


def field(value: object, key: str) -> Any:
    """``value[key]`` for a mapping, ``value.key`` for anything else; ``None`` when missing."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        return cast(Mapping[str, Any], value).get(key)
    return getattr(value, key, None)


def items(value: object) -> list[Any]:
    """A list or tuple field as a list; ``None`` (a missing field) as ``[]``; anything else raises ``TypeError``."""
    if value is None:
        return []
    if isinstance(value, Sequence) and not isinstance(value, _NOT_A_SEQUENCE):
        return list(value)
    raise UsageError(f"expected a list of provider items, got {type(value).__name__}", code="provider_value_invalid")


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_arguments(text: str) -> tuple[Any, str | None]:
    """``(parsed, None)`` for valid JSON text (``""`` gives ``{}``), ``(None, problem)`` otherwise."""
    if text.strip() == "":
        return {}, None
    try:
        return json.loads(text, parse_constant=_refuse_constant), None
    except ValueError as error:  # json.JSONDecodeError is a ValueError
        return None, f"the arguments are not valid JSON ({error})"


def arguments_text(arguments: object) -> tuple[str, str | None]:
    """The JSON text of arguments sent already parsed (Anthropic ``input``, Gemini ``args``, Bedrock ``input``).

    ``(text, None)``, or ``("", problem)`` when the value has no JSON form.
    """
    try:
        return json_stringify({} if arguments is None else arguments), None
    except ToolCallClosureError as error:
        return "", f"the arguments have no JSON form ({error})"


def incomplete_problem(stop_reason: object, ended: str = "the message stopped") -> str:
    """The ``problem`` of a streamed call that never completed: the stream was cut, or the model stopped first."""
    if stop_reason is None:
        return "the stream ended before this call was complete"
    return f"{ended} ({stop_reason}) before this call was complete"
