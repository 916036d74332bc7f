"""The engine suite's hypothesis profiles (``HYPOTHESIS_PROFILE=ci|soak|nightly``)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=100, stateful_step_count=50, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)  # fmt: skip
settings.register_profile(
    "nightly", max_examples=3_000, stateful_step_count=150, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)  # fmt: skip
settings.register_profile(
    "soak", max_examples=300, stateful_step_count=150, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)  # fmt: skip
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
