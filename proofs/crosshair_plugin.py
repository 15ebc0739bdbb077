"""CrossHair plugin: factories that make arbitrary abstract states and operations for the step contracts.

Loaded with ``crosshair check --extra_plugin=proofs/crosshair_plugin.py``.  CrossHair
``exec``s this file with separate globals and locals, so no name defined or imported at the
top level is visible inside the functions defined here: each factory imports what it needs
and defines its own ``choose`` helper.

Why factories: CrossHair builds a class argument by calling its ``__init__`` with symbolic
arguments, and it enforces ``inv:`` lines only on instances built that way.  A factory
registered with ``crosshair.register_type`` replaces that: it draws every field with CrossHair
*decisions* (``factory.space.smt_fork``), so the search tree CrossHair explores — and marks
exhausted — is exactly the tree of field choices, and every input is concrete.

The choices are binary splits weighted by the size of each half, so every value of a field
is drawn with the same probability (left to itself CrossHair takes the "true" side of a fork
with probability 0.25, and its enum factory is a chain of such forks: the members of an enum
are drawn very unevenly).  The
state factory draws call values only from those the drawn run state allows: drawing every
field independently wasted about 80% of the iterations on states the public API cannot reach
(measured: 243 attempts but 52 steps in 4 s).  The contracts' ``pre: state.reachable()``
still checks every state, so a factory that drifted from the model would show up as a
precondition failure (or as "Unable to meet precondition"), never as silently wrong coverage.
"""

import crosshair
import crosshair_model


def _abstract_state(factory: "crosshair.SymbolicFactory") -> "crosshair_model.AbstractState":
    from collections.abc import Iterable
    from typing import TypeVar

    from crosshair_model import MAX_CALLS, MAX_DIAGNOSTICS, MAX_GENERATION, AbstractState, Call, RunState

    T = TypeVar("T")

    def choose(name: str, values: "Iterable[T]") -> "T":
        options = list(values)
        while len(options) > 1:
            half = len(options) // 2
            first = factory.space.smt_fork(desc=f"{name}_{len(options)}", probability_true=half / len(options))
            options = options[:half] if first else options[half:]
        return options[0]

    generation = choose("generation", range(MAX_GENERATION + 1))
    if generation == 0:
        return AbstractState(0, RunState.NONE, (), 0)
    run = choose("run", [RunState.OPEN, RunState.COMPLETE, RunState.ERROR, RunState.CANCELLED])
    allowed = [Call.REPORTED_SUCCESS, Call.REPORTED_ERROR, Call.REPORTED_CANCELLED]
    if run is RunState.OPEN:
        allowed.append(Call.PENDING)
    elif run is RunState.ERROR:
        allowed.append(Call.SYNTHETIC_ERROR)
    elif run is RunState.CANCELLED:
        allowed.append(Call.SYNTHETIC_CANCELLED)
    count = choose("calls", range(MAX_CALLS + 1))
    calls = tuple(choose(f"call{i}", allowed) for i in range(count))
    diagnostics = choose("diagnostics", range(MAX_DIAGNOSTICS + 1))
    return AbstractState(generation, run, calls, diagnostics)


def _operation(factory: "crosshair.SymbolicFactory") -> "crosshair_model.Operation":
    from collections.abc import Iterable
    from typing import TypeVar

    from crosshair_model import MAX_CALLS, HandleKind, Operation, OpKind, Status

    T = TypeVar("T")

    def choose(name: str, values: "Iterable[T]") -> "T":
        options = list(values)
        while len(options) > 1:
            half = len(options) // 2
            first = factory.space.smt_fork(desc=f"{name}_{len(options)}", probability_true=half / len(options))
            options = options[:half] if first else options[half:]
        return options[0]

    return Operation(
        choose("kind", OpKind),
        choose("handle", HandleKind),
        choose("call", range(-1, MAX_CALLS + 1)),
        choose("status", Status),
    )


crosshair.register_type(crosshair_model.AbstractState, _abstract_state)
crosshair.register_type(crosshair_model.Operation, _operation)
