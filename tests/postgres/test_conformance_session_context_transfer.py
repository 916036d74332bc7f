"""``tests/test_session_context_transfer.py`` on both backends (see ``conformance.py``)."""

from conformance import _pg_url, _plugin, _redirected, backend_kind, load_tests

__all__ = ["_pg_url", "_plugin", "_redirected", "backend_kind"]
load_tests(
    globals(),
    "test_session_context_transfer.py",
    skip=(
        # Holds the SQLite file's writer lock (flock).
        "test_a_switch_while_another_writer_holds_the_lock_is_busy",
    ),
)
