"""The PostgreSQL plugin without its driver: an engine-only install must still open SQLite stores."""

from __future__ import annotations

import sys

import pytest

from embedmind.backend.postgres import plugin


def test_without_psycopg_the_plugin_registers_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [
        m for m in sys.modules if m == "psycopg" or m.startswith("embedmind.backend.postgres.")
    ]:
        if name != "embedmind.backend.postgres.plugin":
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg raises ImportError
    registered: list[str] = []
    plugin.register_backends(register=lambda name, factory, **_: registered.append(name))
    assert registered == []
