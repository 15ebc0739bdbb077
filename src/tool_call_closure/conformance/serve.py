"""``serve``: the reference as a protocol v1 subject (``spec/protocol.md``).

Theory of operation
-------------------
One :class:`Server` reads newline-delimited JSON requests, carries each out on the current
:class:`~tool_call_closure.closure.ToolCallClosure`, and writes one response line per request, in order.  It is
the reference's face towards conformance runners, so it maps protocol values to Python values exactly as the
protocol specifies and never lets a Python exception escape: every failure becomes an ``error`` response and the
server keeps serving.

Responses are written as :func:`~tool_call_closure.closure.to_json` writes their values; a value that is a tree
of the library's value objects (a snapshot, a settlement result) goes through json's C encoder instead, checked on
the way to hold nothing that encoder writes differently (:class:`_ResponseText`).

Argument decoding turns tags into objects: handles this session created, look-alike handles, earlier results and
structural copies of them, absent arguments, NaN/±Infinity, exception objects, content parts (:mod:`.parts_wire`)
and hooks.  A :class:`Hook` is an object whose first attribute read, ``str()`` or ``__json__`` runs nested
requests (answered at once, marked ``nested``) before it behaves as its ``then`` value: the protocol's way to run
caller code at every point where the implementation reads caller values.

A request line may nest at most :data:`MAX_DEPTH` arrays and objects deep (nested requests and hook values
included), checked iteratively before anything is decoded (:mod:`.wire`): deeper lines get a ``ProtocolError``,
and Python's recursion limit is never reached.  Output that cannot be written (a closed pipe, a full disk) ends
the session: the server stops writing and reports the error to :func:`serve`'s caller.

Everything added to protocol v1 after its first publication is a capability (:data:`CAPABILITIES`).  A server
made with fewer answers as v1 did without them (an unknown tag, cmd or method; ``begin`` ignoring a second
argument; ``$undefined`` only in ``args``): the frozen v1 subject the tests keep passing every vector it does not
skip.  ``agents``: requests naming an agent run on that agent's thread (:mod:`.serve_agents`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import json
import math
import re
import sys
from collections.abc import Callable
from typing import IO, Any, Final

from tool_call_closure import __version__
from tool_call_closure import values as _values
from tool_call_closure.absent import ABSENT
from tool_call_closure.closure import ToolCallClosure, _closure_with_machine, to_json
from tool_call_closure.conformance.export_options import export_keywords, split_options
from tool_call_closure.conformance.parts_wire import PARTS_TAG, decode_parts, new_options, response_json
from tool_call_closure.conformance.serve_agents import Agents, LockedOutput
from tool_call_closure.conformance.wire import MAX_DEPTH, MAX_SAFE, may_nest_deeper, nesting_depth, parse_request_line
from tool_call_closure.ecma import to_js_string
from tool_call_closure.errors import ToolCallClosureError
from tool_call_closure.machine.interpreter import MACHINE, Machine
from tool_call_closure.machine.semantics import is_object, read_key
from tool_call_closure.machine.table import TABLE
from tool_call_closure.values import BatchHandle, BeginResult, TurnToken

__all__ = [
    "MAX_DEPTH",
    "PROTOCOL_VERSION",
    "Error",
    "Hook",
    "HookError",
    "OutputError",
    "Server",
    "may_nest_deeper",
    "nesting_depth",
    "parse_request_line",
    "serve",
    "tamper",
]

PROTOCOL_VERSION: Final = 1
IMPLEMENTATION: Final = {"name": "tool-call-closure", "language": "python", "version": __version__}
# The optional protocol features this subject has (spec/protocol.md, Capabilities): a runner skips what needs others.
CAPABILITIES: Final = (
    "hook",
    "tamper",
    "turn-guard",
    "nesting-limit",
    "gemini-export",
    "bedrock-export",
    "undefined-properties",
    "agents",
    "content-parts",
    "export-options",
    "content-diagnostics",
)
# The methods that exist only for a subject with a capability: without it they are unknown (ProtocolError).
METHOD_CAPABILITIES: Final = {
    "turnToken": "turn-guard",
    "toGeminiFunctionResponses": "gemini-export",
    "toBedrockToolResults": "bedrock-export",
}


class RequestError(Exception):
    """A request that cannot be carried out as a request (reported as ProtocolError)."""


class HookError(Exception):
    """The exception a hook with ``throw`` raises (reported as CallerError)."""


class Error(Exception):
    """The ``$error`` tag's value: an exception named ``Error`` with a ``message`` attribute, like JavaScript's."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __json__(self) -> dict[str, Any]:
        # A JavaScript Error has no enumerable own properties: JSON.stringify writes {}.
        return {}


