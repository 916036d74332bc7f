"""Shared fixtures and the hypothesis profiles (``HYPOTHESIS_PROFILE=ci|nightly``)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

import embedmind

settings.register_profile(
    "ci", max_examples=100, stateful_step_count=50, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)  # fmt: skip
settings.register_profile(
    "nightly", max_examples=3_000, stateful_step_count=150, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)  # fmt: skip
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


@pytest.fixture
def store() -> Iterator[embedmind.Store]:
    """A throwaway text-only store."""
    with embedmind.Store.open(":memory:", embedder=None) as s:
        yield s


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    """A path for an on-disk store under the test's temporary directory."""
    return tmp_path / "memories.mind"
