"""The differential fuzzer: a run, its shards, and whose divergence it found.

Theory of operation
-------------------
A run sends model-guided scenarios (:mod:`.fuzz_explore`) in lockstep to the
reference, in process, and to a subject, steered by coverage
(:mod:`.fuzz_coverage`), until its budget is spent or the subject diverges.
The first divergence is shrunk (:mod:`.fuzz_shrink`) to a 1-minimal scenario
with *the same* divergence — the same request, answers and field, and no
input of a documented deviation it did not already hold — then attributed,
printed and written out as a vector (origin ``fuzz``).

Attribution.  A divergence from the reference is a bug of the subject's only
if the reference is right: when a *second subject* is available — the
command the caller names (``fuzz --also``), by default the JavaScript original
through the Node adapter when it is found — the shrunk scenario (the vector's
requests) is replayed against it too, and the run says whose the divergence
is (:class:`Attribution`; the vector's description says it too):

* ``own`` — the second subject agrees with the reference: the divergence is
  the subject's own;
* ``shared`` — it diverges in the same way (the same request, the same
  answer): the subject shares the second subject's behaviour here.  When the
  second subject is the original and the vector holds no deviation's input,
  the difference is the reference's (an undocumented deviation, or a bug of
  the reference's): a faithful port of the original is not at fault;
* ``differs`` — it diverges too, at another request or with another answer
  (both differ from the reference);
* ``explained`` — the vector holds the input of a documented deviation
  (:func:`.fuzz_shrink.deviation_inputs`), where the reference differs from
  the original by design, and the original diverges there in the same way,
  or no original could tell (none available, it could not replay the vector,
  or the second subject is not the original): the divergence is never
  reported as the subject's bug.  When the original agrees with the
  reference on such a vector, the deviation does not show there and the
  verdict is ``own``.  (The explorer never draws these inputs and the
  shrinker never brings one in, so only a scenario that held one from the
  start can be explained.)
* ``unattributed`` — no second subject was named or found, or it could not
  replay the vector (it broke, the vector needs a capability it does not
  declare, or calls a D8 export it does not have): the report says which.

Exports.  Every subject has the original's three exports; the reference's
two more (``toGeminiFunctionResponses``, ``toBedrockToolResults``, deviation
D8) are drawn only when the subject has them.  Once per session, after
``hello``, :func:`probe_exports` makes an instance (``new``) and calls each
of the two with no arguments: an implementation without the method answers
``ProtocolError`` (``spec/protocol.md``), and the method is then never
drawn; any other answer — ``ok``, or an error of another kind — means the
subject has it, and it is drawn like the other three (and its answers
compared with the reference's).  The probe's answers are not compared: the
scenarios begin with their own ``new``, so it leaves nothing behind, and a
subject without the two gets, for a seed, the scenarios it would get if they
did not exist.

``seconds`` is a budget, not a cap: the run ends when it is spent (or after
``max_examples`` scenarios, or at the first divergence).  Every scenario has
its own seed, derived from the run's seed, the job and the scenario number,
so scenarios differ across batches and a run is reproducible with ``seed``.
``jobs`` > 1 shards the run across processes (one subject each); the
divergence is attributed once, in the calling process.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import multiprocessing
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from tool_call_closure.conformance.conform import HELLO, SubjectSpec
from tool_call_closure.conformance.fuzz_coverage import (
    ALL_EXPORTS,
    EXPORTS,
    PROBED_EXPORTS,
    coverage_keys,
    coverage_summary,
    hook_positions,
)
from tool_call_closure.conformance.fuzz_explore import Explorer
from tool_call_closure.conformance.fuzz_shrink import Divergence, deviation_inputs, replay, shrink
from tool_call_closure.conformance.subject import Subject, SubjectError
from tool_call_closure.conformance.vectors import VECTOR_FORMAT, generate, render

__all__ = [
    "ALL_EXPORTS",
    "EXPORTS",
    "PROBED_EXPORTS",
    "Attribution",
    "Explorer",
    "FuzzResult",
    "SecondSubject",
    "attribute",
    "coverage_keys",
    "coverage_summary",
    "fuzz",
    "hook_positions",
    "probe_exports",
    "shrink",
    "write_vector",
]


@dataclass(frozen=True, slots=True)
class SecondSubject:
    """The subject a divergence's vector is replayed against, to say whose the divergence is."""

    spec: SubjectSpec
    name: str = "the second subject"  # how the report names it
    original: bool = False  # the JavaScript original: a divergence it shares is the reference's


@dataclass(frozen=True, slots=True)
class Attribution:
    """Whose a divergence is: ``own``, ``shared``, ``differs``, ``explained`` or ``unattributed``."""

    verdict: str
    detail: str  # one sentence for the report
    second: Divergence | None = None  # how the second subject diverged on the vector, when it did