class Hook:
    """A ``$hook`` value: runs nested requests on its first trigger, then behaves as ``then``."""

    __slots__ = ("_calls", "_depth", "_server", "_then", "_then_raw", "_throw", "_triggered")

    def __init__(self, server: Server, spec: dict[str, Any], depth: int) -> None:
        calls = spec.get("calls", [])
        if not isinstance(calls, list):
            raise RequestError("$hook.calls must be an array")
        throw = spec.get("throw")
        if "throw" in spec and not isinstance(throw, str):
            raise RequestError("$hook.throw must be a string")
        unknown = sorted(set(spec) - {"calls", "then", "throw"})
        if unknown:
            raise RequestError(f"$hook has an unknown member {unknown[0]!r}")
        self._server = server
        self._calls: list[Any] = calls
        self._then_raw = spec.get("then", ABSENT)
        self._throw: str | None = throw
        self._depth = depth
        self._triggered = False
        self._then: Any = ABSENT

    def _trigger(self) -> Any:
        if not self._triggered:
            self._triggered = True
            for request in self._calls:
                self._server.handle(request, self._depth + 1)
            raw = self._then_raw
            self._then = ABSENT if raw is ABSENT else self._server.decode(raw, self._depth, allow_error=True)
            if self._throw is not None:
                raise HookError(self._throw)
        return self._then

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # Python's own probes for special names are not property reads
            raise AttributeError(name)
        then = self._trigger()
        if type(then) is dict and name in then:
            return then[name]
        raise AttributeError(name)

    def __str__(self) -> str:
        return to_js_string(self._trigger())

    def __json__(self) -> Any:
        then = self._trigger()
        # JSON.stringify serializes what toJSON returned as a plain object without asking it for toJSON
        # again; a hook returned as a value has no own keys, so it is written as {} without triggering.
        return {} if isinstance(then, Hook) else then

    def __repr__(self) -> str:
        return f"<Hook triggered={self._triggered}>"


# ---------------------------------------------------------------------- the text of a returned value
# Most values a call returns are trees of the library's value types (Snapshot, Accepted, BeginResult, …) whose
# ``__json__`` forms hold only strings, booleans, null, safe integers, further value objects and lists of those.
# For such a tree json_stringify (closure.to_json) does what json's C encoder does with ``default`` returning
# the ``__json__`` form: the same forms in the same order (no key of theirs is array-index-like, so none moves
# first), strings through the same encode_basestring, integers as their digits (|n| < 2**53), and no caller
# code anywhere (the value types' ``__json__`` only read fields).  One step differs: JSON.stringify escapes
# lone surrogates, the C encoder writes them raw, so text holding any surrogate is written the general way.
# _ResponseText checks the forms on the way (the encoder calls ``default`` for each value object), gives up at
# the first member outside that set, and then to_json writes the value; tests/test_kit_fast_paths.py compares
# both paths over generated values and over every value the vectors make the reference write.

_VALUE_TYPES: Final = frozenset(
    cls
    for cls in vars(_values).values()
    if isinstance(cls, type) and cls.__module__ == _values.__name__ and callable(vars(cls).get("__json__"))
)
_SAFE_INT: Final = 2**53
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


class _NotPlainFormError(Exception):
    """A value object's ``__json__`` form holds something the C encoder might write differently."""


def _plain_member(member: object) -> bool:
    cls = type(member)
    if cls is str or cls is bool or member is None or cls in _VALUE_TYPES:
        return True
    return cls is int and -_SAFE_INT < member < _SAFE_INT  # type: ignore[operator]


