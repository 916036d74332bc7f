"""``tests/test_store.py`` on both backends (see ``conformance.py``)."""

from conformance import _pg_url, _plugin, _redirected, backend_kind, load_tests

__all__ = ["_pg_url", "_plugin", "_redirected", "backend_kind"]
load_tests(
    globals(),
    "test_store.py",
    skip=(
        # Checks the store file's permissions (0600).
        "test_reopen_persists",
        # Writes SQLite's user_version with apsw (PostgreSQL form: test_schema.py).
        "test_newer_schema_is_refused",
        # Compares schema_version with the SQLite migrations' LATEST.
        "test_stats_breaks_down_live_memories",
    ),
)
