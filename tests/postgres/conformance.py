"""Running the engine's own behaviour tests on the SQLite backend and on PostgreSQL.

Each ``test_conformance_*.py`` module imports one engine test module unchanged
(:func:`load_tests`) and these fixtures, so its tests run on both backends:
on SQLite where the engine's suite runs that module as written (in ``tests/``;
running it again here would only double the time), and here with every
``Store.open(":memory:", ...)`` they make opened on a fresh PostgreSQL schema
instead (``postgresql://...?schema=...``), reached
through the ``register_backends`` hook — the plugin module is registered here,
as the entry point is not in pyproject yet. A store a test opens at a
``.mind`` path opens on a schema named after that path, so reopening the path
reopens the same store. Tests that need the file itself (its bytes, size,
copies, cache files, another process) or a SQLite internal are left out by
name, each with its reason beside it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import itertools
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from embedmind import plugins
from embedmind.backend.postgres import plugin
from embedmind.backend.postgres.pytest_plugin import fewer_examples
from embedmind.backend.postgres.testing import ThrowawayServer
from embedmind.backend.values import OpenOptions

TESTS = Path(__file__).resolve().parents[1]
_schemas = itertools.count()


def load_tests(into: dict[str, Any], relative: str, skip: tuple[str, ...] = ()) -> None:
    """Import the tests and fixtures of ``tests/<relative>`` into the module ``into``."""
    path = TESTS / relative
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))  # their own sibling imports (oracles)
    name = "conformance_" + relative.replace("/", "_").removesuffix(".py")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    for key, value in vars(module).items():
        fixture = type(value).__name__ == "FixtureFunctionDefinition"
        if (key.startswith("test_") and key not in skip) or fixture:
            into[key] = value


@pytest.fixture(scope="module")
def _pg_url(pg_server: ThrowawayServer, pg_dsn: str) -> str:
    return pg_server.url(str(psycopg.conninfo.conninfo_to_dict(pg_dsn)["dbname"]))


@pytest.fixture(scope="module", autouse=True)
def _plugin() -> Iterator[None]:
    # The `embedmind` entry point registers it in an install; a bare checkout may not.
    if plugins.manager().is_registered(plugin):
        yield
        return
    plugins.register(plugin, name="postgresql-conformance")
    yield
    plugins.unregister(plugin)


@pytest.fixture(scope="module", autouse=True)
def _redirected(_pg_url: str) -> Iterator[None]:
    """Every store the module opens, on PostgreSQL schemas.

    Module-scoped, and autouse so that it comes first in its scope: a
    module-scoped store fixture of the imported tests is opened before any
    function-scoped fixture, and with a function-scoped redirection it
    opened on SQLite (the filtered recall test's store did).
    """
    # Its own patcher: a test's monkeypatch.undo() must not undo the redirection.
    with pytest.MonkeyPatch.context() as monkeypatch:
        redirected = _Redirected(_pg_url, plugins.backend_for)
        # Where the engine picks a backend for a location: Store.open and reembed.
        for module in ("embedmind.store", "embedmind.reembed"):
            monkeypatch.setattr(
                importlib.import_module(module), "backend_for", lambda location: redirected
            )
        yield


@pytest.fixture(autouse=True, params=["postgresql"])
def backend_kind(request: pytest.FixtureRequest, _redirected: None) -> Iterator[str]:
    """Each test with its stores opened on PostgreSQL schemas (SQLite: the module as written)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        fewer_examples(request, monkeypatch)  # the adapters' share, from one place
        yield str(request.param)


class _Redirected:
    """A factory opening ``:memory:`` and ``*.mind`` locations on PostgreSQL schemas.

    ``:memory:`` gets a fresh schema each time; a ``.mind`` path the schema
    named after its absolute path, so reopening the path reopens the store.
    Any other location goes to the backend it names.
    """

    def __init__(self, url: str, real: Any) -> None:
        self.url = url
        self.real = real

    def location(self, location: str) -> str:
        if location == ":memory:":
            return f"{self.url}?schema=c{next(_schemas)}"
        if location.endswith(".mind"):
            named = hashlib.sha256(os.path.abspath(location).encode()).hexdigest()[:24]
            return f"{self.url}?schema=f{named}"
        return location

    def open(self, options: OpenOptions) -> Any:
        location = self.location(options.location)
        return self.real(location).open(dataclasses.replace(options, location=location))