def _plain_form(value: object) -> dict[str, Any]:
    """The C encoder's ``default``: the ``__json__`` form of a value object, checked; _NotPlainFormError otherwise."""
    if type(value) not in _VALUE_TYPES:
        raise _NotPlainFormError
    form = value.__json__()  # type: ignore[attr-defined]
    if type(form) is not dict:
        raise _NotPlainFormError
    for key, member in form.items():
        if type(key) is not str or "0" <= key < ":":  # not a str, or digit-led (JavaScript may reorder it)
            raise _NotPlainFormError
        if type(member) is list:
            if not all(_plain_member(item) and type(item) is not list for item in member):
                raise _NotPlainFormError
        elif not _plain_member(member):
            raise _NotPlainFormError
    return form


class _ResponseText:
    """``to_json(value)``, through json's C encoder when ``value`` is a tree of value objects (see above)."""

    __slots__ = ("_encode", "_markers")

    def __init__(self) -> None:
        make_encoder = getattr(json.encoder, "c_make_encoder", None)
        # One markers dict per server: the encoder's cycle check (a value tree has none, but the check is cheap).
        self._markers: dict[int, Any] = {}
        self._encode: Callable[[object, int], list[str]] | None = None
        if make_encoder is not None:  # an interpreter without the C accelerator writes every value the general way
            # (markers, default, encoder, indent, key_separator, item_separator, sort_keys, skipkeys, allow_nan)
            self._encode = make_encoder(
                self._markers, _plain_form, json.encoder.encode_basestring, None, ":", ",", False, False, False
            )

    def __call__(self, value: object) -> str:
        if self._encode is not None and type(value) in _VALUE_TYPES:
            try:
                text = "".join(self._encode(value, 0))
            except (_NotPlainFormError, ValueError, RecursionError, KeyError):  # KeyError: agents' threads
                self._markers.clear()
            else:
                if text.isascii() or _SURROGATE.search(text) is None:
                    return text
        return response_json(value, to_json)  # to_json; an export's bytes (content parts) as base64


def _call_signature(method: Callable[..., Any]) -> tuple[Any, ...]:
    """What each positional parameter of ``method`` takes when its argument is absent: its default, else None.

    Keyword-only parameters are not protocol arguments by position: ``begin``'s ``turn`` is read from its second
    argument (see :func:`_turn`), and ``on_end`` is a Python extension no protocol argument reaches.
    """
    defaults = []
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    for parameter in list(inspect.signature(method).parameters.values())[1:]:  # after self
        if parameter.kind in positional:
            defaults.append(None if parameter.default is inspect.Parameter.empty else parameter.default)
    return tuple(defaults)


def _turn(options: Any) -> Any:
    """``begin``'s second protocol argument, ``{"turn": T}``, as the Python API's ``turn`` (capability turn-guard).

    Only a JSON object's ``turn`` member is read: any other second argument is
    ignored, as arguments beyond a method's parameters are.  An absent or null
    ``turn`` is no guard; ``{"generation": g}`` with ``g`` an integer in
    0..2**53-1 is the token of generation ``g``, and a token an earlier call
    returned (``$snapshot``) is used as is.  Anything else is handed to
    ``begin`` unchanged, which refuses it (``turn_invalid``, a TypeError), as
    the Python API refuses a ``turn`` that is not a ``TurnToken``.
    """
    if type(options) is not dict:
        return None
    turn = options.get("turn")
    if type(turn) is dict and turn.keys() == {"generation"}:
        generation = turn["generation"]
        if type(generation) is int and 0 <= generation < MAX_SAFE:
            return TurnToken(generation)
    return turn


# Where a member may be {"$undefined":true} (capability undefined-properties): the objects the library reads by
# property, (method, argument index) -> "object" (the argument itself) or "entries" (each element of an array
# argument); new's options too.  Anywhere else (content, deeper values) it is a ProtocolError, as before.
ABSENT_MEMBERS: Final = {
    ("begin", 0): "entries",
    ("begin", 1): "object",
    ("settle", 2): "object",
    ("close", 1): "object",
}

# protocol method name -> python attribute name
METHODS: Final = {m["protocol"]: m["python"] for op in TABLE.operations.values() for m in op.methods}


