"""``tests/test_vector_recall.py`` on both backends (see ``conformance.py``)."""

from conformance import _pg_url, _plugin, _redirected, backend_kind, load_tests

__all__ = ["_pg_url", "_plugin", "_redirected", "backend_kind"]
# PostgreSQL's filtered recall at every selectivity is test_vector_channel_scale.py's
# (with its own brute-force oracle); this one's 25k-vector store would be built again.
# (Until the redirection was module-scoped, this copy ran on SQLite.)
load_tests(
    globals(), "test_vector_recall.py", skip=("test_filtered_vector_recall_never_under_returns",)
)
