"""``tests/test_aliases.py`` on both backends (see ``conformance.py``)."""

from conformance import _pg_url, _plugin, _redirected, backend_kind, load_tests

__all__ = ["_pg_url", "_plugin", "_redirected", "backend_kind"]
load_tests(
    globals(),
    "test_aliases.py",
    skip=(
        # Reads SQLite's posting blocks; PostgreSQL form in test_alias_postings.py.
        "test_incremental_postings_equal_a_rebuild_with_the_final_table",
        # Reads SQLite's posting blocks; PostgreSQL form in test_alias_postings.py.
        "test_an_emptied_table_indexes_exactly_as_a_store_that_never_had_one",
        # Reads SQLite's posting blocks and alias version; PostgreSQL form in test_alias_postings.py.
        "test_bad_aliases_raise_a_typed_error_and_write_nothing",
        # Greps the SQLite file's bytes (PostgreSQL declares secure_delete = False).
        "test_a_redacted_word_leaves_no_byte_through_an_alias_expansion",
        # Reads SQLite's posting blocks; PostgreSQL form in test_alias_postings.py.
        "test_aliases_travel_with_an_export",
    ),
)
