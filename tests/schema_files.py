"""A store file at an earlier schema version, for the tests of what opening it migrates."""

from __future__ import annotations

from pathlib import Path

import apsw

import embedmind
from embedmind.backend.sqlite import migrations


def file_at_version(path: Path, version: int) -> Path:
    """Write an empty store file at ``path`` with only migrations ``1..version`` applied."""
    conn = apsw.Connection(str(path))
    try:
        for migration in migrations.MIGRATIONS[:version]:
            migration(conn)
        conn.execute(f"PRAGMA user_version = {int(version)}")
    finally:
        conn.close()
    return path


def indexes(store: embedmind.Store) -> dict[str, str]:
    """Each index of the store's file, by name: the SQL that created it."""
    with store._db.read() as conn:
        return dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index'"))