@dataclass(slots=True)
class FuzzResult:
    examples: int = 0  # scenarios run
    requests: int = 0
    seconds: float = 0.0
    divergence: str | None = None  # how the subject diverged, in words (``found.text``, or why it broke)
    scenario: list[dict[str, Any]] = field(default_factory=list)
    vector_path: Path | None = None
    coverage: Counter[str] = field(default_factory=Counter)
    seed: int | None = None
    found_after: float | None = None  # seconds into the run when the divergence was first seen
    exports: tuple[str, ...] = ()  # the export methods drawn (what probe_exports found)
    vector_error: str | None = None  # why the divergence's vector could not be written (the divergence stands)
    found: Divergence | None = None  # the (shrunk) divergence, None when the subject broke outside a scenario
    attribution: Attribution | None = None  # whose the divergence is (set by fuzz, once per run)

    @property
    def examples_per_second(self) -> float:
        return self.examples / self.seconds if self.seconds > 0 else 0.0


# --------------------------------------------------------------------------- a shard


def _capabilities(subject: Subject) -> list[str]:
    response = subject.send(HELLO)[-1]
    capabilities = response.get("capabilities", [])
    return [c for c in capabilities if isinstance(c, str)] if isinstance(capabilities, list) else []


def probe_exports(subject: Subject) -> tuple[str, ...]:
    """The export methods to draw for ``subject``: :data:`EXPORTS`, then each of :data:`PROBED_EXPORTS` it has.

    Asked once per session, after the handshake: a ``new`` (a call needs a current instance), then each
    method with no arguments.  A method answered with a ``ProtocolError`` (how an implementation without it
    answers, spec/protocol.md) is left out; any other answer — ``ok``, or an error of any other kind — means
    the subject has it.  If the ``new`` fails there is nothing to ask, and only :data:`EXPORTS` are drawn (the
    first scenario's own ``new`` then shows the failure).  A subject that breaks instead of answering (it
    must answer an unknown method and keep serving) raises :class:`SubjectError` saying so.
    """
    try:
        created = subject.send({"id": "probe:new", "cmd": "new"})[-1]
        if "ok" not in created:
            return EXPORTS
        present = [
            method
            for method in PROBED_EXPORTS
            if not _is_protocol_error(subject.send({"id": f"probe:{method}", "cmd": "call", "method": method})[-1])
        ]
    except SubjectError as exc:
        raise SubjectError(f"while probing for the exports: {exc}") from exc
    return (*EXPORTS, *present)


def _is_protocol_error(response: dict[str, Any]) -> bool:
    error = response.get("error")
    return isinstance(error, dict) and error.get("kind") == "ProtocolError"


class _Restarting(Subject):
    """A job's subject: a request that breaks it restarts it (with a handshake), so shrinking can go on."""

    def __init__(self, spec: SubjectSpec) -> None:
        self.spec = spec
        self.inner = spec.start()

    def send(self, request: dict[str, Any] | str) -> list[dict[str, Any]]:
        try:
            return self.inner.send(request)
        except SubjectError:
            self.inner.close()
            self.inner = self.spec.start()
            self.inner.send(HELLO)
            raise

    def stderr_text(self) -> str:
        return self.inner.stderr_text()

    def close(self) -> None:
        self.inner.close()


def _shrunk(scenario: list[dict[str, Any]], found: Divergence, subject: Subject) -> tuple[list[Any], Divergence]:
    """The scenario shrunk to the same divergence; as found when it does not recur on replay (a subject that
    answers differently from run to run) or the subject cannot be restarted."""
    with contextlib.suppress(SubjectError):
        if replay(scenario, subject) is not None:
            return shrink(scenario, lambda candidate: replay(candidate, subject))
    return scenario, found


def _job(
    spec: SubjectSpec,
    *,
    job: int,
    seed: int,
    seconds: float | None,
    max_examples: int | None,
    steps: int,
    invalid: float,
    stop: Any = None,
) -> FuzzResult:
    """One shard of a run: scenarios until the budget is spent, a divergence, or ``stop`` is set."""
    result = FuzzResult(seed=seed)
    started = time.perf_counter()
    subject = _Restarting(spec)
    explorer: Explorer | None = None
    try:
        capabilities = _capabilities(subject)
        result.exports = probe_exports(subject)
        explorer = Explorer(
            subject,
            invalid=invalid,
            hooks="hook" in capabilities,
            tamper="tamper" in capabilities,
            steps=steps,
            coverage=result.coverage,
            exports=result.exports,
        )
        number = 0
        while max_examples is None or number < max_examples:
            if seconds is not None and time.perf_counter() - started > seconds:
                break
            if stop is not None and stop.is_set():
                break
            scenario_seed = int.from_bytes(hashlib.sha256(f"{seed}/{job}/{number}".encode()).digest()[:8], "big")
            number += 1
            explorer.run(scenario_seed)
            result.examples = number
            if explorer.divergence is None:
                continue
            result.found_after = time.perf_counter() - started
            if stop is not None:
                stop.set()
            result.scenario, result.found = _shrunk(list(explorer.sent), explorer.divergence, subject)
            result.divergence = result.found.text
            break
    except SubjectError as exc:
        result.divergence = f"the subject broke: {exc}"
    finally:
        result.requests = explorer.requests if explorer is not None else 0
        subject.close()
        result.seconds = time.perf_counter() - started
    return result


