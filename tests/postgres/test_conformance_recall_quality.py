"""``tests/test_recall_quality.py`` on both backends (see ``conformance.py``)."""

from conformance import _pg_url, _plugin, _redirected, backend_kind, load_tests

__all__ = ["_pg_url", "_plugin", "_redirected", "backend_kind"]
load_tests(
    globals(),
    "test_recall_quality.py",
    skip=(
        # Counts the SQLite backend's float32 row reads and filter checks; the
        # PostgreSQL session filters inside its one vector statement and
        # rescores every hit it returns from one statement's read.
        "test_vector_mode_reads_about_the_rows_it_reports",
    ),
)
