"""``tests/test_lifecycle.py`` on both backends (see ``conformance.py``)."""

from conformance import _pg_url, _plugin, _redirected, backend_kind, load_tests

__all__ = ["_pg_url", "_plugin", "_redirected", "backend_kind"]
# It patches a SQLite row module to land a reinforce between listing and deleting.
load_tests(
    globals(), "test_lifecycle.py", skip=("test_sweep_never_deletes_a_memory_slid_after_listing",)
)
