"""Shared test configuration: Hypothesis profiles, helpers, and the summary line about parity.

When the comparisons with the JavaScript original are skipped (no ``node``, or no original at ``$TCC_JS`` or
in the shared seed folder), the terminal summary says so in one line, with how many and how to enable them
(:func:`pytest_terminal_summary`): a newcomer must not believe parity was checked.

Profiles (select with HYPOTHESIS_PROFILE):

* ``ci`` — loaded automatically when ``CI`` is set (``.ci/run`` sets it):
  Hypothesis's built-in ci profile (derandomized, no database, no deadline),
  bounded so the whole suite fits the CI budget;
* ``dev`` — the default locally: random, as large as ``ci``;
* ``long`` — for the documented long runs (many more examples and steps).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

# The suite runs the pure generated machine unless TCC_MACHINE says otherwise: a compiled build present in the
# checkout (python -m tool_call_closure.machine.build_compiled) is what TCC_MACHINE=compiled runs the suite on
# (.ci/run's compiled pass); tests/test_compiled.py compares the two whenever the build is present.
os.environ.setdefault("TCC_MACHINE", "pure")

settings.register_profile(
    "ci",
    parent=settings.get_profile("ci"),
    max_examples=100,
    stateful_step_count=30,
    suppress_health_check=[HealthCheck.too_slow],
)
# The test command a newcomer runs (no CI variable) draws 40 examples per property; CI (CI=true, .ci/run)
# draws 100; HYPOTHESIS_PROFILE=long draws 5,000.  Tests that fix their own max_examples keep it everywhere.
settings.register_profile("dev", max_examples=40, deadline=None, stateful_step_count=30)
settings.register_profile(
    "long",
    max_examples=5000,
    deadline=None,
    stateful_step_count=100,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


# The words every skip for a missing original carries in its reason (tests/test_parity.py, test_conformance.py,
# test_node_adapter.py, test_deviations.py, test_planted_bugs.py, test_defects_kept.py all say "set TCC_JS").
PARITY_SKIP_MARKERS = ("TCC_JS", "node is not installed")


def parity_skip_line(skip_reasons: list[str]) -> str | None:
    """The one summary line saying how many comparisons with the original were skipped and why, or None."""
    reasons = [reason for reason in skip_reasons if any(marker in reason for marker in PARITY_SKIP_MARKERS)]
    if not reasons:
        return None
    why = "node is not installed" if all("node is not installed" in r for r in reasons) else "the original is missing"
    return (
        f"{len(reasons)} comparison{'s' if len(reasons) != 1 else ''} with the JavaScript original skipped: {why}. "
        "Parity was NOT checked; to run them, install Node 20 and set "
        "TCC_JS=/path/to/tool-call-closure-1.0.0/src/index.cjs"
    )


def _skip_reason(report: object) -> str:
    longrepr = getattr(report, "longrepr", None)
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr or "")


def pytest_terminal_summary(terminalreporter: object) -> None:
    """Say it when the comparisons with the original were skipped (issue 19 item 7): a newcomer must not
    believe parity was checked when the original was not found."""
    stats = getattr(terminalreporter, "stats", {})
    line = parity_skip_line([_skip_reason(report) for report in stats.get("skipped", [])])
    if line is not None:
        terminalreporter.write_sep("=", "parity with the original NOT checked", yellow=True, bold=True)  # type: ignore[attr-defined]
        terminalreporter.write_line(line)  # type: ignore[attr-defined]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under ``TCC_MACHINE=compiled`` (.ci/run's compiled pass), skip the tests marked ``pure_machine``: they patch a
    semantics function or trace Python frames, which compiled code does not have.  The pure pass runs them, and
    tests/test_compiled.py proves the compiled build equal to the pure machine."""
    if os.environ.get("TCC_MACHINE") != "compiled":
        return
    skip = pytest.mark.skip(reason="needs the pure machine's Python code; the pure pass (TCC_MACHINE=pure) runs it")
    for item in items:
        if item.get_closest_marker("pure_machine") is not None:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _sigint_handler_unchanged() -> Iterator[None]:
    """A test that leaves another SIGINT handler installed breaks every later test of Ctrl-C (and Ctrl-C itself)."""
    before = signal.getsignal(signal.SIGINT)
    yield
    after = signal.getsignal(signal.SIGINT)
    if after is not before:
        signal.signal(signal.SIGINT, before)
        pytest.fail(f"the test left SIGINT's handler changed: {before!r} -> {after!r}", pytrace=False)