_SHARED_STOP: list[Any] = []


def _init_shard(stop: Any) -> None:
    _SHARED_STOP[:] = [stop]


def _shard(arguments: tuple[SubjectSpec, dict[str, Any]]) -> FuzzResult:
    spec, kwargs = arguments
    return _job(spec, stop=_SHARED_STOP[0] if _SHARED_STOP else None, **kwargs)


# --------------------------------------------------------------------------- a run


def fuzz(
    spec: SubjectSpec,
    *,
    max_examples: int | None = None,
    seconds: float | None = None,
    seed: int | None = None,
    steps: int = 20,
    invalid: float = 0.15,
    jobs: int = 1,
    out_dir: Path | None = None,
    also: SecondSubject | None = None,
) -> FuzzResult:
    """Fuzz the subject; return what ran, the coverage and, on a divergence, the shrunk scenario and whose the
    divergence is (replayed against ``also``, the second subject, when given).

    Without ``seconds`` and ``max_examples`` a run tries 1,000 scenarios.  The explorer never draws the
    inputs of the protocol-visible deviations, whose answers differ from the original by design, and draws
    the Gemini and Bedrock exports (D8) only when the subject has them (:func:`probe_exports`;
    ``FuzzResult.exports`` says which were drawn).  A budget that would never end or never begin (``seconds``
    NaN, infinite or not above 0), and counts below 1, raise :class:`ValueError` before anything starts.
    """
    _check_arguments(seconds=seconds, max_examples=max_examples, steps=steps, jobs=jobs, invalid=invalid)
    if seconds is None and max_examples is None:
        max_examples = 1000
    if seed is None:
        seed = int.from_bytes(os.urandom(4), "big")
    kwargs: dict[str, Any] = {
        "seed": seed,
        "seconds": seconds,
        "max_examples": None if max_examples is None else -(-max_examples // max(jobs, 1)),
        "steps": steps,
        "invalid": invalid,
    }
    started = time.perf_counter()
    if jobs <= 1:
        results = [_job(spec, job=0, **kwargs)]
    else:
        context = multiprocessing.get_context("spawn")
        stop = context.Event()
        with context.Pool(jobs, initializer=_init_shard, initargs=(stop,)) as pool:
            results = pool.map(_shard, [(spec, {**kwargs, "job": job}) for job in range(jobs)])
    # Every shard probed the same program; a shard whose subject broke before answering has none.
    merged = FuzzResult(seed=seed, exports=next((shard.exports for shard in results if shard.exports), ()))
    for shard in results:
        merged.examples += shard.examples
        merged.requests += shard.requests
        merged.coverage.update(shard.coverage)
        if shard.divergence is not None and merged.divergence is None:
            merged.divergence, merged.scenario, merged.found_after = shard.divergence, shard.scenario, shard.found_after
            merged.found = shard.found
    if merged.found is not None:
        merged.attribution = attribute(merged.scenario, merged.found, also)
    merged.seconds = time.perf_counter() - started
    if merged.divergence is not None and merged.scenario and out_dir is not None:
        try:
            merged.vector_path = write_vector(merged.scenario, merged.divergence, out_dir, merged.attribution)
        except OSError as exc:  # the run's finding is still reported, with the scenario itself
            merged.vector_error = f"{exc.filename or out_dir}: {exc.strerror or exc}"
    return merged


def _check_arguments(*, seconds: float | None, max_examples: int | None, steps: int, jobs: int, invalid: float) -> None:
    # NaN compares false with every elapsed time: a run with seconds=nan would never end.
    if seconds is not None and not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"seconds must be a finite number above 0, not {seconds!r}")
    for name, value in (("max_examples", max_examples), ("steps", steps), ("jobs", jobs)):
        if value is not None and value < 1:
            raise ValueError(f"{name} must be at least 1, not {value!r}")
    if not 0 <= invalid <= 1:  # also refuses NaN
        raise ValueError(f"invalid must be between 0 and 1, not {invalid!r}")


# --------------------------------------------------------------------------- attribution


