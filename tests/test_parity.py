"""Parity with the JavaScript original: random protocol v1 scenarios through both.

Hypothesis draws scenarios against the reference (``_scenarios.ScenarioBuilder``),
then replays them on the original through the Node adapter; every response
must agree (``_compare``).  The builder leaves out the inputs whose answers
differ by design (deviations D1–D3); ``test_deviations.py`` pins those
differences one by one.

Skipped when ``node`` or the original (``TCC_JS``, default: the shared seed
copy) is missing.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tool_call_closure.conformance.compare import diff_responses
from tool_call_closure.conformance.scenarios import ScenarioBuilder
from tool_call_closure.conformance.subject import InProcessSubject, ProcessSubject, locate_original, original_command

ORIGINAL = locate_original()

pytestmark = [
    pytest.mark.node,
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
    pytest.mark.skipif(ORIGINAL is None or not ORIGINAL.is_file(), reason="the original is missing (set TCC_JS)"),
]


@pytest.fixture(scope="module")
def original() -> Iterator[ProcessSubject]:
    assert ORIGINAL is not None
    subject = ProcessSubject(original_command(ORIGINAL))
    yield subject
    subject.close()


def _replay_and_compare(builder: ScenarioBuilder, subject: ProcessSubject) -> None:
    transcript: list[str] = []
    for request, expected in zip(builder.requests, builder.responses, strict=True):
        actual = subject.send(request)
        transcript.append(f"  request  {request}\n  reference {expected}\n  original  {actual}")
        problem = diff_responses(expected, actual)
        if problem is not None:
            history = "\n".join(transcript[-6:])
            pytest.fail(f"the original differs from the reference: {problem}\n{history}\n{subject.stderr_text()}")


@settings(max_examples=int(os.environ.get("PARITY_EXAMPLES", "150")), deadline=None)
@given(data=st.data())
def test_random_scenarios_agree_with_the_original(original: ProcessSubject, data: st.DataObject) -> None:
    builder = ScenarioBuilder(data.draw, InProcessSubject())
    builder.build(steps=data.draw(st.integers(1, 25), label="steps"))
    _replay_and_compare(builder, original)


@settings(max_examples=int(os.environ.get("PARITY_EXAMPLES", "150")) // 3, deadline=None)
@given(data=st.data())
def test_random_scenarios_without_hooks_agree_with_the_original(original: ProcessSubject, data: st.DataObject) -> None:
    builder = ScenarioBuilder(data.draw, InProcessSubject(), hooks=False)
    builder.build(steps=data.draw(st.integers(10, 40), label="steps"))
    _replay_and_compare(builder, original)
