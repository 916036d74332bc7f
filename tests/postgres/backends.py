"""A PostgreSQL backend opened on a fresh schema of a test module's database."""

from __future__ import annotations

from typing import Any

import psycopg

from embedmind.backend.postgres.backend import FACTORY
from embedmind.backend.postgres.testing import ThrowawayServer
from embedmind.backend.values import OpenOptions


def open_backend(server: ThrowawayServer, dsn: str, schema: str, dims: int) -> Any:
    """Open the backend on ``schema`` with an embedder identity of ``dims`` dimensions."""
    dbname = psycopg.conninfo.conninfo_to_dict(dsn)["dbname"]
    backend = FACTORY.open(OpenOptions(server.url(str(dbname)) + f"?schema={schema}"))
    with backend.write() as w:
        w.meta.write_identity({"model_id": "test", "dims": str(dims), "metric": "cosine"})
    return backend
