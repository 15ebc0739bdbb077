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
``node/``          the protocol v1 adapter of the JavaScript original
=================  ==================================================================

The kit uses the library only through its public API and the compiled
machine (a *seam*: ``serve`` may run the reference on another table); it never
imports a provider module.
"""

from __future__ import annotations

__all__: list[str] = []