class Server:
    """One protocol session: the current instance and everything tags can refer to."""

    def __init__(
        self,
        out: IO[bytes],
        machine: Machine = MACHINE,
        trace: list[str] | None = None,
        capabilities: tuple[str, ...] = CAPABILITIES,
    ) -> None:
        # Fewer capabilities make the frozen subjects of the tests: with none, the server is protocol v1 as
        # first published, which must keep passing every vector that requires nothing (tests/test_serve.py).
        # Each capability left out is refused as v1 refused it: an unknown tag, cmd or method, a begin that
        # ignores its second argument, $undefined only in args.  (The nesting bound is kept: it is what keeps
        # this subject clear of Python's recursion limit, and the one vector deeper than 128 levels needs it.)
        unknown = set(capabilities) - set(CAPABILITIES)
        if unknown:
            raise ValueError(f"capabilities: unknown {sorted(unknown)}; known: {list(CAPABILITIES)}")
        self.capabilities = tuple(c for c in CAPABILITIES if c in capabilities)
        self._machine = machine
        # When a list, every instance this session creates appends the ids of the rows that fire (coverage).
        self.trace = trace
        self._closure: ToolCallClosure | None = None
        self._handles: dict[Any, BatchHandle] = {}
        self._results: dict[Any, Any] = {}
        # request id -> (the value it returned, its $clone), for the request line at hand: a line that names
        # the same value many times copies it once (emptied for each line, so a tamper never meets a stale copy).
        self._clones: dict[Any, tuple[Any, Any]] = {}
        self._parameters = {
            name: _call_signature(getattr(ToolCallClosure, attr))
            for name, attr in METHODS.items()
            if callable(getattr(ToolCallClosure, attr))
        }
        self._value_text = _ResponseText()
        self.finished = False
        # The first error writing the output (EPIPE, ENOSPC, ...); from then on nothing more is written.
        self.output_error: OSError | None = None
        self.agents = Agents(self.handle_line, self._error) if "agents" in self.capabilities else None
        self._out: Any = LockedOutput(out) if self.agents is not None else out

    # ------------------------------------------------------------------ output

    def _write(self, request_id: Any, depth: int, key: str, value_json: str) -> None:
        nested = f',"nested":{depth}' if depth else ""
        nested = self.agents.mark(nested) if self.agents is not None else nested
        self._write_line('{"id":' + to_json(request_id) + nested + ',"' + key + '":' + value_json + "}\n")

    def _write_line(self, line: str) -> None:
        # A write can fail inside a hook, in the middle of a library call: the error is recorded rather than
        # raised, so it never travels through the library as if caller code had raised it.
        if self.output_error is not None:
            return
        try:
            self._out.write(line.encode("utf-8"))
            self._out.flush()
        except OSError as exc:
            self.output_error = exc
            self.finished = True

    def _error(self, request_id: Any, depth: int, kind: str, message: str) -> None:
        self._write(request_id, depth, "error", to_json({"kind": kind, "message": message}))

    # ------------------------------------------------------------------ requests

    def handle_line(self, line: str) -> None:
        """Answer one request line (top level); an agent's is handed to its thread (capability ``agents``)."""
        if self.agents is not None and self.agents.dispatch(line):
            return
        self._clones = {}
        try:
            request = parse_request_line(line)
        except (ValueError, RecursionError) as exc:
            self._error(None, 0, "ProtocolError", f"request is not valid JSON: {exc}")
            return
        if may_nest_deeper(line) and nesting_depth(request) > MAX_DEPTH:
            request_id = request.get("id") if type(request) is dict else None
            if not isinstance(request_id, (int, float, str)) or isinstance(request_id, bool):
                request_id = None
            self._error(request_id, 0, "ProtocolError", f"the request nests deeper than {MAX_DEPTH} levels")
            return
        self.handle(request, 0)

    def handle(self, request: Any, depth: int) -> None:
        """Answer one decoded request; ``depth`` > 0 for requests run by a hook."""
        if not isinstance(request, dict):
            self._error(None, depth, "ProtocolError", "a request must be a JSON object")
            return
        request_id = request.get("id")
        if not isinstance(request_id, (int, float, str)) or isinstance(request_id, bool):
            self._error(None, depth, "ProtocolError", "a request needs an id that is a number or a string")
            return
        command = request.get("cmd")
        if depth and command != "call":
            self._error(request_id, depth, "ProtocolError", "a hook may only run call requests")
            return
        try:
            if command == "hello":
                self._hello(request_id, request)
            elif command == "new":
                self._new(request_id, request)
            elif command == "call":
                self._call(request_id, request, depth)
            elif command == "tamper" and "tamper" in self.capabilities:
                self._tamper(request_id, request)
            elif command == "bye":
                self._write(request_id, 0, "ok", "null")
                self.finished = True
            else:
                self._error(request_id, depth, "ProtocolError", f"unknown cmd {command!r}")
        except RequestError as exc:
            self._error(request_id, depth, "ProtocolError", str(exc))
        except Exception as exc:  # noqa: BLE001 - the server keeps serving whatever happens
            self._report(request_id, depth, exc)

    def _hello(self, request_id: Any, request: dict[str, Any]) -> None:
        version = request.get("protocol")
        if type(version) is not int or version != PROTOCOL_VERSION:
            raise RequestError(f"unsupported protocol {to_json(version)}; this subject speaks 1")
        response = {"protocol": PROTOCOL_VERSION, "implementation": IMPLEMENTATION, "capabilities": self.capabilities}
        self._write_line('{"id":' + to_json(request_id) + "," + to_json(response)[1:] + "\n")

    def _new(self, request_id: Any, request: dict[str, Any]) -> None:
        self._closure = None
        self._handles = {}
        self._results = {}
        self._clones = {}
        members = "undefined-properties" in self.capabilities
        options = self.decode(request["options"], 0, absent_members=members) if "options" in request else ABSENT
        try:
            if options is ABSENT:
                options = {}
            if not is_object(options):
                self._error(request_id, 0, "TypeError", "options must be an object")
                return
            given = {o.python: read_key(options, o.id) for o in new_options(self.capabilities)}
            kwargs = {name: (None if value is ABSENT else value) for name, value in given.items()}
            self._closure = _closure_with_machine(self._machine, **kwargs)
            self._closure._trace = self.trace
        except Exception as exc:  # noqa: BLE001 - every failure becomes a response
            self._report(request_id, 0, exc)
            return
        self._write(request_id, 0, "ok", "null")

    def _call(self, request_id: Any, request: dict[str, Any], depth: int) -> None:
        closure = self._closure
        method = request.get("method")
        raw_args, options = split_options(method, request.get("args", []), self.capabilities)  # export-options
        problem = (
            "no current instance: send new first"
            if closure is None
            else f"unknown method {method!r}"
            if not isinstance(method, str) or not self._knows(method)
            else "args must be an array"
            if not isinstance(raw_args, list)
            else None
        )
        if problem is not None:
            self._results.pop(request_id, None)
            raise RequestError(problem)
        assert closure is not None
        assert isinstance(method, str)
        assert isinstance(raw_args, list)
        try:
            args = [self._decode_arg(method, index, arg, depth) for index, arg in enumerate(raw_args)]
        except (RequestError, ToolCallClosureError):  # the latter: a $parts the library refuses (content-parts)
            self._results.pop(request_id, None)  # a repeated id refers to its latest request, even a failed one
            raise
        attribute = METHODS[method]
        try:
            if method == "activeGeneration":
                value: Any = closure.active_generation
            elif method == "begin":  # begin(calls, {"turn": token}): the token is a keyword argument in Python
                calls: Any = args[0] if args and args[0] is not ABSENT else None  # absent calls: refused by begin
                guarded = len(args) > 1 and "turn-guard" in self.capabilities  # without it, an extra argument
                value = closure.begin(calls, turn=_turn(args[1]) if guarded else None)
            else:
                absent_as = self._parameters[method]
                # Missing and $undefined arguments take what the parameter takes when absent; extras are ignored.
                call_args = [
                    args[i] if i < len(args) and args[i] is not ABSENT else absent for i, absent in enumerate(absent_as)
                ]
                value = getattr(closure, attribute)(*call_args, **export_keywords(method, options))
        except Exception as exc:  # noqa: BLE001 - every failure becomes a response
            self._results.pop(request_id, None)
            self._report(request_id, depth, exc)
            return
        try:
            text = self._value_text(value)
        except Exception as exc:  # noqa: BLE001 - a value the reference cannot write is its own defect
            self._results.pop(request_id, None)
            self._report(request_id, depth, exc)
            return
        if isinstance(value, BeginResult):
            self._handles[value.generation] = value.handle
            self._results[request_id] = value.superseded
        else:
            self._results[request_id] = value
        self._write(request_id, depth, "ok", text)

    def _knows(self, method: str) -> bool:
        """Whether ``method`` is one of this subject's: a method of the table, and its capability if it needs one."""
        needs = METHOD_CAPABILITIES.get(method)
        return method in METHODS and (needs is None or needs in self.capabilities)

    def _decode_arg(self, method: str, index: int, raw: Any, depth: int) -> Any:
        """Argument ``index`` of a call of ``method``, decoded (see :data:`ABSENT_MEMBERS`)."""
        place = ABSENT_MEMBERS.get((method, index)) if "undefined-properties" in self.capabilities else None
        if place == "entries" and type(raw) is list:
            return [self.decode(item, depth, absent_members=True) for item in raw]
        return self.decode(raw, depth, allow_absent=True, allow_error=True, absent_members=place == "object")

    def _tamper(self, request_id: Any, request: dict[str, Any]) -> None:
        target = request.get("target")
        if isinstance(target, bool) or not isinstance(target, (int, float, str)) or target not in self._results:
            raise RequestError(f"tamper target {to_json(target)}: no earlier call with that id returned a value")
        tamper(self._results[target])
        self._write(request_id, 0, "ok", "null")

    def _report(self, request_id: Any, depth: int, exc: Exception) -> None:
        if isinstance(exc, ToolCallClosureError):
            self._error(request_id, depth, exc.kind, str(exc))
        elif isinstance(exc, HookError):
            self._error(request_id, depth, "CallerError", str(exc))
        elif isinstance(exc, RequestError):
            self._error(request_id, depth, "ProtocolError", str(exc))
        else:
            self._error(request_id, depth, "InternalError", f"{type(exc).__name__}: {exc}")

    # ------------------------------------------------------------------ tags

    def decode(
        self,
        value: Any,
        depth: int,
        *,
        allow_absent: bool = False,
        allow_error: bool = False,
        absent_members: bool = False,
    ) -> Any:
        """Turn a protocol value into a Python value, decoding tags.

        With ``absent_members`` (an options object, a call entry, an outcome, a close reason: see
        :data:`ABSENT_MEMBERS`), a member of ``value`` whose value is ``{"$undefined":true}`` is left out of
        the decoded object (capability ``undefined-properties``): JavaScript's ``{k: undefined}`` reads as an
        absent ``k`` wherever the library reads a property, so the reference's absent key is the same value.
        """
        if type(value) is dict:
            if len(value) == 1:
                ((key, inner),) = value.items()
                if key.startswith("$"):
                    return self._tag(key, inner, depth, allow_absent, allow_error)
            decoded = {}
            for key, item in value.items():
                member = self.decode(item, depth, allow_absent=absent_members)
                if member is not ABSENT:
                    decoded[key] = member
            return decoded
        if type(value) is list:
            return [self.decode(item, depth) for item in value]
        return value

    def _tag(self, key: str, inner: Any, depth: int, allow_absent: bool, allow_error: bool) -> Any:
        if key == "$handle":
            if isinstance(inner, bool) or not isinstance(inner, (int, float)) or inner not in self._handles:
                raise RequestError(f"$handle {to_json(inner)}: no begin created that generation")
            return self._handles[inner]
        if key == "$forgedHandle":
            return BatchHandle(generation=inner)
        if key in ("$snapshot", "$clone"):
            if isinstance(inner, bool) or not isinstance(inner, (int, float, str)) or inner not in self._results:
                raise RequestError(f"{key} {to_json(inner)}: no earlier call with that id returned a value")
            found = self._results[inner]
            return found if key == "$snapshot" else self._clone(inner, found)
        if key == "$undefined":
            if not allow_absent or inner is not True:
                # The text of protocol v1 as first published (vectors keep their hashes): the members that
                # may be $undefined too are listed in spec/protocol.md (capability undefined-properties).
                raise RequestError('$undefined is allowed only as an element of args, as {"$undefined":true}')
            return ABSENT
        if key == "$nan":
            if inner is not True:
                raise RequestError('$nan must be {"$nan":true}')
            return math.nan
        if key == "$inf":
            if inner not in (1, -1) or isinstance(inner, bool):
                raise RequestError("$inf must be 1 or -1")
            return math.inf if inner == 1 else -math.inf
        if key == "$error":
            if not allow_error or not isinstance(inner, str):
                raise RequestError("$error takes a string and is allowed only in args or a hook's then")
            return Error(inner)
        if key == "$literal":
            return inner
        if key == PARTS_TAG and "content-parts" in self.capabilities:
            return decode_parts(inner)
        if key == "$hook":
            if type(inner) is not dict:
                raise RequestError("$hook takes an object")
            if "hook" not in self.capabilities:
                raise RequestError(f"unknown tag {key!r}")
            return Hook(self, inner, depth)
        raise RequestError(f"unknown tag {key!r}")

    def _clone(self, request_id: Any, found: Any) -> Any:
        """The ``$clone`` of the value the call ``request_id`` returned: plain data equal to its JSON.

        Made once per returned value and request line, and shared by every ``$clone`` of it in that line: the copy
        is plain data that the library only reads (it never keeps or changes a caller's value, and identity
        matters only for the library's own objects, which a copy never is), so one copy serves them all, and a
        line that names the same large value a thousand times costs one copy, not a thousand (bounded work, as
        ``$snapshot``).  The next line copies afresh: a ``tamper`` in between may have changed the value.
        """
        cached = self._clones.get(request_id)
        if cached is not None and cached[0] is found:
            return cached[1]
        clone = parse_request_line(to_json(found))
        self._clones[request_id] = (found, clone)
        return clone


