"""How many items each call of a function was given: a test's count of random reads."""

from __future__ import annotations

from typing import Any

import pytest


def call_sizes(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[int]:
    """Patch ``owner.name(conn, items, ...)`` to record ``len(items)`` of each call."""
    sizes: list[int] = []
    original = getattr(owner, name)

    def counting(conn: Any, items: Any, *args: Any) -> Any:
        sizes.append(len(items))
        return original(conn, items, *args)

    monkeypatch.setattr(owner, name, counting)
    return sizes
