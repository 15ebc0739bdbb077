"""Reading provider objects without importing a provider SDK: one duck-typing rule, safe for any value.

Theory of operation
-------------------
Ingestion accepts both the official SDK objects (pydantic models for openai,
anthropic and google-genai) and the equivalent plain dicts (what the HTTP API
returns, what boto3 returns for Bedrock, what a test writes by hand).  Both are
read with :func:`field`: a ``Mapping`` by key, anything else by attribute; a
missing field or an explicit ``None`` reads as ``None``.  No SDK is imported
at run time, so the library keeps zero runtime dependencies.

Reading a field, listing a list and describing a value may run caller code
(a property, a ``Mapping.__getitem__``, an ``__iter__``).  When that code
raises, the reader raises :class:`.UsageError` (``provider_value_invalid``)
naming the field and the exception's type, the caller's exception chained:
a provider reader raises ``UsageError`` or nothing.  Texts are read with
:func:`text`: a ``str`` (a subclass is copied to a plain ``str``, so no
overridden method of it runs later), anything else is "not text".

The JSON rules for a call's arguments are in :mod:`.arguments`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

from tool_call_closure.errors import UsageError

__all__ = [
    "call_format",
    "described",
    "field",
    "has_field",
    "incomplete_problem",
    "int_or_none",
    "integer",
    "items",
    "plain",
    "present",
    "refuse_foreign_call",
    "refuse_foreign_event",
    "refuse_foreign_turns",
    "require_fields",
    "required_id",
    "stream_event_api",
    "text",
    "text_or_none",
]

_NOT_A_SEQUENCE: Final = (str, bytes, bytearray)


def _raised(key: str, value: object, error: Exception) -> UsageError:
    return UsageError(
        f"reading {key} of {described(value)} raised {type(error).__qualname__}", code="provider_value_invalid"
    )


def field(value: object, key: str) -> Any:
    """``value[key]`` for a mapping, ``value.key`` for anything else; ``None`` when missing.

    Caller code that raises while the field is read raises :class:`.UsageError` naming the field.
    """
    if value is None:
        return None
    try:
        if isinstance(value, Mapping):
            return cast(Mapping[str, Any], value).get(key)
        return getattr(value, key, None)
    except Exception as error:
        raise _raised(repr(key), value, error) from error


def has_field(value: object, key: str) -> bool:
    """Whether ``value`` has the field ``key`` at all (a mapping's key, an object's attribute), ``None`` or not."""
    if value is None:
        return False
    try:
        if isinstance(value, Mapping):
            return key in value
        return hasattr(value, key)
    except Exception as error:
        raise _raised(repr(key), value, error) from error


def text(value: object) -> str | None:
    """``value`` as a plain ``str`` when it is a ``str`` (a subclass is copied); ``None`` for anything else."""
    if type(value) is str:
        return value
    if isinstance(value, str):
        return str.__str__(value)  # the base method: a plain copy, whatever the subclass overrides
    return None


def integer(value: object) -> int | None:
    """``value`` as a plain ``int`` when it is an ``int`` (not a ``bool``); ``None`` for anything else."""
    if type(value) is int:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return int.__index__(value)
    return None


def text_or_none(raw: object, where: str) -> str | None:
    """``raw`` as text (:func:`text`), ``None`` when missing; anything else raises :class:`.UsageError`.

    ``where`` names the field for the message: ``"<where> is <what it is>, not text"``.
    """
    value = text(raw)
    if raw is not None and value is None:
        raise UsageError(f"{where} is {described(raw)}, not text", code="provider_value_invalid")
    return value


def int_or_none(raw: object, where: str) -> int | None:
    """``raw`` as an int (:func:`integer`), ``None`` when missing; anything else raises :class:`.UsageError`."""
    value = integer(raw)
    if raw is not None and value is None:
        raise UsageError(f"{where} is {described(raw)}, not an int", code="provider_value_invalid")
    return value


def required_id(value: object, key: str, where: str) -> str:
    """The id ``value[key]`` a preflight pairs on: a non-empty text, or :class:`.UsageError` naming ``where``.

    The provider refuses a call or a result without one too; read as
    ``None``, it would be paired with nothing, or with another ``None``.
    """
    found = text(field(value, key))
    if not found:
        raise UsageError(
            f"{where} has no {key} (text), got {described(field(value, key))}", code="provider_value_invalid"
        )
    return found


def require_fields(value: object, keys: tuple[str, ...], reader: str, expected: str) -> None:
    """Refuse ``value`` unless it has one of ``keys``: it is not what ``reader`` reads.

    :func:`field` reads a missing field as ``None``, and ingestion reads that
    as "no items", so another provider's response (or anything else) would
    otherwise read as a response without tool calls, and every call it holds
    would be dropped without a word.  Each ingest names the fields its shapes
    have; a value with none of them raises ``provider_value_invalid``, naming
    what it got.
    """
    if any(has_field(value, key) for key in keys):
        return
    raise UsageError(f"{reader} expected {expected}, got {described(value)}", code="provider_value_invalid")


# How each API's tool calls look where another API's reader could meet them: by ``type`` (Anthropic,
# Responses) or by the field that holds the call (Gemini, Bedrock, a Chat message).
_CALL_TYPES: Final = {  # type -> (the provider module, what it is)
    "tool_use": ("anthropic", "an Anthropic tool_use block"),
    "function_call": ("openai_responses", "an OpenAI Responses function_call item"),
    "function": ("openai_chat", "an OpenAI Chat tool call"),
}
_CALL_FIELDS: Final = {  # field -> (the provider module, what holds it)
    "function_call": ("gemini", "a Gemini part with a function_call"),
    "toolUse": ("bedrock", "a Bedrock toolUse block"),
    "tool_calls": ("openai_chat", "an OpenAI Chat message with tool_calls"),
}


def call_format(value: object) -> tuple[str, str] | None:
    """``(provider module, what it is)`` if ``value`` is (or holds) a tool call in one of the APIs' formats."""
    kind = field(value, "type")
    if type(kind) is str and kind in _CALL_TYPES:
        return _CALL_TYPES[kind]
    for key, found in _CALL_FIELDS.items():
        if present(field(value, key)):
            return found
    return None


