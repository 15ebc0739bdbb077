"""Capability ``export-options``: an export's options over the protocol (spec/protocol.md, Export options).

Theory of operation
-------------------
Two exports of the Python API take an option for what a model family refuses
in a tool result (deviation D22): ``to_bedrock_tool_results(snapshot,
media=False)`` for a Bedrock model that takes no image or document in a tool
result, and ``to_gemini_function_responses(snapshot, family="gemini-2")`` for
Gemini 2.x, which takes no media parts in a function response.  Protocol v1
ignores every argument beyond a method's parameters, so over the protocol
these exports always rendered the defaults (``media`` true, ``gemini-3``).

With the capability, the export's **second** argument (after the snapshot,
which may be absent: ``[{"$undefined":true}, options]`` exports a fresh
snapshot with options) is an options object:

=============================  =====================================
method                         options
=============================  =====================================
``toBedrockToolResults``       ``{"media": true | false}``
``toGeminiFunctionResponses``  ``{"family": "gemini-2" | "gemini-3"}``
=============================  =====================================

The options argument is plain JSON: tags inside it are not decoded (no value
of an option needs one).  The whole argument ``{"$undefined":true}`` is an
absent options object, as in v1.  An absent or ``null`` member takes its
default, as ``new``'s limits do.  Anything else is the library's TypeError
(Python: ``UsageError`` code ``export_option``), raised before the snapshot is
read, so nothing changes (an export records nothing either way):

* options not a JSON object (``null``, an array, a string …):
  ``options must be an object``;
* a key the method does not take: ``options has an unknown key: <key>``
  (the first such key in the object's order, truncated to 128 UTF-8 bytes as
  D10's unknown keys are), checked before any value;
* a value out of range: ``options.media must be true or false``,
  ``options.family must be gemini-2 or gemini-3``.

Only a call of these two methods with a second argument other than
``{"$undefined":true}`` needs the capability (:func:`uses_export_options`,
read by :func:`.vectors.required_capabilities`).  A subject without it
answers as protocol v1 did: the extra argument is decoded like any argument
and ignored.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from tool_call_closure.absent import ABSENT
from tool_call_closure.ecma import to_js_string_truncated
from tool_call_closure.errors import UsageError

__all__ = ["CAPABILITY", "EXPORT_OPTIONS", "export_keywords", "split_options", "uses_export_options"]

CAPABILITY: Final = "export-options"
_CODE: Final = "export_option"
_MAX_KEY_IN_MESSAGE: Final = 128  # UTF-8 bytes of an unknown key quoted (as D10's outcome_key_unknown quotes one)
_FAMILIES: Final = ("gemini-2", "gemini-3")  # providers.parts_render.GEMINI_FAMILIES (the kit imports no provider)

# protocol method -> {option: (python keyword, the values it takes, how the message names them)}
EXPORT_OPTIONS: Final[dict[str, dict[str, tuple[str, tuple[Any, ...], str]]]] = {
    "toBedrockToolResults": {"media": ("media", (True, False), "true or false")},
    "toGeminiFunctionResponses": {"family": ("family", _FAMILIES, " or ".join(_FAMILIES))},
}


def _absent(raw: Any) -> bool:
    return type(raw) is dict and len(raw) == 1 and raw.get("$undefined") is True


def split_options(method: object, raw_args: Any, capabilities: Iterable[str]) -> tuple[Any, Any]:
    """``raw_args`` without the options argument, and that argument (raw JSON; ``ABSENT`` when there is none).

    Without the capability, or for a method that takes no options, the arguments are returned as they are
    (v1: an extra argument is decoded and ignored) and there are no options; so are a method or arguments the
    request got wrong (the server refuses them next).
    """
    if type(method) is not str or method not in EXPORT_OPTIONS or CAPABILITY not in capabilities:
        return raw_args, ABSENT
    if type(raw_args) is not list or len(raw_args) < 2 or _absent(raw_args[1]):
        return raw_args, ABSENT
    return [raw_args[0], *raw_args[2:]], raw_args[1]


def export_keywords(method: str, options: Any) -> dict[str, Any]:
    """The Python keyword arguments for ``method``'s protocol options; raises ``UsageError`` (a TypeError)."""
    if options is ABSENT:
        return {}
    if type(options) is not dict:
        raise UsageError("options must be an object", code=_CODE)
    taken = EXPORT_OPTIONS[method]
    for key in options:  # every key first: an unknown key wins over a bad value
        if key not in taken:
            raise UsageError(
                f"options has an unknown key: {to_js_string_truncated(key, _MAX_KEY_IN_MESSAGE)}", code=_CODE
            )
    keywords: dict[str, Any] = {}
    for key, value in options.items():
        keyword, allowed, spelled = taken[key]
        if value is None:
            continue
        if not any(type(value) is type(good) and value == good for good in allowed):
            raise UsageError(f"options.{key} must be {spelled}", code=_CODE)
        keywords[keyword] = value
    return keywords


def uses_export_options(request: Any) -> bool:
    """Whether ``request`` (one, not its nested requests) is an export call that passes options."""
    if type(request) is not dict or request.get("cmd") != "call" or request.get("method") not in EXPORT_OPTIONS:
        return False
    args = request.get("args")
    return type(args) is list and len(args) > 1 and not _absent(args[1])
