"""``tests/test_recall_quality.py`` on both backends (see ``conformance.py``)."""

from conformance import _pg_url, _plugin, _redirected, backend_kind, load_tests

__all__ = ["_pg_url", "_plugin", "_redirected", "backend_kind"]
load_tests(
    globals(),
    "test_recall_quality.py",
    skip=(
        # Counts the SQLite backend's float32 row reads; the PostgreSQL session
        # rescores every hit it returns from one statement's read.
        "test_vector_mode_reads_back_only_the_rows_it_reports",
        # Counts the SQLite planner's checks of memory rows against the filter;
        # PostgreSQL filters inside its one vector statement.
        "test_vector_mode_checks_the_filter_on_about_the_memories_it_reports",
    ),
)