def present(value: object) -> bool:
    """Whether a field holds something: not ``None``, ``False``, or an empty ``str``, list, tuple or dict.

    Truthiness without caller code: any other value (an SDK object, a
    caller's class) is present, its ``__bool__`` and ``__len__`` unread.
    """
    if value is None or value is False:
        return False
    if type(value) in (str, list, tuple, dict):
        return len(value) > 0  # type: ignore[arg-type]  # one of the four exact types: each has a len
    return True


def refuse_foreign_turns(turns: Sequence[Any], own: str, reader: str, argument: str) -> None:
    """Refuse a transcript that holds another API's tool call: in a turn, its content list or its parts.

    A preflight check reads its own API's calls and results; given another
    API's transcript it would find none, and pass a transcript whose calls
    have no results — the very thing it is there to catch.
    """
    for index, turn in enumerate(items(turns, reader)):
        pieces = [(f"{argument}[{index}]", turn)]
        for key in ("content", "parts"):
            inner = field(turn, key)
            if isinstance(inner, Sequence) and not isinstance(inner, _NOT_A_SEQUENCE):
                listed = items(inner, f"{reader}: {argument}[{index}].{key}")
                pieces += [(f"{argument}[{index}].{key}[{position}]", piece) for position, piece in enumerate(listed)]
        for where, piece in pieces:
            found = call_format(piece)
            if found is not None and found[0] != own:
                raise UsageError(
                    f"{reader}: {where} is {found[1]}: check it with providers.{found[0]}",
                    code="provider_value_invalid",
                )


def refuse_foreign_call(value: object, where: str, reader: str) -> None:
    """Refuse a value a reader is about to skip, or read as holding no calls, that is another API's tool call.

    Skipped items are reported, not errors: text, reasoning and the like need
    no result.  A tool call of another API is different: read past, it would
    get no result, and the provider would refuse the next request (or the
    loop end early) far from the cause.  So the reader that meets one raises
    ``provider_value_invalid`` naming it: the value was given to the wrong
    provider's module.  Each reader calls this only after taking its own
    calls, so its own format is never refused.
    """
    found = call_format(value)
    if found is not None:
        raise UsageError(
            f"{reader}: {where} is {found[1]}: ingest it with its own provider's module",
            code="provider_value_invalid",
        )


