"""The differential fuzzer: random scenarios in lockstep on the reference and a subject.

Theory of operation
-------------------
Hypothesis draws a scenario request by request against the reference
(:class:`~._scenarios.ScenarioBuilder`); each request is sent to the subject as
soon as the reference has answered it, and the two answers are compared
(:mod:`._compare`).  The first divergence fails the example; Hypothesis then
shrinks the draws, and because the reference is deterministic a smaller draw
is a smaller scenario.  The minimal failing scenario is written out as a new
vector (origin ``fuzz``) whose expectations are the reference's, ready to be
reviewed and moved into ``spec/vectors/``.

The run is bounded by ``max_examples`` and by ``seconds`` (a time-bounded run
is a series of independent Hypothesis batches, stopped when the budget is
spent), and is reproducible with ``seed``.
Hypothesis is a development dependency: ``pip install tool-call-closure[dev]``.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tool_call_closure.conformance.compare import diff_responses
from tool_call_closure.conformance.conform import SubjectSpec
from tool_call_closure.conformance.subject import InProcessSubject, Subject, SubjectError
from tool_call_closure.conformance.vectors import VECTOR_FORMAT, generate, render

__all__ = ["FuzzResult", "fuzz"]


@dataclass(slots=True)
class FuzzResult:
    examples: int = 0  # examples that ran a scenario
    requests: int = 0
    seconds: float = 0.0
    divergence: str | None = None
    scenario: list[dict[str, Any]] = field(default_factory=list)
    vector_path: Path | None = None

    @property
    def examples_per_second(self) -> float:
        return self.examples / self.seconds if self.seconds > 0 else 0.0


class _DivergenceError(AssertionError):
    pass


def fuzz(
    spec: SubjectSpec,
    *,
    max_examples: int = 1000,
    seconds: float | None = None,
    seed: int | None = None,
    steps: int = 20,
    deviations: bool = False,
    out_dir: Path | None = None,
    progress: Callable[[FuzzResult], None] | None = None,
) -> FuzzResult:
    """Fuzz the subject; return what ran and, on a divergence, the shrunk scenario (written to ``out_dir``)."""
    try:
        from hypothesis import HealthCheck, Phase, given, settings
        from hypothesis import seed as hypothesis_seed
        from hypothesis import strategies as st
    except ImportError as exc:  # pragma: no cover - exercised only without the dev extra
        raise RuntimeError("fuzz needs Hypothesis: pip install 'tool-call-closure[dev]'") from exc

    from tool_call_closure.conformance.scenarios import ScenarioBuilder

    result = FuzzResult()
    started = time.perf_counter()
    subject_box: list[Subject] = [spec.start()]
    last_failure: dict[str, Any] = {}

    def subject() -> Subject:
        return subject_box[0]

    def restart() -> None:
        subject_box[0].close()
        subject_box[0] = spec.start()

    def batch(examples: int, batch_seed: int | None) -> None:
        @settings(
            max_examples=examples,
            deadline=None,
            database=None,
            phases=[Phase.generate, Phase.shrink],
            suppress_health_check=list(HealthCheck),
            print_blob=False,
        )
        @given(data=st.data())
        def scenario(data: Any) -> None:
            result.examples += 1
            sent: list[dict[str, Any]] = []

            class LockstepReference(InProcessSubject):
                """The reference; every request it answers is replayed on the subject at once."""

                def send(self, request: dict[str, Any] | str) -> list[dict[str, Any]]:
                    expected = super().send(request)
                    assert isinstance(request, dict)
                    sent.append(request)
                    result.requests += 1
                    try:
                        actual = subject().send(request)
                    except SubjectError as exc:
                        restart()
                        problem: str | None = f"the subject broke: {exc}"
                    else:
                        problem = diff_responses(expected, actual)
                    if problem is not None:
                        last_failure["scenario"] = list(sent)
                        last_failure["problem"] = f"request {len(sent)}: {problem}"
                        raise _DivergenceError(problem)
                    return expected

            builder = ScenarioBuilder(data.draw, LockstepReference(), deviations=deviations)
            builder.build(steps=data.draw(st.integers(1, steps)))
            if progress is not None:
                result.seconds = time.perf_counter() - started
                progress(result)

        (scenario if batch_seed is None else hypothesis_seed(batch_seed)(scenario))()

    # Hypothesis has no time budget of its own, and an example must not behave differently when replayed, so
    # a time-bounded run is a series of independent batches, each seeded from the run's seed.
    batch_size = max_examples if seconds is None else min(max_examples, 50)
    number = 0
    try:
        while result.examples < max_examples:
            if seconds is not None and time.perf_counter() - started > seconds:
                break
            batch(min(batch_size, max_examples - result.examples), None if seed is None else seed + number)
            number += 1
    except _DivergenceError:
        # Hypothesis re-runs the minimal failing example last, so last_failure holds the shrunk scenario.
        result.divergence = last_failure["problem"]
        result.scenario = last_failure["scenario"]
        if out_dir is not None:
            result.vector_path = write_vector(result.scenario, result.divergence, out_dir)
    finally:
        subject_box[0].close()
        result.seconds = time.perf_counter() - started
    return result


def write_vector(scenario: list[dict[str, Any]], divergence: str, out_dir: Path) -> Path:
    """Write a shrunk scenario as a vector with the reference's expectations; return its path."""
    digest = hashlib.sha256(json.dumps(scenario, sort_keys=True).encode("utf-8")).hexdigest()[:12]
    vector_id = f"fuzz-{digest}"
    data = {
        "format": VECTOR_FORMAT,
        "id": vector_id,
        "description": f"Shrunk from a fuzz divergence: {divergence}",
        "origin": "fuzz",
        "tags": ["area:fuzz"],
        "steps": [{"request": request} for request in scenario],
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{vector_id}.json"
    path.write_text(render(generate(data)), encoding="utf-8")
    return path
