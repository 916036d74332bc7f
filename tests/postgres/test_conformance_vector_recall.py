"""``tests/test_vector_recall.py`` on both backends (see ``conformance.py``)."""

from conformance import _pg_url, _plugin, backend_kind, load_tests

__all__ = ["_pg_url", "_plugin", "backend_kind"]
# Its store is a module-scoped fixture, opened before the function-scoped
# redirection to PostgreSQL, so here it ran on SQLite a second time.
# PostgreSQL's filtered recall is checked by test_vector_channel_scale.py.
load_tests(
    globals(), "test_vector_recall.py", skip=("test_filtered_vector_recall_never_under_returns",)
)
