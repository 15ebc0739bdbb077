"""The conformance kit: the reference as a test oracle for other implementations.

Theory of operation
-------------------
Authors of ports (and the JavaScript original, through ``node/adapter.cjs``)
serve protocol v1 (``spec/protocol.md``) on stdin/stdout.  The kit drives such
a *subject* and compares every answer with the reference's:

=================  ==================================================================
module             what it does
=================  ==================================================================
``serve``          the reference itself as a protocol v1 subject
``wire``           the protocol's lines: numbers as doubles, the nesting bound
``parts_wire``     the ``$parts`` tag: content parts over the protocol (capability ``content-parts``, D22)
``export_options`` an export's options over the protocol (capability ``export-options``, D22)
``subject``        subjects: in process, or a subprocess speaking the protocol
``vectors``        load the vectors of ``spec/vectors/``; regenerate or check them
``runner``         run vectors against a subject, step by step, within timeouts
``report``         each vector's outcome; the JSONL report, the summary, report diff
``conform``        the runner and the report under one name; the trace checker
``compare``        the comparison rules of protocol answers (error codes, kinds)
``coverage``       which rows, reasons, errors and rules the vectors cover
``modelgen``       the shortest witness vector of every table row
``scenarios``      Hypothesis strategies of protocol scenarios (needs ``hypothesis``)
``fuzz``           differential fuzzing of a subject: a run, its shards, and whose a
                   divergence is (replayed against a second subject, the original)
``fuzz_explore``   the fuzzer's model-guided scenarios, in lockstep on both sides
``fuzz_coverage``  the fuzzer's coverage keys, which steer what it draws
``fuzz_shrink``    shrink a divergence to the same one; the deviations' inputs
``serve_agents``   capability agents in serve: each agent's requests on its own thread
``agents``         the runner's side: concurrent blocks, their history, allowed outcomes
``agents_model``   the table's interpreter as the checker's model (overlap-only answers too)
``fuzz_agents``    ``fuzz --agents``: random concurrent programs, checked and shrunk
``history``        the JSON-lines history format of ``check --history``
``linearizability`` Wing–Gong search of a concurrent history against any sequential
                   model (linearizable, violation with its shortest prefix, or unknown)
``node/``          the protocol v1 adapter of the JavaScript original
=================  ==================================================================

The kit uses the library only through its public API and the compiled
machine (a *seam*: ``serve`` may run the reference on another table); it never
imports a provider module.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tool_call_closure.conformance.conform import (
        ConformanceRun,
        SubjectSpec,
        VectorResult,
        check_trace,
        diff_reports,
        read_report,
        run_conformance,
        select_vectors,
        summarize,
        write_report,
    )
    from tool_call_closure.conformance.serve import CAPABILITIES, Server
    from tool_call_closure.conformance.subject import InProcessSubject, ProcessSubject, Subject, SubjectError
    from tool_call_closure.conformance.vectors import Vector, load_vectors

# The kit's entry points, each from the module that defines it.  They are imported on first use (PEP 562):
# ``import tool_call_closure.conformance`` stays cheap.  (The functions ``fuzz`` and ``serve`` share their
# modules' names, which a submodule import would overwrite here: they are ``conformance.fuzz.fuzz`` and
# ``conformance.serve.serve``.)
_HOMES = {
    "ConformanceRun": "conform",
    "SubjectSpec": "conform",
    "VectorResult": "conform",
    "check_trace": "conform",
    "diff_reports": "conform",
    "read_report": "conform",
    "run_conformance": "conform",
    "select_vectors": "conform",
    "summarize": "conform",
    "write_report": "conform",
    "Vector": "vectors",
    "load_vectors": "vectors",
    "Subject": "subject",
    "InProcessSubject": "subject",
    "ProcessSubject": "subject",
    "SubjectError": "subject",
    "CAPABILITIES": "serve",
    "Server": "serve",
}

__all__ = [
    "CAPABILITIES",
    "ConformanceRun",
    "InProcessSubject",
    "ProcessSubject",
    "Server",
    "Subject",
    "SubjectError",
    "SubjectSpec",
    "Vector",
    "VectorResult",
    "check_trace",
    "diff_reports",
    "load_vectors",
    "read_report",
    "run_conformance",
    "select_vectors",
    "summarize",
    "write_report",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