TAMPERED: Final = "tampered"


def tamper(value: Any) -> None:
    """Try, by ordinary Python means, to modify ``value`` and everything in it (spec/protocol.md, tamper).

    Post-order: the parts of a value are tampered with before the value itself.  A list's elements are
    assigned ``"tampered"`` and ``"tampered"`` is appended; a dict's values are assigned ``"tampered"`` and the key
    ``"tampered"`` is set to True; any other object with dataclass fields gets ``setattr`` of each field and of
    an attribute ``tampered``.  Every attempt that raises is ignored: that is immutability holding.
    """
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        item, children_done = stack.pop()
        parts: list[tuple[Any, Any]]
        if isinstance(item, (list, tuple)):
            parts = list(enumerate(item))
        elif isinstance(item, dict):
            parts = list(item.items())
        elif dataclasses.is_dataclass(item) and not isinstance(item, type):
            parts = [(f.name, getattr(item, f.name)) for f in dataclasses.fields(item)]
        else:
            continue
        if not children_done:
            stack.append((item, True))
            stack.extend((child, False) for _, child in reversed(parts))
            continue
        for key, _ in parts:
            with contextlib.suppress(Exception):
                if isinstance(item, (list, tuple, dict)):
                    item[key] = TAMPERED  # type: ignore[index]
                else:
                    setattr(item, key, TAMPERED)
        with contextlib.suppress(Exception):
            if isinstance(item, (list, tuple)):
                item.append(TAMPERED)  # type: ignore[union-attr]
            elif isinstance(item, dict):
                item[TAMPERED] = True
            else:
                setattr(item, TAMPERED, True)


class OutputError(Exception):
    """serve's output failed (its reader closed the pipe, the disk is full): the session is over."""

    def __init__(self, error: OSError) -> None:
        super().__init__(error.strerror or str(error))
        self.error = error


def serve(
    stdin: IO[bytes] | None = None,
    stdout: IO[bytes] | None = None,
    machine: Machine = MACHINE,
    capabilities: tuple[str, ...] = CAPABILITIES,
) -> int:
    """Serve protocol v1 until ``bye`` or end of input; returns the exit status (0).

    Raises :class:`OutputError` when the output cannot be written; the command line turns that into a quiet
    exit (the reader went away) or one line on stderr (any other error), never a traceback.
    """
    source = stdin if stdin is not None else sys.stdin.buffer
    server = Server(stdout if stdout is not None else sys.stdout.buffer, machine, capabilities=capabilities)
    for raw in source:
        if server.output_error is not None:
            break
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            server._error(None, 0, "ProtocolError", "request is not valid UTF-8")
            continue
        if not line.strip(" \t\r\n"):
            continue
        server.handle_line(line)
        if server.finished:
            break
    if server.agents is not None:
        server.agents.close()
    if server.output_error is not None:
        raise OutputError(server.output_error)
    return 0