# How each API's stream events are told apart (a stream accumulator passes over events it has no use for,
# so another API's events would be passed over, every call in them with them).
_ANTHROPIC_EVENTS: Final = frozenset(
    {
        "message_start",
        "message_delta",
        "message_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
    }
)
_BEDROCK_EVENTS: Final = (
    "messageStart",
    "contentBlockStart",
    "contentBlockDelta",
    "contentBlockStop",
    "messageStop",
    "metadata",
)


def stream_event_api(event: object) -> str | None:
    """The provider module whose stream ``event`` is, when that can be told; ``None`` when it cannot."""
    kind = field(event, "type")
    if type(kind) is str:
        if kind.startswith("response."):
            return "openai_responses"
        if kind in _ANTHROPIC_EVENTS:
            return "anthropic"
    if has_field(event, "choices"):
        return "openai_chat"
    if has_field(event, "candidates"):
        return "gemini"
    if isinstance(event, Mapping) and any(has_field(event, key) for key in _BEDROCK_EVENTS):
        return "bedrock"
    return None


def refuse_foreign_event(event: object, own: str, reader: str) -> None:
    """Refuse a stream event of another provider's API: passed over as an event of no use, its calls would be lost."""
    api = stream_event_api(event)
    if api is not None and api != own:
        raise UsageError(
            f"{reader}: the event is a {api} stream event ({described(event)}): accumulate it with "
            f"providers.{api}'s stream",
            code="provider_value_invalid",
        )


def described(value: object) -> str:
    """A value's type as a reader recognises it: the class with its module (the SDK), or a dict's keys."""
    cls = type(value)
    if isinstance(value, Mapping):
        try:
            keys = sorted(key if type(key) is str else type(key).__name__ for key in value)
        except Exception:  # noqa: BLE001 - a mapping whose iteration raises is described by its type alone
            keys = None
        if keys is not None:
            shown = ", ".join(key[:40] for key in keys[:8]) + (", …" if len(keys) > 8 else "")
            return f"a {cls.__name__} with keys {shown}" if keys else f"an empty {cls.__name__}"
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def items(value: object, where: str = "") -> list[Any]:
    """A list or tuple field as a list; ``None`` (a missing field) as ``[]``; anything else raises ``UsageError``.

    ``where`` names the field for the error (``"anthropic.ingest: the content"``).
    """
    if value is None:
        return []
    prefix = f"{where}: " if where else ""
    if isinstance(value, Sequence) and not isinstance(value, _NOT_A_SEQUENCE):
        try:
            return list(value)
        except Exception as error:
            raise UsageError(
                f"{prefix}listing {described(value)} raised {type(error).__qualname__}", code="provider_value_invalid"
            ) from error
    raise UsageError(
        f"{prefix}expected a list of provider items, got {described(value)}", code="provider_value_invalid"
    )


def plain(value: object, reader: str, what: str, *, json_mode: bool = True) -> dict[str, Any]:
    """A provider item as a plain dict for a request: a mapping copied, an SDK model dumped (``None`` fields left out).

    Anything else raises :class:`.UsageError` naming ``what`` it should be;
    so does a dump (caller code) that raises or returns no dict.
    """
    try:
        if isinstance(value, Mapping):
            return dict(cast(Mapping[str, Any], value))
        dump = getattr(type(value), "model_dump", None)
        if callable(dump):  # an SDK model: its dump is the request's form of it
            dumped = dump(value, mode="json", exclude_none=True) if json_mode else dump(value, exclude_none=True)
            if isinstance(dumped, dict):
                return dumped
    except Exception as error:
        raise UsageError(
            f"{reader}: reading {what} ({described(value)}) raised {type(error).__qualname__}",
            code="provider_value_invalid",
        ) from error
    raise UsageError(
        f"{reader}: {what} must be a dict or an SDK model, not {described(value)}", code="provider_value_invalid"
    )


def incomplete_problem(stop_reason: object, ended: str = "the message stopped") -> str:
    """The ``problem`` of a streamed call that never completed: the stream was cut, or the model stopped first."""
    if stop_reason is None:
        return "the stream ended before this call was complete"
    return f"{ended} ({stop_reason}) before this call was complete"
