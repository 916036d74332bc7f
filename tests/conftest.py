"""Shared fixtures and the hypothesis profiles (``HYPOTHESIS_PROFILE=ci|soak|nightly``)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
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
settings.register_profile(  # one round of scripts/soak.py; rounds add up
    "soak", max_examples=300, stateful_step_count=150, deadline=None,
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


Figures = Callable[..., None]


@pytest.fixture
def figures(request: pytest.FixtureRequest) -> Figures:
    """Record a reliability test's figures (trials, acknowledged writes, lost, ...).

    They are printed in the session summary, one ``FIGURES`` line per test, and appended
    as JSON lines to the file named by ``EMBEDMIND_FIGURES`` when it is set (the soak reads it).
    """

    def record(**values: object) -> None:
        # As plain JSON values: pytest-xdist sends a report's user properties from its
        # worker to the controller, and its serialiser refuses numpy scalars.
        plain = json.loads(json.dumps(values, default=_plain_number))
        request.node.user_properties.append(("figures", plain))

    return record


def _plain_number(value: object) -> object:
    item = getattr(value, "item", None)  # a numpy scalar
    if item is None:
        raise TypeError(f"a figure must be a JSON value, not {type(value).__name__}")
    return item()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    lines = []
    for outcome in ("passed", "failed"):
        for report in terminalreporter.stats.get(outcome, []):
            for key, values in getattr(report, "user_properties", []):
                if key == "figures" and report.when == "call":
                    lines.append({"test": report.nodeid, "outcome": outcome, **values})
    if not lines:
        return
    terminalreporter.section("reliability figures")
    for test, shown in _fold_parametrized(lines).items():
        terminalreporter.write_line(f"FIGURES {test}: {shown}")
    target = os.environ.get("EMBEDMIND_FIGURES")
    if target:
        with open(target, "a", encoding="utf-8") as out:
            for line in lines:
                out.write(json.dumps(line, default=str) + "\n")


def _fold_parametrized(lines: list[dict[str, object]]) -> dict[str, str]:
    """One summary line per test function: a parametrized test's cases are added up.

    Counts (ints) are summed, measurements (floats) keep their worst (largest) value,
    anything else is shown when all cases agree.
    """
    groups: dict[str, list[dict[str, object]]] = {}
    for line in lines:
        test = str(line["test"]).split("[", 1)[0]
        groups.setdefault(test, []).append(line)
    folded = {}
    for test, records in groups.items():
        keys = [k for k in records[0] if k not in ("test", "outcome")]
        parts = [f"runs={len(records)}"] if len(records) > 1 else []
        for key in keys:
            values = [r.get(key) for r in records]
            if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
                parts.append(f"{key}={sum(values)}")  # type: ignore[arg-type]
            elif all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
                parts.append(f"{key}={max(values)}")  # type: ignore[type-var]
            elif all(v == values[0] for v in values):
                parts.append(f"{key}={values[0]}")
        folded[test] = " ".join(parts)
    return folded
