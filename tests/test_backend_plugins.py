"""The PostgreSQL plugin costs a SQLite user nothing and tells a PostgreSQL user what is missing."""

from __future__ import annotations

import subprocess
import sys

import pytest

import embedmind
from embedmind.backend.postgres import plugin


def _without_the_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(sys.modules):
        postgres = name == "psycopg" or name.startswith(("psycopg.", "embedmind.backend.postgres."))
        if postgres and name != "embedmind.backend.postgres.plugin":
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "psycopg", None)  # `import psycopg` raises ImportError


def test_without_psycopg_sqlite_opens_and_postgresql_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _without_the_driver(monkeypatch)
    registered: list[object] = []
    plugin.register_backends(register=lambda name, factory, **_: registered.append(factory))
    assert registered == [plugin.FACTORY]
    assert plugin.FACTORY.claims("postgresql://u@h/db") and plugin.FACTORY.claims("POSTGRES://h")
    assert not plugin.FACTORY.claims("memories.mind") and not plugin.FACTORY.claims(":memory:")
    with embedmind.Store.open(":memory:", embedder=None) as store:
        assert store.remember("still works").content == "still works"
    with pytest.raises(embedmind.InvalidInputError, match=r"embedmind\[postgres\]"):
        plugin.FACTORY.open(embedmind.backend.values.OpenOptions("postgresql://u@127.0.0.1:1/x"))


def test_opening_a_sqlite_store_imports_no_postgresql_code() -> None:
    # The registry loads every backend plugin on the first open (the entry point
    # is installed with the package): the PostgreSQL one must not pull in its
    # backend or the driver there (about 0.2 s).
    code = (
        "import sys, embedmind\n"
        "from embedmind import plugins\n"
        "with embedmind.Store.open(':memory:', embedder=None) as s: s.remember('x')\n"
        "print('postgresql' in plugins.registry().backends)\n"
        "print(sorted(m for m in sys.modules if m == 'psycopg' or"
        " m.startswith(('psycopg.', 'embedmind.backend.postgres'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    registered, loaded = out.stdout.splitlines()
    assert registered == "True"
    assert loaded == "['embedmind.backend.postgres', 'embedmind.backend.postgres.plugin']"
