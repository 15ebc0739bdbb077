"""Shared test configuration: Hypothesis profiles and helpers.

Profiles (select with HYPOTHESIS_PROFILE):

* ``ci`` — loaded automatically when ``CI`` is set (``.ci/run`` sets it):
  Hypothesis's built-in ci profile (derandomized, no database, no deadline),
  bounded so the whole suite fits the CI budget;
* ``dev`` — the default locally: random, as large as ``ci``;
* ``long`` — for the documented long runs (many more examples and steps).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    parent=settings.get_profile("ci"),
    max_examples=100,
    stateful_step_count=30,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=100, deadline=None, stateful_step_count=30)
settings.register_profile(
    "long",
    max_examples=5000,
    deadline=None,
    stateful_step_count=100,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))
