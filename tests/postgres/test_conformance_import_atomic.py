"""``tests/test_import_atomic.py`` on both backends (see ``conformance.py``)."""

from conformance import _pg_url, _plugin, _redirected, backend_kind, load_tests

__all__ = ["_pg_url", "_plugin", "_redirected", "backend_kind"]
load_tests(
    globals(),
    "test_import_atomic.py",
    skip=(
        # Fields drafts.prepare refuses NUL in for every backend, before any backend
        # sees them: the SQLite run covers that path, and it is the same here.
        "test_a_memory_every_backend_refuses_fails_the_import_at_its_line_writing_nothing",
    ),
)
