"""``tests/test_fragments.py`` on both backends (see ``conformance.py``)."""

from conformance import _pg_url, _plugin, _redirected, backend_kind, load_tests

__all__ = ["_pg_url", "_plugin", "_redirected", "backend_kind"]
load_tests(
    globals(),
    "test_fragments.py",
    skip=(
        # Patches SQLite's fragment index to fail.
        "test_index_failure_is_logged_and_the_write_stands",
        # SQLite's fragment index file and its log.
        "test_close_saves_the_fragment_index_and_a_reopen_loads_it",
        # SQLite's fragment index file.
        "test_a_store_without_fragments_writes_no_fragment_file",
        # SQLite's fragment index file, rolled back by hand.
        "test_a_lagging_fragment_file_is_caught_up_by_replay",
        # SQLite's fragment index log file.
        "test_the_fragment_log_stays_bounded_over_many_writes",
        # SQLite's fragment index file after a vacuum.
        "test_vacuum_saves_a_compacted_fragment_index",
        # Damages SQLite's fragment index file.
        "test_a_damaged_fragment_file_is_rebuilt_with_exact_results",
    ),
)