def attribute(scenario: list[dict[str, Any]], found: Divergence, also: SecondSubject | None) -> Attribution:
    """Whose the divergence ``found`` on ``scenario`` is: replay the scenario against the second subject."""
    explained = sorted(deviation_inputs(scenario), key=lambda d: int(d[1:]))
    if also is None:
        return _explained(explained, "") if explained else Attribution("unattributed", _NO_SECOND)
    try:
        theirs = _replay_on(scenario, also)
    except SubjectError as exc:
        theirs = f"{also.name} could not replay the vector: {exc}"
    if isinstance(theirs, str):  # it could not say: a deviation's input still explains the divergence
        return _explained(explained, f" ({theirs})") if explained else Attribution("unattributed", theirs)
    if explained and not also.original:  # only the original can say whether a deviation shows on the vector
        return _explained(explained, f" ({also.name} is not the original, so it cannot tell)")
    if theirs is None:
        agrees = f"{also.name} agrees with the reference on the vector: the divergence is the subject's own"
        if explained:  # the original, answering as the reference: the deviation's input changes nothing here
            agrees += f" (the vector holds the input of {', '.join(explained)}, but no difference shows there)"
        return Attribution("own", agrees)
    if not _same_way(theirs, found):
        return Attribution("differs", f"{also.name} diverges too, differently: {theirs.text}", theirs)
    if explained:  # the original diverges the same way, on a deviation's input: the deviation, by design
        return _explained(explained, "; the original diverges from the reference in the same way", theirs)
    if also.original:
        detail = (
            "the original diverges from the reference in the same way, and no documented deviation covers the "
            "vector: the difference is the reference's (an undocumented deviation, or a bug of the reference's), "
            "not the subject's"
        )
    else:
        detail = f"{also.name} diverges in the same way: the subject shares its behaviour here"
    return Attribution("shared", detail, theirs)


def _same_way(theirs: Divergence, found: Divergence) -> bool:
    """The second subject diverged as the subject did: at the same place, with the same answer (the same text of
    the difference: both answers are in it), or both broke on the same request."""
    if theirs.signature != found.signature:
        return False
    return theirs.difference is None or found.difference is None or theirs.difference.text == found.difference.text


_NO_SECOND: Final = "no second subject to replay the vector against (name one with --also)"


def _explained(deviations: list[str], why: str, second: Divergence | None = None) -> Attribution:
    """The verdict on a vector that holds a documented deviation's input: never reported as the subject's bug."""
    return Attribution(
        "explained",
        f"the vector holds the input of documented deviation {', '.join(deviations)} (spec/deviations.json), where "
        f"the reference differs from the original by design{why}: not reported as a bug of the subject's",
        second,
    )


def _replay_on(scenario: list[dict[str, Any]], also: SecondSubject) -> Divergence | str | None:
    """The second subject's divergence on the scenario, None if it agrees, or why it could not be asked."""
    text = json.dumps(scenario)
    subject = also.spec.start()
    try:
        capabilities = _capabilities(subject)
        # The scenario used a capability only if the subject and the reference declared it; the second subject
        # may not have it (a hook it cannot run is an error, not a difference of behaviour).
        needed = [name for name, mark in (("hook", '"$hook"'), ("tamper", '"cmd": "tamper"')) if mark in text]
        lacking = [name for name in needed if name not in capabilities]
        if lacking:
            return f"the vector needs the {', '.join(lacking)} capability, which {also.name} does not declare"
        called = [method for method in PROBED_EXPORTS if json.dumps(method) in text]
        missing = [method for method in called if method not in probe_exports(subject)] if called else []
        if missing:
            return f"the vector calls {', '.join(missing)}, which {also.name} does not have (D8)"
        return replay(scenario, subject)
    finally:
        subject.close()


def write_vector(
    scenario: list[dict[str, Any]], divergence: str, out_dir: Path, attribution: Attribution | None = None
) -> Path:
    """Write a shrunk scenario as a vector with the reference's expectations; return its path."""
    text = json.dumps(scenario, sort_keys=True)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
    vector_id = f"fuzz-{digest}"
    # A scenario that calls the reference's own exports, or holds another deviation's input, pins that
    # deviation, as the shipped vectors that do: a runner told to skip the deviations (the original's run)
    # skips it instead of failing it.
    deviations = deviation_inputs(scenario)
    if any(json.dumps(method) in text for method in PROBED_EXPORTS):  # at any depth: a hook's requests too
        deviations.add("D8")
    tags = ["area:fuzz", *(f"deviation:{d}" for d in sorted(deviations, key=lambda d: int(d[1:])))]
    description = f"Shrunk from a fuzz divergence: {divergence}"
    if attribution is not None:
        description += f" Attribution: {attribution.verdict}: {attribution.detail}."
    data = {
        "format": VECTOR_FORMAT,
        "id": vector_id,
        "description": description,
        "origin": "fuzz",
        "tags": tags,
        "steps": [{"request": request} for request in scenario],
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{vector_id}.json"
    path.write_text(render(generate(data)), encoding="utf-8")
    return path
